"""Study 004 (StreamNative 2022, Pulsar 2.9.1 vs Kafka 3.0.0): maximum throughput, fixed-rate latency, catch-up.

python -m analysis.study004 --raw data/raw --reference data/reference/studies.csv --tables paper/tables \
    --figures paper/figures [--png-scale 2] [--suspect mark|exclude]

Reads this project's study-004 runs (E004-T1C1, -T1C2, -T2, -T3 of workloads/experiments.yaml, stock tuning, levels L1,
L2 and L2-bypass; any testbed under data/raw, labelled by analysis.labels) and the study's printed numbers
(data/reference/studies.csv, study 004, from §004.4 of studies.md), and writes
- paper/figures/study004-maxtput.{svg,png,pdf,json}: maximum throughput on one partition (the study's Figure 2) per
  configuration, the study's printed values beside this testbed's rate-search results;
- paper/figures/study004-latency.{svg,png,pdf,json}: publish latency percentiles at the fixed rate (the study's
  Figure 4), P99.99 included for this testbed's runs; the study's P99.99 values are in its Figure 4 only and are not
  transcribed in studies.md, so its points are the p99 and p99.9 it printed;
- paper/tables/study004-runs.{csv,md}: one row per run (the CSV names each run's file);
- paper/tables/study004-claims.{csv,md}: the five headlines and two T2 claims (the conclusion's p99 bounds, Kafka's
  printed p99 and p99.9), each with the comparison its sentence makes, judged on the study's own printed numbers and
  on every testbed, or saying what it needs ("needs aws scale: ...").
Configurations: Pulsar with journal = L1 (journal fsynced before the ack, 3/3/2), Pulsar without journal = L2-bypass,
Kafka (acks=all, page cache, no fsync) = L2; Pulsar L2 (journal kept, not fsynced) and Kafka L1 (flush every
message) are run here too and are not in the study ("here only").
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import altair as alt

from . import InputError, intervals as iv
from .figures import empty_chart as _empty
from .study002 import load_runs, study_main

FIGURE_IDS = ["study004-maxtput", "study004-latency"]
TABLE_IDS = ["study004-runs", "study004-claims"]
EXPERIMENTS = ("E004-T1C1", "E004-T1C2", "E004-T2", "E004-T3")
STUDY_SCALE = "study 004 (as printed)"
STUDY_TESTBED = "AWS 3 x i3en.6xlarge, 4 x m5n.8xlarge clients"
MIB = 1024 * 1024  # OMB's "MB/s" (bytes / 2^20), the unit of the study's charts
NO_JOURNAL, JOURNAL, KAFKA = "Pulsar, no journal", "Pulsar, journal", "Kafka"
# (system, level folder) -> configuration; the first three are the study's
CONFIG = {("pulsar", "L2-bypass"): NO_JOURNAL, ("pulsar", "L1"): JOURNAL, ("kafka", "L2"): KAFKA,
          ("pulsar", "L2"): "Pulsar, journal, no fsync (here only)",
          ("kafka", "L1"): "Kafka, flush (here only)"}
CONFIG_ORDER = [NO_JOURNAL, JOURNAL, KAFKA, CONFIG[("pulsar", "L2")], CONFIG[("kafka", "L1")]]
COLOR = {NO_JOURNAL: "#7570b3", JOURNAL: "#3f3a80", KAFKA: "#d95f02", CONFIG[("pulsar", "L2")]: "#a6a2d6",
         CONFIG[("kafka", "L1")]: "#8c3a00"}
MIN_P9999_SAMPLES = 10_000  # a P99.99 needs at least this many samples to be more than the run's maximum
MIN_P999_SAMPLES = 1_000  # and a P99.9 this many
# the T2 conclusion: p99 "<1.6 ms without journal, <8 ms with journal at 500 MB/s" (studies.md §004.4)
T2_P99_BOUND = {NO_JOURNAL: 1.6, JOURNAL: 8.0}
APPROX = 0.20  # a "~" ratio holds within +/-20 % of the printed size
PERCENTILES = [("p50", 50), ("p99", 99), ("p99.9", 99.9), ("p99.99", 99.99), ("max", 100)]
# why an experiment runs only at the aws scale (workloads/experiments.yaml, the local profile's description)
AWS_ONLY = {
    "E004-T1C2": "E004-T1C2 (100 partitions, 2M msg/s offered) runs only at the aws scale: at the local scale its rate "
                 "scales onto the same 5 000 msg/s cap as E004-T2, where no system reaches its maximum",
    "E004-T3": "E004-T3 (catch-up of a 512 GB backlog, larger than RAM) runs only at the aws scale: at the local scale "
               "it scales onto study 000's catch-up test (E000-CU)",
}
RUN_COLS = ["testbed", "experiment", "configuration", "system", "level", "partitions", "ran_with_partitions",
            "offered_msgps", "achieved_msgps", "achieved_mibps", "ceiling_reached", "publish_p50_ms", "publish_p99_ms",
            "publish_p99_9_ms", "publish_p99_99_ms", "publish_max_ms", "publish_samples", "drain_msgps",
            "chase_time_s", "lost", "file"]
# the paper's tables (header, key, relative width); the CSVs keep every column
MD_RUN_COLUMNS = [("testbed", "testbed", 6), ("experiment", "experiment", 8), ("configuration", "configuration", 10),
                  ("ran with partitions", "ran_with_partitions", 5), ("offered msg/s", "offered_msgps", 6),
                  ("achieved MB/s", "achieved_mibps", 6), ("at ceiling", "ceiling_reached", 5),
                  ("publish p50", "publish_p50_ms", 5), ("publish p99", "publish_p99_ms", 5),
                  ("publish p99.9", "publish_p99_9_ms", 5), ("publish p99.99", "publish_p99_99_ms", 5),
                  ("publish max", "publish_max_ms", 5), ("drain msg/s", "drain_msgps", 6), ("lost", "lost", 4)]
MD_CLAIM_COLUMNS = [("headline", "headline", 7), ("comparison", "comparison", 12), ("scale", "scale", 5),
                    ("this testbed", "this_testbed", 8), ("n", "n", 2), ("interval", "interval", 8),
                    ("verdict", "verdict", 12)]


# ---------------------------------------------------------------- runs

def runs(raw: Path, suspect: str = "mark") -> list[dict]:
    rows = []
    for r in load_runs(raw, EXPERIMENTS, suspect):
        cfg = CONFIG.get((r["system"], r["level"]))
        if cfg is None:
            continue
        rd = r["rate_discovery"] or {}
        bl = r["backlog"] or {}
        ach = r["achieved_msgps"]
        rows.append({**r, "configuration": cfg,
                     "achieved_mibps": None if ach is None else round(ach * r["message_bytes"] / MIB, 2),
                     "ceiling_reached": bool(rd.get("ceilingReached")) if r["rate_discovery"] is not None else None,
                     "publish_samples": r["publish_count"],
                     "drain_msgps": bl.get("drainRateMsgs"), "chase_time_s": bl.get("chaseTimeSeconds")})
    order = {c: i for i, c in enumerate(CONFIG_ORDER)}
    return sorted(rows, key=lambda r: (r["testbed"], r["experiment"], order[r["configuration"]], r["file"]))


# ---------------------------------------------------------------- the study's printed numbers

def _config_of(row: dict, where: str) -> str:
    system, cfg = row["system"].split("-")[0], row["config"]
    if system == "kafka" and cfg == "default":
        return KAFKA
    if system == "pulsar" and cfg.startswith("no-journal"):
        return NO_JOURNAL
    if system == "pulsar" and cfg.startswith("journal"):
        return JOURNAL
    if system == "pulsar" and cfg == "unspecified":
        return "Pulsar (variant not stated)"
    if system == "pulsar-vs-kafka":
        return "Pulsar vs Kafka"
    raise InputError(where, "config", f"{row['system']} / {row['config']!r}: not a study-004 configuration")


def published(reference: Path) -> list[dict]:
    """Study 004's rows of the reference CSV: experiment, configuration, metric, value, unit, assumed (the study did
    not say which Pulsar variant a value is), source. A row with a value that is not a number is one error naming it."""
    out = []
    with open(reference, newline="") as fh:
        for n, r in enumerate(csv.DictReader(fh), start=2):
            if r["study"] != "004":
                continue
            where = f"{reference}:{n}"
            try:
                value = float(r["value"])
            except ValueError:
                raise InputError(where, "value", f"{r['value']!r} is not a number") from None
            out.append({"experiment": r["experiment"], "configuration": _config_of(r, where), "metric": r["metric"],
                        "value": value, "unit": r["unit"], "assumed": "(assumed)" in r["config"],
                        "source": r.get("source", "")})
    return out


def printed(pub: list[dict], experiment: str, configuration: str, metric: str) -> float | None:
    return next((p["value"] for p in pub if (p["experiment"], p["configuration"], p["metric"]) ==
                 (experiment, configuration, metric)), None)


# ---------------------------------------------------------------- verdicts

def ratio_verdict(ratio: float, target: float, approx: bool = False, bound: str = "") -> str:
    """A claim "A is <target>x B" on the measured ratio A/B. Exact: holds at or above the target. Approximate ("~"):
    holds within +/-APPROX of it (above: holds, exceeded). Otherwise the direction alone (A above B) or the opposite.
    bound "lower": the ratio is a lower bound (A's maximum was capped), "upper" the reverse."""
    lo, hi = target * (1 - APPROX), target * (1 + APPROX)
    if bound == "lower" and ratio < (lo if approx else target):
        return f"not separable at this scale: the ratio is at least {ratio:.2f}x (a maximum was capped by the rate search)"
    if bound == "upper" and ratio > 1:
        return f"not separable at this scale: the ratio is at most {ratio:.2f}x (a maximum was capped by the rate search)"
    if approx and lo <= ratio <= hi:
        return f"holds ({ratio:.2f}x, within {APPROX:.0%} of {target:g}x)"
    if ratio >= (hi if approx else target):
        return f"holds ({ratio:.2f}x{', exceeds ' + format(target, 'g') + 'x' if approx else ''}" + \
               (", lower bound" if bound == "lower" else "") + ")"
    if ratio > 1:
        return f"differs: direction holds, size does not ({ratio:.2f}x, claimed {'~' if approx else ''}{target:g}x)"
    return f"differs: opposite direction ({ratio:.2f}x)"


def _row(cid, headline, comparison, printed_, scale, judged_at, value, verdict, note="", n=None, interval=None):
    """One claims row; n: the fewest repetitions of a cell it judged (1 for the study's printed numbers), interval:
    the judged value's median [min–max] (analysis.intervals)."""
    return {"claim_id": cid, "headline": headline, "comparison": comparison, "printed": printed_, "scale": scale,
            "judged_at": judged_at, "this_testbed": value, "n": n, "interval": interval, "verdict": verdict,
            "note": note}


def base_testbed(testbed: str) -> str:
    """'local (suspect)' -> 'local': a suspect run is judged with its testbed's others (and says so)."""
    return testbed.removesuffix(" (suspect)")


def _pick(rows, testbed, experiment, configuration):
    """The runs of one configuration on one testbed (all repetitions, suspect ones included)."""
    return [r for r in rows if base_testbed(r["testbed"]) == testbed and r["experiment"] == experiment
            and r["configuration"] == configuration]


def _missing(testbed: str, experiment: str, what: str) -> str:
    if experiment in AWS_ONLY and not testbed.startswith("aws"):
        return f"needs aws scale: {AWS_ONLY[experiment]}"
    return f"not measured at this scale: no {experiment} run of {what} on {testbed}"


def _shape(rs: list[dict]) -> str:
    r = rs[0]
    rate = "rate search" if r["offered_msgps"] is None else f"{r['offered_msgps']:,.0f} msg/s"
    suspect = sum(1 for x in rs if x["testbed"].endswith(" (suspect)"))
    return f"{r['ran_with_partitions']} partition(s), {rate}" + (f"; {suspect} suspect run(s) included" if suspect else "")


HEADLINES = {
    "004-H1": "2.5x maximum throughput compared to Kafka",
    "004-H2": "100x lower single-digit publish latency at P99.99",
    "004-H3": "1.5x faster historical read rate",
    "004-H4": "32 % less hardware",
    "004-H5": "drain the backlog ~2.5x faster",
    "004-H6": "p99 <1.6 ms without journal, <8 ms with journal at 500 MB/s",
    "004-H7": "T2: Kafka publish p99 3.46 ms, p99.9 54.56 ms",
}


def claims(rows: list[dict], pub: list[dict]) -> list[dict]:
    """Each headline (HEADLINES) on the study's printed numbers, then on every testbed with a study-004 run (or one
    row saying what it needs when no testbed has any)."""
    out = []
    pj = printed(pub, "max_tput_1part_4p1c", NO_JOURNAL, "publish_tput")
    k1 = printed(pub, "max_tput_1part_4p1c", KAFKA, "publish_tput")
    p100 = printed(pub, "max_tput_100part_4p4c", NO_JOURNAL, "publish_tput")
    k100 = printed(pub, "max_tput_100part_4p4c", KAFKA, "publish_tput")
    pr = printed(pub, "catchup_512GB_100part", "Pulsar (variant not stated)", "read_tput")
    kr = printed(pub, "catchup_512GB_100part", KAFKA, "read_tput")
    drain = printed(pub, "catchup_512GB_100part", "Pulsar vs Kafka", "drain_speedup") or 2.5
    t2 = {c: printed(pub, "lat_500MBps_100part", c, "publish_p99") for c in (NO_JOURNAL, JOURNAL, KAFKA)}
    k999 = printed(pub, "lat_500MBps_100part", KAFKA, "publish_p99.9")
    spec = {
        "004-H1": (f"{NO_JOURNAL} / {KAFKA} maximum throughput, 1 partition, 4 producers / 1 consumer (E004-T1C1): "
                   "ratio >= 2.5", f"{pj:g} / {k1:g} MB/s (Figure 2; which Pulsar value is the no-journal one is "
                   "assumed [ambig])" if pj and k1 else "n/a"),
        "004-H2": (f"{KAFKA} / {NO_JOURNAL} publish latency P99.99 at the fixed rate (E004-T2): ratio >= 100, and "
                   "Pulsar's below 10 ms", "100x (P99.99 values in Figure 4 only; not transcribed in studies.md)"),
        "004-H3": ("Pulsar / Kafka historical (catch-up) read rate (E004-T3): ratio >= 1.5",
                   f"{pr:g} / {kr:g} GB/s (T3; the study also says ~2.5x and 60 % more [ambig])" if pr and kr else "n/a"),
        "004-H4": (f"1 - {KAFKA} / {NO_JOURNAL} maximum throughput, 100 partitions (E004-T1C2): >= 32 %",
                   f"1 - {k100:g} / {p100:g} MB/s (Figure 3)" if p100 and k100 else "n/a"),
        "004-H5": ("Kafka / Pulsar chase time of the backlog (E004-T3): ratio ~2.5 (within "
                   f"{APPROX:.0%})", f"~{drain:g}x (T3 analysis; chase times in Figure 5b, not transcribed)"),
        "004-H6": (f"publish p99 at the fixed rate (E004-T2): {NO_JOURNAL} below {T2_P99_BOUND[NO_JOURNAL]:g} ms, "
                   f"{JOURNAL} below {T2_P99_BOUND[JOURNAL]:g} ms",
                   f"< {T2_P99_BOUND[NO_JOURNAL]:g} / < {T2_P99_BOUND[JOURNAL]:g} ms (conclusion; the T2 results: "
                   f"{t2[NO_JOURNAL]:g} / {t2[JOURNAL]:g} ms)" if t2[NO_JOURNAL] and t2[JOURNAL] else "< 1.6 / < 8 ms"),
        "004-H7": (f"{KAFKA} publish p99 and p99.9 at the fixed rate (E004-T2): each within {APPROX:.0%} of the printed "
                   "value", f"{t2[KAFKA]:g} / {k999:g} ms" if t2[KAFKA] and k999 else "n/a"),
    }

    def row(cid, scale, judged_at, value, verdict, note="", n=None, interval=None):
        # the study's printed numbers: one value per cell (n = 1, no interval)
        if scale == STUDY_SCALE and value is not None:
            n = 1
        return _row(cid, HEADLINES[cid], spec[cid][0], spec[cid][1], scale, judged_at, value, verdict, note, n,
                    interval)

    # the study's own numbers
    s = STUDY_SCALE
    out.append(row("004-H1", s, STUDY_TESTBED, f"{pj / k1:.2f}x" if pj and k1 else None,
                   ratio_verdict(pj / k1, 2.5) if pj and k1 else "not re-derivable: a value is missing"))
    out.append(row("004-H2", s, STUDY_TESTBED, None, "not re-derivable: the P99.99 values are in Figure 4 only "
                   "(studies.md transcribes none)"))
    out.append(row("004-H3", s, STUDY_TESTBED, f"{pr / kr:.2f}x" if pr and kr else None,
                   ratio_verdict(pr / kr, 1.5) if pr and kr else "not re-derivable: a value is missing"))
    out.append(row("004-H4", s, STUDY_TESTBED, f"{1 - k100 / p100:.1%}" if p100 and k100 else None,
                   ("holds" if 1 - k100 / p100 >= 0.32 - 0.005 else "differs") if p100 and k100 else
                   "not re-derivable: a value is missing", "32 % is the rounded 1 - 1087 / 1600 = 32.1 %"))
    out.append(row("004-H5", s, STUDY_TESTBED, None, "not re-derivable: the chase times are in Figure 5b only "
                   "(studies.md transcribes none)"))
    if t2[NO_JOURNAL] and t2[JOURNAL]:
        out.append(row("004-H6", s, STUDY_TESTBED, f"{t2[NO_JOURNAL]:g} / {t2[JOURNAL]:g} ms",
                       p99_bound_verdict({NO_JOURNAL: t2[NO_JOURNAL], JOURNAL: t2[JOURNAL]})))
    else:
        out.append(row("004-H6", s, STUDY_TESTBED, None, "not re-derivable: a value is missing"))
    out.append(row("004-H7", s, STUDY_TESTBED, None, "not re-derivable: the values are the study's measurement and it "
                   "published no result files"))

    testbeds = sorted({base_testbed(r["testbed"]) for r in rows})
    if not testbeds:
        for cid, exp in (("004-H1", "E004-T1C1"), ("004-H2", "E004-T2"), ("004-H3", "E004-T3"),
                         ("004-H4", "E004-T1C2"), ("004-H5", "E004-T3"), ("004-H6", "E004-T2"), ("004-H7", "E004-T2")):
            v = (f"needs aws scale: {AWS_ONLY[exp]}" if exp in AWS_ONLY else
                 f"not measured at this scale: no {exp} run yet (the local and aws scales run it)")
            out.append(row(cid, "local", "no study-004 run on any testbed yet", None, v))
        return out
    for tb in testbeds:
        out += _testbed_claims(rows, tb, row, (t2[KAFKA], k999) if t2[KAFKA] and k999 else None)
    return out


def _cell(rs: list[dict], col: str):
    """The repetitions of one configuration's column as an interval (analysis.intervals), None without a value."""
    return iv.of(r[col] for r in rs)


def _positive(*cells) -> bool:
    return all(c is not None and c.median > 0 for c in cells)


def ratio_judgement(a, b, target: float, approx: bool = False, bound: str = "") -> tuple[str, str, int]:
    """(verdict, interval text, n) of "A is <target>x B" over the two cells' repetitions: the ratio's interval
    (analysis.intervals.ratio: A's low over B's high … A's high over B's low) holds when it lies at or above the
    target (approx: at or above target - APPROX), differs when below, and is not separable at this scale when it
    straddles it. The texts are ratio_verdict's on the medians' ratio. bound as in ratio_verdict: "lower" (A's
    maximum capped: a ratio below the target is not separable), "upper" (B's capped: only a ratio wholly at or
    below 1 differs)."""
    r = a.median / b.median
    lo, hi = iv.ratio(a, b)
    n = iv.smallest_n(a, b)
    text = iv.range_text(r, lo, hi, ".2f", "x", n)
    thr = target * (1 - APPROX) if approx else target
    if bound == "lower":
        if lo >= thr:
            return ratio_verdict(r, target, approx, bound), text, n
        return (ratio_verdict(r, target, approx, bound) if r < thr else iv.not_separable(
            f"the ratio is at least {lo:.2f}x to {hi:.2f}x (a maximum was capped by the rate search)")), text, n
    if bound == "upper":
        if hi <= 1:
            return ratio_verdict(r, target, approx, bound), text, n
        return (ratio_verdict(r, target, approx, bound) if r > 1 else iv.not_separable(
            f"the ratio is at most {lo:.2f}x to {hi:.2f}x (a maximum was capped by the rate search)")), text, n
    v = iv.judge((lo, hi), iv.above(thr))
    if v == iv.NOT_SEPARABLE:
        return iv.not_separable(f"the ratio lies between {lo:.2f}x and {hi:.2f}x (claimed "
                                f"{'~' if approx else ''}{target:g}x)"), text, n
    if v == iv.DIFFERS and iv.judge((lo, hi), iv.above(1.0, strict=True)) == iv.NOT_SEPARABLE:
        return (f"differs: size does not hold ({r:.2f}x, claimed {'~' if approx else ''}{target:g}x); the direction is "
                f"{iv.NOT_SEPARABLE} ({lo:.2f}x to {hi:.2f}x)"), text, n
    return ratio_verdict(r, target, approx), text, n


def _testbed_claims(rows, tb, row, kafka_t2) -> list[dict]:
    """One testbed's rows, each judged over the repetitions of its configurations (analysis.intervals; n and
    interval in the row, '(1 run)' on a verdict from one run); kafka_t2: Kafka's printed T2 (p99, p99.9) in ms, or
    None."""
    out = []

    def judged(cid, judged_at, value, verdict, n, interval, note=""):
        out.append(row(cid, tb, judged_at, value, iv.mark(verdict, n), note, n=n, interval=interval))

    # H1: maximum throughput on one partition (rate search; a maximum at the search's ceiling is a lower bound)
    a, b = _pick(rows, tb, "E004-T1C1", NO_JOURNAL), _pick(rows, tb, "E004-T1C1", KAFKA)
    ca, cb = _cell(a, "achieved_msgps"), _cell(b, "achieved_msgps")
    if _positive(ca, cb):
        va, vb = ca.median, cb.median
        capa, capb = any(r["ceiling_reached"] for r in a), any(r["ceiling_reached"] for r in b)
        bound = "both" if capa and capb else "lower" if capa else "upper" if capb else ""
        mb = a[0]["message_bytes"] / MIB
        shown = f"{va * mb:.1f} / {vb * mb:.1f} MB/s = {va / vb:.2f}x" + (" (ceiling reached)" if bound else "")
        v, text, n = ratio_judgement(ca, cb, 2.5, bound="" if bound == "both" else bound)
        if bound == "both":
            v = "not separable at this scale: both systems reached the rate search's ceiling"
        judged("004-H1", f"{tb}: {_shape(a + b)}", shown, v, n, text, f"{len(a)} + {len(b)} run(s)")
    else:
        out.append(row("004-H1", tb, "", None, _missing(tb, "E004-T1C1", f"{NO_JOURNAL} and {KAFKA}")))
    # H2: P99.99 of publish latency at the fixed rate
    a, b = _pick(rows, tb, "E004-T2", NO_JOURNAL), _pick(rows, tb, "E004-T2", KAFKA)
    if a and b:
        n_samples = min((r["publish_samples"] or 0) for r in a + b)
        pa, pb = _cell(a, "publish_p99_99_ms"), _cell(b, "publish_p99_99_ms")
        if n_samples < MIN_P9999_SAMPLES or not _positive(pa, pb):
            out.append(row("004-H2", tb, f"{tb}: {_shape(a + b)}", None,
                           f"not measured at this scale: {n_samples:,} publish samples in a run, fewer than the "
                           f"{MIN_P9999_SAMPLES:,} a P99.99 needs"))
        else:
            shown = f"Kafka {pb.median:.2f} ms / Pulsar {pa.median:.2f} ms = {pb.median / pa.median:.1f}x"
            v, text, n = ratio_judgement(pb, pa, 100)
            single = iv.at_most(pa, 10.0, strict=True)  # and Pulsar's single-digit
            if v.startswith("holds") and single == iv.DIFFERS:
                v = f"differs: Pulsar's P99.99 is not single-digit ({pa.median:.1f} ms)"
            elif v.startswith("holds") and single == iv.NOT_SEPARABLE:
                v = iv.not_separable(f"Pulsar's P99.99 ({iv.span(pa.lo, pa.hi, '.1f')} ms) straddles 10 ms")
            judged("004-H2", f"{tb}: {_shape(a + b)} (the study: 100 partitions at 500 000 msg/s)", shown, v, n, text,
                   f"{n_samples:,} samples in the smallest run")
    else:
        out.append(row("004-H2", tb, "", None, _missing(tb, "E004-T2", f"{NO_JOURNAL} and {KAFKA}")))
    # H3 and H5: catch-up read rate and chase time (Pulsar: no journal if run, else with journal; the study does
    # not say which variant)
    pul = _pick(rows, tb, "E004-T3", NO_JOURNAL) or _pick(rows, tb, "E004-T3", JOURNAL)
    kaf = _pick(rows, tb, "E004-T3", KAFKA)
    ra, rb = _cell(pul, "drain_msgps"), _cell(kaf, "drain_msgps")
    if _positive(ra, rb):
        v, text, n = ratio_judgement(ra, rb, 1.5)
        judged("004-H3", f"{tb}: {_shape(pul + kaf)}, {pul[0]['configuration']}",
               f"{ra.median:,.0f} / {rb.median:,.0f} msg/s = {ra.median / rb.median:.2f}x", v, n, text)
    else:
        out.append(row("004-H3", tb, "", None, _missing(tb, "E004-T3", "Pulsar and Kafka with a drain rate")))
    ta, tk = _cell(pul, "chase_time_s"), _cell(kaf, "chase_time_s")
    if _positive(ta, tk):
        v, text, n = ratio_judgement(tk, ta, 2.5, approx=True)
        judged("004-H5", f"{tb}: {_shape(pul + kaf)}, {pul[0]['configuration']}",
               f"{tk.median:.1f} s / {ta.median:.1f} s = {tk.median / ta.median:.2f}x", v, n, text)
    else:
        out.append(row("004-H5", tb, "", None, _missing(tb, "E004-T3", "Pulsar and Kafka with a chase time")))
    # H4: the 100-partition maxima; a run that kept up with the offered rate has not shown its maximum
    a, b = _pick(rows, tb, "E004-T1C2", NO_JOURNAL), _pick(rows, tb, "E004-T1C2", KAFKA)
    ca, cb = _cell(a, "achieved_msgps"), _cell(b, "achieved_msgps")
    if _positive(ca, cb):
        kept = [r["configuration"] for r in a + b if r["offered_msgps"] and r["achieved_msgps"] >= 0.97 * r["offered_msgps"]]
        less = 1 - cb.median / ca.median
        lo, hi = iv.ratio(cb, ca)  # Kafka / Pulsar; "less hardware" = 1 - it
        n = iv.smallest_n(ca, cb)
        shown = f"1 - {cb.median:,.0f} / {ca.median:,.0f} msg/s = {less:.1%}"
        if kept:
            v = f"not separable at this scale: {' and '.join(sorted(set(kept)))} kept up with the offered rate"
        else:
            cat = iv.judge((lo, hi), iv.below(1 - (0.32 - 0.005)))
            if cat == iv.HOLDS:
                v = "holds"
            elif cat == iv.NOT_SEPARABLE:
                v = iv.not_separable(f"1 - Kafka / Pulsar lies between {1 - hi:.1%} and {1 - lo:.1%} (claimed 32 %)")
            else:
                v = f"differs: {less:.1%} less" if less > 0 else f"differs: opposite direction ({-less:.1%} more)"
        judged("004-H4", f"{tb}: {_shape(a + b)}", shown, v, n, iv.range_text(less, 1 - hi, 1 - lo, ".1%", "", n))
    else:
        out.append(row("004-H4", tb, "", None, _missing(tb, "E004-T1C2", f"{NO_JOURNAL} and {KAFKA}")))
    # H6: the conclusion's p99 bounds at the fixed rate, both Pulsar configurations
    a, b = _pick(rows, tb, "E004-T2", NO_JOURNAL), _pick(rows, tb, "E004-T2", JOURNAL)
    pa, pb = _cell(a, "publish_p99_ms"), _cell(b, "publish_p99_ms")
    if _positive(pa, pb):
        n = iv.smallest_n(pa, pb)
        judged("004-H6", f"{tb}: {_shape(a + b)} (the study: 100 partitions at 500 000 msg/s)",
               f"{pa.median:.2f} / {pb.median:.2f} ms", p99_bound_verdict({NO_JOURNAL: pa, JOURNAL: pb}), n,
               f"{pa.text('.2f')} / {pb.text('.2f')} ms")
    else:
        out.append(row("004-H6", tb, "", None, _missing(tb, "E004-T2", f"{NO_JOURNAL} and {JOURNAL}")))
    # H7: Kafka's printed p99 and p99.9 at the fixed rate
    k = _pick(rows, tb, "E004-T2", KAFKA)
    k99, k999 = _cell(k, "publish_p99_ms"), _cell(k, "publish_p99_9_ms")
    if k and _positive(k99, k999):
        n_samples = min((r["publish_samples"] or 0) for r in k)
        n = iv.smallest_n(k99, k999)
        shown = f"p99 {k99.median:.2f} ms, p99.9 {k999.median:.2f} ms"
        text = f"p99 {k99.text('.2f')}, p99.9 {k999.text('.2f')} ms"
        note = f"{n_samples:,} samples in the smallest run; absolute latencies, of another machine at another rate"
        at = f"{tb}: {_shape(k)} (the study: 100 partitions at 500 000 msg/s)"
        if n_samples < MIN_P999_SAMPLES:
            out.append(row("004-H7", tb, at, shown, f"not measured at this scale: {n_samples:,} publish samples in a "
                           f"run, fewer than the {MIN_P999_SAMPLES:,} a P99.9 needs", note, n=n, interval=text))
        elif kafka_t2 is None:
            out.append(row("004-H7", tb, at, shown, "not judged: studies.csv has no printed T2 p99 / p99.9 for Kafka",
                           note, n=n, interval=text))
        else:
            judged("004-H7", at, shown, values_verdict({"p99": (k99, kafka_t2[0]), "p99.9": (k999, kafka_t2[1])}), n,
                   text, note)
    else:
        out.append(row("004-H7", tb, "", None, _missing(tb, "E004-T2", KAFKA)))
    return sorted(out, key=lambda r: r["claim_id"])


def _as_cell(v):
    """A value or an interval (analysis.intervals) as an interval."""
    return v if isinstance(v, iv.Interval) else iv.of([v])


def p99_bound_verdict(p99: dict) -> str:
    """The T2 conclusion on {configuration: publish p99 ms, or its repetitions' interval}: each below its bound
    (T2_P99_BOUND), judged over the interval (analysis.intervals.at_most): holds, differs, or not separable."""
    cells = {c: _as_cell(v) for c, v in p99.items()}
    cat = {c: iv.at_most(x, T2_P99_BOUND[c], strict=True) for c, x in cells.items()}
    v = iv.combine(cat.values())
    if v == iv.HOLDS:
        return "holds"
    if v == iv.DIFFERS:
        return "differs: " + "; ".join(f"{c} {cells[c].median:.2f} ms is not below {T2_P99_BOUND[c]:g}"
                                       for c in cells if cat[c] == iv.DIFFERS)
    return iv.not_separable("; ".join(f"{c} {iv.span(cells[c].judged[0], cells[c].judged[1], '.2f')} ms straddles "
                                      f"{T2_P99_BOUND[c]:g}" for c in cells if cat[c] == iv.NOT_SEPARABLE))


def values_verdict(values: dict) -> str:
    """Measured values against printed ones ({name: (measured value or interval, printed)}): holds when each lies
    within +/-APPROX (over the interval: analysis.intervals.within), differs when one lies wholly outside, else not
    separable."""
    cells = {k: (_as_cell(m), p) for k, (m, p) in values.items()}
    cat = {k: iv.within(m, p, APPROX) for k, (m, p) in cells.items()}
    v = iv.combine(cat.values())
    if v == iv.HOLDS:
        return f"holds (each within {APPROX:.0%})"
    if v == iv.DIFFERS:
        return "differs: " + ", ".join(f"{k} {(m.median - p) / p:+.0%}" for k, (m, p) in cells.items()
                                       if cat[k] == iv.DIFFERS)
    return iv.not_separable(", ".join(f"{k} {(m.judged[0] - p) / p:+.0%} to {(m.judged[1] - p) / p:+.0%}"
                                      for k, (m, p) in cells.items() if cat[k] == iv.NOT_SEPARABLE)
                            + f" of the printed value (within {APPROX:.0%} needed)")


# ---------------------------------------------------------------- figures

def _color(names):
    return alt.Color("configuration:N", title=None, legend=alt.Legend(orient="bottom", columns=1),
                     scale=alt.Scale(domain=names, range=[COLOR.get(n, "#888888") for n in names]))


def maxtput_points(rows, pub):
    pts = [{"configuration": p["configuration"], "mibps": p["value"], "source": "study 004 (printed)",
            "note": " (assumed variant)" if p["assumed"] else ""}
           for p in pub if p["experiment"] == "max_tput_1part_4p1c" and p["metric"] == "publish_tput"]
    for r in rows:
        if r["experiment"] == "E004-T1C1" and r["achieved_mibps"]:
            pts.append({"configuration": r["configuration"], "mibps": r["achieved_mibps"],
                        "source": f"{r['testbed']}" + (" (ceiling: lower bound)" if r["ceiling_reached"] else ""),
                        "note": ""})
    return pts


def fig_maxtput(rows, pub):
    pts = maxtput_points(rows, pub)
    if not pts:
        return _empty("no study-004 numbers"), "Study 004: no maximum throughput.", "No data."
    names = [c for c in CONFIG_ORDER if c in {p["configuration"] for p in pts}]
    sources = sorted({p["source"] for p in pts}, key=lambda s: (not s.startswith("study"), s))
    chart = alt.Chart(alt.Data(values=pts)).mark_point(size=120, filled=True).encode(
        y=alt.Y("configuration:N", sort=names, title=None, axis=alt.Axis(labelLimit=340)),
        x=alt.X("mibps:Q", scale=alt.Scale(type="log"), title="maximum publish throughput (MB/s, log scale)"),
        color=_color(names),
        shape=alt.Shape("source:N", title=None, sort=sources, legend=alt.Legend(orient="bottom", columns=1),
                        scale=alt.Scale(domain=sources, range=["square", "diamond", "triangle-up", "circle", "cross"][:len(sources)])),
    ).properties(width=300, height=34 * max(len(names), 3))
    caption = ("Study 004 Figure 2 (E004-T1C1): maximum sustainable publish throughput on one partition with 4 producers "
               "and 1 consumer, per configuration. Squares: the study's printed values (AWS i3en.6xlarge; which of "
               "700 and 580 MB/s belongs to Pulsar without journal is assumed, marked ambiguous in studies.md). Other marks: "
               "this testbed's rate-search results (the measured phase's achieved rate); a result at the search's "
               "ceiling is a lower bound and is marked so. The configurations marked \"here only\" (Pulsar's journal kept "
               "but not fsynced, L2; Kafka flushing every message, L1) are not in the study. MB/s as OMB reports it "
               "(1 MB = 1 048 576 bytes); log x axis.")
    return chart, caption, ("Dot plot of maximum publish throughput in MB/s on a log axis, one row per configuration "
                            "(Pulsar without journal, Pulsar with journal, Kafka, and two configurations run only here), "
                            "squares for the study's printed values and other marks for this testbed's runs.")


def latency_points(rows, pub):
    pts = []
    for p in pub:
        if p["experiment"] == "lat_500MBps_100part" and p["metric"].startswith("publish_p"):
            name = p["metric"].removeprefix("publish_")
            pts.append({"configuration": p["configuration"], "percentile": name, "ms": p["value"],
                        "source": "study 004 (printed)", "series": f"{p['configuration']} (study 004)"})
    for r in rows:
        if r["experiment"] != "E004-T2":
            continue
        for name, _ in PERCENTILES:
            v = r[f"publish_{name.replace('.', '_')}_ms"]
            if v:
                pts.append({"configuration": r["configuration"], "percentile": name, "ms": v, "source": r["testbed"],
                            "series": f"{r['configuration']} ({r['testbed']})"})
    return pts


def fig_latency(rows, pub):
    pts = latency_points(rows, pub)
    if not pts:
        return _empty("no study-004 numbers"), "Study 004: no latency.", "No data."
    order = [n for n, _ in PERCENTILES]
    names = [c for c in CONFIG_ORDER if c in {p["configuration"] for p in pts}]
    base = alt.Chart(alt.Data(values=pts)).encode(
        x=alt.X("percentile:O", sort=order, scale=alt.Scale(domain=order), title="publish latency percentile",
                axis=alt.Axis(labelAngle=0)),
        y=alt.Y("ms:Q", scale=alt.Scale(type="log"), title="publish latency (ms, log scale)"),
        color=_color(names), detail="series:N")
    ours = base.transform_filter("datum.source != 'study 004 (printed)'").mark_line(point=True)
    theirs = base.transform_filter("datum.source == 'study 004 (printed)'").mark_point(
        shape="square", size=110, filled=True, opacity=0.85)
    chart = alt.layer(ours, theirs).properties(width=400, height=240)
    tbs = sorted({r["testbed"] for r in rows if r["experiment"] == "E004-T2"})
    caption = ("Study 004 Figure 4 (E004-T2): publish latency percentiles at the fixed rate (the study: 500 000 msg/s "
               "of 1 KB on 100 partitions). Squares: the values the study printed, p99 for each configuration and "
               "p99.9 for Kafka; its P99.99 values, behind the \"100x lower at P99.99\" headline, appear only in its "
               "Figure 4 and are not transcribed in studies.md, so no square sits at p99.99. Lines: this testbed's "
               "runs (" + (", ".join(tbs) if tbs else "none yet") + "; their partitions and rate are scaled, see the "
               "runs table), percentiles of each run's whole-run HdrHistogram, P99.99 included. Log y axis.")
    return chart, caption, ("Line chart of publish latency in milliseconds (log scale) at percentiles p50 to max, one "
                            "line per configuration of this testbed, with square markers for the study's printed p99 "
                            "and p99.9 values.")


BUILDERS = {"study004-maxtput": fig_maxtput, "study004-latency": fig_latency}
assert list(BUILDERS) == FIGURE_IDS


# ---------------------------------------------------------------- entry point

def main(argv=None):
    return study_main(argv, __doc__.splitlines()[0], "study004", runs, published, claims, RUN_COLS, MD_RUN_COLUMNS,
                      MD_CLAIM_COLUMNS, BUILDERS)


if __name__ == "__main__":
    sys.exit(main())
