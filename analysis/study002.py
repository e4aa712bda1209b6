"""Study 002 (Kafkaesque 2019, Pulsar 2.4.0 vs Kafka 2.3.0): latency at 50K msg/s of 100 B on 1, 6 and 16 partitions.

python -m analysis.study002 --raw data/raw --reference data/reference/studies.csv --tables paper/tables \
    --figures paper/figures [--png-scale 2] [--suspect mark|exclude]

Reads this project's E002-LAT runs (workloads/omb/1-topic-{1,6,16}-partition(s)-100b-1p-1c-50k, stock tuning, levels
L1 = "flush" and L2 = "no flush"; any testbed under data/raw, labelled by analysis.labels) and the study's printed
numbers (data/reference/studies.csv, study 002: publish p99 and average end-to-end latency of its 12 tests, from its
result tables, §002.4 of studies.md), and writes
- paper/figures/study002-latency.{svg,png,pdf,json}: publish p99 and average end-to-end latency against partitions,
  one panel per metric and durability, the study's printed values as lines (the numbers behind its two comparison
  charts, "Average end-to-end latency, 6-partition, no flushing" and "99th percentile publishing latency,
  6-partition, flushing", are the 6-partition points of two of the panels) and this testbed's runs as points;
- paper/figures/study002-timeseries.{svg,png,pdf,json}: the study's per-test figures over time, (a) p99 publish and
  (b) average end-to-end latency, for its 1-partition tests (1, 4, 7, 10): this testbed's runs per OMB window (and,
  in (a), per second of the runner's timeSeries), the study's printed whole-test values as horizontal rules;
- paper/tables/study002-runs.{csv,md}: one row per run (the CSV names each run's file);
- paper/tables/study002-claims.{csv,md}: the study's main claim, Pulsar's latency falls as partitions increase while
  Kafka's rises, one row per system, durability and metric, judged on the study's own printed numbers and on every
  testbed that measured more than one partition count; a testbed with one count says what it would need. Then its
  three other claims of §002.4 (flush / no flush, and two sentences with numbers): disabling Pulsar's flush gains
  little, "4.129 ms with flush vs 3.928 ms without" and "2.969 vs 6.652 ms", each judged at the partition counts a
  testbed measured (the local scale: 1) by the comparison the sentence makes.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import altair as alt

from . import InputError, cli, omb
from . import intervals as iv  # the claims' verdicts over repetitions
from .figures import empty_chart as _empty, log_axis, save_chart
from .ingest import WINDOW_S
from .labels import parse_raw_path
from .report import to_md, write_table, write_text_atomic

FIGURE_IDS = ["study002-latency", "study002-timeseries"]
TABLE_IDS = ["study002-runs", "study002-claims"]
EXPERIMENTS = ("E002-LAT",)
STUDY_SCALE = "study 002 (as printed)"
STUDY_TESTBED = "AWS i3.4xlarge x 3, 50 000 msg/s, 15 min"
# the study's durability modes (its §002.2) as this project's levels: flush = fsync before the ack (L1), no flush = L2
MODE_OF_LEVEL = {"L1": "flush", "L2": "no flush"}
LEVEL_OF_MODE = {"flush": "L1", "noflush": "L2"}
SYSTEM_NAME = {"pulsar": "Pulsar", "kafka": "Kafka"}
# the claim (§002.4, qualitative findings): direction of latency as partitions increase, per system
DIRECTION = {"pulsar": "falls", "kafka": "rises"}
METRICS = {"publish_p99": "publish p99", "e2e_avg": "average end to end"}
STUDY_PARTITIONS = (1, 6, 16)
GAIN_LITTLE = 0.20  # "gains little": no flush lowers Pulsar's publish p99 by less than a fifth at every partition count
APPROX = 0.20  # a ratio a sentence prints holds within +/-20 % of it, on the same side of 1 (study004.APPROX)
# the two sentences of §002.4 with numbers (their text, as studies.md quotes it) -> (numerator, denominator) of the
# comparison each makes and where the study's tables hold the pair
QUOTED = {
    "002-flush-p99-1p": {"headline": '"Pulsar 1-partition p99 publish 4.129 ms with flush vs 3.928 ms without"',
                         "printed": "4.129 vs 3.928 ms",
                         "pair": (4.129, 3.928), "system": ("pulsar", "pulsar"), "mode": ("flush", "no flush"),
                         "metric": "publish_p99",
                         "comparison": "Pulsar publish p99 at 1 partition, flush / no flush: within 20 % of "
                                       "4.129 / 3.928 = 1.05x, flush the higher"},
    "002-avg-1p": {"headline": '"Kafka 2.969 vs 6.652 ms" (Pulsar 2.969 vs Kafka 6.652)',
                   "printed": "2.969 (Pulsar) vs 6.652 ms (Kafka)",
                   "pair": (6.652, 2.969), "system": ("kafka", "pulsar"), "mode": ("flush", "flush"),
                   "metric": "publish_avg",
                   "comparison": "average publish latency at 1 partition, flush: Kafka / Pulsar within 20 % of "
                                 "6.652 / 2.969 = 2.24x, Kafka the higher"},
}
RUN_COLS = ["testbed", "system", "level", "mode", "partitions", "ran_with_partitions", "offered_msgps", "achieved_msgps",
            "publish_avg_ms", "publish_p50_ms", "publish_p99_ms", "publish_p99_9_ms", "publish_p99_99_ms",
            "publish_max_ms", "e2e_avg_ms", "e2e_p99_ms", "lost", "file"]
# the paper's tables: short headers of words that wrap, relative widths (header, key, width); the CSVs keep every column
MD_RUN_COLUMNS = [("testbed", "testbed", 6), ("system", "system", 5), ("mode", "mode", 5),
                  ("study's partitions", "partitions", 5), ("ran with partitions", "ran_with_partitions", 5),
                  ("offered msg/s", "offered_msgps", 6), ("achieved msg/s", "achieved_msgps", 6),
                  ("publish p50", "publish_p50_ms", 5), ("publish p99", "publish_p99_ms", 5),
                  ("publish p99.9", "publish_p99_9_ms", 5), ("publish p99.99", "publish_p99_99_ms", 5),
                  ("e2e avg", "e2e_avg_ms", 5), ("e2e p99", "e2e_p99_ms", 5), ("lost", "lost", 4)]
# n: the fewest repetitions of a cell the row judged; interval: the judged value's median [min–max] over them
# (analysis.intervals); a testbed's verdict from one run per cell says "(1 run)"
CLAIM_COLS = ["claim_id", "headline", "comparison", "printed", "scale", "judged_at", "this_testbed", "n", "interval",
              "verdict", "note"]
MD_CLAIM_COLUMNS = [("comparison", "comparison", 13), ("scale", "scale", 6), ("this testbed", "this_testbed", 9),
                    ("n", "n", 2), ("interval", "interval", 9), ("verdict", "verdict", 13)]


def md_table(columns, rows: list[dict]) -> str:
    """A pipe table with the given headers and relative widths (pandoc reads them from the dashes), cells as
    report.to_md writes them."""
    keys = [k for _, k, _ in columns]
    lines = to_md(keys, rows).split("\n")
    lines[0] = "| " + " | ".join(h for h, _, _ in columns) + " |"
    lines[1] = "|" + "|".join("-" * (3 * w) for _, _, w in columns) + "|"
    return "\n".join(lines)


def write_tables(tables: Path, prefix: str, run_cols, run_md, runs_: list[dict], claim_md, claims_: list[dict]):
    """<prefix>-runs and <prefix>-claims: every column in the CSV, the paper's columns in the .md."""
    write_table(tables, f"{prefix}-runs", run_cols, runs_)
    write_text_atomic(tables / f"{prefix}-runs.md", md_table(run_md, runs_))
    write_table(tables, f"{prefix}-claims", CLAIM_COLS, claims_)
    write_text_atomic(tables / f"{prefix}-claims.md", md_table(claim_md, claims_))
SERIES_COLOR = {"Pulsar": "#7570b3", "Kafka": "#d95f02"}


# ---------------------------------------------------------------- this project's runs (shared with study004)

def level_dir(lab: dict) -> str:
    """L1, L2, L2-bypass: the level folder's name without its tuning."""
    return lab["level"] + ("-bypass" if lab["local_durability"] == "bypass" else "")


def _pct(o: dict, metric: str, p: float, key: str):
    """A percentile in ms from the run's merged HdrHistogram (µs), else OMB's aggregated value (None if absent)."""
    h = o["histograms"].get(metric)
    if h is not None and h.total:
        return h.value_at_percentile(p) / 1000.0
    v = o["agg"].get((metric, key))
    return v if v else None


def _avg(o: dict, metric: str):
    h = o["histograms"].get(metric)
    if h is not None and h.total:
        return h.mean() / 1000.0
    v = o["agg"].get((metric, "Avg"))
    return v if v else None


def load_runs(raw: Path, experiments, suspect: str = "mark") -> list[dict]:
    """One dict per stock-tuned result file under raw/<testbed>/<system>/<level>[+stock]/<workload>/rep-<n>.json whose
    experiment (analysis.labels, from the path) is one of `experiments`: the labels, the rates, the percentiles
    (publish and end to end, ms) and the runner's extension blocks. A suspect run's testbed reads
    '<testbed> (suspect)' (suspect="mark") or the run is left out ("exclude")."""
    raw = Path(raw)
    out = []
    for p in sorted(raw.glob("*/*/*/*/rep-*.json")):
        rel = p.relative_to(raw).as_posix()
        if rel.split("/")[1] == "probes":
            continue
        try:
            lab = parse_raw_path(rel)
        except InputError as e:
            raise InputError(p, e.field, e.problem) from None
        if lab["experiment"] not in experiments or lab["tuning"] != "stock":
            continue
        o = omb.load(p)
        x = o["x"] or {}
        testbed = lab["testbed"]
        if ((x.get("testbedHost") or {}).get("validity") or {}).get("status") == "suspect":
            if suspect == "exclude":
                continue
            testbed = f"{testbed} (suspect)"
        w = o["windows"]
        pr = x.get("producerRate") or {}
        achieved = pr.get("achieved")
        if achieved is None and w["publishRate"]:
            achieved = sum(w["publishRate"]) / len(w["publishRate"])
        hist = o["histograms"].get("publish")
        row = {"testbed": testbed, "system": lab["system"], "level": level_dir(lab), "experiment": lab["experiment"],
               "partitions": lab["partitions"], "ran_with_partitions": o["meta"].get("partitions", lab["partitions"]),
               "message_bytes": o["meta"].get("messageSize", lab["message_size_bytes"]),
               "offered_msgps": pr.get("target"), "achieved_msgps": None if achieved is None else round(achieved, 1),
               "publish_avg_ms": _avg(o, "publish"), "publish_count": hist.total if hist is not None else None,
               "e2e_avg_ms": _avg(o, "e2e"), "lost": (x.get("audit") or {}).get("lost"), "file": str(p),
               "rate_discovery": x.get("rateDiscovery"), "backlog": x.get("backlog")}
        for q, key, col in ((50, "50pct", "p50"), (99, "99pct", "p99"), (99.9, "999pct", "p99_9"),
                            (99.99, "9999pct", "p99_99"), (100, "Max", "max")):
            row[f"publish_{col}_ms"] = _pct(o, "publish", q, key)
            row[f"e2e_{col}_ms"] = _pct(o, "e2e", q, key)
        out.append(row)
    return out


def runs(raw: Path, suspect: str = "mark") -> list[dict]:
    """This project's E002-LAT runs, with the study's durability mode of their level."""
    rows = []
    for r in load_runs(raw, EXPERIMENTS, suspect):
        if r["level"] not in MODE_OF_LEVEL:
            continue  # E002-LAT runs L1 and L2 only
        rows.append({**r, "mode": MODE_OF_LEVEL[r["level"]]})
    return sorted(rows, key=lambda r: (r["testbed"], r["system"], r["level"], r["partitions"], r["file"]))


# ---------------------------------------------------------------- the study's printed numbers

def published(reference: Path) -> list[dict]:
    """Study 002's rows of the reference CSV as points: system, mode, partitions, metric, value (ms), source.
    A row whose experiment is not `t<test>_<n>part` or whose config is not flush/noflush is one error naming it."""
    out = []
    with open(reference, newline="") as fh:
        for n, r in enumerate(csv.DictReader(fh), start=2):
            if r["study"] != "002":
                continue
            exp = r["experiment"]
            test, _, parts = exp.partition("_")
            if not (test.startswith("t") and test[1:].isdigit() and parts.endswith("part") and parts[:-4].isdigit()):
                raise InputError(f"{reference}:{n}", "experiment", f"{exp!r} is not t<test>_<n>part")
            if r["config"] not in LEVEL_OF_MODE:
                raise InputError(f"{reference}:{n}", "config", f"{r['config']!r} is not flush or noflush")
            try:
                value = float(r["value"])
            except ValueError:
                raise InputError(f"{reference}:{n}", "value", f"{r['value']!r} is not a number") from None
            out.append({"test": int(test[1:]), "system": r["system"].split("-")[0], "version": r["system"],
                        "mode": "flush" if r["config"] == "flush" else "no flush", "partitions": int(parts[:-4]),
                        "metric": r["metric"], "value": value, "unit": r["unit"], "source": r.get("source", "")})
    return out


# ---------------------------------------------------------------- claims

def _ms(v: float) -> str:
    return f"{round(v, 3):g}"  # the study's printed digits


def _cells(values: dict) -> dict:
    """{partitions: Interval} from {partitions: a value or the list of a cell's repetitions}."""
    out = {}
    for p, v in values.items():
        c = iv.of(v if isinstance(v, (list, tuple)) else [v])
        if c is not None:
            out[p] = c
    return out


def direction_judgement(values: dict, want: str) -> dict:
    """"latency <want: falls|rises> as partitions increase" on {partitions: value or repetitions}: every step to more
    partitions judged over the cells' intervals (analysis.intervals: a step holds when the larger count's range lies
    wholly below (falls) or above (rises) the smaller's, differs when wholly on the other side, and is not separable
    when they overlap). Returns shown (medians), verdict ('' with one partition count: no sweep to judge), n (the
    fewest repetitions of a cell) and interval (each cell's median [min–max])."""
    cells = _cells(values)
    ps = sorted(cells)
    med = {p: cells[p].median for p in ps}
    shown = ", ".join(f"{p} p: {_ms(med[p])}" for p in ps) + " ms"
    out = {"shown": shown, "verdict": "", "n": iv.smallest_n(*cells.values()) if cells else None,
           "interval": ", ".join(f"{p} p: {cells[p].text(_ms)}" for p in ps) + " ms"}
    if len(ps) < 2:
        return out
    step = iv.less if want == "falls" else iv.greater
    steps = {(a, b): step(cells[b], cells[a]) for a, b in zip(ps, ps[1:])}
    v = iv.combine(steps.values())
    if v == iv.HOLDS:
        out["verdict"] = "holds"
    elif v == iv.DIFFERS:
        first, last = med[ps[0]], med[ps[-1]]
        change = (last - first) / first * 100 if first else float("nan")
        moved = "falls" if last < first else "rises" if last > first else "stays"
        out["verdict"] = f"differs: it {moved} ({change:+.1f} % from {ps[0]} to {ps[-1]} partitions)"
    else:
        overlap = [f"{a} and {b}" for (a, b), s in steps.items() if s == iv.NOT_SEPARABLE]
        out["verdict"] = iv.not_separable(f"the runs' ranges at {'; '.join(overlap)} partitions overlap")
    return out


def direction_verdict(values: dict, want: str) -> tuple[str, str]:
    """(shown, verdict) of direction_judgement."""
    j = direction_judgement(values, want)
    return j["shown"], j["verdict"]


def _claim_rows(scale: str, judged_at: str, values_of, note_of) -> list[dict]:
    """The direction claim's eight rows on one scale; values_of(system, mode, metric) -> {partitions: value or the
    cell's repetitions}. On a testbed (not the study's printed numbers) a row carries n and the cells' intervals and a
    verdict from one run per cell says '(1 run)'."""
    runs = scale != STUDY_SCALE
    out = []
    for system in ("pulsar", "kafka"):
        for mode in ("flush", "no flush"):
            for metric, mname in METRICS.items():
                want = DIRECTION[system]
                values = values_of(system, mode, metric)
                cid = f"002-{system}-{mode.replace(' ', '')}-{metric.replace('_', '-')}"
                row = {"claim_id": cid,
                       "headline": f"{SYSTEM_NAME[system]}'s latency {want} as partitions increase",
                       "comparison": f"{SYSTEM_NAME[system]} ({mode}) {mname} latency {want} with every step 1 -> 6 -> 16 "
                                     "partitions",
                       "printed": DIRECTION[system], "scale": scale, "judged_at": judged_at, "n": None, "interval": None}
                if not values:
                    row.update(this_testbed=None, verdict=f"not measured at this scale: no {SYSTEM_NAME[system]} "
                                                          f"{mode} run", note=note_of(system, mode))
                else:
                    j = direction_judgement(values, want)
                    v = j["verdict"]
                    if not v:
                        v = (f"{'not measured at this scale' if scale.startswith('aws') else 'needs aws scale'}: "
                             f"partition sweep (this scale measured {', '.join(map(str, sorted(values)))} "
                             "partition(s) only; the claim needs 1, 6 and 16)")
                    elif runs:
                        v = iv.mark(v, j["n"])
                    row.update(this_testbed=j["shown"], verdict=v, note=note_of(system, mode), n=j["n"],
                               interval=j["interval"] if runs else None)
                out.append(row)
    return out


def _pair_region(printed: float, side_only: bool) -> iv.Region:
    """The ratios a sentence's 'a vs b' = printed admits: the same side of 1 (side_only), and within +/-APPROX."""
    side = iv.above(1.0, strict=True) if printed > 1 else iv.below(1.0, strict=True)
    if side_only:
        return side
    lo, hi = printed * (1 - APPROX), printed * (1 + APPROX)
    if printed > 1:
        return iv.Region(lo=max(lo, 1.0), hi=hi, lo_open=lo <= 1.0)
    return iv.Region(lo=lo, hi=min(hi, 1.0), hi_open=hi >= 1.0)


def pair_judgement(a, b, printed: float) -> dict:
    """A sentence that prints the pair a vs b as the ratio `printed`, on values or the cells' repetitions: holds when
    the ratio's interval (analysis.intervals.ratio) lies within +/-APPROX of printed on the same side of 1; differs
    when it lies outside (then the direction alone, or the opposite); not separable when it straddles an edge."""
    ca, cb = (iv.of(x if isinstance(x, (list, tuple)) else [x]) for x in (a, b))
    r = ca.median / cb.median
    lo, hi = iv.ratio(ca, cb)
    out = {"shown": f"{_ms(ca.median)} / {_ms(cb.median)} ms = {r:.2f}x", "n": iv.smallest_n(ca, cb),
           "interval": iv.range_text(r, lo, hi, ".2f", "x", iv.smallest_n(ca, cb))}
    full = iv.judge((lo, hi), _pair_region(printed, side_only=False))
    side = iv.judge((lo, hi), _pair_region(printed, side_only=True))
    if full == iv.HOLDS:
        out["verdict"] = "holds"
    elif full == iv.NOT_SEPARABLE:
        out["verdict"] = iv.not_separable(f"the ratio lies between {lo:.2f}x and {hi:.2f}x (printed {printed:.2f}x)")
    elif side == iv.DIFFERS:
        out["verdict"] = f"differs: opposite direction ({r:.2f}x, printed {printed:.2f}x)"
    elif side == iv.HOLDS:
        out["verdict"] = f"differs: direction holds, size does not ({r:.2f}x, printed {printed:.2f}x)"
    else:
        out["verdict"] = (f"differs: size does not hold ({r:.2f}x, printed {printed:.2f}x); the direction is "
                          f"{iv.NOT_SEPARABLE} (ratio {lo:.2f}x to {hi:.2f}x)")
    return out


def pair_verdict(a, b, printed: float) -> tuple[str, str]:
    """(shown, verdict) of pair_judgement."""
    j = pair_judgement(a, b, printed)
    return j["shown"], j["verdict"]


def _reps(x) -> list:
    """A value_of answer as a list of repetitions (None: none)."""
    if x is None:
        return []
    return [v for v in x if v is not None] if isinstance(x, (list, tuple)) else [x]


def _number_rows(scale: str, judged_at: str, value_of, note: str = "") -> list[dict]:
    """The flush / no flush claim and the two sentences with numbers on one scale. value_of(system, mode, metric,
    partitions) -> ms, the cell's repetitions (ms) or None (metric: publish_p99, publish_avg)."""
    study = scale == STUDY_SCALE
    out = []

    def cell(*key):
        return iv.of(_reps(value_of(*key)))

    pairs = {p: (cell("pulsar", "flush", "publish_p99", p), cell("pulsar", "no flush", "publish_p99", p))
             for p in STUDY_PARTITIONS}
    measured = [p for p in STUDY_PARTITIONS if pairs[p][0] is not None and pairs[p][1] is not None]
    missing = [p for p in STUDY_PARTITIONS if p not in measured]
    row = {"claim_id": "002-flush-gain", "headline": "Disabling Pulsar's flush gains little",
           "comparison": f"Pulsar publish p99 without flush (tests 4-6) against with flush (tests 1-3), each partition "
                         f"count: lower by less than {GAIN_LITTLE:.0%}", "printed": "little", "scale": scale,
           "judged_at": judged_at, "note": note, "n": None, "interval": None}
    if not measured:
        row.update(this_testbed=None, verdict="not measured at this scale: no Pulsar flush and no-flush pair at one "
                                              "partition count")
    else:
        # the change of no flush against flush: no flush / flush - 1, its interval from the cells' (intervals.ratio)
        change = {p: (pairs[p][1].median / pairs[p][0].median - 1,
                      *(x - 1 for x in iv.ratio(pairs[p][1], pairs[p][0]))) for p in measured}
        n = iv.smallest_n(*(c for p in measured for c in pairs[p]))
        # gains little: no flush / flush above 1 - GAIN_LITTLE
        judged = {p: iv.judge(iv.ratio(pairs[p][1], pairs[p][0]), iv.above(1 - GAIN_LITTLE, strict=True))
                  for p in measured}
        shown = ", ".join(f"{p} p: {change[p][0]:+.1%}" for p in measured)
        v = iv.combine(judged.values())
        if v == iv.DIFFERS:
            v = "differs: no flush lowers it by " + ", ".join(
                f"{-change[p][0]:.0%} at {p} partition(s)" for p in measured if judged[p] == iv.DIFFERS)
        elif v == iv.NOT_SEPARABLE:
            v = iv.not_separable("no flush lowers it by " + ", ".join(
                f"{-change[p][2]:.0%} to {-change[p][1]:.0%} at {p} partition(s)" for p in measured
                if judged[p] == iv.NOT_SEPARABLE) + f", across the {GAIN_LITTLE:.0%} bound")
        else:
            v = "holds" + (f" at {', '.join(map(str, measured))} partition(s) ({', '.join(map(str, missing))} need the "
                           "aws scale)" if missing and not study else "")
        row.update(this_testbed=shown, verdict=v if study else iv.mark(v, n), n=n,
                   interval=None if study else ", ".join(
                       f"{p} p: " + iv.range_text(change[p][0], change[p][1], change[p][2], "+.1%", "", n)
                       for p in measured))
    out.append(row)
    for cid, q in QUOTED.items():
        (sa, sb), (ma, mb) = q["system"], q["mode"]
        a, b = _reps(value_of(sa, ma, q["metric"], 1)), _reps(value_of(sb, mb, q["metric"], 1))
        r = {"claim_id": cid, "headline": q["headline"], "comparison": q["comparison"], "printed": q["printed"],
             "scale": scale, "judged_at": judged_at, "note": note, "n": None, "interval": None}
        if not a or not b or not all(b):
            what = " and ".join(f"{SYSTEM_NAME[sy]} ({m})" for sy, m, v in ((sa, ma, a), (sb, mb, b)) if not v)
            what += f" {q['metric'].replace('_', ' ')} at 1 partition"
            r.update(this_testbed=None, verdict=(f"not re-derivable: studies.csv transcribes no {what}"
                                                 if study else f"not measured at this scale: no run of {what}"))
        else:
            j = pair_judgement(a, b, q["pair"][0] / q["pair"][1])
            r.update(this_testbed=j["shown"], verdict=j["verdict"] if study else iv.mark(j["verdict"], j["n"]),
                     n=j["n"], interval=None if study else j["interval"])
        out.append(r)
    if study:
        out[1]["note"] = ("the sentence's numbers are not the tables' (§002.4: p99 4.003 / 3.783, p99.9 4.095 / 3.928; "
                          "studies.md [ambig]); judged on the tables' p99")
        out[2]["note"] = ("the translation names Kafka for Pulsar's 2.969 (studies.md [ambig]); 2.969 is Test 1's "
                          "average publish latency in §002.4's table, 6.652 Test 10's")
    return out


def claims(rows: list[dict], pub: list[dict]) -> list[dict]:
    """The main claim of §002.4 per system, durability and metric: on the study's printed numbers, then on each
    testbed with E002-LAT runs (their partition counts as the study names them; a run's real count is in the runs
    table), judged over each cell's repetitions (analysis.intervals)."""
    def printed(system, mode, metric):
        return {p["partitions"]: p["value"] for p in pub if (p["system"], p["mode"], p["metric"]) == (system, mode, metric)}

    out = _claim_rows(STUDY_SCALE, STUDY_TESTBED, printed,
                      lambda s, m: "tests " + ", ".join(str(p["test"]) for p in pub if (p["system"], p["mode"]) == (s, m)
                                                          and p["metric"] == "publish_p99") + " of §002.4")

    def printed_value(system, mode, metric, partitions):
        return printed(system, mode, metric).get(partitions)

    out += _number_rows(STUDY_SCALE, STUDY_TESTBED, printed_value)
    for tb in sorted({r["testbed"].removesuffix(" (suspect)") for r in rows}):
        at = [r for r in rows if r["testbed"].removesuffix(" (suspect)") == tb]  # suspect runs judged with the rest
        rates = sorted({r["offered_msgps"] for r in at if r["offered_msgps"]})
        suspect = sum(1 for r in at if r["testbed"].endswith(" (suspect)"))
        judged = (f"{tb}: " + ", ".join(f"{r}" for r in sorted({r['ran_with_partitions'] for r in at}))
                  + " partition(s) at " + (", ".join(f"{x:,.0f}" for x in rates) or "?") + " msg/s"
                  + (f"; {suspect} suspect run(s) included" if suspect else ""))

        def measured(system, mode, metric, at=at):
            col = "publish_p99_ms" if metric == "publish_p99" else "e2e_avg_ms"
            vals = {}
            for r in at:
                if (r["system"], r["mode"]) == (system, mode) and r[col] is not None:
                    vals.setdefault(r["partitions"], []).append(r[col])
            return vals  # every repetition of each partition count

        out += _claim_rows(tb, judged, measured, lambda s, m, at=at: f"{sum(1 for r in at if (r['system'], r['mode']) == (s, m))} run(s)")

        def measured_value(system, mode, metric, partitions, at=at):
            col = {"publish_p99": "publish_p99_ms", "publish_avg": "publish_avg_ms"}[metric]
            return [r[col] for r in at if (r["system"], r["mode"], r["partitions"]) == (system, mode, partitions)
                    and r[col] is not None]  # every repetition

        out += _number_rows(tb, judged, measured_value)
    if not rows:
        out += _claim_rows("local", "no E002-LAT run on any testbed yet", lambda *a: {},
                           lambda s, m: "env/shell snakemake --profile local all runs E002-LAT on 1 partition")
        for r in out[-8:]:
            r["verdict"] = ("needs aws scale: partition sweep (the local scale runs 1 partition only; no run here "
                            "yet either)")
        for r in _number_rows("local", "no E002-LAT run on any testbed yet", lambda *a: None):
            out.append({**r, "verdict": "not measured at this scale: no E002-LAT run yet (the local and aws scales "
                                        "run it)"})
    return out


# ---------------------------------------------------------------- figure

def points(rows: list[dict], pub: list[dict]) -> list[dict]:
    pts = []
    for p in pub:
        if p["metric"] in METRICS:
            pts.append({"metric": METRICS[p["metric"]], "mode": p["mode"], "partitions": p["partitions"], "ms": p["value"],
                        "series": f"{SYSTEM_NAME[p['system']]} {p['version'].split('-')[1]} (study 002)",
                        "system": SYSTEM_NAME[p["system"]], "kind": "published"})
    for r in rows:
        for metric, col in (("publish_p99", "publish_p99_ms"), ("e2e_avg", "e2e_avg_ms")):
            if r[col]:
                pts.append({"metric": METRICS[metric], "mode": r["mode"], "partitions": r["partitions"], "ms": r[col],
                            "series": f"{SYSTEM_NAME.get(r['system'], r['system'])} ({r['testbed']})",
                            "system": SYSTEM_NAME.get(r["system"], r["system"]), "kind": "this testbed"})
    return pts


def figure(rows: list[dict], pub: list[dict]):
    pts = points(rows, pub)
    if not pts:
        chart = _empty("no study-002 numbers")
    else:
        names = sorted({p["series"] for p in pts})
        color = alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=2),
                          scale=alt.Scale(domain=names, range=[
                              SERIES_COLOR.get(n.split(" ")[0], "#888888") if "study 002" in n else
                              {"Pulsar": "#3f3a80", "Kafka": "#8c3a00"}.get(n.split(" ")[0], "#444444") for n in names]))
        panels = []
        for metric in METRICS.values():
            row = []
            for mode in ("flush", "no flush"):
                sub = [p for p in pts if p["metric"] == metric and p["mode"] == mode]
                base = alt.Chart(alt.Data(values=sub)).encode(
                    x=alt.X("partitions:Q", scale=alt.Scale(type="log", domain=[1, 16]), title="partitions",
                            axis=alt.Axis(values=[1, 6, 16])),
                    y=alt.Y("ms:Q", scale=alt.Scale(type="log"), title=f"{metric} (ms)"), color=color)
                line = base.transform_filter("datum.kind == 'published'").mark_line(point=True)
                local = base.transform_filter("datum.kind == 'this testbed'").mark_point(
                    shape="diamond", size=110, filled=True)
                title = f"{metric}, {mode}" + (" (comparison chart)" if (metric, mode) in (
                    ("average end to end", "no flush"), ("publish p99", "flush")) else "")
                row.append(alt.layer(line, local).properties(width=230, height=170, title=title))
            panels.append(alt.hconcat(*row))
        chart = alt.vconcat(*panels)
    testbeds = sorted({r["testbed"] for r in rows})
    caption = ("Study 002 (Kafka 2.3.0 vs Pulsar 2.4.0, 50 000 msg/s of 100 B): publish p99 and average end-to-end "
               "latency against partitions, flush and no flush. Lines: the study's printed whole-test values (its "
               "result tables, §002.4 of studies.md); the study's two comparison charts, \"Average end-to-end latency, "
               "6-partition, no flushing\" and \"99th percentile publishing latency, 6-partition, flushing\", plot these "
               "metrics over its 15 minutes, and their whole-test values are the 6-partition points of the panels "
               "marked \"comparison chart\" (the time series themselves are not transcribed). Diamonds: this "
               "testbed's E002-LAT runs (" + (", ".join(testbeds) if testbeds else "none yet")
               + "), placed at the partition count of the study's test they reproduce; their rate and partition count "
               "are scaled (see the runs table). Log axes.")
    alt_text = ("Four line charts in two rows (publish p99, average end to end) and two columns (flush, no flush) of "
                "latency in milliseconds against 1, 6 and 16 partitions, one line per system from the study's tables "
                "and diamond points for this testbed's runs.")
    return chart, caption, alt_text


# ---------------------------------------------------------------- figure: latency over time (§002.5, Tests 1/4/7/10)

# the study's per-test figures: (a) p99 publish latency and (b) average end-to-end latency against time. Per studies.csv
# metric: the panel's title and the OMB per-window array it draws (the study's printed whole-test value is the rule)
TS_PANELS = {"publish_p99": ("(a) p99 publish latency", "publishLatency99pct"),
             "e2e_avg": ("(b) average end-to-end latency", "endToEndLatencyAvg")}
# system x mode in the order of the study's 1-partition tests (1, 4, 7, 10), with its colour (darker = flush)
TS_SERIES = {("pulsar", "flush"): "#4b3f9e", ("pulsar", "no flush"): "#9b8fe0",
             ("kafka", "no flush"): "#f08a24", ("kafka", "flush"): "#a33f00"}
# what a line is: its legend label and dash
TS_KINDS = {"window": ("this testbed, per 10-s window", [1, 0]),
            "second": ("this testbed, per second (p99 publish only)", [2, 2]),
            "study": ("study 002, whole 15-min test", [7, 4])}
STUDY_SECONDS = 15 * 60  # §002.3: testDurationMinutes=15


def _tests(pub: list[dict]) -> dict:
    """(system, mode) -> the number of the study's 1-partition test."""
    return {(p["system"], p["mode"]): p["test"] for p in pub if p["partitions"] == 1}


def _ts_label(system: str, mode: str, tests: dict) -> str:
    name = f"{SYSTEM_NAME.get(system, system)} {mode}"
    return f"{name} (Test {tests[(system, mode)]})" if (system, mode) in tests else name


def per_second_p99(path, x: dict) -> list[tuple[float, float]]:
    """(t, p99 ms) of each second of the measured phase from the runner's x-streambench.timeSeries (t = seconds since
    the measured phase began, at the end of the second; a second without an acknowledgement has no value and is left
    out). No timeSeries: []. A malformed one is an InputError naming the file and the field."""
    ts = x.get("timeSeries")
    if ts is None:
        return []
    field = "x-streambench.timeSeries"
    if not isinstance(ts, dict):
        raise InputError(path, field, "not an object")
    arrays = {}
    for k in ("t", "phase", "publishLatencyP99Ms"):
        v = ts.get(k)
        if not isinstance(v, list):
            raise InputError(path, f"{field}.{k}", "missing or not an array")
        if arrays and len(v) != len(arrays["t"]):
            raise InputError(path, f"{field}.{k}", f"has {len(v)} elements but t has {len(arrays['t'])}")
        arrays[k] = v
    out = []
    for t, ph, v in zip(arrays["t"], arrays["phase"], arrays["publishLatencyP99Ms"]):
        if not isinstance(ph, str):
            raise InputError(path, f"{field}.phase", f"not a string: {ph!r}")
        t = omb._num(path, f"{field}.t", t, allow_negative=True)
        v = omb._num(path, f"{field}.publishLatencyP99Ms", v)
        if v > omb.MAX_PLAUSIBLE_MS:
                raise InputError(path, f"{field}.publishLatencyP99Ms",
                             "value above one day in an ms field (µs-scale data?)")
        if ph == "measure" and v > 0:
            out.append((t, v))
    return out


def timeseries_points(rows: list[dict], pub: list[dict]) -> tuple[list[dict], list[dict], list[dict]]:
    """The data of study002-timeseries: (lines, rules, runs) for this testbed's 1-partition E002-LAT runs (the 6- and
    16-partition tests' figures need their own runs, at the aws scale).

    lines: one point per OMB window of a run (kind "window": t_s = the window's end, (i + 1) x 10 s, and OMB's value
    for it, publishLatency99pct or endToEndLatencyAvg, as measured; a window without a sample, value 0, is left out)
    and, in the publish panel, one per second of the runner's time series (kind "second"). Each point: panel, series
    (system x mode, with the study's test number), system, mode, run (its file), testbed, kind, t_s, ms.
    rules: the study's printed whole-test value per panel and 1-partition test (kind "study"), drawn from t0 to t1
    (the runs' time axis; the study's 15 minutes without a run). runs: per run its file, testbed, windows and
    measured seconds (x-streambench.measurementSeconds, else its windows x 10 s)."""
    tests = _tests(pub)
    lines, runs_ = [], []
    for r in rows:
        if r["partitions"] != 1:
            continue
        o = omb.load(r["file"])
        x = o["x"] or {}
        series = _ts_label(r["system"], r["mode"], tests)
        base = {"series": series, "system": r["system"], "mode": r["mode"], "run": r["file"], "testbed": r["testbed"]}
        for metric, (panel, key) in TS_PANELS.items():
            for i, v in enumerate(o["windows"][key]):
                if v > 0:
                    lines.append({**base, "panel": panel, "kind": TS_KINDS["window"][0], "t_s": (i + 1) * WINDOW_S,
                                  "ms": v})
        for t, v in per_second_p99(r["file"], x):
            lines.append({**base, "panel": TS_PANELS["publish_p99"][0], "kind": TS_KINDS["second"][0], "t_s": t,
                          "ms": v})
        secs = x.get("measurementSeconds")
        if isinstance(secs, bool) or not isinstance(secs, (int, float)) or not secs > 0:
            secs = o["n_windows"] * WINDOW_S
        runs_.append({"file": r["file"], "testbed": r["testbed"], "windows": o["n_windows"], "seconds": float(secs),
                      "offered_msgps": r["offered_msgps"]})
    t1 = max((p["t_s"] for p in lines), default=float(STUDY_SECONDS))
    rules = [{"panel": TS_PANELS[p["metric"]][0], "series": _ts_label(p["system"], p["mode"], tests),
              "system": p["system"], "mode": p["mode"], "test": p["test"], "kind": TS_KINDS["study"][0],
              "ms": p["value"], "t0": 0.0, "t1": t1}
             for p in pub if p["partitions"] == 1 and p["metric"] in TS_PANELS]
    return lines, rules, runs_


def _span(values, fmt="{:.0f}") -> str:
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return lo if lo == hi else f"{lo}–{hi}"


def figure_timeseries(rows: list[dict], pub: list[dict]):
    """Study 002 §002.5's per-test figures (a) and (b) for Tests 1, 4, 7 and 10: one panel per quantity, one line per
    run of this testbed's 1-partition E002-LAT runs coloured by system x mode, the study's printed whole-test values
    as dashed horizontal rules; without a run, the rules and a note in each panel."""
    lines, rules, runs_ = timeseries_points(rows, pub)
    tests = _tests(pub)
    color = alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=2, symbolStrokeWidth=2),
                      scale=alt.Scale(domain=[_ts_label(s, m, tests) for s, m in TS_SERIES],
                                      range=list(TS_SERIES.values())))
    kinds = [(label, d) for label, d in TS_KINDS.values() if any(p["kind"] == label for p in lines + rules)]
    dash = alt.StrokeDash("kind:N", title=None,
                          scale=alt.Scale(domain=[k for k, _ in kinds], range=[d for _, d in kinds]),
                          legend=alt.Legend(orient="bottom", columns=1, symbolType="stroke", symbolSize=400,
                                            symbolStrokeWidth=1.5, symbolStrokeColor="#444444"))
    t1 = max((r["t1"] for r in rules), default=max((p["t_s"] for p in lines), default=float(STUDY_SECONDS)))
    x_title, x_scale = "time in the measured phase (s)", alt.Scale(domain=[0, t1], nice=False)
    x = alt.X("t_s:Q", title=x_title, scale=x_scale)
    y = alt.Y("ms:Q", scale=alt.Scale(type="log"), axis=log_axis(), title="latency (ms)")
    panels = []
    for panel, _ in TS_PANELS.values():
        layers = []
        sub = [r for r in rules if r["panel"] == panel]
        if sub:
            layers.append(alt.Chart(alt.Data(values=sub)).mark_rule(strokeWidth=1.5).encode(
                x=alt.X("t0:Q", title=x_title, scale=x_scale), x2="t1:Q", y=y, color=color, strokeDash=dash))
        for kind, width in (("second", 1.0), ("window", 2.0)):
            sub = [p for p in lines if p["panel"] == panel and p["kind"] == TS_KINDS[kind][0]]
            if sub:
                data = alt.Chart(alt.Data(values=sub))
                layers.append(data.mark_line(strokeWidth=width).encode(x=x, y=y, color=color, strokeDash=dash,
                                                                       detail="run:N"))
                if kind == "window":  # a run of one window is a point, which a line alone would not draw
                    layers.append(data.mark_point(filled=True, size=45, opacity=1).encode(x=x, y=y, color=color))
        if not layers:
            panels.append(_empty("no study-002 numbers and no E002-LAT run"))
            continue
        # without a run the note is the panel's subtitle, where no rule can run through it
        title = alt.TitleParams(panel, subtitle="no E002-LAT run of this testbed", subtitleColor="#555555",
                                subtitleFontStyle="italic") if not lines else panel
        panels.append(alt.layer(*layers).properties(width=220, height=170, title=title))
    chart = alt.hconcat(*panels)

    cap = ("Study 002's per-test figures over time for its 1-partition tests (§002.5; "
           + (", ".join(f"Test {tests[k]} {_ts_label(*k, {})}" for k in TS_SERIES if k in tests) or "none printed")
           + "; 50 000 msg/s of 100 B, one producer and one consumer): (a) p99 publish latency and (b) average "
           "end-to-end latency, log scale. Dashed rules: the study's printed whole-test value of each test (§002.4); "
           "it published no per-window data, so its own series are not redrawn. ")
    if runs_:
        rates = sorted({r["offered_msgps"] for r in runs_ if r["offered_msgps"]})
        testbeds = ", ".join(sorted({r["testbed"] for r in runs_}))
        cap += (f"Solid lines with points: this testbed's E002-LAT runs ({testbeds}), one line per run, OMB's value "
                "of each 10-s window as measured (never averaged)"
                + ("; dotted, in (a): the runner's p99 of each second of the measured phase"
                   if any(p["kind"] == TS_KINDS["second"][0] for p in lines) else "")
                + f". Run length: this testbed's measured phases last {_span([r['seconds'] for r in runs_])} s "
                f"({_span([r['windows'] for r in runs_], '{}')} window(s) per run) at "
                + (f"{', '.join(f'{v:,.0f}' for v in rates)} msg/s offered" if rates else "an unrecorded offered rate")
                + f", against the study's {STUDY_SECONDS // 60} minutes at 50 000 msg/s")
        # the study's periodic effects (§002.4): a ~2 ms bump in Pulsar's end to end every ~90 s; a run shorter than
        # two such periods cannot show them
        cap += (": runs this short cannot show its periodic effects (Pulsar's end-to-end bump of about 2 ms every "
                "~90 s, Kafka's publish p99 spikes above 100 ms)." if max(r["seconds"] for r in runs_) < 2 * 90
                else ".")
    else:
        cap += ("No E002-LAT run of this testbed is present: the panels hold only the study's values and say so, "
                f"on a time axis of the study's {STUDY_SECONDS // 60} minutes. A local run would last seconds "
                f"(against the study's {STUDY_SECONDS // 60} minutes) at a scaled rate.")
    alt_text = ("Two line charts side by side, (a) p99 publish latency and (b) average end-to-end latency in "
                "milliseconds (log scale) against time in seconds, coloured by system and flush mode (study 002's "
                "1-partition tests): dashed horizontal rules for the study's whole-test values and "
                + (f"{len(runs_)} run(s) of this testbed, per 10-s window (and, in (a), per second)." if runs_
                   else "a note in each panel that no run of this testbed is present."))
    return chart, cap, alt_text


# ---------------------------------------------------------------- entry point

def study_main(argv, description: str, prefix: str, runs_fn, published_fn, claims_fn, run_cols, md_run_cols,
               md_claim_cols, builders: dict) -> int:
    """The command line of a study module (this one, study004): its runs and claims tables and its figures
    (builders: figure id -> function(rows, published) -> (chart, caption, alt text))."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--raw", type=Path, required=True)
    ap.add_argument("--reference", type=Path, required=True)
    ap.add_argument("--tables", type=Path)
    ap.add_argument("--figures", type=Path)
    ap.add_argument("--png-scale", type=float, default=2.0)
    ap.add_argument("--suspect", choices=("mark", "exclude"), default="mark",
                    help="runs workloads.run judged suspect: labelled '<testbed> (suspect)' or left out")
    a = ap.parse_args(argv)

    def body():
        if a.tables is None and a.figures is None:
            raise InputError("(command line)", "--tables/--figures", "name at least one output directory")
        rows = runs_fn(a.raw, a.suspect)
        pub = published_fn(a.reference)
        if a.tables is not None:
            write_tables(a.tables, prefix, run_cols, md_run_cols, rows, md_claim_cols, claims_fn(rows, pub))
        if a.figures is not None:
            for fid, build in builders.items():
                chart, caption, alt_text = build(rows, pub)
                save_chart(chart, fid, caption, alt_text, a.figures, a.png_scale)
    return cli(body)


def main(argv=None):
    return study_main(argv, __doc__.splitlines()[0], "study002", runs, published, claims, RUN_COLS, MD_RUN_COLUMNS,
                      MD_CLAIM_COLUMNS, {"study002-latency": figure, "study002-timeseries": figure_timeseries})


if __name__ == "__main__":
    sys.exit(main())
