"""The fault cycle's client (issue 15; issue 30: on a client host): keyed traffic at a fixed rate with an audit of
every acknowledged send, topic administration, the leader's lookup and the verifier that reads the topic back, for
Kafka (confluent-kafka), Pulsar (pulsar-client and its HTTP admin API) and Pravega (the Rust client's bindings).

Two places run it:
- this machine: workloads/faultrun.py makes a client of this module in its own process (`make_client`);
- an inventory's client host: `python3 -m sbhost.faultclient` there (prepare ships this file with proc.py and
  ready.py, and unpacks the three client libraries' wheels from uv.lock into <workDir>/lib/py), driven over ssh by
  `Remote` below: the controller of a real fleet has no route to the brokers' private addresses, so everything
  that talks to the cluster runs on a host that has one. The traffic loop runs on the host too; the controller
  gets its events (the strike's moment) and sends it the fault hook's news (when the nodes were back), then reads
  the audit and the read-back indices, and judges them as it does locally (faultrun.verdict).

The protocol is one JSON object a line. To the agent: {"op": NAME, ...}; from it: {"ok": value} or
{"fail": {"reason", "message", "phase"}} (a CycleFailure), {"error": "Type: text"} (anything else), and while a
traffic op runs {"event": "strike"}. Standard library only, but for the client library of the system in use, with
relative imports (systems.* here, sbhost.* on a host).
"""
from __future__ import annotations

import asyncio
import bisect
import json
import os
import queue
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from pathlib import Path

from .ready import http  # sbhost.ready on a host: the same file

SLOW_MS = 1000.0       # a send acknowledged later than this counts as unavailable
SETTLE_SECONDS = 3.0   # traffic past the first good send after the restart
SETTLE_MAX_SECONDS = 60.0  # and on, at most this long, until every key had a good send after the restart
N_KEYS = 64
VERIFY_SUBSCRIPTION = "fault-verify"  # Pulsar: holds the topic's data until the verifier has read it
FAULT_SCOPE = "streambench-faults"   # Pravega: the scope of the fault cycles' streams
PRAVEGA_PROBE = "serving-probe"      # Pravega: the stream wait_serving writes one event to
PRAVEGA_QUIET_SECONDS = 30.0         # Pravega: the verifier's end when a key's last acknowledged message never comes
SERVING_RETRY_SECONDS = 120  # how long set-up waits for bookies that are registering again (PulsarClient.create_topic)


class CycleFailure(RuntimeError):
    """A cycle that cannot go on: `reason` is timeout | disk | cluster | testbed | error, `phase` where it was
    (workloads.run.CellFailure is one)."""

    def __init__(self, reason: str, message: str, phase: str | None = None):
        super().__init__(message)
        self.reason, self.phase = reason, phase


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



def _props(text: str | None) -> dict[str, str]:
    out = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


class _Local:
    """The cycle's traffic from this process: the producer, the traffic loop and its flush (every client here)."""

    KEYS = N_KEYS
    sender = None

    def run_traffic(self, topic: str, rate: int, seconds: float, size: int, audit: Audit, at: float, strike,
                    back) -> float:
        """traffic() through a new producer; back() -> (give_up, restarted): see rules()."""
        self.sender = self.producer(topic)
        return traffic(self.sender, topic, rate, seconds, size, audit, at, strike, *rules(audit, back))

    def flush(self, seconds: float) -> int:
        return self.sender.flush(seconds) if self.sender is not None else 0


class KafkaClient(_Local):
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
        raise CycleFailure("cluster", f"brokers {sorted(want - got)} not registered {seconds:.0f} s after the last "
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
        raise CycleFailure("cluster", f"topic {topic}: no leader for every partition after 60 s", "set-up")

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
                            raise CycleFailure("timeout", f"verifier: no high watermark of {topic}-{p}", "verify")
                        time.sleep(0.5)
            c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
            per: dict[int, list[int]] = {p: [] for p in range(partitions)}
            pos = {p: 0 for p in range(partitions)}
            while any(pos[p] < high[p] for p in range(partitions)):
                if time.monotonic() > deadline:
                    short = {p: (pos[p], high[p]) for p in range(partitions) if pos[p] < high[p]}
                    raise CycleFailure("timeout", f"verifier: {topic} not read to its end in time: {short}", "verify")
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


class PulsarClient(_Local):
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
        code, text = http("PUT", f"{self.http}/admin/v2/persistent/{self.namespace}/{topic}/partitions", partitions)
        if code not in (200, 204):
            raise CycleFailure("cluster", f"creating topic {topic}: {code} {text[:200]}", "set-up")
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
                raise CycleFailure("cluster", f"creating subscription {VERIFY_SUBSCRIPTION} on {topic}: {code} "
                                  f"{text[:200]}", "set-up")
            time.sleep(2)

    def wait_serving(self, seconds: float) -> None:
        """The broker's health check passes: it writes and reads a heartbeat topic through the bookies."""
        deadline = time.monotonic() + seconds
        code, text = 0, ""
        while time.monotonic() < deadline:
            code, text = http("GET", f"{self.http}/admin/v2/brokers/health", timeout=30)
            if code == 200:
                return
            time.sleep(1)
        raise CycleFailure("cluster", f"broker health check failing {seconds:.0f} s after the last cycle: {code} "
                          f"{text[:200]}", "set-up")

    def delete_topic(self, topic: str) -> None:
        code, text = http("DELETE", f"{self.http}/admin/v2/persistent/{self.namespace}/{topic}/partitions?force=true",
                          timeout=60)
        if code not in (200, 204):
            raise RuntimeError(f"deleting {topic}: {code} {text[:200]}")

    def leader(self, topic: str) -> str:
        code, text = http("GET", f"{self.http}/lookup/v2/topic/persistent/{self.namespace}/{topic}-partition-0")
        url = urllib.parse.urlsplit(json.loads(text).get("brokerUrl", "") if code == 200 else "")
        brokers = [n for n in self.nodes if n["role"] == "broker"]
        # on hosts every broker listens on the same port, each at its host's address: match both
        for n in brokers:
            if url.port == n["ports"]["service"] and url.hostname in (n.get("host") or "127.0.0.1", "localhost"):
                return n["name"]
        if len(brokers) == 1:
            return brokers[0]["name"]  # one broker owns every bundle (whatever name it advertises)
        raise CycleFailure("cluster", f"topic {topic}: the owner's URL {url.geturl()!r} names none of the brokers "
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
        """Every partition read from its start to the broker's last message, the partitions side by side (a thread
        each: a reader waits on the broker most of the time, and one after the other they took 10-11 s of a local
        power-loss cycle); the indices partition by partition, in each partition's order. The first failure ends
        the others' reading and is raised."""
        per: list[list[int]] = [[] for _ in range(partitions)]
        failed: list[BaseException] = []
        stop = threading.Event()

        def one(p: int) -> None:
            try:
                self._read_partition(self.topic(f"{topic}-partition-{p}"), deadline, per[p], stop)
            except BaseException as exc:  # noqa: BLE001 (handed to the caller's thread)
                failed.append(exc)
                stop.set()
        threads = [threading.Thread(target=one, args=(p,), daemon=True, name=f"verify-{p}") for p in range(partitions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if failed:
            raise failed[0]
        return [i for p in range(partitions) for i in per[p]]

    def _read_partition(self, t: str, deadline: float, out: list[int], stop: threading.Event) -> None:
        while True:
            try:
                r = self.client.create_reader(t, self.pulsar.MessageId.earliest)
                break
            except Exception as exc:
                if time.monotonic() > deadline:
                    raise CycleFailure("timeout", f"verifier: no reader on {t}: {exc}", "verify") from None
                if stop.is_set():
                    return
                time.sleep(1)
        try:
            while not stop.is_set():
                if time.monotonic() > deadline:
                    raise CycleFailure("timeout", f"verifier: {t} not read to its end in time", "verify")
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


class PravegaClient(_Local):
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
            raise CycleFailure("error", "pravega: the Python client `pravega` is not installed (its wheels are for "
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
        raise CycleFailure("cluster", f"pravega: no acknowledged write {seconds:.0f} s after the last cycle: {err}",
                          "set-up")

    def create_topic(self, topic: str, partitions: int) -> None:
        try:
            self.mgr.create_scope(self.scope)
            if not self.mgr.create_stream(self.scope, topic, partitions):
                raise CycleFailure("cluster", f"pravega: stream {self.scope}/{topic} exists already", "set-up")
        except CycleFailure:
            raise
        except Exception as exc:
            raise CycleFailure("cluster", f"pravega: creating stream {self.scope}/{topic}: {exc}", "set-up") from None

    def leader(self, topic: str) -> str:
        stores = [n["name"] for n in self.nodes if n["role"] == "segmentstore"]
        if len(stores) != 1:
            raise CycleFailure("cluster", f"pravega: {len(stores)} segment stores; the owner of a segment is looked up "
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
                    raise CycleFailure("timeout", f"verifier: stream {topic} not sealed: {exc}", "verify") from None
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
                    raise CycleFailure("timeout", f"verifier: {topic} not read to its end in time ({len(short)} keys "
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


def rules(audit: Audit, back) -> tuple:
    """traffic()'s recovered() and settled() from back() -> (give_up, restarted): give_up when there is nothing to
    wait for (the hook failed, or ended with no restart), restarted the epoch the struck nodes were back (None: not
    yet). Recovered: a send made after the restart was acknowledged; settled: every key had a prompt one since."""
    def recovered() -> bool:
        give_up, restarted = back()
        if give_up:
            return True
        if restarted is None:
            return False
        j0 = bisect.bisect_left(audit.sent, restarted, 0, audit.count)
        return audit.state.find(Audit.OK, j0, audit.count) >= 0

    def settled() -> bool:
        restarted = back()[1]
        return restarted is None or min(audit.last_good) >= restarted
    return recovered, settled


# ------------------------------------------------------------------------------------------ the agent on a host
def _audit_doc(a: Audit) -> dict:
    n = a.count
    return {"keys": a.keys, "count": n, "sent": [round(x, 6) for x in a.sent[:n]],
            "done": [round(x, 6) for x in a.done[:n]], "state": a.state[:n].decode("latin-1"),
            "lastGood": a.last_good}


def _audit_fill(a: Audit, doc: dict) -> None:
    n = doc["count"]
    if n > len(a.sent) or doc["keys"] != a.keys:
        raise CycleFailure("error", f"the agent's audit ({n} sends, {doc['keys']} keys) does not fit the "
                           f"controller's ({len(a.sent)}, {a.keys})", "verify")
    a.sent[:n], a.done[:n] = doc["sent"], doc["done"]
    a.state[:n] = doc["state"].encode("latin-1")
    a.count, a.last_good = n, list(doc["lastGood"])


def agent(inp=sys.stdin, out=None) -> int:
    """Serve the protocol above until `close` or the end of the input. Native client libraries may write to fd 1:
    the replies go to a private copy of it, and fd 1 itself goes to stderr."""
    if out is None:
        out = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)
    lock = threading.Lock()

    def say(**obj) -> None:
        with lock:
            out.write(json.dumps(obj) + "\n")
            out.flush()
    ops: queue.Queue = queue.Queue()
    news = {"giveUp": False, "restarted": None}  # the hook's, as the controller last sent them
    closing = threading.Event()

    def read() -> None:
        for line in inp:
            line = line.strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                say(error=f"ValueError: not a JSON line: {line[:80]}")
                continue
            if msg.get("op") == "back":
                news.update(giveUp=bool(msg.get("giveUp")), restarted=msg.get("restarted"))
            else:
                ops.put(msg)
        if not closing.is_set():  # the controller or its ssh is gone: so is this process, whatever it was doing
            os._exit(3)
    threading.Thread(target=read, daemon=True).start()
    client = audit = None
    while True:
        msg = ops.get()
        op = msg.get("op")
        try:
            if op == "close":
                closing.set()
                if client is not None:
                    client.close()
                say(ok=None)
                return 0
            if op == "init":
                client = make_client(msg["system"], msg["cluster"], msg.get("driver") or {}, Path(msg["log"]))
                say(ok={"keys": client.KEYS, "pid": os.getpid()})
            elif client is None:
                say(error=f"RuntimeError: {op} before init")
            elif op == "wait_serving":
                say(ok=client.wait_serving(float(msg["seconds"])))
            elif op == "create_topic":
                say(ok=client.create_topic(msg["topic"], int(msg["partitions"])))
            elif op == "leader":
                say(ok=client.leader(msg["topic"]))
            elif op == "delete_topic":
                say(ok=client.delete_topic(msg["topic"]))
            elif op == "traffic":
                audit = Audit(int(msg["n"]), client.KEYS)
                t0 = client.run_traffic(msg["topic"], int(msg["rate"]), float(msg["seconds"]), int(msg["size"]),
                                        audit, float(msg["at"]), lambda: say(event="strike"),
                                        lambda: (news["giveUp"], news["restarted"]))
                say(ok={"t0": t0})
            elif op == "flush":
                say(ok=client.flush(float(msg["seconds"])))
            elif op == "read_back":
                read_ = client.read_back(msg["topic"], int(msg["partitions"]), time.monotonic() + float(msg["seconds"]),
                                         audit)
                say(ok={"read": read_, "verifyEnd": getattr(client, "verify_end", None)})
            elif op == "audit":
                say(ok=_audit_doc(audit) if audit is not None else None)
            else:
                say(error=f"ValueError: unknown op {op!r}")
        except CycleFailure as exc:
            say(fail={"reason": exc.reason, "message": str(exc), "phase": exc.phase})
        except Exception as exc:
            say(error=f"{type(exc).__name__}: {exc}")


class Remote:
    """The controller's side of an agent: the same methods as a local client, each a request to the agent that
    `cmd` starts (ssh to a client host running `python3 -m sbhost.faultclient`). `host` names it in errors; the
    agent's stderr goes to `log`. An agent that ends (its host or ssh gone) fails the call in one line naming the
    host, with the end of its stderr."""

    def __init__(self, cmd: list[str], host: str, log: Path, system: str, cluster: dict, driver: dict,
                 client_log: str, timeout: float = 120):
        self.host, self.log = host, Path(log)
        self._err = open(self.log, "a")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, text=True,
                                     bufsize=1, start_new_session=True)
        self._replies: queue.Queue = queue.Queue()
        self.on_strike = None
        self.verify_end = None
        self._busy = False  # a call waits for its answer (an interrupt came in the middle of it)
        threading.Thread(target=self._read, daemon=True).start()
        try:
            got = self._call("init", timeout, system=system, cluster=cluster, driver=driver, log=client_log)
        except BaseException:
            self._stop()
            raise
        self.KEYS = int(got["keys"])

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # not the protocol's (the agent keeps fd 1 for it; an ssh banner, say)
            if msg.get("event") == "strike":
                if self.on_strike is not None:
                    self.on_strike()
            else:
                self._replies.put(msg)
        self._replies.put(None)

    def _send(self, **obj) -> None:
        try:
            self.proc.stdin.write(json.dumps(obj) + "\n")
            self.proc.stdin.flush()
        except (OSError, ValueError):
            pass  # the agent is gone: the reply's wait says so

    def _gone(self, what: str) -> CycleFailure:
        # its stdout closes a moment before it is reaped: wait for the exit code rather than print "exit None"
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            text = []
        last = text[-1][:300] if text else "no output"
        return CycleFailure("testbed", f"host {self.host}: the fault client ended during {what} "
                            f"(exit {code}): {last}", None)

    def _wait(self, op: str, timeout: float | None, tick=None):
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            if tick is not None:
                tick()
            try:
                msg = self._replies.get(timeout=0.2)
            except queue.Empty:
                if end is not None and time.monotonic() > end:
                    raise CycleFailure("timeout", f"host {self.host}: the fault client did not answer {op} within "
                                       f"{timeout:.0f} s", None) from None
                continue
            if msg is None:
                self._replies.put(None)  # every later call fails the same way
                raise self._gone(op)
            if "fail" in msg:
                f = msg["fail"]
                raise CycleFailure(f["reason"], f["message"], f.get("phase"))
            if "error" in msg:
                raise CycleFailure("error", f"host {self.host}: {op}: {msg['error']}", None)
            return msg.get("ok")

    def _call(self, op: str, timeout: float | None, tick=None, **kw):
        self._busy = True
        self._send(op=op, **kw)
        got = self._wait(op, timeout, tick)
        self._busy = False
        return got

    def wait_serving(self, seconds: float) -> None:
        self._call("wait_serving", seconds + 60, seconds=seconds)

    def create_topic(self, topic: str, partitions: int) -> None:
        self._call("create_topic", SERVING_RETRY_SECONDS + 180, topic=topic, partitions=partitions)

    def leader(self, topic: str) -> str:
        return self._call("leader", 120, topic=topic)

    def delete_topic(self, topic: str) -> None:
        self._call("delete_topic", 120, topic=topic)

    def run_traffic(self, topic: str, rate: int, seconds: float, size: int, audit: Audit, at: float, strike,
                    back) -> float:
        """The loop runs on the host: its strike event calls strike() here; back() is sent to it as it changes.
        The audit stays empty until read_back fills it from the host's."""
        self.on_strike = strike
        last = [None]

        def tick() -> None:
            now = back()
            if now != last[0]:
                last[0] = now
                self._send(op="back", giveUp=now[0], restarted=now[1])
        bound = len(audit.sent) / max(1, rate) + SETTLE_MAX_SECONDS + 120
        got = self._call("traffic", bound, tick, topic=topic, rate=rate, seconds=seconds, size=size, at=at,
                         n=len(audit.sent))
        return float(got["t0"])

    def flush(self, seconds: float) -> int:
        return int(self._call("flush", seconds + 30, seconds=seconds))

    def read_back(self, topic: str, partitions: int, deadline: float, audit: Audit | None = None) -> list[int]:
        seconds = max(1.0, deadline - time.monotonic())
        got = self._call("read_back", seconds + PRAVEGA_QUIET_SECONDS + 60, topic=topic, partitions=partitions,
                         seconds=seconds)
        self.verify_end = got.get("verifyEnd")
        if audit is not None:
            doc = self._call("audit", 120)
            if doc is not None:
                _audit_fill(audit, doc)
        return list(got["read"])

    def close(self) -> None:
        """`close` to the agent (it closes its client and ends) unless a call was cut off in the middle (the agent
        is busy with it: the end of its input ends it at once), then the ssh process: TERM, KILL after 5 s."""
        if self.proc.poll() is None and not self._busy:
            try:
                self._call("close", 15)
            except CycleFailure:
                pass
        self._stop()

    def _stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        if not self._err.closed:
            self._err.close()

if __name__ == "__main__":
    sys.exit(agent())
