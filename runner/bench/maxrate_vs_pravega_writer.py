#!/usr/bin/env python3
"""The runner's maximum Pravega publish rate beside a plain writer loop of the same Pravega client running the same
search, on one cluster.

A real Pravega cluster (`python -m systems up pravega --level L2`: no per-entry fsync, whose random 100-700 ms
stalls on this shared machine decided single pairs at L1; stopped on exit) or `--cluster RUNDIR/cluster.json`.
Both tools run the runner's max-rate search (RateSearch: grow while steps pass, then bisect to 5 %; a failed step
is retried once; StepJudge: send rate >= 97 % of target, publish-delay p99 < maxPublishDelayMs, in-flight sends
without growth) with the same initial rate, steps, settle seconds, step budget and warm-up, 1 topic (stream) of
`--partitions` segments, `--producers` writers, events of `--size` bytes (1 KB), no consumers, in one JVM each with the same options (bin/omb-run's
default or OMB_RUN_JAVA_OPTS). The runner: `omb-run` with `producerRate: 0` and a Pravega driver file (OMB's fields,
includeTimestampInEvent as OMB's default); its number is the highest rate a step accepted. The plain loop
(org.streambench.runner.bench.PlainWriterLoop): the client's EventStreamWriter in an open-loop schedule with OMB's event
layout and nothing else. Pairs in ABBA order; prints every run with the load average, the medians and the ratio
runner / plain (target >= 0.95).

The search's growth factor is 1.25 here (`rateDiscovery.growthFactor`; the runner's default doubles): doubling
from 4 000 msg/s with 12 steps put overload steps at 64 000 msg/s (some 190 000 events in flight in the client) on the
3-bookie L2 cluster of this 2-core machine and brought it down (writers: "Connection dropped", then the controller
refused createScope), so the pairs after it could not run; with 6 doubling steps both tools stopped at a 2x bracket
(40 000 accepted, 80 000 rejected), which cannot tell a 10 % loss. Growing by 1.25 the first failed step lies at most
25 % above the last passed one, and the bisection after it ends within 5 % (defaults: 16 000 msg/s, 16 steps, a
failed step retried once).

Both searches stop at `--max-mbps` (default 60 MB/s, ~58 600 msg/s; the runner's `rateDiscovery.maxRateMBps`, the
plain loop's MAX_MBPS, both turned into msg/s by Workload.ceilingRate): unbounded, a runner search passed every step to 95 000 msg/s and the next steps took the cluster
down (bookies' quorum writes failed, the segment containers closed and never came back, the controller then failed
createScope), so no later pair could run. A run that passes the ceiling is a lower bound and is counted as the ceiling;
the script says how many runs stopped there. `--cluster-warmup` plain runs (default 1) go first and are not counted:
on a fresh cluster the first search settled at 19 500-24 375 msg/s and a later one at 48 828.

`--client-cpus C`: both client JVMs run in one CPU cgroup (cgroup v1 `cpu` or v2, a CFS quota of C cores per 20 ms;
root) made for the script and removed at its end. Without it (the default) the client shares this machine's two cores
with the cluster, and at 100 B events the cluster is what gives out first, so both tools measure the cluster and
the pairs scatter with it. With a quota well below what the cluster takes, the client's CPU is the limit and the ratio
is the runner's per-event cost beside the bare client's: the harder test of the runner's bookkeeping (three latency
histograms per acknowledgement, the audit header), not the number a user on a real testbed sees. `--keep` keeps the
work directory (each run's log and result, the plain loop's step lines); it is kept anyway when a run fails.

`--selftest`: one plain run (after the warm-up) first sets R; then the pairs compare a plain loop whose write path is capped at 90 % of R
(a token bucket in front of writeEvent) with the plain loop, exactly as above. The check must FAIL on it; the script
exits 0 when it does.

  python runner/bench/maxrate_vs_pravega_writer.py [--pairs 4] [--level L2] [--partitions 4] [--producers 2] [--size 1024]
         [--initial-rate 16000] [--growth 1.25] [--step-seconds 4] [--max-steps 16] [--warmup 5]
         [--max-mbps 60] [--cluster-warmup 1] [--cluster CLUSTER_JSON] [--client-cpus 0] [--keep] [--selftest]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

ROOT = common.ROOT
TARGET = 0.95
SCOPE = "streambench"


def java_opts() -> list[str]:
    return common.runner_java_opts()


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def search_fields(a) -> dict:
    return {"initialRate": a.initial_rate, "stepSeconds": a.step_seconds, "settleSeconds": a.settle,
            "maxSteps": a.max_steps, "retries": a.retries, "maxPublishDelayMs": a.max_delay_ms, "growthFactor": a.growth,
            "maxRateMBps": a.max_mbps}


class CpuBudget:
    """A cgroup (v1 `cpu` controller, or v2) whose CFS quota holds the client JVMs to `cpus` cores; removed on close.

    The tools' processes are put in it by a `sh` prefix that writes its own pid into cgroup.procs and then execs the
    command, so the JVM and every thread it starts are counted from the first instruction."""

    def __init__(self, cpus: float):
        self.dir = None
        if cpus <= 0:
            return
        v1 = Path("/sys/fs/cgroup/cpu")
        base = v1 if (v1 / "cpu.cfs_quota_us").exists() else Path("/sys/fs/cgroup")
        self.dir = base / f"streambench-pvmax-{os.getpid()}"
        period = 20000
        try:
            self.dir.mkdir()
            if base == v1:
                (self.dir / "cpu.cfs_period_us").write_text(str(period))
                (self.dir / "cpu.cfs_quota_us").write_text(str(round(cpus * period)))
            else:
                (self.dir / "cpu.max").write_text(f"{round(cpus * period)} {period}")
        except OSError as e:
            self.close()
            sys.exit(f"--client-cpus {cpus}: cannot make a CPU cgroup under {base} ({e}); run as root, or --client-cpus 0")

    def prefix(self) -> list[str]:
        if self.dir is None:
            return []
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.dir / "cgroup.procs")]

    def close(self) -> None:
        if self.dir is not None and self.dir.exists():
            self.dir.rmdir()  # its processes have exited: the tools are run to completion
        self.dir = None


def runner(cluster_json: Path, work: Path, a, i: int, budget: CpuBudget) -> dict:
    drv = work / "pravega.yaml"
    drv.write_text(yaml.safe_dump({
        "name": "Pravega-bench", "driverClass": "io.openmessaging.benchmark.driver.pravega.PravegaBenchmarkDriver",
        "client": {"controllerURI": "tcp://127.0.0.1:9090", "scopeName": SCOPE},
        "writer": {"enableConnectionPooling": False}, "includeTimestampInEvent": True, "enableStreamAutoScaling": False,
    }, sort_keys=False))
    wl = work / f"wl-{i}.yaml"
    wl.write_text(yaml.safe_dump({
        "name": "max rate", "topics": 1, "partitionsPerTopic": a.partitions, "keyDistributor": "NO_KEY",
        "messageSize": a.size, "useRandomizedPayloads": True, "randomBytesRatio": 1.0, "randomizedPayloadPoolSize": 1000,
        "subscriptionsPerTopic": 0, "producersPerTopic": a.producers, "consumerPerSubscription": 0, "producerRate": 0,
        "consumerBacklogSizeGB": 0, "testDurationMinutes": 1, "warmupDurationMinutes": 0,
        "x-streambench": {"testDurationSeconds": a.step_seconds, "warmupDurationSeconds": a.warmup,
                          "rateDiscovery": {**search_fields(a), "remeasures": 0}},
    }, sort_keys=False))
    out = work / f"runner-{i}.json"
    env = dict(os.environ, OMB_RUN_JAVA_OPTS=" ".join(java_opts()))
    p = subprocess.run([*budget.prefix(), str(common.OMB_RUN), "--workload", str(wl), "--driver", str(drv), "--cluster", str(cluster_json),
                        "--output", str(out), "--log", str(out.with_suffix(".log"))], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise RuntimeError(f"omb-run failed ({p.returncode}):\n{p.stderr[-3000:]}")
    rd = json.loads(out.read_text())["x-streambench"]["rateDiscovery"]
    steps = rd["steps"]
    return {"rate": max([s["targetRate"] for s in steps if s["pass"]], default=0.0), "steps": len(steps),
            "ceiling": bool(rd.get("ceilingReached")), "ceilingRate": rd.get("ceilingRate")}


def plain(controller: str, work: Path, a, budget: CpuBudget, cap: float = 0.0) -> dict:
    cp = f"{ROOT / 'runner/target/omb-runner.jar'}:{ROOT / 'runner/target/lib'}/*"
    args = [controller, SCOPE, a.partitions, a.producers, a.size, a.warmup, a.initial_rate, a.step_seconds, a.settle,
            a.max_steps, a.retries, a.max_delay_ms, cap, a.growth, a.max_mbps]
    p = subprocess.run([*budget.prefix(), "java", *java_opts(), "-cp", cp, "org.streambench.runner.bench.PlainWriterLoop", *map(str, args)],
                       capture_output=True, text=True, timeout=3600)
    with open(work / "plain.log", "a") as log:
        log.write(p.stderr)
    if p.returncode != 0:
        raise RuntimeError(f"PlainWriterLoop failed ({p.returncode}):\n{p.stderr[-3000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return {"rate": r["accepted"], "steps": len(r["steps"]), "ceiling": bool(r["ceilingReached"]),
            "ceilingRate": r["ceilingRate"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--level", default="L2")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--producers", type=int, default=2)
    ap.add_argument("--size", type=int, default=1024, help="event payload bytes")
    ap.add_argument("--initial-rate", type=float, default=16000)
    ap.add_argument("--growth", type=float, default=1.25, help="the search's growth factor until a step fails")
    ap.add_argument("--step-seconds", type=int, default=4)
    ap.add_argument("--settle", type=int, default=1)
    ap.add_argument("--max-steps", type=int, default=16)
    ap.add_argument("--retries", type=int, default=1)
    ap.add_argument("--max-delay-ms", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--max-mbps", type=float, default=60.0,
                    help="the search's ceiling for both tools (MB/s of payload; the runner's rateDiscovery.maxRateMBps)")
    ap.add_argument("--cluster-warmup", type=int, default=1, help="plain runs first, not counted (a cold cluster)")
    ap.add_argument("--cluster", type=Path, help="an up cluster's cluster.json (default: start one at --level)")
    ap.add_argument("--client-cpus", type=float, default=0.0,
                    help="hold each client JVM to this many cores (a CFS quota; 0 = no limit)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (the runs' logs and results)")
    ap.add_argument("--selftest", action="store_true", help="compare a plain loop capped at 90 %% with the plain loop")
    a = ap.parse_args()
    common.require_built()
    work = Path(tempfile.mkdtemp(prefix="pvmax-"))
    rundir = None
    budget = CpuBudget(a.client_cpus)
    keep = a.keep
    if a.cluster is None:
        rundir = work / "cluster"
        up = subprocess.run([sys.executable, "-m", "systems", "up", "pravega", "--level", a.level, "--dir", str(rundir)],
                            cwd=ROOT, capture_output=True, text=True)
        if up.returncode != 0:
            print(up.stderr[-2000:], file=sys.stderr)
            return 1
        a.cluster = rundir / "cluster.json"
    try:
        controller = json.loads(a.cluster.read_text())["pravega"]["controllerUri"]
        print(f"Pravega {controller} ({'level ' + a.level if rundir else a.cluster}); {a.size} B events, {a.partitions} segments, "
              f"{a.producers} writers, no consumers; search {search_fields(a)}, warm-up {a.warmup} s; "
              f"JVM {' '.join(java_opts())}; client CPU {str(a.client_cpus) + ' cores (CFS quota)' if budget.dir else 'unlimited'}; "
              f"load {load()}", flush=True)
        names = ("runner", "plain")
        cap = 0.0
        for i in range(a.cluster_warmup):
            r = plain(controller, work, a, budget)
            print(f"cluster warm-up {i + 1} (not counted): plain {r['rate']:.0f} msg/s ({r['steps']} steps"
                  f"{', at the ceiling' if r['ceiling'] else ''}, load {load()})", flush=True)
        if a.selftest:
            r0 = plain(controller, work, a, budget)["rate"]
            cap = 0.9 * r0
            names = ("capped", "plain")
            print(f"selftest: plain loop {r0:.0f} msg/s -> write path capped at {cap:.0f} msg/s (90 %); load {load()}", flush=True)
        got = {n: [] for n in names}
        at_ceiling, ceilings = 0, set()
        for i in range(a.pairs):
            order = names if i % 4 in (0, 3) else names[::-1]  # ABBA
            line = []
            for tool in order:
                if tool == "runner":
                    r = runner(a.cluster, work, a, i, budget)
                else:
                    r = plain(controller, work, a, budget, cap if tool == "capped" else 0.0)
                got[tool].append(r["rate"])
                at_ceiling += r["ceiling"]
                ceilings.add(r["ceilingRate"])
                line.append(f"{tool} {r['rate']:.0f} msg/s ({r['steps']} steps{', at the ceiling' if r['ceiling'] else ''}"
                            f", load {load()})")
            print(f"pair {i + 1}: " + " | ".join(line), flush=True)
        if at_ceiling:
            print(f"{at_ceiling} of {2 * a.pairs} runs stopped at the ceiling "
                  f"({', '.join(f'{c:.0f}' for c in sorted(ceilings))} msg/s): their rate is a lower bound", flush=True)
        ma, mb = common.median(got[names[0]]), common.median(got[names[1]])
        ratio = ma / mb if mb > 0 else float("inf")
        ok = ratio >= TARGET
        print(f"median {names[0]} {ma:.0f} msg/s ({ma * a.size / 1e6:.1f} MB/s), median {names[1]} {mb:.0f} msg/s "
              f"({mb * a.size / 1e6:.1f} MB/s) over {a.pairs} pairs; ratio {names[0]}/{names[1]} {ratio:.3f} "
              f"(target >= {TARGET}: {'PASS' if ok else 'FAIL'}); load {load()}")
        if a.selftest:
            print(f"selftest: a write path 10 % slower {'FAILS' if not ok else 'PASSES'} the check: "
                  f"{'ok' if not ok else 'BAD (the check cannot see a 10 % loss)'}")
            return 0 if not ok else 1
        return 0 if ok else 1
    except BaseException:
        print(f"the runs' logs are kept in {work}", file=sys.stderr)
        keep = True
        raise
    finally:
        budget.close()
        if rundir is not None:
            subprocess.run([sys.executable, "-m", "systems", "down", "--purge", "--dir", str(rundir)], cwd=ROOT,
                           capture_output=True, text=True)
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
