"""Integration tests of runner/bin/omb-run against real 3-node clusters started with `python -m systems`.

Each test runs once on Kafka's and once on Pulsar's shared L1 cluster (systems/tests/sharedcluster.py: started before
the first test of that cluster, which the systems' own integration tests use too, and stopped with its checks after the
last). Needs the runner built (`mvn -q -f runner/pom.xml package`).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "runner"
OMB_RUN = RUNNER / "bin" / "omb-run"
OMB_MERGE = RUNNER / "bin" / "omb-merge"
TESTDATA = RUNNER / "testdata"
DRIVERS = {"kafka": TESTDATA / "kafka-3node.yaml", "pulsar": TESTDATA / "pulsar-3bookie.yaml"}
STEADY = TESTDATA / "1-topic-10-partitions-1kb-2k-20s.yaml"
BACKLOG = TESTDATA / "backlog-10mb.yaml"
DISCOVERY = TESTDATA / "discovery.yaml"
FANOUT = TESTDATA / "fanout-200.yaml"

OMB_KEYS = ["workload", "driver", "messageSize", "topics", "partitions", "producersPerTopic", "consumersPerTopic",
            "publishRate", "publishErrorRate", "consumeRate", "backlog"]
_PCT = ["Avg", "50pct", "75pct", "95pct", "99pct", "999pct", "9999pct", "Max"]
OMB_KEYS += [f"publishLatency{p}" for p in _PCT] + [f"publishDelayLatency{p}" for p in _PCT]
OMB_KEYS += [f"aggregatedPublishLatency{p}" for p in _PCT] + [f"aggregatedPublishDelayLatency{p}" for p in _PCT]
OMB_KEYS += ["aggregatedPublishLatencyQuantiles", "aggregatedPublishDelayLatencyQuantiles"]
OMB_KEYS += [f"endToEndLatency{p}" for p in _PCT] + ["aggregatedEndToEndLatencyQuantiles"]
OMB_KEYS += [f"aggregatedEndToEndLatency{p}" for p in _PCT]
assert len(OMB_KEYS) == 62


def _require_built() -> None:
    if not (RUNNER / "target" / "omb-runner.jar").exists():
        pytest.fail("runner not built: run `mvn -q -f runner/pom.xml package` first")


@pytest.fixture(params=[pytest.param(s, marks=pytest.mark.cluster(s, "L1"), id=s) for s in ("kafka", "pulsar")])
def cluster(request, shared_cluster):
    _require_built()
    return shared_cluster.system, shared_cluster.cluster_json, shared_cluster.doc


def omb_run(workload: Path, driver: Path, out: Path, cluster_json: Path | None, *extra: str,
            timeout: float = 600) -> subprocess.CompletedProcess:
    cmd = [str(OMB_RUN), "--workload", str(workload), "--driver", str(driver), "--output", str(out),
           "--log", str(out.with_suffix(".log")), *extra]
    if cluster_json is not None:
        cmd += ["--cluster", str(cluster_json)]
    return subprocess.run(cmd, cwd=ROOT, timeout=timeout, capture_output=True, text=True)


def check_result(res: dict, cluster_obj: dict) -> dict:
    assert list(res)[:62] == OMB_KEYS, "every OMB TestResult key, in OMB's order"
    assert list(res)[62:] == ["x-streambench"]
    x = res["x-streambench"]
    assert x["cluster"] == cluster_obj, "cluster.json echoed whole"
    assert x["runner"]["version"] and x["runner"]["gitRevision"]
    for h in ("publish", "publishCorrected", "publishDelay", "endToEnd", "endToEndCorrected"):
        assert isinstance(x["histograms"][h], str) and len(x["histograms"][h]) > 10
    assert len(x["histograms"]["perPeriod"]["publish"]) == len(res["publishRate"])
    assert x["publishLatencyCorrected"]["p99"] >= x["publishLatencyMs"]["p50"]
    assert x["timeSeries"]["intervalSeconds"] == 1
    assert len(x["timeSeries"]["publishRate"]) >= x["measurementSeconds"] - 1, "one element per second of the run"
    a = x["audit"]
    assert a["sendErrors"] == 0, a
    assert a["acked"] == a["sent"] > 0, a
    assert a["lost"] == 0 and a["duplicated"] == 0, a
    assert a["drained"] is True, a
    for sub in a["receivedPerSubscription"].values():
        assert sub["unique"] == a["acked"], sub
    return x


@pytest.mark.integration
def test_steady_workload_yields_valid_result_with_clean_audit(cluster, tmp_path):
    system, cj, cobj = cluster
    out = tmp_path / "steady.json"
    p = omb_run(STEADY, DRIVERS[system], out, cj)
    assert p.returncode == 0, p.stderr[-4000:]
    res = json.loads(out.read_text())
    x = check_result(res, cobj)
    assert res["partitions"] == 10 and res["messageSize"] == 1024 and res["topics"] == 1
    assert len(res["publishRate"]) == 2, "20 s measured = two 10-s windows"
    # the open-loop schedule: over the whole run the producers sent what the 2 000 msg/s schedule asked for (a stall
    # in the warm-up is caught up by sending back-to-back, so a single window may run above the rate)
    run_seconds = x["warmupSeconds"] + x["measurementSeconds"]
    assert x["audit"]["sent"] == pytest.approx(2000 * run_seconds, rel=0.05)
    # e2e samples are those delivered inside the measured phase; on a loaded 2-core machine the Pulsar consumers
    # can lag the producers by seconds (they catch up in the end-of-run drain, which the audit checks), so only
    # require that deliveries were measured and that every delivery is accounted for
    assert x["endToEndLatencyMicros"]["count"] > 0
    assert sum(res["consumeRate"]) > 0
    assert "Pub rate" in p.stderr, "progress lines on stderr"
    assert not list(tmp_path.glob("*.tmp-*")), "no temp file left"


@pytest.mark.integration
def test_the_discovered_rate_held_for_the_measured_phase_keeps_the_backlog_bounded(cluster, tmp_path):
    system, cj, cobj = cluster
    out = tmp_path / "max.json"
    p = omb_run(DISCOVERY, DRIVERS[system], out, cj, timeout=900)
    assert p.returncode == 0, p.stderr[-4000:]
    x = json.loads(out.read_text())["x-streambench"]
    rd, mp = x["rateDiscovery"], x["measuredPhase"]
    passed = [s["targetRate"] for s in rd["steps"] if s["pass"]]
    assert passed, rd["steps"]
    for s in rd["steps"]:
        assert s["pass"] == (not s["reasons"]) and s["judgedSeconds"] == 2, s
    # the measured phase runs at the highest accepted rate; one that did not hold it (a step is judged over 2 s, the
    # measured phase over 10) is recorded with its reasons and run again lower, at most twice: at 80 % of its rate, or
    # at 90 % of what the slowest side (acks, consumers) kept up with when that is lower, never below a quarter
    rejected = rd["rejectedMeasurements"]
    assert len(rejected) <= rd["remeasures"] == 2
    assert all(r["reasons"] and r["judgedSeconds"] >= 9 for r in rejected), rejected
    rates = [r["targetRate"] for r in rejected] + [rd["settledRate"]]
    assert rates[0] == pytest.approx(max(passed))
    for r, nxt in zip(rejected, rates[1:]):
        assert r["keptUpRate"] is not None and r["keptUpRate"] <= r["sendRate"], r
        want = max(0.25 * r["targetRate"], min(0.8 * r["targetRate"], 0.9 * r["keptUpRate"]))
        assert nxt == pytest.approx(want), (r, nxt)
    assert len(x["warnings"]) >= len(rejected)
    # the rate reported is one the system sustained: held for a whole measured phase of 10 s, the consumers and the
    # acks keep up
    assert mp["targetRate"] == pytest.approx(rd["settledRate"])
    assert x["measurementSeconds"] == pytest.approx(10, abs=1.5), "the OMB windows are the last measured phase's"
    assert rd["recoverySeconds"] >= 1, "the overload of the last failed step is paid off before the measured phase"
    assert mp["backlogBounded"] is True and mp["inFlightBounded"] is True, mp
    assert mp["rateMet"] is True and mp["sustained"] is True, mp
    assert x["audit"]["lost"] == 0 and x["audit"]["duplicated"] == 0


@pytest.mark.integration
def test_backlog_workload_drains_and_reports_a_drain_rate(cluster, tmp_path):
    system, cj, cobj = cluster
    out = tmp_path / "backlog.json"
    p = omb_run(BACKLOG, DRIVERS[system], out, cj)
    assert p.returncode == 0, p.stderr[-4000:]
    res = json.loads(out.read_text())
    x = check_result(res, cobj)
    b = x["backlog"]
    assert b["targetMessages"] == 10 * 1024
    assert b["backlogAtRelease"] >= b["targetMessages"]
    assert b["releaseTime"] and b["chaseCompleteTime"], b
    assert b["chaseTimeSeconds"] > 0
    assert b["drainRateMsgs"] > 2000, "draining means reading faster than the producers write"
    assert b["drainRateMBps"] == pytest.approx(b["drainRateMsgs"] * 1024 / 1048576)
    assert b["publishLatencyDuringDrainMs"]["count"] > 0
    assert b["drained"] is True


@pytest.mark.integration
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


@pytest.mark.integration
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
