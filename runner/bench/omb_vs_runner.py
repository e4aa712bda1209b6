#!/usr/bin/env python3
"""The runner beside upstream OMB itself: publish-delay, publish and end-to-end p99 on one cluster, ABBA (issue 33).

Upstream OpenMessaging Benchmark is built from its source (`--omb-src`: a checkout of
https://github.com/openmessaging/benchmark, e.g. at 85599891321cafa2fb7065a63f009b4bb5374288; nothing of it is part
of this repository): the checkout is copied to `$STREAMBENCH_CACHE/omb-build` (the user's checkout is not touched), the
copy's benchmark-framework keeps the driver API and the Kafka driver only (the other drivers' dependencies are not all
on Maven Central), and `mvn install -DskipTests -pl benchmark-framework -am` with its checks switched off builds it into
a Maven repository of its own (`$STREAMBENCH_CACHE/omb-m2`; this repository's lock-checked one is not touched). OMB
runs from that copy; `--no-build` reuses it.

Then one 3-node Kafka cluster at L2 (`python -m systems up kafka --level L2 --tuning tuned`, stopped on exit) and both
tools with the same files: OMB's own `driver-kafka/kafka-latency.yaml` (its bootstrap servers set to the cluster's)
and OMB's own `workloads/1-topic-16-partitions-1kb.yaml` at `--rate` (20 000 msg/s), `--warmup-minutes` (1) of warm-up
and `--minutes` (1) measured, `--producers` per topic (the file's 1 unless given). OMB runs as its `bin/benchmark`
runs it (the LocalWorker in one JVM) from its source directory; the runner as `runner/bin/omb-run`. Both get the
runner's JVM options (bin/jvm.options or OMB_RUN_JAVA_OPTS), as the issue's comparison had them; `--omb-own-jvm` gives
OMB its own defaults (-Xms4G -Xmx4G -XX:+UseG1GC) instead. OMB deletes no topic: after each of its runs its topics
(`test-topic-*`) are deleted with Kafka's TopicCommand from the distribution's jars, so the disk holds one run at a time.
The work directory (the cluster, the files both tools read, each run's result and log) is deleted at the end; `--keep DIR`
keeps the result files and logs.

One pair first, not counted (a fresh cluster's brokers still compile), then `--pairs` (>= 4) pairs alternating ABBA
(OMB, runner, runner, OMB, ...). Each run prints its three p99s (aggregatedPublishDelayLatency99pct,
aggregatedPublishLatency99pct, aggregatedEndToEndLatency99pct, each tool's own result file), its achieved rate, the
CPU steal over it and the load average, and where the time went: the CPU seconds of the tool's processes and of the
cluster's over the run (/proc, every second) and the tool's GC pauses (its -Xlog:gc file). Then the medians per tool
and the ratios runner / OMB. Criterion (issue 33):
each of the three ratios <= 1.0. Exits 0 when all three hold, 1 when one does not or a run failed, 2 when it cannot run
(no OMB source, a failed build). Nothing else may run meanwhile; each run writes about rate x 1 KB x 3 replicas per
second (20 000 msg/s for 2 minutes: about 7 GB, deleted after the run).

    env/shell python runner/bench/omb_vs_runner.py --omb-src /path/to/benchmark [--pairs 4] [--producers 2]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

ROOT = common.ROOT
sys.path.insert(0, str(ROOT))
from workloads.guard import _all_stats as all_stats  # noqa: E402
from workloads.guard import read_stat  # noqa: E402
from workloads.run import kill_group  # noqa: E402

SKIPS = ["-DskipTests", "-Dlicense.skip", "-Dcheckstyle.skip", "-Dspotless.check.skip", "-Dspotless.apply.skip",
         "-Dspotbugs.skip", "-Djacoco.skip"]
METRICS = {"publish-delay p99": "aggregatedPublishDelayLatency99pct",
           "publish p99": "aggregatedPublishLatency99pct",
           "end-to-end p99": "aggregatedEndToEndLatency99pct"}


KEEP_DRIVERS = ("driver-api", "driver-kafka")


def framework_pom_kafka_only(pom: str) -> str:
    """benchmark-framework's pom.xml with its dependencies on driver modules other than the API and Kafka's removed: the
    framework loads a driver by the class its driver file names, and the other drivers' dependencies are not all on
    Maven Central (driver-bookkeeper's org.apache.bookkeeper:shaded-parent:4.14.4 is not)."""
    def drop(m: re.Match) -> str:
        block = m.group(0)
        art = re.search(r"<artifactId>\s*([^<\s]+)\s*</artifactId>", block)
        grp = re.search(r"<groupId>\s*([^<\s]+)\s*</groupId>", block)
        if art and grp and grp.group(1) == "${project.groupId}" and art.group(1).startswith("driver-") \
                and art.group(1) not in KEEP_DRIVERS:
            return ""
        return block
    out = re.sub(r"[ \t]*<dependency>.*?</dependency>[ \t]*\n?", drop, pom, flags=re.S)
    if "<artifactId>driver-kafka</artifactId>" not in out:
        raise SystemExit("omb_vs_runner: benchmark-framework/pom.xml names no driver-kafka dependency")
    return out


def build(src: Path, dest: Path, repo: Path) -> None:
    """Copies the checkout to dest (the user's checkout is not touched), keeps the framework's Kafka driver only and
    builds `benchmark-framework` with the modules it needs."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".git", "target"))
    pom = dest / "benchmark-framework" / "pom.xml"
    pom.write_text(framework_pom_kafka_only(pom.read_text()))
    cmd = ["mvn", "-B", "-q", f"-Dmaven.repo.local={repo}", "install", *SKIPS, "-pl", "benchmark-framework", "-am"]
    print(f"building upstream OMB's framework and Kafka driver: (cd {dest} && {shlex.join(cmd)})", flush=True)
    r = subprocess.run(cmd, cwd=dest, capture_output=True, text=True)
    if r.returncode != 0 or not (dest / "benchmark-framework/target/classpath.txt").is_file():
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
    """Deletes OMB's topics with Kafka's own TopicCommand from the prepared distribution's jars (it has no bin/)."""
    from systems import dist
    libs = dist.require_dist("kafka") / "libs"
    cmd = ["java", "-cp", f"{libs}/*", "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap,
           "--delete", "--topic", "test-topic-.*"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except OSError as e:
        raise RuntimeError(f"deleting OMB's topics failed: {e}") from e
    if r.returncode != 0 and "does not exist" not in r.stderr:
        raise RuntimeError(f"deleting OMB's topics failed: {r.stderr.strip()[-500:]}")


def run_omb(src: Path, drv: Path, wl: Path, out: Path, java_opts: list[str] | None, grace: float = 20.0,
            popen_hook=None) -> dict:
    """OMB's bin/benchmark for one workload. Its JVM may stay up after it has written its result (non-daemon client
    threads; seen here with its Kafka driver): once the result file parses and has not changed for 2 s, OMB gets
    `grace` seconds to exit by itself, then SIGTERM. The result counts either way; a run that ends without one fails."""
    env = dict(os.environ)
    if java_opts is not None:  # bin/benchmark puts HEAP_OPTS before -XX:+UseG1GC
        env["HEAP_OPTS"] = " ".join(java_opts)
    log = out.with_suffix(".log")
    with open(log, "w") as fh:
        p = subprocess.Popen(["bin/benchmark", "--drivers", str(drv), "--output", str(out), str(wl)], cwd=src, env=env,
                             stdout=fh, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        if popen_hook:
            popen_hook(p)
        try:
            deadline = time.monotonic() + 3600
            written_at = None
            while p.poll() is None and time.monotonic() < deadline:
                time.sleep(1)
                if written_at is None and out.is_file() and time.time() - out.stat().st_mtime >= 2:
                    try:
                        json.loads(out.read_text())
                        written_at = time.monotonic()
                    except ValueError:
                        pass
                if written_at is not None and time.monotonic() - written_at > grace:
                    print(f"  OMB wrote its result but had not exited {grace:.0f} s later: SIGTERM", flush=True)
                    break
        finally:
            if p.poll() is None:
                kill_group(p, grace=30)
    if not out.is_file():
        raise RuntimeError(f"OMB failed (exit {p.returncode}): {log.read_text(errors='replace').strip()[-1500:]}")
    return json.loads(out.read_text())


CLK_TCK = os.sysconf("SC_CLK_TCK")


class CpuWatch:
    """CPU seconds (user + system) over one run of the tool's process tree (the process `attach`ed and its
    descendants) and of the cluster's processes (those whose command line names the cluster's directory), read from
    /proc every second: per process the last value seen, so a process that exits loses at most its last second."""

    def __init__(self, cluster_dir: Path) -> None:
        self.cluster_dir = str(cluster_dir).encode()
        self.root: int | None = None
        self.tool: dict[int, int] = {}
        self.cluster: dict[int, int] = {}
        self.cluster0: dict[int, int] = {}
        self.stop = threading.Event()
        self.sample(first=True)
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def attach(self, p: subprocess.Popen) -> None:
        self.root = p.pid

    def sample(self, first: bool = False) -> None:
        stats = {pid: (int(f[1]), int(f[11]) + int(f[12])) for pid, f in all_stats()}  # ppid, utime + stime
        tree = set()
        if self.root is not None and self.root in stats:
            tree.add(self.root)
            grew = True
            while grew:
                new = {pid for pid, (pp, _) in stats.items() if pp in tree and pid not in tree}
                tree |= new
                grew = bool(new)
        for pid in tree:
            self.tool[pid] = stats[pid][1]
        for pid, (_, t) in stats.items():
            try:
                if self.cluster_dir in Path(f"/proc/{pid}/cmdline").read_bytes():
                    if first:
                        self.cluster0[pid] = t
                    self.cluster[pid] = t
            except OSError:
                continue

    def loop(self) -> None:
        while not self.stop.wait(1.0):
            self.sample()

    def finish(self) -> tuple[float, float]:
        """(the tool's CPU seconds, the cluster's CPU seconds) since the watch began."""
        self.stop.set()
        self.thread.join()
        tool = sum(self.tool.values()) / CLK_TCK
        cluster = sum(t - self.cluster0.get(pid, 0) for pid, t in self.cluster.items()) / CLK_TCK
        return tool, cluster


def gc_pauses(log: Path) -> tuple[int, float, float]:
    """(pauses, their total ms, the longest ms) in a JVM's -Xlog:gc file (lines ending in "12.345ms")."""
    ms = [float(m.group(1)) for m in re.finditer(r"Pause .*? (\d+\.\d+)ms$", log.read_text(errors="replace"), re.M)] \
        if log.is_file() else []
    return len(ms), sum(ms), max(ms, default=0.0)


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
    ap.add_argument("--keep", type=Path, help="a new directory to keep every run's result file and log in (default: "
                    "they are deleted with the work directory at the end)")
    a = ap.parse_args()
    src = a.omb_src.resolve()
    if not (src / "bin/benchmark").is_file() or not (src / "driver-kafka/kafka-latency.yaml").is_file():
        print(f"omb_vs_runner: {src}: not a checkout of openmessaging/benchmark (no bin/benchmark or "
              "driver-kafka/kafka-latency.yaml)", file=sys.stderr)
        return 2
    if a.pairs < 4:
        print("omb_vs_runner: --pairs: at least 4 (issue 33)", file=sys.stderr)
        return 2
    if a.keep is not None and a.keep.exists():
        print(f"omb_vs_runner: --keep: {a.keep} exists already", file=sys.stderr)
        return 2
    common.require_built()
    cache = Path(os.environ.get("STREAMBENCH_CACHE") or ROOT / ".cache")
    built = cache / "omb-build"  # the checkout's copy that is built and run
    if not a.no_build:
        build(src, built, cache / "omb-m2")
    elif not (built / "benchmark-framework/target/classpath.txt").is_file():
        print(f"omb_vs_runner: --no-build: no build in {built}", file=sys.stderr)
        return 2
    src = built
    opts = common.runner_java_opts()
    old_term = common.sigterm_as_interrupt()  # a TERM had left the cluster and the runner running (2026-12-02)
    work = Path(tempfile.mkdtemp(prefix="omb-vs-runner-"))
    rundir = work / "cluster"
    crit = common.Criteria()
    try:
        bootstrap = common.kafka_l2_up(rundir)
        if bootstrap is None:
            return 2
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
                gclog = out.with_suffix(".gc.log")
                watch = CpuWatch(rundir)
                try:
                    if tool == "omb":
                        res = run_omb(src, drv, wl, out, (None if a.omb_own_jvm else opts + [f"-Xlog:gc:file={gclog}"]),
                                      popen_hook=watch.attach)
                    else:
                        res = common.run_omb(wl, drv, bootstrap, out, popen_hook=watch.attach,
                                             java_opts=shlex.join(opts + [f"-Xlog:gc:file={gclog}"]))
                finally:
                    tool_cpu, cluster_cpu = watch.finish()
                if tool == "omb":
                    delete_omb_topics(bootstrap)
                j1, _, s1 = read_stat()
                gcn, gcms, gcmax = gc_pauses(gclog)
                vals = {m: float(res[k]) for m, k in METRICS.items()}
                if i >= 0:
                    for m, v in vals.items():
                        got[tool][m].append(v)
                label = "first pair (not counted)" if i < 0 else f"pair {i + 1}"
                print(f"{label} {tool}: publish-delay p99 {vals['publish-delay p99']:.0f} us, publish p99 "
                      f"{vals['publish p99']:.2f} ms, end-to-end p99 {vals['end-to-end p99']:.2f} ms, achieved "
                      f"{achieved(res):.0f} msg/s, steal {100.0 * (s1 - s0) / max(1, j1 - j0):.1f} %, load "
                      f"{os.getloadavg()[0]:.2f}; CPU: {tool} {tool_cpu:.1f} s, cluster {cluster_cpu:.1f} s; {tool}'s "
                      f"GC pauses {gcn}, {gcms:.0f} ms in all, longest {gcmax:.1f} ms", flush=True)
        for m in METRICS:
            mo, mr = common.median(got["omb"][m]), common.median(got["runner"][m])
            print(f"median {m} over {a.pairs} pairs: OMB {mo:.3f}, runner {mr:.3f}", flush=True)
            crit.check(f"{m} runner / OMB", mr / mo if mo > 0 else float("inf"), "<=", 1.0, "x", ".2f")
    except (RuntimeError, OSError, subprocess.TimeoutExpired, KeyError, ValueError) as e:
        crit.fail("a run", (str(e).splitlines() or [type(e).__name__])[0][:300])
    finally:
        common.kafka_down(rundir)
        if a.keep is not None:
            a.keep.mkdir(parents=True)
            for f in sorted(work.iterdir()):
                if f.is_file():
                    shutil.move(str(f), a.keep / f.name)
            print(f"result files and logs kept in {a.keep}", flush=True)
        shutil.rmtree(work, ignore_errors=True)
        signal.signal(signal.SIGTERM, old_term)
    return crit.exit_code()


if __name__ == "__main__":
    sys.exit(main())
