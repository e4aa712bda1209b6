#!/usr/bin/env python3
"""Heap of the runner over a long run: no per-message state, so the live heap after a GC stays flat.

Starts a single local broker, runs omb-run at `--rate` msg/s (1 KB, 10 partitions, 1 producer, 1 subscription with
1 consumer, so the audit is exercised) for `--duration` seconds and, every `--every` seconds, forces a GC in the runner
JVM (`jcmd <pid> GC.run`) and reads the used heap (`jcmd <pid> GC.heap_info`). Prints the samples, the median of the
first and last thirds and their ratio, and the least-squares slope in MB/min. Criteria (see `judge`): ratio <= 1.10 and slope <= +1 MB/min;
exit 0 when both hold, 1 when not. The issue's target is 10 minutes
(`--duration 600`) at the highest rate the machine holds.

  python runner/bench/heap_flat.py [--duration 600] [--rate 20000] [--every 20]
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import localkafka  # noqa: E402


def used_heap_mb(pid: int) -> float | None:
    subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, text=True, timeout=60)
    p = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=60)
    m = re.search(r"total \d+K, used (\d+)K", p.stdout)
    return int(m.group(1)) / 1024 if m else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=int, default=600)
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--every", type=int, default=20)
    a = ap.parse_args()
    common.require_built()
    work = common.tmpdir()
    drv = common.kafka_driver(work / "driver.yaml", {"acks": "1", "linger.ms": "1", "batch.size": "131072"})
    wl = common.workload(work / "heap.yaml", rate=a.rate, seconds=a.duration, warmup=10, subscriptions=1)
    samples: list[tuple[float, float]] = []

    def sampler(p: subprocess.Popen) -> None:
        t0 = time.monotonic()
        time.sleep(30)  # JVM start, set-up, warm-up
        while p.poll() is None:
            mb = used_heap_mb(p.pid)
            if mb is not None and p.poll() is None:
                samples.append((time.monotonic() - t0, mb))
                print(f"t={samples[-1][0]:6.0f} s  heap used after GC {mb:7.1f} MB", flush=True)
            time.sleep(a.every)

    def hook(p: subprocess.Popen) -> None:
        threading.Thread(target=sampler, args=(p,), daemon=True).start()

    with localkafka.single_broker() as bootstrap:
        print(f"broker {bootstrap}; {a.rate} msg/s; {a.duration} s; sampling every {a.every} s", flush=True)
        r = common.run_omb(wl, drv, bootstrap, work / "heap.json", popen_hook=hook)
    x = r["x-streambench"]
    print(f"achieved {x['producerRate']['achieved']:.0f} msg/s; audit sent {x['audit']['sent']} lost {x['audit']['lost']} "
          f"duplicated {x['audit']['duplicated']}")
    return judge(samples, x["audit"]["sent"])


MAX_RATIO = 1.10  # live heap after GC, last third / first third of the run
MAX_SLOPE_MB_PER_MIN = 1.0


def judge(samples: list[tuple[float, float]], messages: int) -> int:
    """samples: (seconds since start, MB used after a forced GC). Criteria ("flat"): the median of the last third of
    the samples is at most 1.10 x the first third's, and the least-squares slope is at most +1 MB/min (a per-message
    leak of 8 bytes at 20 000 msg/s grows 9.6 MB/min). Fewer than 3 samples judge nothing and fail."""
    crit = common.Criteria()
    if len(samples) < 3:
        crit.fail("heap flat", f"{len(samples)} samples, at least 3 needed")
        return crit.exit_code()
    n = len(samples)
    first = common.median([m for _, m in samples[: max(1, n // 3)]])
    last = common.median([m for _, m in samples[-max(1, n // 3):]])
    ts, ms = [t for t, _ in samples], [m for _, m in samples]
    mt, mm = sum(ts) / n, sum(ms) / n
    slope = sum((t - mt) * (m - mm) for t, m in samples) / sum((t - mt) ** 2 for t in ts) * 60
    print(f"heap after GC: median first third {first:.1f} MB, last third {last:.1f} MB, ratio {last / first:.3f}; "
          f"slope {slope:+.2f} MB/min over {samples[-1][0] - samples[0][0]:.0f} s ({messages} messages)")
    crit.check("heap after GC, last third / first third", last / first, "<=", MAX_RATIO)
    crit.check("heap after GC, slope", slope, "<=", MAX_SLOPE_MB_PER_MIN, unit=" MB/min", fmt=".2f")
    return crit.exit_code()

if __name__ == "__main__":
    sys.exit(main())
