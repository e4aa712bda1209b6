"""The bench scripts' verdict is their exit code: 0 when every stated criterion holds, 1 when one fails.

The measurements (brokers, omb-run, perf-test, jcmd) are replaced by fixed numbers here: what is tested is the
judging and its wiring into each script's exit code, not the numbers. RecordingCost runs for real (it needs no
broker), once with its own 1 µs criterion and once with one no machine meets.
"""
from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "runner" / "bench"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    try:
        yield {name: importlib.import_module(name) for name in
               ("common", "rate_accuracy", "maxrate_vs_perftest", "heap_flat", "fanout", "omb_vs_runner")}
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


# runner/bench/omb_vs_runner.py: upstream OMB's build and its brokers replaced; what is tested is the judging of the
# three p99 ratios, the exit codes, that the cluster is stopped and the work directory removed whatever happens


def _omb_checkout(root: Path) -> Path:
    """The files of an openmessaging/benchmark checkout the bench reads, built (its classpath.txt) as --no-build needs."""
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "benchmark").write_text("#!/bin/sh\n")
    (root / "driver-kafka").mkdir()
    (root / "driver-kafka" / "kafka-latency.yaml").write_text(
        "name: Kafka\ndriverClass: io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver\n"
        "commonConfig: |\n  bootstrap.servers=localhost:9092\n")
    (root / "workloads").mkdir()
    (root / "workloads" / "1-topic-16-partitions-1kb.yaml").write_text(
        "name: 1 topic / 16 partitions / 1Kb\ntopics: 1\npartitionsPerTopic: 16\nmessageSize: 1024\n"
        "payloadFile: payload/payload-1Kb.data\nsubscriptionsPerTopic: 1\nconsumerPerSubscription: 1\n"
        "producersPerTopic: 1\nproducerRate: 50000\nconsumerBacklogSizeGB: 0\ntestDurationMinutes: 15\n")
    (root / "benchmark-framework" / "target").mkdir(parents=True)
    (root / "benchmark-framework" / "target" / "classpath.txt").write_text("")
    return root


def _omb_result(delay_us: float, pub_ms: float, e2e_ms: float) -> dict:
    return {"publishRate": [10000.0], "aggregatedPublishDelayLatency99pct": delay_us,
            "aggregatedPublishLatency99pct": pub_ms, "aggregatedEndToEndLatency99pct": e2e_ms}


@pytest.fixture()
def omb_bench(bench, monkeypatch, tmp_path):
    m = bench["omb_vs_runner"]
    cache = tmp_path / "cache"
    src = _omb_checkout(cache / "omb-build")
    monkeypatch.setenv("STREAMBENCH_CACHE", str(cache))

    def mkdtemp(prefix):
        (tmp_path / "work").mkdir()
        return str(tmp_path / "work")
    monkeypatch.setattr(m.tempfile, "mkdtemp", mkdtemp)
    monkeypatch.setattr(m.common, "require_built", lambda: None)
    monkeypatch.setattr(m.common, "runner_java_opts", lambda: ["-Xmx1g"])
    calls = {"up": 0, "down": 0, "deleted": 0, "runs": []}

    def up(rundir):
        calls["up"] += 1
        return "127.0.0.1:1"

    monkeypatch.setattr(m.common, "kafka_l2_up", up)
    monkeypatch.setattr(m.common, "kafka_down", lambda rundir: calls.__setitem__("down", calls["down"] + 1))
    monkeypatch.setattr(m, "delete_omb_topics", lambda b: calls.__setitem__("deleted", calls["deleted"] + 1))
    return m, src, calls, tmp_path


@pytest.mark.parametrize("runner_delay_us, rc", [(900.0, 0), (1100.0, 1)])
def test_omb_vs_runner_judges_the_three_p99_ratios_over_the_pairs(omb_bench, monkeypatch, runner_delay_us, rc,
                                                                  capsys):
    m, src, calls, tmp = omb_bench

    def omb(src_, drv, wl, out, java_opts, grace=20.0, popen_hook=None):
        calls["runs"].append("omb")
        assert "bootstrap.servers=127.0.0.1:1" in Path(drv).read_text()
        assert java_opts[0] == "-Xmx1g" and java_opts[-1] == f"-Xlog:gc:file={Path(out).with_suffix('.gc.log')}"
        Path(out).with_suffix(".gc.log").write_text(
            "[1.0s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 50M->10M(1024M) 12.500ms\n")
        return _omb_result(1000.0, 5.0, 6.0)

    def runner(wl, drv, bootstrap, out, popen_hook=None, java_opts=None):
        calls["runs"].append("runner")
        assert java_opts == f"-Xmx1g -Xlog:gc:file={Path(out).with_suffix('.gc.log')}"
        return _omb_result(runner_delay_us, 4.0, 5.0)

    monkeypatch.setattr(m, "run_omb", omb)
    monkeypatch.setattr(m.common, "run_omb", runner)
    monkeypatch.setattr(sys, "argv", ["omb_vs_runner.py", "--omb-src", str(src), "--no-build", "--rate", "10000"])
    term = signal.getsignal(signal.SIGTERM)
    assert m.main() == rc
    # the uncounted pair, then ABBA over 4 pairs
    assert calls["runs"] == ["runner", "omb", "omb", "runner", "runner", "omb", "omb", "runner", "runner", "omb"]
    assert calls["deleted"] == 5 and calls["up"] == 1 and calls["down"] == 1
    assert not (tmp / "work").exists(), "the work directory is removed"
    out = capsys.readouterr().out
    assert f"publish-delay p99 runner / OMB: {runner_delay_us / 1000:.2f}" in out
    # where the time went: the GC pauses from each tool's own log (the runner's fake wrote none)
    assert "omb's GC pauses 1, 12 ms in all, longest 12.5 ms" in out and "runner's GC pauses 0, 0 ms in all" in out
    assert signal.getsignal(signal.SIGTERM) is term, "the bench restores the TERM handler it replaced"


def test_omb_vs_runner_a_failed_run_is_a_fail_and_the_files_are_kept_on_request(omb_bench, monkeypatch, capsys):
    m, src, calls, tmp = omb_bench

    def omb(*a, **k):
        raise FileNotFoundError(2, "No such file or directory", "bin/benchmark")

    monkeypatch.setattr(m, "run_omb", omb)
    monkeypatch.setattr(m.common, "run_omb", lambda *a, **k: _omb_result(1.0, 1.0, 1.0))
    monkeypatch.setattr(sys, "argv", ["omb_vs_runner.py", "--omb-src", str(src), "--no-build", "--keep",
                                      str(tmp / "kept")])
    assert m.main() == 1
    assert calls["down"] == 1 and not (tmp / "work").exists()
    assert {p.name for p in (tmp / "kept").iterdir()} == {"kafka-latency.yaml", "workload.yaml"}
    assert "No such file or directory" in capsys.readouterr().out


def test_omb_vs_runner_a_term_mid_run_stops_the_cluster_and_removes_the_work_directory(omb_bench, monkeypatch):
    m, src, calls, tmp = omb_bench

    def runner(wl, drv, bootstrap, out, popen_hook=None, java_opts=None):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the TERM's handler raises in here
        raise AssertionError("the TERM did not interrupt the bench")

    monkeypatch.setattr(m.common, "run_omb", runner)
    monkeypatch.setattr(m, "run_omb", lambda *a, **k: _omb_result(1.0, 1.0, 1.0))
    monkeypatch.setattr(sys, "argv", ["omb_vs_runner.py", "--omb-src", str(src), "--no-build"])
    term = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        m.main()
    assert calls["up"] == 1 and calls["down"] == 1 and not (tmp / "work").exists()
    assert signal.getsignal(signal.SIGTERM) is term


@pytest.mark.parametrize("argv, what", [
    (["--pairs", "3"], "--pairs: at least 4"),
    (["--omb-src", "/nonexistent"], "not a checkout of openmessaging/benchmark"),
])
def test_omb_vs_runner_cannot_run_exits_2_with_one_line(omb_bench, monkeypatch, capsys, argv, what):
    m, src, calls, tmp = omb_bench
    args = ["--omb-src", str(src), "--no-build", *argv]
    monkeypatch.setattr(sys, "argv", ["omb_vs_runner.py", *args])
    assert m.main() == 2
    assert what in capsys.readouterr().err and calls["up"] == 0


def test_omb_vs_runner_a_cluster_that_does_not_start_exits_2_and_is_stopped(omb_bench, monkeypatch):
    m, src, calls, tmp = omb_bench
    monkeypatch.setattr(m.common, "kafka_l2_up", lambda rundir: None)
    monkeypatch.setattr(sys, "argv", ["omb_vs_runner.py", "--omb-src", str(src), "--no-build"])
    assert m.main() == 2
    assert calls["down"] == 1 and not (tmp / "work").exists()


def test_omb_framework_pom_keeps_the_api_and_kafka_drivers_only(bench):
    m = bench["omb_vs_runner"]

    def dep(group, art):
        return (f"    <dependency>\n      <groupId>{group}</groupId>\n      <artifactId>{art}</artifactId>\n"
                f"      <version>${{project.version}}</version>\n    </dependency>\n")
    pom = ("<project>\n  <dependencies>\n" + dep("${project.groupId}", "driver-api")
           + dep("${project.groupId}", "driver-pulsar") + dep("${project.groupId}", "driver-kafka")
           + dep("${project.groupId}", "driver-bookkeeper") + dep("org.hdrhistogram", "HdrHistogram")
           + "  </dependencies>\n</project>\n")
    out = m.framework_pom_kafka_only(pom)
    assert out == ("<project>\n  <dependencies>\n" + dep("${project.groupId}", "driver-api")
                   + dep("${project.groupId}", "driver-kafka") + dep("org.hdrhistogram", "HdrHistogram")
                   + "  </dependencies>\n</project>\n")
    with pytest.raises(SystemExit, match="names no driver-kafka"):
        m.framework_pom_kafka_only(pom.replace("driver-kafka", "driver-rabbitmq"))
