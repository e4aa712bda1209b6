"""Re-derive study 000's headline numbers from its published raw files; verdict beside each printed number.

Inputs: the derived `runs` and `stats` tables, data/reference/studies.csv (§(c) of studies.md) and
analysis/published/study000-tables.csv (Tables 2-2 … 2-16 of §000.6, every statistic, transcribed).
"""
from __future__ import annotations

import csv
import math
import re

import polars as pl

from . import stats as st

TABLES_CSV = "analysis/published/study000-tables.csv"
APPROX_TOL_PCT = 5.0
# the tables whose e2e p99 column study 000 repeats in its summary Table 1-2 (1 and 10 subscriptions)
ALSO_TABLE_1_2 = ("2-3", "2-5", "2-8", "2-10")
STAT_COL = {"avg": "avg_ms", "p50": "p50_ms", "p90": "p90_ms", "p99": "p99_ms", "p99.9": "p99_9_ms"}

# [ambig] items of studies.md, by claim key prefix -> note
AMBIG = {
    ("Table 1-1", "kafka", "L1", 100): "Table 1-1 says 420 MB/s; the MT1 prose says 600 → ~420 (studies.md [ambig])",
    ("2-15", "pulsar", 100): "Table 2-15's pulsar-100 row differs from Table 2-4's pulsar-ack-1 row (studies.md [ambig])",
    ("1-3", "pulsar", "sync", 2, 10000): "prose says ~50 ms, Table 1-3 says 15.78 (studies.md [ambig])",
    ("catchup",): "ack level of the catch-up runs not reported; 3.5× (highlights) vs 75 % (body) (studies.md [ambig])",
    ("mixed", "async"): "Table 1-4 does not say which Pulsar async variant (studies.md [ambig])",
}


def printed_decimals(s: str) -> int:
    s = s.strip()
    return len(s.split(".")[1]) if "." in s else 0


def verdict(printed: str, derived, approx: bool, tol_pct: float | None = None) -> tuple[str, float | None]:
    """('matches …' | 'differs by x%' | 'no raw data', diff_pct)."""
    if derived is None or (isinstance(derived, float) and math.isnan(derived)):
        return "no raw data", None
    p = float(printed)
    diff = (derived - p) / p * 100 if p else None
    d = printed_decimals(printed)
    q = 10 ** d
    if abs(round(derived * q) - p * q) < 1e-6 or abs(math.floor(derived * q + 1e-9) - p * q) < 1e-6:
        return "matches within rounding", diff
    tol = APPROX_TOL_PCT if tol_pct is None else tol_pct
    if approx and diff is not None and abs(diff) <= tol:
        return f"matches within {tol:g}% (approximate number)", diff
    return f"differs by {diff:+.1f}%", diff


def verdict_region(printed: str, approx: bool, tol_pct: float | None = None):
    """The values verdict() says match `printed` as one region (analysis.intervals.Region): rounded or truncated to
    the printed digits equal to it, or, with approx, within tol_pct of it; the three ranges all hold the printed
    value, so their union is one interval. Judging an interval of repetitions against it (intervals.judge) gives
    verdict()'s answer for every value in it, or 'not separable' when they disagree."""
    from .intervals import Region
    p = float(printed)
    q = 10.0 ** -printed_decimals(printed)
    lo, hi, hi_open = p - q / 2, p + q, True  # round: [p - q/2, p + q/2); truncate: [p, p + q)
    if approx:
        t = abs(p) * (APPROX_TOL_PCT if tol_pct is None else tol_pct) / 100
        if p - t < lo:
            lo = p - t
        if p + t >= hi:
            hi, hi_open = p + t, False
    return Region(lo=lo, hi=hi, hi_open=hi_open)


# the labels that make one cell of study 000 (a configuration at one size); its files are its repetitions
CELL_KEYS = ["experiment", "system", "ack", "partitions", "local_durability", "subscriptions", "producers_per_topic",
             "catchup_mode", "message_size_bytes"]


class Deriver:
    """Looks up published runs by labels; the cell value is the median over distinct files (blob SHA-1)."""

    def __init__(self, runs: pl.DataFrame, stats_df: pl.DataFrame):
        self.runs = runs.filter(pl.col("source") == "published")
        self.stats = stats_df

    def files_per_cell(self, files) -> int | None:
        """The fewest distinct files (blob SHA-1) of one cell (CELL_KEYS) among the cells `files` belong to: a row's
        n. Study 000 published one file per cell, so this is 1 for every row with data (None without a file)."""
        sel = self.runs.filter(pl.col("path").is_in(list(files)))
        if sel.height == 0:
            return None
        cells = sel.select(CELL_KEYS).unique()
        return int(self.runs.join(cells, on=CELL_KEYS, how="semi", nulls_equal=True)
                   .group_by(CELL_KEYS).agg(pl.col("blob_sha1").n_unique())["blob_sha1"].min())

    def select(self, **kw) -> pl.DataFrame:
        df = self.runs
        for k, v in kw.items():
            df = df.filter(pl.col(k).is_in(v) if isinstance(v, (list, tuple)) else pl.col(k) == v)
        return df.unique(subset=["blob_sha1"], keep="first", maintain_order=True)

    def latency(self, metric, stat, **kw):
        runs = self.select(**kw)
        if runs.height == 0:
            return None, []
        s = self.stats.filter((pl.col("metric") == metric) & pl.col("run_id").is_in(runs["run_id"].to_list()))
        return st.median(s[STAT_COL[stat]].to_list()), runs["path"].to_list()

    def column(self, col, agg=st.median, **kw):
        runs = self.select(**kw)
        if runs.height == 0:
            return None, []
        return agg(runs[col].to_list()), runs["path"].to_list()


def _row(claim_id, section, experiment, system, config, metric, unit, printed, derived, files, derivation,
         approx=False, ambiguous="", note=""):
    v, diff = verdict(printed, derived, approx)
    return {"claim_id": claim_id, "section": section, "experiment": experiment, "system": system, "config": config,
            "metric": metric, "unit": unit, "printed": float(printed), "derived": derived,
            "diff_pct": diff, "verdict": v, "ambiguous": ambiguous, "derivation": derivation,
            "files": " ".join(files), "note": note}


def table_claims(dv: Deriver, tables_csv=TABLES_CSV):
    out = []
    with open(tables_csv, newline="") as f:
        for r in csv.DictReader(f):
            part, ack, local = int(r["partitions"]), int(r["ack"]), r["local_durability"]
            series = f"{r['system']}-ack-" + ("all" if r["system"] == "kafka" and ack == 2 else str(ack))
            sel = dict(experiment=r["experiment"], system=r["system"], ack=ack, partitions=part,
                       local_durability=local, subscriptions=int(r["subscriptions"]))
            val, files = dv.latency(r["metric"], r["stat"], **sel)
            amb = AMBIG[("2-15", "pulsar", 100)] if (r["table"] == "2-15" and r["system"] == "pulsar" and part == 100) else ""
            how = (f"{'OMB aggregated quantile map' if r['stat'] != 'avg' else 'aggregated average'} "
                   f"({r['metric']}), first percentile key ≥ {r['stat'][1:] if r['stat'] != 'avg' else ''}".rstrip(", ≥ "))
            section = f"§000.6 Table {r['table']}"
            if r["metric"] == "e2e" and r["stat"] == "p99" and r["table"] in ALSO_TABLE_1_2:
                # Table 1-2 summarises the 100-partition e2e p99 with 1 and with 10 subscriptions;
                # Table 1-3 is the partition sweep (5000 and 10000 partitions), not these rows
                section += " (also Table 1-2)"
            out.append(_row(f"T{r['table']}:{series}-{part}:{r['stat']}", section, r["experiment"],
                            r["system"], f"{local}-local;{series};{part}part;{r['subscriptions']}sub",
                            f"{r['metric']}_{r['stat']}", "ms", r["value"], val, files, how, ambiguous=amb))
    return out


_MT = {"1part_2p2c": ("E000-MT3", 1), "100part_2p2c": ("E000-MT1", 100), "2000part_2p2c": ("E000-MT2", 2000),
       "1part_1p1c": ("E000-MT4", 1), "2000part_4p": ("E000-MT2-4p", 2000)}


def reference_claims(dv: Deriver, reference_csv):
    """Study 000 rows of studies.csv that the full tables do not already cover."""
    out = []
    with open(reference_csv, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["study"] == "000"]
    for i, r in enumerate(rows):
        e, sysm, cfg, metric, unit, val = r["experiment"], r["system"], r["config"], r["metric"], r["unit"], r["value"]
        cid = f"R{i:03d}:{e}:{sysm}:{cfg}:{metric}"
        base = dict(section=r["source"], system=sysm, config=cfg, metric=metric, unit=unit, printed=val)
        if e.startswith("lat_100part") or re.match(r"lat_\d+part_publish", e):
            continue  # covered cell by cell by table_claims
        if e in ("dd_probe", "fsync_probe"):
            out.append(_row(cid, experiment=e, derived=None, files=[], derivation="study 000 published no probe data",
                            **base))
            continue
        m = re.match(r"lat_(\d+)part_e2e", e)
        if m:
            part = int(m.group(1))
            local = "sync" if cfg.startswith("sync") else "async"
            ack = 1 if cfg.endswith("ack-1") else 2
            if sysm == "pulsar" and local == "sync" and ack == 1:
                continue  # Table 2-13, covered by table_claims
            v, files = dv.latency("e2e", "p99", experiment="E000-LAT3", system=sysm, partitions=part,
                                  local_durability=local, ack=ack, subscriptions=1)
            amb = AMBIG[("1-3", "pulsar", "sync", 2, 10000)] if (sysm, local, ack, part) == ("pulsar", "sync", 2, 10000) else ""
            out.append(_row(cid, experiment="E000-LAT3", derived=v, files=files, ambiguous=amb,
                            derivation="e2e p99 from the aggregated quantile map", **base))
            continue
        m = re.match(r"max_tput_(.*)", e)
        if m:
            exp, part = _MT[m.group(1)]
            local, ack, note = _level(cfg)
            sel = dict(experiment=exp, system=sysm, partitions=part)
            if ack is not None:
                sel["ack"] = ack
            if local is not None:
                sel["local_durability"] = local
            amb = ""
            if sysm == "pulsar" and cfg.startswith("L2"):
                # L2 = ack-2 + async local, either journal variant; Table 1-1's 605 MB/s needs the bypass variant
                byp, bfiles = dv.column("publish_mean_mibps", **{**sel, "local_durability": "bypass"})
                jv, _ = dv.column("publish_mean_mibps", **sel)
                note = (f"journal kept: {jv:.1f} MiB/s" if jv is not None else "") + \
                       (f"; bypass journal: {byp:.1f} MiB/s" if byp is not None else "; no ack-2 bypass file")
                amb = "Pulsar L2 has two async variants (journal kept / bypassed); derived from the journal-kept run"
            if metric == "publish_tput":
                agg = st.median
                if cfg == "all-levels":
                    v, files = dv.column("publish_mean_mibps", **sel)
                    lo, _ = dv.column("publish_mean_mibps", agg=min, **sel)
                    hi, _ = dv.column("publish_mean_mibps", agg=max, **sel)
                    note = f"median over {len(files)} files; range {lo:.1f}–{hi:.1f} MiB/s"
                else:
                    v, files = dv.column("publish_mean_mibps", agg=agg, **sel)
                how = "mean of the per-window publish rates × 1024 B, in MiB/s (the study's MB/s)"
            else:
                stat = "avg" if metric.endswith("avg") else "p99"
                v, files = dv.latency("publish", stat, **{**sel, "local_durability": "sync"})
                other, _ = dv.latency("publish", stat, **{**sel, "local_durability": "async"})
                note = f"derived from the sync-local run; the async-local run gives {other:.1f} ms" if other else ""
                how = f"publish {stat} of the aggregated distribution"
            if e == "max_tput_100part_2p2c" and sysm == "kafka" and cfg.startswith("L1"):
                amb = AMBIG[("Table 1-1", "kafka", "L1", 100)]
            out.append(_row(cid, experiment=exp, derived=v, files=files, derivation=how, approx=True,
                            ambiguous=amb, note=note, **base))
            continue
        if e.startswith("catchup"):
            mode = "bypass" if "bypass" in cfg else ("sync" if cfg.startswith("sync") else "async")
            sel = dict(experiment="E000-CU", system=sysm)
            if cfg != "any":
                sel["catchup_mode"] = {"bypass": "bypass-journal", "async": "nosync", "sync": "sync"}[mode]
            if sysm == "kafka" and cfg.startswith("async"):
                sel["catchup_mode"] = ["bypass-journal", "nosync"]  # Kafka runs async in both folders
            col = "consume_peak_gibps" if metric == "read_tput" else "consume_peak_msgps"
            v, files = dv.column(col, agg=max, **sel)
            if v is not None and metric == "read_rate":
                v = v / 1e6
            per = dv.select(**sel)
            note = "; ".join(f"ack-{a}: {x:.3g}" for a, x in zip(per["ack"].to_list(),
                             [y / (1e6 if metric == "read_rate" else 1) for y in per[col].to_list()]))
            out.append(_row(cid, experiment="E000-CU", derived=v, files=files, approx=True, ambiguous=AMBIG[("catchup",)],
                            derivation=f"peak 10-s consume rate (max over the ack levels), {'GiB/s' if metric == 'read_tput' else 'M msg/s'}",
                            note=note, **base))
            continue
        if e.startswith("mixed"):
            local = "sync" if cfg.startswith("sync") else "async"
            ack = 1 if cfg.endswith("ack-1") else 2
            sel = dict(experiment="E000-CU", system=sysm, ack=ack,
                       catchup_mode="sync" if local == "sync" else "nosync")
            v, files = dv.latency("publish", "p99", **sel)
            amb = "no mixed-workload files were published; derived from the catch-up file of the same level (assumption)"
            if local == "async" and sysm == "pulsar":
                amb += "; " + AMBIG[("mixed", "async")]
            out.append(_row(cid, experiment="E000-MIX", derived=v, files=files, ambiguous=amb,
                            derivation="publish p99 (aggregated quantile map) of the catch-up run",
                            note=mixed_proxy_note(files), **base))
            continue
        raise ValueError(f"{reference_csv}: no derivation for experiment {e!r}")
    return out


def proxy_folders(files) -> str:
    """'catchup_read/sync/' from the result files a row was derived from (their folders, without 'results/')."""
    folders = sorted({f.rsplit("/", 1)[0].removeprefix("results/") + "/" for f in files})
    return ", ".join(folders)


def mixed_proxy_note(files) -> str:
    """What a Table 1-4 row is compared with: no mixed-workload file exists, so a catch-up file stands in."""
    if not files:
        return "proxy: no mixed and no catch-up file of this level"
    return f"proxy, not a mixed run: publish p99 of the catch-up file in {proxy_folders(files)} (same level)"


def _level(cfg):
    """(local durability, ack, note) from a studies.csv config string."""
    if cfg.startswith("L1"):
        return "sync", 2, ""
    if cfg.startswith("L2"):
        return "async", 2, ""
    if cfg.startswith("ack-1"):
        return "sync", 1, "sync-local run (Figures 2-5/2-7 are the sync-local figures)"
    if cfg.startswith("ack-2"):
        return "sync", 2, "sync-local run"
    if cfg == "ack-all":
        return None, 2, ""
    return None, None, ""


def prose_claims(dv: Deriver):
    """Numbers study 000 states in its prose (§000.6), several of them flagged [ambig] in studies.md."""
    out = []

    def lat(*a, **kw):
        return _lat(dv, *a, **kw)

    def bound(cid, text, printed, derived, files, how, amb=""):
        if derived is None:
            v, diff = "no raw data", None
        else:
            diff = (derived - printed) / printed * 100
            v = "matches (within the stated bound)" if derived <= printed else f"differs by {diff:+.1f}% (exceeds the stated bound)"
        out.append({"claim_id": cid, "section": "§000.6 partition-sweep prose", "experiment": "E000-LAT3",
                    "system": "pulsar", "config": text, "metric": "e2e_p99.9", "unit": "ms", "printed": printed,
                    "derived": derived, "diff_pct": diff, "verdict": v, "ambiguous": amb, "derivation": how,
                    "files": " ".join(files), "note": ""})

    v, f = lat("e2e", "p99.9", "pulsar", "async", 1, 10000)
    bound("P1:pulsar-e2e-p99.9-10000p-async-ack1", "async-local;ack-1;10000part: 'within 24 ms'", 24.0, v, f,
          "e2e p99.9 (quantile map) ≤ the stated bound")
    v, f = lat("e2e", "p99.9", "pulsar", "async", 2, 10000)
    bound("P2:pulsar-e2e-p99.9-10000p-async-ack2", "async-local;ack-2;10000part: 'within 28 ms'", 28.0, v, f,
          "e2e p99.9 (quantile map) ≤ the stated bound")
    v, f = lat("e2e", "p99", "pulsar", "sync", 2, 10000)
    out.append(_row("P3:pulsar-e2e-p99-10000p-sync-ack2", "§000.6 partition-sweep prose", "E000-LAT3", "pulsar",
                    "sync-local;ack-2;10000part: '~50 ms'", "e2e_p99", "ms", "50", v, f,
                    "e2e p99 (quantile map)", approx=True, ambiguous=AMBIG[("1-3", "pulsar", "sync", 2, 10000)]))
    for cid, ack, printed in (("P4:kafka-e2e-p99-10000p-ack1", 1, "180000"), ("P5:kafka-e2e-p99-10000p-ack2", 2, "200000")):
        v, f = lat("e2e", "p99", "kafka", "sync", ack, 10000)
        other, _ = lat("e2e", "p99", "kafka", "async", ack, 10000)
        out.append(_row(cid, "§000.6 partition-sweep prose", "E000-LAT3", "kafka", f"ack-{ack};10000part: '~{int(printed) // 1000} s'",
                        "e2e_p99", "ms", printed, v, f, "e2e p99 (quantile map) of the sync-local run", approx=True,
                        note=f"the async-local run gives {other:.0f} ms" if other else ""))
    # 1 -> 10 subscriptions: "~13 seconds"; the largest Kafka e2e p99 with 10 subscriptions
    vals = [(lat("e2e", "p99", "kafka", loc, ack, 100, subs=10)) for loc in ("sync", "async") for ack in (1, 2)]
    best = max((x for x in vals if x[0] is not None), key=lambda x: x[0], default=(None, []))
    out.append(_row("P6:kafka-e2e-10sub-max", "§000.6 latency prose", "E000-LAT2", "kafka",
                    "10 subscriptions: Kafka latency rises to '~13 seconds'", "e2e_p99_max_over_levels", "ms", "13000",
                    best[0], best[1], "largest e2e p99 of the four Kafka 10-subscription runs", approx=True,
                    ambiguous="the largest value in any table is 2.7 s (studies.md [ambig])"))
    # catch-up ratios: "3.5 times higher" (highlights, bypass) vs "75% faster" (body)
    for cid, mode, printed, text in (("P7:catchup-ratio-bypass", "bypass-journal", "3.5", "'3.5 times higher' (bypass journal)"),
                                     ("P8:catchup-ratio-journal", "nosync", "1.75", "'75% faster' (journal kept, async)")):
        p, pf = dv.column("consume_peak_msgps", agg=max, experiment="E000-CU", system="pulsar", catchup_mode=mode)
        k, kf = dv.column("consume_peak_msgps", agg=max, experiment="E000-CU", system="kafka", catchup_mode=mode)
        out.append(_row(cid, "§000.6 catch-up prose", "E000-CU", "pulsar/kafka", text, "read_rate_ratio", "x", printed,
                        None if p is None or k is None else p / k, pf + kf,
                        "peak Pulsar consume rate ÷ peak Kafka consume rate, same folder", approx=True,
                        ambiguous=AMBIG[("catchup",)]))
    return out


# The report itself (studies.md transcribes its tables and some of its sentences, not the ratios below): the PDF in the
# repository that holds its raw files, cited by page. Each ratio's sentence names the comparison it makes.
REPORT = ("streamnative/openmessaging-benchmark@e750749 blog/benchmarking-pulsar-kafka-a-more-accurate-perspective-on-"
          "pulsar-performance.pdf")
LEVELS = (("sync", 1), ("sync", 2), ("async", 1), ("async", 2))


def _lat(dv: Deriver, metric, stat, system, local, ack, partitions, subs=1):
    exp = "E000-LAT2" if subs == 10 else ("E000-LAT3" if partitions != 100 else "E000-LAT1")
    return dv.latency(metric, stat, experiment=exp, system=system, local_durability=local, ack=ack,
                      partitions=partitions, subscriptions=subs)


def within_times(r: float, lo: float, hi: float) -> bool:
    """'lo to hi times': the ratio rounded or truncated to whole times lies in [lo, hi] (the report writes 5.67 as
    'five times'; the rule of verdict() for printed numbers)."""
    return any(lo <= f(r) <= hi for f in (round, math.floor))


def fmt_num(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.2f}"


def _range_row(cid, section, experiment, system, config, metric, unit, lo, hi, cells, inside, how, what, note="",
               list_all=True):
    """One row for a claim that every value of `cells` ([(label, value, files)]) lies in [lo, hi] (inside(v) says
    whether one does). derived is the value furthest outside the range (printed: the bound it crosses), or, when
    every value is inside, the smallest (printed: lo). The note lists every cell (list_all) or the range and the cells
    outside it."""
    have = [(lab, v, f) for lab, v, f in cells if v is not None]
    files = list(dict.fromkeys(x for _, _, f in have for x in f))
    sp = "" if unit == "x" else " "
    if list_all:
        listing = "; ".join(f"{lab}: {fmt_num(v)}" for lab, v, _ in have)
    elif have:
        listing = (f"{min(v for _, v, _ in have):.2f}–{max(v for _, v, _ in have):.2f}{sp}{unit} over {len(have)} "
                   + what + "".join(f"; {lab}: {fmt_num(v)}" for lab, v, _ in have if not inside(v)))
    else:
        listing = ""
    missing = [lab for lab, v, _ in cells if v is None]
    if missing:
        listing += "; no raw data: " + ", ".join(missing)
    if not have:
        derived, printed, v = None, float(lo), "no raw data"
    else:
        out = [(lab, x) for lab, x, _ in have if not inside(x)]
        if out:
            lab, derived = max(out, key=lambda c: max(lo / c[1] if c[1] > 0 else math.inf, c[1] / hi))
            printed = float(lo if derived < lo else hi)
            v = (f"differs: {len(out)} of {len(have)} {what} outside {lo:g}–{hi:g}{sp}{unit} "
                 f"({', '.join(lab for lab, _ in out)})")
        else:
            derived, printed = min(x for _, x, _ in have), float(lo)
            v = f"matches (all {len(have)} {what} within {lo:g}–{hi:g}{sp}{unit})"
    diff = None if derived is None else (derived - printed) / printed * 100
    return {"claim_id": cid, "section": section, "experiment": experiment, "system": system, "config": config,
            "metric": metric, "unit": unit, "printed": printed, "derived": derived, "diff_pct": diff, "verdict": v,
            "ambiguous": "", "derivation": how, "files": " ".join(files), "note": (note + " " if note else "") + listing}


def report_prose_claims(dv: Deriver):
    """The report's prose ratios and bound that studies.md does not transcribe (issue 32), each recomputed from the
    published files with the comparison its sentence makes (REPORT, page in `section`)."""
    out = []

    def ratio(cid, page, where, experiment, system, config, metric, printed, num, den, how, note=""):
        (a, fa), (b, fb) = num, den
        derived = None if a is None or b is None or not b else a / b
        out.append(_row(cid, f"report p. {page}: {where}", experiment, system, config, metric, "x", printed, derived,
                        fa + fb, how, note=note))

    # p. 45, latency #1 (100 partitions, 1 subscription): "Pulsar's publish and end-to-end latency to be two to five
    # times lower than Kafka's at all levels of durability" (Tables 2-2 … 2-5; the paragraphs after it compare p99)
    cells = []
    for metric in ("publish", "e2e"):
        for local, ack in LEVELS:
            k, kf = _lat(dv, metric, "p99", "kafka", local, ack, 100)
            p, pf = _lat(dv, metric, "p99", "pulsar", local, ack, 100)
            cells.append((f"{metric} {local} ack-{ack}", None if k is None or p is None or not p else k / p, kf + pf))
    out.append(_range_row(
        "P9:latency-ratio-2-5x-100p-1sub", "report p. 45: latency #1 prose", "E000-LAT1", "kafka/pulsar",
        "100part;1sub;sync/async-local;ack-1/ack-2: Pulsar 'two to five times lower' at all levels (publish, e2e)",
        "p99_ratio_kafka_over_pulsar", "x", 2, 5, cells, lambda r: within_times(r, 2, 5),
        "Kafka p99 ÷ Pulsar p99 (quantile maps), same metric and level; a ratio counts as 'two to five times' when "
        "rounded or truncated to whole times it is 2 … 5", "ratios"))
    # p. 52, latency #2 (10 subscriptions), publish, sync local: "under sync replication durability (ack-2), Pulsar's
    # publish latency was 160 times lower than Kafka's"
    ratio("P10:publish-p99-ratio-10sub-sync-ack2", 52, "latency #2 prose", "E000-LAT2", "kafka/pulsar",
          "100part;10sub;sync-local;ack-2: Pulsar publish '160 times lower'", "publish_p99_ratio_kafka_over_pulsar", "160",
          _lat(dv, "publish", "p99", "kafka", "sync", 2, 100, 10), _lat(dv, "publish", "p99", "pulsar", "sync", 2, 100, 10),
          "Kafka (ack-all) publish p99 ÷ Pulsar (ack-2) publish p99, quantile maps (Table 2-7)")
    # p. 55, publish, async local: "Kafka's 99th percentile publish latency under sync replication durability was 270
    # times higher than Pulsar's"
    ratio("P11:publish-p99-ratio-10sub-async-ack2", 55, "latency #2 prose", "E000-LAT2", "kafka/pulsar",
          "100part;10sub;async-local;ack-2: Kafka publish '270 times higher'", "publish_p99_ratio_kafka_over_pulsar", "270",
          _lat(dv, "publish", "p99", "kafka", "async", 2, 100, 10), _lat(dv, "publish", "p99", "pulsar", "async", 2, 100, 10),
          "Kafka (ack-all) publish p99 ÷ Pulsar (ack-2) publish p99, quantile maps (Table 2-9)")
    # p. 56, end to end, async local: "Kafka's 99th percentile end-to-end latency was 13 times higher than Pulsar's for
    # ack-1 and 187 times higher for ack-2"
    ratio("P12:e2e-p99-ratio-10sub-async-ack2", 56, "latency #2 prose", "E000-LAT2", "kafka/pulsar",
          "100part;10sub;async-local;ack-2: Kafka e2e '187 times higher'", "e2e_p99_ratio_kafka_over_pulsar", "187",
          _lat(dv, "e2e", "p99", "kafka", "async", 2, 100, 10), _lat(dv, "e2e", "p99", "pulsar", "async", 2, 100, 10),
          "Kafka (ack-all) e2e p99 ÷ Pulsar (ack-2) e2e p99, quantile maps (Table 2-10)")
    # p. 70, partition sweep, ack-2, async local: "Kafka's 99th percentile publish latency … was 202 times higher at
    # 10000 partitions (as compared to 100)": Kafka against itself
    ratio("P13:kafka-publish-p99-10000p-over-100p-async-ack2", 70, "partition-sweep prose", "E000-LAT3", "kafka",
          "async-local;ack-all: Kafka publish p99 at 10000 partitions '202 times higher' than at 100",
          "publish_p99_ratio_10000p_over_100p", "202",
          _lat(dv, "publish", "p99", "kafka", "async", 2, 10000), _lat(dv, "publish", "p99", "kafka", "async", 2, 100),
          "Kafka publish p99 at 10000 partitions ÷ Kafka publish p99 at 100 partitions, quantile maps (Table 2-16)")
    # p. 71: "At 10000 partitions, Kafka's 99th percentile end-to-end latency increased to 200 s and was 32362 times
    # higher than Pulsar's"
    k = _lat(dv, "e2e", "p99", "kafka", "async", 2, 10000)
    # which Pulsar file of the same level the printed ratio is nearest to (the report may have divided by another row)
    others = [(n, _lat(dv, "e2e", "p99", "pulsar", "async", 2, n)[0]) for n in (100, 5000, 8000)]
    others = [(n, k[0] / v) for n, v in others if v and k[0] is not None]
    near = min(others, key=lambda x: abs(x[1] - 32362), default=None)
    ratio("P14:e2e-p99-ratio-10000p-async-ack2", 71, "partition-sweep prose", "E000-LAT3", "kafka/pulsar",
          "async-local;ack-2;10000part: Kafka e2e '32362 times higher' than Pulsar", "e2e_p99_ratio_kafka_over_pulsar",
          "32362", k, _lat(dv, "e2e", "p99", "pulsar", "async", 2, 10000),
          "Kafka (ack-all) e2e p99 ÷ Pulsar (ack-2) e2e p99 at 10000 partitions, quantile maps (Table 1-3 cells)",
          note=(f"nearest other pairing: over the same level's Pulsar {near[0]}-partition file the ratio is "
                f"{near[1]:.0f}" if near else ""))
    # p. 7, highlight #2 with Tables 1-2 and 1-3 (end-to-end p99 by subscriptions, partitions and durability):
    # "Pulsar's 99th percentile latency is within the range of 5 and 15 milliseconds"
    cells = []
    for part, subs in ((100, 1), (100, 10), (5000, 1), (10000, 1)):
        for local, ack in LEVELS:
            v, f = _lat(dv, "e2e", "p99", "pulsar", local, ack, part, subs)
            cells.append((f"{part}p/{subs}sub {local} ack-{ack}", v, f))
    out.append(_range_row(
        "P15:pulsar-e2e-p99-within-5-15ms", "report p. 7: highlight #2 (Tables 1-2, 1-3)", "E000-LAT1/2/3", "pulsar",
        "100part with 1 and 10 sub, 5000 and 10000part with 1 sub; every level: Pulsar p99 'within the range of 5 and "
        "15 milliseconds'", "e2e_p99", "ms", 5, 15, cells, lambda v: 5 <= v <= 15,
        "Pulsar e2e p99 (quantile map) of each cell of Tables 1-2 and 1-3, 5 ≤ p99 ≤ 15 ms", "cells",
        note="the report's own Table 1-3 prints 15.78 for sync ack-2 at 10000 partitions;", list_all=False))
    for r in out:
        r["derivation"] += f"; sentence: {REPORT}"
    return out


CLAIMS_SCHEMA = {"claim_id": pl.Utf8, "section": pl.Utf8, "experiment": pl.Utf8, "system": pl.Utf8,
                 "config": pl.Utf8, "metric": pl.Utf8, "unit": pl.Utf8, "printed": pl.Float64, "derived": pl.Float64,
                 "diff_pct": pl.Float64, "n": pl.Int64, "verdict": pl.Utf8, "ambiguous": pl.Utf8,
                 "derivation": pl.Utf8, "files": pl.Utf8, "note": pl.Utf8}


def derive(runs, stats_df, reference_csv, tables_csv=TABLES_CSV) -> pl.DataFrame:
    dv = Deriver(runs, stats_df)
    rows = (table_claims(dv, tables_csv) + reference_claims(dv, reference_csv) + prose_claims(dv)
            + report_prose_claims(dv))
    for r in rows:  # n: files per cell (one published file each; a row over several cells counts its fewest)
        r["n"] = dv.files_per_cell(r["files"].split()) if r["derived"] is not None else None
    return pl.DataFrame(rows, schema=CLAIMS_SCHEMA, strict=False)
