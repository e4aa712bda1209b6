"""Integration tests of the runner's processes against real 3-node clusters (`python -m systems`): two processes that
merge exactly, two that start when a coordinator says, a failed run that writes nothing, 200 fan-out consumers that each
receive everything. None of them holds the runner to a rate (test_runner_integration.py does, alone): env/test runs
the two-process merge and the failed run with the other integration tests that judge no rate, beside its side-by-side
section, and the two fan-out tests alone with the serial ones (below)."""
from __future__ import annotations

import json
import subprocess
import time

import pytest

from runner.tests.test_runner_integration import (DRIVERS, FANOUT, OMB_MERGE, OMB_RUN, ROOT, STEADY, check_result,
                                                  cluster, omb_run)

__all__ = ["cluster"]  # the fixture, shared with test_runner_integration.py


# Kafka only: the same split on Pulsar runs through workloads.parts (workloads/tests/test_parts.py's real run, on the
# shared Pulsar L1 cluster), which checks the merge's sums, each part's share and their common start as this test
# does; the barrier's and the drain's files, which workloads.parts removes after the run, are read here
@pytest.mark.integration
@pytest.mark.parametrize("cluster", [pytest.param("kafka", marks=pytest.mark.cluster("kafka", "L1"), id="kafka")],
                         indirect=True)
def test_two_processes_merge_exactly(cluster, tmp_path):
    system, cj, cobj = cluster
    # --start-at names the run (both parts carry it); --barrier starts both 2 s after the later one is set up,
    # instead of a fixed lead long enough for the slowest JVM start on a loaded 2-core machine
    start_at = int(time.time() * 1000)
    procs = []
    for i in range(2):
        out = tmp_path / f"part-{i}.json"
        cmd = [str(OMB_RUN), "--workload", str(STEADY), "--driver", str(DRIVERS[system]), "--cluster", str(cj),
               "--output", str(out), "--log", str(tmp_path / f"part-{i}.log"),
               "--process-index", str(i), "--process-count", "2", "--start-at", str(start_at),
               "--barrier", str(tmp_path / "barrier")]
        procs.append(subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        outs = [p.communicate(timeout=600) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-4000:]
    parts = [json.loads((tmp_path / f"part-{i}.json").read_text()) for i in range(2)]
    merged_path = tmp_path / "merged.json"
    m = subprocess.run([str(OMB_MERGE), "--output", str(merged_path), *(str(tmp_path / f"part-{i}.json") for i in range(2))],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert m.returncode == 0, m.stderr
    merged = json.loads(merged_path.read_text())
    x = check_result(merged, cobj)
    # counts are sums of the parts; each process sent half the load
    assert x["audit"]["acked"] == sum(p["x-streambench"]["audit"]["acked"] for p in parts)
    for p in parts:
        assert p["x-streambench"]["producerRate"]["processShare"] == 0.5
    n = len(merged["publishRate"])
    assert n == 2
    for i in range(n):
        assert merged["publishRate"][i] == pytest.approx(sum(p["publishRate"][i] for p in parts), rel=0.01)
    assert x["publishLatencyMs"]["count"] == sum(p["x-streambench"]["publishLatencyMs"]["count"] for p in parts)
    assert x["process"]["count"] == 2 and len(x["process"]["merged"]) == 2
    # both parts started at the moment the barrier agreed on, after both were ready
    ready = [int((tmp_path / "barrier" / f"ready-{i}").read_text()) for i in range(2)]
    assert all(p["x-streambench"]["process"]["startAt"] == max(ready) + 2000 for p in parts)
    # and ended their drain when, together, they had read every acknowledged message (each part's state in the
    # barrier's directory, runner Barrier.drainAgreed), not each when it had heard nothing for a while
    states = [(tmp_path / "barrier" / f"drain-{i}").read_text().split() for i in range(2)]
    acked = sum(int(st[1]) for st in states)
    assert acked == x["audit"]["acked"] and sum(int(st[-1]) for st in states) >= acked, states
    assert x["audit"]["drained"] is True and x["audit"]["lost"] == 0


# serial (the fan-out tests): 200 consumers in one or two runner JVMs hold the runner's 1-s ticks (one time-series
# element per second, which check_result asks) only with the CPU to themselves: beside env/test's side-by-side section
# (load average above 20 on two cores) a part's main loop handled 12 ticks in 28 s (env-test-fresh-256bea5)
FANOUT_NEEDS_THE_CPU = pytest.mark.serial


@pytest.mark.integration
@FANOUT_NEEDS_THE_CPU
@pytest.mark.parametrize("workload", [FANOUT], ids=["fanout"])  # steady runs take the same path after set-up
def test_two_processes_with_a_coordinated_barrier_start_when_the_coordinator_says(cluster, tmp_path, workload):
    """--barrier DIR --barrier-coordinated, as on client hosts that share no file system: each process marks itself
    ready in its own directory once wholly set up (a fan-out process: its consumers connected and ready, its producer
    made) and starts at the time a coordinator (here the test; testbeds/runner.py over ssh) writes into every
    directory once it has seen both ready."""
    system, cj, cobj = cluster
    start_at = int(time.time() * 1000)
    dirs = [tmp_path / f"host-{i}" / "barrier" for i in range(2)]
    procs = []
    for i in range(2):
        cmd = [str(OMB_RUN), "--workload", str(workload), "--driver", str(DRIVERS[system]), "--cluster", str(cj),
               "--output", str(tmp_path / f"part-{i}.json"), "--log", str(tmp_path / f"part-{i}.log"),
               "--process-index", str(i), "--process-count", "2", "--start-at", str(start_at),
               "--barrier", str(dirs[i]), "--barrier-coordinated"]
        procs.append(subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        deadline = time.time() + 300
        while not all((d / f"ready-{i}").exists() for i, d in enumerate(dirs)):
            assert all(p.poll() is None for p in procs) and time.time() < deadline, [p.poll() for p in procs]
            time.sleep(0.05)
        time.sleep(1.0)  # both wait: neither starts before the coordinator writes its time
        assert all(p.poll() is None for p in procs)
        go = int(time.time() * 1000) + 1500
        for d in dirs:
            (d / ".go.tmp").write_text(str(go))
            (d / ".go.tmp").rename(d / "go")
        # and the drain: once their states (drain-<i>, a fan-out part's a line or two) agree, `drained` in both
        # directories, as testbeds/runner.py's coordinate_drain writes it over ssh
        from testbeds.runner import drain_agreed

        states_seen = []
        while any(p.poll() is None for p in procs) and time.time() < deadline + 300:
            states = [(d / f"drain-{i}").read_text() if (d / f"drain-{i}").exists() else None
                      for i, d in enumerate(dirs)]
            if drain_agreed(states):
                states_seen = states
                for d in dirs:
                    (d / ".drained.tmp").write_text("1")
                    (d / ".drained.tmp").rename(d / "drained")
                break
            time.sleep(0.2)
        outs = [p.communicate(timeout=600) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-4000:]
    parts = [json.loads((tmp_path / f"part-{i}.json").read_text()) for i in range(2)]
    assert all(p["x-streambench"]["process"]["startAt"] == go for p in parts)
    merged = tmp_path / "merged.json"
    m = subprocess.run([str(OMB_MERGE), "--output", str(merged), *(str(tmp_path / f"part-{i}.json") for i in range(2))],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert m.returncode == 0, m.stderr
    x = check_result(json.loads(merged.read_text()), cobj)
    assert x["audit"]["acked"] == sum(p["x-streambench"]["audit"]["acked"] for p in parts) > 0
    # the parts' drain states agreed: each names its 100 subscriptions (one consumer each, all its own) in one line
    assert states_seen, "the parts' drain states never agreed"
    for st in states_seen:
        lines = st.splitlines()
        assert len(lines) == 2 and lines[0].startswith("acked ") and lines[1].startswith("whole 100 "), st


@pytest.mark.integration
def test_failed_run_writes_no_result_and_exits_nonzero(cluster, tmp_path):
    system, cj, cobj = cluster
    out = tmp_path / "fail.json"
    if system == "kafka":
        drv = tmp_path / "kafka-rf5.yaml"   # 5 replicas on 3 brokers: topic creation fails on the broker
        drv.write_text(DRIVERS["kafka"].read_text().replace("replicationFactor: 3", "replicationFactor: 5"))
    else:
        drv = tmp_path / "pulsar-bad-tenant.yaml"   # an invalid tenant name: the admin REST call fails
        drv.write_text(DRIVERS["pulsar"].read_text().replace("namespacePrefix: benchmark/ns", "namespacePrefix: bad!tenant/ns"))
    p = omb_run(STEADY, drv, out, cj, timeout=300)
    assert p.returncode == 1, p.stderr[-3000:]
    assert not out.exists(), "a failed run writes no result"
    assert not list(tmp_path.glob("fail.json.tmp-*"))
    assert out.with_suffix(".log").exists() and "run failed" in out.with_suffix(".log").read_text()


@pytest.mark.integration
@FANOUT_NEEDS_THE_CPU
def test_fanout_200_consumers_each_receive_everything_and_connection_time_is_recorded(cluster, tmp_path):
    system, cj, cobj = cluster
    out = tmp_path / "fanout.json"
    p = omb_run(FANOUT, DRIVERS[system], out, cj, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    res = json.loads(out.read_text())
    x = check_result(res, cobj)  # includes: every subscription (= consumer here) received every acked message once
    a = x["audit"]
    assert len(a["receivedPerSubscription"]) == 200
    assert all(s["lost"] == 0 for s in a["receivedPerSubscription"].values())
    f = x["fanOut"]
    assert f["consumers"] == 200 and f["connected"] == 200 and f["neverConnected"] == 0, {k: f[k] for k in ("consumers", "connected")}
    assert f["connectConcurrency"] == 100
    assert 0 < f["connectionTimeSeconds"] < 300
    assert f["connectLatencyMs"]["count"] == 200 and f["connectedAfterMs"]["count"] == 200
    assert f["connectedAfterMs"]["max"] == pytest.approx(f["connectionTimeSeconds"] * 1000, rel=2e-3)  # 3 digits
    assert f["receivedPerConsumerMin"] == f["receivedPerConsumerMax"] == a["acked"] > 0
    pc = f["perConsumer"]
    assert len(pc["connectStart"]) == len(pc["connected"]) == len(pc["firstMessage"]) == 200
    assert all(0 <= s <= c for s, c in zip(pc["connectStart"], pc["connected"]))
    assert all(fm >= 0 for fm in pc["firstMessage"]), "every consumer received a first message"
    assert x["endToEndLatencyMicros"]["count"] > 0
