"""Stop a benchmark cluster when the workflow that started it is gone.

Clusters outlive single Snakemake jobs on purpose (the runs that share a cluster reuse it), and the workflow
stops the last one itself (the `benchmarks` rule and its `onerror` handler). A workflow that dies without
running its handlers (SIGKILL, an out-of-memory kill, a Snakemake that hangs on SIGTERM and is then killed)
would leave three brokers running. `workloads.run` therefore starts this watcher, in its own session, next to
every cluster it brings up: it polls the owning workflow process and, once that process is gone, runs
`python -m systems down` on the cluster and clears `current.json` if it still names it. It exits by itself
when the cluster is stopped by anyone else.

  python -m workloads.watch --owner PID --owner-start TICKS --clusters DIR --dir RUNDIR [--interval S]

The owner is identified by pid *and* start time (field 22 of /proc/PID/stat), so a recycled pid is not
mistaken for the workflow.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from systems import cluster, proc

ROOT = Path(__file__).resolve().parents[1]
OWNER_ENV = "STREAMBENCH_OWNER_PID"


def mark_owner() -> None:
    """Called by the workflow's main process: its jobs (and so workloads/run.py) inherit its pid as the owner of
    the clusters they start. The workflow sets this variable for its children; it never reads one from the user."""
    os.environ[OWNER_ENV] = str(os.getpid())


def start_ticks(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot, None if it does not exist (or is a zombie)."""
    return proc.proc_start_time(pid)


def alive(pid: int, ticks: int) -> bool:
    return start_ticks(pid) == ticks


def cluster_stopped(rundir: Path) -> bool:
    """True when `systems down` ran on the cluster in rundir (its cluster.json has `stoppedAt`), or when it never
    started (no cluster.json) and no node is alive. Not merely when no node is alive: a fault run's power-loss or
    crash-all cycle kills every node and restarts them seconds later, and a watcher that let go then left the
    restarted cluster and its faultfs mounts running after a workflow of one fault run had ended."""
    cj = Path(rundir) / cluster.CLUSTER_JSON
    try:
        if cj.is_file():
            return "stoppedAt" in json.loads(cj.read_text())
    except (OSError, ValueError):
        return False  # being rewritten: ask again at the next check
    return cluster.status(rundir)["state"] == "stopped"


def stop(clusters: Path, rundir: Path) -> None:
    subprocess.run([sys.executable, "-m", "systems", "down", "--dir", str(rundir)], cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    current = clusters / "current.json"
    try:
        if json.loads(current.read_text()).get("dir") == str(rundir):
            current.unlink()
    except (OSError, ValueError):
        pass


def watch(owner: int, ticks: int, clusters: Path, rundir: Path, interval: float = 2.0) -> str:
    """Blocks until the owner is gone (then stops the cluster: returns "stopped") or the cluster was stopped
    by someone else (returns "released")."""
    checks = 0
    while True:
        if not alive(owner, ticks):
            stop(clusters, rundir)
            return "stopped"
        checks += 1
        if checks % 5 == 0 and cluster_stopped(rundir):
            return "released"
        time.sleep(interval)


def spawn(owner: int, clusters: Path, rundir: Path) -> subprocess.Popen | None:
    """Start a detached watcher for rundir on behalf of owner; None if the owner is already gone."""
    ticks = start_ticks(owner)
    if ticks is None:
        return None
    with open(Path(rundir) / "watch.log", "ab") as log:  # the child keeps its own copy of the descriptor
        return subprocess.Popen([sys.executable, "-m", "workloads.watch", "--owner", str(owner), "--owner-start",
                                 str(ticks), "--clusters", str(clusters), "--dir", str(rundir)], cwd=ROOT,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--owner", type=int, required=True)
    ap.add_argument("--owner-start", type=int, required=True)
    ap.add_argument("--clusters", type=Path, required=True)
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--interval", type=float, default=2.0)
    a = ap.parse_args(argv)
    outcome = watch(a.owner, a.owner_start, a.clusters, a.dir, a.interval)
    print(f"[watch] {time.strftime('%Y-%m-%dT%H:%M:%S')} owner {a.owner}: {outcome} {a.dir}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
