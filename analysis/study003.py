"""Study 003 (NTT, one topic / thousands of consumers): connection time and p99 end to end vs consumers.

python -m analysis.study003 --raw data/raw --reference data/reference/studies.csv --tables paper/tables \
    --figures paper/figures [--png-scale 2] [--suspect mark|exclude]

Reads this project's fan-out runs (result files whose `x-streambench.fanOut` block exists, any testbed) and the
study's published numbers (data/reference/studies.csv, study 003), and writes
- paper/tables/study003-fanout.{csv,md}: one row per run and per published point, each labelled with its source
  (the CSV also names each row's file);
- paper/tables/study003-claims.{csv,md}: the study's numbers with each testbed's value at the same consumer count,
  or at its measured count nearest to it (stated in the row's `judged_at`), and a verdict;
- paper/figures/study003-connection-time, study003-p99, study003-histogram (.svg/.png/.pdf/.json).
The study's published points are drawn beside this testbed's and labelled as the study's; they come from
another machine (one Pulsar 2.10 broker on AWS i3.4xlarge) and another Pulsar version; the study names its baseline
the Shared subscription (at its Table 2).
Runs that workloads.run judged suspect (`x-streambench.testbedHost.validity`) are labelled '<testbed> (suspect)'
or left out, as analysis.ingest does for every other figure and table (`analysis.suspect_runs`).
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

import altair as alt

from . import InputError, cli, intervals as iv
from .claims import verdict, verdict_region
from .figures import empty_chart as _empty, save_chart
from .report import write_table

FIGURE_IDS = ["study003-connection-time", "study003-p99", "study003-histogram"]
TABLE_IDS = ["study003-fanout", "study003-claims"]
STUDY_LABEL = "study 003 (published: Pulsar 2.10, 1 broker, AWS)"
TABLE_COLS = ["source", "testbed", "system", "layout", "study_consumers", "consumers", "connection_time_s",
              "never_connected", "e2e_p50_s", "e2e_p99_s", "lost", "file"]
MD_COLS = [c for c in TABLE_COLS if c != "file"]  # the paper's table; the CSV names each run's file
# n: the repetitions of the cell judged (runs of one size and layout); interval: their median [min–max]
# (analysis.intervals); a verdict from one run says "(1 run)"
CLAIM_COLS = ["claim", "study_consumers", "metric", "printed", "unit", "this_testbed", "n", "interval", "testbed",
              "consumers", "judged_at", "verdict", "note"]
MD_CLAIM_COLS = ["claim", "printed", "unit", "this_testbed", "n", "interval", "testbed", "judged_at", "verdict", "note"]
TOLERANCE_PCT = 10.0  # a study number matches within 10 % (or rounding to its printed digits)
_WL = re.compile(r"^1-topic-1-partition-10kb-1p-(?:1c-(?P<subs>\d+)ksub|(?P<cons>\d+)kc-shared)-1$")


def layout_of(workload: str) -> tuple[str, int] | None:
    """(layout, the study's consumer count) from a study-003 workload name, None for other workloads."""
    m = _WL.match(workload)
    if not m:
        return None
    if m["subs"]:
        return "N subscriptions x 1", int(m["subs"]) * 1000
    return "1 shared x N", int(m["cons"]) * 1000


def runs(raw: Path, suspect: str = "mark") -> list[dict]:
    """One row per fan-out result file under raw/<testbed>/<system>/<level>/<workload>/rep-<n>.json; a suspect
    run's testbed reads '<testbed> (suspect)' (suspect="mark") or the run is left out ("exclude")."""
    rows = []
    for p in sorted(raw.glob("*/*/*/*/rep-*.json")):
        testbed, system, level, workload = p.relative_to(raw).parts[:4]
        lay = layout_of(workload)
        if lay is None:
            continue
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            raise InputError(str(p), "(file)", f"not readable as JSON: {e}") from None
        x = doc.get("x-streambench") or {}
        f = x.get("fanOut")
        if not isinstance(f, dict):
            raise InputError(str(p), "x-streambench.fanOut", "missing in a study-003 run (runner too old?)")
        if ((x.get("testbedHost") or {}).get("validity") or {}).get("status") == "suspect":
            if suspect == "exclude":
                continue
            testbed = f"{testbed} (suspect)"
        e2e = x.get("endToEndLatencyMicros") or {}
        pc = f.get("perConsumer") or {}
        rows.append({
            "source": "this testbed", "testbed": testbed, "system": system, "level": level, "layout": lay[0],
            "study_consumers": lay[1], "consumers": f["consumers"], "connection_time_s": f.get("connectionTimeSeconds"),
            "never_connected": f["neverConnected"],
            "e2e_p50_s": e2e["p50"] / 1e6 if e2e.get("count") else None,
            "e2e_p99_s": e2e["p99"] / 1e6 if e2e.get("count") else None,
            "lost": (x.get("audit") or {}).get("lost"), "file": str(p),
            "connected_ms": [v for v in pc.get("connected", []) if v >= 0],
        })
    return rows


def published(reference: Path) -> list[dict]:
    """The study's baseline points (consumers -> p99 e2e, connection time); '(lower bound)' units kept as bounds."""
    pts: dict[int, dict] = {}
    with open(reference, newline="") as fh:
        for r in csv.DictReader(fh):
            if r["study"] != "003" or r["experiment"] != "baseline_shared":
                continue
            n = int(r["config"].split("K")[0]) * 1000
            pt = pts.setdefault(n, {"source": STUDY_LABEL, "testbed": "aws i3.4xlarge (study 003)", "system": "pulsar",
                                    "layout": "Shared subscription (as published)", "study_consumers": n, "consumers": n,
                                    "never_connected": None, "e2e_p50_s": None, "lost": None, "file": str(reference),
                                    "connection_time_s": None, "e2e_p99_s": None, "bound": {}})
            v = float(r["value"]) * (60 if r["unit"].startswith("min") else 1)
            key = {"e2e_p99": "e2e_p99_s", "connection_time": "connection_time_s",
                   "connection_time_extrapolated": "connection_time_s"}.get(r["metric"])
            if key is None:
                continue
            pt[key] = v
            if "lower bound" in r["unit"]:
                pt["bound"][key] = "lower bound"
            if r["metric"] == "connection_time_extrapolated":
                pt["bound"][key] = "extrapolated (never connected)"
    return [pts[n] for n in sorted(pts)]


def _n(x: int) -> str:
    """20000 -> '20 000' (the paper's thousands separator)."""
    return f"{x:,}".replace(",", " ")


def nearest_run(candidates: list[dict], n: int) -> dict | None:
    """The run a study size n is judged at: a run of exactly n consumers if there is one, else one at the measured
    consumer count nearest to n by ratio (|log(count / n)|; a tie goes to the larger count). Among runs of the
    chosen count the study's own layout, one Shared subscription, comes first."""
    if not candidates:
        return None
    import math
    sizes = sorted({r["consumers"] for r in candidates})
    size = min(sizes, key=lambda c: (abs(math.log(c / n)), -c))
    at = [r for r in candidates if r["consumers"] == size]
    at.sort(key=lambda r: (r["layout"] != "1 shared x N", r["file"]))
    return at[0]


def judged_at(run: dict, n: int, testbed: str) -> str:
    """The rule a claims row was judged by, in words."""
    if run["consumers"] == n:
        return f"{_n(n)} consumers (the study's size)"
    return f"judged at {_n(run['consumers'])} consumers, nearest to {_n(n)} measured on {testbed}"


def repetitions(candidates: list[dict], run: dict) -> list[dict]:
    """The runs of `candidates` (one testbed's) of the same consumer count and layout as `run`: the repetitions of
    the cell a claim is judged on."""
    return [r for r in candidates if r["consumers"] == run["consumers"] and r["layout"] == run["layout"]]


def judge_value(printed: str, bound: str, cell) -> str:
    """The verdict of one study number on the repetitions' interval (analysis.intervals; cell: their values):
    a lower bound holds when every run is at or above it; a number within 10 % (or rounding) of every run matches,
    outside it for every run differs (claims.verdict's words on the median); otherwise not separable at this scale."""
    if cell is None:
        return "does not hold here" if bound == "lower bound" else "no value in the runs"
    if bound == "lower bound":
        v = iv.at_least(cell, float(printed))
        if v == iv.NOT_SEPARABLE:
            return iv.not_separable(f"the runs' {iv.span(cell.lo, cell.hi, '.3g')} s straddle the printed {printed} s")
        return "holds" if v == iv.HOLDS else "does not hold here"
    v = iv.judge(cell.judged, verdict_region(printed, approx=True, tol_pct=TOLERANCE_PCT))
    if v == iv.NOT_SEPARABLE:
        return iv.not_separable(f"the runs' {iv.span(*cell.judged, '.3g')} s straddle the edge of "
                                f"{printed} s +/-{TOLERANCE_PCT:g}%")
    return verdict(printed, cell.median, approx=True, tol_pct=TOLERANCE_PCT)[0]


def claims(pub: list[dict], ours: list[dict]) -> list[dict]:
    """The study's numbers beside this project's Pulsar runs, one row per study number and testbed. A testbed
    without a run of the study's consumer count (the local ladder stops at 1 000) is judged at its measured size
    nearest to it (nearest_run), and the row says so in `judged_at`; every repetition of that size and layout is
    judged (judge_value: over their interval, analysis.intervals), the row gives n and their median [min–max], and a
    verdict from one run says "(1 run)". A testbed without any Pulsar fan-out run gives one 'not run' row."""
    out = []
    testbeds = sorted({r["testbed"].removesuffix(" (suspect)") for r in ours if r["system"] == "pulsar"})
    for pt in pub:
        n = pt["study_consumers"]
        for key, metric, unit in (("connection_time_s", "connection time", "s"), ("e2e_p99_s", "p99 end to end", "s")):
            if pt.get(key) is None:
                continue
            bound = pt["bound"].get(key, "")
            printed = f"{pt[key]:g}"
            claim = f"{n // 1000}K consumers: {metric}" + (f" ({bound})" if bound else "")
            base = {"claim": claim, "study_consumers": n, "metric": metric, "printed": printed, "unit": unit,
                    "n": None, "interval": None}
            if not testbeds:
                out.append({**base, "this_testbed": None, "testbed": "", "consumers": None,
                            "judged_at": "", "verdict": "not run on any testbed here", "note": ""})
            for tb in testbeds:
                # an extrapolated connection time is judged on whether the consumers connected at all
                usable = [r for r in ours if r["system"] == "pulsar" and r["testbed"].removesuffix(" (suspect)") == tb
                          and (r.get(key) is not None or bound.startswith("extrapolated"))]
                run = nearest_run(usable, n)
                if run is None:
                    out.append({**base, "this_testbed": None, "testbed": tb, "consumers": None, "judged_at": "",
                                "verdict": f"no Pulsar run on {tb} measured the {metric}", "note": ""})
                    continue
                reps = repetitions(usable, run)
                cell = iv.of(r[key] for r in reps)
                if bound.startswith("extrapolated"):
                    connected = sum(1 for r in reps if r["never_connected"] == 0)
                    v = ("connected here" if connected == len(reps) else "did not connect here either" if not connected
                         else iv.not_separable(f"connected in {connected} of {len(reps)} runs"))
                else:
                    v = judge_value(printed, bound, cell)
                never = [r["never_connected"] for r in reps if r["never_connected"]]
                note = run["layout"] + (f"; {'/'.join(map(str, never))} never connected" if never else "")
                out.append({**base, "this_testbed": None if cell is None else cell.median, "testbed": run["testbed"],
                            "consumers": run["consumers"], "judged_at": judged_at(run, n, tb),
                            "n": len(reps), "interval": None if cell is None else cell.text(".3g"),
                            "verdict": iv.mark(v, len(reps)), "note": note})
    return out


def _points(pub, ours, key):
    pts = [{"consumers": r["consumers"], "value": r[key], "series": f"{r['system']}, {r['layout']} ({r['testbed']})",
            "kind": "this testbed"} for r in ours if r.get(key) is not None]
    pts += [{"consumers": r["consumers"], "value": r[key], "series": STUDY_LABEL + (
        f" [{r['bound'][key]}]" if key in r["bound"] else ""), "kind": "published"} for r in pub if r.get(key) is not None]
    return pts


def _vs_consumers(pts, ytitle, target=None):
    if not pts:
        return _empty("no study-003 data")
    base = alt.Chart(alt.Data(values=pts)).encode(
        x=alt.X("consumers:Q", scale=alt.Scale(type="log"), title="consumers"),
        y=alt.Y("value:Q", scale=alt.Scale(type="log"), title=ytitle),
        color=alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=1)),
        shape=alt.Shape("kind:N", title=None))
    chart = base.mark_line(point=True)
    if target is not None:
        rule = alt.Chart(alt.Data(values=[{"y": target}])).mark_rule(strokeDash=[4, 4], color="gray").encode(y="y:Q")
        chart = chart + rule
    return chart.properties(width=420, height=260)


def fig_connection(pub, ours):
    chart = _vs_consumers(_points(pub, ours, "connection_time_s"),
                          ["connection time (s)", "first connect start → last connected"])  # two lines: a row's height
    return chart, ("Connection time vs consumers (study 003 Table 1 / Figure 4): this testbed's runs per system and "
                   "layout beside the study's published Pulsar 2.10 points (another machine and version; the 100K point "
                   "is the study's extrapolation, never reached)."), (
        "Log-log line chart of connection time in seconds against number of consumers, one line per system and "
        "layout of this testbed and one for the study's published points.")


def fig_p99(pub, ours):
    chart = _vs_consumers(_points(pub, ours, "e2e_p99_s"), "p99 end to end (s)", target=1.0)
    return chart, ("p99 end-to-end latency vs consumers (study 003 Table 1), one HdrHistogram over all consumers per "
                   "run; the dashed line is the study's 1 s requirement. The study's 30K and 40K points are lower "
                   "bounds (\">1 s\", \">4 s\")."), (
        "Log-log line chart of p99 end-to-end latency in seconds against number of consumers, with a dashed line at 1 s.")


def fig_histogram(pub, ours):
    best = {}
    for r in ours:
        if r["connected_ms"] and r["consumers"] >= best.get(r["system"], {"consumers": 0})["consumers"]:
            best[r["system"]] = r
    vals = []
    for sysname, r in sorted(best.items()):
        for v in r["connected_ms"]:
            vals.append({"s": v / 1000.0, "series": f"{sysname}, {r['consumers']} consumers, {r['layout']} ({r['testbed']})"})
    if not vals:
        return _empty("no study-003 run"), "Connection-time histogram: no run.", "No data."
    chart = alt.Chart(alt.Data(values=vals)).mark_bar().encode(
        x=alt.X("s:Q", bin=alt.Bin(maxbins=40), title="connected after (s since the first connect start)"),
        y=alt.Y("count():Q", title="consumers"),
        color=alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=1)),
        row=alt.Row("series:N", title=None, header=alt.Header(labels=False))).properties(width=420, height=120)
    return chart, ("Per-consumer connection times at the largest size each system completed on this testbed "
                   "(study 003 Figure 5 shows 20K consumers on its testbed: about 20 % connected in ~3 s, more than "
                   "half within 1 min, a tail beyond 200 s)."), (
        "Histograms of the time at which each consumer was connected, counted from the first connect start, one "
        "panel per system.")


BUILDERS = {"study003-connection-time": fig_connection, "study003-p99": fig_p99, "study003-histogram": fig_histogram}
assert list(BUILDERS) == FIGURE_IDS


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raw", type=Path, required=True)
    ap.add_argument("--reference", type=Path, required=True)
    ap.add_argument("--tables", type=Path, required=True)
    ap.add_argument("--figures", type=Path, required=True)
    ap.add_argument("--png-scale", type=float, default=2.0)
    ap.add_argument("--suspect", choices=("mark", "exclude"), default="mark",
                    help="runs workloads.run judged suspect: labelled '<testbed> (suspect)' or left out")
    a = ap.parse_args(argv)

    def body():
        ours = runs(a.raw, a.suspect)
        pub = published(a.reference)
        rows = sorted(ours, key=lambda r: (r["system"], r["layout"], r["consumers"])) + pub
        write_table(a.tables, "study003-fanout", TABLE_COLS, rows, MD_COLS)
        write_table(a.tables, "study003-claims", CLAIM_COLS, claims(pub, ours), MD_CLAIM_COLS)
        for fid, build in BUILDERS.items():
            chart, caption, alt_text = build(pub, ours)
            save_chart(chart, fid, caption, alt_text, a.figures, a.png_scale)
    return cli(body)


if __name__ == "__main__":
    sys.exit(main())
