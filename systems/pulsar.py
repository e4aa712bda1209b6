"""Apache Pulsar as ZooKeeper (metadata store) + 3 bookies + 1 broker, each a process of the official
distribution (`bin/pulsar zookeeper|bookie|broker` with its own conf): the configuration and its read-back
verification; systems/plan.py places and starts the nodes."""
from __future__ import annotations

import json
import re
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from . import durability as dur
from .ready import bookie_writable, http  # noqa: F401  (http: workloads/faultrun.py)
from .util import SystemsError

BOOKIES = 3
VERIFY_TOPIC = "__streambench_verify"
NAMESPACE = "public/default"


def render_conf(template: str, overrides: dict[str, Any]) -> str:
    """The shipped conf with each overridden key's line replaced (first occurrence, commented-out or not)
    and keys the template lacks appended; other lines stay as shipped."""
    vals = {k: (str(v).lower() if isinstance(v, bool) else ("" if v is None else str(v)))
            for k, v in overrides.items()}
    done = set()
    out = []
    for line in template.splitlines():
        m = re.match(r"^\s*#?\s*([A-Za-z0-9_.]+)\s*=", line)
        if m and m.group(1) in vals:
            k = m.group(1)
            is_comment = line.lstrip().startswith("#")
            if k in done:
                if not is_comment:
                    continue  # a later duplicate of a key we already set
                out.append(line)
                continue
            if is_comment and not _commented_assignment(line):
                out.append(line)
                continue
            out.append(f"{k}={vals[k]}")
            done.add(k)
        else:
            out.append(line)
    missing = [k for k in vals if k not in done]
    if missing:
        out.append("")
        out.append("# --- set by systems/pulsar.py")
        out.extend(f"{k}={vals[k]}" for k in missing)
    return "\n".join(out) + "\n"


def _commented_assignment(line: str) -> bool:
    # "#key=value" (a commented default), not prose like "# e.g. key=value in sentences"
    return re.match(r"^\s*#\s*[A-Za-z0-9_.]+=\S*\s*$", line) is not None


def parse_conf(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, v = line.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _get_json(url: str) -> Any:
    code, text = http("GET", url)
    if code != 200:
        raise SystemsError(f"pulsar: GET {url} -> {code}: {text[:300]}")
    return json.loads(text)


def _bookie_storage(storage: dict[str, Any], level_bookie: dict[str, Any]) -> dict[str, Any]:
    """The disk-space settings of config systems.pulsar.bookie_storage; durability stays durability.yaml's alone."""
    clash = sorted(set(storage) & set(level_bookie))
    if clash:
        raise SystemsError(f"config systems.pulsar.bookie_storage: {', '.join(clash)} is a durability setting "
                           "(systems/durability.yaml); it cannot be overridden here")
    return dict(storage)


def zookeeper_overrides(data: Path, datalog: Path, port: int, host: str = "127.0.0.1") -> dict[str, Any]:
    """The keys of zookeeper.conf we set (local clusters and remote hosts, testbeds/cluster.py)."""
    return {
        "dataDir": data, "dataLogDir": datalog, "clientPort": port,
        "clientPortAddress": host, "admin.enableServer": False,
        # the shipped Prometheus provider opens port 8000 on all interfaces
        "metricsProvider.className": "org.apache.zookeeper.metrics.impl.DefaultMetricsProvider",
        "metricsProvider.httpPort": None, "metricsProvider.exportJvmInfo": None,
    }


def bookie_overrides(ports: dict[str, int], journal: Path, ledgers: Path, zk: str, ss: dict[str, Any],
                     host: str = "127.0.0.1", storage: dict[str, Any] | None = None) -> dict[str, Any]:
    """The keys of a bookie's bookkeeper.conf we set: ports {bookie, http, metrics}, the ZooKeeper host:port,
    the level's bookie settings (ss = durability.server_settings). On loopback the bookie listens on `lo`;
    on a real address it listens on every interface of its host and advertises `host`."""
    loop = host == "127.0.0.1"
    return {
        "bookiePort": ports["bookie"], "advertisedAddress": host,
        **({"listeningInterface": "lo"} if loop else {}),
        "allowLoopback": loop, "useHostNameAsBookieID": False,
        "journalDirectory": journal, "ledgerDirectories": ledgers,
        "metadataServiceUri": f"zk://{zk}/ledgers", "zkServers": zk,
        "httpServerEnabled": True, "httpServerPort": ports["http"], "httpServerHost": host,
        "prometheusStatsHttpEnable": False, "prometheusStatsHttpAddress": host,
        "prometheusStatsHttpPort": ports["metrics"],
        **_bookie_storage(storage or {}, ss["bookie"]),
        **ss["bookie"],
    }


def broker_overrides(zk_url: str, cluster_name: str, svc: int, web: int, ss: dict[str, Any],
                     host: str = "127.0.0.1") -> dict[str, Any]:
    """The keys of broker.conf we set, the level's broker settings included."""
    return {
        "metadataStoreUrl": zk_url, "configurationMetadataStoreUrl": zk_url, "clusterName": cluster_name,
        "brokerServicePort": svc, "webServicePort": web, "bindAddress": host,
        "advertisedAddress": host, "functionsWorkerEnabled": False, "webSocketServiceEnabled": False,
        "allowAutoTopicCreation": False, "brokerShutdownTimeoutMs": 5000,
        **ss["broker"],
    }


def read_bookie_settings(nodes: list[dict], want: dict[str, str]) -> tuple[dict[str, dict], list[str]]:
    """Each bookie's effective values of the keys in `want` (strings, `_s`), read back from its HTTP admin
    (/api/v1/config/server_config); and one mismatch line per key that differs. Pulsar's and Pravega's bookies."""
    got_all: dict[str, dict] = {}
    mismatches: list[str] = []
    for n in nodes:
        if n["role"] != "bookie":
            continue
        cfg = _get_json(f"http://{n.get('host') or '127.0.0.1'}:{n['ports']['http']}/api/v1/config/server_config")
        got = {k: (None if cfg.get(k) is None else _s(cfg.get(k))) for k in want}
        got_all[n["name"]] = got
        mismatches += [f"{n['name']} {k}={got[k]} (want {v})" for k, v in want.items() if got[k] != v]
    return got_all, mismatches


def _s(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _ledger_quorums(meta: Any) -> dict[str, int] | None:
    """ensemble/write/ack quorum from the ledger metadata that internalStats?metadata=true returns."""
    if meta is None:
        return None
    if isinstance(meta, dict):
        src = meta
        get = lambda k: src.get(k)  # noqa: E731
        return {"ensemble": get("ensembleSize"), "writeQuorum": get("writeQuorumSize"),
                "ackQuorum": get("ackQuorumSize")}
    text = str(meta)
    out = {}
    for key, name in (("ensemble", "ensembleSize"), ("writeQuorum", "writeQuorumSize"),
                      ("ackQuorum", "ackQuorumSize")):
        m = re.search(name + r"\W+(\d+)", text)
        out[key] = int(m.group(1)) if m else None
    return out


def verify(run, create: bool = True, timeout: float = 60) -> dict[str, Any]:
    """Read back: namespace persistence (admin REST), the broker's runtime configuration, each bookie's
    server configuration (bookie HTTP /api/v1/config/server_config), the registered bookies, and the
    quorums in the metadata of a real ledger (of topic __streambench_verify). Fail on any difference."""
    ss = dur.server_settings("pulsar", run.level, run.tuning, run.durability)
    base = run.endpoints["pulsar"]["httpUrl"]
    mismatches = []
    eff: dict[str, Any] = {}

    persist = _get_json(f"{base}/admin/v2/namespaces/{NAMESPACE}/persistence")
    want_p = ss["persistence"]
    got_p = {"ensemble": (persist or {}).get("bookkeeperEnsemble"),
             "writeQuorum": (persist or {}).get("bookkeeperWriteQuorum"),
             "ackQuorum": (persist or {}).get("bookkeeperAckQuorum")}
    eff["namespacePersistence"] = {"namespace": NAMESPACE, **got_p}
    for k, v in want_p.items():
        if got_p[k] != v:
            mismatches.append(f"namespace {NAMESPACE} persistence {k}={got_p[k]} (want {v})")

    rt = _get_json(f"{base}/admin/v2/brokers/configuration/runtime")
    want_b = {k: _s(v) for k, v in ss["broker"].items()}
    want_b.update({"allowAutoTopicCreation": "false", "functionsWorkerEnabled": "false"})
    got_b = {k: rt.get(k) for k in want_b}
    eff["broker"] = got_b
    for k, v in want_b.items():
        if got_b[k] != v:
            mismatches.append(f"broker {k}={got_b[k]} (want {v})")

    want_k = {k: _s(v) for k, v in ss["bookie"].items()}
    if getattr(run, "faults", False):  # a fault cluster's bookie settings are read back too
        want_k.update({k: _s(v) for k, v in (run.cfg["pulsar"].get("fault_bookie") or {}).items()})
    eff["bookies"], bad = read_bookie_settings(run.nodes, want_k)
    mismatches += bad
    bookies = _get_json(f"{base}/admin/v2/bookies/all")
    registered = [b.get("bookieId") for b in (bookies or {}).get("bookies", [])]
    eff["registeredBookies"] = registered
    if len(registered) < want_p["ensemble"]:
        mismatches.append(f"{len(registered)} bookies registered, ensemble needs {want_p['ensemble']}")

    topic = f"{base}/admin/v2/persistent/{NAMESPACE}/{VERIFY_TOPIC}"
    if create:
        code, text = http("PUT", topic)
        if code not in (200, 204, 409):
            raise SystemsError(f"pulsar: creating {VERIFY_TOPIC} failed: {code} {text[:300]}")
    deadline = time.monotonic() + timeout
    quorums = None
    while True:
        code, text = http("GET", f"{topic}/internalStats?metadata=true")
        if code == 200:
            st = json.loads(text)
            ledgers = st.get("ledgers") or []
            if ledgers:
                quorums = _ledger_quorums(ledgers[-1].get("metadata"))
                if quorums and None not in quorums.values():
                    eff["ledger"] = {"topic": f"persistent://{NAMESPACE}/{VERIFY_TOPIC}",
                                     "ledgerId": ledgers[-1].get("ledgerId"), **quorums}
                    break
        elif code == 404 and not create:
            eff["ledger"] = None  # the topic was removed as inactive; nothing to read back
            break
        if time.monotonic() > deadline:
            raise SystemsError(f"pulsar: no ledger metadata for {VERIFY_TOPIC} after {timeout} s "
                               f"(last answer {code}: {text[:200]})")
        time.sleep(0.5)
    if eff.get("ledger"):
        for k, v in want_p.items():
            if eff["ledger"][k] != v:
                mismatches.append(f"ledger {eff['ledger']['ledgerId']} {k}={eff['ledger'][k]} (want {v})")
    if mismatches:
        raise SystemsError(f"pulsar: effective settings differ from level {run.level}: " + "; ".join(mismatches))
    return eff
