#!/usr/bin/env python3
"""Start-up and sanity benchmark of the real clusters (not a test: it prints numbers, rerun it to compare).

For each system and repetition:
  * `up` at a level, timing the wall clock until `up` returns verified (and cluster.json's readySeconds),
  * the RSS of every node right after start-up and after the load (Kafka),
  * Kafka only: ProducerPerformance (kafka-tools, the same jars as the brokers) against the 3-node cluster at
    L2 and at L1 with the level's client settings; the ratio L1/L2 of the throughputs is the cost of
    fsync-per-append (flush.messages=1) on this disk.
Prints medians over repetitions.

    python systems/bench/startup.py [--systems kafka pulsar] [--reps 1] [--records 200000] [--record-size 1024]
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[2]))

from systems import cluster, dist  # noqa: E402
from systems import durability as dur  # noqa: E402
from systems.proc import rss_bytes  # noqa: E402
from systems.util import load_config  # noqa: E402

PERF_RE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                     r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th")


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def rss_of(doc: dict) -> dict[str, float]:
    return {n["name"]: round((rss_bytes(n["pid"]) or 0) / 2**20, 1) for n in doc["nodes"]}


def kafka_perf(doc: dict, records: int, size: int, topic: str = "bench-perf", rate: int = -1) -> dict:
    """Kafka's ProducerPerformance on a new 6-partition topic of the cluster, at `rate` records/s (-1: unthrottled)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    client = doc["client"]
    bs = doc["kafka"]["bootstrapServers"]
    admin = AdminClient({"bootstrap.servers": bs, "log_level": 2})
    admin.create_topics([NewTopic(topic, num_partitions=6, replication_factor=client["replicationFactor"],
                                  config=client["topicConfig"])])[topic].result(timeout=60)
    deadline = time.time() + 30
    while time.time() < deadline and topic not in admin.list_topics(timeout=10).topics:
        time.sleep(0.2)
    libs = Path(doc["distribution"]) / "libs"
    props = [f"bootstrap.servers={bs}"] + [f"{k}={v}" for k, v in client["producerConfig"].items()]
    log4j = Path(doc["rundir"]) / "nodes" / "kafka-1" / "log4j2.properties"
    cmd = ["java", "-Xmx512m", f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{libs}/*",
           "org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", str(records),
           "--record-size", str(size), "--throughput", str(rate), "--producer-props", *props]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    lines = [m for m in PERF_RE.finditer(r.stdout)]
    if r.returncode != 0 or not lines:
        raise RuntimeError(f"ProducerPerformance failed ({r.returncode}): {r.stdout[-800:]} {r.stderr[-800:]}")
    m = lines[-1]
    return {"recordsPerSec": float(m.group(2)), "MBps": float(m.group(3)), "avgLatencyMs": float(m.group(4)),
            "p50Ms": int(m.group(6)), "p99Ms": int(m.group(8)), "producerConfig": client["producerConfig"]}


def one(system: str, level: str, cfg: dict, args) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"bench-{system}-{level}-") as d:
        t0 = time.monotonic()
        doc = cluster.up(system, level, Path(d), tuning=args.tuning, cfg=cfg, log=log)
        wall = time.monotonic() - t0
        try:
            res = {"system": system, "level": level, "upWallSeconds": round(wall, 1),
                   "readySeconds": doc["readySeconds"], "rssMiBAfterStart": rss_of(doc)}
            if system == "kafka":
                res["perf"] = kafka_perf(doc, args.records, args.record_size)
                res["rssMiBAfterLoad"] = rss_of(doc)
            log(json.dumps(res))
            return res
        finally:
            cluster.down(Path(d), cfg, log=log)


def med(xs):
    return round(statistics.median(xs), 2)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--systems", nargs="+", default=["kafka", "pulsar"])
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--record-size", type=int, default=1024)
    ap.add_argument("--tuning", default="stock")
    ap.add_argument("--config", help="config file with a systems: section")
    ap.add_argument("--json", help="also write all results to this JSON file")
    args = ap.parse_args()
    cfg = load_config(args.config)
    for s in args.systems:
        dist.require_dist(s)
    results = []
    for rep in range(args.reps):
        for s in args.systems:
            levels = ["L2", "L1"] if s == "kafka" else ["L2"]
            for lv in levels:
                log(f"rep {rep + 1}/{args.reps}: {s} {lv}")
                results.append(one(s, lv, cfg, args))
    print(f"# cluster start-up (up -> verified), medians of {args.reps} repetition(s)")
    for s in args.systems:
        rs = [r for r in results if r["system"] == s]
        print(f"{s:7s} upWall {med([r['upWallSeconds'] for r in rs]):7.1f} s   "
              f"readySeconds {med([r['readySeconds'] for r in rs]):7.1f} s")
        names = rs[0]["rssMiBAfterStart"].keys()
        for n in names:
            line = f"  {n:12s} RSS after start {med([r['rssMiBAfterStart'][n] for r in rs]):7.1f} MiB"
            if "rssMiBAfterLoad" in rs[0]:
                line += f"   after load {med([r['rssMiBAfterLoad'][n] for r in rs]):7.1f} MiB"
            print(line)
        total = med([sum(r["rssMiBAfterStart"].values()) for r in rs])
        print(f"  {'total':12s} RSS after start {total:7.1f} MiB")
    if "kafka" in args.systems:
        l2 = [r["perf"] for r in results if r["system"] == "kafka" and r["level"] == "L2"]
        l1 = [r["perf"] for r in results if r["system"] == "kafka" and r["level"] == "L1"]
        print(f"# Kafka ProducerPerformance, {args.records} x {args.record_size} B, level client settings "
              f"({l2[0]['producerConfig']})")
        for name, ps in (("L2", l2), ("L1", l1)):
            print(f"  {name}: {med([p['recordsPerSec'] for p in ps]):10.0f} rec/s  {med([p['MBps'] for p in ps]):7.2f} MB/s"
                  f"  avg {med([p['avgLatencyMs'] for p in ps]):7.1f} ms  p99 {med([p['p99Ms'] for p in ps]):6.0f} ms")
        ratios = [a["recordsPerSec"] / b["recordsPerSec"] for a, b in zip(l1, l2)]
        print(f"  throughput ratio L1/L2 (median of per-repetition ratios): {med(ratios):.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
