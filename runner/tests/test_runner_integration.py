"""Integration tests of runner/bin/omb-run against real 3-node clusters started with `python -m systems`.

Each test runs once on Kafka's and once on Pulsar's shared L1 cluster (systems/tests/sharedcluster.py: started before
the first test of that cluster, which the systems' own integration tests use too, and stopped with its checks after the
last). Needs the runner built (`mvn -q -f runner/pom.xml package`).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

# serial: their checks hold the runner to its schedule (sent = rate x seconds within 5 %, the discovered rate held, a
# drain faster than the producers); a cluster beside them on two cores would make that a measurement of the other one
# (the runner tests that judge no rate are in test_runner_processes.py)
pytestmark = pytest.mark.serial

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
LOW_RATE = TESTDATA / "1-topic-1-partition-1kb-2-msgs.yaml"

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


def run_checked(cluster, workload: Path, out: Path):
    """One run on the shared cluster that must exit 0 with a whole result: (the process, the result, its
    x-streambench block)."""
    system, cj, cobj = cluster
    p = omb_run(workload, DRIVERS[system], out, cj)
    assert p.returncode == 0, p.stderr[-4000:]
    res = json.loads(out.read_text())
    return p, res, check_result(res, cobj)


@pytest.mark.integration
def test_steady_workload_yields_valid_result_with_clean_audit(cluster, tmp_path):
    p, res, x = run_checked(cluster, STEADY, tmp_path / "steady.json")
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
def test_the_measured_phase_starts_on_time_at_a_low_rate(cluster, tmp_path):
    # the measured phase begins a new schedule segment while the sender waits for the warm-up's next send, 500 ms
    # away at 2 msg/s; the first send of the segment leaves at its start, not after that wait (the fan-out runs at
    # 1 msg/s recorded up to 1.6 s of publish delay for it, and were flagged suspect)
    _, res, x = run_checked(cluster, LOW_RATE, tmp_path / "low.json")
    delay_max_ms = res["aggregatedPublishDelayLatencyMax"] / 1000  # OMB gives the publish delay in microseconds
    assert delay_max_ms < 250, f"the measured phase's sends left {delay_max_ms:.0f} ms late (an interval is 500 ms)"
    # 3 s of warm-up and 4 s measured at 2 msg/s: 6 + 8 sends, give or take the one at each segment's edge
    assert 13 <= x["audit"]["sent"] <= 16, x["audit"]


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
    driver = DRIVERS[system]
    if system == "pulsar":
        # A paused Pulsar consumer still receives what its partitions' receiver queues hold permits for (pause() only
        # stops new permits, as in OMB): with OMB's 10 000 per partition the backlog begins to build only after 10 x
        # 10 000 messages, 50 s at 2 000 msg/s. The queue of workloads/drivers/pulsar-*.yaml, 1 000, builds it in 5 s.
        doc = yaml.safe_load(driver.read_text())
        doc["consumer"]["receiverQueueSize"] = 1000
        driver = tmp_path / "pulsar-3bookie-queue-1000.yaml"
        driver.write_text(yaml.safe_dump(doc, sort_keys=False))
    p = omb_run(BACKLOG, driver, out, cj)
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
