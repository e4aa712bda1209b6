"""Apache Pulsar as ZooKeeper (metadata store) + 3 bookies + 1 broker, each a process of the official
distribution (`bin/pulsar zookeeper|bookie|broker` with its own conf), all on 127.0.0.1."""
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


def http(method: str, url: str, body: Any = None, timeout: float = 15) -> tuple[int, str]:
    data = None
    headers = {"Accept": "application/json"}
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as e:
        return 0, str(e)


def _get_json(url: str) -> Any:
    code, text = http("GET", url)
    if code != 200:
        raise SystemsError(f"pulsar: GET {url} -> {code}: {text[:300]}")
    return json.loads(text)


def zk_ok(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"ruok")
            return s.recv(16) == b"imok"
    except OSError:
        return False


def _env(run, nd: Path, mem: str, **kv: str) -> dict[str, str]:
    gc = " ".join(run.cfg["pulsar"]["gc_opts"])
    gclog = f"-Xlog:gc*:file={nd / 'logs' / 'gc.log'}:time,uptime:filecount=2,filesize=10M"
    env = {"PULSAR_MEM": mem, "PULSAR_GC": gc, "PULSAR_GC_LOG": gclog, "PULSAR_LOG_DIR": str(nd / "logs"),
           "BOOKIE_MEM": mem, "BOOKIE_GC": gc, "BOOKIE_GC_LOG": gclog, "BOOKIE_LOG_DIR": str(nd / "logs"),
           "PULSAR_LOG_APPENDER": "RoutingAppender", "PULSAR_ROUTING_APPENDER_DEFAULT": "Console"}
    if run.java != "java":
        env["JAVA_HOME"] = str(Path(run.java).resolve().parent.parent)
    env.update(kv)
    return env


def _bookie_storage(storage: dict[str, Any], level_bookie: dict[str, Any]) -> dict[str, Any]:
    """The disk-space settings of config systems.pulsar.bookie_storage; durability stays durability.yaml's alone."""
    clash = sorted(set(storage) & set(level_bookie))
    if clash:
        raise SystemsError(f"config systems.pulsar.bookie_storage: {', '.join(clash)} is a durability setting "
                           "(systems/durability.yaml); it cannot be overridden here")
    return dict(storage)


def _storage_of(run) -> dict[str, Any]:
    """bookie_storage, plus fault_bookie for a cluster started for fault runs (`up --faults`)."""
    pc = run.cfg["pulsar"]
    out = dict(pc.get("bookie_storage") or {})
    if getattr(run, "faults", False):
        out.update(pc.get("fault_bookie") or {})
    return out


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


def set_persistence(base: str, ss: dict[str, Any]) -> None:
    """The level's persistence policy on the default namespace (the broker defaults carry it too)."""
    p = ss["persistence"]
    code, text = http("POST", f"{base}/admin/v2/namespaces/{NAMESPACE}/persistence",
                      {"bookkeeperEnsemble": p["ensemble"], "bookkeeperWriteQuorum": p["writeQuorum"],
                       "bookkeeperAckQuorum": p["ackQuorum"], "managedLedgerMaxMarkDeleteRate": 0.0})
    if code not in (200, 204):
        raise SystemsError(f"pulsar: setting persistence on {NAMESPACE} failed: {code} {text[:300]}")


def start(run) -> None:
    pc = run.cfg["pulsar"]
    ss = dur.server_settings("pulsar", run.level, run.tuning, run.durability)
    conf_dir = run.dist / "conf"
    pulsar_bin = str(run.dist / "bin" / "pulsar")
    (zk_port,) = run.ports("zookeeper", ["client"])
    web, svc = run.ports("broker-1", ["http", "service"])
    zk_url = f"zk:127.0.0.1:{zk_port}"

    # --- ZooKeeper (the metadata store)
    nd = run.node_dir("zookeeper")
    (nd / "data").mkdir(parents=True)
    (nd / "datalog").mkdir()
    zconf = nd / "zookeeper.conf"
    zconf.write_text(render_conf((conf_dir / "zookeeper.conf").read_text(),
                                 zookeeper_overrides(nd / "data", nd / "datalog", zk_port)))
    run.add_node(name="zookeeper", role="metadata-store", id=0, ports={"client": zk_port},
                 data_dirs=[nd / "data", nd / "datalog"], conf=[zconf])
    run.start_node("zookeeper", [pulsar_bin, "zookeeper"], cwd=nd, stop_stage=2,
                   env=_env(run, nd, f"-Xms{pc['zookeeper_heap']} -Xmx{pc['zookeeper_heap']}",
                            PULSAR_ZK_CONF=str(zconf)))
    run.wait_until("zookeeper", f"no 'imok' on port {zk_port}", lambda: zk_ok(zk_port))

    # --- cluster metadata (creates /ledgers for BookKeeper, the cluster, public/default)
    init_log = run.rundir / "nodes" / "initialize-cluster-metadata.log"
    p = run.spawn("initialize-cluster-metadata",
                  [pulsar_bin, "initialize-cluster-metadata", "--cluster", pc["cluster_name"],
                   "--metadata-store", zk_url, "--configuration-metadata-store", zk_url,
                   "--web-service-url", f"http://127.0.0.1:{web}",
                   "--broker-service-url", f"pulsar://127.0.0.1:{svc}"],
                  cwd=run.rundir / "nodes", log=init_log, stop_stage=0,
                  env=_env(run, run.rundir / "nodes", "-Xms128m -Xmx256m"))
    rc = run.wait_exit(p, "initialize-cluster-metadata", timeout=120)
    if rc != 0:
        raise SystemsError(f"pulsar: initialize-cluster-metadata failed (exit {rc}); last lines of "
                           f"{init_log}:\n{run.tail(init_log)}")

    # --- bookies
    bk_template = (conf_dir / "bookkeeper.conf").read_text()
    bookie_http = []
    for i in range(BOOKIES):
        name = f"bookie-{i + 1}"
        nd = run.node_dir(name)
        bport, hport, mport = run.ports(name, ["bookie", "http", "metrics"])
        bookie_http.append(hport)
        (nd / "journal").mkdir(parents=True)
        (nd / "ledgers").mkdir()
        bconf = nd / "bookkeeper.conf"
        bconf.write_text(render_conf(bk_template, bookie_overrides(
            {"bookie": bport, "http": hport, "metrics": mport}, nd / "journal", nd / "ledgers",
            f"127.0.0.1:{zk_port}", ss, storage=_storage_of(run))))
        run.add_node(name=name, role="bookie", id=i + 1, ports={"bookie": bport, "http": hport, "metrics": mport},
                     data_dirs=[nd / "journal", nd / "ledgers"], conf=[bconf])
        direct = pc["fault_bookie_direct"] if getattr(run, "faults", False) else pc["bookie_direct"]
        mem = f"-Xms{pc['bookie_heap']} -Xmx{pc['bookie_heap']} -XX:MaxDirectMemorySize={direct}"
        run.start_node(name, [pulsar_bin, "bookie"], cwd=nd, stop_stage=1,
                       env=_env(run, nd, mem, PULSAR_BOOKKEEPER_CONF=str(bconf)))

    # --- broker
    name = "broker-1"
    nd = run.node_dir(name)
    nd.mkdir(parents=True)
    brconf = nd / "broker.conf"
    brconf.write_text(render_conf((conf_dir / "broker.conf").read_text(),
                                  broker_overrides(zk_url, pc["cluster_name"], svc, web, ss)))
    run.add_node(name=name, role="broker", id=1, ports={"service": svc, "http": web}, data_dirs=[], conf=[brconf])
    mem = f"-Xms{pc['broker_heap']} -Xmx{pc['broker_heap']} -XX:MaxDirectMemorySize={pc['broker_direct']}"
    run.start_node(name, [pulsar_bin, "broker"], cwd=nd, stop_stage=0,
                   env=_env(run, nd, mem, PULSAR_BROKER_CONF=str(brconf)))
    # the broker starts while the bookies start (it retries until they are there); now wait for all
    for i, hport in enumerate(bookie_http):
        run.wait_until(f"bookie-{i + 1}", f"bookie HTTP {hport} not answering as a writable bookie",
                       lambda h=hport: _bookie_writable(h), interval=0.5)
    base = f"http://127.0.0.1:{web}"
    run.wait_until(name, "admin REST /admin/v2/brokers/ready not ok",
                   lambda: http("GET", f"{base}/admin/v2/brokers/ready", timeout=3)[0] == 200, interval=0.5)
    # end-to-end health check: the broker writes and reads a heartbeat topic through the bookies
    run.wait_until(name, "admin REST /admin/v2/brokers/health not ok",
                   lambda: http("GET", f"{base}/admin/v2/brokers/health", timeout=20)[0] == 200, interval=1)
    run.endpoints = {"pulsar": {"serviceUrl": f"pulsar://127.0.0.1:{svc}", "httpUrl": base,
                                "cluster": pc["cluster_name"], "namespace": NAMESPACE}}
    set_persistence(base, ss)


def _bookie_writable(hport: int, host: str = "127.0.0.1") -> bool:
    code, text = http("GET", f"http://{host}:{hport}/api/v1/bookie/state", timeout=3)
    if code != 200:
        return False
    try:
        st = json.loads(text)
    except ValueError:
        return False
    return bool(st.get("running")) and not st.get("readOnly", False)


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
