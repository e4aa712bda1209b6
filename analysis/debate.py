"""The 2020 debate from both sides' raw data: Confluent's August 2020 OMB results next to StreamNative's (study 000).

python -m analysis.debate --confluent data/published/confluent-2020 --manifest analysis/published/confluent-2020.tsv \
    --derived data/derived --out paper/tables

Confluent published 12 result files (blog/results/<system>/<throughput|latency>/<config>.json at commit 5b96f19 of
confluentinc/openmessaging-benchmark); they are read with the same OMB reader (analysis.omb) as study 000's files.
Each row carries the durability the run really had, read from the file name and the driver settings the
repository ships (../shared/omb-formats.md):
- Kafka `sync`: kafka-sync.yaml, topic flush.messages=1, flush.ms=0 (fsync every message), acks=all -> Level 1;
- Kafka `default-sync`: acks=all, no flush setting (the page cache) -> Level 2 with Kafka's real defaults;
- Pulsar `default-sync*`: the journal fsynced before the ack (journalSyncData default), E3/W3/A2 -> Level 1;
- RabbitMQ: listed with its own settings (classic or mirrored queues); no level of this artifact applies.
Writes `debate-2020` (the tests both sides ran: maximum throughput and latency at 200 K msg/s on 100 partitions,
Kafka and Pulsar; this testbed's runs at the same levels when they exist) and `confluent-2020-files` (all 12 files).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import polars as pl

from . import InputError, omb, report, stats
from .published import read_manifest

MIB = 1024 ** 2
_PATH = re.compile(r"^results/(kafka|pulsar|rabbitmq)/(throughput|latency)/([\w-]+)\.json$")
# (system, config) -> (level, what the run did before acknowledging)
DURABILITY = {
    ("kafka", "sync"): ("L1", "fsync every message (flush.messages=1), acks=all, RF 3, min ISR 2"),
    ("kafka", "default-sync"): ("L2", "page cache (no flush setting), acks=all, RF 3, min ISR 2"),
    ("pulsar", "default-sync"): ("L1", "journal fsync before ack (defaults), E3/W3/A2"),
}
COLUMNS = ["test", "system", "level", "durability", "source", "config", "publish_mibps", "publish_p99_ms", "e2e_p99_ms"]
FILE_COLUMNS = ["file", "system", "test", "config", "level", "durability", "publish_mibps", "publish_p99_ms",
                "e2e_p99_ms", "windows", "blob_sha1"]
TEST_LABEL = {"throughput": "max throughput, 100 partitions", "latency": "latency at 200 K msg/s, 100 partitions"}


def parse_path(rel: str) -> dict:
    m = _PATH.match(rel)
    if not m:
        raise InputError(rel, "(path)", "not results/<kafka|pulsar|rabbitmq>/<throughput|latency>/<config>.json")
    system, test, config = m.groups()
    base = re.sub(r"-\d+k$", "", config)  # latency files name their rate: default-sync-200k
    variant = ""
    if system == "pulsar" and base.startswith("default-sync-"):
        base, variant = "default-sync", base[len("default-sync-"):]
    level, durability = DURABILITY.get((system, base), ("n/a", "RabbitMQ " + base if system == "rabbitmq" else base))
    return {"system": system, "test": test, "config": config, "variant": variant, "level": level, "durability": durability}


def confluent_rows(folder: Path, manifest: Path) -> list[dict]:
    rows = []
    for local, m in sorted(read_manifest(manifest).items()):
        if not local.startswith("results/"):
            continue  # the workload files
        lab = parse_path(local)
        r = omb.load(folder / local, rel=local)
        rate = stats.mean(r["windows"]["publishRate"])
        size = r["meta"].get("messageSize", 1024)
        rows.append({"file": local, **lab, "publish_mibps": rate * size / MIB,
                     "publish_p99_ms": stats.pct_from_map(r["quantiles"]["publish"], 99.0),
                     "e2e_p99_ms": stats.pct_from_map(r["quantiles"]["e2e"], 99.0),
                     "windows": r["n_windows"], "blob_sha1": m["blob_sha1"]})
    return rows


def streamnative_rows(d: dict) -> list[dict]:
    """Study 000's runs (and this testbed's) of the same two tests at Level 1 and Level 2."""
    runs, st = d["runs"], d["stats"]
    out = []
    want = {"E000-MT1": "throughput", "E000-LAT1": "latency"}
    sel = report.distinct(runs.filter(pl.col("experiment").is_in(list(want)) & pl.col("level").is_in(["L1", "L2"])
                                      & ((pl.col("ack") == 2)) & (pl.col("local_durability") != "bypass")))
    p99 = st.filter(pl.col("metric").is_in(["publish", "e2e"])).select("run_id", "metric", "p99_ms")
    for r in sel.sort(["experiment", "testbed", "system", "level"]).to_dicts():
        m = {x["metric"]: x["p99_ms"] for x in p99.filter(pl.col("run_id") == r["run_id"]).to_dicts()}
        src = "StreamNative 2020 (study 000)" if r["source"] == "published" else f"this testbed ({r['testbed']})"
        out.append({"test": TEST_LABEL[want[r["experiment"]]], "system": r["system"], "level": r["level"],
                    "durability": f"{r['local_durability']} local, {r['series']}", "source": src,
                    "config": r["series"], "publish_mibps": r["publish_mean_mibps"],
                    "publish_p99_ms": m.get("publish"), "e2e_p99_ms": m.get("e2e")})
    return out


def debate_table(conf: list[dict], sn: list[dict]) -> tuple[list, list]:
    rows = []
    for c in conf:
        if c["system"] == "rabbitmq":
            continue
        rows.append({"test": TEST_LABEL[c["test"]], "system": c["system"], "level": c["level"],
                     "durability": c["durability"], "source": "Confluent 2020",
                     "config": c["config"], "publish_mibps": c["publish_mibps"],
                     "publish_p99_ms": c["publish_p99_ms"], "e2e_p99_ms": c["e2e_p99_ms"]})
    rows += sn
    rows.sort(key=lambda r: (r["test"], r["system"], r["level"], r["source"] != "Confluent 2020", r["source"], r["config"]))
    return COLUMNS, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--confluent", type=Path, required=True)
    ap.add_argument("--manifest", type=Path, required=True)
    ap.add_argument("--derived", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    try:
        conf = confluent_rows(a.confluent, a.manifest)
        d = report.load(a.derived, names=("runs", "stats"))
        tables = {"debate-2020": debate_table(conf, streamnative_rows(d)),
                  "confluent-2020-files": (FILE_COLUMNS, [{k: r[k] for k in FILE_COLUMNS} for r in conf])}
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for tid, (cols, rows) in tables.items():
        # the checksums stay in the CSV and the manifest: a 40-digit hex word cannot wrap in a PDF column
        report.write_table(a.out, tid, cols, rows, [c for c in cols if c != "blob_sha1"])
    print(f"{len(conf)} Confluent 2020 files; debate rows {len(tables['debate-2020'][1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
