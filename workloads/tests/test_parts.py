"""workloads.parts: one run split over several runner processes on this machine. The orchestration (arguments, exit
statuses, a failed part stopping the others, the merged output written whole or not at all) against stand-in runner and
merge scripts; the real runner and omb-merge on a real cluster in the integration test at the end."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from workloads import parts

# A stand-in runner: records its arguments in its --output, writes a line into its --log, and ends as
# SB_PART_<index>_EXIT says (after SB_PART_<index>_SLEEP seconds). SIGTERM ends it with 143 and a file saying so.
FAKE_RUNNER = r'''#!/usr/bin/env python3
import json, os, signal, sys, time
a = sys.argv[1:]
def opt(name):
    return a[a.index(name) + 1]
i = opt("--process-index")
def term(*_):
    open(opt("--output") + ".terminated", "w").write("TERM")
    sys.exit(143)
signal.signal(signal.SIGTERM, term)
open(opt("--log"), "w").write(f"part {i} INFO running\n")
time.sleep(float(os.environ.get(f"SB_PART_{i}_SLEEP", "0")))
rc = int(os.environ.get(f"SB_PART_{i}_EXIT", "0"))
if rc == 0:
    json.dump({"argv": a}, open(opt("--output"), "w"))
else:
    open(opt("--log"), "a").write(f"part {i} ERROR run failed: stand-in failure\n")
sys.exit(rc)
'''

# A stand-in omb-merge: --output OUT PART... -> {"parts": [each part's doc]}; SB_MERGE_EXIT != 0 fails it.
FAKE_MERGE = r'''#!/usr/bin/env python3
import json, os, sys
a = sys.argv[1:]
if os.environ.get("SB_MERGE_EXIT", "0") != "0":
    print("omb-merge: error: stand-in merge failure", file=sys.stderr)
    sys.exit(1)
out = a[a.index("--output") + 1]
docs = [json.load(open(p)) for p in a[a.index("--output") + 2:]]
json.dump({"parts": docs}, open(out, "w"))
'''


@pytest.fixture
def fake(tmp_path, monkeypatch):
    runner = tmp_path / "omb-run"
    runner.write_text(FAKE_RUNNER)
    runner.chmod(0o755)
    merge = tmp_path / "omb-merge"
    merge.write_text(FAKE_MERGE)
    merge.chmod(0o755)
    monkeypatch.setattr(parts, "MERGE", merge)
    out = tmp_path / "work" / "result.json"
    log = tmp_path / "work" / "runner.log"
    out.parent.mkdir()
    cmd = [str(runner), "--workload", "w.yaml", "--output", str(out), "--log", str(log), "--deadline-seconds", "60"]
    return cmd, out, log


def test_each_part_gets_its_index_the_count_one_barrier_and_its_own_files_and_the_merge_is_kept_whole(fake, tmp_path):
    cmd, out, log = fake
    assert parts.run(cmd, 3) == 0
    doc = json.loads(out.read_text())
    argvs = [p["argv"] for p in doc["parts"]]
    assert len(argvs) == 3
    barriers, starts = set(), set()
    for i, a in enumerate(argvs):
        assert a[a.index("--process-index") + 1] == str(i) and a[a.index("--process-count") + 1] == "3"
        assert a[a.index("--deadline-seconds") + 1] == "60" and a[a.index("--workload") + 1] == "w.yaml"
        assert a.count("--output") == 1 and a[a.index("--output") + 1] != str(out)
        barriers.add(a[a.index("--barrier") + 1])
        starts.add(a[a.index("--start-at") + 1])
    assert len(barriers) == 1, "one barrier directory for every part"
    assert len(starts) == 1 and int(starts.pop()) > 0, "one start time names the run in every part"
    # the parts beside the result (as a run over client hosts keeps them), the logs under one header each
    assert sorted(p.name for p in out.with_suffix(".parts").iterdir()) == [f"part-{i}-local.json" for i in range(3)]
    text = log.read_text()
    assert [ln for ln in text.splitlines() if ln.startswith("===")] == [f"=== runner process {i} of 3 (exit 0)"
                                                                        for i in range(3)]
    assert "part 2 INFO running" in text
    # nothing else left: no work directory, no temporary merge file
    assert sorted(p.name for p in out.parent.iterdir()) == ["result.json", "result.parts", "runner.log"]


def test_a_part_that_fails_stops_the_others_at_once_and_nothing_is_written(fake, monkeypatch):
    cmd, out, log = fake
    monkeypatch.setenv("SB_PART_0_SLEEP", "60")  # would wait on a barrier the failed part never reaches
    monkeypatch.setenv("SB_PART_1_EXIT", "1")
    said = []
    t0 = time.monotonic()
    assert parts.run(cmd, 2, say=said.append) == 1, "the failed part's status, not the stopped one's"
    assert time.monotonic() - t0 < 20
    assert not out.exists() and not out.with_suffix(".parts").exists()
    assert said == ["workloads.parts: runner process 1 of 2 exited 1 (the others were stopped)"]
    text = log.read_text()
    assert "part 1 ERROR run failed: stand-in failure" in text  # the caller's first_error finds the cause
    assert "=== runner process 1 of 2 (exit 1)" in text
    assert sorted(p.name for p in out.parent.iterdir()) == ["runner.log"]


def test_a_part_past_its_deadline_makes_the_run_exit_3(fake, monkeypatch):
    cmd, out, _ = fake
    monkeypatch.setenv("SB_PART_1_EXIT", "3")
    assert parts.run(cmd, 2, say=lambda m: None) == 3
    assert not out.exists()


def test_a_failed_merge_writes_no_result(fake, monkeypatch):
    cmd, out, log = fake
    monkeypatch.setenv("SB_MERGE_EXIT", "1")
    said = []
    assert parts.run(cmd, 2, say=said.append) == 2
    assert said == ["workloads.parts: omb-merge failed: omb-merge: error: stand-in merge failure"]
    assert not out.exists() and not out.with_suffix(".parts").exists()


@pytest.mark.parametrize("processes, change, msg", [
    (1, None, "--processes: 1: a run split over processes needs at least 2"),
    (2, ["--process-index", "0"], "runner command: --process-index: set by workloads.parts, not by its caller"),
    (2, ["--barrier", "/tmp/x"], "runner command: --barrier: set by workloads.parts, not by its caller"),
    (2, ["--output", "/tmp/two.json"], "runner command: --output: given 2 times, needs exactly one"),
])
def test_a_command_it_cannot_split_is_one_line_and_makes_nothing(fake, tmp_path, processes, change, msg):
    cmd, out, _ = fake
    cmd = cmd + (change or [])
    r = subprocess.run([sys.executable, "-m", "workloads.parts", "--processes", str(processes), "--", *cmd],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"workloads.parts: error: {msg}"]
    assert sorted(p.name for p in out.parent.iterdir()) == []


def test_the_parts_statuses_as_one():
    assert parts.status_of([0, 0]) == 0
    assert parts.status_of([0, 1, 3]) == 3
    assert parts.status_of([0, 2, 1]) == 2
    assert parts.status_of([-15, 0]) == 1


# ------------------------------------------------------------------------------------------------- a real run

@pytest.mark.integration
@pytest.mark.cluster("pulsar", "L1")  # judges no rate: runs with the integration tests beside env/test's section 6
def test_a_real_run_split_over_two_runners_merges_exactly(shared_cluster, tmp_path):
    """The real omb-run twice through workloads.parts, on a shared cluster: the merged result is a whole OMB result
    whose counts are the parts' sums, every acknowledged message read back once, the parts kept beside it."""
    from runner.tests.test_runner_integration import DRIVERS, OMB_RUN, STEADY, _require_built, check_result

    _require_built()
    out = tmp_path / "result.json"
    log = tmp_path / "runner.log"
    r = subprocess.run([sys.executable, "-m", "workloads.parts", "--processes", "2", "--", str(OMB_RUN),
                        "--workload", str(STEADY), "--driver", str(DRIVERS[shared_cluster.system]),
                        "--cluster", str(shared_cluster.cluster_json), "--output", str(out), "--log", str(log)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stderr[-2000:], log.read_text()[-4000:] if log.exists() else "")
    merged = json.loads(out.read_text())
    x = check_result(merged, shared_cluster.doc)
    kept = sorted(out.with_suffix(".parts").glob("part-*.json"))
    assert len(kept) == 2
    docs = [json.loads(p.read_text()) for p in kept]
    assert x["audit"]["acked"] == sum(d["x-streambench"]["audit"]["acked"] for d in docs) > 0
    assert x["audit"]["lost"] == 0 and x["audit"]["drained"] is True
    assert x["process"]["count"] == 2 and len(x["process"]["merged"]) == 2
    # what runner/tests/test_runner_processes.py's merge test checks on Kafka, here on Pulsar: each part sent half the
    # load, started at the moment the barrier agreed on, and the merge's periods and latency counts are the parts' sums
    assert [d["x-streambench"]["producerRate"]["processShare"] for d in docs] == [0.5, 0.5]
    assert len({d["x-streambench"]["process"]["startAt"] for d in docs}) == 1
    assert len(merged["publishRate"]) == 2
    for i in range(2):
        assert merged["publishRate"][i] == pytest.approx(sum(d["publishRate"][i] for d in docs), rel=0.01)
    assert x["publishLatencyMs"]["count"] == sum(d["x-streambench"]["publishLatencyMs"]["count"] for d in docs)
    assert [ln for ln in log.read_text().splitlines() if ln.startswith("===")] == [
        "=== runner process 0 of 2 (exit 0)", "=== runner process 1 of 2 (exit 0)"]
