"""Fault runs (issue 15): the fault spec in experiments.yaml, the seeded draw, the verifier's verdict, the ci's
expectations in the run summary (pure logic; the ci profile runs the real fault cells)."""
import asyncio
import json
import os
import threading
import time
from pathlib import Path

import pytest

from systems import faultclient as fc
from workloads import faultrun, plan, summary
from workloads.faultrun import Audit, per_second, verdict
from workloads.tests.planfix import CATALOG, doc_with


def _audit(n, rate=100.0, t0=1000.0, latency=0.005):
    a = Audit(n)
    for i in range(n):
        a.sent[i] = t0 + i / rate
        a.count = i + 1
        a.state[i] = Audit.OK
        a.done[i] = a.sent[i] + latency
    return a


def test_verifier_catches_a_dropped_acknowledged_message():
    a = _audit(1000)
    read = list(range(1000))
    assert verdict(a, read, None, None)["lost"] == 0
    dropped = 417
    v = verdict(a, [i for i in read if i != dropped], None, None)
    assert v["lost"] == 1 and v["acknowledged"] == 1000 and v["read"] == 999


def test_verifier_counts_duplicates_reorderings_unacknowledged_and_errors():
    a = _audit(640)
    a.state[5] = Audit.FAILED       # failed, yet written: unacknowledged but present
    a.state[6] = Audit.FAILED       # failed and absent: a publish error, not a loss
    a.state[7] = Audit.PENDING      # never answered, present
    read = [i for i in range(640) if i != 6]
    read += [10, 11]                # read twice
    k = 3                           # key 3: sequence 2 read before sequence 1
    i1, i2 = k + 1 * fc.N_KEYS, k + 2 * fc.N_KEYS
    p1, p2 = read.index(i1), read.index(i2)
    read[p1], read[p2] = i2, i1
    v = verdict(a, read, None, None)
    assert v["acknowledged"] == 637
    assert v["lost"] == 0
    assert v["duplicated"] == 2
    assert v["reordered"] == 1
    assert v["unacknowledgedPresent"] == 2
    assert v["publishErrors"] == 2
    assert v["read"] == 641


def test_unavailability_and_recovery_windows():
    a = _audit(2000, rate=100.0, t0=0.0)  # 20 s, 100 msg/s, acknowledged in 5 ms
    strike, restarted = 8.0, 11.0
    # every send from 8 s on waits until 12.5 s (the cluster is down, then back)
    for i in range(800, 1250):
        a.done[i] = 12.5
    v = verdict(a, list(range(2000)), strike, restarted)
    # first slow send (8.0 s) -> first good acknowledgement (12.5 s, of a send made after 11.5 s)
    assert v["unavailableMs"] == pytest.approx((12.5 - 8.0) * 1000, abs=1)
    assert v["recoveryMs"] == pytest.approx((12.5 - 8.0) * 1000, abs=1)      # strike -> first ack of a later send
    assert verdict(_audit(2000, t0=0.0), list(range(2000)), strike, restarted)["unavailableMs"] == 0.0


def test_shipped_fault_experiments_and_ci_expectations():
    doc = plan.load()
    plan.check(doc, CATALOG)
    grid = plan.expand(doc, CATALOG, "local", only=["E000-FAULT"])
    # every fault x every level of the three systems, kill-bookie only where there are bookies (Pulsar, Pravega),
    # >= 3 repetitions locally
    cells = {(r.system, r.level, r.fault) for r in grid}
    assert len(cells) == 4 * 4 + 6 * 5 + 4 * 5 and not any(s == "kafka" and f == "kill-bookie" for s, _, f in cells)
    assert {(s, f) for s, _, f in cells if s == "pravega"} == {("pravega", f) for f in faultrun.plan.FAULTS
                                                               if f not in plan.HOLD_FAULTS}
    assert {r.rep for r in grid} == {1, 2, 3}
    assert {r.rep for r in plan.expand(doc, CATALOG, "aws", only=["E000-FAULT"])} == set(range(1, 11))
    claims = {(r.system, r.level, r.fault) for r in plan.expand(doc, CATALOG, "local", only=["E000-FAULTCLAIM"])}
    assert len(claims) == 20 and claims <= cells
    # local `all` runs the claims' cells, nothing else of the grid
    assert {(r.system, r.level, r.fault) for r in plan.expand(doc, CATALOG, "local") if r.fault} == claims
    # aws plans the claims' cells and the hold grid, 10 cycles each (the hooks reach an inventory's hosts)
    aws = [r for r in plan.expand(doc, CATALOG, "aws") if r.fault]
    assert {(r.system, r.level, r.fault) for r in aws} == claims | {
        (r.system, r.level, r.fault) for r in plan.expand(doc, CATALOG, "aws", only=["E000-FAULTHOLD"])}
    assert {r.rep for r in aws} == set(range(1, 11)) and {r.system for r in aws} == {"kafka", "pulsar", "pravega"}
    # the hold faults judge F3 and F4: 10 cycles per cell on the ci scale the lab uses (whose other fault cells run
    # twice), and a config's repetitions still beat the experiment's
    held = plan.expand(doc, CATALOG, "ci", only=["E000-FAULTHOLD"])
    assert {r.rep for r in held} == set(range(1, 11)) and {r.fault for r in held} == set(plan.HOLD_FAULTS)
    assert {r.rep for r in plan.expand(doc, CATALOG, "ci", only=["E000-FAULTCI"])} == {1, 2}
    assert {r.rep for r in plan.expand(doc, CATALOG, "ci", only=["E000-FAULTHOLD"], repetitions=3)} == {1, 2, 3}
    ci = [r for r in plan.expand(doc, CATALOG, "ci") if r.fault]
    assert {plan.expectation(doc, "ci", r) for r in ci} == {"zero", "some"}
    assert all(r.workload_id.endswith("--" + r.fault) for r in grid)
    # one cluster per system x level for the process faults and one on faultfs for power-loss, shared by their cycles
    keys = {r.cluster_key for r in grid}
    assert len(keys) == 2 * (4 + 6 + 4)
    assert {r.cluster_key for r in grid if r.fault == "power-loss"} == {k for k in keys if k.endswith("-faults-faultfs")}
    assert not keys & {r.cluster_key for r in plan.expand(doc, CATALOG, "local") if not r.fault}  # never a benchmark's


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["experiments"]["E000-FAULT"]["faults"].append("unplug"),
         "experiments.E000-FAULT.faults: unknown fault 'unplug'"),
        (lambda d: d["experiments"]["E000-FAULT"].update(systems=["kafka"], levels=["L1"], faults=["kill-bookie"]),
         "experiments.E000-FAULT.faults: kafka does not support fault 'kill-bookie'"),
        (lambda d: d["scales"]["local"]["faults"].update(strikeAtSeconds=[8, 30]),
         "scales.local.faults.strikeAtSeconds: the fault at 8-30 s (down 3 s) is outside the measured phase"),
        (lambda d: d["scales"]["local"]["faults"].update(strikeAtSeconds=[0, 5]),
         "scales.local.faults.strikeAtSeconds: the fault at 0-5 s"),
        (lambda d: d["experiments"]["E000-FAULT"].update(strike_at_seconds=[20, 23]),
         "experiments.E000-FAULT.strike_at_seconds: the fault at 20-23 s"),
        (lambda d: d["scales"]["ci"]["faults"]["expect"][0].update(level="L9"),
         "scales.ci.faults.expect.0.level: unknown level 'L9'"),
        (lambda d: d["scales"]["ci"].pop("faults"), "scales.ci.faults: missing"),
        (lambda d: d["scales"]["local"]["faults"].update(jvmExtraOpts=["TieredStopAtLevel=1"]),
         "scales.local.faults.jvmExtraOpts"),
    ],
)
def test_bad_fault_specs_fail_with_file_and_field(tmp_path, mutate, message):
    p = doc_with(tmp_path, mutate)
    with pytest.raises(plan.PlanError) as exc:
        plan.check(plan.load(p), CATALOG, p)
    assert str(p) in str(exc.value) and message in str(exc.value)


def test_strike_draw_is_seeded_and_inside_its_window():
    doc = plan.load()
    timing = plan.fault_timing(doc, "local", "E000-FAULT")
    runs = plan.expand(doc, CATALOG, "local", only=["E000-FAULT"])
    draws = [plan.strike_plan(r, 20201, timing) for r in runs]
    assert draws == [plan.strike_plan(r, 20201, timing) for r in runs]
    lo, hi = doc["scales"]["local"]["faults"]["strikeAtSeconds"]
    assert timing["strikeAtSeconds"] == [lo, hi] and all(lo <= d["strikeAtSeconds"] <= hi for d in draws)
    assert len({d["strikeAtSeconds"] for d in draws}) > 10
    assert draws != [plan.strike_plan(r, 1, timing) for r in runs]


def test_targets_per_fault():
    cluster = {"system": "pulsar", "nodes": [{"name": n, "role": r} for n, r in (
        ("zookeeper", "metadata-store"), ("bookie-1", "bookie"), ("bookie-2", "bookie"), ("bookie-3", "bookie"),
        ("broker-1", "broker"))]}
    strike = {"seed": 7}
    assert faultrun.targets("kill-leader", cluster, "broker-1", strike) == ["broker-1"]
    assert faultrun.targets("kill-bookie", cluster, "broker-1", strike)[0].startswith("bookie-")
    assert faultrun.targets("kill-one", cluster, "broker-1", strike) != ["broker-1"]
    assert len(faultrun.targets("crash-all", cluster, "broker-1", strike)) == 5
    picks = {faultrun.targets("kill-one", cluster, "broker-1", {"seed": s})[0] for s in range(20)}
    assert "broker-1" not in picks and len(picks) > 1
    assert faultrun.targets("partition-leader", cluster, "broker-1", strike) == ["broker-1"]
    assert faultrun.targets("pause-leader", cluster, "broker-1", strike) == ["broker-1"]


def test_a_partition_cuts_the_targets_host_from_every_other_server_host_and_needs_hosts_of_its_own():
    # the lab's Pulsar: ZooKeeper, broker and bookie-1 on server-1, a bookie on each of servers 2 and 3
    where = {"zookeeper": ("server-1", "10.77.0.11"), "bookie-1": ("server-1", "10.77.0.11"),
             "broker-1": ("server-1", "10.77.0.11"), "bookie-2": ("server-2", "10.77.0.12"),
             "bookie-3": ("server-3", "10.77.0.13")}
    cluster = {"nodes": [{"name": n, "hostName": h, "host": a} for n, (h, a) in where.items()]}
    assert faultrun.partition_peers(cluster, ["broker-1"]) == {"server-1": ["10.77.0.12", "10.77.0.13"]}
    assert faultrun.partition_peers(cluster, ["bookie-3"]) == {"server-3": ["10.77.0.11", "10.77.0.12"]}
    # this machine: every node at one address; nothing to cut, said in one line naming the node
    local = {"nodes": [{"name": n, "host": "127.0.0.1"} for n in where]}
    with pytest.raises(ValueError, match="broker-1: every node of the cluster is on its host"):
        faultrun.partition_peers(local, ["broker-1"])
    # the network faults need hosts of their own; a pause runs anywhere
    assert plan.NEEDS_HOSTS == ("partition-leader", "partition-minority", "partition-majority", "slow-link-leader")
    assert set(plan.HOLD_FAULTS) <= set(plan.FAULTS) and "pause-leader" not in plan.NEEDS_HOSTS


def test_a_majority_partition_runs_on_every_other_server_host_and_cuts_the_leader_and_the_clients_from_it():
    where = {"zookeeper": ("server-1", "10.77.0.11"), "bookie-1": ("server-1", "10.77.0.11"),
             "broker-1": ("server-1", "10.77.0.11"), "bookie-2": ("server-2", "10.77.0.12"),
             "bookie-3": ("server-3", "10.77.0.13")}
    cluster = {"nodes": [{"name": n, "hostName": h, "host": a} for n, (h, a) in where.items()]}
    assert faultrun.targets("partition-majority", cluster, "broker-1", {"seed": 1}) == ["bookie-2", "bookie-3"]
    assert faultrun.targets("partition-majority", cluster, "bookie-3", {"seed": 1}) == [
        "zookeeper", "bookie-1", "broker-1", "bookie-2"]
    peers = faultrun.majority_peers(cluster, "broker-1", ["10.77.0.21"])
    assert peers == {"server-2": ["10.77.0.11", "10.77.0.21", "@ssh-client"],
                     "server-3": ["10.77.0.11", "10.77.0.21", "@ssh-client"]}
    # the other servers keep each other: neither drops the other's address
    assert all("10.77.0.12" not in v and "10.77.0.13" not in v for v in peers.values())
    local = {"nodes": [{"name": n, "host": "127.0.0.1"} for n in where]}
    with pytest.raises(ValueError, match="broker-1: every node of the cluster is on its host"):
        faultrun.majority_peers(local, "broker-1", [])
    assert faultrun.client_addresses(None) == []
    assert plan.HOLD_FAULTS["partition-majority"] == "partition" and "partition-majority" in plan.NEEDS_HOSTS


def test_a_pause_holds_the_leader_stopped_for_down_seconds_then_it_runs_on_without_a_restart(tmp_path):
    """The hold faults through the real hook process: pause (SIGSTOP) at the strike, resume after downSeconds; the
    timeline has struck, healed and back (restarted = the end of the hold), and the node is the same process."""
    import os

    from systems import proc

    rundir = tmp_path / "run"
    log = rundir / "nodes" / "n1" / "logs" / "node.log"
    log.parent.mkdir(parents=True)
    p, rec = proc.start_process(rundir, "n1", ["sleep", "300"], cwd=rundir, log=log, env=dict(os.environ))
    cluster = {"system": "kafka", "rundir": str(rundir), "nodes": [
        {"name": "n1", "role": "broker+controller", "ports": {}, "log": str(log), "stopStage": 0}]}
    (rundir / "cluster.json").write_text(json.dumps(cluster))
    hook = faultrun.Hook(cluster, ["n1"], 1.0, False, 10, tmp_path / "hook.log", hold="pause")

    def state():
        st = Path(f"/proc/{rec.pid}/stat").read_text()
        return st[st.rindex(")") + 2]
    try:
        assert hook.wait(("ready",), 30)["event"] == "ready"
        hook.strike()
        assert hook.wait(("struck",), 30)["event"] == "struck"
        time.sleep(0.3)
        assert state() == "T", "stopped while held"
        back = hook.wait(("back",), 30)
        assert back and back["event"] == "back", hook.events
        struck, healed = hook.first("struck"), hook.first("healed")
        assert struck["hold"] == "pause" and struck["targets"] == ["n1"]
        assert healed["t"] - struck["t"] >= 1.0 and back["restarted"] == healed["t"]
        assert not [e for e in hook.events if e["event"] == "restarted"]
        time.sleep(0.2)
        assert state() in ("S", "R") and p.poll() is None  # the same process, running again
        assert [r.pid for r in proc.read_pid_records(rundir)] == [rec.pid]
    finally:
        hook.stop()
        proc.stop_records(proc.read_pid_records(rundir), 5)


def _record(tmp_path, name, lost, expect, status="ok"):
    d = tmp_path / "status"
    d.mkdir(exist_ok=True)
    rec = {"run": name, "status": status, "startedAt": "2026-01-01T00:00:00+00:00",
           "endedAt": "2026-01-01T00:01:00+00:00", "faultExpect": expect, "result": f"{name}.json", "faultPlan": {"type": "crash-all"},
           "fault": {"type": "crash-all", "lost": lost, "acknowledged": 1000}}
    (d / f"{name}.json").parent.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.json").write_text(json.dumps(rec))
    return d


@pytest.mark.parametrize("kafka_lost, pulsar_lost, rc", [(0, 12, 0), (3, 12, 1), (0, 0, 1)])
def test_summary_check_fails_when_a_fault_expectation_is_not_met(tmp_path, kafka_lost, pulsar_lost, rc):
    _record(tmp_path, "kafka-L1", kafka_lost, "zero")
    d = _record(tmp_path, "pulsar-L4-bypass", pulsar_lost, "some")
    s = summary.summarise(d)
    out = tmp_path / "benchmarks.json"
    out.write_text(json.dumps(s))
    assert s["lostMessages"] == 0  # a fault run's losses are its measurement, not the harness's
    assert summary.check(out) == rc


@pytest.mark.parametrize("kafka_lost, pulsar_lost, rc", [((0, 0), (12, 0), 0), ((0, 4), (12, 9), 1),
                                                         ((0, 0), (0, 0), 1), ((0, 0), (0, 7), 0)])
def test_zero_is_judged_per_run_and_some_over_the_cells_repetitions(tmp_path, capsys, kafka_lost, pulsar_lost, rc):
    for k in (1, 2):
        _record(tmp_path, f"ci/kafka/L1/w--power-loss/rep-{k}", kafka_lost[k - 1], "zero")
        d = _record(tmp_path, f"ci/pulsar/L4-bypass/w--crash-all/rep-{k}", pulsar_lost[k - 1], "some")
    # another cell of the same expectation, both of whose runs lost: it cannot lend a loss to the cell above
    _record(tmp_path, "ci/pulsar/L2-bypass/w--crash-all/rep-1", 5, "some")
    s = summary.summarise(d)
    out = tmp_path / "benchmarks.json"
    out.write_text(json.dumps(s))
    assert summary.check(out) == rc
    text = capsys.readouterr().out
    if pulsar_lost == (0, 0):
        assert ("fault expectation not met: ci/pulsar/L4-bypass/w--crash-all/rep-1: 0 lost, expected some (in none of "
                "its cell's repetitions)") in text
    elif 0 in pulsar_lost:
        assert "this repetition lost none; another of its cell did" in text and "not met: ci/pulsar" not in text


def test_hook_kills_on_its_stdin_line_and_restarts_from_the_pid_file(tmp_path):
    """The hook process with a real (sleeping) node: ready, then nothing until the line; kill -9, restart, back."""
    import os

    from systems import proc

    rundir = tmp_path / "run"
    (rundir / "nodes" / "n1" / "logs").mkdir(parents=True)
    log = rundir / "nodes" / "n1" / "logs" / "node.log"
    p, rec = proc.start_process(rundir, "n1", ["sleep", "300"], cwd=rundir, log=log, env=dict(os.environ),
                                env_extra={"X": "1"})
    cluster = {"system": "kafka", "rundir": str(rundir), "nodes": [
        {"name": "n1", "role": "broker+controller", "ports": {}, "log": str(log), "stopStage": 0}]}
    (rundir / "cluster.json").write_text(json.dumps(cluster))
    hook = faultrun.Hook(cluster, ["n1"], 0.5, False, 10, tmp_path / "hook.log")
    try:
        assert hook.wait(("ready",), 30)["event"] == "ready"
        time.sleep(0.5)
        assert rec.alive() and hook.first("struck") is None  # nothing happens before the line
        t = time.time()
        hook.strike()
        back = hook.wait(("back",), 30)
        assert back and back["event"] == "back", hook.events
        struck = hook.first("struck")
        assert struck["targets"] == ["n1"] and struck["t"] - t < 0.5
        assert back["restarted"] - struck["t"] >= 0.5  # down for downSeconds
        p.wait(5)
        assert p.returncode == -9  # kill -9
        new = {r.node: r for r in proc.read_pid_records(rundir)}["n1"]
        assert new.pid != rec.pid and new.alive() and new.env == {"X": "1"}
    finally:
        hook.stop()
        for r in proc.read_pid_records(rundir):
            proc.stop_records([r], 5)
    assert all(hp.p.poll() is not None for hp in hook.procs.values())


def test_hooks_on_two_hosts_restart_stage_by_stage_across_them(tmp_path):
    """Targets on two hosts (here two run directories of this machine, as an inventory's hosts would each have
    theirs): one hook per host; the strike reaches both; the stage-2 node (ZooKeeper) is restarted and back before
    the stage-1 node (a bookie) on the other host starts again."""
    import os

    from systems import proc

    nodes, recs = [], {}
    for host, name, stage in (("h1", "zookeeper", 2), ("h2", "bookie-2", 1)):
        rundir = tmp_path / host
        log = rundir / "nodes" / name / "logs" / "node.log"
        log.parent.mkdir(parents=True)
        _, recs[name] = proc.start_process(rundir, name, ["sleep", "300"], cwd=rundir, log=log, env=dict(os.environ),
                                           stop_stage=stage)
        nodes.append({"name": name, "role": name.split("-")[0], "ports": {}, "log": str(log), "stopStage": stage,
                      "hostName": host, "hostRunDir": str(rundir)})
    cluster = {"system": "pulsar", "rundir": str(tmp_path / "controller"), "nodes": nodes}
    for host in ("h1", "h2"):
        (tmp_path / host / "cluster.json").write_text(json.dumps(cluster))
    hook = faultrun.Hook(cluster, ["bookie-2", "zookeeper"], 0.2, False, 10, tmp_path / "hook.log")
    try:
        assert hook.wait(("ready",), 30)["event"] == "ready"
        assert set(hook.procs) == {"h1", "h2"}
        hook.strike()
        back = hook.wait(("back",), 30)
        assert back and back["event"] == "back", hook.events
        assert sorted(hook.first("struck")["targets"]) == ["bookie-2", "zookeeper"]
        restarts = [e["nodes"] for e in hook.events if e["event"] == "restarted"]
        assert restarts == [["zookeeper"], ["bookie-2"]]
        for name, old in recs.items():
            new = next(r for r in proc.read_pid_records(tmp_path / ("h1" if name == "zookeeper" else "h2"))
                       if r.node == name)
            assert new.pid != old.pid and new.alive() and new.stop_stage == old.stop_stage
    finally:
        hook.stop()
        for host in ("h1", "h2"):
            for r in proc.read_pid_records(tmp_path / host):
                proc.stop_records([r], 5)


def test_a_hook_that_fails_names_the_node_and_the_cycle_sees_it(tmp_path):
    """A target whose pid file is missing: the hook says failed at once, naming the node; the driver reports it."""
    rundir = tmp_path / "run"
    rundir.mkdir()
    cluster = {"system": "kafka", "rundir": str(rundir), "nodes": [
        {"name": "kafka-2", "role": "broker+controller", "ports": {}, "log": str(rundir / "x.log"), "stopStage": 0}]}
    (rundir / "cluster.json").write_text(json.dumps(cluster))
    hook = faultrun.Hook(cluster, ["kafka-2"], 0.1, False, 5, tmp_path / "hook.log")
    try:
        ev = hook.wait(("ready",), 30)
        assert ev["event"] == "failed" and ev["node"] == "kafka-2" and ev["error"] == "no pid file", hook.events
    finally:
        hook.stop()


def test_kafka_leader_waits_for_a_broker_that_knows_the_topic(monkeypatch):
    """A broker restarted by the last cycle can answer a metadata request with the topic and no partitions (the
    ci's power-loss cycle 2 failed on it: max() of an empty sequence); the leader is asked until the answer is whole."""
    from types import SimpleNamespace as NS

    monkeypatch.setattr(fc.time, "sleep", lambda s: None)
    answers = [{}, {"t": NS(error=None, partitions={})},
               {"t": NS(error=None, partitions={0: NS(leader=2), 1: NS(leader=-1)})},
               {"t": NS(error=None, partitions={0: NS(leader=2), 1: NS(leader=3), 2: NS(leader=3)})}]
    asked = []

    class Admin:
        def list_topics(self, topic, timeout):
            asked.append(topic)
            return NS(topics=answers[min(len(asked) - 1, len(answers) - 1)])

    c = fc.KafkaClient.__new__(fc.KafkaClient)
    c.admin, c.nodes_by_id, c.partitions = Admin(), {1: "broker-1", 2: "broker-2", 3: "broker-3"}, {"t": 3}
    assert c.leader("t") == "broker-3" and len(asked) == 4
    answers[:] = [{"t": NS(error=None, partitions={})}]
    monkeypatch.setattr(fc.time, "monotonic", iter(range(0, 1000, 7)).__next__)
    with pytest.raises(fc.CycleFailure, match="no leader for every partition"):
        c.leader("t")


def test_per_second_counts_sends_acks_errors_and_the_lost_by_the_second_they_were_sent():
    a = Audit(10)
    # 0-3 sent at 100.2, acked at 100.5; 4-5 sent at 101.1, failed at 102.9; 6-7 sent at 101.5, acked at 103.0
    for i, (sent, done, ok) in enumerate([(100.2, 100.5, True)] * 4 + [(101.1, 102.9, False)] * 2
                                         + [(101.5, 103.0, True)] * 2):
        a.sent[i], a.done[i], a.state[i] = sent, done, Audit.OK if ok else Audit.FAILED
    a.sent[8], a.state[8] = 101.9, Audit.PENDING  # never answered: counted as sent only
    a.count = 9
    rows = per_second(a, [0, 1, 2, 3, 6], 100.0)  # 7 acknowledged but never read back: lost, at its send second
    assert rows == [{"s": 0, "sent": 4, "acked": 4, "errors": 0, "lost": 0},
                    {"s": 1, "sent": 5, "acked": 0, "errors": 0, "lost": 1},
                    {"s": 2, "sent": 0, "acked": 0, "errors": 2, "lost": 0},
                    {"s": 3, "sent": 0, "acked": 2, "errors": 0, "lost": 0}]
    assert sum(r["sent"] for r in rows) == a.count and per_second(Audit(3), [], 0.0) == []


def test_set_up_waits_for_bookies_registering_again_after_a_partition_and_fails_on_anything_else(monkeypatch):
    """Pulsar L4 partition-majority, cycle 7 on the lab: the broker answered 500 "Not enough non-faulty bookies" to
    the verify subscription right after the last cycle's heal (the cut-off bookies were registering again) and the
    cell failed; now set-up waits for them, and any other error still fails at once."""
    answers = []
    monkeypatch.setattr(fc, "http", lambda method, url, *a, **k: answers.pop(0))
    monkeypatch.setattr(fc.time, "sleep", lambda s: None)
    c = object.__new__(fc.PulsarClient)
    c.http, c.namespace = "http://10.77.0.11:8080", "public/default"
    busy = (500, '{"reason":"ManagedLedgerException: Not enough non-faulty bookies available error code: -6"}')
    answers[:] = [(204, ""), busy, busy, (204, "")]
    c.create_topic("t", 8)
    assert answers == []
    answers[:] = [(204, ""), (500, "NullPointerException")]
    with pytest.raises(fc.CycleFailure, match="NullPointerException"):
        c.create_topic("t", 8)
    monkeypatch.setattr(fc, "SERVING_RETRY_SECONDS", 0)
    answers[:] = [(204, ""), busy, busy]
    with pytest.raises(fc.CycleFailure, match="Not enough non-faulty bookies"):
        c.create_topic("t", 8)
    assert answers == [busy]  # the first try past the wait is the last


class _ShuffledWriter:
    """Pravega's bindings in miniature: every write_event_async completes after a delay of its own, so writes in
    flight together are taken in any order. Records the order taken and the largest number in flight per key."""

    def __init__(self, fail=()):
        import random
        self.rnd, self.fail = random.Random(5), set(fail)
        self.taken: list[tuple[str, int]] = []
        self.flying: dict[str, int] = {}
        self.most: dict[str, int] = {}

    async def write_event_async(self, event: str, key: str):
        self.flying[key] = self.flying.get(key, 0) + 1
        self.most[key] = max(self.most.get(key, 0), self.flying[key])
        await asyncio.sleep(self.rnd.random() * 0.004)
        self.flying[key] -= 1
        i = fc.index_of(event.encode())
        self.taken.append((key, i))
        if i in self.fail:
            raise ValueError("Error observed while writing an event")


def test_pravega_sender_keeps_one_write_in_flight_per_key_so_each_key_is_taken_in_order():
    w = _ShuffledWriter(fail={7, 130})
    s = fc._PravegaSend(w)
    n = 600
    a = Audit(n, keys=128)  # the client's own number of keys (PravegaClient.KEYS) routes the writes
    for i in range(n):
        a.sent[i] = time.time()
        a.count = i + 1
        s.send("t", i, 64, a)
    assert s.flush(30) == 0
    assert len(w.most) == 128
    assert set(w.most.values()) == {1}  # never two writes of one key out together
    per_key: dict[str, list[int]] = {}
    for k, i in w.taken:
        per_key.setdefault(k, []).append(i)
    assert all(v == sorted(v) for v in per_key.values()) and len(w.taken) == n
    # every write's own outcome in the audit: the two that failed, and nothing left pending
    assert [i for i in range(n) if a.state[i] == Audit.FAILED] == [7, 130]
    assert sum(1 for i in range(n) if a.state[i] == Audit.OK) == n - 2
    assert not s._t.is_alive()  # flush stops the sender's loop


def test_pravega_sender_flush_reports_writes_still_out_at_its_deadline():
    class Stuck:
        async def write_event_async(self, event, key):
            await asyncio.sleep(3600)
    s = fc._PravegaSend(Stuck())
    a = Audit(4)
    for i in range(4):
        a.sent[i] = time.time()
        a.count = i + 1
        s.send("t", i, 64, a)
    t = time.monotonic()
    assert s.flush(0.5) == 4  # four keys, each with its one write out
    assert time.monotonic() - t < 5


def test_pravega_targets_the_segment_store_as_leader_and_its_bookies():
    cluster = {"system": "pravega", "pravega": {"controllerUri": "tcp://127.0.0.1:1"}, "nodes": [
        {"name": n, "role": r} for n, r in (("zookeeper", "metadata-store"), ("bookie-1", "bookie"),
                                            ("bookie-2", "bookie"), ("bookie-3", "bookie"),
                                            ("segmentstore", "segmentstore"), ("controller", "controller"))]}
    c = fc.PravegaClient(cluster, {})
    leader = c.leader("t")
    assert leader == "segmentstore"
    assert faultrun.targets("kill-leader", cluster, leader, {"seed": 1}) == ["segmentstore"]
    assert {faultrun.targets("kill-bookie", cluster, leader, {"seed": s})[0] for s in range(12)} == {
        "bookie-1", "bookie-2", "bookie-3"}
    picks = {faultrun.targets("kill-one", cluster, leader, {"seed": s})[0] for s in range(40)}
    assert "segmentstore" not in picks and "controller" in picks
    two = dict(cluster, nodes=cluster["nodes"] + [{"name": "segmentstore-2", "role": "segmentstore"}])
    with pytest.raises(fc.CycleFailure, match="2 segment stores"):
        fc.PravegaClient(two, {}).leader("t")


class _InstantSender:
    def send(self, topic, i, size, audit):
        audit.ack(i, True)


@pytest.mark.parametrize("settles, lo, hi", [(True, 0.35, 0.55), (False, 0.85, 1.2)])
def test_traffic_goes_on_past_recovery_until_every_key_sends_promptly_but_not_past_its_bound(monkeypatch, settles, lo,
                                                                                          hi):
    monkeypatch.setattr(fc, "SETTLE_SECONDS", 0.1)
    monkeypatch.setattr(fc, "SETTLE_MAX_SECONDS", 0.5)
    a = Audit(10_000)
    t = time.monotonic()
    fc.traffic(_InstantSender(), "t", 500, 0.3, 16, a, 0.1, lambda: None, lambda: True, lambda: settles)
    took = time.monotonic() - t
    assert lo <= took <= hi, took
    assert min(a.last_good) > 0  # every key had a prompt acknowledgement, and the audit kept its time


def test_audit_keeps_each_keys_last_prompt_acknowledgement_only():
    a = Audit(200)
    now = time.time()
    for i in range(200):
        a.sent[i] = now - (5.0 if i >= 100 else 0.0)  # the second half acknowledged 5 s after its send: slow
        a.ack(i, i != 3)
    assert a.last_good[3] > 0  # key 3's message 67 (3 + 64) was prompt; message 3 failed
    assert all(a.last_good[k] <= a.done[k + 64] for k in range(36))  # no slow ack (i >= 100) counted
    assert a.last_good[99 % fc.N_KEYS] == a.done[99]


class _Ev:
    def __init__(self, i):
        self.i = i

    def data(self):
        return fc.payload(self.i, 32)


class _FakeReader:
    """Serves `slices` one per call (a None entry: an empty slice after `gap` seconds, a stalled segment), then
    empty slices forever, as the bindings do at the end of a sealed stream."""

    def __init__(self, slices, gap=0.05):
        self.slices, self.gap, self.offline = list(slices), gap, False

    async def get_segment_slice_async(self):
        if self.slices:
            s = self.slices.pop(0)
            if s is not None:
                return [_Ev(i) for i in s]
        await asyncio.sleep(self.gap)
        return []

    def release_segment(self, sl):
        pass

    def reader_offline(self):
        self.offline = True


class _FakeMgr:
    def __init__(self, reader):
        self.reader, self.sealed, self.groups = reader, [], []

    def seal_stream(self, scope, stream):
        self.sealed.append(stream)

    def create_reader_group(self, group, scope, stream):
        self.groups.append(group)
        mgr = self

        class RG:
            def create_reader(self, name):
                return mgr.reader
        return RG()

    def delete_reader_group(self, group, scope):
        self.groups.remove(group)


def _pravega_with(reader):
    cluster = {"pravega": {"controllerUri": "tcp://127.0.0.1:1"}, "nodes": []}
    c = fc.PravegaClient(cluster, {})
    c._mgr = _FakeMgr(reader)
    return c


def _acked(n):
    a = Audit(n)
    for i in range(n):
        a.count = i + 1
        a.state[i] = Audit.OK
    return a


def test_pravega_verifier_stops_once_every_keys_last_acknowledged_message_is_read(monkeypatch):
    monkeypatch.setattr(fc, "PRAVEGA_QUIET_SECONDS", 5.0)
    n = 256
    # two segments' slices, the second stalled once for a while (an empty slice) before its data comes
    r = _FakeReader([list(range(0, 128)), None, None, list(range(128, 256))], gap=0.3)
    c = _pravega_with(r)
    t = time.monotonic()
    got = c.read_back("t", 2, time.monotonic() + 30, _acked(n))
    assert sorted(got) == list(range(n)) and time.monotonic() - t < 2.0  # no quiet period waited at the end
    assert c.verify_end == {"end": "complete", "keysShort": 0, "quietSeconds": 5.0}
    assert c._mgr.sealed == ["t"] and c._mgr.groups == [] and r.offline


def test_pravega_verifier_waits_out_its_quiet_period_when_a_key_ends_short_and_names_it(monkeypatch):
    monkeypatch.setattr(fc, "PRAVEGA_QUIET_SECONDS", 0.6)
    n = 256
    r = _FakeReader([[i for i in range(n) if i != 255]])  # key 255 % 64 = 63: its last acknowledged message is gone
    c = _pravega_with(r)
    got = c.read_back("t", 2, time.monotonic() + 30, _acked(n))
    assert len(got) == n - 1
    assert c.verify_end["end"] == "quiet" and c.verify_end["keysShort"] == 1
    assert faultrun.verdict(_acked(n), got, None, None)["lost"] == 1


def test_pravega_verifier_fails_at_its_deadline_while_keys_are_short(monkeypatch):
    monkeypatch.setattr(fc, "PRAVEGA_QUIET_SECONDS", 60.0)
    c = _pravega_with(_FakeReader([[0, 1, 2]]))
    with pytest.raises(fc.CycleFailure, match="keys short"):
        c.read_back("t", 2, time.monotonic() + 0.5, _acked(200))


def test_a_scales_fault_jvm_options_join_the_environments_once(monkeypatch):
    """The local scale's fault runs start their clusters with C1 only (faults.jvmExtraOpts); options env/test set
    already are kept, none twice, and a scale without any leaves the environment alone."""
    doc = plan.load()
    assert plan.fault_timing(doc, "local", "E000-FAULTCLAIM")["jvmExtraOpts"] == ["-XX:TieredStopAtLevel=1"]
    assert plan.fault_timing(doc, "aws", "E000-FAULTCLAIM")["jvmExtraOpts"] == []
    env = "STREAMBENCH_JVM_EXTRA_OPTS"
    monkeypatch.delenv(env, raising=False)
    assert faultrun.with_fault_jvm_opts([]) == [] and env not in os.environ
    assert faultrun.with_fault_jvm_opts(["-XX:TieredStopAtLevel=1"]) == ["-XX:TieredStopAtLevel=1"]
    monkeypatch.setenv(env, "-Dx=1 -XX:TieredStopAtLevel=1")
    assert faultrun.with_fault_jvm_opts(["-XX:TieredStopAtLevel=1", "-Xss1m"]) == [
        "-Dx=1", "-XX:TieredStopAtLevel=1", "-Xss1m"]


def test_a_fault_run_of_a_torn_down_fleet_is_recorded_failed_naming_the_fleet(tmp_path):
    """An aws fleet whose bring-up failed leaves a stub inventory; its fault runs are recorded failed at once with
    the fleet's failure (as its benchmark runs are), not with an error about the stub."""
    doc = plan.load()
    run = plan.expand(doc, CATALOG, "ci", only=["E000-FAULTCI"])[0]
    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps({"failed": {"fleet": "s000", "step": "up", "error": "aws: up.yml: failed"},
                               "provider": {"fleet": "s000"}, "hosts": []}))
    status = tmp_path / "status.json"
    rec = faultrun.execute(run, "aws", "ci", tmp_path / "result.json", status, tmp_path / "clusters",
                           tmp_path / "run.log", Path("workloads/drivers/kafka-L1-stock.yaml"), 20201, inventory=str(inv))
    assert rec["status"] == "failed" and rec["reason"] == "testbed" and rec["phase"] == "set-up"
    assert rec["error"].startswith("fleet s000 failed at up (aws: up.yml: failed)")
    assert json.loads(status.read_text())["reason"] == "testbed"
    assert not (tmp_path / "result.json").exists() and not (tmp_path / "clusters").exists()


class _FakePulsarReader:
    """A reader of one partition: its messages, `delay` s each (a broker round trip); `active` counts the readers
    waiting on their broker at this moment, and its highest count."""
    active = {"now": 0, "most": 0}
    lock = threading.Lock()

    def __init__(self, indices, delay):
        self.left, self.delay, self.closed = list(indices), delay, False

    def has_message_available(self):
        return bool(self.left)

    def read_next(self, timeout_millis):
        a = _FakePulsarReader.active
        with _FakePulsarReader.lock:
            a["now"] += 1
            a["most"] = max(a["most"], a["now"])
        time.sleep(self.delay)
        with _FakePulsarReader.lock:
            a["now"] -= 1

        class M:
            def __init__(self, i):
                self.i = i

            def data(self):
                return fc.payload(self.i, 20)
        return M(self.left.pop(0))

    def close(self):
        self.closed = True


def _pulsar_with(readers):
    c = object.__new__(fc.PulsarClient)
    c.namespace = "public/default"

    class MessageId:
        earliest = object()

    class Mod:
        pass
    Mod.MessageId = MessageId
    c.pulsar = Mod

    class Client:
        def create_reader(self, topic, start):
            assert start is MessageId.earliest
            r = readers[int(topic.rsplit("-", 1)[1])]
            if r is None:
                raise RuntimeError("Pulsar error: TimeOut")
            return r
    c.client = Client()
    return c


def test_pulsar_verifier_reads_the_partitions_side_by_side_each_in_its_order():
    # 4 partitions of 20 messages, 10 ms of waiting on the broker for each: the readers wait side by side
    _FakePulsarReader.active.update(now=0, most=0)
    readers = [_FakePulsarReader([p + 4 * k for k in range(20)], 0.01) for p in range(4)]
    got = _pulsar_with(readers).read_back("t", 4, time.monotonic() + 60)
    assert got == [p + 4 * k for p in range(4) for k in range(20)]  # partition by partition, each in its order
    assert _FakePulsarReader.active["most"] >= 2
    assert all(r.closed for r in readers)


def test_pulsar_verifier_fails_at_its_deadline_and_stops_every_partition():
    # partition 1 never gets a reader (the broker has not loaded it) and partition 0 has 10 s of reading left: at the
    # 1-s deadline the cycle fails (whichever partition saw it first) and no reader goes on or stays open
    readers = [_FakePulsarReader(range(1000), 0.01), None]
    t = time.monotonic()
    with pytest.raises(fc.CycleFailure, match="verifier: (no reader on|.* not read to its end)"):
        _pulsar_with(readers).read_back("t", 2, time.monotonic() + 1.0)
    assert time.monotonic() - t < 5.0 and readers[0].left and readers[0].closed
