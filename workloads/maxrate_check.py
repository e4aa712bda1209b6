"""Check a testbed's max-rate results for the ordering durability implies: a weaker level (no stronger replication
and no stronger local persistence, one of them weaker) may not report less than half the rate of the same workload
at a stronger level, unless the weaker run explains why (its validity verdict is `suspect`, with the reasons).

  python -m workloads.maxrate_check data/raw/<testbed> [--factor 0.5] [--spread]

Exit 0 when every pair holds or is explained, 1 when a pair is unexplained, 2 on unreadable input. One line per
violation: the two result files, their rates and the levels. With --spread it also prints, for every cell with
two or more repetitions, their rates and their spread, (max - min) / median, and a summary line over the cells,
then the same summary without the suspect runs (a cell keeps its place there if two or more remain).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from systems import durability as dur

REPLICATION = {"sync": 2, "async": 1}
LOCAL = {"sync": 3, "async": 2, "async-bypass": 1}


def weaker(a: dict, b: dict) -> bool:
    """True when level a is strictly weaker than level b (a partial order: L2 and L3 are not comparable)."""
    ra, rb = REPLICATION[a["replication"]], REPLICATION[b["replication"]]
    la, lb = LOCAL[a["local"]], LOCAL[b["local"]]
    return ra <= rb and la <= lb and (ra < rb or la < lb)


def load_runs(root: Path) -> list[dict]:
    """Every max-rate result under root: system, level dir, workload, rep, settled/achieved rate, validity."""
    runs = []
    for p in sorted(root.rglob("rep-*.json")):
        if ".part" in p.name:
            continue
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"{p}: unreadable result: {exc}") from None
        x = doc.get("x-streambench") or {}
        if "fault" in x:
            continue  # a fault run (workloads/faultrun.py)
        pr = x.get("producerRate") or {}
        if pr.get("target") is not None:
            continue  # a fixed-rate run
        rel = p.relative_to(root).parts  # system / level-dir / workload / rep-n.json
        if len(rel) != 4:
            continue
        level = rel[1].split("+")[0]
        runs.append({"file": str(p), "system": rel[0], "levelDir": rel[1], "level": level,
                     "variant": rel[1][len(level):], "workload": rel[2], "rate": pr.get("achieved") or 0.0,
                     "validity": (x.get("testbedHost") or {}).get("validity") or {"status": "ok", "reasons": []}})
    return runs


def _suspect(r: dict) -> bool:
    return r["validity"].get("status") == "suspect"


def check(runs: list[dict], levels: dict, factor: float = 0.5) -> tuple[list[str], int]:
    """(violations, pairs compared). Repetitions of a cell are compared by their median rate."""
    cells: dict[tuple, list[dict]] = {}
    for r in runs:
        cells.setdefault((r["system"], r["variant"], r["workload"], r["level"]), []).append(r)
    out, pairs = [], 0
    for (sys_, var, wl, lv), rs in sorted(cells.items()):
        for (sys2, var2, wl2, lv2), rs2 in sorted(cells.items()):
            if (sys2, var2, wl2) != (sys_, var, wl) or lv == lv2 or lv not in levels or lv2 not in levels:
                continue
            if not weaker(levels[lv], levels[lv2]):
                continue
            pairs += 1
            weak = statistics.median(r["rate"] for r in rs)
            strong = statistics.median(r["rate"] for r in rs2)
            if weak >= factor * strong:
                continue
            explained = [r for r in rs if _suspect(r)]
            if explained:
                continue
            out.append(f"{sys_}/{wl}: {lv}{var} (weaker) settled at {weak:.0f} msg/s, less than {factor:.0%} of "
                       f"{lv2}{var2} at {strong:.0f} msg/s, and its result gives no reason "
                       f"({', '.join(r['file'] for r in rs)} vs {', '.join(r['file'] for r in rs2)})")
    return out, pairs


def spread(runs: list[dict], exclude_suspect: bool = False) -> list[dict]:
    """Cells with 2 or more repetitions (not counting suspect ones if exclude_suspect): their rates (by
    repetition), median, and (max - min) / median. Sorted by that spread, widest first."""
    cells: dict[tuple, list[dict]] = {}
    for r in runs:
        if exclude_suspect and _suspect(r):
            continue
        cells.setdefault((r["system"], r["levelDir"], r["workload"]), []).append(r)
    out = []
    for (sys_, lvd, wl), rs in cells.items():
        if len(rs) < 2:
            continue
        rates = [r["rate"] for r in sorted(rs, key=lambda r: r["file"])]
        med = statistics.median(rates)
        out.append({"cell": f"{sys_}/{lvd}/{wl}", "rates": rates, "median": med,
                    "spread": (max(rates) - min(rates)) / med if med > 0 else float("inf"),
                    "suspect": sum(1 for r in rs if _suspect(r))})
    return sorted(out, key=lambda c: (-c["spread"], c["cell"]))


def spread_summary(cells: list[dict], label: str = "") -> str:
    if not cells:
        return f"spread{label}: no cell has two or more repetitions"
    sp = sorted(c["spread"] for c in cells)
    within = lambda f: sum(1 for x in sp if x <= f)  # noqa: E731
    reps = sum(len(c["rates"]) for c in cells)
    return (f"spread{label} over repetitions, (max - min) / median, of {len(cells)} cells ({reps} runs): median {statistics.median(sp):.0%}, "
            f"widest {sp[-1]:.0%} ({cells[0]['cell']}); {within(0.1)} cells within 10 %, {within(0.25)} within 25 %, "
            f"{within(0.5)} within 50 %")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workloads.maxrate_check", description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path, help="data/raw/<testbed>")
    ap.add_argument("--factor", type=float, default=0.5)
    ap.add_argument("--durability", type=Path, default=Path(__file__).resolve().parents[1] / "systems/durability.yaml")
    ap.add_argument("--spread", action="store_true", help="print the spread of every cell over its repetitions")
    a = ap.parse_args(argv)
    try:
        levels = dur.load(a.durability).levels
        runs = load_runs(a.root)
    except (ValueError, dur.DurabilityError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    bad, pairs = check(runs, levels, a.factor)
    for line in bad:
        print(line)
    if a.spread:
        cells = spread(runs)
        for c in cells:
            print(f"{c['cell']}: {' / '.join(f'{x:.0f}' for x in c['rates'])} msg/s, median {c['median']:.0f}, "
                  f"spread {c['spread']:.0%}" + (f", {c['suspect']} suspect" if c["suspect"] else ""))
        print(spread_summary(cells))
        print(spread_summary(spread(runs, exclude_suspect=True), " without suspect runs"))
    print(f"{a.root}: {len(runs)} max-rate results, {pairs} weaker/stronger pairs, {len(bad)} unexplained")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
