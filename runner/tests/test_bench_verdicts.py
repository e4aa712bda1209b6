"""The bench scripts' verdict is their exit code: 0 when every stated criterion holds, 1 when one fails.

The measurements (brokers, omb-run, perf-test, jcmd) are replaced by fixed numbers here: what is tested is the
judging and its wiring into each script's exit code, not the numbers. RecordingCost runs for real (it needs no
broker), once with its own 1 µs criterion and once with one no machine meets.
"""
from __future__ import annotations

import contextlib
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "runner" / "bench"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    try:
        yield {name: importlib.import_module(name) for name in
               ("common", "rate_accuracy", "maxrate_vs_perftest", "heap_flat", "fanout")}
    finally:
        sys.path.remove(str(BENCH))


def test_criteria_exit_code_is_the_verdict(bench, capsys):
    c = bench["common"].Criteria()
    assert c.exit_code() == 1  # nothing judged is not a pass
    c = bench["common"].Criteria()
    assert c.check("a", 0.99, ">=", 0.95) and c.exit_code() == 0
    assert not c.check("b", 1.2, "<=", 1.1)
    assert c.exit_code() == 1
    out = capsys.readouterr().out
    assert "criterion b: 1.200 <= 1.100: FAIL" in out and "failed: b" in out
    c = bench["common"].Criteria()
    c.fail("c", "no samples")
    assert c.exit_code() == 1


def _fake_omb(achieved_of):
    """A stand-in for common.run_omb returning an OMB result whose achieved rate is achieved_of(workload rate)."""
    def run(wl, drv, bootstrap, out, **kw):
        import yaml
        rate = yaml.safe_load(Path(wl).read_text())["producerRate"]
        ach = achieved_of(rate)
        return {"publishRate": [ach], "aggregatedPublishDelayLatency99pct": 100.0,
                "x-streambench": {"producerRate": {"achieved": ach, "ackRate": ach, "droppedScheduledSends": 0},
                                  "warmupSeconds": 5, "measurementSeconds": 20, "audit": {"acked": ach * 25}}}
    return run


@pytest.mark.parametrize("factor, rc", [(1.0, 0), (0.995, 0), (0.98, 1), (1.02, 1)])
def test_rate_accuracy_exits_1_when_a_rate_misses_by_more_than_1_percent(bench, monkeypatch, factor, rc):
    m = bench["rate_accuracy"]
    monkeypatch.setattr(m.common, "require_built", lambda: None)
    monkeypatch.setattr(m.localkafka, "single_broker", lambda *a, **k: contextlib.nullcontext("127.0.0.1:1"))
    # one rate misses by the factor, the others are exact
    monkeypatch.setattr(m.common, "run_omb", _fake_omb(lambda r: r * factor if r == 10000 else float(r)))
    monkeypatch.setattr(sys, "argv", ["rate_accuracy.py", "--reps", "1", "--seconds", "1"])
    assert m.main() == rc


@pytest.mark.parametrize("runner_rate, rc", [(96_000, 0), (94_000, 1)])
def test_maxrate_vs_perftest_exits_1_below_095(bench, monkeypatch, runner_rate, rc):
    m = bench["maxrate_vs_perftest"]
    monkeypatch.setattr(m.common, "require_built", lambda: None)
    monkeypatch.setattr(m.localkafka, "single_broker", lambda *a, **k: contextlib.nullcontext("127.0.0.1:1"))
    monkeypatch.setattr(m.localkafka, "kafka_libs", lambda: Path("/nonexistent"))
    monkeypatch.setattr(m, "perf_test", lambda *a, **k: 100_000.0)
    monkeypatch.setattr(m.common, "run_omb", _fake_omb(lambda r: float(runner_rate)))
    monkeypatch.setattr(sys, "argv", ["maxrate_vs_perftest.py", "--reps", "2", "--seconds", "1"])
    assert m.main() == rc


def test_heap_flat_judges_flat_growing_and_too_few_samples(bench):
    judge = bench["heap_flat"].judge
    flat = [(30.0 + 20 * i, 85.0 + (i % 3) * 0.5) for i in range(12)]
    assert judge(flat, 1) == 0
    leak = [(30.0 + 20 * i, 85.0 + 4.0 * i) for i in range(12)]  # 12 MB/min
    assert judge(leak, 1) == 1
    # a slope below 1 MB/min that still ends 20 % higher: the ratio alone fails it
    step = [(30.0 + 20 * i, 80.0 if i < 6 else 96.0) for i in range(12)]
    assert judge(step, 1) == 1
    assert judge(flat[:2], 1) == 1


# Pulsar: per consumer <= 50 KB and <= fanout.HEAP_KB (18 KB), connect ratio >= 0.95; Kafka (heap only): per consumer
# <= fanout.HEAP_KB (512 KB); both: the small run's heap <= fanout.BASE_HEAP_MB
@pytest.mark.parametrize("system, per_consumer_kb, connect_ratio, rc", [
    ("pulsar", 15, 1.0, 0), ("pulsar", 60, 1.0, 1), ("pulsar", 30, 1.0, 1), ("pulsar", 15, 0.8, 1),
    ("kafka", 400, None, 0), ("kafka", 600, None, 1)])
def test_fanout_exit_code_follows_every_criterion(bench, monkeypatch, tmp_path, system, per_consumer_kb, connect_ratio,
                                                  rc):
    m = bench["fanout"]
    monkeypatch.setattr(m, "ROOT", tmp_path)  # the script looks for the jar and makes its temp dir under ROOT
    (tmp_path / "runner" / "target").mkdir(parents=True)
    (tmp_path / "runner" / "target" / "omb-runner.jar").write_bytes(b"")
    real_run = subprocess.run

    def fake_run(cmd, *a, **k):
        if cmd[:3] == [sys.executable, "-m", "systems"]:
            if cmd[3] == "up":
                rundir = Path(cmd[cmd.index("--dir") + 1])
                rundir.mkdir(parents=True)
                (rundir / "cluster.json").write_text(json.dumps({"pulsar": {"serviceUrl": "x", "httpUrl": "y"}}))
            return subprocess.CompletedProcess(cmd, 0, "", "")
        return real_run(cmd, *a, **k)

    monkeypatch.setattr(m.subprocess, "run", fake_run)

    def fake_omb(system, wl, cluster, out, heap):
        import yaml
        n = yaml.safe_load(Path(wl).read_text())["subscriptionsPerTopic"]
        res = {"x-streambench": {"fanOut": {"connectionTimeSeconds": n / (100.0 * (connect_ratio or 1.0))}}}
        return res, (10_000 + n * per_consumer_kb if heap else None)

    monkeypatch.setattr(m, "omb", fake_omb)
    monkeypatch.setattr(m, "plain", lambda system, endpoint, topic, n, c, admin: n / 100.0)
    only = ["--only", "heap"] if connect_ratio is None else []
    monkeypatch.setattr(sys, "argv", ["fanout.py", "--system", system, "--consumers", "500", "--small", "50",
                                      "--reps", "2", *only])
    assert m.main() == rc


def test_fanout_without_a_heap_reading_fails(bench, monkeypatch, tmp_path):
    m = bench["fanout"]
    monkeypatch.setattr(m, "ROOT", tmp_path)
    (tmp_path / "runner" / "target").mkdir(parents=True)
    (tmp_path / "runner" / "target" / "omb-runner.jar").write_bytes(b"")

    def fake_run(cmd, *a, **k):
        if cmd[3] == "up":
            rundir = Path(cmd[cmd.index("--dir") + 1])
            rundir.mkdir(parents=True)
            (rundir / "cluster.json").write_text("{}")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(m.subprocess, "run", fake_run)
    monkeypatch.setattr(m, "omb", lambda *a: ({"x-streambench": {"fanOut": {"connectionTimeSeconds": 1.0}}}, None))
    monkeypatch.setattr(sys, "argv", ["fanout.py", "--only", "heap"])
    assert m.main() == 1


def test_pipeline_bench_exit_code_follows_its_targets():
    sys.path.insert(0, str(ROOT))
    from analysis.bench import pipeline
    ok = [{"to_figures": 12.0, "paper": 20.0}, {"to_figures": 14.0, "paper": 70.0}, {"to_figures": 13.0, "paper": 25.0}]
    assert pipeline.judge(ok) == 0  # medians 13 s and 25 s
    slow = [{"to_figures": 31.0, "paper": 20.0}] * 3
    assert pipeline.judge(slow) == 1


@pytest.mark.slow
@pytest.mark.parametrize("target_ns, rc", [(None, 0), ("0.001", 1)])
def test_recording_cost_exits_by_its_criterion(target_ns, rc):
    jar = ROOT / "runner" / "target" / "omb-runner.jar"
    if not jar.exists():
        pytest.fail("runner not built: run `mvn -q -f runner/pom.xml package` first")
    args = ["3", "200000", "1"] + ([target_ns] if target_ns else [])
    p = subprocess.run(["java", "-Xmx512m", "-cp", f"{jar}:{ROOT / 'runner' / 'target' / 'lib'}/*",
                        "org.streambench.runner.bench.RecordingCost", *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == rc, p.stdout + p.stderr
    verdicts = [line for line in p.stdout.splitlines() if line.startswith("criterion median CPU per message")]
    assert len(verdicts) == 1 and verdicts[0].endswith("PASS" if rc == 0 else "FAIL"), p.stdout
