#!/usr/bin/env python3
"""Pravega's fault-cycle writer (workloads/faultrun.py `_PravegaSend`) against the bindings used plainly: per-key
order, and the rate at which it drains a backlog by number of keys.

On a fresh Pravega L1 cluster (`python -m systems up pravega --level L1 --faults` in a temporary directory, stopped
and purged at the end):
- order: `--events` events of 100 B on 64 keys into 8 segments, once with every write_event_async in flight at once
  (the baseline) and once through `_PravegaSend` (one write in flight per key); each stream read back with
  `PravegaClient.read_back` and judged with `faultrun.verdict`. Criterion: `_PravegaSend` reorders 0.
- drain rate: `--backlog` 1 KB events handed to `_PravegaSend` at once, timed until the last acknowledgement, with 64
  keys and with `PravegaClient.KEYS`, `--reps` times each, alternating. Prints the medians and the ratio KEYS/64.
  Criterion: the median with KEYS is at least `--min-factor` (2) times the fault workloads' 2 000 msg/s, so a
  backlog drains while the traffic goes on.
Exit 1 when a criterion fails. Nothing else may run meanwhile.

    env/shell python workloads/bench/pravega_writer.py [--events 8000] [--backlog 20000] [--reps 3]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from runner.bench.common import Criteria  # noqa: E402
from systems import faultclient as fc  # noqa: E402
from workloads import faultrun as fr  # noqa: E402

FAULT_RATE = 2000  # msg/s of the fault workloads (workloads/omb/1-topic-8-partitions-1kb-1p-1c-2k.yaml)


def acked(n: int, keys: int) -> fc.Audit:
    a = fc.Audit(n, keys)
    a.count = n
    return a


def order_all_in_flight(c: fc.PravegaClient, stream: str, n: int) -> dict:
    c.create_topic(stream, 8)
    w = c.mgr.create_writer(c.scope, stream)
    a = acked(n, fc.N_KEYS)

    async def go():
        res = await asyncio.gather(*[w.write_event_async(fc.payload(i, 100).decode(), fc.key_of(i))
                                     for i in range(n)], return_exceptions=True)
        for i, r in enumerate(res):
            a.ack(i, r is None)
    asyncio.run(go())
    return fr.verdict(a, c.read_back(stream, 8, time.monotonic() + 120, a), None, None)


def through_sender(c: fc.PravegaClient, stream: str, n: int, keys: int, size: int) -> tuple[dict, float]:
    """n events handed to _PravegaSend at once; the verdict and the seconds until the last acknowledgement."""
    c.create_topic(stream, 8)
    s = fc._PravegaSend(c.mgr.create_writer(c.scope, stream))
    a = fc.Audit(n, keys)
    t0 = time.monotonic()
    for i in range(n):
        a.sent[i] = time.time()
        a.count = i + 1
        s.send(stream, i, size, a)
    left = s.flush(300)
    took = time.monotonic() - t0
    if left:
        raise RuntimeError(f"{stream}: {left} writes still out after 300 s")
    return fr.verdict(a, c.read_back(stream, 8, time.monotonic() + 120, a), None, None), took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=8000)
    ap.add_argument("--backlog", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--min-factor", type=float, default=2.0)
    a = ap.parse_args()
    env = dict(os.environ)
    env.setdefault("STREAMBENCH_CACHE", str(ROOT / ".cache"))
    crit = Criteria()
    work = Path(tempfile.mkdtemp(prefix="pravega-writer-bench-"))
    d = work / "cluster"
    try:
        subprocess.run([sys.executable, "-m", "systems", "up", "pravega", "--level", "L1", "--faults", "--dir", str(d)],
                       cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=900)
        c = fc.PravegaClient(json.loads((d / "cluster.json").read_text()), {})
        c.wait_serving(120)
        tag = f"{int(time.time())}"
        base = order_all_in_flight(c, f"order-all-{tag}", a.events)
        mine, _ = through_sender(c, f"order-sender-{tag}", a.events, fc.N_KEYS, 100)
        print(f"order, {a.events} events on {fc.N_KEYS} keys: every write in flight at once reordered "
              f"{base['reordered']} (lost {base['lost']}); _PravegaSend reordered {mine['reordered']} "
              f"(lost {mine['lost']})", flush=True)
        crit.check("_PravegaSend reorders nothing", mine["reordered"], "<=", 0, fmt=".0f")
        rates: dict[int, list[float]] = {fc.N_KEYS: [], fc.PravegaClient.KEYS: []}
        for r in range(a.reps):
            for keys in (rates if r % 2 == 0 else reversed(list(rates))):
                v, took = through_sender(c, f"drain-{keys}-{r}-{tag}", a.backlog, keys, 1024)
                rates[keys].append(a.backlog / took)
                print(f"drain, {keys} keys, rep {r + 1}: {a.backlog} events in {took:.1f} s = "
                      f"{a.backlog / took:.0f} events/s (lost {v['lost']}, reordered {v['reordered']})", flush=True)
        med = {k: statistics.median(v) for k, v in rates.items()}
        print(f"drain medians: {fc.N_KEYS} keys {med[fc.N_KEYS]:.0f} events/s, {fc.PravegaClient.KEYS} keys "
              f"{med[fc.PravegaClient.KEYS]:.0f} events/s, ratio {med[fc.PravegaClient.KEYS] / med[fc.N_KEYS]:.2f}")
        crit.check(f"drain with {fc.PravegaClient.KEYS} keys / the fault workloads' {FAULT_RATE} msg/s",
                   med[fc.PravegaClient.KEYS] / FAULT_RATE, ">=", a.min_factor, fmt=".2f")
    except (subprocess.CalledProcessError, RuntimeError, fc.CycleFailure) as e:
        crit.fail("pravega writer bench", str(e).splitlines()[0] if str(e) else type(e).__name__)
    finally:
        subprocess.run([sys.executable, "-m", "systems", "down", "--dir", str(d), "--purge"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
        shutil.rmtree(work, ignore_errors=True)
    return crit.exit_code()


if __name__ == "__main__":
    sys.exit(main())
