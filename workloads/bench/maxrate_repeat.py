"""Whether a max-rate estimate repeats: the runner's two rate-discovery modes on the same local cells, alternately.

    env/shell python workloads/bench/maxrate_repeat.py [--reps 5] [--cells SYSTEM/LEVELDIR/WORKLOAD ...]
        [--modes ladder saturate] [--max-spread 0.20] [--share 0.8] [--warm-runs 0]

A cell is a local-scale max-rate run (`producerRate: 0`), named as under data/raw/local/, e.g.
`kafka/L1/1-topic-1-partition-1kb-1p-1c-max` or `pulsar/L2+stock/1-topic-1-partition-1kb-4p-1c-max`. Each cell's
cluster is started once, as the workflow starts it (`python -m workloads.run`, the local profile's limits, the
cell's own driver file), and the cell runs `--reps` times with each mode, the modes alternating and the first of
each pair swapped every repetition (ABBA...): the local scale's `discovery` settings with `mode` set to `ladder` (the
pass / fail step search) or `saturate` (one saturation phase, then the measured phase at a share of its capacity;
runner Saturation.java). Per cell and mode: the settled rates (`producerRate.settled`, the rate the measured phase
held), their median, their spread (max - min) / median, and the median wall time of a run.

Criterion (issue 33): with the last mode (the candidate), the spread is at most --max-spread in at least --share of
the cells, and its median spread over the cells is below the first mode's (the baseline). Prints the table, the
criterion and PASS or FAIL; the exit status is the verdict (1 on FAIL, 2 when the bench itself could not run, e.g. a
run failed). Its data live in a directory of its own under data/ (the data file system the disk guard watches),
removed at the end; the cluster is stopped at the end, also on an error or Ctrl-C. Nothing else may run beside it.
"""
from __future__ import annotations

import argparse
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from env import configcheck  # noqa: E402
from workloads import drivers, guard, plan  # noqa: E402

DEFAULT_CELLS = [
    "kafka/L1/1-topic-1-partition-1kb-1p-1c-max",
    "pulsar/L2+stock/1-topic-1-partition-1kb-4p-1c-max",
]


def limits_json() -> str:
    """The local profile's --limits, as workloads/rules.smk passes them (config defaults filled in)."""
    return guard.limits_arg(configcheck.check(("env/config.yaml", configcheck.load_yaml(configcheck.BASE_CONFIG))))


def find_run(doc: dict, cell: str) -> plan.Run:
    """The local scale's run of this cell (its experiments and default tuning), or exit 2 naming the cell."""
    for r in plan.expand(doc, drivers.catalog(), "local"):
        if r.fault is None and r.rep == 1 and r.key.rsplit("/rep-", 1)[0] == cell:
            if not plan.is_max_rate(r):
                sys.exit(f"maxrate_repeat: {cell}: not a max-rate cell (it runs at {r.rate or plan.workload_rate(r.base_workload):g} msg/s)")
            return r
    sys.exit(f"maxrate_repeat: {cell}: not a run of the local scale (workloads/experiments.yaml)")


def driver_file(r: plan.Run) -> Path:
    return ROOT / "workloads" / "drivers" / (f"{r.system}-{r.level}-{r.tuning}" + (f"-{r.variant}" if r.variant else "")
                                             + ".yaml")


def one_run(r: plan.Run, rep: int, exp_file: Path, work: Path, limits: str) -> tuple[float, float, dict]:
    """Runs the cell once as repetition `rep`; returns (settled msg/s, wall seconds, rateDiscovery)."""
    result = work / "raw" / f"{r.system}-{r.level}-{r.tuning}-{rep}.json"
    status = work / "status" / f"{r.system}-{r.level}-{r.tuning}-{rep}.json"
    log = work / "logs" / f"{r.system}-{r.level}-{r.tuning}-{rep}.log"
    cmd = [sys.executable, "-m", "workloads.run", "--clusters", str(work / "clusters"), "--testbed", "local",
           "--scale", "local", "--experiments", str(exp_file), "--driver", str(driver_file(r)),
           "--system", r.system, "--level", r.level, "--tuning", r.tuning, "--workload", r.base_workload,
           "--rep", str(rep), "--default-tuning", r.default_tuning, "--in-experiments", ",".join(r.experiments),
           "--result", str(result), "--status", str(status), "--log", str(log), "--limits", limits]
    if r.variant:
        cmd += ["--variant", r.variant]
    t0 = time.monotonic()
    subprocess.run(cmd, cwd=ROOT, check=False, stdout=subprocess.DEVNULL)
    took = time.monotonic() - t0
    st = json.loads(status.read_text()) if status.exists() else {"status": "missing"}
    if st.get("status") != "ok":
        raise RuntimeError(f"{r.key} rep {rep}: {st.get('status')}: {st.get('error', '')[:300]} (log {log})")
    x = json.loads(result.read_text())["x-streambench"]
    return float(x["producerRate"]["settled"]), took, x.get("rateDiscovery") or {}


def spread(xs: list[float]) -> float:
    m = statistics.median(xs)
    return (max(xs) - min(xs)) / m if m > 0 else float("inf")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cells", nargs="+", default=DEFAULT_CELLS)
    ap.add_argument("--modes", nargs=2, default=["ladder", "saturate"], metavar=("BASELINE", "CANDIDATE"))
    ap.add_argument("--max-spread", type=float, default=0.20)
    ap.add_argument("--share", type=float, default=0.8)
    ap.add_argument("--warm-runs", type=int, default=0,
                    help="runs of each cell (the first mode) on its fresh cluster before the counted ones, not counted: "
                         "a fresh cluster's brokers are still compiling (docs/measurements.yaml maxrate-jit-warmup), "
                         "and in the workflow a cluster's max-rate runs come after its other runs")
    a = ap.parse_args(argv)
    if a.reps < 2:
        ap.error("--reps: at least 2 (a spread needs two runs)")
    if a.warm_runs < 0:
        ap.error("--warm-runs: at least 0")
    doc = plan.load()
    runs = [find_run(doc, c) for c in a.cells]
    work = Path(tempfile.mkdtemp(prefix="bench-maxrate-", dir=ROOT / "data"))
    clusters = work / "clusters"
    exp_files = {}
    for mode in a.modes:
        d = yaml.safe_load(plan.EXPERIMENTS.read_text())
        d["scales"]["local"].setdefault("discovery", {})["mode"] = mode
        exp_files[mode] = work / f"experiments-{mode}.yaml"
        exp_files[mode].write_text(yaml.safe_dump(d, sort_keys=False))
    limits = limits_json()
    old = signal.signal(signal.SIGTERM, lambda s, f: (_ for _ in ()).throw(KeyboardInterrupt()))
    rows = []
    try:
        for r in runs:
            got = {m: [] for m in a.modes}
            took = {m: [] for m in a.modes}
            rep = 0
            for _ in range(a.warm_runs):
                rep += 1
                rate, secs, _ = one_run(r, rep, exp_files[a.modes[0]], work, limits)
                print(f"  {r.key.rsplit('/rep-', 1)[0]} warm-up run {rep}: {rate:9.0f} msg/s in {secs:5.1f} s (not counted)",
                      flush=True)
            for i in range(a.reps):
                order = a.modes if i % 2 == 0 else list(reversed(a.modes))
                for mode in order:
                    rep += 1
                    rate, secs, rd = one_run(r, rep, exp_files[mode], work, limits)
                    got[mode].append(rate)
                    took[mode].append(secs)
                    sat = rd.get("saturation") or {}
                    print(f"  {r.key.rsplit('/rep-', 1)[0]} {mode:9s} rep {i + 1}: {rate:9.0f} msg/s in {secs:5.1f} s"
                          + (f", capacity {sat['capacity']:.0f}" if sat else "")
                          + (f", {len(rd.get('rejectedMeasurements') or [])} measured phase(s) rejected")
                          + (" (ceiling)" if rd.get("ceilingReached") else ""), flush=True)
            rows.append((r, got, took))
    except (RuntimeError, OSError, ValueError, KeyError) as exc:
        print(f"maxrate_repeat: could not run: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("maxrate_repeat: interrupted", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, old)
        subprocess.run([sys.executable, "-m", "workloads.run", "--clusters", str(clusters), "--down-all"], cwd=ROOT,
                       check=False, stdout=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)

    base, cand = a.modes
    print(f"\n{'cell':58s} {'mode':9s} {'median msg/s':>12s} {'spread':>7s} {'run s':>6s}  rates")
    spreads = {m: [] for m in a.modes}
    for r, got, took in rows:
        for m in a.modes:
            s = spread(got[m])
            spreads[m].append(s)
            print(f"{r.key.rsplit('/rep-', 1)[0]:58s} {m:9s} {statistics.median(got[m]):12.0f} {100 * s:6.0f}% "
                  f"{statistics.median(took[m]):6.1f}  {' '.join(f'{x:.0f}' for x in got[m])}")
    within = sum(1 for s in spreads[cand] if s <= a.max_spread)
    need = a.share * len(rows)
    med_b, med_c = statistics.median(spreads[base]), statistics.median(spreads[cand])
    ok = within >= need and med_c < med_b
    print(f"\ncriterion: {cand}'s spread (max - min) / median <= {100 * a.max_spread:.0f} % in >= {100 * a.share:.0f} % "
          f"of the cells ({within} of {len(rows)}), and its median spread below {base}'s ({100 * med_c:.0f} % vs "
          f"{100 * med_b:.0f} %, ratio {med_c / med_b if med_b > 0 else float('inf'):.2f}); {a.reps} repetitions each")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
