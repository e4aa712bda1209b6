"""Pravega: ZooKeeper, 3 BookKeeper bookies, 1 controller, 1 segment store; each its own JVM from the jars of
systems/pravega/pom.xml (dist libs/), with the segment store's durable log (tier-1) on the bookies and its long-term
storage (tier-2) on FILESYSTEM under the run directory. Everything listens on 127.0.0.1 (the controller's gRPC server and
the bookies' HTTP servers through the classes of systems/pravega/patch, see systems/pravega/README.md).
"""
from __future__ import annotations

import base64
import re
import socket
import struct
import time
from pathlib import Path
from typing import Any

from . import durability as dur
from .pulsar import _bookie_writable, _get_json, _s, http, read_bookie_settings, zk_ok
from .util import SystemsError

BOOKIES = 3
CLUSTER = "pravega-cluster"
LEDGERS = f"/pravega/{CLUSTER}/bookkeeper/ledgers"
CONTAINERS = 4
MAIN = {
    "zookeeper": "org.apache.zookeeper.server.ZooKeeperServerMain",
    "bookie": "org.apache.bookkeeper.server.Main",
    "bookie-shell": "org.apache.bookkeeper.bookie.BookieShell",
    "controller": "io.pravega.controller.server.Main",
    "segmentstore": "io.pravega.segmentstore.server.host.ServiceStarter",
}
LOGBACK = """<configuration>
  <appender name="console" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{ISO8601} %-5level [%thread] %logger{36}: %msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.zookeeper" level="WARN"/>
  <logger name="org.apache.curator" level="WARN"/>
  <logger name="io.netty" level="WARN"/>
  <root level="INFO"><appender-ref ref="console"/></root>
</configuration>
"""


def _props(d: dict[str, Any]) -> str:
    return "".join(f"{k}={_s(v)}\n" for k, v in d.items())


def zookeeper_conf(data: Path, datalog: Path, port: int, host: str = "127.0.0.1") -> dict[str, Any]:
    return {"dataDir": data, "dataLogDir": datalog, "clientPort": port, "clientPortAddress": host,
            "tickTime": 2000, "initLimit": 10, "syncLimit": 5, "maxClientCnxns": 0,
            "admin.enableServer": False, "4lw.commands.whitelist": "ruok,srvr,conf",
            "autopurge.snapRetainCount": 3, "autopurge.purgeInterval": 1}


def bookie_conf(ports: dict[str, int], journal: Path, ledgers: Path, zk: str, ss: dict[str, Any],
                storage: dict[str, Any] | None = None, host: str = "127.0.0.1") -> dict[str, Any]:
    """A bookie's bookkeeper.conf: loopback, its own journal and ledger directories, the level's journal settings
    (ss = durability.server_settings("pravega", ...)) and the disk-space settings of config systems.pravega."""
    storage = dict(storage or {})
    clash = sorted(set(storage) & set(ss["bookie"]))
    if clash:
        raise SystemsError(f"config systems.pravega.bookie_storage: {', '.join(clash)} is a durability setting "
                           "(systems/durability.yaml); it cannot be overridden here")
    return {
        "bookiePort": ports["bookie"], "advertisedAddress": host, "listeningInterface": "lo", "allowLoopback": True,
        "useHostNameAsBookieID": False, "journalDirectories": journal, "ledgerDirectories": ledgers,
        "metadataServiceUri": f"zk://{zk}{LEDGERS}", "zkServers": zk, "zkLedgersRootPath": LEDGERS,
        "httpServerEnabled": True, "httpServerPort": ports["http"],
        "httpServerClass": "org.streambench.pravega.LoopbackHttpServer",
        "enableStatistics": False, "autoRecoveryDaemonEnabled": False,
        **storage,
        **ss["bookie"],
    }


def controller_props(zk: str, rpc: int, rest: int, host: str = "127.0.0.1") -> dict[str, Any]:
    return {
        "controller.zk.connect.uri": zk,
        "controller.service.rpc.listener.port": rpc,
        "controller.service.rpc.published.host.nameOrIp": host,
        "controller.service.rpc.published.port": rpc,
        "controller.service.rest.listener.host.ip": host,
        "controller.service.rest.listener.port": rest,
        "controller.container.count": CONTAINERS,
        "controller.cluster.name": CLUSTER,
        # how often the health service re-evaluates (default 10 s): `up` waits on /v1/health/readiness
        "controller.health.frequency.seconds": 2,
        "metrics.statistics.enable": False,
        "streambench.grpc.bindAddress": host,
    }


def segmentstore_props(zk: str, port: int, rest: int, controller_uri: str, tier2: Path, cache_bytes: int,
                       ss: dict[str, Any], host: str = "127.0.0.1") -> dict[str, Any]:
    return {
        "pravegaservice.clusterName": CLUSTER,
        "pravegaservice.container.count": CONTAINERS,
        "pravegaservice.zk.connect.uri": zk,
        "pravegaservice.service.listener.host.nameOrIp": host,
        "pravegaservice.service.listener.port": port,
        "pravegaservice.service.published.host.nameOrIp": host,
        "pravegaservice.service.published.port": port,
        "pravegaservice.rest.listener.enable": True,
        "pravegaservice.rest.listener.host": host,
        "pravegaservice.rest.listener.port": rest,
        "pravegaservice.admin.gateway.enable": False,
        "pravegaservice.health.interval.seconds": 2,
        "pravegaservice.dataLog.impl.name": "BOOKKEEPER",
        "pravegaservice.storage.impl.name": "FILESYSTEM",
        "pravegaservice.storage.layout": "CHUNKED_STORAGE",
        "pravegaservice.cache.size.max": cache_bytes,
        "filesystem.root": tier2,
        "bookkeeper.zk.connect.uri": zk,
        "bookkeeper.ledger.path": LEDGERS,
        "autoScale.controller.connect.uri": controller_uri,
        "metrics.statistics.enable": False,
        **ss["segmentstore"],
    }


def _java(run, nd: Path, heap: str, direct: str | None, main: str, args: list[str], props: dict[str, Any],
          patch: bool = False) -> list[str]:
    pc = run.cfg["pravega"]
    (nd / "logs").mkdir(parents=True, exist_ok=True)
    cp = (f"{run.dist / 'patch'}:" if patch else "") + f"{run.dist / 'libs'}/*"
    cmd = [run.java, f"-Xms{heap}", f"-Xmx{heap}", *( [f"-XX:MaxDirectMemorySize={direct}"] if direct else []),
           *pc["gc_opts"], f"-Xlog:gc*:file={nd / 'logs' / 'gc.log'}:time,uptime:filecount=2,filesize=10M",
           "-Djava.net.preferIPv4Stack=true", f"-Dlogback.configurationFile={run.rundir / 'nodes' / 'logback.xml'}",
           "-Dzookeeper.jmx.log4j.disable=true",
           *[f"-D{k}={_s(v)}" for k, v in props.items()], "-cp", cp, main, *args]
    return cmd


def _zk_call(sock: socket.socket, payload: bytes) -> bytes:
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            raise OSError("ZooKeeper closed the connection")
        head += chunk
    (n,) = struct.unpack(">i", head)
    body = b""
    while len(body) < n:
        chunk = sock.recv(n - len(body))
        if not chunk:
            raise OSError("ZooKeeper closed the connection")
        body += chunk
    return body


def _zstr(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def zk_create_path(port: int, path: str, host: str = "127.0.0.1") -> None:
    """Create path and its parents as empty persistent znodes (open ACL), like `zkCli create`, through the
    ZooKeeper wire protocol: the bookies' metadata root must exist before `bookkeeper shell initnewcluster`."""
    with socket.create_connection((host, port), timeout=10) as s:
        _zk_call(s, struct.pack(">iqiq", 0, 0, 10000, 0) + _zstr(b"\0" * 16))
        parts = [p for p in path.split("/") if p]
        for i in range(1, len(parts) + 1):
            node = ("/" + "/".join(parts[:i])).encode()
            acl = struct.pack(">i", 1) + struct.pack(">i", 31) + _zstr(b"world") + _zstr(b"anyone")
            req = struct.pack(">ii", i, 1) + _zstr(node) + _zstr(b"") + acl + struct.pack(">i", 0)
            xid, _zxid, err = struct.unpack(">iqi", _zk_call(s, req)[:16])
            if err not in (0, -110):  # -110: the node exists
                raise SystemsError(f"pravega: ZooKeeper 127.0.0.1:{port}: creating {node.decode()} failed (error {err})")
        _zk_call(s, struct.pack(">ii", len(parts) + 1, -11))


def _bookie_shell(run, name: str, conf: Path, args: list[str], log: Path, timeout: float = 120) -> None:
    cmd = _java(run, run.rundir / "nodes", "128m", None, MAIN["bookie-shell"], ["-conf", str(conf), *args], {})
    p = run.spawn(name, cmd, cwd=run.rundir / "nodes", log=log)
    rc = run.wait_exit(p, name, timeout=timeout)
    if rc != 0:
        raise SystemsError(f"pravega: bookkeeper shell {' '.join(args)} failed (exit {rc}); last lines of {log}:\n"
                           f"{run.tail(log)}")


def start(run) -> None:
    pc = run.cfg["pravega"]
    ss = dur.server_settings("pravega", run.level, run.tuning, run.durability)
    (run.rundir / "nodes").mkdir(parents=True, exist_ok=True)
    (run.rundir / "nodes" / "logback.xml").write_text(LOGBACK)
    (zk_port,) = run.ports("zookeeper", ["client"])
    zk = f"127.0.0.1:{zk_port}"
    rpc, rest = run.ports("controller", ["rpc", "rest"])
    ss_port, ss_rest = run.ports("segmentstore", ["service", "rest"])

    # --- ZooKeeper
    nd = run.node_dir("zookeeper")
    (nd / "data").mkdir(parents=True)
    (nd / "datalog").mkdir()
    (nd / "logs").mkdir()
    zconf = nd / "zoo.cfg"
    zconf.write_text(_props(zookeeper_conf(nd / "data", nd / "datalog", zk_port)))
    run.add_node(name="zookeeper", role="metadata-store", id=0, ports={"client": zk_port},
                 data_dirs=[nd / "data", nd / "datalog"], conf=[zconf])
    run.start_node("zookeeper", _java(run, nd, pc["zookeeper_heap"], None, MAIN["zookeeper"], [str(zconf)], {}),
                   cwd=nd, stop_stage=3)
    run.wait_until("zookeeper", f"no 'imok' on port {zk_port}", lambda: zk_ok(zk_port))

    # --- bookies (their BookKeeper cluster metadata first: bookkeeper shell initnewcluster)
    bookie_http = []
    confs = []
    for i in range(BOOKIES):
        name = f"bookie-{i + 1}"
        nd = run.node_dir(name)
        bport, hport = run.ports(name, ["bookie", "http"])
        bookie_http.append(hport)
        (nd / "journal").mkdir(parents=True)
        (nd / "ledgers").mkdir()
        (nd / "logs").mkdir()
        bconf = nd / "bookkeeper.conf"
        bconf.write_text(_props(bookie_conf({"bookie": bport, "http": hport}, nd / "journal", nd / "ledgers", zk,
                                            ss, storage=pc.get("bookie_storage"))))
        confs.append(bconf)
        run.add_node(name=name, role="bookie", id=i + 1, ports={"bookie": bport, "http": hport},
                     data_dirs=[nd / "journal", nd / "ledgers"], conf=[bconf])
    def created() -> bool:  # `ruok` answers before the server takes sessions: retry until it does
        try:
            zk_create_path(zk_port, LEDGERS.rsplit("/", 1)[0])
            return True
        except OSError:
            return False
    run.wait_until("zookeeper", f"cannot create {LEDGERS.rsplit('/', 1)[0]}", created, interval=0.5)
    _bookie_shell(run, "bookkeeper-initnewcluster", confs[0], ["initnewcluster"],
                  run.rundir / "nodes" / "bookkeeper-initnewcluster.log")
    for i, bconf in enumerate(confs):
        name = f"bookie-{i + 1}"
        nd = run.node_dir(name)
        run.start_node(name, _java(run, nd, pc["bookie_heap"], pc["bookie_direct"], MAIN["bookie"],
                                   ["--conf", str(bconf)], {}, patch=True), cwd=nd, stop_stage=2)

    for i, hport in enumerate(bookie_http):
        run.wait_until(f"bookie-{i + 1}", f"bookie HTTP {hport} not answering as a writable bookie",
                       lambda h=hport: _bookie_writable(h), interval=0.5)

    # --- segment store
    name = "segmentstore"
    nd = run.node_dir(name)
    (nd / "tier2").mkdir(parents=True)
    (nd / "logs").mkdir()
    sprops = segmentstore_props(zk, ss_port, ss_rest, f"tcp://127.0.0.1:{rpc}", nd / "tier2",
                                _bytes(pc["segmentstore_cache"]), ss)
    sconf = nd / "config.properties"
    sconf.write_text(_props(sprops))
    run.add_node(name=name, role="segmentstore", id=1, ports={"service": ss_port, "rest": ss_rest},
                 data_dirs=[nd / "tier2"], conf=[sconf])
    run.start_node(name, _java(run, nd, pc["segmentstore_heap"], pc["segmentstore_direct"], MAIN["segmentstore"], [],
                               {"pravega.configurationFile": sconf}), cwd=nd, stop_stage=1)

    # --- controller, once the segment store listens: it assigns the segment containers to the segment store and
    # creates its own system streams on it; started before, it backs off between retries (30 s slower to ready)
    run.wait_port("segmentstore", ss_port)
    name = "controller"
    nd = run.node_dir(name)
    (nd / "logs").mkdir(parents=True)
    cprops = controller_props(zk, rpc, rest)
    cconf = nd / "controller.properties"
    cconf.write_text(_props(cprops))
    run.add_node(name=name, role="controller", id=1, ports={"rpc": rpc, "rest": rest}, data_dirs=[], conf=[cconf])
    run.start_node(name, _java(run, nd, pc["controller_heap"], pc["controller_direct"], MAIN["controller"], [],
                               cprops, patch=True), cwd=nd, stop_stage=0)

    base = f"http://127.0.0.1:{rest}"
    # ready = the segment store's health says ready (ZooKeeper, cache, its segment containers on the bookies), and
    # so does the controller's (gRPC server, event processors on their system streams, cluster listener)
    run.wait_until("segmentstore", "REST /v1/health/readiness not true",
                   lambda: _ready(f"http://127.0.0.1:{ss_rest}"), interval=0.5)
    run.wait_until("controller", "REST /v1/health/readiness not true", lambda: _ready(base), interval=0.5)
    run.endpoints = {"pravega": {"controllerUri": f"tcp://127.0.0.1:{rpc}", "restUri": base,
                                 "segmentStoreUri": f"tcp://127.0.0.1:{ss_port}", "clusterName": CLUSTER,
                                 "containerCount": CONTAINERS, "zookeeper": zk}}


def _bytes(size: str) -> int:
    return int(size[:-1]) << (20 if size[-1] == "m" else 30)


def _ready(base: str) -> bool:
    """A Pravega process's REST health endpoint: GET /v1/health/readiness answers true or false."""
    code, text = http("GET", f"{base}/v1/health/readiness", timeout=3)
    return code == 200 and text.strip() == "true"


def _logged_config(log: Path, header: str) -> dict[str, str]:
    """key = value lines that a Pravega process logs after `header` at start-up (its effective configuration)."""
    out: dict[str, str] = {}
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return out
    i = text.rfind(header)
    if i < 0:
        return out
    lines = text[text.rfind("\n", 0, i) + 1:].splitlines()
    tag = lines[0].split(header)[0].split("]", 1)[-1].strip()  # the logger, e.g. "i.p.s.server.host.ServiceStarter:"
    for line in lines[1:]:
        if tag not in line:
            continue  # another thread's line, or the continuation of a multi-line value
        m = re.search(re.escape(tag) + r" (\S+) = (.*)$", line)
        if not m:
            break  # the logger's first line after the configuration
        out[m.group(1)] = m.group(2).strip()
    return out


def verify(run, create: bool = True, timeout: float = 60) -> dict[str, Any]:
    """Read back: each bookie's server configuration (its HTTP /api/v1/config/server_config), the bookies registered
    in ZooKeeper (/api/v1/bookie/list_bookies), the configuration the segment store logged at start-up, and the
    ensemble/write/ack quorums in the metadata of every ledger, all written by the segment store's durable logs
    (/api/v1/ledger/list, /api/v1/ledger/metadata). Fail on any difference."""
    ss = dur.server_settings("pravega", run.level, run.tuning, run.durability)
    nodes = {n["name"]: n for n in run.nodes}
    eff: dict[str, Any] = {}
    eff["bookies"], mismatches = read_bookie_settings(run.nodes, {k: _s(v) for k, v in ss["bookie"].items()})
    bk = next(f"http://127.0.0.1:{n['ports']['http']}" for n in run.nodes if n["role"] == "bookie")
    listed = _get_json(f"{bk}/api/v1/bookie/list_bookies/?type=rw&print_hostnames=false") or {}
    eff["registeredBookies"] = sorted(listed)
    if len(listed) < ss["bookkeeper"]["ensemble"]:
        mismatches.append(f"{len(listed)} writable bookies registered, ensemble needs {ss['bookkeeper']['ensemble']}")

    logged = _logged_config(Path(nodes["segmentstore"]["log"]), "Segment store configuration:")
    want_s = {k: _s(v) for k, v in ss["segmentstore"].items()}
    want_s.update({"pravegaservice.dataLog.impl.name": "BOOKKEEPER", "pravegaservice.storage.impl.name": "FILESYSTEM"})
    eff["segmentstore"] = {k: logged.get(k) for k in want_s}
    for k, v in want_s.items():
        if logged.get(k) != v:
            mismatches.append(f"segmentstore {k}={logged.get(k)} (want {v})")

    want_q = {"ensemble": ss["bookkeeper"]["ensemble"], "writeQuorum": ss["bookkeeper"]["writeQuorum"],
              "ackQuorum": ss["bookkeeper"]["ackQuorum"]}
    deadline = time.monotonic() + timeout
    while True:  # the segment store opens one ledger per segment container's durable log as it starts
        ids = sorted(int(x) for x in (_get_json(f"{bk}/api/v1/ledger/list/") or {}))
        if ids:
            break
        if time.monotonic() > deadline:
            raise SystemsError(f"pravega: no ledger of the segment store's durable log after {timeout} s")
        time.sleep(0.5)
    eff["ledgers"] = {}
    for lid in ids:
        meta = (_get_json(f"{bk}/api/v1/ledger/metadata/?ledger_id={lid}") or {}).get(str(lid)) or {}
        app = base64.b64decode((meta.get("customMetadata") or {}).get("application", "")).decode(errors="replace")
        q = {"ensemble": meta.get("ensembleSize"), "writeQuorum": meta.get("writeQuorumSize"),
             "ackQuorum": meta.get("ackQuorumSize")}
        eff["ledgers"][str(lid)] = q
        if app != "Pravega":
            mismatches.append(f"ledger {lid} was not written by the segment store (application={app!r})")
        for k, v in want_q.items():
            if q[k] != v:
                mismatches.append(f"ledger {lid} {k}={q[k]} (want {v})")
    if mismatches:
        raise SystemsError(f"pravega: effective settings differ from level {run.level}: " + "; ".join(mismatches))
    return eff
