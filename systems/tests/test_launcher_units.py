"""Pure logic of the launcher: config rendering, config loading, ports, pid files, stale detection, CLI errors."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from systems import cluster, kafka, proc, pulsar
from systems import durability as dur
from systems.util import SystemsError, load_config, versions

REPO = Path(__file__).resolve().parents[2]


# --- config rendering
def test_kafka_server_properties_three_voters_loopback_and_level():
    ports = [{"client": 1001, "controller": 2001}, {"client": 1002, "controller": 2002},
             {"client": 1003, "controller": 2003}]
    ss = dur.server_settings("kafka", "L1")
    props = kafka.server_properties(2, ports, Path("/d/kafka-2"), ss["broker"])
    assert props["node.id"] == 2
    assert props["controller.quorum.voters"] == "1@127.0.0.1:2001,2@127.0.0.1:2002,3@127.0.0.1:2003"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:1002,CONTROLLER://127.0.0.1:2002"
    assert props["auto.create.topics.enable"] is False
    assert props["log.flush.interval.messages"] == 1 and props["min.insync.replicas"] == 2
    text = kafka.render_properties(props)
    assert "auto.create.topics.enable=false\n" in text and "log.dirs=/d/kafka-2\n" in text
    assert kafka.expected_broker(ss["broker"])["auto.create.topics.enable"] == "false"


def test_kafka_cluster_id_format():
    ids = {kafka.random_cluster_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)


def test_pulsar_render_conf_replaces_uncomments_and_appends():
    tmpl = "# header\nbookiePort=3181\n#httpServerHost=0.0.0.0\n# prose with key=value inside\njournalSyncData=true\n" \
           "journalSyncData=false\nother=1\n"
    out = pulsar.render_conf(tmpl, {"bookiePort": 5555, "httpServerHost": "127.0.0.1", "journalSyncData": False,
                                    "journalPageCacheFlushIntervalMSec": 1000, "zkServers": None})
    conf = pulsar.parse_conf(out)
    assert conf == {"bookiePort": "5555", "httpServerHost": "127.0.0.1", "journalSyncData": "false",
                    "other": "1", "journalPageCacheFlushIntervalMSec": "1000", "zkServers": ""}
    assert out.count("journalSyncData=") == 1
    assert "# prose with key=value inside" in out


def test_pulsar_render_of_shipped_confs_sets_every_key():
    d = REPO / ".cache" / "dist" / f"pulsar-{versions()['pulsar']}" / "conf"
    if not d.is_dir():
        if os.environ.get("CI"):  # env/test prepares the distributions first
            pytest.fail(f"pulsar distribution not prepared at {d}")
        pytest.skip("pulsar distribution not prepared")
    ss = dur.server_settings("pulsar", "L2-bypass", "tuned")
    over = {"bookiePort": 1, "httpServerEnabled": True, "httpServerHost": "127.0.0.1", **ss["bookie"]}
    conf = pulsar.parse_conf(pulsar.render_conf((d / "bookkeeper.conf").read_text(), over))
    for k, v in over.items():
        assert conf[k] == (str(v).lower() if isinstance(v, bool) else str(v)), k
    over = {"allowAutoTopicCreation": False, "bindAddress": "127.0.0.1", **ss["broker"]}
    conf = pulsar.parse_conf(pulsar.render_conf((d / "broker.conf").read_text(), over))
    for k, v in over.items():
        assert conf[k] == (str(v).lower() if isinstance(v, bool) else str(v)), k


def test_ledger_quorums_parse_metadata_string():
    meta = "LedgerMetadata{formatVersion=3, ensembleSize=3, writeQuorumSize=3, ackQuorumSize=2, state=OPEN}"
    assert pulsar._ledger_quorums(meta) == {"ensemble": 3, "writeQuorum": 3, "ackQuorum": 2}


# --- config file
def test_config_defaults_and_errors(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("systems:\n  kafka: {heap: 256m}\n")
    cfg = load_config(f)
    assert cfg["kafka"]["heap"] == "256m" and cfg["pulsar"]["bookie_direct"] == "256m"
    assert cfg["startup_timeout_seconds"] == 180 and cfg["drop_caches"] is True
    f.write_text("systems:\n  kafka: {heep: 256m}\n")
    with pytest.raises(SystemsError, match=r"c.yaml: systems.kafka: Additional properties.*'heep'"):
        load_config(f)
    f.write_text("systems:\n  pulsar: {broker_heap: lots}\n")
    with pytest.raises(SystemsError, match=r"systems.pulsar.broker_heap"):
        load_config(f)


def test_versions_come_from_root_pom():
    v = versions()
    assert v["kafka"].startswith("4.") and v["pulsar"].startswith("4.0.")
    assert v["pravega"].startswith("0.13.") and v["pravega.bookkeeper"].startswith("4.14.")


def test_pravega_confs_loopback_and_level():
    from systems import pravega
    ss = dur.server_settings("pravega", "L2", "stock")
    b = pravega.bookie_conf({"bookie": 3181, "http": 8080}, Path("/j"), Path("/l"), "127.0.0.1:2181", ss,
                            storage={"gcWaitTime": 30000})
    assert (b["listeningInterface"], b["advertisedAddress"], b["allowLoopback"]) == ("lo", "127.0.0.1", True)
    assert b["httpServerClass"] == "org.streambench.pravega.LoopbackHttpServer"
    assert b["journalSyncData"] is False and b["journalPageCacheFlushIntervalMSec"] == 1000
    assert b["metadataServiceUri"] == "zk://127.0.0.1:2181/pravega/pravega-cluster/bookkeeper/ledgers"
    with pytest.raises(SystemsError, match="systems.pravega.bookie_storage: journalSyncData is a durability setting"):
        pravega.bookie_conf({"bookie": 1, "http": 2}, Path("/j"), Path("/l"), "z", ss, storage={"journalSyncData": True})
    c = pravega.controller_props("127.0.0.1:2181", 9090, 9091)
    assert c["controller.service.rest.listener.host.ip"] == "127.0.0.1"
    assert c["streambench.grpc.bindAddress"] == "127.0.0.1"
    s = pravega.segmentstore_props("127.0.0.1:2181", 12345, 6061, "tcp://127.0.0.1:9090", Path("/t2"), 1 << 28, ss)
    assert s["bookkeeper.ack.quorum.size"] == 2 and s["pravegaservice.storage.impl.name"] == "FILESYSTEM"
    assert s["pravegaservice.service.listener.host.nameOrIp"] == "127.0.0.1"
    assert s["pravegaservice.rest.listener.host"] == "127.0.0.1"
    assert s["bookkeeper.ledger.path"] == "/pravega/pravega-cluster/bookkeeper/ledgers"


def test_pravega_logged_config_parse(tmp_path):
    from systems import pravega
    log = tmp_path / "node.log"
    log.write_text("x\n2026-01-01 00:00:00,000 INFO  [main] i.p.s.s.h.ServiceStarter: Segment store configuration:\n"
                   "2026-01-01 00:00:00,001 INFO  [main] i.p.s.s.h.ServiceStarter: bookkeeper.ack.quorum.size = 2\n"
                   "2026-01-01 00:00:00,001 INFO  [main] i.p.s.s.h.ServiceStarter: a.b = c d\n"
                   "2026-01-01 00:00:00,002 INFO  [main] i.p.s.Other: started\n")
    assert pravega._logged_config(log.read_text(), "Segment store configuration:") == {"bookkeeper.ack.quorum.size": "2",
                                                                           "a.b": "c d"}


# --- ports
def test_allocate_ports_distinct_and_free():
    ports = proc.allocate_ports(12)
    assert len(set(ports)) == 12
    assert all(proc.port_bindable(p) for p in ports)
    eph = proc._ephemeral_start()
    assert all(proc.PORT_FLOOR <= p < eph for p in ports), (ports, eph)


def test_allocate_ports_skips_a_port_in_use():
    import random
    # a generator that offers the busy port first: it must be passed over, not returned
    class Offer(random.Random):
        def __init__(self, first):
            super().__init__(7)
            self.first = first
        def randrange(self, a, b):
            if self.first is not None:
                p, self.first = self.first, None
                return p
            return super().randrange(a, b)
    s2 = socket.socket()
    for _ in range(200):
        cand = random.randrange(proc.PORT_FLOOR, proc._ephemeral_start())
        try:
            s2.bind(("127.0.0.1", cand))
            break
        except OSError:
            continue
    try:
        ports = proc.allocate_ports(3, rng=Offer(cand))
        assert cand not in ports and len(set(ports)) == 3
    finally:
        s2.close()


def test_allocate_ports_never_hands_out_a_port_of_an_earlier_node():
    """A cluster allocates per node and binds only when all nodes start: a port handed to kafka-1 is still free
    when kafka-3 asks, so the cluster's own list must keep it out (a local run's kafka-3 hit "Address already in
    use" on a port its peer had taken)."""
    import random

    class Same(random.Random):  # offers the same ports again and again, as a small range would
        def __init__(self):
            super().__init__(11)
            self.seq = []
        def randrange(self, a, b):
            if not self.seq:
                self.seq = [a + 101, a + 102, a + 103, a + 104]
            return self.seq.pop(0)
    first = proc.allocate_ports(2, rng=Same())
    second = proc.allocate_ports(2, rng=Same(), exclude=set(first))
    assert not set(first) & set(second) and len(set(second)) == 2


def test_port_in_use_is_named():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    port = s.getsockname()[1]
    try:
        assert proc.port_listening(port)
        with pytest.raises(SystemsError, match=f"port 127.0.0.1:{port} \\(kafka-1.client\\) is already in use"):
            proc.ensure_ports_free({"kafka-1.client": port})
    finally:
        s.close()
    assert not proc.port_listening(port)


# --- pid files, stale detection, down
def _spawn(rundir, node, script, stage=0):
    return proc.start_process(rundir, node, ["bash", "-c", script], cwd=rundir, log=rundir / f"{node}.log",
                              env=dict(os.environ), stop_stage=stage)


def test_stale_cluster_detected_and_down_kills_whole_groups(tmp_path):
    # a grandchild that ignores SIGTERM: only the group KILL after the timeout gets it
    p1, r1 = _spawn(tmp_path, "n1", "trap '' TERM; sleep 300 & wait")
    p2, r2 = _spawn(tmp_path, "n2", "sleep 300", stage=1)
    time.sleep(0.3)
    members = proc.group_members(r1.pgid)
    assert len(members) >= 2
    stale = cluster.stale_records(tmp_path)
    assert {r.node for r in stale} == {"n1", "n2"}
    cfg = load_config()
    cfg["stop_timeout_seconds"] = 1
    res = cluster.down(tmp_path, cfg, log=lambda m: None)
    assert set(res["stopped"]) == {"n1", "n2"} and "n1" in res["killed"]
    assert not proc.group_members(r1.pgid) and not proc.group_members(r2.pgid)
    assert cluster.stale_records(tmp_path) == []
    assert not list((tmp_path / "pids").glob("*.json"))
    p1.wait(1), p2.wait(1)


def test_reused_pid_is_not_ours(tmp_path):
    rec = proc.PidRecord("x", os.getpid(), os.getpgid(0), start_time=1, cmd=[])
    assert not rec.alive()  # our own pid, but a different start time: never signalled
    rec2 = proc.PidRecord("y", os.getpid(), os.getpgid(0), proc.proc_start_time(os.getpid()), [])
    assert rec2.alive()


def test_down_on_empty_dir_is_a_no_op(tmp_path):
    assert cluster.down(tmp_path, load_config(), log=lambda m: None) == {"stopped": [], "killed": []}


def test_page_cache_record():
    assert cluster.drop_page_cache(False) == {"dropped": False, "reason": "disabled by config systems.drop_caches"}
    r = cluster.drop_page_cache(True)
    assert set(r) == {"dropped", "reason"} and isinstance(r["dropped"], bool)


# --- CLI bad input: exit 2, one clear line, nothing started
def _cli(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "systems", *args], capture_output=True, text=True, cwd=REPO,
                          env=e, timeout=60)


@pytest.mark.parametrize("args,msg", [
    (["up", "rabbitmq", "--level", "L1"], "unknown system 'rabbitmq'"),
    (["up", "kafka", "--level", "L9"], "unknown level 'L9'"),
    (["up", "kafka", "--level", "L2-bypass"], "levels.L2-bypass.kafka: level L2-bypass is not defined for kafka"),
    (["up", "pulsar", "--level", "L1", "--tuning", "fast"], "unknown tuning profile 'fast'"),
    (["up", "kafka", "--level", "L1", "--hosts", "10.0.0.5"], "10.0.0.5: this command starts clusters on this machine only"),
    (["prepare", "rabbitmq"], "unknown system 'rabbitmq'"),
    (["up", "pravega", "--level", "L5"], "systems/durability.yaml: levels: unknown level 'L5'"),
    (["up", "pravega", "--level", "L2-bypass"],
     "systems/durability.yaml: levels.L2-bypass.pravega: level L2-bypass is not defined for pravega"),
    (["up", "pravega", "--level", "L4-bypass"], "levels.L4-bypass.pravega: level L4-bypass is not defined"),
])
def test_cli_bad_input(tmp_path, args, msg):
    if args[0] == "up":
        args = args + ["--dir", str(tmp_path / "run")]
    r = _cli(*args)
    assert r.returncode == 2, r.stderr
    assert msg in r.stderr
    assert r.stderr.strip().count("\n") == 0, r.stderr
    assert not (tmp_path / "run" / "pids").exists() or not list((tmp_path / "run" / "pids").iterdir())


def test_cli_missing_distribution(tmp_path):
    r = _cli("up", "kafka", "--level", "L1", "--dir", str(tmp_path / "run"),
             env={"STREAMBENCH_CACHE": str(tmp_path / "cache")})
    assert r.returncode == 2
    assert f"kafka distribution missing at {tmp_path / 'cache'}/dist/kafka-" in r.stderr
    assert "python -m systems prepare kafka" in r.stderr


def test_cli_verify_without_cluster(tmp_path):
    r = _cli("verify", "--dir", str(tmp_path))
    assert r.returncode == 2 and "no cluster.json" in r.stderr


def test_capped_logs_keep_the_head_mark_the_cut_and_never_block_the_writer(tmp_path):
    import subprocess
    from systems import proc
    log = tmp_path / "node.log"
    # 3 MB written through a 64 KB cap: the writer finishes (the rest is drained, no EPIPE), the log holds the
    # first 64 KB and one marker line
    writer = ["python3", "-c", "import sys\nfor i in range(3000): sys.stdout.write('x' * 1023 + '\\n')\nprint('END')"]
    r = subprocess.run(proc.capped(writer, log, 65536), capture_output=True, timeout=60)
    assert r.returncode == 0
    text = _settled(log, lambda t: t.endswith("discarded]\n"))
    assert text.startswith("x" * 1023 + "\n")
    assert text.endswith("[streambench: log capped at 65536 bytes; the rest was discarded]\n")
    assert len(text) == 65536 + len("\n[streambench: log capped at 65536 bytes; the rest was discarded]\n")
    assert "END" not in text
    # a line reaches the log while the writer still runs and says nothing more (a start-up message the launcher
    # waits for must not sit in a buffer)
    live = tmp_path / "live.log"
    p = subprocess.Popen(proc.capped(["python3", "-u", "-c", "print('Kafka Server started'); import time; time.sleep(30)"],
                                     live, 65536))
    try:
        assert _settled(live, lambda t: "Kafka Server started" in t, timeout=10) == "Kafka Server started\n"
    finally:
        p.kill()
        p.wait()
    # under the cap: everything, no marker
    small = tmp_path / "small.log"
    r = subprocess.run(proc.capped(["python3", "-c", "print('hello')"], small, 65536), timeout=60)
    assert r.returncode == 0 and _settled(small, lambda t: t == "hello\n") == "hello\n"


def test_the_cap_is_the_logs_whatever_the_number_of_starts(tmp_path):
    """A node restarted with its recorded (wrapped) command, as fault cycles do, appends only what is left below
    the cap; a start that finds the log full adds one line and discards its output (a Pulsar broker restarted over
    14 fault cycles left 173 MB with a 50 MB cap per start)."""
    import subprocess
    from systems import proc
    log = tmp_path / "node.log"
    cap = 65536
    writer = ["python3", "-c", "import sys\nfor i in range(100): sys.stdout.write('y' * 1023 + '\\n')"]  # 100 KB a start
    cmd = proc.capped(writer, log, cap)
    sizes = []
    for start in range(5):
        assert subprocess.run(cmd, timeout=60).returncode == 0
        _settled(log, lambda t: t.endswith("]\n"))
        sizes.append(log.stat().st_size)
    text = log.read_text()
    assert text.count("log capped at 65536 bytes") == 1, text[-500:]
    assert text.count("this start's output was discarded") == 4
    assert sizes[0] == cap + len("\n[streambench: log capped at 65536 bytes; the rest was discarded]\n")
    assert sizes[-1] < cap + 5 * 100, sizes
    # a log below its cap: the second start gets only the rest
    part = tmp_path / "part.log"
    part.write_text("z" * 60000)
    assert subprocess.run(proc.capped(writer, part, cap), timeout=60).returncode == 0
    t = _settled(part, lambda t: t.endswith("discarded]\n"))
    assert len(t) == cap + len("\n[streambench: log capped at 65536 bytes; the rest was discarded]\n")


def _settled(path, done, timeout=10.0):
    """The log's text once the pipe's reader (asynchronous to the writer's exit) has written it."""
    import time
    t_end = time.monotonic() + timeout
    while True:
        text = path.read_text() if path.exists() else ""
        if done(text) or time.monotonic() > t_end:
            return text
        time.sleep(0.05)


def test_kill_nodes_and_restart_nodes_start_them_again_in_reverse_stop_order(tmp_path):
    # two "nodes" that listen on a port; the metadata store (stop stage 1) restarts before the broker (stage 0),
    # with the working directory and the extra environment recorded at start
    order = tmp_path / "order.log"
    ports = proc.allocate_ports(2)
    script = ('echo "$NODE_NAME $(pwd)" >> {order}; exec python3 -c "import socket,time; s=socket.socket(); '
              's.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((\'127.0.0.1\', {port})); '
              's.listen(); time.sleep(300)"')
    nodes = []
    for (name, stage), port in zip([("zk", 1), ("br", 0)], ports):
        cwd = tmp_path / name
        cwd.mkdir()
        p, rec = proc.start_process(tmp_path, name, ["bash", "-c", script.format(order=order, port=port)],
                                    cwd=cwd, log=tmp_path / f"{name}.log", env={**os.environ, "NODE_NAME": name},
                                    stop_stage=stage, env_extra={"NODE_NAME": name})
        nodes.append({"name": name, "pid": p.pid, "pgid": p.pid, "ports": {"client": port},
                      "log": str(tmp_path / f"{name}.log")})
    (tmp_path / "cluster.json").write_text(json.dumps({"nodes": nodes}))
    deadline = time.monotonic() + 10
    while not all(proc.port_listening(p) for p in ports) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cluster.kill_nodes(tmp_path) == ["br", "zk"]
    assert not any(r.alive() for r in proc.read_pid_records(tmp_path))
    with pytest.raises(SystemsError, match="no pid file for node"):
        cluster.kill_nodes(tmp_path, ["nope"])
    order.write_text("")
    assert cluster.restart_nodes(tmp_path, log=lambda m: None, timeout=10) == ["zk", "br"]
    try:
        assert order.read_text().split("\n")[:2] == [f"zk {tmp_path / 'zk'}", f"br {tmp_path / 'br'}"]
        assert all(proc.port_listening(p) for p in ports)
        doc = json.loads((tmp_path / "cluster.json").read_text())
        recs = {r.node: r for r in proc.read_pid_records(tmp_path)}
        assert {n["name"]: n["pid"] for n in doc["nodes"]} == {k: r.pid for k, r in recs.items()}
        assert all(r.alive() for r in recs.values()) and "restartedAt" in doc
        with pytest.raises(SystemsError, match="still running"):
            cluster.restart_nodes(tmp_path, ["zk"], log=lambda m: None)
    finally:
        cfg = load_config()
        cfg["stop_timeout_seconds"] = 1
        cluster.down(tmp_path, cfg, log=lambda m: None)


def test_a_restarted_node_finds_its_rocksdb_directory_without_the_copy_a_killed_process_left(tmp_path):
    # RocksDB's JNI loader extracts its library into ROCKSDB_SHAREDLIB_DIR and deletes it only on a clean exit
    lib = tmp_path / "tmp" / "bookie-1"
    lib.mkdir(parents=True)
    (lib / "librocksdbjni123.so").write_bytes(b"left by a kill -9")
    (lib / "other-file").write_text("kept")
    env = dict(os.environ, ROCKSDB_SHAREDLIB_DIR=str(lib))
    p, rec = proc.start_process(tmp_path, "bookie-1", ["bash", "-c", 'test -d "$ROCKSDB_SHAREDLIB_DIR"'], cwd=tmp_path,
                                log=tmp_path / "bookie-1.log", env=env,
                                env_extra={"ROCKSDB_SHAREDLIB_DIR": str(lib)})
    assert p.wait(10) == 0
    assert sorted(f.name for f in lib.iterdir()) == ["other-file"]
    assert rec.env == {"ROCKSDB_SHAREDLIB_DIR": str(lib)}  # recorded, so a restart uses the same directory
    # a directory removed since (a purged run directory reused) is made again
    lib2 = tmp_path / "tmp" / "bookie-2"
    p, _ = proc.start_process(tmp_path, "bookie-2", ["bash", "-c", 'test -d "$ROCKSDB_SHAREDLIB_DIR"'], cwd=tmp_path,
                              log=tmp_path / "bookie-2.log", env=dict(os.environ, ROCKSDB_SHAREDLIB_DIR=str(lib2)),
                              env_extra={"ROCKSDB_SHAREDLIB_DIR": str(lib2)})
    assert p.wait(10) == 0
