"""The fault study (issue 15): acknowledged messages lost per durability level x fault, figure, tables, claims.

python -m analysis.faults --raw data/raw --testbed local --tables paper/tables --figures paper/figures \
    --derived data/derived [--png-scale 2] [--suspect mark|exclude]

Reads every result file under raw/<testbed>/<system>/<level>[+<tuning>]/<workload>/rep-<n>.json whose
`x-streambench.fault` object exists (the verifier's verdict of one fault run; runner/RESULT-FORMAT.md), labels it
from its path (analysis.labels: system, level, repetition) and writes
- data/derived/faults.parquet and paper/tables/faults-runs.csv: one row per fault run, every testbed;
- paper/tables/faults.{csv,md}: this testbed's grid, system x level x fault: runs, median and range (min-max) over
  repetitions of acknowledged messages lost and of the lost fraction, runs with a loss, duplicates, unavailability,
  recovery; a cell without a run is "not run", kill-bookie on a system without bookies is "n/a";
- paper/tables/faults-claims.{csv,md}: the durability levels' definitions (studies.md §000.2) tested on this
  testbed's runs, one row per claim and system, with the counts behind each verdict;
- paper/tables/faults-hosts.{csv,md}: the hold faults (partitions, pause, slow link) of every other testbed that ran
  them (hosts of their own: lab, hosts, aws), testbed x system x level x hold fault, as the grid's cells;
- paper/figures/faults-lost.{svg,png,pdf,json};
- paper/figures/faults-timeline.{svg,png,pdf,json}: one run per fault of this testbed (the one that lost most), second
  by second (x-streambench.faultTimeline.perSecond: acknowledgements, publish errors, acknowledged sends lost by
  the second they were sent) with the fault hook's strike, heal, restart and back-in-service, and the leader before
  and after the cycle.
No fault result at all (a profile without fault runs) gives empty tables, "not tested" verdicts and a figure
that says so; a corrupt fault object stops with one line naming the file and the field.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import sys
from pathlib import Path

import altair as alt
import polars as pl

from . import InputError, cli, intervals as iv
from .figures import empty_chart, save_chart
from .labels import (APART_FAULTS, FAULT_SUFFIXES, FAULTS, HOLD_FAULTS, KNOWN_FAULTS,  # noqa: F401 (re-exported)
                     PARTITION_FAULTS, parse_raw_path)
from .report import to_csv, to_md, write_text_atomic

FIGURE_IDS = ["faults-lost", "faults-timeline"]
TABLE_IDS = ["faults", "faults-claims", "faults-hosts"]
# the levels each system runs (systems/durability.yaml); a system found in the data but not here gets its own levels
SYSTEM_LEVELS = {"kafka": ["L1", "L2", "L3", "L4"], "pulsar": ["L1", "L2", "L2-bypass", "L3", "L4", "L4-bypass"]}
LEVEL_ORDER = ["L1", "L2", "L2-bypass", "L3", "L4", "L4-bypass"]
# faults that exist only where a system has the component they strike
FAULT_SYSTEMS = {"kill-bookie": {"pulsar", "pravega"}}
# level -> (replication ack, local durability), studies.md §000.2 / systems/durability.yaml
LEVEL_MODES = {"L1": ("ack-2", "sync"), "L2": ("ack-2", "async"), "L2-bypass": ("ack-2", "async (journal bypass)"),
               "L3": ("ack-1", "sync"), "L4": ("ack-1", "async"), "L4-bypass": ("ack-1", "async (journal bypass)")}
_FAULT_KEY = re.compile(rb'"fault"\s*:')
COUNT_KEYS = ["acknowledged", "lost", "duplicated", "reordered", "unacknowledgedPresent", "publishErrors", "read"]
TIME_KEYS = ["strikeAtSeconds", "downSeconds"]
NULLABLE_MS_KEYS = ["unavailableMs", "recoveryMs"]
FAULT_KEYS = ["type", *TIME_KEYS, "seed", "targets", *COUNT_KEYS[:6], *NULLABLE_MS_KEYS, "read"]

RUN_SCHEMA = {
    "testbed": pl.Utf8, "suspect": pl.Boolean, "system": pl.Utf8, "level": pl.Utf8, "ack": pl.Utf8, "local": pl.Utf8,
    "tuning": pl.Utf8, "workload": pl.Utf8, "fault": pl.Utf8, "repetition": pl.Int64, "seed": pl.Int64,
    "strike_at_s": pl.Float64, "down_s": pl.Float64, "targets": pl.Utf8, "acknowledged": pl.Int64, "lost": pl.Int64,
    "lost_fraction": pl.Float64, "duplicated": pl.Int64, "reordered": pl.Int64, "unacknowledged_present": pl.Int64,
    "publish_errors": pl.Int64, "unavailable_ms": pl.Float64, "recovery_ms": pl.Float64, "read": pl.Int64,
    "cluster_cycle": pl.Int64, "leader_before": pl.Utf8, "leader_after": pl.Utf8, "file": pl.Utf8,
}
RUN_COLS = list(RUN_SCHEMA)
CELL_COLS = ["testbed", "system", "level", "ack", "local", "fault", "status", "runs", "runs_with_loss",
             "acknowledged_median", "lost_median", "lost_min", "lost_max", "lost_total", "acknowledged_total",
             "lost_fraction_median",
             "lost_fraction_max", "duplicated_median", "reordered_median", "unacknowledged_present_median",
             "publish_errors_median", "unavailable_ms_median", "recovery_ms_median"]
# n: the runs of the claim's cells (= runs); interval: acknowledged messages lost per run over them, median
# [min–max] (analysis.intervals); a verdict from a single run says "(1 run)"
CLAIM_COLS = ["claim_id", "claim", "system", "cells", "cells_run", "runs", "runs_with_loss", "lost_total",
              "acknowledged_total", "n", "interval", "verdict", "evidence"]
MD_CLAIM_COLS = ["claim_id", "claim", "system", "n", "runs_with_loss", "lost_total", "interval", "verdict", "evidence"]
# relative column widths of the paper's tables (pandoc reads them from the dashes of a pipe table's separator line)
MD_CLAIM_WIDTHS = [5, 14, 5, 3, 5, 5, 7, 9, 24]
MD_GRID_WIDTHS = [5, 7, 4, 8, 10, 10, 10, 10, 10]
MD_HOSTS_WIDTHS = [5, 5, 4, 4, 10, 10, 10, 10, 10]


# --------------------------------------------------------------------------------------------------- reading


def _count(path, key, v):
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise InputError(path, f"x-streambench.fault.{key}", f"not a non-negative integer: {v!r}")
    return v


def _seconds(path, key, v, nullable=False):
    if v is None and nullable:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise InputError(path, f"x-streambench.fault.{key}", f"not a non-negative finite number: {v!r}")
    return float(v)


def check_fault(path, f, system: str) -> dict:
    """The fault object of one result file, checked; every problem is an InputError naming the file and field."""
    if not isinstance(f, dict):
        raise InputError(path, "x-streambench.fault", f"not an object: {type(f).__name__}")
    for k in FAULT_KEYS:
        if k not in f:
            raise InputError(path, f"x-streambench.fault.{k}", "missing")
    if f["type"] not in KNOWN_FAULTS:
        raise InputError(path, "x-streambench.fault.type", f"{f['type']!r} is not one of {', '.join(KNOWN_FAULTS)}")
    if f["type"] in FAULT_SYSTEMS and system not in FAULT_SYSTEMS[f["type"]]:
        raise InputError(path, "x-streambench.fault.type", f"{f['type']} does not exist for {system}")
    out = {"type": f["type"]}
    for k in TIME_KEYS:
        out[k] = _seconds(path, k, f[k])
    for k in NULLABLE_MS_KEYS:
        out[k] = _seconds(path, k, f[k], nullable=True)
    for k in COUNT_KEYS:
        out[k] = _count(path, k, f[k])
    if isinstance(f["seed"], bool) or not isinstance(f["seed"], int):
        raise InputError(path, "x-streambench.fault.seed", f"not an integer: {f['seed']!r}")
    out["seed"] = f["seed"]
    t = f["targets"]
    if not isinstance(t, list) or not t or not all(isinstance(x, str) and x for x in t):
        raise InputError(path, "x-streambench.fault.targets", f"not a non-empty list of node names: {t!r}")
    out["targets"] = t
    c = f.get("clusterCycle")  # optional: results written before clusters were shared have none
    if c is not None and (isinstance(c, bool) or not isinstance(c, int) or c < 1):
        raise InputError(path, "x-streambench.fault.clusterCycle", f"not a positive integer: {c!r}")
    out["clusterCycle"] = c
    for k in ("leaderBefore", "leaderAfter"):  # optional: older results have none; None where the lookup failed
        v = f.get(k)
        if v is not None and (not isinstance(v, str) or not v):
            raise InputError(path, f"x-streambench.fault.{k}", f"not a node name: {v!r}")
        out[k] = v
    if out["lost"] > out["acknowledged"]:
        raise InputError(path, "x-streambench.fault.lost",
                         f"{out['lost']} lost of {out['acknowledged']} acknowledged (more than were acknowledged)")
    return out


def _level_dir(lab: dict) -> str:
    return lab["level"] + ("-bypass" if lab["local_durability"] == "bypass" else "")


def read_runs(raw: Path, suspect: str = "mark") -> pl.DataFrame:
    """One row per fault result file under raw/ (every testbed); files without `x-streambench.fault` are skipped.
    Runs judged suspect by workloads.run keep suspect=True (suspect="mark") or are left out ("exclude")."""
    rows = []
    if raw.is_dir():
        for p in sorted(raw.glob("*/*/*/*/rep-*.json")):
            rel = str(p.relative_to(raw))
            if rel.split("/")[1] == "probes":
                continue
            named = rel.split("/")[3].endswith(FAULT_SUFFIXES)  # workloads.plan: a fault run's workload id
            try:
                data = p.read_bytes()
                if not named and not _FAULT_KEY.search(data):
                    continue  # a benchmark's result (often megabytes of histograms): not parsed here
                doc = json.loads(data)
            except (OSError, ValueError) as e:
                raise InputError(p, "(file)", f"not readable as JSON: {e}") from None
            x = doc.get("x-streambench") if isinstance(doc, dict) else None
            if not isinstance(x, dict) or "fault" not in x:
                if named:
                    raise InputError(p, "x-streambench.fault", "missing in a fault run's result (its workload id "
                                     f"ends with --<fault>)")
                continue
            try:
                lab = parse_raw_path(rel)
            except InputError as e:
                raise InputError(p, e.field, e.problem) from None
            f = check_fault(p, x["fault"], lab["system"])
            is_suspect = ((x.get("testbedHost") or {}).get("validity") or {}).get("status") == "suspect"
            if is_suspect and suspect == "exclude":
                continue
            level = _level_dir(lab)
            ack, local = LEVEL_MODES[level]
            rows.append({
                "testbed": lab["testbed"], "suspect": is_suspect, "system": lab["system"], "level": level, "ack": ack,
                "local": local, "tuning": lab["tuning"] or "", "workload": lab["workload_file"], "fault": f["type"],
                "repetition": lab["repetition"], "seed": f["seed"], "strike_at_s": f["strikeAtSeconds"],
                "down_s": f["downSeconds"], "targets": " ".join(f["targets"]), "acknowledged": f["acknowledged"],
                "lost": f["lost"], "lost_fraction": f["lost"] / f["acknowledged"] if f["acknowledged"] else None,
                "duplicated": f["duplicated"], "reordered": f["reordered"],
                "unacknowledged_present": f["unacknowledgedPresent"], "publish_errors": f["publishErrors"],
                "unavailable_ms": f["unavailableMs"], "recovery_ms": f["recoveryMs"], "read": f["read"],
                # the cycle's number on its cluster (1: a fresh cluster; results of older runs have none)
                "cluster_cycle": f.get("clusterCycle"),
                # which node led the topic before the strike and after the cycle (results of older runs have none)
                "leader_before": f.get("leaderBefore"), "leader_after": f.get("leaderAfter"), "file": str(p)})
    return pl.DataFrame(rows, schema=RUN_SCHEMA, orient="row")


# --------------------------------------------------------------------------------------------------- the grid


def faults_of(runs: pl.DataFrame) -> list[str]:
    """The grid's faults: every kill fault, and a hold fault where the runs have one."""
    seen = set(runs["fault"].to_list()) if not runs.is_empty() else set()
    return FAULTS + [f for f in HOLD_FAULTS if f in seen]


def grid(runs: pl.DataFrame) -> list[tuple[str, str, str, bool]]:
    """Every (system, level, fault, applicable) cell of the study: both systems at every level, every fault (a hold
    fault only where the runs have it), plus any system or level found in the data."""
    levels = {s: list(ls) for s, ls in SYSTEM_LEVELS.items()}
    for s, lv in runs.select("system", "level").unique().sort(["system", "level"]).iter_rows():
        levels.setdefault(s, [])
        if lv not in levels[s]:
            levels[s].append(lv)
    cells = []
    for s in sorted(levels):
        for lv in sorted(levels[s], key=LEVEL_ORDER.index):
            for f in faults_of(runs):
                cells.append((s, lv, f, s in FAULT_SYSTEMS.get(f, {s})))
    return cells


def cells(runs: pl.DataFrame, testbed: str) -> list[dict]:
    """One row per cell of the grid on `testbed`: median and range over repetitions, or status 'not run' / 'n/a'."""
    mine = runs.filter(pl.col("testbed") == testbed)
    agg = {}
    if not mine.is_empty():
        g = mine.group_by(["system", "level", "fault"]).agg(
            pl.len().alias("runs"), (pl.col("lost") > 0).sum().alias("runs_with_loss"),
            pl.col("acknowledged").median().alias("acknowledged_median"),
            pl.col("lost").median().alias("lost_median"), pl.col("lost").min().alias("lost_min"),
            pl.col("lost").max().alias("lost_max"), pl.col("lost").sum().alias("lost_total"),
            pl.col("lost").alias("lost_values"),  # every run's count (the claims' intervals; not a table column)
            pl.col("acknowledged").sum().alias("acknowledged_total"),
            pl.col("lost_fraction").median().alias("lost_fraction_median"),
            pl.col("lost_fraction").max().alias("lost_fraction_max"),
            pl.col("duplicated").median().alias("duplicated_median"),
            pl.col("reordered").median().alias("reordered_median"),
            pl.col("unacknowledged_present").median().alias("unacknowledged_present_median"),
            pl.col("publish_errors").median().alias("publish_errors_median"),
            pl.col("unavailable_ms").median().alias("unavailable_ms_median"),
            pl.col("recovery_ms").median().alias("recovery_ms_median"))
        agg = {(r["system"], r["level"], r["fault"]): r for r in g.to_dicts()}
    out = []
    # the grid of this testbed's own runs: another testbed's hold faults (the lab's, in a tree that ran both) are
    # not cells of this one, or its L1 rows would be "not run" there and F1 "not tested" (hosts_grid shows them)
    for s, lv, f, applicable in grid(mine):
        ack, local = LEVEL_MODES[lv]
        row = {"testbed": testbed, "system": s, "level": lv, "ack": ack, "local": local, "fault": f, "runs": 0}
        if (s, lv, f) in agg:
            row.update(agg[(s, lv, f)], status="run")
        else:
            row["status"] = "not run" if applicable else "n/a"
        out.append(row)
    return out


def to_md_widths(cols, rows, widths) -> str:
    """report.to_md with relative column widths: long cells (claims, evidence) wrap in their own wide column."""
    lines = to_md(cols, rows).split("\n")
    widths = list(widths[:len(cols)]) + [widths[-1]] * (len(cols) - len(widths))  # e.g. the hold faults' columns
    lines[1] = "|" + "|".join("-" * (3 * w) for w in widths) + "|"
    return "\n".join(lines)


def cell_text(c: dict) -> str:
    """The paper's cell: median lost (range over repetitions), n runs; or 'not run' / 'n/a'."""
    if c["status"] != "run":
        return c["status"]
    med = c["lost_median"]
    med = f"{med:.0f}" if med == int(med) else f"{med:.1f}"
    return f"{med} ({c['lost_min']}–{c['lost_max']}), n={c['runs']}"


def wide_table(cl: list[dict]) -> tuple[list[str], list[dict]]:
    """system x level rows, one column per fault (the paper's table)."""
    rows = {}
    for c in cl:
        key = (c["system"], c["level"])
        r = rows.setdefault(key, {"system": c["system"], "level": c["level"], "ack": c["ack"], "local": c["local"]})
        r[c["fault"]] = cell_text(c)
    faults = [f for f in KNOWN_FAULTS if any(c["fault"] == f for c in cl)] or FAULTS
    return ["system", "level", "ack", "local", *faults], list(rows.values())


def hosts_grid(runs: pl.DataFrame, testbed: str) -> tuple[list[str], list[dict]]:
    """The hold faults as the testbeds with hosts of their own ran them (lab, a user's hosts, EC2), beside this
    testbed's grid: one row per testbed, system and level with a hold-fault run, a column per hold fault run there
    (cell_text; 'not run' where that testbed has no run of it); the claims resting on them per testbed are the
    findings' (analysis.findings.s_faults). Without such runs, one row that says so."""
    held = runs.filter(pl.col("fault").is_in(HOLD_FAULTS) & (pl.col("testbed") != testbed))
    tbs = sorted(set(held["testbed"].to_list()))
    if not tbs:
        return (["testbed", "hold faults"], [{"testbed": "none", "hold faults": (
            "no testbed with hosts of its own has run them here (`snakemake --profile lab faults` does)")}])
    faults = [f for f in HOLD_FAULTS if f in set(held["fault"].to_list())]
    rows = []
    for tb in tbs:
        by = {(c["system"], c["level"], c["fault"]): c for c in cells(runs, tb) if c["fault"] in faults}
        for system, level in dict.fromkeys((s_, lv) for (s_, lv, _), c in by.items() if c["status"] == "run"):
            row = {"testbed": tb, "system": system, "level": level, "ack": LEVEL_MODES[level][0]}
            # a hold fault this testbed never ran is no cell of its own grid: "not run" as in the grid
            row.update({f: cell_text(by[(system, level, f)]) if (system, level, f) in by else "not run" for f in faults})
            rows.append(row)
    return ["testbed", "system", "level", "ack", *faults], rows


# --------------------------------------------------------------------------------------------------- claims


def _universal(cid, text, system, cl):
    """'<cells> lose nothing': refuted by one loss; supported only when every cell has runs; else not tested."""
    run = [c for c in cl if c["status"] == "run"]
    n = sum(c["runs"] for c in run)
    lossy = [c for c in run if c["runs_with_loss"]]
    missing = [c for c in cl if c["status"] == "not run"]
    row = _counts(cid, text, system, cl, run)
    if lossy:
        row["verdict"] = "refuted"
        row["evidence"] = "lost in " + "; ".join(
            f"{c['level']} {c['fault']}: {c['runs_with_loss']} of {c['runs']} runs, up to {c['lost_max']}" for c in lossy)
    elif not run:
        row["verdict"] = "not tested"
        row["evidence"] = f"none of the {_cells(len(cl))} run"
    elif missing:
        row["verdict"] = "not tested"
        row["evidence"] = (f"0 lost in {n} runs of {_cells(len(run))}; {len(missing)} not run: "
                           + ", ".join(f"{c['level']} {c['fault']}" for c in missing))
    else:
        row["verdict"] = "supported"
        row["evidence"] = f"0 lost in {n} runs of {'the one cell' if len(run) == 1 else f'all {len(run)} cells'}"
    return row


def _existential(cid, text, system, cl):
    """'<cells> can lose': supported by one observed loss; otherwise 'not observed in N runs' (never refuted);
    not tested when no cell has a run."""
    run = [c for c in cl if c["status"] == "run"]
    n = sum(c["runs"] for c in run)
    lossy = [c for c in run if c["runs_with_loss"]]
    missing = [c for c in cl if c["status"] == "not run"]
    row = _counts(cid, text, system, cl, run)
    tail = f"; {_cells(len(missing))} not run: " + ", ".join(f"{c['level']} {c['fault']}" for c in missing) if missing else ""
    if lossy:
        row["verdict"] = "supported"
        row["evidence"] = "lost in " + "; ".join(
            f"{c['level']} {c['fault']}: {c['runs_with_loss']} of {c['runs']} runs, up to {c['lost_max']}"
            for c in lossy) + tail
    elif not run:
        row["verdict"] = "not tested"
        row["evidence"] = f"none of the {_cells(len(cl))} run"
    else:
        row["verdict"] = f"not observed in {n} runs"
        row["evidence"] = f"0 lost in {n} runs of {_cells(len(run))}" + tail
    return row


def _cells(k: int) -> str:
    return f"{k} cell" if k == 1 else f"{k} cells"


def _counts(cid, text, system, cl, run):
    lost = iv.of(v for c in run for v in c["lost_values"])
    return {"claim_id": cid, "claim": text, "system": system, "cells": len(cl), "cells_run": len(run),
            "runs": sum(c["runs"] for c in run), "runs_with_loss": sum(c["runs_with_loss"] for c in run),
            "lost_total": sum(c["lost_total"] for c in run),
            "acknowledged_total": sum(c["acknowledged_total"] for c in run),
            "n": sum(c["runs"] for c in run), "interval": None if lost is None else lost.text(".0f")}


def _one_run(row: dict) -> dict:
    """A supported or refuted verdict from a single run says "(1 run)" (analysis.intervals.mark); "not observed in
    1 runs" and "not tested" already say what they rest on."""
    if row["verdict"] in ("supported", "refuted"):
        row["verdict"] = iv.mark(row["verdict"], row["n"])
    return row


# claim id, text, which cells, universal (loses nothing) or existential (can lose)
CLAIMS = [
    ("F1", "L1 loses nothing under any of these faults",
     lambda c: c["level"] == "L1", _universal),
    ("F2", "an async-local level can lose acknowledged writes under power-loss",
     lambda c: c["local"].startswith("async") and c["fault"] == "power-loss", _existential),
    ("F3", "ack-1 levels can lose acknowledged writes on leader failure",
     lambda c: c["ack"] == "ack-1" and c["fault"] == "kill-leader", _existential),
    # issue 31: the leader cut off or stopped while its clients still reach it; rows only where such cells exist
    ("F3h", "ack-1 levels can lose acknowledged writes when the leader is held apart (partition or pause)",
     lambda c: c["ack"] == "ack-1" and c["fault"] in APART_FAULTS, _existential),
    # L1 only: acks=all with min.insync.replicas=2 (Kafka), ack quorum 2 (Pulsar), as the issue states the claim; L2
    # has the same replication but runs on no testbed with hosts (the lab uses the ci scale's levels)
    ("F4", "L1 (acks=all with min.insync.replicas=2; ack quorum 2) loses nothing when the leader is partitioned",
     lambda c: c["level"] == "L1" and c["fault"] in PARTITION_FAULTS, _universal),
]


def claims(cl: list[dict]) -> list[dict]:
    """One row per claim and system (studies.md §000.2's level definitions, tested on the cells' testbed)."""
    out = []
    for cid, text, sel, judge in CLAIMS:
        for system in sorted({c["system"] for c in cl}):
            cc = [c for c in cl if c["system"] == system and c["status"] != "n/a" and sel(c)]
            if not cc:
                continue
            out.append(_one_run(judge(cid, text, system, cc)))
    return out


# --------------------------------------------------------------------------------------------------- figure


def figure(runs: pl.DataFrame, cl: list[dict], testbed: str):
    """Acknowledged messages lost per level (x) x fault (rows) x system (columns), symlog: each run a point, the
    median a tick, the range over repetitions a rule; 'not run' and 'n/a' written in their cells."""
    mine = runs.filter(pl.col("testbed") == testbed)
    pts = [{"layer": "run", "system": r["system"], "level": r["level"], "fault": r["fault"], "lost": r["lost"],
            "run": "suspect" if r["suspect"] else "run"} for r in mine.iter_rows(named=True)]
    for c in cl:
        base = {"system": c["system"], "level": c["level"], "fault": c["fault"]}
        if c["status"] == "run":
            pts.append({**base, "layer": "summary", "lost": c["lost_median"], "lo": c["lost_min"], "hi": c["lost_max"]})
        else:
            pts.append({**base, "layer": "label", "lost": 0, "label": c["status"]})
    levels = [lv for lv in LEVEL_ORDER if any(c["level"] == lv for c in cl)]
    n_runs = len(mine)
    caption = (f"Acknowledged messages lost per durability level and fault on the {testbed} testbed "
               f"({n_runs} fault runs): each dot is one run, the tick the median over repetitions, the vertical "
               "line their range (symmetric-log scale, so 0 stays on the axis). Cells without a run say "
               "\"not run\"; kill-bookie has no Kafka counterpart (\"n/a\").")
    alt_text = ("Grid of dot plots, one row per fault (kill-leader, kill-bookie, kill-one, crash-all, power-loss) "
                "and one column per system, with durability levels on the x axis and acknowledged messages lost "
                "on a symmetric-log y axis (0, 1, 10, 100 ...); cells that were not run are labelled.")
    if not pts:
        return empty_chart("no fault runs"), caption, alt_text
    top = max([10, *(r["lost"] for r in mine.iter_rows(named=True))])
    ticks = [0] + [10 ** k for k in range(1, 10) if 10 ** (k - 1) < top]  # no 1: its label would sit on 0's
    x = alt.X("level:N", sort=levels, title=None, axis=alt.Axis(labelAngle=-90, labelOverlap=False))
    scale = alt.Scale(type="symlog", domain=[0, ticks[-1]], nice=False)
    # labels 1 000 as "1k" (d3's "~s" gave 100 as "0k"); tickCount: the config's 5 thinned the values to every other
    axis = alt.Axis(values=ticks, tickCount=len(ticks), labelOverlap=False, grid=True,
                    labelExpr="datum.value >= 1000 ? format(datum.value / 1000, '~g') + 'k' : format(datum.value, '~g')")
    y = alt.Y("lost:Q", title="lost", scale=scale, axis=axis)
    base = alt.Chart().encode(x=x)
    rng = base.transform_filter(alt.datum.layer == "summary").mark_rule(color="#555").encode(
        y=alt.Y("lo:Q", title="lost", scale=scale, axis=axis), y2="hi:Q")
    med = base.transform_filter(alt.datum.layer == "summary").mark_tick(color="black", thickness=2, size=14).encode(y=y)
    dots = base.transform_filter(alt.datum.layer == "run").mark_circle(size=28, opacity=0.6).encode(
        y=y, color=alt.Color("run:N", title="run", scale=alt.Scale(domain=["run", "suspect"],
                                                                   range=["#1f6fb4", "#d9531e"])))
    labels = base.transform_filter(alt.datum.layer == "label").mark_text(
        angle=270, align="left", dx=3, color="#888").encode(y=y, text="label:N")
    chart = alt.layer(rng, med, dots, labels, data=alt.Data(values=pts)).properties(width=200, height=90).facet(
        row=alt.Row("fault:N", sort=KNOWN_FAULTS, title=None, header=alt.Header(labelAngle=0, labelAlign="left")),
        column=alt.Column("system:N", title=None)).resolve_scale(x="independent")
    return chart, caption, alt_text


# --------------------------------------------------------------------------------------------------- the timeline

# the fault hook's events drawn on the timeline (workloads/faultrun.py Hook): name -> label
TIMELINE_EVENTS = {"struck": "strike", "healed": "heal", "restarted": "restart", "back": "serving"}
TIMELINE_SERIES = {"acked": ("acknowledged /s", "#1f6fb4"), "errors": ("publish errors /s", "#d62728"),
                   "lost": ("lost (by send second)", "#ff7f0e")}
PER_SECOND_KEYS = ("s", "sent", "acked", "errors", "lost")
EVENT_MERGE_S = 1.5  # events closer than this share one rule and one label (their words would overlap)


def _epoch(path: Path, x: dict) -> float:
    v = x.get("measurementStartTime")
    try:
        return dt.datetime.fromisoformat(v).timestamp()
    except (TypeError, ValueError):
        raise InputError(path, "x-streambench.measurementStartTime", f"not an ISO time: {v!r}") from None


def read_timeline(path: Path) -> dict | None:
    """A fault run's timeline (None for a result written before runs recorded one): per-second rows and the hook's
    events in seconds from the start of traffic. A malformed one stops with the file and the field."""
    try:
        x = json.loads(Path(path).read_text())["x-streambench"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(path, "x-streambench", f"not readable: {e}") from None
    tl = x.get("faultTimeline") or {}
    per = tl.get("perSecond")
    if per is None:
        return None
    field = "x-streambench.faultTimeline.perSecond"
    if not isinstance(per, list) or not all(isinstance(r, dict) for r in per):
        raise InputError(path, field, "not a list of objects")
    for i, r in enumerate(per):
        bad = [k for k in PER_SECOND_KEYS if isinstance(r.get(k), bool) or not isinstance(r.get(k), int) or r[k] < 0]
        if bad:
            raise InputError(path, f"{field}[{i}].{bad[0]}", f"not a count: {r.get(bad[0])!r}")
    t0 = _epoch(path, x)
    events: list[dict] = []
    timed = [ev for ev in tl.get("events") or [] if isinstance(ev, dict) and ev.get("event") in TIMELINE_EVENTS
             and isinstance(ev.get("t"), (int, float)) and not isinstance(ev.get("t"), bool)]
    for ev in sorted(timed, key=lambda e: e["t"]):
        label, t_s = TIMELINE_EVENTS[ev["event"]], round(ev["t"] - t0, 2)
        if events and t_s - events[-1]["t_s"] < EVENT_MERGE_S:  # e.g. a hold's heal and serving: one rule
            events[-1]["event"] += f", {label}"
        else:
            events.append({"event": label, "t_s": t_s})
    return {"perSecond": per, "events": events}


def timeline_runs(runs: pl.DataFrame, testbed: str) -> list[dict]:
    """One run per fault of `testbed` that recorded a timeline: the one that lost most acknowledged messages (ties:
    the first by system, level, repetition), in the grid's fault order."""
    mine = runs.filter(pl.col("testbed") == testbed).sort(["system", "level", "repetition", "file"])
    chosen: dict[str, dict] = {}
    for r in mine.iter_rows(named=True):
        if r["fault"] in chosen and r["lost"] <= chosen[r["fault"]]["lost"]:
            continue
        tl = read_timeline(Path(r["file"]))
        if tl is not None:
            chosen[r["fault"]] = {**r, **tl}
    return [chosen[f] for f in KNOWN_FAULTS if f in chosen]


def _timeline_title(r: dict) -> str:
    lead = ""
    if r.get("leader_before"):
        after = r.get("leader_after") or "?"
        lead = (f"; leader {r['leader_before']} before, {after} after" if after != r["leader_before"]
                else f"; leader {after} before and after")
    return (f"{r['fault']}: {r['system']} {r['level']}, repetition {r['repetition']}, {r['lost']} lost of "
            f"{r['acknowledged']} acknowledged{lead}")


def figure_timeline(runs: pl.DataFrame, testbed: str):
    """One panel per fault: the chosen run's acknowledgements, publish errors and lost sends per second, with the
    fault hook's events as labelled vertical rules."""
    chosen = timeline_runs(runs, testbed)
    caption = (f"One fault run per fault on the {testbed} testbed, second by second from the start of its traffic "
               "(the run of each fault that lost most acknowledged messages): acknowledgements and publish errors "
               "received per second, acknowledged messages that were never read back counted at the second they "
               "were sent, and the fault's schedule as vertical rules (strike; heal, the end of a partition or a "
               "pause; restart of a killed node; serving, the cluster back in service). Each panel's title names the "
               "run and the node that led the topic before the strike and after the cycle.")
    alt_text = ("Stacked line charts, one per fault, of messages per second against seconds since the start of "
                "traffic: acknowledgements, publish errors and lost messages, with vertical lines where the fault "
                "struck, healed, restarted nodes and the cluster served again.")
    if not chosen:
        return empty_chart("no fault run with a timeline"), caption, alt_text
    color = alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=3),
                      scale=alt.Scale(domain=[v[0] for v in TIMELINE_SERIES.values()],
                                      range=[v[1] for v in TIMELINE_SERIES.values()]))
    t1 = max(max(p["s"] for p in r["perSecond"]) + 1 for r in chosen)
    x = alt.X("t_s:Q", title="seconds from the start of traffic", scale=alt.Scale(domain=[0, t1], nice=False))
    y = alt.Y("n:Q", title="messages / s")
    panels = []
    for r in chosen:
        pts = [{"t_s": p["s"] + 0.5, "series": TIMELINE_SERIES[k][0], "n": p[k]}
               for p in r["perSecond"] for k in TIMELINE_SERIES if k != "lost" or p[k]]
        layers = [alt.Chart(alt.Data(values=[p for p in pts if p["series"] != TIMELINE_SERIES["lost"][0]]))
                  .mark_line(strokeWidth=1.5, interpolate="step").encode(x=x, y=y, color=color)]
        lost = [p for p in pts if p["series"] == TIMELINE_SERIES["lost"][0]]
        if lost:
            layers.append(alt.Chart(alt.Data(values=lost)).mark_bar(width=3, opacity=0.8).encode(
                x=x, y=y, color=color))
        if r["events"]:
            ev = alt.Chart(alt.Data(values=r["events"]))
            layers.append(ev.mark_rule(color="#555555", strokeDash=[4, 3]).encode(x=x))
            layers.append(ev.mark_text(angle=270, align="right", baseline="bottom", dx=-2, dy=-2, fontSize=9,
                                       color="#333333").encode(x=x, y=alt.value(0), text="event:N"))
        panels.append(alt.layer(*layers).properties(width=460, height=110, title=alt.TitleParams(
            _timeline_title(r), fontSize=10, anchor="start")))
    return alt.vconcat(*panels), caption, alt_text


# --------------------------------------------------------------------------------------------------- main


def build(raw: Path, testbed: str, tables: Path, figures_dir: Path, derived: Path | None = None,
          png_scale: float = 2.0, suspect: str = "mark") -> dict:
    runs = read_runs(raw, suspect)
    cl = cells(runs, testbed)
    cols, wide = wide_table(cl)
    cr = claims(cl)
    if derived is not None:
        derived.mkdir(parents=True, exist_ok=True)
        tmp = derived / ".faults.parquet.tmp"
        runs.write_parquet(tmp)
        tmp.replace(derived / "faults.parquet")
    write_text_atomic(tables / "faults-runs.csv", to_csv(RUN_COLS, runs.to_dicts()))
    write_text_atomic(tables / "faults.csv", to_csv(CELL_COLS, cl))
    write_text_atomic(tables / "faults.md", to_md_widths(cols, wide, MD_GRID_WIDTHS))
    write_text_atomic(tables / "faults-claims.csv", to_csv(CLAIM_COLS, cr))
    write_text_atomic(tables / "faults-claims.md", to_md_widths(MD_CLAIM_COLS, cr, MD_CLAIM_WIDTHS))
    hcols, hrows = hosts_grid(runs, testbed)
    write_text_atomic(tables / "faults-hosts.csv", to_csv(hcols, hrows))
    write_text_atomic(tables / "faults-hosts.md", to_md_widths(hcols, hrows, MD_HOSTS_WIDTHS))
    chart, caption, alt_text = figure(runs, cl, testbed)
    save_chart(chart, "faults-lost", caption, alt_text, figures_dir, png_scale)
    chart, caption, alt_text = figure_timeline(runs, testbed)
    save_chart(chart, "faults-timeline", caption, alt_text, figures_dir, png_scale)
    return {"runs": runs, "cells": cl, "claims": cr, "hosts": hrows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raw", type=Path, required=True)
    ap.add_argument("--testbed", required=True, help="the testbed whose runs make the grid, figure and claims")
    ap.add_argument("--tables", type=Path, required=True)
    ap.add_argument("--figures", type=Path, required=True)
    ap.add_argument("--derived", type=Path)
    ap.add_argument("--png-scale", type=float, default=2.0)
    ap.add_argument("--suspect", choices=("mark", "exclude"), default="mark",
                    help="runs workloads.run judged suspect: drawn in their own colour, or left out")
    a = ap.parse_args(argv)

    def body():
        out = build(a.raw, a.testbed, a.tables, a.figures, a.derived, a.png_scale, a.suspect)
        print(f"fault runs={len(out['runs'])} cells_run={sum(c['status'] == 'run' for c in out['cells'])} "
              + " ".join(f"{c['claim_id']}:{c['system']}={c['verdict']!r}" for c in out["claims"]))
    return cli(body)


if __name__ == "__main__":
    sys.exit(main())
