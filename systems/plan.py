"""One plan per system: which nodes run on which host, with which files, ports, commands and environment, and in
which stages they start and become ready.

The same builders serve every testbed. A `Placement` says where things go: on this machine one host at 127.0.0.1
with free ports and everything under the run directory (`local_placement`); on an inventory its server hosts with
their addresses, fixed ports and data directories (`hosts_placement`, testbeds/cluster.py). A transport carries a
plan out: systems/cluster.py on this machine, Ansible and the host-side helper on an inventory's hosts. The
configuration renderers stay in systems/kafka.py, pulsar.py and pravega.py; the durability settings come from
systems/durability.yaml only.

A stage is: one-off commands (run to completion, in parallel), then node starts, then readiness conditions
(systems/ready.py) checked in order on the host of the node each names.
"""
from __future__ import annotations

import os
import posixpath
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import cds
from . import durability as dur
from . import kafka as skafka
from . import pravega as spravega
from . import pulsar as spulsar
from .util import SystemsError

# fixed ports of a node on an inventory host (one node of a role per host; Pravega's zookeeper, controller and
# segment store share server-1 with bookie-1, so no two roles share a port)
PORTS: dict[str, dict[str, int]] = {
    "kafka": {"client": 9092, "controller": 9093},
    "zookeeper": {"client": 2181},
    "bookie": {"bookie": 3181, "http": 8000, "metrics": 8001},
    "broker": {"service": 6650, "http": 8080},
    "controller": {"rpc": 9090, "rest": 10080},
    "segmentstore": {"service": 12345, "rest": 6061},
}


@dataclass(frozen=True)
class Host:
    """A host as a plan sees it: its name and address, this cluster's directory on it (nodes/<node>/ with conf
    and logs, pids/), where each data role's directories go, the system's distribution, and the java command."""
    name: str
    address: str
    root: str
    dist: str
    java: str
    data: dict[str, str] = field(default_factory=dict)  # role (log/journal/ledger) -> this cluster's data base

    def node_dir(self, node: str) -> str:
        return posixpath.join(self.root, "nodes", node)

    def data_dir(self, role: str, node: str, sub: str) -> str:
        base = self.data.get(role) or self.data.get("log")
        return posixpath.join(base, node, sub) if base else posixpath.join(self.node_dir(node), sub)


class Placement:
    """Where a cluster goes: its server hosts (the first `len(hosts)`; one host means every node on it) and how a
    node's ports are chosen."""

    def __init__(self, hosts: list[Host], ports: Callable[[str, str, list[str]], dict[str, int]], local: bool = False):
        if not hosts:
            raise SystemsError("placement: no server host")
        self.hosts, self._ports = list(hosts), ports
        self.local = local  # this machine (its files are the ones the plan's commands read)

    def server(self, i: int) -> Host:
        return self.hosts[i % len(self.hosts)]

    def ports(self, node: str, role: str, names: list[str]) -> dict[str, int]:
        return self._ports(node, role, names)


def local_placement(rundir: Path, dist: Path, java: str) -> Placement:
    """This machine: 127.0.0.1, ports drawn free (systems/proc.py allocate_ports, none handed out twice), every
    directory under rundir/nodes/<node>/."""
    from .proc import LOOPBACK, allocate_ports

    taken: set[int] = set()

    def ports(node: str, role: str, names: list[str]) -> dict[str, int]:
        ps = allocate_ports(len(names), exclude=taken)
        taken.update(ps)
        return dict(zip(names, ps))
    h = Host("local", LOOPBACK, str(rundir), str(dist), java)
    return Placement([h], ports, local=True)


def fixed_ports(node: str, role: str, names: list[str]) -> dict[str, int]:
    table = PORTS[role]
    return {n: table[n] for n in names}


@dataclass
class Node:
    name: str
    role: str
    id: int
    host: Host
    ports: dict[str, int]
    data_dirs: list[str]
    conf: list[str]
    cmd: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    stop_stage: int = 0

    @property
    def dir(self) -> str:
        return self.host.node_dir(self.name)

    @property
    def log(self) -> str:
        return posixpath.join(self.dir, "logs", "node.log")

    def record(self) -> dict[str, Any]:
        """The node's entry in cluster.json."""
        return {"name": self.name, "role": self.role, "id": self.id, "host": self.host.address,
                "hostName": self.host.name, "ports": dict(self.ports), "pid": None, "pgid": None,
                "dataDirs": list(self.data_dirs), "conf": list(self.conf), "log": self.log,
                "stopStage": self.stop_stage, "hostRunDir": self.host.root}


@dataclass
class Once:
    """A one-off command of a stage (kafka-storage format, pulsar initialize-cluster-metadata, bookkeeper shell)."""
    name: str
    host: Host
    cmd: list[str]
    cwd: str
    log: str
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = 120


@dataclass
class Stage:
    once: list[Once] = field(default_factory=list)
    start: list[str] = field(default_factory=list)  # node names
    wait: list[dict[str, Any]] = field(default_factory=list)  # systems/ready.py conditions, each with its node


@dataclass
class ClusterPlan:
    system: str
    level: str
    tuning: str
    placement: Placement
    nodes: list[Node] = field(default_factory=list)
    files: list[tuple[Host, str, str]] = field(default_factory=list)  # (host, path, text)
    stages: list[Stage] = field(default_factory=list)
    endpoints: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    jvm_extra_opts: list[str] = field(default_factory=list)  # STREAMBENCH_JVM_EXTRA_OPTS, read once by build()

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def host_of(self, node: str) -> Host:
        return self.node(node).host

    def file(self, host: Host, path: str, text: str) -> str:
        self.files.append((host, path, text))
        return path

    def add(self, node: Node) -> Node:
        self.nodes.append(node)
        return node

    @property
    def hosts(self) -> list[Host]:
        seen: dict[str, Host] = {}
        for n in self.nodes:
            seen.setdefault(n.host.name, n.host)
        return list(seen.values())

    @property
    def ports(self) -> dict[str, int]:
        return {f"{n.name}.{k}": p for n in self.nodes for k, p in n.ports.items()}


# --- Kafka: 3 KRaft nodes (combined broker and controller, a static voter list) ------------------------------------
def plan_kafka(pl: ClusterPlan, cfg: dict, ss: dict[str, Any]) -> None:
    kcfg = cfg["kafka"]
    servers = [pl.placement.server(i) for i in range(skafka.NODES)]
    names = [f"kafka-{i + 1}" for i in range(skafka.NODES)]
    ports = [pl.placement.ports(n, "kafka", ["client", "controller"]) for n in names]
    hosts = [h.address for h in servers]
    cluster_id = skafka.random_cluster_id()
    pl.extra["clusterId"] = cluster_id
    stage = Stage()
    for i, (h, name) in enumerate(zip(servers, names)):
        nd = h.node_dir(name)
        data = h.data_dir("log", name, "data")
        log4j = pl.file(h, posixpath.join(nd, "log4j2.properties"), skafka.LOG4J2)
        conf = pl.file(h, posixpath.join(nd, "server.properties"), skafka.render_properties({
            **skafka.server_properties(i + 1, ports, Path(data), ss["broker"], hosts=hosts),
            **skafka.storage_settings(kcfg.get("storage") or {}, ss["broker"])}))
        cp = posixpath.join(h.dist, "libs", "*")
        stage.once.append(Once(f"{name}-format", h, skafka.format_command(h.java, log4j, cp, cluster_id, conf),
                               cwd=nd, log=posixpath.join(nd, "format.log")))
        node = pl.add(Node(name, skafka.ROLE, i + 1, h, ports[i], [data], [conf], stop_stage=0))
        node.cmd = skafka.node_command(h.java, kcfg, log4j, posixpath.join(nd, "logs"), cp, conf)
        stage.start.append(name)
        stage.wait.append({"kind": "log", "node": name, "path": node.log, "text": "Kafka Server started"})
    pl.stages = [stage]
    pl.endpoints = {"kafka": {"bootstrapServers": ",".join(f"{a}:{p['client']}" for a, p in zip(hosts, ports))}}


# --- Pulsar: ZooKeeper (metadata store), 3 bookies, 1 broker --------------------------------------------------------
def _pulsar_env(cfg: dict, java: str, nd: str, mem: str, **kv: str) -> dict[str, str]:
    gc = " ".join(cfg["pulsar"]["gc_opts"])
    logs = posixpath.join(nd, "logs")
    gclog = f"-Xlog:gc*:file={logs}/gc.log:time,uptime:filecount=2,filesize=10M"
    env = {"PULSAR_MEM": mem, "PULSAR_GC": gc, "PULSAR_GC_LOG": gclog, "PULSAR_LOG_DIR": logs,
           "BOOKIE_MEM": mem, "BOOKIE_GC": gc, "BOOKIE_GC_LOG": gclog, "BOOKIE_LOG_DIR": logs,
           "PULSAR_LOG_APPENDER": "RoutingAppender", "PULSAR_ROUTING_APPENDER_DEFAULT": "Console"}
    if java != "java":
        env["JAVA_HOME"] = str(Path(java).resolve().parent.parent)
    env.update(kv)
    return env


def plan_pulsar(pl: ClusterPlan, cfg: dict, ss: dict[str, Any], conf_dir: Path, faults: bool) -> None:
    pc = cfg["pulsar"]
    meta = pl.placement.server(0)
    zk_port = pl.placement.ports("zookeeper", "zookeeper", ["client"])["client"]
    bports = pl.placement.ports("broker-1", "broker", ["http", "service"])
    web, svc = bports["http"], bports["service"]
    zk = f"{meta.address}:{zk_port}"
    zk_url = f"zk:{zk}"

    def pulsar_bin(h: Host) -> str:
        return posixpath.join(h.dist, "bin", "pulsar")

    # ZooKeeper (the metadata store) on the first server
    nd = meta.node_dir("zookeeper")
    zdata, zlog = meta.data_dir("log", "zookeeper", "data"), meta.data_dir("log", "zookeeper", "datalog")
    zconf = pl.file(meta, posixpath.join(nd, "zookeeper.conf"), spulsar.render_conf(
        (conf_dir / "zookeeper.conf").read_text(),
        spulsar.zookeeper_overrides(Path(zdata), Path(zlog), zk_port, host=meta.address)))
    zknode = pl.add(Node("zookeeper", "metadata-store", 0, meta, {"client": zk_port}, [zdata, zlog], [zconf],
                         stop_stage=2))
    zknode.cmd = [pulsar_bin(meta), "zookeeper"]
    zknode.env = _pulsar_env(cfg, meta.java, nd, f"-Xms{pc['zookeeper_heap']} -Xmx{pc['zookeeper_heap']}",
                             PULSAR_ZK_CONF=zconf)
    stage1 = Stage(start=["zookeeper"],
                   wait=[{"kind": "zk-ruok", "node": "zookeeper", "address": meta.address, "port": zk_port}])

    # cluster metadata (creates /ledgers for BookKeeper, the cluster, public/default), then bookies and broker
    ind = meta.node_dir("initialize-cluster-metadata")
    init = Once("initialize-cluster-metadata", meta,
                [pulsar_bin(meta), "initialize-cluster-metadata", "--cluster", pc["cluster_name"],
                 "--metadata-store", zk_url, "--configuration-metadata-store", zk_url,
                 "--web-service-url", f"http://{meta.address}:{web}",
                 "--broker-service-url", f"pulsar://{meta.address}:{svc}"],
                cwd=ind, log=posixpath.join(ind, "initialize-cluster-metadata.log"),
                env=_pulsar_env(cfg, meta.java, ind, "-Xms128m -Xmx256m"))
    stage2 = Stage(once=[init])
    storage = dict(pc.get("bookie_storage") or {})
    if faults:  # a cluster for fault runs: the bookies' fault settings (read back by verify)
        storage.update(pc.get("fault_bookie") or {})
    direct = pc["fault_bookie_direct"] if faults else pc["bookie_direct"]
    bk_template = (conf_dir / "bookkeeper.conf").read_text()
    for i in range(spulsar.BOOKIES):
        h = pl.placement.server(i)
        name = f"bookie-{i + 1}"
        nd = h.node_dir(name)
        ports = pl.placement.ports(name, "bookie", ["bookie", "http", "metrics"])
        journal, ledgers = h.data_dir("journal", name, "journal"), h.data_dir("ledger", name, "ledgers")
        bconf = pl.file(h, posixpath.join(nd, "bookkeeper.conf"), spulsar.render_conf(bk_template, spulsar.bookie_overrides(
            ports, Path(journal), Path(ledgers), zk, ss, host=h.address, storage=storage)))
        node = pl.add(Node(name, "bookie", i + 1, h, ports, [journal, ledgers], [bconf], stop_stage=1))
        node.cmd = [pulsar_bin(h), "bookie"]
        mem = f"-Xms{pc['bookie_heap']} -Xmx{pc['bookie_heap']} -XX:MaxDirectMemorySize={direct}"
        node.env = _pulsar_env(cfg, h.java, nd, mem, PULSAR_BOOKKEEPER_CONF=bconf)
        stage2.start.append(name)
    nd = meta.node_dir("broker-1")
    brconf = pl.file(meta, posixpath.join(nd, "broker.conf"), spulsar.render_conf(
        (conf_dir / "broker.conf").read_text(),
        spulsar.broker_overrides(zk_url, pc["cluster_name"], svc, web, ss, host=meta.address)))
    broker = pl.add(Node("broker-1", "broker", 1, meta, {"service": svc, "http": web}, [], [brconf], stop_stage=0))
    broker.cmd = [pulsar_bin(meta), "broker"]
    mem = f"-Xms{pc['broker_heap']} -Xmx{pc['broker_heap']} -XX:MaxDirectMemorySize={pc['broker_direct']}"
    broker.env = _pulsar_env(cfg, meta.java, nd, mem, PULSAR_BROKER_CONF=brconf)
    stage2.start.append("broker-1")
    # the broker starts while the bookies start (it retries until they are there); then every bookie writable, the
    # broker ready and healthy (an end-to-end write and read through the bookies), then the level's namespace policy
    for n in pl.nodes:
        if n.role == "bookie":
            stage2.wait.append({"kind": "bookie-writable", "node": n.name,
                                "url": f"http://{n.host.address}:{n.ports['http']}"})
    base = f"http://{meta.address}:{web}"
    p = ss["persistence"]
    stage2.wait += [
        {"kind": "http", "node": "broker-1", "method": "GET", "url": f"{base}/admin/v2/brokers/ready"},
        {"kind": "http", "node": "broker-1", "method": "GET", "url": f"{base}/admin/v2/brokers/health", "timeout": 20},
        {"kind": "http", "node": "broker-1", "method": "POST", "status": [200, 204],
         "url": f"{base}/admin/v2/namespaces/{spulsar.NAMESPACE}/persistence",
         "body": {"bookkeeperEnsemble": p["ensemble"], "bookkeeperWriteQuorum": p["writeQuorum"],
                  "bookkeeperAckQuorum": p["ackQuorum"], "managedLedgerMaxMarkDeleteRate": 0.0}},
    ]
    pl.stages = [stage1, stage2]
    pl.endpoints = {"pulsar": {"serviceUrl": f"pulsar://{meta.address}:{svc}", "httpUrl": base,
                               "cluster": pc["cluster_name"], "namespace": spulsar.NAMESPACE}}


# --- Pravega: ZooKeeper, 3 bookies, 1 segment store, 1 controller ---------------------------------------------------
def _pravega_java(pl: ClusterPlan, cfg: dict, h: Host, nd: str, heap: str, direct: str | None, main: str,
                  args: list[str], props: dict[str, Any], patch: bool = False) -> list[str]:
    pc = cfg["pravega"]
    libs = posixpath.join(h.dist, "libs", "*")
    cp = (posixpath.join(h.dist, "patch") + ":" if patch else "") + libs
    logback = posixpath.join(h.root, "nodes", "logback.xml")
    return [h.java, f"-Xms{heap}", f"-Xmx{heap}", *([f"-XX:MaxDirectMemorySize={direct}"] if direct else []),
            *pc["gc_opts"], f"-Xlog:gc*:file={posixpath.join(nd, 'logs', 'gc.log')}:time,uptime:filecount=2,filesize=10M",
            "-Djava.net.preferIPv4Stack=true", f"-Dlogback.configurationFile={logback}",
            "-Dzookeeper.jmx.log4j.disable=true",
            *[f"-D{k}={spravega._s(v)}" for k, v in props.items()], "-cp", cp, main, *args]


def plan_pravega(pl: ClusterPlan, cfg: dict, ss: dict[str, Any]) -> None:
    """ZooKeeper, the controller and the segment store on the first server, a bookie on each of three; the segment
    store's long-term storage (tier 2) a FILESYSTEM directory on its own host (one segment store: no other reads
    it)."""
    pc = cfg["pravega"]
    P = spravega.MAIN
    meta = pl.placement.server(0)
    for h in {pl.placement.server(i).name: pl.placement.server(i) for i in range(spravega.BOOKIES)}.values():
        pl.file(h, posixpath.join(h.root, "nodes", "logback.xml"), spravega.LOGBACK)
    zk_port = pl.placement.ports("zookeeper", "zookeeper", ["client"])["client"]
    cports = pl.placement.ports("controller", "controller", ["rpc", "rest"])
    sports = pl.placement.ports("segmentstore", "segmentstore", ["service", "rest"])
    zk = f"{meta.address}:{zk_port}"

    nd = meta.node_dir("zookeeper")
    zdata, zlog = meta.data_dir("log", "zookeeper", "data"), meta.data_dir("log", "zookeeper", "datalog")
    zconf = pl.file(meta, posixpath.join(nd, "zoo.cfg"),
                    spravega._props(spravega.zookeeper_conf(zdata, zlog, zk_port, host=meta.address)))
    zknode = pl.add(Node("zookeeper", "metadata-store", 0, meta, {"client": zk_port}, [zdata, zlog], [zconf],
                         stop_stage=3))
    zknode.cmd = _pravega_java(pl, cfg, meta, nd, pc["zookeeper_heap"], None, P["zookeeper"], [zconf], {})
    ledgers_root = spravega.LEDGERS.rsplit("/", 1)[0]
    stage1 = Stage(start=["zookeeper"], wait=[
        {"kind": "zk-ruok", "node": "zookeeper", "address": meta.address, "port": zk_port},
        # the bookies' metadata root must exist before `bookkeeper shell initnewcluster`
        {"kind": "zk-path", "node": "zookeeper", "address": meta.address, "port": zk_port, "path": ledgers_root}])

    stage2 = Stage()
    confs = []
    for i in range(spravega.BOOKIES):
        h = pl.placement.server(i)
        name = f"bookie-{i + 1}"
        nd = h.node_dir(name)
        ports = pl.placement.ports(name, "bookie", ["bookie", "http"])
        journal, ledgers = h.data_dir("journal", name, "journal"), h.data_dir("ledger", name, "ledgers")
        bconf = pl.file(h, posixpath.join(nd, "bookkeeper.conf"), spravega._props(spravega.bookie_conf(
            ports, journal, ledgers, zk, ss, storage=pc.get("bookie_storage"), host=h.address)))
        confs.append((h, bconf))
        node = pl.add(Node(name, "bookie", i + 1, h, ports, [journal, ledgers], [bconf], stop_stage=2))
        node.cmd = _pravega_java(pl, cfg, h, nd, pc["bookie_heap"], pc["bookie_direct"], P["bookie"], ["--conf", bconf],
                                 {"streambench.http.bindAddress": h.address}, patch=True)
        stage2.start.append(name)
        stage2.wait.append({"kind": "bookie-writable", "node": name, "url": f"http://{h.address}:{ports['http']}"})
    h0, conf0 = confs[0]
    ond = posixpath.join(h0.root, "nodes", "bookkeeper-initnewcluster")
    stage2.once.append(Once("bookkeeper-initnewcluster", h0,
                            _pravega_java(pl, cfg, h0, ond, "128m", None, P["bookie-shell"],
                                          ["-conf", conf0, "initnewcluster"], {}),
                            cwd=ond, log=posixpath.join(ond, "logs", "bookkeeper-initnewcluster.log")))

    # the segment store first; the controller once it listens: the controller assigns the segment containers to it
    # and creates its own system streams on it (started before, it backs off between retries: 30 s slower to ready)
    nd = meta.node_dir("segmentstore")
    tier2 = meta.data_dir("log", "segmentstore", "tier2")
    sprops = spravega.segmentstore_props(zk, sports["service"], sports["rest"], f"tcp://{meta.address}:{cports['rpc']}",
                                         tier2, spravega._bytes(pc["segmentstore_cache"]), ss, host=meta.address)
    sconf = pl.file(meta, posixpath.join(nd, "config.properties"), spravega._props(sprops))
    store = pl.add(Node("segmentstore", "segmentstore", 1, meta, sports, [tier2], [sconf], stop_stage=1))
    store.cmd = _pravega_java(pl, cfg, meta, nd, pc["segmentstore_heap"], pc["segmentstore_direct"], P["segmentstore"],
                              [], {"pravega.configurationFile": sconf})
    stage3 = Stage(start=["segmentstore"], wait=[
        {"kind": "port", "node": "segmentstore", "address": meta.address, "port": sports["service"]}])
    nd = meta.node_dir("controller")
    cprops = spravega.controller_props(zk, cports["rpc"], cports["rest"], host=meta.address)
    cconf = pl.file(meta, posixpath.join(nd, "controller.properties"), spravega._props(cprops))
    ctl = pl.add(Node("controller", "controller", 1, meta, cports, [], [cconf], stop_stage=0))
    ctl.cmd = _pravega_java(pl, cfg, meta, nd, pc["controller_heap"], pc["controller_direct"], P["controller"], [],
                            cprops, patch=True)
    base = f"http://{meta.address}:{cports['rest']}"
    # ready: the segment store's health (ZooKeeper, cache, its segment containers on the bookies), then the
    # controller's (gRPC server, event processors on their system streams, cluster listener)
    stage4 = Stage(start=["controller"], wait=[
        {"kind": "http", "node": "segmentstore", "url": f"http://{meta.address}:{sports['rest']}/v1/health/readiness",
         "text": "true"},
        {"kind": "http", "node": "controller", "url": f"{base}/v1/health/readiness", "text": "true"}])
    pl.stages = [stage1, stage2, stage3, stage4]
    pl.endpoints = {"pravega": {"controllerUri": f"tcp://{meta.address}:{cports['rpc']}", "restUri": base,
                                "segmentStoreUri": f"tcp://{meta.address}:{sports['service']}",
                                "clusterName": spravega.CLUSTER, "containerCount": spravega.CONTAINERS,
                                "zookeeper": zk}}


SYSTEMS = ("kafka", "pulsar", "pravega")


def build(system: str, level: str, tuning: str, placement: Placement, cfg: dict, durability,
          faults: bool = False, conf_dir: Path | None = None) -> ClusterPlan:
    """The plan of one cluster. conf_dir: Pulsar's shipped conf/ (its templates) on this machine."""
    if system not in SYSTEMS:
        raise SystemsError(f"unknown system {system!r} (known: {', '.join(SYSTEMS)})")
    try:
        durability.level(system, level)
        durability.profile(system, tuning)
    except dur.DurabilityError as e:
        raise SystemsError(str(e)) from None
    ss = dur.server_settings(system, level, tuning, durability)
    pl = ClusterPlan(system, level, tuning, placement, jvm_extra_opts=jvm_extra_opts())
    if system == "kafka":
        plan_kafka(pl, cfg, ss)
    elif system == "pulsar":
        if conf_dir is None:
            from . import dist
            conf_dir = dist.require_dist("pulsar") / "conf"
        plan_pulsar(pl, cfg, ss, conf_dir, faults)
    else:
        plan_pravega(pl, cfg, ss)
    for n in pl.nodes:
        # RocksDB's JNI loader (bookies, Pravega's segment store) copies its 13 MB library into the system temp
        # directory and removes it only on a clean JVM exit: every kill -9 (a fault run, a timed-out stop) left one
        # in /tmp. In the node's directory it goes with the node (proc.start_process clears a stale copy).
        tmp = posixpath.join(n.dir, "tmp")
        n.env = {"ROCKSDB_SHAREDLIB_DIR": tmp, **n.env}
        # The same for everything else a JVM extracts or caches there (BookKeeper's libnative-io.so in a
        # /tmp/native<N> directory, Vert.x's vertx-cache-<uuid>): the JVM's own temp directory is the node's. And no
        # /tmp/hsperfdata_<user>/<pid> file: a killed JVM leaves it, owned by the node's user, which on a lab host is
        # a login user the lab removes (nothing here reads the JVM's perf data).
        n.cmd, n.env = _with_jvm_options(n.cmd, n.env, n.host.java, jvm_flags(tmp, pl.jvm_extra_opts))
    if pl.jvm_extra_opts:  # the one-off commands (kafka-storage format, initialize-cluster-metadata, ...) are JVMs too
        for st in pl.stages:
            for o in st.once:
                o.cmd, o.env = _with_jvm_options(o.cmd, o.env, o.host.java, pl.jvm_extra_opts)
    if placement.local and cds.directory() is not None:  # env/test's class-data sharing archives (systems/cds.py)
        for cmd_of in [*pl.nodes, *(o for st in pl.stages for o in st.once)]:
            if cmd_of.cmd and cmd_of.cmd[0] == cmd_of.host.java:
                cmd_of.cmd = [cmd_of.cmd[0], *cds.options(cmd_of.cmd, cmd_of.name), *cmd_of.cmd[1:]]
    return pl


# conf/pulsar_env.sh's default of PULSAR_EXTRA_OPTS, kept when the launcher sets the variable
PULSAR_EXTRA_OPTS = ("-Dpulsar.allocator.exit_on_oom=true", "-Dio.netty.recycler.maxCapacityPerThread=4096")


# Extra options for every JVM of a cluster (nodes and one-off commands, on either transport) and of the runner
# (runner/bin/omb-run here, testbeds/runner.py on client hosts): env/test sets -XX:TieredStopAtLevel=1 (C1 only) for
# every section, which cuts the CPU of a node's start by a third to a half on a 2-core machine whose checks are about
# function and low fixed rates, not peak speed (docs/env-test.md).
# Unset everywhere else. Whatever it holds is recorded in each cluster.json (jvmExtraOpts) and each result.
JVM_EXTRA_ENV = "STREAMBENCH_JVM_EXTRA_OPTS"


def jvm_extra_opts() -> list[str]:
    """The options of STREAMBENCH_JVM_EXTRA_OPTS (split as a shell would); only -X... and -D... options."""
    try:
        opts = shlex.split(os.environ.get(JVM_EXTRA_ENV, ""))
    except ValueError as e:
        raise SystemsError(f"{JVM_EXTRA_ENV}: {e}") from None
    bad = [o for o in opts if not o.startswith(("-X", "-D"))]
    if bad:
        raise SystemsError(f"{JVM_EXTRA_ENV}: {bad[0]!r} is not a JVM option (-X... or -D...)")
    return opts


def jvm_flags(tmp: str, extra: list[str]) -> list[str]:
    """The options every node's JVM gets: its temp directory, no hsperfdata file in /tmp, and the extra options of
    STREAMBENCH_JVM_EXTRA_OPTS."""
    return [f"-Djava.io.tmpdir={tmp}", "-XX:-UsePerfData", *extra]


def _with_jvm_options(cmd: list[str], env: dict[str, str], java: str,
                      opts: list[str]) -> tuple[list[str], dict[str, str]]:
    """A JVM launch (a node or a one-off command) with `opts` added: right after `java` when it runs java itself;
    else it is Pulsar's bin/pulsar, through PULSAR_EXTRA_OPTS (its bookies' BOOKIE_EXTRA_OPTS default,
    conf/bkenv.sh, includes it), with the script's own default kept."""
    if cmd and cmd[0] == java:
        return [cmd[0], *opts, *cmd[1:]], env
    return cmd, {**env, "PULSAR_EXTRA_OPTS": " ".join([*PULSAR_EXTRA_OPTS, *opts])}
