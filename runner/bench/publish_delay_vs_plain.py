#!/usr/bin/env python3
"""The runner's publish delay beside a plain producer loop of the same client on the same schedule, in one run on
one cluster.

A real 3-node Kafka cluster at L2 (`python -m systems up kafka --level L2`, stopped on exit); 1 topic x 16
partitions, 1 KB, 2 producers, the L2 driver's producer settings (workloads/drivers/kafka-L2-tuned.yaml); the two
tools alternate, so drift on a shared machine hits both. The plain loop
(org.streambench.runner.bench.PlainProducerLoop) has the runner's thread layout and open-loop schedule and records
nothing but the publish delay (send time - intended time); the runner records everything it always does (audit
header, three histograms per ack, consumers: none here, as the plain loop has none). Both JVMs get the same
options (bin/omb-run's default or OMB_RUN_JAVA_OPTS). A first pair is run and
printed but not counted (a fresh cluster's cold JITs), then the pairs alternate in ABBA order. Prints every run with
the host's CPU steal over it and the load average, the medians of publish-delay p99 and the ratio runner / plain
(target <= 1.1).

  python runner/bench/publish_delay_vs_plain.py [--rate 20000] [--reps 5] [--seconds 20] [--warmup 5]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

sys.path.insert(0, str(common.ROOT))
from workloads.guard import read_stat  # noqa: E402

ROOT = common.ROOT
DRIVER = ROOT / "workloads/drivers/kafka-L2-tuned.yaml"


def java_opts() -> list[str]:
    return common.runner_java_opts()


def plain(bootstrap: str, work: Path, a, drv: dict) -> dict:
    pp = work / "producer.properties"
    pp.write_text(drv["producerConfig"])
    tc = work / "topic.properties"
    tc.write_text(drv["topicConfig"])
    cp = f"{ROOT / 'runner/target/omb-runner.jar'}:{ROOT / 'runner/target/lib'}/*"
    out = subprocess.run(["java", *java_opts(), "-cp", cp, "org.streambench.runner.bench.PlainProducerLoop", bootstrap,
                          str(pp), str(a.rate), str(a.warmup), str(a.seconds), "2", "16", str(drv["replicationFactor"]),
                          str(tc)], capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def runner(bootstrap: str, work: Path, a, i: int) -> dict:
    wl = common.workload(work / f"wl-{i}.yaml", rate=a.rate, seconds=a.seconds, warmup=a.warmup, partitions=16,
                         producers=2)
    res = common.run_omb(wl, DRIVER, bootstrap, work / f"runner-{i}.json")
    x = res["x-streambench"]
    return {"publishDelayP99Micros": x["measuredPhase"]["publishDelayP99Micros"],
            "achieved": x["producerRate"]["achieved"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    a = ap.parse_args()
    common.require_built()
    drv = yaml.safe_load(DRIVER.read_text())
    work = Path(tempfile.mkdtemp(prefix="pubdelay-"))
    rundir = work / "cluster"
    bootstrap = common.kafka_l2_up(rundir)
    if bootstrap is None:
        return 1
    try:
        print(f"3-node Kafka L2 {bootstrap}; {a.rate} msg/s, 1 KB, 16 partitions, 2 producers; "
              f"JVM {' '.join(java_opts())}", flush=True)
        rs, ps = [], []
        # one pair first that is not counted: the first runs on a fresh cluster meet cold broker JITs (p99 of
        # 150-480 ms here, whichever tool ran); then pairs in ABBA order, so neither tool always runs first
        # after the other's topic deletion
        for i in range(-1, a.reps):
            order = ("runner", "plain") if i % 2 == 0 else ("plain", "runner")
            got = {}
            for tool in order:
                j0, _, s0 = read_stat()
                got[tool] = runner(bootstrap, work, a, i + 1) if tool == "runner" else plain(bootstrap, work, a, drv)
                j1, _, s1 = read_stat()
                got[tool + "Steal"] = 100.0 * (s1 - s0) / max(1, j1 - j0)
            r, p = got["runner"], got["plain"]
            label = "warm-up (not counted)" if i < 0 else f"rep {i + 1}"
            if i >= 0:
                rs.append(r["publishDelayP99Micros"] / 1000)
                ps.append(p["publishDelayP99Micros"] / 1000)
            print(f"{label}: runner publish-delay p99 {r['publishDelayP99Micros'] / 1000:.2f} ms (achieved "
                  f"{r['achieved']:.0f} msg/s, steal {got['runnerSteal']:.1f} %) | plain loop "
                  f"{p['publishDelayP99Micros'] / 1000:.2f} ms (sent {p['sent']}, acked {p['acked']}, steal "
                  f"{got['plainSteal']:.1f} %) | {order[0]} first | load {os.getloadavg()[0]:.2f}", flush=True)
        mr, mp = common.median(rs), common.median(ps)
        ratio = mr / mp if mp > 0 else float("inf")
        print(f"median publish-delay p99: runner {mr:.2f} ms, plain loop {mp:.2f} ms; ratio runner/plain {ratio:.2f} "
              f"(target <= 1.1: {'PASS' if ratio <= 1.1 else 'FAIL'})")
        return 0 if ratio <= 1.1 else 1
    finally:
        common.kafka_down(rundir)


if __name__ == "__main__":
    sys.exit(main())
