#!/usr/bin/env python3
"""Runner maximum publish rate vs Kafka's own ProducerPerformance (kafka-producer-perf-test), side by side.

Same jars (kafka-clients of the root pom's kafka.version; ProducerPerformance from kafka-tools of the same version,
from the distribution systems/ materialises), same single local broker (started here, stopped on exit), 1 KB,
acks=1, same producer settings, one producer, one topic with the same partitions; runs alternate (runner, perf-test,
runner, ...) so drift on a shared machine hits both. Prints every run, the medians and the ratio runner / perf-test.
Criterion: ratio >= 0.95; exit 0 when it holds, 1 when not.

  python runner/bench/maxrate_vs_perftest.py [--reps 3] [--seconds 20] [--partitions 10] [--linger-ms 1] [--batch-size 131072]
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import localkafka  # noqa: E402


def perf_test(libs: Path, bootstrap: str, topic: str, partitions: int, records: int, producer: dict[str, str]) -> float:
    cp = f"{libs}/*"
    subprocess.run(["java", "-Xmx256m", "-cp", cp, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap,
                    "--create", "--topic", topic, "--partitions", str(partitions), "--replication-factor", "1"],
                   check=True, capture_output=True, text=True)
    props = [f"bootstrap.servers={bootstrap}", *(f"{k}={v}" for k, v in producer.items())]
    p = subprocess.run(["java", "-Xms512m", "-Xmx2g", "-XX:+UseG1GC", "-cp", cp, "org.apache.kafka.tools.ProducerPerformance",
                        "--topic", topic, "--num-records", str(records), "--record-size", "1024", "--throughput", "-1",
                        "--producer-props", *props], check=True, capture_output=True, text=True, timeout=3600)
    last = [line for line in p.stdout.splitlines() if "records sent" in line][-1]
    m = re.search(r"records sent, ([0-9.]+) records/sec", last)
    if not m:
        raise RuntimeError(f"cannot parse ProducerPerformance output: {last}")
    subprocess.run(["java", "-Xmx256m", "-cp", cp, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap,
                    "--delete", "--topic", topic], capture_output=True, text=True)
    return float(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=20, help="measured seconds per runner run (plus 5 s warm-up)")
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--linger-ms", default="1")
    ap.add_argument("--batch-size", default="131072")
    a = ap.parse_args()
    common.require_built()
    producer = {"acks": "1", "linger.ms": a.linger_ms, "batch.size": a.batch_size}
    work = common.tmpdir()
    drv = common.kafka_driver(work / "driver.yaml", producer)
    wl = common.workload(work / "max.yaml", rate=10_000_000, seconds=a.seconds, warmup=5, partitions=a.partitions)
    libs = localkafka.kafka_libs()
    runner_rates, runner_whole, perf_rates = [], [], []
    with localkafka.single_broker() as bootstrap:
        print(f"broker {bootstrap}; producer settings {producer}; 1 KB; {a.partitions} partitions; no consumers", flush=True)
        # size the perf-test run to about the runner's run length (5 s warm-up + measured seconds)
        calib = perf_test(libs, bootstrap, "calibrate", a.partitions, 200_000, producer)
        records = int(calib * (a.seconds + 5))
        print(f"calibration: perf-test {calib:.0f} msg/s -> {records} records per perf-test run", flush=True)
        for rep in range(a.reps):
            r = common.run_omb(wl, drv, bootstrap, work / f"runner-{rep}.json")
            x = r["x-streambench"]
            runner_rates.append(x["producerRate"]["achieved"])
            runner_whole.append(x["audit"]["acked"] / (x["warmupSeconds"] + x["measurementSeconds"]))
            print(f"rep {rep}: runner {runner_rates[-1]:.0f} msg/s measured phase ({runner_whole[-1]:.0f} over the whole run incl. warm-up)", flush=True)
            perf_rates.append(perf_test(libs, bootstrap, f"perf-{rep}", a.partitions, records, producer))
            print(f"rep {rep}: perf-test {perf_rates[-1]:.0f} msg/s", flush=True)
    mr, mw, mp = common.median(runner_rates), common.median(runner_whole), common.median(perf_rates)
    print(f"median runner {mr:.0f} msg/s ({mr * 1024 / 1048576:.1f} MB/s), whole run {mw:.0f}; "
          f"median perf-test {mp:.0f} msg/s ({mp * 1024 / 1048576:.1f} MB/s)")
    print(f"ratio runner/perf-test: {mr / mp:.3f} (measured phase), {mw / mp:.3f} (whole run)")
    return judge(mr, mp)


def judge(runner_median: float, perf_median: float) -> int:
    """Criterion: the runner's median maximum rate (measured phase) >= 0.95 x perf-test's; the exit code."""
    crit = common.Criteria()
    crit.check("runner / perf-test median max rate", runner_median / perf_median, ">=", 0.95)
    return crit.exit_code()

if __name__ == "__main__":
    sys.exit(main())
