#!/usr/bin/env python3
"""Rate accuracy of the runner's open-loop schedule: achieved / target at 1 000, 10 000 and 50 000 msg/s.

One single local broker (started here, stopped on exit), 1 KB, 1 producer, 10 partitions, acks=1; `--subscriptions 1`
adds a consumer. For each rate: `--reps` runs of `--seconds` measured seconds after a 5-s warm-up; prints each run's
achieved rate over the measured phase (acknowledged sends whose intended time lies in it, `producerRate.achieved`),
OMB's view of it (acks arriving during it) and the acknowledged rate over the whole run, the medians and the error
against the target. Criterion: within 1 % at every rate; exit 0 when it holds, 1 when not.

  python runner/bench/rate_accuracy.py [--rates 1000 10000 50000] [--reps 3] [--seconds 20] [--subscriptions 0]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import localkafka  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", type=int, nargs="+", default=[1000, 10000, 50000])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--subscriptions", type=int, default=0)
    a = ap.parse_args()
    common.require_built()
    work = common.tmpdir()
    drv = common.kafka_driver(work / "driver.yaml", {"acks": "1", "linger.ms": "1", "batch.size": "131072"})
    rows = []
    with localkafka.single_broker() as bootstrap:
        print(f"broker {bootstrap}; 1 KB; 10 partitions; acks=1; subscriptions {a.subscriptions}", flush=True)
        for rate in a.rates:
            wl = common.workload(work / f"w{rate}.yaml", rate=rate, seconds=a.seconds, warmup=5, subscriptions=a.subscriptions)
            meas, whole, sched = [], [], []
            for rep in range(a.reps):
                r = common.run_omb(wl, drv, bootstrap, work / f"r{rate}-{rep}.json")
                x = r["x-streambench"]
                meas.append(x["producerRate"]["achieved"])
                run_s = x["warmupSeconds"] + x["measurementSeconds"]
                whole.append(x["audit"]["acked"] / run_s)
                windows = r["publishRate"]
                print(f"{rate} msg/s rep {rep}: measured {meas[-1]:.1f} msg/s (acks arriving in the phase, OMB's view: "
                      f"{x['producerRate']['ackRate']:.1f}), whole run {whole[-1]:.1f}, "
                      f"10-s windows {[round(w, 1) for w in windows]}, publish delay p99 {r['aggregatedPublishDelayLatency99pct']} us, "
                      f"warm-up sends dropped {x['producerRate']['droppedScheduledSends']}", flush=True)
            mm, mw = common.median(meas), common.median(whole)
            rows.append((rate, mm, mw))
    return judge(rows)


def judge(rows: list[tuple[int, float, float]]) -> int:
    """rows: (target rate, median achieved over the measured phase, median over the whole run). Criterion: the
    measured-phase median within 1 % of the target at every rate; the exit code says whether it held."""
    print("target msg/s | median achieved (measured phase) | error | median over whole run | error")
    crit = common.Criteria()
    for rate, mm, mw in rows:
        print(f"{rate:>12} | {mm:>32.1f} | {mm / rate - 1:+.2%} | {mw:>21.1f} | {mw / rate - 1:+.2%}")
    for rate, mm, _ in rows:
        crit.check(f"|achieved/target - 1| at {rate} msg/s", abs(mm / rate - 1) * 100, "<=", 1.0, unit=" %", fmt=".2f")
    return crit.exit_code()

if __name__ == "__main__":
    sys.exit(main())
