#!/usr/bin/env python3
"""What reading a fault cycle's partitions side by side saves in Pulsar's verifier (systems/faultclient.py).

Starts a local Pulsar cluster at L1 (`python -m systems up`), makes an 8-partition topic with the verifier's
subscription as a fault cycle does, sends it `--messages` acknowledged messages of 1 KB (a local power-loss cycle
acknowledges about 40 000-90 000), then reads them all back `--rounds` ABBA rounds: A the baseline, the partitions one
after the other (the verifier before this change), B `PulsarClient.read_back`, a reader per partition side by side.
Each read must return every acknowledged message exactly once. Prints each read, the medians and their ratio, and
exits 1 when the ratio is above --max-ratio (default 0.75: side by side must save at least a quarter), when a read
missed or repeated a message, or when the cluster did not start. Nothing else may run meanwhile.

    env/shell python systems/bench/pulsar_readback.py [--messages 60000] [--rounds 2]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from systems import faultclient as fc  # noqa: E402
from systems.cluster import load_cluster  # noqa: E402

PARTITIONS = 8
SIZE = 1024


def one_after_the_other(client: fc.PulsarClient, topic: str, deadline: float) -> list[int]:
    """The baseline: the verifier's reading before the change, partition by partition."""
    out: list[int] = []
    for p in range(PARTITIONS):
        client._read_partition(client.topic(f"{topic}-partition-{p}"), deadline, out, threading.Event())
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=60000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-ratio", type=float, default=0.75)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pulsar-readback-bench-"))
    rundir = tmp / "cluster"
    try:
        r = subprocess.run([sys.executable, "-m", "systems", "up", "pulsar", "--level", "L1", "--dir", str(rundir)],
                           cwd=ROOT, capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            print(f"FAIL pulsar up: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
            return 1
        client = fc.PulsarClient(load_cluster(rundir), {}, tmp / "client.log")
        try:
            topic = f"readback-{uuid.uuid4().hex[:8]}"
            client.create_topic(topic, PARTITIONS)
            audit = fc.Audit(a.messages)
            sender = client.producer(topic)
            now = time.time()
            for i in range(a.messages):
                audit.sent[i] = now
                audit.count = i + 1
                sender.send(topic, i, SIZE, audit)
            left = sender.flush(120)
            acked = sorted(i for i in range(a.messages) if audit.state[i] == fc.Audit.OK)
            print(f"sent {a.messages} messages of {SIZE} B on {PARTITIONS} partitions: {len(acked)} acknowledged, "
                  f"{left} pending", flush=True)
            if left or len(acked) != a.messages:
                print("FAIL not every message was acknowledged")
                return 1
            took: dict[str, list[float]] = {"one after the other": [], "side by side": []}
            bad = []
            for _ in range(a.rounds):
                for kind in ("one after the other", "side by side", "side by side", "one after the other"):
                    t0 = time.monotonic()
                    deadline = t0 + 300
                    got = (one_after_the_other(client, topic, deadline) if kind == "one after the other"
                           else client.read_back(topic, PARTITIONS, deadline))
                    s = time.monotonic() - t0
                    took[kind].append(s)
                    whole = sorted(got) == acked
                    if not whole:
                        bad.append(kind)
                    print(f"{kind}: {len(got)} read in {s:.2f} s{'' if whole else ' (NOT every message once)'}",
                          flush=True)
        finally:
            client.close()
        base, new = (statistics.median(took[k]) for k in ("one after the other", "side by side"))
        ratio = new / base
        ok = ratio <= a.max_ratio and not bad
        print(f"{'PASS' if ok else 'FAIL'} medians of {a.rounds * 2}: one after the other {base:.2f} s, side by side "
              f"{new:.2f} s: {ratio:.2f}x (criterion <= {a.max_ratio:.2f}x, every message read once in every read)")
        return 0 if ok else 1
    finally:
        subprocess.run([sys.executable, "-m", "systems", "down", "--dir", str(rundir), "--purge"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
