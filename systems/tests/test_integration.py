"""Real Kafka, Pulsar and Pravega clusters (3 KRaft nodes; ZooKeeper + 3 bookies + broker; ZooKeeper + 3 bookies +
controller + segment store) at L1 and L4.

Each test runs on the shared cluster of its system and level (systems/tests/sharedcluster.py: `python -m systems up`
before the first test of that cluster, `down` after the last, then no process and no listening port may remain; the
runner's tests use the L1 clusters and Pravega's L4 one too): it checks the effective settings read back, produces and
consumes 10 000 keyed messages with the level's client settings.
At L1 (every acknowledgement waits for two replicas that fsynced) one node is killed -9 in the middle of the
stream -- a Kafka broker, a Pulsar bookie, a Pravega bookie -- and started again a few seconds later while sends go
on; every acknowledged message must be read back (sends that failed while the node was down may be missing; Pravega's
writer retries, so there every event must arrive, in order per key). At L4 every message must arrive in order per
key with no fault; Kafka's and Pulsar's tests then kill a node -9, so `down` must clean up a degraded cluster. A test
that harms a node runs after the other tests of its cluster.
Needs the distributions (`python -m systems prepare kafka|pulsar|pravega`); about 5-7 minutes on a loaded 2-core box,
plus about 2 minutes for the two Pravega cases (113 s at load 13-15).
"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from systems import dist, proc
from systems import durability as dur
from systems.plan import JVM_EXTRA_ENV

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
N_MESSAGES = 10_000
N_KEYS = 50


def _cli(*args, timeout=400, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "systems", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=timeout, env=e)


def _require(system):
    try:
        dist.require_dist(system)
    except Exception as e:  # noqa: BLE001
        if os.environ.get("CI"):  # env/test prepares the distributions first: in CI a missing one is a failure
            pytest.fail(str(e))
        pytest.skip(str(e))


def _listening_not_loopback(pids):
    """Listening TCP sockets of the given processes that are not bound to 127.0.0.1."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    bad = []
    for line in out.splitlines():
        if any(f"pid={p}," in line for p in pids):
            local = line.split()[3]
            if not (local.startswith("127.0.0.1:") or local.startswith("[::ffff:127.0.0.1]:")):
                bad.append(line)
    return bad


def _rocksdb_libraries(pids):
    """The RocksDB JNI libraries the given processes have mapped (paths from /proc/PID/maps)."""
    libs = set()
    for pid in pids:
        try:
            maps = Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            continue
        libs.update(line.split()[-1] for line in maps.splitlines() if "librocksdbjni" in line)
    return libs


def _kill9(cl, name):
    """kill -9 one node and see `status` report the cluster degraded."""
    node = next(n for n in cl.doc["nodes"] if n["name"] == name)
    os.kill(node["pid"], signal.SIGKILL)
    deadline = time.time() + 10
    while proc.proc_start_time(node["pid"]) is not None and time.time() < deadline:
        time.sleep(0.1)
    st = json.loads(_cli("status", "--dir", str(cl.rundir)).stdout)
    assert st["state"] == "degraded"
    assert [x["alive"] for x in st["nodes"] if x["node"] == name] == [False]


def _verify_and_roundtrip(cl, level, roundtrip, node, kill_after=True):
    """`systems verify` passes; then the round trip. At L1 `node` is killed -9 mid-stream and started again, so
    nothing acknowledged may be lost; at another level nothing is harmed during it, and with kill_after `node` is
    killed -9 after it (the shared cluster's `down` must still clean up a degraded cluster)."""
    r = _cli("verify", "--dir", str(cl.rundir))
    assert r.returncode == 0, r.stderr
    if level == "L1":
        roundtrip(cl.doc, mid_stream=lambda: _kill_and_restart(cl.rundir, node))
    else:
        roundtrip(cl.doc)
        if kill_after:
            _kill9(cl, node)


def _levels(system, shared=()):
    """L1 and L4, each on the shared cluster of its (system, level) (systems/tests/sharedcluster.py). A level whose
    test harms a node runs after the other tests of that cluster; one in `shared` does not and may run first."""
    return [pytest.param(lv, marks=pytest.mark.cluster(system, lv, last=lv not in shared), id=lv) for lv in ("L1", "L4")]


def _kill_and_restart(rundir, node, down_seconds=3.0):
    """kill -9 one node (its process group) mid-stream, keep it down, start it again as `up` did."""
    from systems import cluster as scluster
    assert scluster.kill_nodes(rundir, [node]) == [node]
    time.sleep(down_seconds)
    assert scluster.restart_nodes(rundir, [node], log=lambda *a: None) == [node]


def _check_acknowledged_read_back(acked, received):
    """Every acknowledged (key, seq) was read back; nothing was read that was never sent."""
    got = set(received)
    missing = sorted(set(acked) - got)
    assert not missing, f"{len(missing)} of {len(acked)} acknowledged messages not read back, e.g. {missing[:5]}"
    sent = {(f"k{k}", seq) for k in range(N_KEYS) for seq in range(N_MESSAGES // N_KEYS)}
    assert got <= sent, f"read back what was never sent: {sorted(got - sent)[:5]}"
    # the fault must not have turned the test into one of a few messages
    assert len(acked) >= N_MESSAGES // 2, f"only {len(acked)} of {N_MESSAGES} sends acknowledged"


def _check_order(received):
    per_key = {}
    for key, seq in received:
        per_key.setdefault(key, []).append(seq)
    assert sum(len(v) for v in per_key.values()) == N_MESSAGES
    for key, seqs in per_key.items():
        assert seqs == list(range(len(seqs))), f"key {key}: out of order or missing"
    assert len(per_key) == N_KEYS


# --------------------------------------------------------------------------------------------- Kafka
def _kafka_roundtrip(doc, mid_stream=None):
    """10 000 keyed messages into a 6-partition topic and back. With mid_stream (a function), it is called after the
    first half was handed to the producer (in flight, not yet acknowledged); then only acknowledged messages must
    come back."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    client = dur.client_settings("kafka", doc["level"], doc["tuning"])
    assert doc["client"] == client
    bs = doc["kafka"]["bootstrapServers"]
    topic = "t-roundtrip"
    admin = AdminClient({"bootstrap.servers": bs, "log_level": 2})
    admin.create_topics([NewTopic(topic, num_partitions=6, replication_factor=client["replicationFactor"],
                                  config=client["topicConfig"])])[topic].result(timeout=60)
    deadline = time.time() + 30  # wait until every broker knows the new topic
    while time.time() < deadline and topic not in admin.list_topics(timeout=10).topics:
        time.sleep(0.2)
    # auto topic creation is off: asking for an unknown topic's metadata does not create it
    admin.list_topics(topic="t-unknown", timeout=10)
    time.sleep(1)
    assert "t-unknown" not in admin.list_topics(timeout=10).topics
    p = Producer({"bootstrap.servers": bs, **client["producerConfig"], "log_level": 2})
    errors, acked = [], []

    def delivered(err, msg):
        if err:
            errors.append(err)
        else:
            acked.append((msg.key().decode(), int(msg.value())))
    counters = [0] * N_KEYS
    for i in range(N_MESSAGES):
        if mid_stream and i == N_MESSAGES // 2:
            p.poll(0)
            mid_stream()
        k = i % N_KEYS
        p.produce(topic, key=f"k{k}", value=str(counters[k]).encode(), on_delivery=delivered)
        counters[k] += 1
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(120) == 0
    if not mid_stream:
        assert errors == []
    c = Consumer({"bootstrap.servers": bs, "group.id": "g-roundtrip", **client["consumerConfig"], "log_level": 2})
    c.subscribe([topic])
    got = []
    deadline = time.time() + 90
    while len(set(got)) < len(acked) and time.time() < deadline:
        for m in c.consume(num_messages=1000, timeout=1.0):
            assert m.error() is None, m.error()
            got.append((m.key().decode(), int(m.value())))
    c.close()
    if mid_stream:
        _check_acknowledged_read_back(acked, got)
    else:
        _check_order(got)


@pytest.mark.timeout(400)
@pytest.mark.parametrize("level", _levels("kafka"))
def test_kafka_cluster(shared_cluster, level):
    cl = shared_cluster
    doc = cl.doc
    assert doc["system"] == "kafka" and doc["level"] == level and len(doc["nodes"]) == 3
    assert doc["kafka"]["bootstrapServers"].count("127.0.0.1:") == 3
    want = dur.server_settings("kafka", level)
    for b in doc["effective"]["brokers"].values():
        assert b["auto.create.topics.enable"] == "false"
        assert b["log.flush.interval.messages"] == str(want["broker"]["log.flush.interval.messages"])
    assert doc["effective"]["topic"]["config"]["flush.messages"] == ("1" if level == "L1" else "10000")
    assert doc["effective"]["topic"]["replicationFactor"] == 3
    assert doc["client"]["producerConfig"]["acks"] == ("all" if level == "L1" else "1")
    assert doc["readySeconds"] > 0 and isinstance(doc["pageCacheDropped"]["dropped"], bool)
    assert _listening_not_loopback(cl.pids()) == []
    _verify_and_roundtrip(cl, level, _kafka_roundtrip, "kafka-2")  # a broker crashes


# --------------------------------------------------------------------------------------------- Pulsar
def _pulsar_roundtrip(doc, mid_stream=None):
    """As _kafka_roundtrip, into a 3-partition topic, with key-based batching."""
    import pulsar

    client_s = dur.client_settings("pulsar", doc["level"], doc["tuning"])
    assert doc["client"] == client_s
    http = doc["pulsar"]["httpUrl"]
    topic = "persistent://public/default/t-roundtrip"
    req = urllib.request.Request(f"{http}/admin/v2/persistent/public/default/t-roundtrip/partitions",
                                 data=b"3", method="PUT", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status in (200, 204)
    client = pulsar.Client(doc["pulsar"]["serviceUrl"], logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
                           operation_timeout_seconds=60)
    try:
        # auto topic creation is off: a producer on an unknown topic is refused
        with pytest.raises(Exception):
            client.create_producer("persistent://public/default/t-unknown", send_timeout_millis=5000)
        cons = client.subscribe(topic, "s-roundtrip", initial_position=pulsar.InitialPosition.Earliest,
                                receiver_queue_size=client_s["consumer"]["receiverQueueSize"])
        ps = client_s["producer"]
        prod = client.create_producer(topic, batching_enabled=ps["batchingEnabled"],
                                      batching_max_publish_delay_ms=ps["batchingMaxPublishDelayMs"],
                                      batching_max_allowed_size_in_bytes=ps["batchingMaxBytes"],
                                      block_if_queue_full=True, max_pending_messages=ps["pendingQueueSize"],
                                      batching_type=pulsar.BatchingType.KeyBased)
        errors, acked = [], []

        def delivered(res, _mid, key_seq):
            (acked if res == pulsar.Result.Ok else errors).append(key_seq if res == pulsar.Result.Ok else res)
        counters = [0] * N_KEYS
        for i in range(N_MESSAGES):
            if mid_stream and i == N_MESSAGES // 2:
                mid_stream()
            k = i % N_KEYS
            prod.send_async(str(counters[k]).encode(), partition_key=f"k{k}",
                            callback=lambda res, mid, ks=(f"k{k}", counters[k]): delivered(res, mid, ks))
            counters[k] += 1
        prod.flush()
        if not mid_stream:
            assert errors == []
        got = []
        deadline = time.time() + 90
        while len(set(got)) < len(acked) and time.time() < deadline:
            try:
                m = cons.receive(timeout_millis=1000)
            except pulsar.Timeout:
                continue
            got.append((m.partition_key(), int(m.data())))
            cons.acknowledge(m)
        if mid_stream:
            _check_acknowledged_read_back(acked, got)
        else:
            _check_order(got)
    finally:
        client.close()


@pytest.mark.timeout(500)
@pytest.mark.parametrize("level", _levels("pulsar"))
def test_pulsar_cluster(shared_cluster, level):
    cl = shared_cluster
    doc = cl.doc
    roles = sorted(n["role"] for n in doc["nodes"])
    assert roles == ["bookie", "bookie", "bookie", "broker", "metadata-store"]
    want = dur.server_settings("pulsar", level)
    eff = doc["effective"]
    ack = 2 if level == "L1" else 1
    assert eff["namespacePersistence"] == {"namespace": "public/default", "ensemble": 3, "writeQuorum": 3,
                                           "ackQuorum": ack}
    assert eff["ledger"]["ackQuorum"] == ack and eff["ledger"]["ensemble"] == 3
    assert eff["broker"]["allowAutoTopicCreation"] == "false"
    assert len(eff["registeredBookies"]) == 3
    for b in eff["bookies"].values():
        assert b["journalSyncData"] == str(want["bookie"]["journalSyncData"]).lower()
        assert b["journalWriteData"] == "true"
    assert _listening_not_loopback(cl.pids()) == []
    # the RocksDB library each bookie extracts lies in the run directory, not in /tmp where a killed JVM left it
    libs = _rocksdb_libraries(cl.pids())
    assert libs and all(lib.startswith(os.path.realpath(cl.rundir) + "/") for lib in libs), libs
    _verify_and_roundtrip(cl, level, _pulsar_roundtrip, "bookie-2")  # a bookie crashes


# --------------------------------------------------------------------------------------------- Pravega
def _pravega_roundtrip(doc, mid_stream=None):
    """10 000 events with 50 routing keys into a 3-segment stream and back, through the Pravega Java client
    (systems/pravega/check/PravegaRoundTrip.java run as a source file on the distribution's classpath). With
    mid_stream, it is called once half of the events are handed to the writer; the writer retries until each event
    is durable, so every event must still arrive, in order per key."""
    assert doc["client"] == dur.client_settings("pravega", doc["level"], doc["tuning"])
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    check = REPO / "systems" / "pravega" / "check" / "PravegaRoundTrip.java"
    cmd = [java, "-Xmx256m", "-Dlogback.configurationFile=" + str(Path(doc["rundir"]) / "nodes" / "logback.xml"),
           "-cp", f"{doc['distribution']}/libs/*", str(check), doc["pravega"]["controllerUri"],
           "roundtrip", "t-roundtrip", "3", str(N_MESSAGES), str(N_KEYS)] + (["pause-at-half"] if mid_stream else [])
    errlog = Path(doc["rundir"]) / "roundtrip.stderr"
    with open(errlog, "w") as errfh:
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errfh, text=True)
    timer = threading.Timer(360, p.kill)  # a hung client fails the test instead of hanging it
    timer.start()
    try:
        head = []
        if mid_stream:
            while True:  # the client's own log lines share stdout with the events
                line = p.stdout.readline()
                head.append(line)
                if not line or line.strip() == "half":
                    break
            assert head[-1].strip() == "half", "".join(head)[-2000:] + errlog.read_text()[-2000:]
            mid_stream()
            p.stdin.write("go\n")
        p.stdin.close()
        out = p.stdout.read()  # the same buffered reader as above: nothing read ahead is lost
        p.wait()
    finally:
        timer.cancel()
        if p.poll() is None:
            p.kill()
            p.wait()
    err = errlog.read_text()
    assert p.returncode == 0, err[-3000:]
    lines = ("".join(head) + out).splitlines()
    assert f"done {N_MESSAGES}" in lines, out[-2000:]
    events = [line for line in lines if re.fullmatch(r"k\d+\t\d+", line)]
    _check_order([(k, int(seq)) for k, seq in (line.split("\t") for line in events)])


@pytest.mark.timeout(400)
@pytest.mark.parametrize("level", _levels("pravega", shared=("L4",)))
def test_pravega_cluster(shared_cluster, level):
    cl = shared_cluster
    doc = cl.doc
    roles = sorted(n["role"] for n in doc["nodes"])
    assert roles == ["bookie", "bookie", "bookie", "controller", "metadata-store", "segmentstore"]
    assert doc["pravega"]["controllerUri"].startswith("tcp://127.0.0.1:")
    assert doc["pravega"]["restUri"].startswith("http://127.0.0.1:")
    eff = doc["effective"]
    ack = 2 if level == "L1" else 1
    # the quorums of the segment store's own ledgers (its durable log), read from BookKeeper's metadata
    assert eff["ledgers"] and all(q == {"ensemble": 3, "writeQuorum": 3, "ackQuorum": ack}
                                  for q in eff["ledgers"].values()), eff["ledgers"]
    assert eff["segmentstore"]["bookkeeper.ack.quorum.size"] == str(ack)
    assert eff["segmentstore"]["pravegaservice.dataLog.impl.name"] == "BOOKKEEPER"
    assert len(eff["registeredBookies"]) == 3
    for b in eff["bookies"].values():
        assert b["journalSyncData"] == ("true" if level == "L1" else "false")
        assert b["journalWriteData"] == "true"
    assert _listening_not_loopback(cl.pids()) == []
    # a bookie of the segment store's log crashes at L1; at L4 nothing is killed
    _verify_and_roundtrip(cl, level, _pravega_roundtrip, "bookie-2", kill_after=False)
    # a RocksDB library a JVM extracted lies in the run directory (none of Pravega's loads one by this point on
    # this version; Pulsar's bookies do, and their test requires it)
    libs = _rocksdb_libraries(cl.pids())
    assert all(lib.startswith(os.path.realpath(cl.rundir) + "/") for lib in libs), libs


# --------------------------------------------------------------------------------------------- failures
@pytest.mark.timeout(200)
def test_startup_timeout_fails_with_log_and_leaves_nothing(tmp_path):
    _require("kafka")
    cfg = tmp_path / "config.yaml"
    cfg.write_text("systems:\n  startup_timeout_seconds: 5\n  drop_caches: false\n")
    rundir = tmp_path / "run"
    rundir.mkdir()
    # a stale "node" left by a crashed earlier run in the same RUNDIR: `up` must stop it first
    stale, rec = proc.start_process(rundir, "kafka-9", ["sleep", "300"], cwd=rundir, log=rundir / "stale.log",
                                    env=dict(os.environ))
    # every JVM of the cluster waits at its start for a file nobody removes (HotSpot's PauseAtStartup: vm.paused.<pid>
    # in its working directory), so the start-up cannot end within any timeout: with the class-data archives a
    # Kafka cluster was once ready and verified in 5.6 s, past this test's 5-s timeout only by its verify
    pause = "-XX:+UnlockDiagnosticVMOptions -XX:+PauseAtStartup"
    extra = f"{os.environ.get(JVM_EXTRA_ENV, '')} {pause}".strip()
    try:
        r = _cli("--config", str(cfg), "up", "kafka", "--level", "L2", "--dir", str(rundir),
                 env={JVM_EXTRA_ENV: extra})
    finally:  # a cluster that started after all (CI of 8c29dd8: this test failed and left three brokers running)
        if (rundir / "cluster.json").exists():
            _cli("down", "--dir", str(rundir))
    assert "stale cluster found (kafka-9)" in r.stderr, r.stderr
    assert stale.wait(5) is not None and not rec.alive()
    assert r.returncode == 2, r.stderr
    assert "start-up timeout" in r.stderr or "not ready" in r.stderr, r.stderr
    assert "last lines of" in r.stderr, r.stderr
    assert not (rundir / "cluster.json").exists()
    assert not [x for x in proc.read_pid_records(rundir) if x.alive()]
    out = subprocess.run(["pgrep", "-f", str(rundir)], capture_output=True, text=True).stdout.split()
    assert out == [], out
