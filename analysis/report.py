"""Tables for the paper (paper/tables/<id>.csv/.md), the claims table and paper/_variables.yml.

python -m analysis.report --derived data/derived --reference data/reference/studies.csv
                          --tables paper/tables --variables paper/_variables.yml [--testbed local]
                          [--coverage analysis/coverage] [--findings-tables paper/tables]
"""
from __future__ import annotations

import argparse
import csv
import io
import os
import sys
import tempfile
from pathlib import Path

import polars as pl
import yaml

from . import InputError, claims, coverage, stats as st
from .labels import PUBLISHED_TESTBED_LABEL

LAT_TABLES = [f"latency-{m}-{s}-{d}" for m in ("publish", "e2e") for s in ("1sub", "10sub") for d in ("sync", "async")]
TABLE_IDS = LAT_TABLES + ["maxtput", "partition-sweep", "catchup", "mixed", "claims", "testbed", "runs", "verdicts", "published-002", "published-004"]
STUDY_TABLE = {("publish", "1sub", "sync"): "2-2", ("e2e", "1sub", "sync"): "2-3", ("publish", "1sub", "async"): "2-4",
               ("e2e", "1sub", "async"): "2-5", ("publish", "10sub", "sync"): "2-7", ("e2e", "10sub", "sync"): "2-8",
               ("publish", "10sub", "async"): "2-9", ("e2e", "10sub", "async"): "2-10"}
SERIES_ORDER = ["pulsar-ack-1", "pulsar-ack-2", "kafka-ack-1", "kafka-ack-all"]


def load(derived: Path, names=("runs", "windows", "stats", "quantiles", "probes")) -> dict:
    out = {}
    for name in names:
        p = Path(derived) / f"{name}.parquet"
        if not p.exists():
            raise InputError(p, "(file)", "missing; run the ingest rule first")
        out[name] = pl.read_parquet(p)
    vj = Path(derived) / "validity.json"
    if vj.exists():
        import json
        out["validity"] = json.loads(vj.read_text())
    return out


def distinct(runs: pl.DataFrame) -> pl.DataFrame:
    """One row per distinct result file (published duplicates share a blob SHA-1)."""
    return runs.unique(subset=["testbed", "blob_sha1"], keep="first", maintain_order=True)


def latency_runs(runs: pl.DataFrame, subscriptions: int, partitions: int | None = None) -> pl.DataFrame:
    """Fixed-rate latency runs: E000-LAT1 and the partition sweep E000-LAT3 share the 100-partition point."""
    exps = ["E000-LAT1", "E000-LAT3"] if subscriptions == 1 else ["E000-LAT2"]
    df = runs.filter(pl.col("experiment").is_in(exps) & (pl.col("subscriptions") == subscriptions))
    if partitions is not None:
        df = df.filter(pl.col("partitions") == partitions)
    return distinct(df)


def cell(values):
    """(median, ci_low, ci_high, n) across repetitions."""
    vals = [v for v in values if v is not None]
    lo, hi = st.bootstrap_ci(vals)
    return st.median(vals), lo, hi, len(vals)


def latency_rows(d, metric, subscriptions, local, partitions=100):
    runs = latency_runs(d["runs"], subscriptions, partitions).filter(pl.col("local_durability") == local)
    s = d["stats"].filter(pl.col("metric") == metric)
    j = runs.join(s, on="run_id", how="inner")
    # coordinated-omission-corrected latency (from the intended send time) of this project's runs
    corr = d["stats"].filter(pl.col("metric") == f"{metric}_corrected").select("run_id", pl.col("p99_ms").alias("p99_corr"))
    j = j.join(corr, on="run_id", how="left")
    rows = []
    for (tb, series), g in sorted(j.group_by(["testbed_label", "series"]), key=lambda kv: (
            kv[0][0] != PUBLISHED_TESTBED_LABEL, kv[0][0], SERIES_ORDER.index(kv[0][1]) if kv[0][1] in SERIES_ORDER else 9)):
        r = {"testbed": tb, "series": series, "runs": g.height}
        for c in ("avg", "p50", "p90", "p99", "p99_9"):
            r[f"{c}_ms"] = st.median(g[f"{c}_ms"].to_list())
        _, r["p99_ci_low_ms"], r["p99_ci_high_ms"], _ = cell(g["p99_ms"].to_list())
        r["p99_corrected_ms"] = st.median(g["p99_corr"].to_list())
        rows.append(r)
    return rows


def latency_table(d, mid, sub, dur, study_rows):
    rows = latency_rows(d, mid, 1 if sub == "1sub" else 10, dur)
    t = STUDY_TABLE[(mid, sub, dur)]
    for r in rows:
        pr = {x["stat"]: float(x["value"]) for x in study_rows
              if x["table"] == t and f"{x['system']}-ack-{'all' if x['system'] == 'kafka' and x['ack'] == '2' else x['ack']}" == r["series"]}
        r["study_avg_ms"], r["study_p99_ms"] = pr.get("avg"), pr.get("p99")
    cols = ["testbed", "series", "runs", "avg_ms", "p50_ms", "p90_ms", "p99_ms", "p99_9_ms", "p99_ci_low_ms",
            "p99_ci_high_ms", "p99_corrected_ms", "study_avg_ms", "study_p99_ms"]
    return cols, rows


def maxtput_table(d):
    runs = distinct(d["runs"].filter(pl.col("experiment").str.starts_with("E000-MT")))
    s = d["stats"].filter(pl.col("metric") == "publish")
    j = runs.join(s, on="run_id", how="left")
    rows = []
    keys = ["testbed_label", "partitions", "producers_per_topic", "series", "level", "local_durability"]
    for k, g in sorted(j.group_by(keys), key=lambda kv: (kv[0][0] != PUBLISHED_TESTBED_LABEL, *[str(x) for x in kv[0][1:]])):
        med, lo, hi, n = cell(g["publish_mean_mibps"].to_list())
        rows.append(dict(zip(["testbed", "partitions", "producers", "series", "level", "local_durability"], k),
                         runs=n, publish_mibps=med, ci_low_mibps=lo, ci_high_mibps=hi,
                         publish_p99_ms=st.median(g["p99_ms"].to_list())))
    rows.sort(key=lambda r: (r["testbed"] != PUBLISHED_TESTBED_LABEL, r["testbed"], r["partitions"], r["producers"],
                             r["local_durability"], r["series"]))
    return ["testbed", "partitions", "producers", "series", "level", "local_durability", "runs", "publish_mibps",
            "ci_low_mibps", "ci_high_mibps", "publish_p99_ms"], rows


def sweep_table(d):
    runs = latency_runs(d["runs"], 1)
    rows = []
    for metric in ("publish", "e2e"):
        j = runs.join(d["stats"].filter(pl.col("metric") == metric), on="run_id", how="inner")
        for k, g in j.group_by(["testbed_label", "local_durability", "ack", "system", "partitions"]):
            r = dict(zip(["testbed", "local_durability", "ack", "system", "partitions"], k), metric=metric, runs=g.height)
            for c in ("avg", "p50", "p90", "p99", "p99_9"):
                r[f"{c}_ms"] = st.median(g[f"{c}_ms"].to_list())
            rows.append(r)
    rows.sort(key=lambda r: (r["testbed"] != PUBLISHED_TESTBED_LABEL, r["testbed"], r["metric"] != "publish",
                             r["local_durability"] != "sync", r["ack"], r["system"], r["partitions"]))
    return ["testbed", "metric", "local_durability", "ack", "system", "partitions", "runs", "avg_ms", "p50_ms",
            "p90_ms", "p99_ms", "p99_9_ms"], rows


CATCHUP_MODES = {"bypass-journal": "1 bypass journal", "nosync": "2 async", "sync": "3 sync",
                 "bypass": "1 bypass journal", "async": "2 async"}


def catchup_mode(df: pl.DataFrame) -> pl.DataFrame:
    """Study 000's three catch-up modes: the published folder, or the local durability of our runs."""
    return df.with_columns(pl.col("catchup_mode").fill_null(pl.col("local_durability"))
                           .replace_strict(CATCHUP_MODES, default="other").alias("mode"))


def catchup_table(d):
    runs = catchup_mode(distinct(d["runs"].filter(pl.col("experiment") == "E000-CU")))
    j = runs.join(d["stats"].filter(pl.col("metric") == "publish"), on="run_id", how="left")
    rows = []
    for k, g in j.group_by(["testbed_label", "mode", "system", "ack"]):
        tb, mode, system, ack = k
        peak = st.median(g["consume_peak_msgps"].to_list())
        size = g["message_size_bytes"][0]
        rows.append({"testbed": tb, "mode": mode, "system": system, "ack": ack, "runs": g.height,
                     "peak_read_msgps": peak, "peak_read_gibps": None if peak is None else peak * size / st.GIB,
                     "mean_drain_msgps": st.median(g["drain_mean_msgps"].to_list()),
                     "backlog_gib": st.median([None if b is None else b * size / st.GIB for b in g["backlog_max_msgs"].to_list()]),
                     "publish_p99_ms": st.median(g["p99_ms"].to_list())})
    rows.sort(key=lambda r: (r["testbed"] != PUBLISHED_TESTBED_LABEL, r["testbed"], r["mode"], r["system"], r["ack"]))
    return ["testbed", "mode", "system", "ack", "runs", "peak_read_msgps", "peak_read_gibps", "mean_drain_msgps",
            "backlog_gib", "publish_p99_ms"], rows


def mixed_table(d, reference_csv, claims_df):
    rows = []
    with open(reference_csv, newline="") as f:
        ref = [r for r in csv.DictReader(f) if r["study"] == "000" and r["experiment"].startswith("mixed")]
    for r in ref:
        local = "sync" if r["config"].startswith("sync") else "async"
        ack = 1 if r["config"].endswith("ack-1") else 2
        c = claims_df.filter(pl.col("experiment").eq("E000-MIX") & pl.col("system").eq(r["system"]) & pl.col("config").eq(r["config"]))
        files = c["files"][0].split() if c.height and c["files"][0] else []
        source = (f"proxy: catch-up run in {claims.proxy_folders(files)} (no mixed files published)" if files
                  else "proxy: no catch-up file of this level either")
        rows.append({"testbed": PUBLISHED_TESTBED_LABEL, "local_durability": local, "ack": ack, "system": r["system"],
                     "source": source,
                     "publish_p99_ms": c["derived"][0] if c.height else None, "study_publish_p99_ms": float(r["value"])})
    loc = d["runs"].filter((pl.col("experiment") == "E000-MIX") & pl.col("mixed_publish_p99_ms").is_not_null())
    for k, g in loc.group_by(["testbed_label", "local_durability", "ack", "system"]):
        rows.append(dict(zip(["testbed", "local_durability", "ack", "system"], k), source="this project (during catch-up)",
                         publish_p99_ms=st.median(g["mixed_publish_p99_ms"].to_list()), study_publish_p99_ms=None))
    return ["testbed", "local_durability", "ack", "system", "source", "publish_p99_ms", "study_publish_p99_ms"], rows


PUBLISHED_TESTBED_FACTS = [  # study 000 §000.1 (reference facts, not measurements)
    ("instances", "3 × AWS i3en.2xlarge (8 vCPU, 64 GB RAM, 2 × 2,500 GB NVMe)"),
    ("pulsar version", "2.6.1-sn-16"), ("kafka version", "not stated"),
    ("disk write (dd, per disk)", "327 / 328 MB/s"), ("fsync p99", "1–6 ms across the 3 instances"),
]


def probe_facts(probes: pl.DataFrame) -> dict:
    """Testbed facts of this project's probes (one testbed: the first found, or per config testbed)."""
    f = {}
    if probes.height == 0:
        return f
    host = probes.filter(pl.col("probe") == "host")
    for key, name in (("cpuModel", "cpu"), ("cores", "cores"), ("memBytes", "mem_bytes"), ("kernel", "kernel"), ("os", "os")):
        h = host.filter(pl.col("key") == key)
        if h.height:
            val = h["value"][0] if h["value"][0] is not None else h["text"][0]
            f[name] = int(val) if isinstance(val, float) and val.is_integer() else val
    if isinstance(f.get("mem_bytes"), (int, float)):
        f["mem_gib"] = round(f.pop("mem_bytes") / 2 ** 30, 1)
    w = probes.filter(pl.col("key") == "writeMBps")
    if w.height:
        f["disk_write_mbps"] = round(w["value"].max())
    fs = probes.filter((pl.col("probe") == "fio-fsync") & (pl.col("key") == "latencyUs.p99"))
    if fs.height:
        f["fsync_p99_ms"] = round(fs["value"].max() / 1000, 3)
    return f


def testbed_table(d):
    rows = [{"testbed": PUBLISHED_TESTBED_LABEL, "item": k, "value": v, "source": "studies.md §000.1"} for k, v in PUBLISHED_TESTBED_FACTS]
    pr = d["probes"]
    for tb in sorted(set(pr["testbed"].to_list())):
        for k, v in probe_facts(pr.filter(pl.col("testbed") == tb)).items():
            rows.append({"testbed": tb, "item": k, "value": v, "source": "hw-probes"})
    loc = d["runs"].filter(pl.col("source") == "local")
    for (tb, system), g in loc.group_by(["testbed", "system"]):
        vs = sorted(set(g["version"].to_list()))
        rows.append({"testbed": tb, "item": f"{system} version", "value": ", ".join(vs), "source": "x-streambench.cluster"})
    return ["testbed", "item", "value", "source"], rows


def _values(col) -> str:
    vals = sorted({v for v in col.to_list() if v is not None})
    return ", ".join(str(int(v)) if float(v).is_integer() else str(v) for v in vals)


def runs_table(d):
    """Result files per experiment and system, with the sizes the runs really had: the other tables label a
    local run by the study test it reproduces (e.g. 100 partitions), this one says what it ran with (e.g. 16)."""
    rows = []
    for k, g in d["runs"].group_by(["source", "experiment", "system"]):
        local = k[0] == "local"
        rate = _values(g["effective_rate_msgps"].filter(g["effective_rate_msgps"] > 0)) if local else ""
        if local and (g["effective_rate_msgps"] == 0).any():
            rate = ", ".join(x for x in (rate, "max (rate search)") if x)
        rows.append(dict(zip(["source", "experiment", "system"], k), runs=distinct(g).height, files=g.height,
                         distinct_files=g["blob_sha1"].n_unique(), testbeds=", ".join(sorted(set(g["testbed_label"].to_list()))),
                         study_partitions=_values(g["partitions"]),
                         ran_with_partitions=_values(g["effective_partitions"]) if local else "as published",
                         ran_at_msgps=rate if local else "as published"))
    rows.sort(key=lambda r: (r["source"] != "published", r["experiment"], r["system"]))
    return ["source", "experiment", "system", "runs", "files", "distinct_files", "testbeds", "study_partitions",
            "ran_with_partitions", "ran_at_msgps"], rows


# the text versions of wide tables keep the columns a reader needs (the .csv has every column)
# (claims: n is the published files per cell, 1: study 000 published one file per configuration, so its verdicts
# compare single values; this testbed's repeated runs are judged over intervals by the study modules)
MD_COLUMNS = {"claims": ["claim_id", "section", "unit", "printed", "derived", "n", "verdict", "ambiguous", "note"]}
# relative column widths of those text versions (pandoc reads them from the separator's dashes): a narrow n, the
# unbreakable claim ids wide enough not to run into the next column
MD_WIDTHS = {"claims": [15, 12, 4, 7, 7, 3, 12, 12, 16]}


def fmt(v):
    if v is None:
        return ""
    if isinstance(v, float):
        if v != v:
            return ""
        a = abs(v)
        return f"{v:.0f}" if a >= 1000 else f"{v:.1f}" if a >= 100 else f"{v:.2f}" if a >= 1 else f"{v:.3g}"
    return str(v)


def to_csv(cols, rows) -> str:
    b = io.StringIO()
    w = csv.DictWriter(b, fieldnames=cols, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({c: ("" if r.get(c) is None else r.get(c)) for c in cols})
    return b.getvalue()


def to_md(cols, rows) -> str:
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(fmt(r.get(c)).replace("|", "/") for c in cols) + " |")
    return "\n".join(lines) + "\n"


def write_text_atomic(path: Path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_table(out: Path, tid: str, cols, rows, md_cols=None, md_widths=None) -> None:
    """One table as `<tid>.csv` (every column) and `<tid>.md` (md_cols, default all; md_widths: relative column
    widths, default equal), each written atomically."""
    write_text_atomic(out / f"{tid}.csv", to_csv(cols, rows))
    md = to_md(cols if md_cols is None else md_cols, rows)
    if md_widths is not None:
        lines = md.split("\n")
        lines[1] = "|" + "|".join("-" * (3 * w) for w in md_widths) + "|"
        md = "\n".join(lines)
    write_text_atomic(out / f"{tid}.md", md)


def build_tables(d, reference_csv, tables_csv=claims.TABLES_CSV) -> dict:
    with open(tables_csv, newline="") as f:
        study_rows = list(csv.DictReader(f))
    cl = claims.derive(d["runs"], d["stats"], reference_csv, tables_csv)
    out = {}
    for tid in LAT_TABLES:
        _, mid, sub, dur = tid.split("-")
        out[tid] = latency_table(d, mid, sub, dur, study_rows)
    out["maxtput"] = maxtput_table(d)
    out["partition-sweep"] = sweep_table(d)
    out["catchup"] = catchup_table(d)
    out["mixed"] = mixed_table(d, reference_csv, cl)
    out["claims"] = (list(claims.CLAIMS_SCHEMA), cl.to_dicts())
    out["testbed"] = testbed_table(d)
    out["runs"] = runs_table(d)
    from .verdicts import verdict_table
    out["verdicts"] = verdict_table(cl)
    from .reference import STUDIES, reference_table
    for study in STUDIES:
        out[f"published-{study}"] = reference_table(reference_csv, study)
    return out, cl


# keys of the catch-up numbers in _variables.yml (stable names the paper uses)
CATCHUP_VAR = {"1 bypass journal": "bypass_journal", "2 async": "nosync", "3 sync": "sync", "other": "other"}


def _key(s: str) -> str:
    return s.replace("-", "_").replace(".", "_")


def _validity_vars(d) -> dict:
    """How many of this testbed's runs were suspect, and what became of them (data/derived/validity.json)."""
    v = d.get("validity") or {}
    return {"suspect": v.get("suspect", 0), "suspect_excluded": v.get("excluded", 0),
            "suspect_mode": v.get("mode", "mark")}


SYSTEMS = ("kafka", "pulsar", "pravega")


def study_facts(reference_csv) -> dict:
    """What data/reference/studies.csv holds: the studies, the numbers they print, the systems they measure (the
    `system` column's names, e.g. 'pulsar-2.10' or 'pravega-vs-kafka', reduced to the systems they name)."""
    with open(reference_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    for i, r in enumerate(rows, 2):
        for field in ("study", "system"):
            if not (r.get(field) or "").strip():
                raise InputError(reference_csv, field, f"empty on line {i}")
    ids = sorted({r["study"] for r in rows})
    systems = [s for s in SYSTEMS if any(s in r["system"].lower() for r in rows)]
    names = [s.capitalize() for s in systems]
    return {"count": len(ids), "ids": f"{ids[0]}–{ids[-1]}" if ids else "n/a", "others": max(len(ids) - 1, 0),
            "numbers": len(rows), "systems_count": len(systems),
            "systems": ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1] if names else "n/a"}


def variables(d, cl: pl.DataFrame, tables: dict, testbed: str, reference_csv=None, coverage_dir=None,
              findings_tables=None, derived_dir=None) -> dict:
    runs = d["runs"]
    pub = runs.filter(pl.col("source") == "published")
    loc = runs.filter(pl.col("source") == "local")
    v = cl["verdict"]
    matched = int(v.str.starts_with("matches").sum())
    differ = int(v.str.starts_with("differs").sum())
    na = "n/a"
    facts = probe_facts(d["probes"].filter(pl.col("testbed") == testbed)) if d["probes"].height else {}
    versions = {}
    for system in ("kafka", "pulsar"):
        vs = sorted(set(loc.filter(pl.col("system") == system)["version"].to_list()) - {"n/a"})
        versions[system] = ", ".join(vs) if vs else na
    derived = {}
    for tid in LAT_TABLES:
        _, mid, sub, dur = tid.split("-")
        for r in tables[tid][1]:
            if r["testbed"] == PUBLISHED_TESTBED_LABEL:
                derived[f"{mid}_p99_{sub}_{dur}_{_key(r['series'])}"] = round(r["p99_ms"], 2)
    for r in tables["maxtput"][1]:
        if r["testbed"] == PUBLISHED_TESTBED_LABEL:
            derived[f"maxtput_{r['partitions']}p_{r['producers']}prod_{r['local_durability']}_{_key(r['series'])}_mibps"] = round(r["publish_mibps"], 1)
    for r in tables["catchup"][1]:
        if r["testbed"] == PUBLISHED_TESTBED_LABEL and r["peak_read_msgps"] is not None:
            derived[f"catchup_peak_{CATCHUP_VAR[r['mode']]}_{r['system']}_ack{r['ack']}_mmsgps"] = round(r["peak_read_msgps"] / 1e6, 2)
    return {
        "published": {"files": pub.height, "distinct_files": pub["blob_sha1"].n_unique(),
                      "repo": "streamnative/openmessaging-benchmark", "commit": "5e1cbd40690850a2829cb159149e1ff32e7d1925",
                      "testbed": PUBLISHED_TESTBED_LABEL},
        "claims": {"total": cl.height, "matched": matched, "differ": differ,
                   "no_data": int(v.str.starts_with("no raw data").sum()),
                   "ambiguous": int((cl["ambiguous"] != "").sum()),
                   "matched_pct": round(100 * matched / (matched + differ)) if matched + differ else na},
        "local": {"runs": loc.height, "testbed": testbed, **_validity_vars(d)},
        "versions": versions,
        "testbed": {"cpu": facts.get("cpu", na), "cores": facts.get("cores", na),
                    "mem_gib": facts.get("mem_gib", na),
                    "kernel": facts.get("kernel", na), "os": facts.get("os", na),
                    "disk_write_mbps": round(facts["disk_write_mbps"]) if "disk_write_mbps" in facts else na,
                    "fsync_p99_ms": round(facts["fsync_p99_ms"], 2) if "fsync_p99_ms" in facts else na},
        "derived": derived,
        **({"studies": study_facts(reference_csv)} if reference_csv is not None else {}),
        **({"coverage": coverage.variables(coverage_dir)} if coverage_dir is not None else {}),
        **({"findings": _findings(d, findings_tables, derived_dir, reference_csv)} if findings_tables is not None else {}),
    }


def _findings(d, tables_dir, derived_dir, reference_csv) -> dict:
    """The findings' headline numbers (analysis.findings), from the study modules' tables and the fault runs."""
    from . import findings  # imported here: the study modules it reads through import this module
    if reference_csv is None or derived_dir is None:
        raise InputError("(command line)", "--findings-tables", "needs --reference and --derived")
    return findings.variables(d["runs"], d["stats"], tables_dir, derived_dir, reference_csv)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--derived", type=Path, required=True)
    ap.add_argument("--reference", type=Path, required=True)
    ap.add_argument("--study-tables", type=Path, default=Path(claims.TABLES_CSV))
    ap.add_argument("--tables", type=Path, required=True)
    ap.add_argument("--variables", type=Path, required=True)
    ap.add_argument("--testbed", default="local")
    ap.add_argument("--coverage", type=Path, default=None, help="the coverage registry (analysis/coverage): coverage.* keys")
    ap.add_argument("--findings-tables", type=Path, default=None,
                    help="where the study modules wrote their runs tables (paper/tables): findings.* keys, with the "
                         "fault runs of --derived/faults.parquet")
    ap.add_argument("--bootstrap-resamples", type=int, default=st.BOOTSTRAP["n_boot"])
    ap.add_argument("--bootstrap-seed", type=int, default=st.BOOTSTRAP["seed"])
    ap.add_argument("--ci-level", type=float, default=st.BOOTSTRAP["level"])
    ap.add_argument("--approx-tolerance-pct", type=float, default=claims.APPROX_TOL_PCT)
    a = ap.parse_args(argv)
    st.BOOTSTRAP.update(n_boot=a.bootstrap_resamples, seed=a.bootstrap_seed, level=a.ci_level)
    claims.APPROX_TOL_PCT = a.approx_tolerance_pct
    try:
        d = load(a.derived, names=("runs", "windows", "stats", "probes"))
        tables, cl = build_tables(d, a.reference, a.study_tables)
        variables_doc = variables(d, cl, tables, a.testbed, a.reference, a.coverage, a.findings_tables, a.derived)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for tid, (cols, rows) in tables.items():
        write_table(a.tables, tid, cols, rows, MD_COLUMNS.get(tid), MD_WIDTHS.get(tid))
    write_text_atomic(a.variables, yaml.safe_dump(variables_doc, sort_keys=False, allow_unicode=True))
    print(f"{len(tables)} tables; claims {cl.height}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
