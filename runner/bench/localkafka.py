"""A throwaway single-node Kafka (KRaft) broker on 127.0.0.1 with dynamic ports, for the runner's benchmarks.

Uses the broker distribution that systems/ materialises ($STREAMBENCH_CACHE/dist/kafka-<version>/libs, version
from the root pom). The broker is always stopped (TERM, then KILL) when the context exits, also on errors.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
import base64
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def kafka_version() -> str:
    m = re.search(r"<kafka.version>([^<]+)</kafka.version>", (ROOT / "pom.xml").read_text())
    if not m:
        raise RuntimeError(f"{ROOT / 'pom.xml'}: no kafka.version property")
    return m.group(1)


def kafka_libs() -> Path:
    cache = Path(os.environ.get("STREAMBENCH_CACHE", ROOT / ".cache"))
    libs = cache / "dist" / f"kafka-{kafka_version()}" / "libs"
    if not (libs / f"kafka_2.13-{kafka_version()}.jar").exists():
        raise RuntimeError(f"{libs}: Kafka distribution missing; run: python -m systems prepare kafka")
    return libs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _term_raises() -> None:
    """SIGTERM unwinds like Ctrl-C, so the finally block below stops the broker (no orphan)."""
    def handler(signum, frame):
        raise SystemExit(128 + signum)
    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        pass


@contextlib.contextmanager
def single_broker(heap: str = "1g", extra: dict[str, str] | None = None):
    """Yields the bootstrap address of a fresh single-node broker."""
    _term_raises()
    libs = kafka_libs()
    work = Path(tempfile.mkdtemp(prefix="omb-bench-kafka-"))
    port, cport = free_port(), free_port()
    props = {
        "process.roles": "broker,controller", "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{cport}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(work / "data"), "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1", "share.coordinator.state.topic.replication.factor": "1",
        "group.initial.rebalance.delay.ms": "0", "num.partitions": "1",
    }
    props.update(extra or {})
    conf = work / "server.properties"
    conf.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    log4j = work / "log4j2.properties"
    log4j.write_text("rootLogger.level=INFO\nrootLogger.appenderRef.f.ref=F\nappender.f.type=File\nappender.f.name=F\n"
                     f"appender.f.fileName={work / 'broker.log'}\nappender.f.layout.type=PatternLayout\n"
                     "appender.f.layout.pattern=[%d] %p %m (%c)%n\n")
    cp = f"{libs}/*"
    cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    subprocess.run(["java", "-Xmx256m", f"-Dlog4j2.configurationFile={log4j}", "-cp", cp, "kafka.tools.StorageTool",
                    "format", "-t", cid, "-c", str(conf), "--ignore-formatted"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc = subprocess.Popen(["java", f"-Xms{heap}", f"-Xmx{heap}", "-XX:+UseG1GC", f"-Dlog4j2.configurationFile={log4j}",
                             "-cp", cp, "kafka.Kafka", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        logf = work / "broker.log"
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"Kafka broker exited with {proc.returncode}; log {logf}")
            if logf.exists() and "Kafka Server started" in logf.read_text(errors="replace"):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kafka broker not ready after 120 s; log {logf}")
            time.sleep(0.3)
        yield f"127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    # manual use: python runner/bench/localkafka.py  -> prints the bootstrap, stops on Ctrl-C
    with single_broker() as b:
        print(b, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
