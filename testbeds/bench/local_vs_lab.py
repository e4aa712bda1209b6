"""The same workload on `local` (loopback, one process tree) and on `lab` (namespace hosts over SSH), side by
side: throughput and its ratio, publish p99, and the time to start and to restart (down + up) a cluster.

  env/shell python testbeds/bench/local_vs_lab.py \
      [--system kafka] [--level L1] [--workload 1-topic-1-partition-1kb-1p-1c-max] [--scale ci] [--id b12]

Runs, for each testbed: cluster up (timed), down + up (timed: the restart), the workload scaled as the
profile scales it (workloads/scale.py), then down. Prints one table; the machine's load (uptime) before and
after. Takes a few minutes on an idle machine.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testbeds import lab  # noqa: E402
from workloads import plan, scale  # noqa: E402


def timed(cmd: list[str], env=None) -> float:
    t0 = time.monotonic()
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def metrics(result: Path) -> dict:
    r = json.loads(result.read_text())
    # the runner's achieved rate of the measured phase (acknowledged sends whose intended time lay in it):
    # OMB's per-window publishRate is empty when the measured phase is shorter than one window
    achieved = ((r.get("x-streambench") or {}).get("producerRate") or {}).get("achieved")
    return {"throughput": achieved,
            "p99": r.get("aggregatedPublishLatency99pct"),
            "audit": {k: r.get("x-streambench", {}).get("audit", {}).get(k) for k in ("sent", "lost", "duplicated")}}


def one(testbed: str, a, wl_file: Path, drv: Path, work: Path, inv: str | None) -> dict:
    py = sys.executable
    rundir = work / f"{testbed}-cluster"
    if inv:
        cl = [py, "-m", "testbeds", "cluster"]
        tail = ["--inventory", inv]
    else:
        cl, tail = [py, "-m", "systems"], []
    up = [*cl, "up", a.system, "--level", a.level, "--tuning", a.tuning, "--dir", str(rundir), *tail]
    down = [*cl, "down", "--dir", str(rundir), *tail]
    out = {"testbed": testbed}
    try:
        out["startSeconds"] = timed(up)
        t0 = time.monotonic()
        subprocess.run(down, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(up, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        out["restartSeconds"] = time.monotonic() - t0
        res = work / f"{testbed}-result.json"
        if inv:
            run = [py, "-m", "testbeds", "run", "--inventory", inv]
        else:
            run = [str(ROOT / "runner" / "bin" / "omb-run")]
        t0 = time.monotonic()
        subprocess.run([*run, "--workload", str(wl_file), "--driver", str(drv), "--cluster",
                        str(rundir / "cluster.json"), "--output", str(res), "--log", str(work / f"{testbed}-runner.log")],
                       cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        out["runSeconds"] = time.monotonic() - t0
        out.update(metrics(res))
    finally:
        subprocess.run(down, cwd=ROOT, stdout=subprocess.DEVNULL)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", default="kafka", choices=["kafka", "pulsar"])
    ap.add_argument("--level", default="L1")
    ap.add_argument("--tuning", default="tuned")
    ap.add_argument("--workload", default="1-topic-1-partition-1kb-1p-1c-max")
    ap.add_argument("--scale", default="ci")
    ap.add_argument("--id", default="b12", help="lab id")
    ap.add_argument("--subnet", default="10.77.0.0/24")
    a = ap.parse_args(argv)
    load0 = os.getloadavg()
    doc = plan.load(plan.EXPERIMENTS)
    wl, _ = scale.scale_workload(yaml.safe_load((plan.OMB_DIR / f"{a.workload}.yaml").read_text()),
                                 doc["scales"][a.scale], None)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-local-lab-", dir=ROOT / "data" / "runs") as tmp:
        work = Path(tmp)
        wl_file = work / "workload.yaml"
        wl_file.write_text(yaml.safe_dump(wl, sort_keys=False))
        drv = ROOT / "workloads" / "drivers" / f"{a.system}-{a.level}-{a.tuning}.yaml"
        rows.append(one("local", a, wl_file, drv, work, None))
        try:
            inv = str(lab.up(a.id, 3, 1, a.subnet, log=lambda m: None))
            t0 = time.monotonic()
            subprocess.run([sys.executable, "-m", "testbeds", "prepare", "--inventory", inv,
                            "--systems", a.system], cwd=ROOT, check=True, stderr=subprocess.DEVNULL)
            prep = time.monotonic() - t0
            rows.append({**one("lab", a, wl_file, drv, work, inv), "prepareSeconds": prep})
        finally:
            lab.down(a.id, log=lambda m: None)
            shutil.rmtree(work, ignore_errors=True)
    load1 = os.getloadavg()

    def f(v, nd=1):
        return "-" if v is None else f"{v:,.{nd}f}"
    print(f"{a.system} {a.level}/{a.tuning}, workload {a.workload} at scale {a.scale}")
    print(f"{'testbed':8} {'msg/s':>10} {'p99 ms':>8} {'start s':>8} {'restart s':>10} {'run s':>7}  audit")
    for r in rows:
        print(f"{r['testbed']:8} {f(r.get('throughput')):>10} {f(r.get('p99'), 2):>8} {f(r.get('startSeconds')):>8} "
              f"{f(r.get('restartSeconds')):>10} {f(r.get('runSeconds')):>7}  {r.get('audit')}")
    lo, la = rows[0].get("throughput"), rows[-1].get("throughput")
    if lo and la and len(rows) == 2:
        print(f"throughput lab/local = {la / lo:.2f}; p99 lab/local = "
              f"{(rows[1]['p99'] / rows[0]['p99']) if rows[0].get('p99') and rows[1].get('p99') else float('nan'):.2f}")
    if len(rows) == 2:
        print(f"lab prepare (ship + checks, once per lab): {rows[1]['prepareSeconds']:.1f} s")
    print(f"load average before {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, after {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
