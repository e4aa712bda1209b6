"""Apache Kafka as 3 KRaft nodes (combined broker+controller, one static voter list): its configuration and its
read-back verification; systems/plan.py places and starts the nodes."""
from __future__ import annotations

import base64
import time
import uuid
from pathlib import Path
from typing import Any

from . import durability as dur
from .util import SystemsError

NODES = 3
ROLE = "broker+controller"
LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
"""
VERIFY_TOPIC = "__streambench_verify"


def random_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding (Kafka's Uuid.toString)."""
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not s.startswith("-"):
            return s


def render_properties(props: dict[str, Any]) -> str:
    lines = []
    for k, v in props.items():
        if isinstance(v, bool):
            v = str(v).lower()
        lines.append(f"{k}={v}")
    return "\n".join(lines) + "\n"


def server_properties(node_id: int, ports: list[dict[str, int]], data_dir: Path,
                      level_broker: dict[str, Any], host: str = "127.0.0.1",
                      hosts: list[str] | None = None) -> dict[str, Any]:
    """server.properties of node node_id (1-based); ports[i] = {"client": p, "controller": c} of node i+1,
    hosts[i] its address (all `host` when not given: one machine)."""
    hosts = hosts or [host] * len(ports)
    voters = ",".join(f"{i + 1}@{hosts[i]}:{p['controller']}" for i, p in enumerate(ports))
    me = ports[node_id - 1]
    host = hosts[node_id - 1]
    n = len(ports)
    props: dict[str, Any] = {
        "process.roles": "broker,controller",
        "node.id": node_id,
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{host}:{me['client']},CONTROLLER://{host}:{me['controller']}",
        "advertised.listeners": f"PLAINTEXT://{host}:{me['client']}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(data_dir),
        "auto.create.topics.enable": False,
        "num.partitions": 1,
        "unclean.leader.election.enable": False,
        "offsets.topic.replication.factor": min(3, n),
        "transaction.state.log.replication.factor": min(3, n),
        "transaction.state.log.min.isr": min(2, n),
        "share.coordinator.state.topic.replication.factor": min(3, n),
        "share.coordinator.state.topic.min.isr": min(2, n),
        "group.initial.rebalance.delay.ms": 0,
        "log.retention.hours": 24,
    }
    props.update(level_broker)
    return props


# broker settings checked by describeConfigs on every node, with the value Kafka reports
def expected_broker(level_broker: dict[str, Any]) -> dict[str, str]:
    exp = {"auto.create.topics.enable": "false"}
    for k, v in level_broker.items():
        exp[k] = str(v).lower() if isinstance(v, bool) else str(v)
    return exp


def storage_settings(storage: dict[str, Any], level_broker: dict[str, Any]) -> dict[str, Any]:
    """The disk-space settings of config systems.kafka.storage; durability stays durability.yaml's alone."""
    clash = sorted(set(storage) & set(level_broker))
    if clash:
        raise SystemsError(f"config systems.kafka.storage: {', '.join(clash)} is a durability setting "
                           "(systems/durability.yaml); it cannot be overridden here")
    return dict(storage)


def format_command(java: str, log4j, cp: str, cluster_id: str, conf) -> list[str]:
    """kafka-storage format of one node (also used on remote hosts, testbeds/cluster.py)."""
    return [java, "-Xmx256m", f"-Dlog4j2.configurationFile={log4j}", "-cp", cp, "kafka.tools.StorageTool",
            "format", "-t", cluster_id, "-c", str(conf), "--ignore-formatted"]


def node_command(java: str, kcfg: dict[str, Any], log4j, logs_dir, cp: str, conf) -> list[str]:
    """The command line of one KRaft node (also used on remote hosts, testbeds/cluster.py)."""
    # GC log (2 rotating files of 10 MB): the run's validity check reads the longest pause of each node
    gclog = f"-Xlog:gc:file={logs_dir}/gc.log:time,uptime:filecount=2,filesize=10M"
    return [java, f"-Xms{kcfg['heap']}", f"-Xmx{kcfg['heap']}", *kcfg["jvm_opts"], gclog,
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={logs_dir}", "-cp", cp, "kafka.Kafka", str(conf)]


def _admin(bootstrap: str):
    from confluent_kafka.admin import AdminClient
    # log_level 2: keep librdkafka's connection chatter (e.g. while nodes stop) out of our output
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000, "log_level": 2})


def verify(run, create: bool = True, timeout: float = 60) -> dict[str, Any]:
    """Read the broker and topic settings back (describeConfigs) and compare them with the level.

    Creates (once) the topic __streambench_verify with the level's topic config and replication factor, then checks
    its effective config and that every partition has a full replica set in sync. What the cluster answers comes from
    `run.kafka_snapshot` when the caller gives one (testbeds/cluster.py: the Java admin client of the distribution
    on a server host, over ssh, for a controller without a route to the brokers), else from this process
    (`snapshot`); the comparison is the same."""
    ss = dur.server_settings("kafka", run.level, run.tuning, run.durability)
    exp_b = expected_broker(ss["broker"])
    exp_t = {k: str(v) for k, v in ss["topic"].items()}
    take = getattr(run, "kafka_snapshot", None) or snapshot
    snap = take(run.endpoints["kafka"]["bootstrapServers"], sorted(exp_b), sorted(exp_t), exp_t,
                ss["replicationFactor"], create, timeout)
    return compare(snap, exp_b, exp_t, run.level)


def snapshot(bootstrap: str, broker_keys: list[str], topic_keys: list[str], topic_config: dict[str, str],
             rf: int, create: bool, timeout: float) -> dict[str, Any]:
    """What the cluster answers, from this process (confluent-kafka's admin client): {"brokers": {id: {key: value}},
    "topic": {"replicas": [per partition], "isr": [per partition], "config": {key: value}}}. Waits for the NODES
    brokers and for a full in-sync replica set of VERIFY_TOPIC (created first with `create`), until `timeout`."""
    from confluent_kafka import KafkaException
    try:
        return _snapshot(bootstrap, broker_keys, topic_keys, topic_config, rf, create, timeout)
    except KafkaException as e:
        raise SystemsError(f"kafka: admin request failed during verification: {e}") from None


def _snapshot(bootstrap, broker_keys, topic_keys, topic_config, rf, create, timeout) -> dict[str, Any]:
    from confluent_kafka.admin import ConfigResource, NewTopic, ResourceType
    from confluent_kafka import KafkaException

    admin = _admin(bootstrap)
    deadline = time.monotonic() + timeout
    while True:
        try:
            md = admin.list_topics(timeout=10)
            if len(md.brokers) == NODES:
                break
            err = f"{len(md.brokers)} of {NODES} brokers registered"
        except KafkaException as e:
            err = str(e)
        if time.monotonic() > deadline:
            raise SystemsError(f"kafka: cluster not ready at {bootstrap}: {err}")
        time.sleep(0.5)
    snap: dict[str, Any] = {"brokers": {}, "topic": {}}
    for b in sorted(md.brokers):
        # librdkafka allows one BROKER resource per describeConfigs call
        futs = admin.describe_configs([ConfigResource(ResourceType.BROKER, str(b))], request_timeout=15)
        r, fut = next(iter(futs.items()))  # keep `futs` referenced until the result is in
        cfg = fut.result(timeout=30)
        snap["brokers"][r.name] = {k: cfg[k].value if k in cfg else None for k in broker_keys}
    if create and VERIFY_TOPIC not in md.topics:
        fut = admin.create_topics([NewTopic(VERIFY_TOPIC, num_partitions=NODES, replication_factor=rf,
                                            config=topic_config)], request_timeout=30)[VERIFY_TOPIC]
        try:
            fut.result(timeout=60)
        except KafkaException as e:
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise SystemsError(f"kafka: cannot create {VERIFY_TOPIC}: {e}") from None
    while True:
        t = admin.list_topics(topic=VERIFY_TOPIC, timeout=10).topics.get(VERIFY_TOPIC)
        ok = t is not None and t.error is None and t.partitions and all(
            len(p.replicas) == rf and len(p.isrs) == rf for p in t.partitions.values())
        if ok:
            break
        if time.monotonic() > deadline:
            raise SystemsError(f"kafka: topic {VERIFY_TOPIC} has no full in-sync replica set after {timeout} s")
        time.sleep(0.5)
    while True:
        # the broker asked may not have the new topic's metadata yet: retry until the deadline
        futs = admin.describe_configs([ConfigResource(ResourceType.TOPIC, VERIFY_TOPIC)], request_timeout=15)
        try:
            cfg = next(iter(futs.values())).result(timeout=30)
            break
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    parts = [t.partitions[i] for i in sorted(t.partitions)]
    snap["topic"] = {"replicas": [len(p.replicas) for p in parts], "isr": [len(p.isrs) for p in parts],
                     "config": {k: cfg[k].value if k in cfg else None for k in topic_keys}}
    return snap


def compare(snap: dict[str, Any], exp_b: dict[str, str], exp_t: dict[str, str], level: str) -> dict[str, Any]:
    """The effective settings of a snapshot, or one SystemsError listing every difference from the level."""
    effective: dict[str, Any] = {"brokers": {}, "topic": {}}
    mismatches = []
    for b, cfg in sorted(snap["brokers"].items()):
        got = {k: cfg.get(k) for k in exp_b}
        effective["brokers"][b] = got
        for k, v in exp_b.items():
            if got[k] != v:
                mismatches.append(f"broker {b} {k}={got[k]} (want {v})")
    t = snap["topic"]
    got = {k: t["config"].get(k) for k in exp_t}
    effective["topic"] = {"name": VERIFY_TOPIC, "replicationFactor": t["replicas"][0],
                          "inSyncReplicas": min(t["isr"]), "config": got}
    for k, v in exp_t.items():
        if got[k] != v:
            mismatches.append(f"topic {VERIFY_TOPIC} {k}={got[k]} (want {v})")
    if mismatches:
        raise SystemsError("kafka: effective settings differ from level "
                           f"{level}: " + "; ".join(mismatches))
    return effective
