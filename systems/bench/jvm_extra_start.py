#!/usr/bin/env python3
"""What env/test's STREAMBENCH_JVM_EXTRA_OPTS (C1 only, -XX:TieredStopAtLevel=1) saves on a local cluster start.

For each system, `--rounds` ABBA rounds (as users' profiles run, with the options, with the options, as users' profiles
run) of `python -m systems up` at L1: the wall time until `up` returns with a verified cluster, and the CPU seconds of
the cluster's JVMs still alive then (utime + stime from /proc; the one-off JVMs that ended before are not counted),
then `down --purge`. Prints each start, the medians and the ratios with/without, and exits 1 when a system's CPU
ratio is above --max-cpu-ratio (default 0.80: the options must save at least a fifth of a start's CPU to be worth
env/test's deviation from the users' JVM set-up) or a start failed. Nothing else may run meanwhile.

    env/shell python systems/bench/jvm_extra_start.py [--systems kafka pulsar pravega] [--rounds 2]
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

from systems.plan import JVM_EXTRA_ENV  # noqa: E402

C1 = "-XX:TieredStopAtLevel=1"
TICK = os.sysconf("SC_CLK_TCK")


def jvm_cpu_seconds(marker: str) -> float:
    """CPU seconds of the live processes whose command line names `marker` (the run directory)."""
    total = 0
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            if marker not in (p / "cmdline").read_bytes().decode(errors="replace"):
                continue
            fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            continue
    return total / TICK


def one_start(system: str, work: Path, extra: str | None) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if k != JVM_EXTRA_ENV}
    if extra is not None:
        env[JVM_EXTRA_ENV] = extra
    d = work / f"{system}-{time.monotonic_ns()}"
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "systems", "up", system, "--level", "L1", "--dir", str(d)], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=900)
    took = time.monotonic() - t0
    cpu = jvm_cpu_seconds(str(d))
    subprocess.run([sys.executable, "-m", "systems", "down", "--dir", str(d), "--purge"], cwd=ROOT, env=env,
                   capture_output=True, text=True, timeout=300)
    shutil.rmtree(d, ignore_errors=True)
    if r.returncode != 0:
        raise RuntimeError(f"{system} up ({extra or 'no extra options'}) failed: "
                           f"{(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    return took, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", nargs="+", default=["kafka", "pulsar", "pravega"])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-cpu-ratio", type=float, default=0.80)
    a = ap.parse_args()
    failed = []
    with tempfile.TemporaryDirectory(prefix="jvm-extra-bench-") as tmp:
        for system in a.systems:
            runs: dict[str, list[tuple[float, float]]] = {"plain": [], "c1": []}
            try:
                for _ in range(a.rounds):
                    for kind in ("plain", "c1", "c1", "plain"):
                        wall, cpu = one_start(system, Path(tmp), C1 if kind == "c1" else None)
                        runs[kind].append((wall, cpu))
                        print(f"{system} {kind}: up in {wall:.1f} s, JVM CPU {cpu:.1f} s", flush=True)
            except RuntimeError as e:
                print(f"FAIL {e}")
                failed.append(system)
                continue
            med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
            wr, cr = med["c1"][0] / med["plain"][0], med["c1"][1] / med["plain"][1]
            ok = cr <= a.max_cpu_ratio
            print(f"{'PASS' if ok else 'FAIL'} {system}: medians of {a.rounds * 2}: up {med['plain'][0]:.1f} -> "
                  f"{med['c1'][0]:.1f} s ({wr:.2f}x), JVM CPU {med['plain'][1]:.1f} -> {med['c1'][1]:.1f} s "
                  f"({cr:.2f}x; criterion <= {a.max_cpu_ratio:.2f}x)")
            if not ok:
                failed.append(system)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
