#!/usr/bin/env python3
"""The runner beside upstream OMB itself: publish-delay, publish and end-to-end p99 on one cluster, ABBA (issue 33).

Upstream OpenMessaging Benchmark is built from its source (`--omb-src`: a checkout of
https://github.com/openmessaging/benchmark, e.g. at 85599891321cafa2fb7065a63f009b4bb5374288; nothing of it is part
of this repository): `mvn install -DskipTests -pl benchmark-framework -am` with its checks switched off, into a Maven
repository of its own (`$STREAMBENCH_CACHE/omb-m2`, from Maven Central; this repository's lock-checked one is not
touched). benchmark-framework depends on every driver module, so all of them are built; `--no-build` reuses a build.

Then one 3-node Kafka cluster at L2 (`python -m systems up kafka --level L2 --tuning tuned`, stopped on exit) and both
tools with the same files: OMB's own `driver-kafka/kafka-latency.yaml` (its bootstrap servers set to the cluster's)
and OMB's own `workloads/1-topic-16-partitions-1kb.yaml` at `--rate` (20 000 msg/s), `--warmup-minutes` (1) of warm-up
and `--minutes` (1) measured, `--producers` per topic (the file's 1 unless given). OMB runs as its `bin/benchmark`
runs it (the LocalWorker in one JVM) from its source directory; the runner as `runner/bin/omb-run`. Both get the
runner's JVM options (bin/jvm.options or OMB_RUN_JAVA_OPTS), as the issue's comparison had them; `--omb-own-jvm` gives
OMB its own defaults (-Xms4G -Xmx4G -XX:+UseG1GC) instead. OMB deletes no topic: after each of its runs its topics
(`test-topic-*`) are deleted with the distribution's kafka-topics.sh, so the disk holds one run at a time.

One pair first, not counted (a fresh cluster's brokers still compile), then `--pairs` (>= 4) pairs alternating ABBA
(OMB, runner, runner, OMB, ...). Each run prints its three p99s (aggregatedPublishDelayLatency99pct,
aggregatedPublishLatency99pct, aggregatedEndToEndLatency99pct, each tool's own result file), its achieved rate, the
CPU steal over it and the load average. Then the medians per tool and the ratios runner / OMB. Criterion (issue 33):
each of the three ratios <= 1.0. Exits 0 when all three hold, 1 when one does not or a run failed, 2 when it cannot run
(no OMB source, a failed build). Nothing else may run meanwhile; each run writes about rate x 1 KB x 3 replicas per
second (20 000 msg/s for 2 minutes: about 7 GB, deleted after the run).

    env/shell python runner/bench/omb_vs_runner.py --omb-src /path/to/benchmark [--pairs 4] [--producers 2]
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

ROOT = common.ROOT
sys.path.insert(0, str(ROOT))
from workloads.guard import read_stat  # noqa: E402

SKIPS = ["-DskipTests", "-Dlicense.skip", "-Dcheckstyle.skip", "-Dspotless.check.skip", "-Dspotless.apply.skip",
         "-Dspotbugs.skip", "-Djacoco.skip"]
METRICS = {"publish-delay p99": "aggregatedPublishDelayLatency99pct",
           "publish p99": "aggregatedPublishLatency99pct",
           "end-to-end p99": "aggregatedEndToEndLatency99pct"}


def build(src: Path, repo: Path) -> None:
    cmd = ["mvn", "-B", "-q", f"-Dmaven.repo.local={repo}", "install", *SKIPS, "-pl", "benchmark-framework", "-am"]
    print(f"building upstream OMB: (cd {src} && {shlex.join(cmd)})", flush=True)
    r = subprocess.run(cmd, cwd=src, capture_output=True, text=True)
    if r.returncode != 0 or not (src / "benchmark-framework/target/classpath.txt").is_file():
        tail = (r.stdout + r.stderr).strip().splitlines()[-20:]
        raise SystemExit(f"omb_vs_runner: the OMB build failed (exit {r.returncode}):\n" + "\n".join(tail))


def omb_files(src: Path, work: Path, bootstrap: str, a) -> tuple[Path, Path]:
    drv = yaml.safe_load((src / "driver-kafka/kafka-latency.yaml").read_text())
    drv["commonConfig"] = f"bootstrap.servers={bootstrap}\n"
    d = work / "kafka-latency.yaml"
    d.write_text(yaml.safe_dump(drv, sort_keys=False))
    wl = yaml.safe_load((src / "workloads/1-topic-16-partitions-1kb.yaml").read_text())
    wl.update(producerRate=a.rate, testDurationMinutes=a.minutes, warmupDurationMinutes=a.warmup_minutes)
    if a.producers:
        wl["producersPerTopic"] = a.producers
    wl["payloadFile"] = str((src / wl["payloadFile"]).resolve())
    w = work / "workload.yaml"
    w.write_text(yaml.safe_dump(wl, sort_keys=False))
    return d, w


def delete_omb_topics(bootstrap: str) -> None:
    from systems import dist
    tool = dist.require_dist("kafka") / "bin" / "kafka-topics.sh"
    r = subprocess.run([str(tool), "--bootstrap-server", bootstrap, "--delete", "--topic", "test-topic-.*"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0 and "does not exist" not in r.stderr:
        raise RuntimeError(f"deleting OMB's topics failed: {r.stderr.strip()[-500:]}")


def run_omb(src: Path, drv: Path, wl: Path, out: Path, java_opts: list[str] | None) -> dict:
    env = dict(os.environ)
    if java_opts is not None:  # bin/benchmark puts HEAP_OPTS before -XX:+UseG1GC
        env["HEAP_OPTS"] = " ".join(java_opts)
    r = subprocess.run(["bin/benchmark", "--drivers", str(drv), "--output", str(out), str(wl)], cwd=src, env=env,
                       capture_output=True, text=True, timeout=3600)
    if r.returncode != 0 or not out.is_file():
        raise RuntimeError(f"OMB failed (exit {r.returncode}): {(r.stdout + r.stderr).strip()[-1500:]}")
    return json.loads(out.read_text())


def achieved(res: dict) -> float:
    rates = res.get("publishRate") or []
    return sum(rates) / len(rates) if rates else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--omb-src", type=Path, required=True, help="a checkout of openmessaging/benchmark")
    ap.add_argument("--no-build", action="store_true", help="reuse the checkout's build")
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--minutes", type=int, default=1)
    ap.add_argument("--warmup-minutes", type=int, default=1)
    ap.add_argument("--producers", type=int, default=0, help="producers per topic (0: the workload file's)")
    ap.add_argument("--omb-own-jvm", action="store_true", help="OMB with its own JVM defaults, not the runner's")
    a = ap.parse_args()
    src = a.omb_src.resolve()
    if not (src / "bin/benchmark").is_file() or not (src / "driver-kafka/kafka-latency.yaml").is_file():
        print(f"omb_vs_runner: {src}: not a checkout of openmessaging/benchmark (no bin/benchmark or "
              "driver-kafka/kafka-latency.yaml)", file=sys.stderr)
        return 2
    if a.pairs < 4:
        print("omb_vs_runner: --pairs: at least 4 (issue 33)", file=sys.stderr)
        return 2
    common.require_built()
    if not a.no_build:
        cache = Path(os.environ.get("STREAMBENCH_CACHE") or ROOT / ".cache")
        build(src, cache / "omb-m2")
    opts = common.runner_java_opts()
    work = Path(tempfile.mkdtemp(prefix="omb-vs-runner-"))
    rundir = work / "cluster"
    bootstrap = common.kafka_l2_up(rundir)
    if bootstrap is None:
        return 2
    crit = common.Criteria()
    try:
        drv, wl = omb_files(src, work, bootstrap, a)
        print(f"3-node Kafka L2 {bootstrap}; OMB's kafka-latency driver and 1-topic-16-partitions-1kb workload at "
              f"{a.rate} msg/s, {a.warmup_minutes} min warm-up + {a.minutes} min, "
              f"{yaml.safe_load(wl.read_text())['producersPerTopic']} producer(s); runner JVM {' '.join(opts)}; OMB JVM "
              f"{'its own defaults' if a.omb_own_jvm else 'the same'}", flush=True)
        got: dict[str, dict[str, list[float]]] = {"omb": {m: [] for m in METRICS}, "runner": {m: [] for m in METRICS}}
        for i in range(-1, a.pairs):
            order = ("omb", "runner") if i % 2 == 0 else ("runner", "omb")
            for tool in order:
                j0, _, s0 = read_stat()
                out = work / f"{tool}-{i + 1}.json"
                if tool == "omb":
                    res = run_omb(src, drv, wl, out, None if a.omb_own_jvm else opts)
                    delete_omb_topics(bootstrap)
                else:
                    res = common.run_omb(wl, drv, bootstrap, out)
                j1, _, s1 = read_stat()
                vals = {m: float(res[k]) for m, k in METRICS.items()}
                if i >= 0:
                    for m, v in vals.items():
                        got[tool][m].append(v)
                label = "first pair (not counted)" if i < 0 else f"pair {i + 1}"
                print(f"{label} {tool}: publish-delay p99 {vals['publish-delay p99']:.0f} us, publish p99 "
                      f"{vals['publish p99']:.2f} ms, end-to-end p99 {vals['end-to-end p99']:.2f} ms, achieved "
                      f"{achieved(res):.0f} msg/s, steal {100.0 * (s1 - s0) / max(1, j1 - j0):.1f} %, load "
                      f"{os.getloadavg()[0]:.2f}", flush=True)
        for m in METRICS:
            mo, mr = common.median(got["omb"][m]), common.median(got["runner"][m])
            print(f"median {m} over {a.pairs} pairs: OMB {mo:.3f}, runner {mr:.3f}", flush=True)
            crit.check(f"{m} runner / OMB", mr / mo if mo > 0 else float("inf"), "<=", 1.0, "x", ".2f")
    except (RuntimeError, subprocess.TimeoutExpired, KeyError, ValueError) as e:
        crit.fail("a run", str(e).splitlines()[0][:300])
    finally:
        common.kafka_down(rundir)
    return crit.exit_code()


if __name__ == "__main__":
    sys.exit(main())
