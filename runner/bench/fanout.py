#!/usr/bin/env python3
"""Fan-out benchmarks of the runner (study 003): heap per idle consumer, and connect rate vs a plain client loop.

Starts a real 3-node cluster (`python -m systems up SYSTEM --level L1`, stopped on exit), then
- heap: omb-run with `--consumers` (default 5 000) subscriptions x 1 consumer at 1 msg/s, and again with `--small`
  (default 50); once the measured phase runs, forces a GC in the runner JVM (`jcmd <pid> GC.run`) and reads the used
  heap (`GC.heap_info`). Prints heap after GC per consumer, (heap(N) - heap(small)) / (N - small). Criteria: Pulsar
  <= 50 KB; either system, per consumer <= workloads/fanout.py HEAP_KB[system] and heap(small) <= its BASE_HEAP_MB,
  the figures the workflow sizes fan-out runner processes with.
- connect: `--reps` pairs in ABBA order, a plain client loop of the same library (runner/.../bench/PlainConnect.java:
  N subscriptions x 1 consumer, the same number in flight) and omb-run with the same consumers; the connect rate is
  N / (first connect start -> last connected). Prints the medians and runner/plain. Criterion >= 0.95.
Exits 0 when every criterion it judged holds, 1 when one fails.

  python runner/bench/fanout.py --system pulsar [--consumers 5000] [--small 50] [--reps 2] [--only heap|connect]
Run under /work/.locks/with-cluster --exclusive and quote `uptime` beside the numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from workloads import fanout  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OMB_RUN = ROOT / "runner" / "bin" / "omb-run"
DRIVERS = {"kafka": ROOT / "runner" / "testdata" / "kafka-3node.yaml", "pulsar": ROOT / "runner" / "testdata" / "pulsar-3bookie.yaml"}


def workload(path: Path, consumers: int, concurrency: int, seconds: int) -> Path:
    path.write_text(yaml.safe_dump({
        "name": f"fan-out {consumers}", "topics": 1, "partitionsPerTopic": 1, "keyDistributor": "NO_KEY",
        "messageSize": 10240, "useRandomizedPayloads": True, "randomBytesRatio": 0.5, "randomizedPayloadPoolSize": 10,
        "subscriptionsPerTopic": consumers, "producersPerTopic": 1, "consumerPerSubscription": 1, "producerRate": 1,
        "consumerBacklogSizeGB": 0, "testDurationMinutes": 1, "warmupDurationMinutes": 0,
        "x-streambench": {"testDurationSeconds": seconds, "warmupDurationSeconds": 1,
                          "fanOut": {"connectConcurrency": concurrency, "connectDeadlineSeconds": 3600}},
    }, sort_keys=False))
    return path


def used_heap_kb(pid: int) -> int | None:
    subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, text=True, timeout=120)
    p = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=120)
    m = re.search(r"total \d+K, used (\d+)K", p.stdout)
    return int(m.group(1)) if m else None


def omb(system: str, wl: Path, cluster: Path, out: Path, heap: bool) -> tuple[dict, int | None]:
    """Runs omb-run; with heap=True samples the heap after GC once the measured phase has begun."""
    log = out.with_suffix(".log")
    cmd = [str(OMB_RUN), "--workload", str(wl), "--driver", str(DRIVERS[system]), "--cluster", str(cluster),
           "--output", str(out), "--log", str(log)]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    kb = None
    try:
        if heap:
            while p.poll() is None:
                if log.exists() and "phase warmup -> measure" in log.read_text(errors="replace"):
                    time.sleep(3)
                    kb = used_heap_kb(p.pid)
                    break
                time.sleep(1)
        err = p.communicate(timeout=7200)[1]
    finally:
        if p.poll() is None:
            p.terminate()
            p.wait(120)
    if p.returncode != 0:
        sys.exit(f"omb-run failed ({p.returncode}): {err[-2000:]}")
    return json.loads(out.read_text()), kb


def plain(system: str, endpoint: str, topic: str, n: int, c: int, admin: str | None) -> float:
    cp = f"{ROOT / 'runner/target/omb-runner.jar'}:{ROOT / 'runner/target/lib'}/*"
    p = subprocess.run(["java", "-Xmx2g", "-cp", cp, "org.streambench.runner.bench.PlainConnect", system, endpoint, topic,
                        str(n), str(c)] + ([admin] if admin else []), capture_output=True, text=True, timeout=7200)
    m = re.search(r"connected (\d+) in ([\d.]+) s", p.stdout)
    if p.returncode != 0 or not m:
        sys.exit(f"PlainConnect failed ({p.returncode}): {p.stdout[-1000:]} {p.stderr[:3000]}")
    return float(m.group(2))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--system", choices=["pulsar", "kafka"], default="pulsar")
    ap.add_argument("--consumers", type=int, default=5000)
    ap.add_argument("--small", type=int, default=50)
    ap.add_argument("--concurrency", type=int, default=500)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--only", choices=["heap", "connect"])
    a = ap.parse_args()
    if not (ROOT / "runner" / "target" / "omb-runner.jar").exists():
        sys.exit("runner not built: run `mvn -q -f runner/pom.xml package` first")
    tmp = Path(tempfile.mkdtemp(prefix="fanout-bench-", dir=ROOT / "data" / "runs" if (ROOT / "data" / "runs").is_dir() else None))
    rundir = tmp / "cluster"
    env = dict(os.environ, PYTHONPATH=f"{ROOT}:{ROOT / 'hw-probes'}")
    crit = common.Criteria()
    try:
        up = subprocess.run([sys.executable, "-m", "systems", "up", a.system, "--level", "L1", "--dir", str(rundir)],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        if up.returncode != 0:
            sys.exit(f"systems up failed: {up.stderr[-2000:]}")
        cluster = rundir / "cluster.json"
        cj = json.loads(cluster.read_text())
        print(f"uptime: {os.getloadavg()}")
        if a.only in (None, "heap"):
            big, kb_big = omb(a.system, workload(tmp / "big.yaml", a.consumers, a.concurrency, 20), cluster, tmp / "big.json", True)
            small, kb_small = omb(a.system, workload(tmp / "small.yaml", a.small, a.concurrency, 20), cluster, tmp / "small.json", True)
            conn = big['x-streambench']['fanOut']['connectionTimeSeconds']
            if kb_big is None or kb_small is None:
                crit.fail("heap per consumer", "no heap reading from jcmd GC.heap_info")
            else:
                per = (kb_big - kb_small) / (a.consumers - a.small)
                print(f"heap after GC: {kb_big / 1024:.1f} MB with {a.consumers} consumers, {kb_small / 1024:.1f} MB with "
                      f"{a.small} -> {per:.1f} KB per consumer ({kb_big / a.consumers:.1f} KB/consumer all-in); connection "
                      f"time {conn:.1f} s; uptime {os.getloadavg()}")
                # Pulsar: the runner's own bound (its README row). Both: the figure the workflow plans fan-out runner
                # processes with (workloads/fanout.py HEAP_KB) covers what one more consumer holds (the base heap of
                # the producers and histograms is planned apart, BASE_HEAP_MB, and must hold the small run's)
                if a.system == "pulsar":
                    crit.check("heap after GC per consumer", per, "<=", 50.0, unit=" KB", fmt=".1f")
                crit.check(f"heap after GC per consumer, against fanout.HEAP_KB[{a.system!r}]", per, "<=",
                           float(fanout.HEAP_KB[a.system]), unit=" KB", fmt=".1f")
                crit.check(f"heap after GC with {a.small} consumers, against fanout.BASE_HEAP_MB", kb_small / 1024,
                           "<=", float(fanout.BASE_HEAP_MB), unit=" MB", fmt=".1f")
        if a.only in (None, "connect"):
            if a.system == "pulsar":
                endpoint, topic = cj["pulsar"]["serviceUrl"], "persistent://public/default/plain-connect-bench"
                admin = cj["pulsar"]["httpUrl"]
            else:
                endpoint, topic, admin = cj["kafka"]["bootstrapServers"], "plain-connect-bench", None
            runner_rates, plain_rates = [], []
            for i in range(a.reps):
                # ABBA: the broker warms up over the reps, so neither side may always go second
                for side in (("plain", "runner") if i % 2 == 0 else ("runner", "plain")):
                    if side == "plain":
                        s = plain(a.system, endpoint, topic, a.consumers, a.concurrency, admin)
                        plain_rates.append(a.consumers / s)
                    else:
                        res, _ = omb(a.system, workload(tmp / f"c{i}.yaml", a.consumers, a.concurrency, 5), cluster,
                                     tmp / f"c{i}.json", False)
                        r = res["x-streambench"]["fanOut"]["connectionTimeSeconds"]
                        runner_rates.append(a.consumers / r)
                print(f"rep {i + 1}: plain {a.consumers / s:.1f} consumers/s ({s:.1f} s), runner {a.consumers / r:.1f}/s ({r:.1f} s);"
                      f" uptime {os.getloadavg()}")
            ratio = statistics.median(runner_rates) / statistics.median(plain_rates)
            print(f"connect rate: runner median {statistics.median(runner_rates):.1f}/s, plain median "
                  f"{statistics.median(plain_rates):.1f}/s")
            crit.check("connect rate, runner / plain client", ratio, ">=", 0.95, fmt=".2f")
    finally:
        subprocess.run([sys.executable, "-m", "systems", "down", "--dir", str(rundir)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
        shutil.rmtree(tmp, ignore_errors=True)
    return crit.exit_code()


if __name__ == "__main__":
    sys.exit(main())
