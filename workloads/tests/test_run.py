"""workloads.run: a failed run is recorded, leaves no result, and can be forgotten to be retried."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workloads import run as wrun
from workloads import summary

ROOT = Path(__file__).resolve().parents[2]


def test_failed_run_is_recorded_without_a_result(tmp_path):
    # an empty cache: the Kafka distribution is missing, so `systems up` fails for real
    env = {**os.environ, "STREAMBENCH_CACHE": str(tmp_path / "empty-cache"), "PYTHONPATH": str(ROOT)}
    result = tmp_path / "raw/ci/kafka/L1/w/rep-1.json"
    status = tmp_path / "runs/status/kafka/L1/w/rep-1.json"
    res = subprocess.run(
        [sys.executable, "-m", "workloads.run", "--clusters", str(tmp_path / "runs/clusters"), "--testbed", "ci",
         "--scale", "ci", "--system", "kafka", "--level", "L1", "--tuning", "tuned",
         "--workload", "1-topic-100-partitions-1kb-2p-2c-200k", "--rep", "1", "--in-experiments", "E000-LAT1",
         "--driver", str(ROOT / "workloads/drivers/kafka-L1-tuned.yaml"),
         "--result", str(result), "--status", str(status), "--log", str(tmp_path / "runs/logs/k.log")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr      # the workflow goes on with the other runs
    rec = json.loads(status.read_text())
    assert rec["status"] == "failed" and "did not start" in rec["error"]
    # with the CLI's own one-line reason, not only the log to read
    assert rec["error"].startswith("cluster kafka-L1-tuned did not start: kafka distribution missing at "), rec["error"]
    assert rec["experiments"] == ["E000-LAT1"] and rec["scaling"]
    assert not result.exists() and not list(result.parent.parent.parent.rglob("*.json"))
    assert not (tmp_path / "runs/clusters/current.json").exists()
    s = summary.summarise(tmp_path / "runs/status")
    assert (s["runs"], s["ok"], s["failed"]) == (1, 0, 1)
    # the summaries built from the records go with them, so that `snakemake all` plans the retry
    (tmp_path / "runs/benchmarks.json").write_text("{}")
    (tmp_path / "runs/experiments").mkdir()
    (tmp_path / "runs/experiments/E000-LAT1.json").write_text("{}")
    assert wrun.forget_failed(tmp_path / "runs/status") == 1 and not status.exists()
    assert not (tmp_path / "runs/benchmarks.json").exists()
    assert not list((tmp_path / "runs/experiments").iterdir())
    # nothing failed, nothing forgotten: the summaries stay
    (tmp_path / "runs/benchmarks.json").write_text("{}")
    assert wrun.forget_failed(tmp_path / "runs/status") == 0 and (tmp_path / "runs/benchmarks.json").exists()


def test_summary_counts_and_filters_by_experiment(tmp_path):
    d = tmp_path / "status"
    (d / "a").mkdir(parents=True)
    ok = {"run": "a", "status": "ok", "experiments": ["E1"], "result": "r.json", "startedAt": "2026-01-01T00:00:00+00:00",
          "endedAt": "2026-01-01T00:00:30+00:00", "audit": {"lost": 0, "duplicated": 2}}
    bad = {"run": "b", "status": "failed", "experiments": ["E2"], "error": "boom\ntrace", "startedAt": "2026-01-01T00:01:00+00:00",
           "endedAt": "2026-01-01T00:01:10+00:00"}
    (d / "a/1.json").write_text(json.dumps(ok))
    (d / "a/2.json").write_text(json.dumps(bad))
    s = summary.summarise(d)
    assert (s["runs"], s["ok"], s["failed"], s["runSeconds"], s["duplicatedMessages"]) == (2, 1, 1, 40.0, 2)
    assert s["failures"][0]["error"] == ["boom"] and s["results"] == ["r.json"]
    assert summary.summarise(d, "E2")["runs"] == 1


def test_sigterm_of_the_cell_stops_its_runner(tmp_path):
    """A SIGTERM to `python -m workloads.run` (not only Ctrl-C) stops the runner's process group: a multi-host
    runner (python -m testbeds run) outlived a terminated cell before."""
    import signal
    import subprocess
    import sys
    import time
    pidfile = tmp_path / "runner.pid"
    script = f"""
import sys, time
from pathlib import Path
from workloads import guard, run
run.terminate_on_signals()
cmd = [sys.executable, "-c", "import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(300)"]
run.run_runner(cmd, Path({str(tmp_path / 'cell.log')!r}), Path({str(tmp_path / 'runner.log')!r}), 600,
               Path({str(tmp_path)!r}), Path({str(tmp_path)!r}), guard.limits_with_defaults({{}}))
"""
    cell = subprocess.Popen([sys.executable, "-c", script], cwd=wrun.ROOT, start_new_session=True)
    try:
        deadline = time.time() + 60
        while not pidfile.exists() or not pidfile.read_text():
            assert cell.poll() is None and time.time() < deadline
            time.sleep(0.1)
        runner_pid = int(pidfile.read_text())
        cell.send_signal(signal.SIGTERM)
        assert cell.wait(30) != 0
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                os.kill(runner_pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            os.kill(runner_pid, signal.SIGKILL)
            pytest.fail("the runner outlived its terminated cell")
    finally:
        if cell.poll() is None:
            cell.kill()
            cell.wait()


def test_first_error_is_the_first_cli_error_line_after_the_offset(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("testbeds: error: host old: an earlier call's\n")
    since = log.stat().st_size
    with open(log, "a") as fh:
        fh.write("$ python -m testbeds cluster up ...\n[testbeds] cluster up failed (TestbedError)\n"
                 "testbeds: error: host s000-server-1: cluster-start: node : ready: non-zero return code\n"
                 "testbeds: error: host s000-server-2: cluster-down: connection refused\n")
    assert wrun.first_error(log, since) == "host s000-server-1: cluster-start: node : ready: non-zero return code"
    assert wrun.first_error(log) == "host old: an earlier call's"
    assert wrun.first_error(log, since, limit=20) == "host s000-server-..."
    assert wrun.first_error(log, log.stat().st_size) is None and wrun.first_error(tmp_path / "none.log") is None


def test_forget_failed_needs_no_clusters_directory_and_a_run_still_does(tmp_path, capsys):
    # the command the AWS rehearsal prints after failed runs: `python -m workloads.run --forget-failed <status dir>`
    rec = tmp_path / "status/kafka/L1/w/rep-1.json"
    rec.parent.mkdir(parents=True)
    rec.write_text(json.dumps({"run": "k", "status": "failed", "error": "x"}))
    assert wrun.main(["--forget-failed", str(tmp_path / "status")]) == 0
    assert not rec.exists() and "forgot 1 failed run(s)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        wrun.main(["--down-all"])
    assert exc.value.code == 2 and "the following arguments are required: --clusters" in capsys.readouterr().err
