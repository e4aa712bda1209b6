"""What faultfs costs a Kafka L1 producer: ProducerPerformance (kafka-tools, the level's client settings, 6
partitions, RF 3) against a 3-node L1 cluster on plain disk and on faultfs mounts, at an unthrottled rate and at
a fixed rate. Prints one JSON line per run (records/s, MB/s, average, p50, p99 latency).

    python systems/bench/faultfs_probe.py [--records 100000] [--record-size 1024] [--rates -1 2000]
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[2]))

from systems import cluster  # noqa: E402
from systems.util import load_config  # noqa: E402

PERF_RE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                     r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th")


def log(msg: str) -> None:
    print(f"[probe] {msg}", file=sys.stderr, flush=True)


def perf(doc: dict, topic: str, records: int, size: int, rate: int) -> dict:
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
    log4j = Path(doc["rundir"]) / "nodes" / "log4j2.properties"
    cmd = ["java", "-Xmx512m", f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{libs}/*",
           "org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", str(records),
           "--record-size", str(size), "--throughput", str(rate), "--producer-props", *props]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    m = list(PERF_RE.finditer(r.stdout))
    if r.returncode != 0 or not m:
        raise RuntimeError(f"ProducerPerformance failed ({r.returncode}): {r.stdout[-800:]} {r.stderr[-800:]}")
    g = m[-1]
    return {"recordsPerSec": float(g.group(2)), "MBps": float(g.group(3)), "avgMs": float(g.group(4)),
            "p50Ms": int(g.group(6)), "p99Ms": int(g.group(8))}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--record-size", type=int, default=1024)
    ap.add_argument("--rates", type=int, nargs="+", default=[-1, 2000], help="records/s; -1 = unthrottled")
    ap.add_argument("--modes", nargs="+", default=["disk", "faultfs"])
    a = ap.parse_args()
    cfg = load_config()
    for mode in a.modes:
        with tempfile.TemporaryDirectory(prefix=f"faultfs-probe-{mode}-") as d:
            doc = cluster.up("kafka", "L1", Path(d), cfg=cfg, log=log, faultfs=(mode == "faultfs"))
            try:
                for rate in a.rates:
                    with open("/proc/loadavg") as f:
                        load = f.read().split()[0]
                    res = perf(doc, f"probe-{rate if rate > 0 else 'max'}", a.records, a.record_size, rate)
                    print(json.dumps({"mode": mode, "rate": rate, "records": a.records, "recordSize": a.record_size,
                                      **res, "loadavg1Before": float(load)}), flush=True)
            finally:
                cluster.down(Path(d), cfg, log=log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
