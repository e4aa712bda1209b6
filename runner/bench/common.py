"""Shared helpers of the runner's benchmark scripts: temp workload/driver files and one omb-run call."""
from __future__ import annotations

import atexit
import json
import statistics
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
OMB_RUN = ROOT / "runner" / "bin" / "omb-run"


def runner_java_opts() -> list[str]:
    """The JVM options omb-run starts the runner with: OMB_RUN_JAVA_OPTS when set, else runner/bin/jvm.options."""
    import os
    import shlex
    if os.environ.get("OMB_RUN_JAVA_OPTS"):
        return shlex.split(os.environ["OMB_RUN_JAVA_OPTS"])
    lines = (ROOT / "runner" / "bin" / "jvm.options").read_text().splitlines()
    return [x.strip() for x in lines if x.strip() and not x.strip().startswith("#")]


def require_built() -> None:
    if not (ROOT / "runner" / "target" / "omb-runner.jar").exists():
        sys.exit("runner not built: run `mvn -q -f runner/pom.xml package` first")


def kafka_driver(path: Path, producer: dict[str, str], name: str = "Kafka-bench") -> Path:
    props = "".join(f"{k}={v}\n" for k, v in producer.items())
    path.write_text(yaml.safe_dump({
        "name": name,
        "driverClass": "io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver",
        "replicationFactor": 1,
        "topicConfig": "min.insync.replicas=1\n",
        "commonConfig": "bootstrap.servers=127.0.0.1:9092\n",
        "producerConfig": props,
        "consumerConfig": "auto.offset.reset=earliest\nenable.auto.commit=false\nmax.partition.fetch.bytes=10485760\n",
    }, sort_keys=False))
    return path


def workload(path: Path, *, rate: int, seconds: int, warmup: int, partitions: int = 10, subscriptions: int = 0,
             producers: int = 1, size: int = 1024) -> Path:
    path.write_text(yaml.safe_dump({
        "name": f"bench {rate} msg/s", "topics": 1, "partitionsPerTopic": partitions, "keyDistributor": "NO_KEY",
        "messageSize": size, "useRandomizedPayloads": True, "randomBytesRatio": 1.0, "randomizedPayloadPoolSize": 1000,
        "subscriptionsPerTopic": subscriptions, "producersPerTopic": producers,
        "consumerPerSubscription": 1 if subscriptions else 0, "producerRate": rate, "consumerBacklogSizeGB": 0,
        "testDurationMinutes": 1, "warmupDurationMinutes": 0,
        "x-streambench": {"testDurationSeconds": seconds, "warmupDurationSeconds": warmup},
    }, sort_keys=False))
    return path


def run_omb(wl: Path, drv: Path, bootstrap: str, out: Path, *, popen_hook=None, java_opts: str | None = None) -> dict:
    cluster = out.with_suffix(".cluster.json")
    cluster.write_text(json.dumps({"system": "kafka", "kafka": {"bootstrapServers": bootstrap}}))
    env = None
    if java_opts:
        import os
        env = dict(os.environ, OMB_RUN_JAVA_OPTS=java_opts)
    cmd = [str(OMB_RUN), "--workload", str(wl), "--driver", str(drv), "--cluster", str(cluster), "--output", str(out),
           "--log", str(out.with_suffix(".log"))]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        if popen_hook:
            popen_hook(p)
        _, err = p.communicate(timeout=7200)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if p.returncode != 0:
        raise RuntimeError(f"omb-run failed ({p.returncode}):\n{err[-3000:]}")
    return json.loads(out.read_text())


def kafka_l2_up(rundir: Path) -> str | None:
    """A 3-node Kafka cluster at L2, tuned (`python -m systems up`) in rundir: its bootstrap servers, or None after
    printing why it did not start. Stop it with `kafka_down`."""
    up = subprocess.run([sys.executable, "-m", "systems", "up", "kafka", "--level", "L2", "--tuning", "tuned", "--dir",
                         str(rundir)], cwd=ROOT, capture_output=True, text=True)
    if up.returncode != 0:
        print(up.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads((rundir / "cluster.json").read_text())["kafka"]["bootstrapServers"]


def kafka_down(rundir: Path) -> None:
    subprocess.run([sys.executable, "-m", "systems", "down", "--purge", "--dir", str(rundir)], cwd=ROOT,
                   capture_output=True, text=True)


class Criteria:
    """The pass/fail criteria of one bench run. Each `check` prints one line with the measured value, the
    criterion and PASS or FAIL; `exit_code()` prints the tally and is the script's exit code: 0 when every
    criterion passed, 1 when any failed or none was checked (a bench that judged nothing has not passed)."""

    OPS = {"<=": lambda v, t: v <= t, ">=": lambda v, t: v >= t}

    def __init__(self) -> None:
        self.results: list[tuple[str, bool]] = []

    def check(self, name: str, value: float, op: str, target: float, unit: str = "", fmt: str = ".3f") -> bool:
        ok = bool(self.OPS[op](value, target))
        self.results.append((name, ok))
        print(f"criterion {name}: {value:{fmt}}{unit} {op} {target:{fmt}}{unit}: {'PASS' if ok else 'FAIL'}", flush=True)
        return ok

    def fail(self, name: str, why: str) -> None:
        """A criterion that could not be judged (too few samples, a failed tool): counts as failed."""
        self.results.append((name, False))
        print(f"criterion {name}: not judged ({why}): FAIL", flush=True)

    def exit_code(self) -> int:
        failed = [n for n, ok in self.results if not ok]
        if not self.results:
            print("verdict: FAIL (no criterion was checked)")
            return 1
        print(f"verdict: {'PASS' if not failed else 'FAIL'} ({len(self.results) - len(failed)} of {len(self.results)} "
              f"criteria met{'; failed: ' + ', '.join(failed) if failed else ''})")
        return 1 if failed else 0


def sigterm_as_interrupt():
    """From now on SIGTERM (kill, a CI runner's timeout) raises KeyboardInterrupt in the main thread, as Ctrl-C does,
    so a bench's `finally` stops what it started (a cluster, a tool's JVM) instead of the process dying around them.
    Returns the handler it replaced, for `signal.signal(signal.SIGTERM, old)` when the bench is done."""
    import signal

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    return signal.signal(signal.SIGTERM, interrupt)


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def tmpdir() -> Path:
    """A scratch directory for one bench's workload, driver and result files, removed when the bench exits."""
    path = Path(tempfile.mkdtemp(prefix="omb-bench-"))
    atexit.register(shutil.rmtree, path, True)
    return path
