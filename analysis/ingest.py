"""Ingest: published study 000 files + this project's runs + probes -> tidy parquet tables in data/derived.

python -m analysis.ingest --published data/published/streamnative-2020 --manifest analysis/published/streamnative-2020.tsv
                          --raw data/raw --out data/derived
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import polars as pl

from . import InputError, labels, omb, stats
from .labels import FAULT_SUFFIXES
from .published import read_manifest

WINDOW_S = 10.0
PCT_NAMES = {"Avg": "avg", "50pct": "p50", "75pct": "p75", "95pct": "p95", "99pct": "p99", "999pct": "p99_9",
             "9999pct": "p99_99", "Max": "max"}
HIST_GRID = sorted(set([float(p) for p in range(0, 100)] + [99.5, 99.9, 99.95, 99.99, 99.999, 100.0]))

RUNS_SCHEMA = {
    "run_id": pl.Utf8, "source": pl.Utf8, "study": pl.Utf8, "experiment": pl.Utf8, "system": pl.Utf8,
    "version": pl.Utf8, "level": pl.Utf8, "local_durability": pl.Utf8, "ack": pl.Int64, "series": pl.Utf8,
    "tuning": pl.Utf8, "topics": pl.Int64, "partitions": pl.Int64, "subscriptions": pl.Int64,
    "producers_per_topic": pl.Int64, "consumers_per_subscription": pl.Int64, "message_size_bytes": pl.Int64,
    "producer_rate_msgps": pl.Float64, "backlog_gb": pl.Float64, "catchup_mode": pl.Utf8, "testbed": pl.Utf8,
    "testbed_label": pl.Utf8, "repetition": pl.Int64, "schema_generation": pl.Utf8, "workload_name": pl.Utf8,
    "driver": pl.Utf8, "workload_name_conflicts": pl.Utf8, "n_windows": pl.Int64,
    "publish_mean_msgps": pl.Float64, "publish_mean_mibps": pl.Float64, "consume_peak_msgps": pl.Float64,
    "consume_peak_gibps": pl.Float64, "drain_mean_msgps": pl.Float64, "backlog_max_msgs": pl.Float64,
    "mixed_publish_p99_ms": pl.Float64, "effective_partitions": pl.Int64, "effective_rate_msgps": pl.Float64,
    "path": pl.Utf8, "url": pl.Utf8, "blob_sha1": pl.Utf8, "bytes": pl.Int64,
    "validity": pl.Utf8, "validity_reasons": pl.Utf8,
}
# how runs that workloads.run judged `suspect` (busy host, steal, a runner behind its schedule) enter the tables:
# "mark" keeps them, labelled "<testbed> (suspect)" so every figure and table shows them apart; "exclude" leaves
# them out. Either way data/derived/validity.json lists them and the paper says how many there were.
SUSPECT_MODES = ("mark", "exclude")
STATS_SCHEMA = {"run_id": pl.Utf8, "metric": pl.Utf8, "method": pl.Utf8, "avg_ms": pl.Float64, "p50_ms": pl.Float64,
                "p90_ms": pl.Float64, "p99_ms": pl.Float64, "p99_9_ms": pl.Float64, "max_ms": pl.Float64}
QUANT_SCHEMA = {"run_id": pl.Utf8, "metric": pl.Utf8, "percentile": pl.Float64, "value_ms": pl.Float64}
PROBE_SCHEMA = {"testbed": pl.Utf8, "host": pl.Utf8, "probe": pl.Utf8, "dir": pl.Utf8, "device": pl.Utf8,
                "key": pl.Utf8, "value": pl.Float64, "text": pl.Utf8, "path": pl.Utf8}


def window_schema():
    s = {"run_id": pl.Utf8, "window": pl.Int64, "t_s": pl.Float64, "publish_rate_msgps": pl.Float64,
         "consume_rate_msgps": pl.Float64, "backlog_msgs": pl.Float64}
    for pre in ("publish", "e2e"):
        for v in PCT_NAMES.values():
            s[f"{pre}_{v}_ms"] = pl.Float64
    return s


def _conflicts(lab: dict, workload: str) -> str:
    """Where the free-text workload name disagrees with the path labels (kept visible, never used)."""
    import re
    out = []
    m = re.search(r"(\d+) partitions?", workload)
    if m and int(m.group(1)) != lab["partitions"]:
        out.append(f"partitions {m.group(1)}")
    m = re.search(r"(\d+) producers?", workload)
    if m and int(m.group(1)) != lab["producers_per_topic"]:
        out.append(f"producers {m.group(1)}")
    m = re.search(r"(\d+) consumers?", workload)
    if m and int(m.group(1)) != lab["consumers_per_subscription"] * lab["subscriptions"] \
            and int(m.group(1)) != lab["consumers_per_subscription"]:
        out.append(f"consumers {m.group(1)}")
    return "; ".join(out)


def _run_rows(run_id, lab, r, prov):
    w = r["windows"]
    n = r["n_windows"]
    size = r["meta"].get("messageSize") or lab.get("message_size_bytes") or 1024  # the bytes actually sent
    pub_mean = stats.mean(w["publishRate"]) if n else None
    cons_peak = max(w["consumeRate"]) if n else None
    drain, _ = stats.drain_rate(w["backlog"], w["consumeRate"]) if n else (None, 0)
    row = {k: lab.get(k) for k in RUNS_SCHEMA}
    row.update(run_id=run_id, schema_generation=r["generation"], workload_name=r["workload"], driver=r["driver"],
               n_windows=n, publish_mean_msgps=pub_mean,
               publish_mean_mibps=None if pub_mean is None else pub_mean * size / stats.MIB,
               consume_peak_msgps=cons_peak,
               consume_peak_gibps=None if cons_peak is None else cons_peak * size / stats.GIB,
               drain_mean_msgps=drain, backlog_max_msgs=max(w["backlog"]) if n else None, **prov)
    row["message_size_bytes"] = size
    row["workload_name_conflicts"] = _conflicts(lab, r["workload"]) if lab.get("partitions") else ""
    windows = []
    for i in range(n):
        wr = {"run_id": run_id, "window": i, "t_s": (i + 1) * WINDOW_S, "publish_rate_msgps": w["publishRate"][i],
              "consume_rate_msgps": w["consumeRate"][i], "backlog_msgs": w["backlog"][i]}
        for p, v in PCT_NAMES.items():
            wr[f"publish_{v}_ms"] = w[f"publishLatency{p}"][i]
            wr[f"e2e_{v}_ms"] = w[f"endToEndLatency{p}"][i]
        windows.append(wr)
    st, qs = [], []
    hists = r["histograms"]
    for metric in ("publish", "e2e", "publish_delay", "publish_corrected", "e2e_corrected"):
        if metric in hists and hists[metric].total > 0:
            h = hists[metric]
            st.append({"run_id": run_id, "metric": metric, "method": "merged-histogram", **stats.stats_from_hist(h)})
            qs += [{"run_id": run_id, "metric": metric, "percentile": p, "value_ms": h.value_at_percentile(p) / 1000}
                   for p in HIST_GRID]
        elif r["quantiles"].get(metric):
            items = r["quantiles"][metric]
            st.append({"run_id": run_id, "metric": metric, "method": "quantile-map",
                       **stats.stats_from_map(items, r["agg"][(metric, "Avg")])})
            qs += [{"run_id": run_id, "metric": metric, "percentile": p, "value_ms": v} for p, v in items]
    return row, windows, st, qs


def ingest_published(root: Path, manifest: dict):
    rows, wins, sts, qs = [], [], [], []
    found = sorted(str(p.relative_to(root)) for p in (root / "results").rglob("*.json")) if (root / "results").is_dir() else []
    missing = sorted(set(manifest) - set(found))
    if missing:
        raise InputError(root / missing[0], "(file)", f"listed in the manifest but absent ({len(missing)} missing)")
    extra = sorted(set(found) - set(manifest))
    if extra:
        raise InputError(root / extra[0], "(file)", "not in the manifest")
    for rel in found:
        lab = labels.parse_published_path(rel)
        m = manifest[rel]
        r = omb.load(root / rel, rel=str(root / rel))
        prov = {"path": rel, "url": f"https://github.com/{m['repo']}/blob/{m['commit']}/{m['source_path']}",
                "blob_sha1": m["blob_sha1"], "bytes": int(m["bytes"])}
        a, b, c, d = _run_rows(f"published:{rel}", lab, r, prov)
        rows.append(a); wins += b; sts += c; qs += d
    return rows, wins, sts, qs


def _git_blob_sha1(data: bytes) -> str:
    import hashlib
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def ingest_raw(raw: Path, suspect: str = "mark", validity: dict | None = None):
    rows, wins, sts, qs = [], [], [], []
    if validity is None:
        validity = {}
    validity.setdefault("mode", suspect)
    validity.setdefault("runs", [])
    if not raw.is_dir():
        return rows, wins, sts, qs
    for p in sorted(raw.glob("*/*/*/*/rep-*.json")):
        rel = str(p.relative_to(raw))
        if rel.split("/")[1] == "probes":
            continue
        if rel.split("/")[3].endswith(FAULT_SUFFIXES):
            continue  # a fault run's verdict (workloads/faultrun.py), not an OMB result: the fault study reads it
        lab = labels.parse_raw_path(rel)
        r = omb.load(p, rel=str(p))
        x = r["x"] or {}
        cluster = x.get("cluster") or {}
        wl = x.get("workload") or {}
        meta = r["meta"]
        # labels are the nominal (study) shape from the path; the run's effective, possibly scaled, values are kept
        lab["effective_partitions"] = meta.get("partitions")
        lab["effective_rate_msgps"] = wl.get("producerRate")
        lab.setdefault("subscriptions", wl.get("subscriptionsPerTopic") or 1)
        if cluster:
            for key in ("system", "level"):
                v = cluster.get(key)
                if v is not None and str(v).split("-")[0] != str(lab[key]).split("-")[0]:
                    raise InputError(p, f"x-streambench.cluster.{key}", f"{v!r} disagrees with the path ({lab[key]!r})")
        val = (x.get("testbedHost") or {}).get("validity") or {}
        lab["validity"] = val.get("status")
        lab["validity_reasons"] = "; ".join(val.get("reasons") or [])
        if val.get("status") == "suspect":
            validity["runs"].append({"path": rel, "reasons": val.get("reasons") or [],
                                     "excluded": suspect == "exclude"})
            if suspect == "exclude":
                continue
            lab["testbed_label"] = f"{lab['testbed_label']} (suspect)"
        lab["version"] = str(cluster.get("version") or "n/a")
        lab["tuning"] = str(cluster.get("tuning") or lab.get("tuning") or "n/a")
        if (x.get("mixed") or {}).get("during"):
            lab["mixed_publish_p99_ms"] = ((x["mixed"]["during"].get("publishLatencyMs") or {}).get("p99"))
        data = p.read_bytes()
        prov = {"path": rel, "url": None, "blob_sha1": _git_blob_sha1(data), "bytes": len(data)}
        a, b, c, d = _run_rows(f"local:{rel}", lab, r, prov)
        bl = x.get("backlog") or {}
        if bl.get("drainRateMsgs") is not None:
            a["drain_mean_msgps"] = float(bl["drainRateMsgs"])
        rows.append(a); wins += b; sts += c; qs += d
    return rows, wins, sts, qs


def ingest_probes(raw: Path):
    out = []
    if not raw.is_dir():
        return out
    for p in sorted(raw.glob("*/probes/*/*.json")):
        rel = p.relative_to(raw)
        try:
            d = json.loads(p.read_text())
        except json.JSONDecodeError as e:
            raise InputError(p, "(json)", f"invalid JSON: {e.msg}") from None
        for k in ("probe", "result"):
            if k not in d:
                raise InputError(p, k, "missing key")
        if not isinstance(d["result"], dict):
            raise InputError(p, "result", "not an object")
        base = {"testbed": rel.parts[0], "host": str(d.get("host") or rel.parts[2]), "probe": str(d["probe"]),
                "dir": str(d.get("dir") or ""), "device": str(d.get("device") or ""), "path": str(rel)}

        def flat(prefix, obj):
            for k, v in obj.items():
                key = f"{prefix}{k}"
                if isinstance(v, dict):
                    yield from flat(key + ".", v)
                elif isinstance(v, (int, float)) and not isinstance(v, bool):
                    if v < 0:
                        raise InputError(p, f"result.{key}", f"negative value {v}")
                    yield key, float(v), None
                else:
                    yield key, None, None if v is None else str(v)
        for key, val, text in flat("", d["result"]):
            out.append({**base, "key": key, "value": val, "text": text})
    return out


def build(published: Path | None, manifest_path: Path | None, raw: Path | None, suspect: str = "mark",
          validity: dict | None = None):
    rows, wins, sts, qs = [], [], [], []
    if published is not None:
        a, b, c, d = ingest_published(Path(published), read_manifest(manifest_path))
        rows += a; wins += b; sts += c; qs += d
    if raw is not None:
        a, b, c, d = ingest_raw(Path(raw), suspect, validity)
        rows += a; wins += b; sts += c; qs += d
    tables = {
        "runs": pl.DataFrame(rows, schema=RUNS_SCHEMA, strict=False),
        "windows": pl.DataFrame(wins, schema=window_schema(), strict=False),
        "stats": pl.DataFrame(sts, schema=STATS_SCHEMA, strict=False),
        "quantiles": pl.DataFrame(qs, schema=QUANT_SCHEMA, strict=False),
        "probes": pl.DataFrame(ingest_probes(Path(raw)) if raw is not None else [], schema=PROBE_SCHEMA, strict=False),
    }
    return tables


def write_atomic(tables: dict, out: Path):
    """Write every table to a temp file in `out`, then rename them all; nothing partial is left on failure."""
    out.mkdir(parents=True, exist_ok=True)
    tmps = {}
    try:
        for name, df in tables.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".parquet.tmp", dir=out)
            os.close(fd)
            df.write_parquet(tmp)
            tmps[name] = tmp
        for name, tmp in tmps.items():
            os.replace(tmp, out / f"{name}.parquet")
    finally:
        for tmp in tmps.values():
            if os.path.exists(tmp):
                os.unlink(tmp)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--published", type=Path)
    ap.add_argument("--manifest", type=Path)
    ap.add_argument("--raw", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--suspect", choices=SUSPECT_MODES, default="mark",
                    help="runs judged suspect by workloads.run: mark them (label '<testbed> (suspect)') or exclude them")
    a = ap.parse_args(argv)
    validity: dict = {"mode": a.suspect, "runs": []}
    try:
        tables = build(a.published, a.manifest, a.raw, a.suspect, validity)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    write_atomic(tables, a.out)
    validity["suspect"] = len(validity["runs"])
    validity["excluded"] = sum(r["excluded"] for r in validity["runs"])
    tmp = a.out / ".validity.json.tmp"
    tmp.write_text(json.dumps(validity, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, a.out / "validity.json")
    print(" ".join(f"{k}={v.height}" for k, v in tables.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
