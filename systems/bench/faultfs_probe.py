"""What faultfs costs a Kafka L1 producer: ProducerPerformance (kafka-tools, the level's client settings, 6
partitions, RF 3) against a 3-node L1 cluster on plain disk and on faultfs mounts, at an unthrottled rate and at
a fixed rate. Prints one JSON line per run (records/s, MB/s, average, p50, p99 latency).

    python systems/bench/faultfs_probe.py [--records 100000] [--record-size 1024] [--rates -1 2000]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[2]))

from systems import cluster  # noqa: E402
from systems.bench.startup import kafka_perf  # noqa: E402
from systems.util import load_config  # noqa: E402

def log(msg: str) -> None:
    print(f"[probe] {msg}", file=sys.stderr, flush=True)


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
                    res = kafka_perf(doc, a.records, a.record_size, f"probe-{rate if rate > 0 else 'max'}", rate)
                    print(json.dumps({"mode": mode, "rate": rate, "records": a.records, "recordSize": a.record_size,
                                      **res, "loadavg1Before": float(load)}), flush=True)
            finally:
                cluster.down(Path(d), cfg, log=log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
