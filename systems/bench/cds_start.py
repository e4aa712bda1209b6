#!/usr/bin/env python3
"""What env/test's class-data sharing archives (systems/cds.py) save: a Kafka cluster's start and a short runner run.

The archives are made first, as env/test makes them (`python -m systems.cds train` into a temporary directory). Then
`--rounds` ABBA rounds (without archives, with, with, without), each:
  - `python -m systems up kafka --level L1`: the CPU seconds of `up` and of the JVMs it waited for (its format tools;
    getrusage of the children) plus those of the three nodes' JVMs alive when it returned (/proc), and the wall time;
  - on that cluster, the runner for 3 s of traffic at 200 msg/s (systems/cds.py's training workload): its CPU seconds
    (getrusage of the children) and wall time;
  then `down --purge`.
Both sides run with env/test's STREAMBENCH_JVM_EXTRA_OPTS (its default unless the variable is set). Prints every start,
the medians and the ratios with / without, and exits 1 when either CPU ratio is above --max-cpu-ratio (default 0.85:
the archives must save at least 15 % of the CPU of what env/test starts most) or anything failed. Nothing else may run
meanwhile.

    env/shell python systems/bench/cds_start.py [--rounds 2]
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from systems import cds  # noqa: E402
from systems.plan import JVM_EXTRA_ENV  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jvm_extra_start import jvm_cpu_seconds  # noqa: E402  (the live JVMs' CPU, read from /proc)

ENV_TEST_EXTRA = "-XX:TieredStopAtLevel=1 -XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote"


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd: list[str], env: dict, what: str, timeout: float = 900) -> tuple[float, float]:
    c0, t0 = children_cpu(), time.monotonic()
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    took, cpu = time.monotonic() - t0, children_cpu() - c0
    if r.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {r.returncode}): {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    return took, cpu


def one_round(work: Path, env: dict) -> dict[str, tuple[float, float]]:
    d = work / f"kafka-{time.monotonic_ns()}"
    py = sys.executable
    try:
        wall, cpu = run([py, "-m", "systems", "up", "kafka", "--level", "L1", "--dir", str(d)], env, "kafka up")
        start = (wall, cpu + jvm_cpu_seconds(str(d)))
        runner = run(cds.runner_command(work, d / "cluster.json"), env, "the runner", timeout=300)
    finally:
        subprocess.run([py, "-m", "systems", "down", "--dir", str(d), "--purge"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
        shutil.rmtree(d, ignore_errors=True)
    return {"kafka start": start, "runner": runner}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-cpu-ratio", type=float, default=0.85)
    a = ap.parse_args()
    base = {k: v for k, v in os.environ.items() if k not in (cds.CDS_ENV, cds.TRAIN_ENV)}
    base.setdefault(JVM_EXTRA_ENV, ENV_TEST_EXTRA)
    with tempfile.TemporaryDirectory(prefix="cds-bench-") as tmp:
        archives = Path(tmp) / "cds"
        with_cds = {**base, cds.CDS_ENV: str(archives)}
        try:
            run([sys.executable, "-m", "systems.cds", "train"], with_cds, "training")
        except RuntimeError as e:
            print(f"FAIL {e}")
            return 1
        made = sorted(p.name for p in archives.glob("*.jsa"))
        print(f"archives: {', '.join(made) or 'none'}", flush=True)
        missing = [m for m in cds.EXPECTED if not any(n.startswith(f"{m}-") for n in made)]
        if missing:  # e.g. a JDK without a base archive, where the training makes none and says so
            print(f"FAIL the training made no archive for {', '.join(missing)}")
            return 1
        got: dict[str, dict[str, list[tuple[float, float]]]] = {"without": {}, "with": {}}
        try:
            for _ in range(a.rounds):
                for kind in ("without", "with", "with", "without"):
                    res = one_round(Path(tmp), with_cds if kind == "with" else base)
                    for what, (wall, cpu) in res.items():
                        got[kind].setdefault(what, []).append((wall, cpu))
                        print(f"{what} {kind} archives: {wall:.1f} s, CPU {cpu:.1f} s", flush=True)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"FAIL {e}")
            return 1
    failed = False
    for what in got["without"]:
        med = {k: (statistics.median(w for w, _ in got[k][what]), statistics.median(c for _, c in got[k][what]))
               for k in got}
        wr, cr = med["with"][0] / med["without"][0], med["with"][1] / med["without"][1]
        ok = cr <= a.max_cpu_ratio
        failed |= not ok
        print(f"{'PASS' if ok else 'FAIL'} {what}: medians of {a.rounds * 2}: wall {med['without'][0]:.1f} -> "
              f"{med['with'][0]:.1f} s ({wr:.2f}x), CPU {med['without'][1]:.1f} -> {med['with'][1]:.1f} s "
              f"({cr:.2f}x; criterion <= {a.max_cpu_ratio:.2f}x)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
