"""Run one fault cell (issue 15): a cluster, keyed traffic on a new topic at a fixed rate with an audit of every
acknowledged send, a fault at a seeded time of the measured phase, the restart, then a verifier that reads the whole
topic back from the beginning and joins it with the audit. The verdict goes into the result file under
`x-streambench.fault`.

One cluster, several cycles: with `--keep-cluster` (the Snakemake rule) a cycle that ended well leaves its cluster
running, its topic deleted, and the next fault run of the same cluster key (workloads/plan.py: system, level, tuning;
faultfs or not) runs its cycle there instead of starting a cluster (a start is 20-40 s of a 60-s run on this
machine). Before a cycle on such a cluster every node must run (`systems status`) and the cluster must serve: all
Kafka brokers registered, the Pulsar broker's health check (a write and read through the bookies) passing; a faultfs
cluster is checkpointed first (what a kernel's periodic write-back would have made durable between two cycles), so
a power loss drops only what its own cycle wrote without a sync. The result records the cycle's number on its
cluster (`clusterCycle`, 1 = a cluster started for it). A cycle that failed, or any interruption, stops the cluster:
the next run starts a fresh one. Without `--keep-cluster` the cluster is stopped after the run, as before.

    python -m workloads.faultrun --clusters data/runs/<tb>/clusters --testbed <tb> --scale <scale> \\
        --system kafka --level L1 --tuning stock --workload <omb workload> --fault crash-all --rep 1 \\
        --in-experiments E000-FAULT --driver workloads/drivers/kafka-L1-stock.yaml \\
        --result data/raw/<tb>/kafka/L1+stock/<workload>--crash-all/rep-1.json --status ... --log ...

Faults (workloads/plan.py FAULTS): kill-leader (the Kafka node leading most partitions of the topic / the Pulsar
broker owning its bundle / Pravega's segment store), kill-bookie (Pulsar, Pravega; one bookie drawn from the run's
seed), kill-one (one node other than the leader, drawn from the seed), crash-all (every server process),
power-loss (every server process, then every write not fsynced is dropped from the faultfs mounts under the nodes'
data directories, systems.faultfs.drop_all).
Each is kill -9 of the nodes' process groups, `downSeconds` of nothing, then the nodes start again from their pid
files (the command, directory, log and variables `up` recorded; ZooKeeper first, then bookies and broker).
The hold faults (plan.HOLD_FAULTS; hosts of their own only) strike the leader without killing it and end after
`downSeconds`: partition-leader (its host cut off from the other server hosts, nftables), partition-minority (cut
off from every host, its clients included, but its ssh port), partition-majority (every other server host cut off
from the leader's host and from the clients: the leader keeps its clients and loses its peers), pause-leader (SIGSTOP, then SIGCONT) and
slow-link-leader (a token bucket of slowLinkKbit on its host's egress, tc tbf).

The strike comes from the fault hooks (systems/faulthook.py: one per host holding targets, on this machine one
process, on an inventory's hosts one over ssh each) started with the cycle, their imports done, waiting on their
stdin: at the planned time the traffic's timer has the driver write one line to each, so no Python start-up lies
between the planned time and the kill; the driver then restarts the targets stage by stage across the hosts. A node that is not back (its ports listening) within restartDeadlineSeconds makes the run failed, with the
node's log tail; the cluster is then torn down, and partial results never reach data/raw. SIGTERM/SIGINT/SIGHUP: the hook is stopped (TERM, KILL after 5 s), then the cluster.

The verdict (never inferred from rates):
  acknowledged           sends the cluster acknowledged
  lost                   acknowledged, not read back
  duplicated             reads of a message beyond its first
  reordered              per key: messages read after a message of the same key with a higher sequence number
  unacknowledgedPresent  read back, but their send failed or was never acknowledged
  publishErrors          sends that failed (client timeout or error)
  unavailableMs          per key: its first failed or slow (> slowMs) send after the strike, to the acknowledgement of
                         its first good send after that; the longest over the keys (0: no send failed or was slow;
                         null: some key never had a good send again)
  recoveryMs             strike to the acknowledgement of the first good send made after the restart
  read                   messages read back (duplicates included)
"""
from __future__ import annotations

import argparse
import asyncio
import bisect
import datetime as dt
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from pathlib import Path

import yaml

from workloads import plan, scale
from workloads.run import CellFailure, Clusters, hooks, now, tail

ROOT = Path(__file__).resolve().parents[1]
SLOW_MS = 1000.0       # a send acknowledged later than this counts as unavailable
FLUSH_SECONDS = 45.0   # bound on waiting for the last acknowledgements after the traffic
READ_SECONDS = 120.0   # bound on reading the topic back
SETTLE_SECONDS = 3.0   # traffic past the first good send after the restart
SETTLE_MAX_SECONDS = 60.0  # and on, at most this long, until every key had a good send after the restart
N_KEYS = 64
VERIFY_SUBSCRIPTION = "fault-verify"  # Pulsar: holds the topic's data until the verifier has read it
FAULT_SCOPE = "streambench-faults"   # Pravega: the scope of the fault cycles' streams
PRAVEGA_PROBE = "serving-probe"      # Pravega: the stream wait_serving writes one event to
PRAVEGA_QUIET_SECONDS = 30.0         # Pravega: the verifier's end when a key's last acknowledged message never comes


class Audit:
    """Per-message audit of one run's sends: message i has key i % keys and sequence i // keys (keys: N_KEYS, or
    the client's own KEYS)."""

    PENDING, OK, FAILED = 0, 1, 2

    def __init__(self, n: int, keys: int = N_KEYS):
        self.keys = keys
        self.sent = [0.0] * n   # intended send time (epoch s)
        self.done = [0.0] * n   # acknowledgement / failure time (epoch s)
        self.state = bytearray(n)
        self.count = 0          # sends made
        self.last_good = [0.0] * keys  # per key: the last acknowledgement within SLOW_MS of its send (epoch s)

    def ack(self, i: int, ok: bool) -> None:
        t = self.done[i] = time.time()
        self.state[i] = self.OK if ok else self.FAILED
        if ok and t - self.sent[i] <= SLOW_MS / 1000.0:
            self.last_good[i % self.keys] = t


def payload(i: int, size: int) -> bytes:
    head = f"{i:012d}|".encode()
    return head + b"x" * max(0, size - len(head))


def index_of(value: bytes) -> int | None:
    try:
        return int(value[:12])
    except (TypeError, ValueError):
        return None


def key_of(i: int, keys: int = N_KEYS) -> str:
    return f"k{i % keys:03d}"


# ----------------------------------------------------------------------------------------------------- the verdict
def verdict(audit: Audit, read: list[int], strike: float | None, restarted: float | None,
            slow_ms: float = SLOW_MS) -> dict:
    """Join what was read back (message indices in the order read, per partition concatenated) with the audit."""
    n = audit.count
    acked = {i for i in range(n) if audit.state[i] == Audit.OK}
    seen: dict[int, int] = {}
    reordered = 0
    last_seq: dict[int, int] = {}
    for i in read:
        seen[i] = seen.get(i, 0) + 1
        if seen[i] > 1:
            continue  # a duplicate is counted as such, not as a reordering
        k, seq = i % audit.keys, i // audit.keys
        if seq < last_seq.get(k, -1):
            reordered += 1
        else:
            last_seq[k] = seq
    present = set(seen)
    out = {
        "acknowledged": len(acked),
        "lost": len(acked - present),
        "duplicated": sum(c - 1 for c in seen.values()),
        "reordered": reordered,
        "unacknowledgedPresent": len(present - acked),
        "publishErrors": sum(1 for i in range(n) if audit.state[i] == Audit.FAILED),
        "read": len(read),
        "unavailableMs": None,
        "recoveryMs": None,
    }
    if strike is None:
        return out

    def bad(i):
        return audit.state[i] != Audit.OK or (audit.done[i] - audit.sent[i]) * 1000.0 > slow_ms

    # per key (one key, one partition): from its first failed or slow send after the strike to the acknowledgement
    # of its first good send after that one; the longest over the keys (a fault that stalls only the killed
    # leader's partitions is measured on those)
    first_bad: dict[int, float] = {}
    windows: list[float] = []
    closed: set[int] = set()
    for i in range(n):
        k = i % audit.keys
        if k in closed or audit.sent[i] < strike - slow_ms / 1000.0:
            continue
        if bad(i):
            first_bad.setdefault(k, audit.sent[i])
        elif k in first_bad:
            windows.append(audit.done[i] - first_bad[k])
            closed.add(k)
    if not first_bad:
        out["unavailableMs"] = 0.0
    elif len(closed) == len(first_bad):
        out["unavailableMs"] = round(max(windows) * 1000.0, 1)
    if restarted is not None:
        goods = [audit.done[i] for i in range(n) if audit.state[i] == Audit.OK and audit.sent[i] >= restarted]
        if goods:
            out["recoveryMs"] = round((min(goods) - strike) * 1000.0, 1)
    return out


def per_second(audit: Audit, read: list[int], t0: float) -> list[dict]:
    """The cycle second by second from the start of traffic (t0, epoch s): sends made, acknowledgements and
    publish errors received, and acknowledged sends never read back (counted at the second they were sent). What
    the paper's fault timeline draws beside the hook's events."""
    n = audit.count
    if not n:
        return []
    present = set(read)
    last = max([audit.sent[i] for i in range(n)] + [audit.done[i] for i in range(n) if audit.state[i] != Audit.PENDING])
    rows = [{"s": s, "sent": 0, "acked": 0, "errors": 0, "lost": 0} for s in range(int(max(0.0, last - t0)) + 1)]

    def at(t: float) -> dict:
        return rows[min(len(rows) - 1, max(0, int(t - t0)))]
    for i in range(n):
        at(audit.sent[i])["sent"] += 1
        if audit.state[i] == Audit.OK:
            at(audit.done[i])["acked"] += 1
            if i not in present:
                at(audit.sent[i])["lost"] += 1
        elif audit.state[i] == Audit.FAILED:
            at(audit.done[i])["errors"] += 1
    return rows


# ----------------------------------------------------------------------------------------------------- the clients
def _props(text: str | None) -> dict[str, str]:
    out = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


class KafkaClient:
    def __init__(self, cluster: dict, driver: dict):
        from confluent_kafka.admin import AdminClient

        self.bootstrap = cluster["kafka"]["bootstrapServers"]
        self.driver = driver
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 2})
        self.nodes_by_id = {n["id"]: n["name"] for n in cluster["nodes"]}
        self.partitions: dict[str, int] = {}

    def wait_serving(self, seconds: float) -> None:
        """Every broker of cluster.json registered in the metadata (a restarted broker listens before it is)."""
        want = set(self.nodes_by_id)
        deadline = time.monotonic() + seconds
        got: set = set()
        while time.monotonic() < deadline:
            try:
                got = set(self.admin.list_topics(timeout=5).brokers)
            except Exception:
                got = set()
            if want <= got:
                return
            time.sleep(0.5)
        raise CellFailure("cluster", f"brokers {sorted(want - got)} not registered {seconds:.0f} s after the last "
                          "cycle", "set-up")

    def delete_topic(self, topic: str) -> None:
        self.admin.delete_topics([topic])[topic].result(30)

    def create_topic(self, topic: str, partitions: int) -> None:
        from confluent_kafka.admin import NewTopic

        fut = self.admin.create_topics([NewTopic(topic, partitions, int(self.driver.get("replicationFactor", 3)),
                                                 config=_props(self.driver.get("topicConfig")))])
        fut[topic].result(60)
        self._led(topic, partitions)
        self.partitions[topic] = partitions

    def _led(self, topic: str, partitions: int) -> dict[int, int]:
        """Partition -> leader broker id, once the broker asked knows every partition of the topic and its leader.
        Any broker answers a metadata request, and one restarted by the last cycle can still lack the topic
        (an empty partition list) for a moment after another broker has made it."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            md = self.admin.list_topics(topic, timeout=10).topics.get(topic)
            if md and md.error is None and len(md.partitions) == partitions and all(
                    p.leader >= 0 for p in md.partitions.values()):
                return {i: p.leader for i, p in md.partitions.items()}
            time.sleep(0.3)
        raise CellFailure("cluster", f"topic {topic}: no leader for every partition after 60 s", "set-up")

    def leader(self, topic: str) -> str:
        counts: dict[int, int] = {}
        for b in self._led(topic, self.partitions[topic]).values():
            counts[b] = counts.get(b, 0) + 1
        best = max(sorted(counts), key=lambda b: counts[b])
        return self.nodes_by_id[best]

    def producer(self, topic: str):
        from confluent_kafka import Producer

        conf = {"bootstrap.servers": self.bootstrap, "log_level": 2, "enable.idempotence": False,
                "message.timeout.ms": 30000, "queue.buffering.max.messages": 1000000}
        conf.update(_props(self.driver.get("producerConfig")))
        p = Producer(conf)
        return _KafkaSend(p)

    def read_back(self, topic: str, partitions: int, deadline: float, audit: Audit | None = None) -> list[int]:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"verify-{uuid.uuid4().hex[:8]}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 2})
        try:
            high = {}
            for p in range(partitions):
                while True:
                    try:
                        high[p] = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                        break
                    except Exception:
                        if time.monotonic() > deadline:
                            raise CellFailure("timeout", f"verifier: no high watermark of {topic}-{p}", "verify")
                        time.sleep(0.5)
            c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
            per: dict[int, list[int]] = {p: [] for p in range(partitions)}
            pos = {p: 0 for p in range(partitions)}
            while any(pos[p] < high[p] for p in range(partitions)):
                if time.monotonic() > deadline:
                    short = {p: (pos[p], high[p]) for p in range(partitions) if pos[p] < high[p]}
                    raise CellFailure("timeout", f"verifier: {topic} not read to its end in time: {short}", "verify")
                for m in c.consume(1000, timeout=1.0):
                    if m.error():
                        continue
                    i = index_of(m.value())
                    if i is not None:
                        per[m.partition()].append(i)
                    pos[m.partition()] = max(pos[m.partition()], m.offset() + 1)
            return [i for p in range(partitions) for i in per[p]]
        finally:
            c.close()

    def close(self) -> None:
        pass


class _KafkaSend:
    def __init__(self, p):
        self.p = p
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._poll, daemon=True)
        self._t.start()

    def _poll(self):
        while not self._stop.is_set():
            self.p.poll(0.05)

    def send(self, topic: str, i: int, size: int, audit: Audit) -> None:
        def cb(err, msg, i=i):
            audit.ack(i, err is None)
        while True:
            try:
                self.p.produce(topic, payload(i, size), key_of(i).encode(), on_delivery=cb)
                return
            except BufferError:
                time.sleep(0.01)

    def flush(self, seconds: float) -> int:
        left = self.p.flush(seconds)
        self._stop.set()
        self._t.join(5)
        return left


class PulsarClient:
    def __init__(self, cluster: dict, driver: dict, log: Path):
        import pulsar

        self.pulsar = pulsar
        self.http = cluster["pulsar"]["httpUrl"]
        self.service = cluster["pulsar"]["serviceUrl"]
        self.namespace = cluster["pulsar"].get("namespace", "public/default")
        self.driver = driver
        self.client = pulsar.Client(self.service, operation_timeout_seconds=30, io_threads=2,
                                    logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(log)))
        self.nodes = cluster["nodes"]

    def topic(self, name: str) -> str:
        return f"persistent://{self.namespace}/{name}"

    def create_topic(self, topic: str, partitions: int) -> None:
        from systems.pulsar import http

        code, text = http("PUT", f"{self.http}/admin/v2/persistent/{self.namespace}/{topic}/partitions", partitions)
        if code not in (200, 204):
            raise CellFailure("cluster", f"creating topic {topic}: {code} {text[:200]}", "set-up")
        # a durable subscription from the start: without one Pulsar keeps nothing (retention 0) and trims every
        # ledger that is closed, e.g. when a bookie fault rolls the ledger over; the verifier would then miss
        # acknowledged messages the cluster deleted on purpose. Creating it opens the topic's first ledger, which
        # needs an ensemble of bookies the broker holds writable: after a partition cut bookies off their metadata
        # store they register again a few seconds after the heal, and until then the broker answers 500 "Not enough
        # non-faulty bookies". That is the cluster still recovering from the last cycle: waited for, up to
        # SERVING_RETRY_SECONDS; any other answer, or that one past the wait, fails the cell as before.
        deadline = time.monotonic() + SERVING_RETRY_SECONDS
        while True:
            code, text = http("PUT", f"{self.http}/admin/v2/persistent/{self.namespace}/{topic}/subscription/"
                              f"{VERIFY_SUBSCRIPTION}")
            if code in (200, 204, 409):  # 409: an earlier try made it before its answer was lost
                return
            if not (code >= 500 and "bookies" in text) or time.monotonic() >= deadline:
                raise CellFailure("cluster", f"creating subscription {VERIFY_SUBSCRIPTION} on {topic}: {code} "
                                  f"{text[:200]}", "set-up")
            time.sleep(2)

    def wait_serving(self, seconds: float) -> None:
        """The broker's health check passes: it writes and reads a heartbeat topic through the bookies."""
        from systems.pulsar import http

        deadline = time.monotonic() + seconds
        code, text = 0, ""
        while time.monotonic() < deadline:
            code, text = http("GET", f"{self.http}/admin/v2/brokers/health", timeout=30)
            if code == 200:
                return
            time.sleep(1)
        raise CellFailure("cluster", f"broker health check failing {seconds:.0f} s after the last cycle: {code} "
                          f"{text[:200]}", "set-up")

    def delete_topic(self, topic: str) -> None:
        from systems.pulsar import http

        code, text = http("DELETE", f"{self.http}/admin/v2/persistent/{self.namespace}/{topic}/partitions?force=true",
                          timeout=60)
        if code not in (200, 204):
            raise RuntimeError(f"deleting {topic}: {code} {text[:200]}")

    def leader(self, topic: str) -> str:
        from systems.pulsar import http

        code, text = http("GET", f"{self.http}/lookup/v2/topic/persistent/{self.namespace}/{topic}-partition-0")
        url = urllib.parse.urlsplit(json.loads(text).get("brokerUrl", "") if code == 200 else "")
        brokers = [n for n in self.nodes if n["role"] == "broker"]
        # on hosts every broker listens on the same port, each at its host's address: match both
        for n in brokers:
            if url.port == n["ports"]["service"] and url.hostname in (n.get("host") or "127.0.0.1", "localhost"):
                return n["name"]
        if len(brokers) == 1:
            return brokers[0]["name"]  # one broker owns every bundle (whatever name it advertises)
        raise CellFailure("cluster", f"topic {topic}: the owner's URL {url.geturl()!r} names none of the brokers "
                          f"{[n['name'] for n in brokers]}", "set-up")

    def producer(self, topic: str):
        pc = self.driver.get("producer") or {}
        p = self.client.create_producer(
            self.topic(topic), batching_enabled=bool(pc.get("batchingEnabled", True)),
            batching_max_publish_delay_ms=int(pc.get("batchingMaxPublishDelayMs", 10)),
            batching_max_allowed_size_in_bytes=int(pc.get("batchingMaxBytes", 1 << 20)),
            block_if_queue_full=True, max_pending_messages=int(pc.get("pendingQueueSize", 10000)),
            send_timeout_millis=30000)
        return _PulsarSend(p, self.pulsar)

    def read_back(self, topic: str, partitions: int, deadline: float, audit: Audit | None = None) -> list[int]:
        out: list[int] = []
        for p in range(partitions):
            t = self.topic(f"{topic}-partition-{p}")
            while True:
                try:
                    r = self.client.create_reader(t, self.pulsar.MessageId.earliest)
                    break
                except Exception as exc:
                    if time.monotonic() > deadline:
                        raise CellFailure("timeout", f"verifier: no reader on {t}: {exc}", "verify") from None
                    time.sleep(1)
            try:
                while True:
                    if time.monotonic() > deadline:
                        raise CellFailure("timeout", f"verifier: {t} not read to its end in time", "verify")
                    try:
                        if not r.has_message_available():
                            break
                        m = r.read_next(timeout_millis=10000)
                    except Exception:
                        time.sleep(0.5)
                        continue
                    i = index_of(m.data())
                    if i is not None:
                        out.append(i)
            finally:
                r.close()
        return out

    def close(self) -> None:
        self.client.close()


class _PulsarSend:
    def __init__(self, p, pulsar):
        self.p, self.ok = p, pulsar.Result.Ok
        self.topic = None

    def send(self, topic: str, i: int, size: int, audit: Audit) -> None:
        def cb(res, msg_id, i=i):
            audit.ack(i, res == self.ok)
        try:
            self.p.send_async(payload(i, size), cb, partition_key=key_of(i))
        except Exception:
            audit.ack(i, False)

    def flush(self, seconds: float) -> int:
        t = threading.Thread(target=self._flush, daemon=True)
        t.start()
        t.join(seconds)
        return 1 if t.is_alive() else 0

    def _flush(self):
        try:
            self.p.flush()
        except Exception:
            pass


class PravegaClient:
    """Pravega through its Rust client's Python bindings (`pravega_client`): a stream of `partitions` fixed segments
    per cycle in one scope, events routed by key, each write's acknowledgement awaited on its own, and a verifier
    that seals the stream and reads it back with a reader group of its own. The segment store leads every segment
    (the plan runs one); the controller URI comes from cluster.json.

    KEYS: the writer keeps one write in flight per key (_PravegaSend), and a write takes 25-30 ms with many in flight
    (a quiet L1 cluster here: 64 keys 1 836-2 318 writes/s, 256 keys 7 975 writes/s, median 29 ms), so 64 keys
    would barely carry the fault workloads' 2 000 msg/s and drain a backlog after an outage at a few hundred a
    second; 256 keys carry four times the rate (workloads/bench/pravega_writer.py measures both)."""

    KEYS = 256

    def __init__(self, cluster: dict, driver: dict):
        try:
            import pravega_client
        except ImportError:
            raise CellFailure("error", "pravega: the Python client `pravega` is not installed (its wheels are for "
                              "x86_64 and CPython <= 3.11 only; pyproject.toml)", "set-up") from None
        self.pc = pravega_client
        self.uri = cluster["pravega"]["controllerUri"]
        self.scope = FAULT_SCOPE  # the driver has no setting a fault cycle uses (the levels are the segment store's)
        self.nodes = cluster["nodes"]
        self._mgr = None

    @property
    def mgr(self):
        if self._mgr is None:
            self._mgr = self.pc.StreamManager(self.uri)
        return self._mgr

    def wait_serving(self, seconds: float) -> None:
        """The controller answers and the segment store takes a write: one event on a probe stream, acknowledged."""
        deadline = time.monotonic() + seconds
        err = "no answer"
        while time.monotonic() < deadline:
            try:
                self.mgr.create_scope(self.scope)
                self.mgr.create_stream(self.scope, PRAVEGA_PROBE, 1)
                w = self.mgr.create_writer(self.scope, PRAVEGA_PROBE)
                left = max(1.0, min(15.0, deadline - time.monotonic()))

                async def probe():
                    await asyncio.wait_for(w.write_event_async("probe"), left)
                asyncio.run(probe())
                return
            except Exception as exc:  # the controller not up yet, the segment containers not recovered yet
                err = f"{type(exc).__name__}: {str(exc)[:200]}"
                time.sleep(1)
        raise CellFailure("cluster", f"pravega: no acknowledged write {seconds:.0f} s after the last cycle: {err}",
                          "set-up")

    def create_topic(self, topic: str, partitions: int) -> None:
        try:
            self.mgr.create_scope(self.scope)
            if not self.mgr.create_stream(self.scope, topic, partitions):
                raise CellFailure("cluster", f"pravega: stream {self.scope}/{topic} exists already", "set-up")
        except CellFailure:
            raise
        except Exception as exc:
            raise CellFailure("cluster", f"pravega: creating stream {self.scope}/{topic}: {exc}", "set-up") from None

    def leader(self, topic: str) -> str:
        stores = [n["name"] for n in self.nodes if n["role"] == "segmentstore"]
        if len(stores) != 1:
            raise CellFailure("cluster", f"pravega: {len(stores)} segment stores; the owner of a segment is looked up "
                              "only where one segment store owns them all", "set-up")
        return stores[0]

    def producer(self, topic: str):
        return _PravegaSend(self.mgr.create_writer(self.scope, topic))

    def read_back(self, topic: str, partitions: int, deadline: float, audit: Audit | None = None) -> list[int]:
        """Seal the stream (its segments' lengths are final once the segment store has recovered them), then read
        it from the head with a reader group of its own. The bindings give no tail position to read up to, so the
        end is known from the audit: reading stops once every key's last acknowledged message has been read (a key
        lives in one segment, in order), or, when some key's last acknowledged message never comes (lost),
        PRAVEGA_QUIET_SECONDS after the last event read. `self.verify_end` says which ("complete" / "quiet") and
        how many keys were short. Events in the order read: per segment in order, segments interleaved."""
        want: dict[int, int] = {}
        keys = audit.keys if audit is not None else N_KEYS
        if audit is not None:
            for i in range(audit.count):
                if audit.state[i] == Audit.OK:
                    want[i % keys] = i
        while True:
            try:
                self.mgr.seal_stream(self.scope, topic)
                break
            except Exception as exc:
                if time.monotonic() > deadline:
                    raise CellFailure("timeout", f"verifier: stream {topic} not sealed: {exc}", "verify") from None
                time.sleep(1)
        group = f"verify-{uuid.uuid4().hex[:8]}"
        rg = self.mgr.create_reader_group(group, self.scope, topic)
        reader = rg.create_reader("verifier")
        out: list[int] = []
        short = dict(want)  # keys whose last acknowledged message is not read yet

        async def read() -> None:
            quiet_since = time.monotonic()
            while time.monotonic() - quiet_since < PRAVEGA_QUIET_SECONDS and (short or not want):
                if time.monotonic() > deadline:
                    raise CellFailure("timeout", f"verifier: {topic} not read to its end in time ({len(short)} keys "
                                      "short of their last acknowledged message)", "verify")
                try:
                    sl = await asyncio.wait_for(reader.get_segment_slice_async(), 2.0)
                except asyncio.TimeoutError:
                    continue
                n0 = len(out)
                for ev in sl:
                    i = index_of(ev.data())
                    if i is not None:
                        out.append(i)
                        if short.get(i % keys, -1) <= i:
                            short.pop(i % keys, None)
                reader.release_segment(sl)
                if len(out) > n0:
                    quiet_since = time.monotonic()
        try:
            asyncio.run(read())
        finally:
            try:
                reader.reader_offline()
                self.mgr.delete_reader_group(group, self.scope)
            except Exception:
                pass
        self.verify_end = {"end": "complete" if want and not short else "quiet", "keysShort": len(short),
                           "quietSeconds": PRAVEGA_QUIET_SECONDS}
        return out

    def delete_topic(self, topic: str) -> None:
        try:
            self.mgr.seal_stream(self.scope, topic)
        except Exception:
            pass  # sealed by the verifier
        self.mgr.delete_stream(self.scope, topic)

    def close(self) -> None:
        self._mgr = None


class _PravegaSend:
    """One write in flight per key, on an event loop of its own thread: a key's next write goes out when the last
    one is acknowledged or has failed, keys run side by side. The bindings issue each write_event_async as a task
    of its own, so writes in flight together reach the segment store in any order (946 of 8 000 events read back
    out of their key's order with every write in flight at once, 0 with one per key): the per-key order Pravega
    guarantees holds only for writes made one after another. Each acknowledgement or error goes into the audit."""

    def __init__(self, writer):
        self.w = writer
        self.loop = asyncio.new_event_loop()
        self.queues: dict[str, asyncio.Queue] = {}
        self.pending = 0
        self._lock = threading.Lock()
        self._t = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._t.start()

    async def _key_writer(self, q: asyncio.Queue) -> None:
        while True:
            i, event, key, audit = await q.get()
            try:
                await self.w.write_event_async(event, key)
                audit.ack(i, True)
            except Exception:
                audit.ack(i, False)
            finally:
                with self._lock:
                    self.pending -= 1

    def _start(self, i: int, event: str, key: str, audit: Audit) -> None:
        q = self.queues.get(key)
        if q is None:
            q = self.queues[key] = asyncio.Queue()
            self.loop.create_task(self._key_writer(q))
        q.put_nowait((i, event, key, audit))

    def send(self, topic: str, i: int, size: int, audit: Audit) -> None:
        with self._lock:
            self.pending += 1
        self.loop.call_soon_threadsafe(self._start, i, payload(i, size).decode("ascii"), key_of(i, audit.keys), audit)

    def flush(self, seconds: float) -> int:
        deadline = time.monotonic() + seconds
        while self.pending and time.monotonic() < deadline:
            time.sleep(0.05)
        left = self.pending

        async def stop() -> None:  # the per-key writers end waiting on their queues (a write still out is left)
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.wait(tasks, timeout=2) if tasks else None
            self.loop.stop()
        asyncio.run_coroutine_threadsafe(stop(), self.loop)
        self._t.join(5)
        return left


def make_client(system: str, cluster: dict, driver: dict, log: Path):
    if system == "kafka":
        return KafkaClient(cluster, driver)
    if system == "pulsar":
        return PulsarClient(cluster, driver, log)
    return PravegaClient(cluster, driver)


# ------------------------------------------------------------------------------------------------------- targets
SERVING_RETRY_SECONDS = 120  # how long set-up waits for bookies that are registering again (PulsarClient.create_topic)


def client_addresses(inventory: str | None) -> list[str]:
    """The addresses of the inventory's client hosts (none on this machine)."""
    if inventory is None:
        return []
    from testbeds import inventory as inv_mod
    return sorted({h.address for h in inv_mod.load(inventory).clients})


def server_nodes(cluster: dict) -> list[dict]:
    """Every node of cluster.json is a server process (Kafka's three nodes; Pulsar's ZooKeeper, bookies, broker)."""
    return list(cluster["nodes"])


def partition_peers(cluster: dict, names: list[str]) -> dict[str, list[str]]:
    """Per host of the targets: the addresses of every other server host of the cluster (its clients are not
    among them). One line naming the cluster's hosts when the targets share their host's address with another node's."""
    nodes = {n["name"]: n for n in cluster["nodes"]}
    out: dict[str, list[str]] = {}
    for name in names:
        host = nodes[name].get("hostName") or "local"
        mine = nodes[name].get("host") or "127.0.0.1"
        out[host] = sorted({n.get("host") or "127.0.0.1" for n in cluster["nodes"]} - {mine})
        if not out[host]:
            raise ValueError(f"{name}: every node of the cluster is on its host ({mine}): nothing to partition it from")
    return out


def _apart_from(nodes: list[dict], leader: str) -> tuple[str, list[dict]]:
    """The leader's host address and the nodes on other hosts."""
    mine = next(n for n in nodes if n["name"] == leader).get("host") or "127.0.0.1"
    return mine, [n for n in nodes if (n.get("host") or "127.0.0.1") != mine]


def majority_peers(cluster: dict, leader: str, clients: list[str]) -> dict[str, list[str]]:
    """partition-majority: per server host other than the leader's, what it drops: the leader's host, the client
    hosts' addresses and @ssh-client (the controller the hook's ssh comes from; on the lab the fault cycle's own
    client). One line naming the leader when no server host is apart from it."""
    from systems.faulthook import SSH_CLIENT

    mine, apart = _apart_from(cluster["nodes"], leader)
    out: dict[str, list[str]] = {}
    for n in apart:
        out.setdefault(n.get("hostName") or "local", sorted({mine, *clients}) + [SSH_CLIENT])
    if not out:
        raise ValueError(f"{leader}: every node of the cluster is on its host ({mine}): no majority to cut it from")
    return out


def targets(fault: str, cluster: dict, leader: str, strike: dict) -> list[str]:
    nodes = server_nodes(cluster)
    if fault == "partition-majority":  # the hook runs on every other server host: the majority cuts itself off
        return [n["name"] for n in _apart_from(nodes, leader)[1]]
    if fault in ("kill-leader", "partition-leader", "pause-leader", "partition-minority", "slow-link-leader"):
        return [leader]
    if fault in ("crash-all", "power-loss"):
        return [n["name"] for n in nodes]
    if fault == "kill-bookie":
        pool = [n["name"] for n in nodes if n["role"] == "bookie"]
    else:  # kill-one
        pool = [n["name"] for n in nodes if n["name"] != leader]
    return [sorted(pool)[strike["seed"] % len(pool)]]


# ---------------------------------------------------------------------------------------------------------- hook
class _HookProc:
    """One host's fault hook (systems/faulthook.py) and a reader of its event lines."""

    def __init__(self, host: str, cmd: list[str], log):
        self.host = host
        self.p = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                  text=True, start_new_session=True)
        self.events: list[dict] = []
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self.cv:
                self.events.append(ev)
                self.cv.notify_all()
        with self.cv:
            self.events.append({"event": "exited", "host": self.host})
            self.cv.notify_all()

    def send(self, line: str) -> None:
        try:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def next(self, name: str, after: int, end: float) -> tuple[dict | None, int]:
        """The first event `name` (or failed/exited) at index >= after, before `end`; and the index after it."""
        with self.cv:
            while True:
                for k in range(after, len(self.events)):
                    if self.events[k]["event"] in (name, "failed", "exited"):
                        return self.events[k], k + 1
                left = end - time.monotonic()
                if left <= 0:
                    return None, after
                self.cv.wait(left)

    def stop(self) -> None:
        """TERM the hook's process group, KILL after 5 s."""
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            if self.p.poll() is not None:
                break
            try:
                os.killpg(self.p.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.p.wait(wait)
            except subprocess.TimeoutExpired:
                continue


class Hook:
    """The cycle's fault hooks, one per host that holds targets (on this machine one; on an inventory's hosts one
    over ssh each), driven together, and their events merged into the cycle's timeline: ready (every hook), struck
    (the first kill), dropped, restarted (per stop stage, every host's targets of it), back (every target listening
    again), failed (a hook's, naming the node), exited.

    The restart follows the stop stages as `up` starts them, across hosts: ZooKeeper (stage 2 and up) and every node
    of a stage waited for before the next starts, bookies and broker together (the broker retries until they are
    there); Kafka's nodes all at once."""

    def __init__(self, cluster: dict, names: list[str], down: float, power_loss: bool, deadline: float, log: Path,
                 inventory: str | None = None, hold: str | None = None, peers: dict[str, list[str]] | None = None,
                 kbit: int | None = None):
        """hold: None (kill -9 and restart), "pause" (SIGSTOP, SIGCONT after `down`), "partition" (each target's
        host cut off from peers[host] for `down`, then healed), "isolate-all" (each target's host cut off from every
        other host, its clients included) or "throttle" (a token bucket of `kbit` kbit/s on each target's host's
        egress)."""
        from testbeds import hooks

        by_name = {n["name"]: n for n in cluster["nodes"]}
        self.down, self.deadline, self.power_loss = down, deadline, power_loss
        self.hold, self.peers, self.kbit = hold, peers or {}, kbit
        self.log = open(log, "a")
        self.stage_of = {n: int(by_name[n].get("stopStage", 0)) for n in names}
        groups: dict[str, list[str]] = {}
        for n in names:
            groups.setdefault(by_name[n].get("hostName") or "local", []).append(n)
        self.procs: dict[str, _HookProc] = {}
        self.targets = groups
        for host, ns in groups.items():
            rundir = by_name[ns[0]].get("hostRunDir") or cluster["rundir"]
            args = ["--rundir", rundir, "--targets", ",".join(ns), "--restart-deadline", str(deadline)] + (
                ["--power-loss"] if power_loss else [])
            self.procs[host] = _HookProc(host, hooks.fault_hook_cmd(
                args, host if inventory else None, inventory), self.log)
        self.events: list[dict] = []
        self.cv = threading.Condition()
        self._go = threading.Event()
        self._done = threading.Event()
        threading.Thread(target=self._drive, daemon=True).start()

    def _emit(self, **ev) -> None:
        with self.cv:
            self.events.append(ev)
            self.cv.notify_all()

    def _all(self, hosts, name: str, pos: dict, end: float) -> list[dict] | None:
        """Each host's next event `name`; None after emitting failed (a hook failed, exited or was too slow)."""
        out = []
        for h in hosts:
            ev, pos[h] = self.procs[h].next(name, pos[h], end)
            if ev is None or ev["event"] != name:
                ev = ev or {"event": "failed", "node": "?", "error": f"host {h}: no '{name}' from its fault hook"}
                if ev["event"] == "exited":
                    ev = {"event": "failed", "node": "?", "error": f"host {h}: its fault hook exited"}
                self._emit(**{**ev, "host": h})
                return None
            out.append(ev)
        return out

    def _drive(self) -> None:
        try:
            pos = {h: 0 for h in self.procs}
            hosts = list(self.procs)
            if self._all(hosts, "ready", pos, time.monotonic() + 60) is None:
                return
            self._emit(event="ready")
            self._go.wait()
            if self._done.is_set():
                return
            if self.hold:
                self._hold(hosts, pos)
                return
            for h in hosts:
                self.procs[h].send("strike")
            evs = self._all(hosts, "struck", pos, time.monotonic() + 60)
            if evs is None:
                return
            t = min(e["t"] for e in evs)
            self._emit(event="struck", t=t, targets=[n for h in hosts for n in self.targets[h]])
            if self.power_loss:
                for h in hosts:
                    self.procs[h].send("drop")
                evs = self._all(hosts, "dropped", pos, time.monotonic() + 120)
                if evs is None:
                    return
                detail = evs[0]["detail"] if len(evs) == 1 else {e_h: e["detail"] for e_h, e in zip(hosts, evs)}
                self._emit(event="dropped", t=max(e["t"] for e in evs), detail=detail)
            time.sleep(max(0.0, t + self.down - time.time()))
            restarted = time.time()
            end = time.monotonic() + self.deadline + 30
            for stage in sorted(set(self.stage_of.values()), reverse=True):
                hs = [h for h in hosts if any(self.stage_of[n] == stage for n in self.targets[h])]
                for h in hs:
                    self.procs[h].send(f"restart {stage}")
                evs = self._all(hs, "restarted", pos, end)
                if evs is None:
                    return
                self._emit(event="restarted", t=max(e["t"] for e in evs), nodes=[n for e in evs for n in e["nodes"]])
                if stage >= 2:
                    for h in hs:
                        self.procs[h].send(f"back {stage}")
                    if self._all(hs, "back", pos, end) is None:
                        return
            for h in hosts:
                self.procs[h].send("back all")
            if self._all(hosts, "back", pos, end) is None:
                return
            self._emit(event="back", t=time.time(), restarted=restarted)
        except Exception as exc:  # the driver must report, never die silently
            self._emit(event="failed", node="?", error=f"fault hook driver: {type(exc).__name__}: {exc}")
        finally:
            self._emit(event="exited")

    def _hold(self, hosts: list[str], pos: dict) -> None:
        """A pause or a partition: begun on every target's host, held `down` seconds, ended on every host. The
        timeline gets struck (begun), healed (ended) and back (restarted = the end: the verdict's recovery runs
        from it)."""
        begin, begun, end_cmd, ended = {
            "pause": ("pause", "paused", "resume", "resumed"),
            "partition": (None, "isolated", "heal", "healed"),
            "isolate-all": ("isolate-all", "isolated", "heal", "healed"),
            "throttle": (f"throttle {self.kbit}", "throttled", "heal", "healed")}[self.hold]
        for h in hosts:
            self.procs[h].send(begin or f"isolate {','.join(self.peers[h])}")
        evs = self._all(hosts, begun, pos, time.monotonic() + 60)
        if evs is None:
            return
        t = min(e["t"] for e in evs)
        extra = ({"peers": self.peers} if self.hold == "partition" else {"kbit": self.kbit} if self.hold == "throttle"
                 else {"keep": {h: e.get("keep", []) for h, e in zip(hosts, evs)}} if self.hold == "isolate-all" else {})
        self._emit(event="struck", t=t, targets=[n for h in hosts for n in self.targets[h]], hold=self.hold, **extra)
        time.sleep(max(0.0, t + self.down - time.time()))
        for h in hosts:
            self.procs[h].send(end_cmd)
        evs = self._all(hosts, ended, pos, time.monotonic() + 60)
        if evs is None:
            return
        t_end = max(e["t"] for e in evs)
        self._emit(event="healed", t=t_end)
        self._emit(event="back", t=t_end, restarted=t_end)

    def wait(self, names: tuple[str, ...], timeout: float) -> dict | None:
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                for ev in self.events:
                    if ev["event"] in names or ev["event"] in ("failed", "exited"):
                        return ev
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.cv.wait(left)

    def strike(self) -> None:
        self._go.set()

    def first(self, name: str) -> dict | None:
        return next((e for e in self.events if e["event"] == name), None)

    def ended(self) -> bool:
        return self.first("exited") is not None

    def stop(self) -> None:
        """End the driver, then TERM each hook's process group (KILL after 5 s)."""
        self._done.set()
        self._go.set()
        for hp in self.procs.values():
            hp.stop()
        self.log.close()


# ------------------------------------------------------------------------------------------------------ the cycle
def traffic(sender, topic: str, rate: int, seconds: float, size: int, audit: Audit, at: float, strike,
            recovered=lambda: True, settled=lambda: True) -> float:
    """Send `rate` msg/s for `seconds` on a fixed schedule; call strike() at `at` seconds (from a timer thread, so a
    blocked send cannot delay it). Past `seconds`, go on at the same rate until recovered() says the cluster took a
    send made after the restart (so that recoveryMs is measured), then SETTLE_SECONDS more and on until settled()
    says every key had a good send again (unavailableMs; at most SETTLE_MAX_SECONDS past recovery: a client that
    drains a backlog slowly, Pravega's, would otherwise end the traffic before any key sends promptly again), or
    until the audit is full. Returns the start epoch."""
    t0 = time.time()
    timer = threading.Timer(max(0.0, t0 + at - time.time()), strike)
    timer.daemon = True
    timer.start()
    n = int(rate * seconds)
    cap = len(audit.sent)
    tick = 0.01
    i = 0
    settled_at = None  # once recovered, SETTLE_SECONDS more, so that every key has a good send again

    def more() -> bool:
        nonlocal settled_at
        if i < n:
            return True
        if i >= cap:
            return False
        if settled_at is None and recovered():
            settled_at = time.time() + SETTLE_SECONDS
        if settled_at is None:
            return True
        now_ = time.time()
        return now_ < settled_at or (now_ < settled_at + SETTLE_MAX_SECONDS and not settled())
    while more():
        due = min(cap, int((time.time() - t0) * rate) + 1)
        while i < due:
            audit.sent[i] = t0 + i / rate
            audit.count = i + 1
            sender.send(topic, i, size, audit)
            i += 1
        time.sleep(tick)
    return t0


def execute(run: plan.Run, testbed: str, scale_name: str, result: Path, status: Path, clusters: Path, log: Path,
            driver: Path, seed: int, experiments: Path = plan.EXPERIMENTS, limits: dict | None = None,
            inventory: str | None = None, keep_cluster: bool = False) -> dict:
    doc = plan.load(experiments)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    record = {"run": run.relpath(testbed), "system": run.system, "level": run.level, "tuning": run.tuning_label,
              "workload": run.workload_id, "baseWorkload": run.base_workload, "fault": run.fault, "rep": run.rep,
              "experiments": list(run.experiments), "scale": scale_name, "testbed": testbed, "startedAt": now(),
              "log": str(log)}
    expect = plan.expectation(doc, scale_name, run)
    if expect:
        record["faultExpect"] = expect
    cl = Clusters(clusters, limits, inventory)
    hook = None
    client = None
    old = {}

    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for s_ in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            old[s_] = signal.signal(s_, on_signal)
        except ValueError:
            pass
    phase = "set-up"
    try:
        if inventory is not None and run.fault == "power-loss":
            raise CellFailure("error", f"{run.fault}: faultfs is not shipped to an inventory's hosts yet (the kill "
                              "faults run there)", "set-up")
        if inventory is None and run.fault in plan.NEEDS_HOSTS:
            raise CellFailure("error", f"{run.relpath(testbed)}: fault {run.fault} needs hosts of their own (an "
                              "inventory: --profile lab or aws); on this machine every node shares one network",
                              "set-up")
        exp_id = next(e for e in run.experiments if "faults" in doc["experiments"][e])
        timing = plan.fault_timing(doc, scale_name, exp_id)
        wl = yaml.safe_load((plan.OMB_DIR / f"{run.base_workload}.yaml").read_text())
        drv = yaml.safe_load(driver.read_text())
        rate = int(timing["rate"] or wl["producerRate"])
        seconds = float(timing["testSeconds"])
        size = int(wl["messageSize"])
        partitions = int(wl["partitionsPerTopic"])
        strike = plan.strike_plan(run, seed, timing)
        fault = {"type": run.fault, "strikeAtSeconds": strike["strikeAtSeconds"],
                 "downSeconds": float(timing["downSeconds"]), "seed": strike["seed"], "targets": []}
        record["faultPlan"] = dict(fault, rateMsgs=rate, testSeconds=seconds)
        up_args = ("--faults",) + (("--faultfs",) if run.fault == "power-loss" else ())
        t_up = time.monotonic()
        rundir = cl.ensure(run, log, 0.0, up_args=up_args)
        cycle = _next_cycle(rundir)
        reused = cycle > 1  # the count lives in the cluster's own directory: 1 on a cluster started for this run
        record["clusterUpSeconds"] = 0.0 if reused else round(time.monotonic() - t_up, 1)
        record.update(clusterDir=str(rundir), clusterCycle=cycle)
        fault["clusterCycle"] = cycle
        cluster = json.loads((rundir / "cluster.json").read_text())
        if reused and cluster.get("faultfs"):
            from systems import faultfs

            faultfs.checkpoint_all(rundir)
        topic = f"fault-{uuid.uuid4().hex[:10]}"
        client = make_client(run.system, cluster, drv, log)
        t_serve = time.monotonic()
        client.wait_serving(float(timing["restartDeadlineSeconds"]))
        record["servingWaitSeconds"] = round(time.monotonic() - t_serve, 1)
        client.create_topic(topic, partitions)
        leader = client.leader(topic)
        fault["targets"] = targets(run.fault, cluster, leader, strike)
        record["faultPlan"]["targets"] = fault["targets"]
        hold = plan.HOLD_FAULTS.get(run.fault)
        peers = None
        if hold == "partition":
            try:
                peers = (majority_peers(cluster, leader, client_addresses(inventory)) if run.fault == "partition-majority"
                         else partition_peers(cluster, fault["targets"]))
            except ValueError as e:
                raise CellFailure("error", f"{run.fault}: {e}", "set-up") from None
            record["faultPlan"]["peers"] = peers
        elif hold == "throttle":
            record["faultPlan"]["slowLinkKbit"] = timing["slowLinkKbit"]
        hook = Hook(cluster, fault["targets"], fault["downSeconds"], run.fault == "power-loss",
                    float(timing["restartDeadlineSeconds"]), log, inventory, hold=hold, peers=peers,
                    kbit=timing["slowLinkKbit"] if hold == "throttle" else None)
        ev = hook.wait(("ready",), 60)
        if not ev or ev["event"] != "ready":
            raise CellFailure("error", f"fault hook did not start: {ev}", "set-up")
        sender = client.producer(topic)
        # room for the traffic, and for sending on until the restarted cluster takes a send (or its deadline)
        audit = Audit(int(rate * (seconds + fault["downSeconds"] + float(timing["restartDeadlineSeconds"]) + 30)),
                      getattr(client, "KEYS", N_KEYS))

        def recovered() -> bool:
            ev = hook.first("back")
            if hook.first("failed") or hook.ended() and ev is None:
                return True  # nothing to wait for
            if ev is None:
                return False
            j0 = bisect.bisect_left(audit.sent, ev["restarted"], 0, audit.count)
            return audit.state.find(Audit.OK, j0, audit.count) >= 0

        def settled() -> bool:  # every key had a send acknowledged promptly after the restart (or the heal)
            ev = hook.first("back")
            return ev is None or min(audit.last_good) >= ev["restarted"]
        phase = "traffic"
        t_cycle = time.monotonic()
        t0 = traffic(sender, topic, rate, seconds, size, audit, fault["strikeAtSeconds"], hook.strike, recovered,
                     settled)
        t_end = time.time()
        phase = "restart"
        back = hook.wait(("back",), fault["downSeconds"] + float(timing["restartDeadlineSeconds"]) + 60)
        if back is None or back["event"] != "back":
            ev = back or {"event": "timeout"}
            node = ev.get("node", "?")
            record["logTail"] = ev.get("logTail", "")
            raise CellFailure("cluster", f"{node} did not come back: {ev.get('error', ev['event'])}", "restart")
        phase = "flush"
        left = sender.flush(FLUSH_SECONDS)
        phase = "verify"
        t_read = time.monotonic()
        read = client.read_back(topic, partitions, time.monotonic() + READ_SECONDS, audit)
        record["cycleSeconds"] = round(time.monotonic() - t_cycle, 1)
        record["readSeconds"] = round(time.monotonic() - t_read, 1)
        # who led before the strike and after the cycle, from the cluster's own metadata (Kafka: the broker leading
        # most of the topic's partitions; Pulsar: the broker owning its bundle)
        fault["leaderBefore"] = leader
        try:
            fault["leaderAfter"] = client.leader(topic)
        except Exception as exc:  # the cycle's counts stand; the missing answer is recorded as such
            fault["leaderAfter"] = None
            with open(log, "a") as fh:
                fh.write(f"leader of {topic} after the cycle: {exc}\n")
        struck = hook.first("struck")
        v = verdict(audit, read, struck["t"] if struck else None, back.get("restarted"))
        fault.update(v)
        fault["sent"] = audit.count
        fault["pendingAtEnd"] = sum(1 for i in range(audit.count) if audit.state[i] == Audit.PENDING)
        if getattr(client, "verify_end", None):  # Pravega: how its verifier knew the end of the stream
            fault["verifyEnd"] = client.verify_end
        res = {
            "workload": wl.get("name", run.base_workload), "driver": drv.get("name", driver.stem),
            "x-streambench": {
                "kind": "fault-run", "run": run.relpath(testbed), "system": run.system, "level": run.level,
                "tuning": run.tuning, "testbed": testbed, "scale": scale_name, "experiments": list(run.experiments),
                "workload": {"topic": topic, "partitionsPerTopic": partitions, "messageSize": size, "keys": audit.keys,
                             "producerRate": rate, "testDurationSeconds": seconds},
                "measurementStartTime": dt.datetime.fromtimestamp(t0, dt.timezone.utc).isoformat(),
                "measurementEndTime": dt.datetime.fromtimestamp(t_end, dt.timezone.utc).isoformat(),
                "cluster": {k: cluster.get(k) for k in ("system", "version", "level", "tuning", "faults", "requested",
                                                        "effective", "client", "startedAt", "readySeconds")},
                "fault": fault,
                "faultTimeline": {"events": hook.events, "slowMs": SLOW_MS, "unflushedAtEnd": left,
                                  "perSecond": per_second(audit, read, t0)},
            },
        }
        tmp = result.with_name(result.name + ".tmp")
        result.parent.mkdir(parents=True, exist_ok=True)
        scale.write_atomic(tmp, json.dumps(res, indent=2) + "\n")
        os.replace(tmp, result)
        if keep_cluster:  # the next cycle on this cluster starts without this one's data
            try:
                client.delete_topic(topic)
            except Exception as exc:
                with open(log, "a") as fh:
                    fh.write(f"deleting {topic} after the cycle: {exc}\n")
        record.update(status="ok", result=str(result), fault={k: fault[k] for k in (
            "type", "targets", "strikeAtSeconds", "acknowledged", "lost", "duplicated", "reordered",
            "unacknowledgedPresent", "publishErrors", "unavailableMs", "recoveryMs", "read", "clusterCycle", "leaderBefore",
            "leaderAfter")})
    except (Exception, KeyboardInterrupt) as exc:
        reason = exc.reason if isinstance(exc, CellFailure) else ("interrupted" if isinstance(exc, KeyboardInterrupt)
                                                                  else "error")
        record.update(status="failed", reason=reason, phase=getattr(exc, "phase", None) or phase,
                      error=f"{type(exc).__name__}: {exc}" if not isinstance(exc, CellFailure) else str(exc))
        record.setdefault("logTail", tail(log))
        if isinstance(exc, KeyboardInterrupt):
            _stop_all(hook, client, cl, log)
            record["endedAt"] = now()
            scale.write_atomic(status, json.dumps(record, indent=2) + "\n")
            raise
    _stop_all(hook, client, cl, log, failed=record["status"] != "ok",
              keep=keep_cluster and record["status"] == "ok")
    for s_, h in old.items():
        signal.signal(s_, h)
    record["endedAt"] = now()
    scale.write_atomic(status, json.dumps(record, indent=2) + "\n")
    return record


def _next_cycle(rundir: Path) -> int:
    """The number of this cycle on the cluster in rundir (1: the cluster's first), counted in a file beside it."""
    f = rundir / "fault-cycles"
    try:
        n = int(f.read_text().strip()) + 1
    except (OSError, ValueError):
        n = 1
    f.write_text(f"{n}\n")
    return n


def _stop_all(hook, client, cl, log, failed=False, keep=False) -> None:
    """The hook first (it may be restarting nodes), then the clients, then the cluster (unless `keep`: a cycle that
    ended well leaves it to the next fault run of its key)."""
    if hook is not None:
        hook.stop()
    if client is not None:
        try:
            client.close()
        except Exception:
            pass
    if keep:
        return
    cur = (cl.read() or {}).get("dir")
    try:
        cl.down(log, failed=failed)
    except Exception as exc:
        with open(log, "a") as fh:
            fh.write(f"down after the fault run: {exc}\n")
    if cur:  # `systems down` could not run (e.g. its interpreter broken): stop the nodes from here
        from systems import cluster as sys_cluster
        from systems.proc import read_pid_records

        if any(r.alive() for r in read_pid_records(Path(cur))):
            with open(log, "a") as fh:
                fh.write(f"{cur}: nodes still running after down; stopping them in-process\n")
                try:
                    sys_cluster.down(Path(cur), log=lambda m: fh.write(m + "\n"))
                except Exception as exc:
                    fh.write(f"in-process down failed: {exc}\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workloads.faultrun", description=__doc__.splitlines()[0])
    ap.add_argument("--clusters")
    ap.add_argument("--driver")
    ap.add_argument("--experiments", default=str(plan.EXPERIMENTS))
    ap.add_argument("--testbed")
    ap.add_argument("--scale")
    ap.add_argument("--system")
    ap.add_argument("--level")
    ap.add_argument("--tuning")
    ap.add_argument("--workload")
    ap.add_argument("--fault")
    ap.add_argument("--rep", type=int)
    ap.add_argument("--seed", type=int, default=20201, help="config workloads.seed (when the faults strike)")
    ap.add_argument("--default-tuning", default="tuned")
    ap.add_argument("--in-experiments", default="")
    ap.add_argument("--result")
    ap.add_argument("--status")
    ap.add_argument("--log")
    ap.add_argument("--limits", default="{}")
    ap.add_argument("--inventory")
    ap.add_argument("--keep-cluster", action="store_true",
                    help="leave the cluster running after a cycle that ended well, for the next fault run of its key")
    a = ap.parse_args(argv)
    missing = [k for k in ("clusters", "testbed", "scale", "system", "level", "tuning", "workload", "fault", "rep",
                           "driver", "result", "status", "log") if getattr(a, k) is None]
    if missing:
        ap.error("missing " + ", ".join("--" + m for m in missing))
    if a.fault not in plan.FAULTS or a.system not in plan.FAULTS[a.fault]:
        ap.error(f"--fault: {a.fault!r} is not a fault of {a.system} (known: "
                 f"{', '.join(f for f, s in plan.FAULTS.items() if a.system in s)})")
    exps = tuple(e for e in a.in_experiments.split(",") if e)
    run = plan.Run(a.system, a.level, a.tuning, None, a.workload, None, a.rep, exps, a.default_tuning, a.fault)
    if a.inventory and not hooks.testbed_failed(a.inventory):
        hooks.enter_controller(a.inventory)  # the cycle's clients talk to the hosts themselves
    rec = execute(run, a.testbed, a.scale, Path(a.result), Path(a.status), Path(a.clusters), Path(a.log),
                  Path(a.driver), a.seed, Path(a.experiments), json.loads(a.limits), a.inventory, a.keep_cluster)
    f = rec.get("fault") or {}
    print(f"{rec['run']}: {rec['status']}" + (f" ({rec.get('error', '').splitlines()[0]})" if rec["status"] != "ok"
                                             else f" ({f.get('lost')} lost of {f.get('acknowledged')} acknowledged)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
