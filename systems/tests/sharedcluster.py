"""One real cluster per (system, level) for every integration test that asks for it, across test files.

A test says what it runs against with `@pytest.mark.cluster("kafka", "L1")` and takes the `shared_cluster` fixture.
Collection puts the tests of one cluster next to each other (where the first of them stood; a test marked
`cluster(..., last=True)` -- one that kills a node -- after the others of its cluster), the first of them starts the
cluster with `python -m systems up`, and it is stopped with `python -m systems down` right after the last of them,
before any other test runs: so at most one shared cluster runs at a time, and a rate or latency check never shares
the two cores with an idle cluster of another test. The stop checks what every cluster test checked on its own
before: `up` that failed left no process, and after `down` no process group member and no listening port remains;
a failure there is an error of the last test that used the cluster.

Before, `systems/tests/test_integration.py` and the runner's tests each started their own Kafka L1, Pulsar L1 and
Pravega cluster; the start and stop of a Pulsar or Pravega cluster take tens of seconds on this 2-core machine.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def _key(item) -> tuple[str, str] | None:
    m = item.get_closest_marker("cluster")
    return (m.args[0], m.args[1]) if m else None


def _last(item) -> bool:
    m = item.get_closest_marker("cluster")
    return bool(m and m.kwargs.get("last"))


def _cli(*args: str, timeout: float) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.setdefault("STREAMBENCH_ROOT", str(REPO))
    env["PYTHONPATH"] = f"{REPO}:{REPO / 'hw-probes'}" + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.run([sys.executable, "-m", "systems", *args], cwd=REPO, env=env, timeout=timeout,
                          capture_output=True, text=True)


@dataclass
class SharedCluster:
    """A running cluster: its run directory, cluster.json and what was read from it."""
    system: str
    level: str
    rundir: Path
    doc: dict[str, Any] = field(default_factory=dict)

    @property
    def cluster_json(self) -> Path:
        return self.rundir / "cluster.json"

    def pids(self) -> list[int]:
        return [n["pid"] for n in self.doc["nodes"]]


def start(system: str, level: str, rundir: Path) -> SharedCluster:
    from systems import dist, proc

    try:
        dist.require_dist(system)
    except Exception as e:  # noqa: BLE001 - env/test prepares the distributions first; conftest.py fails a CI skip
        pytest.skip(str(e))
    rundir.mkdir(parents=True, exist_ok=True)
    r = _cli("up", system, "--level", level, "--dir", str(rundir), timeout=900)
    if r.returncode != 0:
        alive = [x.node for x in proc.read_pid_records(rundir) if x.alive()]
        assert not alive, f"`up` failed and left {alive} running"
        pytest.fail(f"python -m systems up {system} --level {level} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return SharedCluster(system, level, rundir, json.loads((rundir / "cluster.json").read_text()))


def stop(cl: SharedCluster) -> None:
    """`down`, then nothing of the cluster may remain: no process group member, no listening port."""
    from systems import proc

    recs = proc.read_pid_records(cl.rundir)
    r = _cli("down", "--dir", str(cl.rundir), timeout=300)
    assert r.returncode == 0, f"systems down failed: {r.stdout}\n{r.stderr}"
    for rec in recs:
        assert not proc.group_members(rec.pgid), f"{rec.node}: a process of its group outlived `down`"
    for n in cl.doc.get("nodes", []):
        assert proc.proc_start_time(n["pid"]) is None or not proc.group_members(n["pgid"]), n["name"]
        for port in n["ports"].values():
            assert not proc.port_listening(port), f"{n['name']} port {port} still listening after `down`"


class _State:
    current: SharedCluster | None = None
    base: Path | None = None


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cluster(system, level, last=False): runs against the shared cluster of that system and level "
                   "(systems/tests/sharedcluster.py); last=True: after the cluster's other tests (it harms a node)")


def order(items: list) -> list:
    """The tests of one cluster next to each other, where the first of them stood; within a cluster the `last`
    ones after the others; every other test keeps its place relative to the groups."""
    first: dict[tuple[str, str], int] = {}
    for i, it in enumerate(items):
        k = _key(it)
        if k is not None:
            first.setdefault(k, i)
    ranked = []
    for i, it in enumerate(items):
        k = _key(it)
        ranked.append(((first[k], 1 if _last(it) else 0, i) if k is not None else (i, 0, i), it))
    return [it for _, it in sorted(ranked, key=lambda r: r[0])]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    items[:] = order(items)


@pytest.fixture
def shared_cluster(request, tmp_path_factory) -> SharedCluster:
    key = _key(request.node)
    assert key is not None, f"{request.node.nodeid}: shared_cluster needs @pytest.mark.cluster(system, level)"
    cur = _State.current
    if cur is not None and (cur.system, cur.level) != key:
        # a test run out of order (e.g. -k, --lf): the other cluster goes first
        _State.current = None
        stop(cur)
        cur = None
    if cur is None:
        rundir = tmp_path_factory.mktemp(f"shared-{key[0]}-{key[1]}")
        cur = _State.current = start(key[0], key[1], rundir)
    # a test's `systems verify` or a node's restart rewrites cluster.json: each test gets it as it is now
    cur.doc = json.loads(cur.cluster_json.read_text())
    return cur


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last test of a cluster (the next one asks for another or none), stop it before anything else."""
    try:
        return (yield)
    finally:
        cur = _State.current
        if cur is not None and _key(item) == (cur.system, cur.level) and (
                nextitem is None or _key(nextitem) != (cur.system, cur.level)):
            _State.current = None
            stop(cur)


def pytest_sessionfinish(session):
    """Interrupted (Ctrl-C, -x): a cluster still up is stopped all the same."""
    cur, _State.current = _State.current, None
    if cur is not None:
        _cli("down", "--dir", str(cur.rundir), timeout=300)
