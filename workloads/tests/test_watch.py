"""The cluster watcher: a cluster whose workflow died is stopped (a real 3-node Kafka cluster on loopback)."""
import json
import os
import subprocess
import sys
import time

import pytest

from workloads import watch

ROOT = watch.ROOT


def sleeper() -> subprocess.Popen:
    return subprocess.Popen(["sleep", "600"])


def test_owner_is_identified_by_pid_and_start_time():
    me = watch.start_ticks(os.getpid())
    assert isinstance(me, int) and me > 0
    assert watch.alive(os.getpid(), me)
    assert not watch.alive(os.getpid(), me + 1), "same pid, other start time: a recycled pid"
    p = sleeper()
    t = watch.start_ticks(p.pid)
    p.kill()
    p.wait()
    assert watch.start_ticks(p.pid) is None
    assert not watch.alive(p.pid, t)


def test_watch_stops_when_owner_dies_and_releases_when_cluster_is_gone(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(watch, "stop", lambda clusters, rundir: calls.append(rundir))
    monkeypatch.setattr(watch, "cluster_stopped", lambda rundir: False)
    p = sleeper()
    t = watch.start_ticks(p.pid)
    p.kill()
    p.wait()
    assert watch.watch(p.pid, t, tmp_path, tmp_path / "c", interval=0.01) == "stopped"
    assert calls == [tmp_path / "c"]
    monkeypatch.setattr(watch, "cluster_stopped", lambda rundir: True)
    q = sleeper()
    try:
        assert watch.watch(q.pid, watch.start_ticks(q.pid), tmp_path, tmp_path / "c", interval=0.01) == "released"
    finally:
        q.kill()
        q.wait()
    assert calls == [tmp_path / "c"], "a released cluster is not stopped again"


def systems(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "systems", *args], cwd=ROOT, capture_output=True, text=True, **kw)


@pytest.mark.integration
def test_a_real_cluster_is_stopped_once_its_workflow_is_killed(tmp_path):
    clusters = tmp_path / "clusters"
    rundir = clusters / "kafka-L1-tuned-test"
    res = systems("up", "kafka", "--level", "L1", "--tuning", "tuned", "--dir", str(rundir), timeout=600)
    if res.returncode != 0:
        systems("down", "--dir", str(rundir), timeout=300)
        pytest.fail(f"kafka did not start: {res.stderr[-2000:]}")
    current = clusters / "current.json"
    current.write_text(json.dumps({"key": "kafka-L1-tuned", "dir": str(rundir)}))
    owner = sleeper()
    w = None
    try:
        w = watch.spawn(owner.pid, clusters, rundir)
        time.sleep(3)
        assert w.poll() is None, "the watcher waits while its workflow lives"
        assert json.loads(systems("status", "--dir", str(rundir)).stdout)["state"] == "running"
        owner.kill()  # the workflow dies without stopping its cluster
        owner.wait()
        assert w.wait(timeout=180) == 0
        st = json.loads(systems("status", "--dir", str(rundir)).stdout)
        assert st["state"] == "stopped" and st["listeningPorts"] == [], st
        assert not current.exists(), "current.json no longer names a stopped cluster"
        assert "stopped" in (rundir / "watch.log").read_text()
    finally:
        if owner.poll() is None:
            owner.kill()
        if w is not None and w.poll() is None:
            w.kill()
        systems("down", "--dir", str(rundir), timeout=300)


def test_the_workflow_marks_itself_as_owner(monkeypatch):
    monkeypatch.delenv(watch.OWNER_ENV, raising=False)
    watch.mark_owner()
    assert os.environ[watch.OWNER_ENV] == str(os.getpid())


def test_a_cluster_whose_nodes_are_all_down_is_not_released_until_down_ran(tmp_path):
    """A power-loss or crash-all cycle kills every node and restarts them: no node alive is not `systems down`.
    (Before, the watcher let go during such a cycle, and a workflow of one fault run left the restarted cluster and
    its faultfs mounts running when it ended.)"""
    rundir = tmp_path / "kafka-L1-stock-faults-faultfs-x"
    rundir.mkdir()
    assert watch.cluster_stopped(rundir), "never started: nothing to stop"
    cj = rundir / "cluster.json"
    cj.write_text(json.dumps({"system": "kafka", "level": "L1"}))
    assert not watch.cluster_stopped(rundir), "every node down between a fault and its restart"
    cj.write_text("{")
    assert not watch.cluster_stopped(rundir), "cluster.json half-written: not yet"
    cj.write_text(json.dumps({"system": "kafka", "level": "L1", "stoppedAt": "2026-12-01T11:16:16.000Z"}))
    assert watch.cluster_stopped(rundir)
