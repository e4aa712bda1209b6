#!/usr/bin/env python3
"""Local cluster start-up, this tree's launcher against a baseline revision's (issue 29: one plan per system must not
make a local start slower by more than 10 %).

For each system, `--pairs` ABBA pairs (baseline, this tree, this tree, baseline, ...) of `python -m systems up` at one
level, each timed from the command's start until it returns with a verified cluster (cluster.json written), then
`down --purge`. The baseline runs from a git worktree of `--baseline` made for the bench (removed at its end), with
this tree's environment and distributions. Prints each start, the medians and the ratio this/baseline per system,
and exits 1 when a ratio is above --max-ratio (default 1.10) or a start failed. Nothing else may run meanwhile.

    env/shell python systems/bench/launcher_startup.py --baseline 394e4ed [--systems kafka pulsar pravega] [--pairs 5]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from runner.bench.common import Criteria  # noqa: E402

LEVEL = {"kafka": "L1", "pulsar": "L1", "pravega": "L1"}


def up_seconds(tree: Path, system: str, work: Path, env: dict[str, str]) -> float:
    d = work / f"{system}-{time.monotonic_ns()}"
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "systems", "up", system, "--level", LEVEL[system], "--dir", str(d)],
                       cwd=tree, env=env, capture_output=True, text=True, timeout=900)
    took = time.monotonic() - t0
    subprocess.run([sys.executable, "-m", "systems", "down", "--dir", str(d), "--purge"], cwd=tree, env=env,
                   capture_output=True, text=True, timeout=300)
    shutil.rmtree(d, ignore_errors=True)
    if r.returncode != 0:
        raise RuntimeError(f"{tree}: {system} up failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="the revision whose launcher is the baseline")
    ap.add_argument("--systems", nargs="+", default=["kafka", "pulsar", "pravega"])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--max-ratio", type=float, default=1.10)
    a = ap.parse_args()
    env = dict(os.environ, PYTHONPATH="")
    env.setdefault("STREAMBENCH_CACHE", str(ROOT / ".cache"))
    crit = Criteria()
    with tempfile.TemporaryDirectory(prefix="launcher-bench-") as tmp:
        tmp = Path(tmp)
        base = tmp / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), a.baseline], check=True)
        try:
            for system in a.systems:
                times: dict[str, list[float]] = {"baseline": [], "this": []}
                try:
                    for i in range(a.pairs):
                        order = ("baseline", "this") if i % 2 == 0 else ("this", "baseline")
                        for which in order:
                            s = up_seconds(base if which == "baseline" else ROOT, system, tmp, env)
                            times[which].append(s)
                            print(f"{system} pair {i + 1} {which}: {s:.1f} s", flush=True)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    crit.fail(f"{system}_startup_ratio", str(e))
                    continue
                mb, mt = statistics.median(times["baseline"]), statistics.median(times["this"])
                print(f"{system} {LEVEL[system]}: median up->verified baseline {mb:.1f} s, this tree {mt:.1f} s "
                      f"({a.pairs} each, load {os.getloadavg()[0]:.1f})", flush=True)
                crit.check(f"{system}_startup_ratio", mt / mb, "<=", a.max_ratio)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
    return crit.exit_code()


if __name__ == "__main__":
    sys.exit(main())
