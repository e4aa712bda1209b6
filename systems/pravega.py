"""Pravega: ZooKeeper, 3 BookKeeper bookies, 1 controller, 1 segment store; each its own JVM from the jars of
systems/pravega/pom.xml (dist libs/), with the segment store's durable log (tier-1) on the bookies and its long-term
storage (tier-2) on FILESYSTEM on the segment store's host: the configuration and its read-back verification;
systems/plan.py places and starts the nodes. Every process listens on its host's address only (on this machine
127.0.0.1): the controller's gRPC server and the bookies' HTTP servers through the classes of systems/pravega/patch,
which bind the address of a system property.
"""
from __future__ import annotations

import base64
import re
import time
from pathlib import Path
from typing import Any

from . import durability as dur
from .pulsar import _get_json, _s, read_bookie_settings
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
    loop = host == "127.0.0.1"
    clash = sorted(set(storage) & set(ss["bookie"]))
    if clash:
        raise SystemsError(f"config systems.pravega.bookie_storage: {', '.join(clash)} is a durability setting "
                           "(systems/durability.yaml); it cannot be overridden here")
    return {
        "bookiePort": ports["bookie"], "advertisedAddress": host, **({"listeningInterface": "lo"} if loop else {}),
        "allowLoopback": loop,
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


def _bytes(size: str) -> int:
    return int(size[:-1]) << (20 if size[-1] == "m" else 30)


def _logged_config(text: str, header: str) -> dict[str, str]:
    """key = value lines that a Pravega process logged (text) after `header` at start-up (its effective
    configuration)."""
    out: dict[str, str] = {}
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
    bk = next(f"http://{n.get('host') or '127.0.0.1'}:{n['ports']['http']}" for n in run.nodes if n["role"] == "bookie")
    listed = _get_json(f"{bk}/api/v1/bookie/list_bookies/?type=rw&print_hostnames=false") or {}
    eff["registeredBookies"] = sorted(listed)
    if len(listed) < ss["bookkeeper"]["ensemble"]:
        mismatches.append(f"{len(listed)} writable bookies registered, ensemble needs {ss['bookkeeper']['ensemble']}")

    # the node's log on its host (cluster.json's path; testbeds/cluster.py reads a remote host's over ssh)
    read = getattr(run, "read_log", None) or (lambda node: Path(node["log"]).read_text(errors="replace"))
    try:
        text = read(nodes["segmentstore"])
    except OSError:
        text = ""
    logged = _logged_config(text, "Segment store configuration:")
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
