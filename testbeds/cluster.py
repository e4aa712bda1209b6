"""A Kafka or Pulsar cluster on the server hosts of an inventory (the multi-host twin of `python -m systems`).

  python -m testbeds cluster up SYSTEM --level L [--tuning T] --dir RUNDIR --inventory F
  python -m testbeds cluster verify|status|down --dir RUNDIR --inventory F

Every configuration file is rendered on the controller by the local launcher's own functions
(systems/kafka.py, systems/pulsar.py) from systems/durability.yaml, with the hosts' inventory addresses in
place of 127.0.0.1, then shipped and started by Ansible (cluster-start.yml). `verify` reads the effective
settings back over the network with the launcher's own checks (systems.kafka.verify / systems.pulsar.verify)
before RUNDIR/cluster.json is written; `down` stops every node on every reachable host (cluster-stop.yml)
and removes the cluster's data directories. RUNDIR (on the controller) holds the rendered files, the Ansible
logs, remote.json (what was started where, written before anything starts) and cluster.json.

Layout on a host: <workDir>/runs/<cluster>/ (pids/, nodes/<node>/ with its conf, spec and logs/node.log);
data under <dataDirs.log|journal|ledger>/<cluster>/<node>.
"""
from __future__ import annotations

import json
import posixpath
import tarfile
import time
from pathlib import Path, PurePosixPath
from types import SimpleNamespace
from typing import Any

from systems import durability as dur
from systems import kafka as skafka
from systems import pulsar as spulsar
from systems.cluster import CLUSTER_JSON, SCHEMA_VERSION
from systems.util import SystemsError, load_config, resolve, versions

from . import deploy, remote
from .inventory import Host, Inventory
from .util import TestbedError, atomic_write_json, atomic_write_text, now

PORTS = {"kafka": {"client": 9092, "controller": 9093},
         "zookeeper": {"client": 2181},
         "bookie": {"bookie": 3181, "http": 8000, "metrics": 8001},
         "broker": {"service": 6650, "http": 8080}}
REMOTE_JSON = "remote.json"


class Plan:
    """What runs where: nodes, their remote paths, the files to ship, the start stages."""

    def __init__(self, inv: Inventory, system: str, level: str, tuning: str, rundir: Path, cfg: dict):
        self.inv, self.system, self.level, self.tuning, self.rundir, self.cfg = inv, system, level, tuning, rundir, cfg
        self.name = rundir.name
        self.durability = dur.load(resolve(cfg["durability_file"]))
        self.version = versions()[system]
        self.java = cfg["java"] if cfg["java"] != "java" else "java"  # on the host's PATH
        self.servers = inv.servers[:3]
        self.nodes: list[dict[str, Any]] = []
        self.files: dict[str, list[dict[str, str]]] = {}
        self.wipe: dict[str, list[str]] = {}
        self.stages: list[dict[str, Any]] = []
        self.endpoints: dict[str, Any] = {}
        self.extra: dict[str, Any] = {}
        for h in self.servers:
            self.wipe[h.name] = [self.remote_dir(h)] + [posixpath.join(h.data_dir(r), self.name)
                                                          for r in ("journal", "ledger", "log")]

    def remote_dir(self, h: Host) -> str:
        return posixpath.join(h.work_dir, "runs", self.name)

    def dist(self, h: Host) -> str:
        return posixpath.join(h.work_dir, "dist", f"{self.system}-{self.version}")

    def node_dir(self, h: Host, node: str) -> PurePosixPath:
        return PurePosixPath(self.remote_dir(h)) / "nodes" / node

    def local(self, node: str, fname: str) -> Path:
        p = self.rundir / "nodes" / node / fname
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def ship(self, h: Host, node: str, fname: str, text: str) -> str:
        """Write a rendered file on the controller; returns its path on host h (it is shipped by Ansible)."""
        loc = self.local(node, fname)
        atomic_write_text(loc, text)
        dest = str(self.node_dir(h, node) / fname)
        self.files.setdefault(h.name, []).append({"src": str(loc), "dest": dest})
        return dest

    def spec(self, h: Host, node: str, cmd: list[str], *, env: dict[str, str] | None = None, stop_stage: int = 0,
             log: str = "logs/node.log", timeout: float = 300) -> str:
        nd = self.node_dir(h, node)
        s = {"node": node, "rundir": self.remote_dir(h), "cmd": [str(c) for c in cmd], "env": env or {},
             "cwd": str(nd), "log": str(nd / log), "stopStage": stop_stage, "timeout": timeout}
        return self.ship(h, node, "spec.json", json.dumps(s, indent=1))

    def add_node(self, h: Host, *, name: str, role: str, id: int, ports: dict[str, int], data_dirs: list[str],
                 conf: list[str]) -> None:
        self.nodes.append({"name": name, "role": role, "id": id, "host": h.address, "hostName": h.name,
                           "ports": dict(ports), "pid": None, "pgid": None, "dataDirs": data_dirs, "conf": conf,
                           "log": str(self.node_dir(h, name) / "logs" / "node.log"),
                           "remoteDir": self.remote_dir(h)})

    def ports_by_host(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for n in self.nodes:
            for k, p in n["ports"].items():
                if k == "metrics":
                    continue  # the bookies' Prometheus endpoint is off
                out.setdefault(n["hostName"], []).append({"address": n["host"], "port": p})
        return out

    def bundles(self) -> dict[str, str]:
        """One tar per host of every rendered file at its remote path (relative to /): one transfer per host."""
        out = {}
        for hname, files in self.files.items():
            tar = self.rundir / f"ship-{hname}.tar"
            with tarfile.open(tar, "w") as t:
                for f in files:
                    t.add(f["src"], arcname=f["dest"].lstrip("/"), recursive=False)
            out[hname] = str(tar)
        return out

    def vars(self) -> dict[str, Any]:
        return {"sb_cluster": {"name": self.name, "rundir": {h.name: self.remote_dir(h) for h in self.servers},
                               "wipe": self.wipe, "bundles": self.bundles(), "stages": self.stages,
                               "ports": self.ports_by_host(), "timeout": int(self.cfg["startup_timeout_seconds"]),
                               "stop_timeout": int(self.cfg["stop_timeout_seconds"])}}


# --- Kafka ----------------------------------------------------------------------------------------------------
def plan_kafka(pl: Plan) -> None:
    ss = dur.server_settings("kafka", pl.level, pl.tuning, pl.durability)
    hosts = [h.address for h in pl.servers]
    ports = [dict(PORTS["kafka"]) for _ in pl.servers]
    cluster_id = skafka.random_cluster_id()
    pl.extra["clusterId"] = cluster_id
    kcfg = pl.cfg["kafka"]
    once, start, wait = {}, {}, {}
    for i, h in enumerate(pl.servers):
        name = f"kafka-{i + 1}"
        data = posixpath.join(h.data_dir("log"), pl.name, name)
        nd = pl.node_dir(h, name)
        log4j = pl.ship(h, name, "log4j2.properties", skafka.LOG4J2)
        conf = pl.ship(h, name, "server.properties", skafka.render_properties({
            **skafka.server_properties(i + 1, ports, Path(data), ss["broker"], hosts=hosts),
            **skafka.storage_settings(kcfg.get("storage") or {}, ss["broker"])}))
        cp = posixpath.join(pl.dist(h), "libs", "*")
        fmt = skafka.format_command(pl.java, log4j, cp, cluster_id, conf)
        fmt_spec = pl.ship(h, f"{name}-format", "spec.json", json.dumps(
            {"node": f"{name}-format", "rundir": pl.remote_dir(h), "cmd": fmt, "env": {}, "cwd": str(nd),
             "log": str(nd / "format.log"), "stopStage": 0, "timeout": 120}))
        cmd = skafka.node_command(pl.java, kcfg, log4j, nd / "logs", cp, conf)
        pl.add_node(h, name=name, role=skafka.ROLE, id=i + 1, ports=ports[i], data_dirs=[data], conf=[conf])
        once[h.name] = [fmt_spec]
        start[h.name] = [pl.spec(h, name, cmd)]
        wait[h.name] = [{"path": str(nd / "logs" / "node.log"), "regex": "Kafka Server started"}]
    pl.stages = [{"once": once, "start": start, "wait": wait}]
    pl.endpoints = {"kafka": {"bootstrapServers": ",".join(f"{a}:{p['client']}" for a, p in zip(hosts, ports))}}


# --- Pulsar ---------------------------------------------------------------------------------------------------
def plan_pulsar(pl: Plan, conf_dir: Path) -> None:
    pc = pl.cfg["pulsar"]
    ss = dur.server_settings("pulsar", pl.level, pl.tuning, pl.durability)
    meta = pl.servers[0]
    zk_port = PORTS["zookeeper"]["client"]
    zk = f"{meta.address}:{zk_port}"
    zk_url = f"zk:{zk}"
    svc, web = PORTS["broker"]["service"], PORTS["broker"]["http"]
    run = SimpleNamespace(cfg=pl.cfg, java=pl.java)

    def pulsar_bin(h: Host) -> str:
        return posixpath.join(pl.dist(h), "bin", "pulsar")

    # ZooKeeper (metadata store) on the first server
    nd = pl.node_dir(meta, "zookeeper")
    zdata = posixpath.join(meta.data_dir("log"), pl.name, "zookeeper")
    zconf = pl.ship(meta, "zookeeper", "zookeeper.conf", spulsar.render_conf(
        (conf_dir / "zookeeper.conf").read_text(),
        spulsar.zookeeper_overrides(PurePosixPath(zdata) / "data", PurePosixPath(zdata) / "datalog", zk_port,
                                    host=meta.address)))
    pl.add_node(meta, name="zookeeper", role="metadata-store", id=0, ports={"client": zk_port},
                data_dirs=[f"{zdata}/data", f"{zdata}/datalog"], conf=[zconf])
    zk_spec = pl.spec(meta, "zookeeper", [pulsar_bin(meta), "zookeeper"], stop_stage=2,
                      env=spulsar._env(run, nd, f"-Xms{pc['zookeeper_heap']} -Xmx{pc['zookeeper_heap']}",
                                       PULSAR_ZK_CONF=zconf))
    stage1 = {"start": {meta.name: [zk_spec]}, "wait": {meta.name: [{"address": meta.address, "port": zk_port}]}}
    # cluster metadata, then the bookies and the broker
    init_nd = pl.node_dir(meta, "initialize-cluster-metadata")
    init_spec = pl.ship(meta, "initialize-cluster-metadata", "spec.json", json.dumps({
        "node": "initialize-cluster-metadata", "rundir": pl.remote_dir(meta),
        "cmd": [pulsar_bin(meta), "initialize-cluster-metadata", "--cluster", pc["cluster_name"],
                "--metadata-store", zk_url, "--configuration-metadata-store", zk_url,
                "--web-service-url", f"http://{meta.address}:{web}",
                "--broker-service-url", f"pulsar://{meta.address}:{svc}"],
        "env": spulsar._env(run, init_nd, "-Xms128m -Xmx256m"), "cwd": str(init_nd),
        "log": str(init_nd / "initialize-cluster-metadata.log"), "stopStage": 0, "timeout": 120}))
    start: dict[str, list[str]] = {}
    wait: dict[str, list[dict]] = {}
    bk_template = (conf_dir / "bookkeeper.conf").read_text()
    for i, h in enumerate(pl.servers):
        name = f"bookie-{i + 1}"
        nd = pl.node_dir(h, name)
        journal = posixpath.join(h.data_dir("journal"), pl.name, name)
        ledgers = posixpath.join(h.data_dir("ledger"), pl.name, name)
        ports = dict(PORTS["bookie"])
        bconf = pl.ship(h, name, "bookkeeper.conf", spulsar.render_conf(bk_template, spulsar.bookie_overrides(
            ports, PurePosixPath(journal), PurePosixPath(ledgers), zk, ss, host=h.address,
            storage=pc.get("bookie_storage"))))
        pl.add_node(h, name=name, role="bookie", id=i + 1, ports=ports, data_dirs=[journal, ledgers], conf=[bconf])
        mem = f"-Xms{pc['bookie_heap']} -Xmx{pc['bookie_heap']} -XX:MaxDirectMemorySize={pc['bookie_direct']}"
        start.setdefault(h.name, []).append(pl.spec(h, name, [pulsar_bin(h), "bookie"], stop_stage=1,
                                                    env=spulsar._env(run, nd, mem, PULSAR_BOOKKEEPER_CONF=bconf)))
        wait.setdefault(h.name, []).append({"address": h.address, "port": ports["bookie"]})
    name = "broker-1"
    nd = pl.node_dir(meta, name)
    brconf = pl.ship(meta, name, "broker.conf", spulsar.render_conf(
        (conf_dir / "broker.conf").read_text(),
        spulsar.broker_overrides(zk_url, pc["cluster_name"], svc, web, ss, host=meta.address)))
    pl.add_node(meta, name=name, role="broker", id=1, ports={"service": svc, "http": web}, data_dirs=[],
                conf=[brconf])
    mem = f"-Xms{pc['broker_heap']} -Xmx{pc['broker_heap']} -XX:MaxDirectMemorySize={pc['broker_direct']}"
    start[meta.name].append(pl.spec(meta, name, [pulsar_bin(meta), "broker"], stop_stage=0,
                                    env=spulsar._env(run, nd, mem, PULSAR_BROKER_CONF=brconf)))
    wait[meta.name] += [{"address": meta.address, "port": web}, {"address": meta.address, "port": svc}]
    pl.stages = [stage1, {"once": {meta.name: [init_spec]}, "start": start, "wait": wait}]
    base = f"http://{meta.address}:{web}"
    pl.endpoints = {"pulsar": {"serviceUrl": f"pulsar://{meta.address}:{svc}", "httpUrl": base,
                               "cluster": pc["cluster_name"], "namespace": spulsar.NAMESPACE}}


def _pulsar_ready(pl: Plan, deadline: float) -> None:
    """Over the network, as the local launcher does on loopback: every bookie writable, the broker ready
    and healthy (an end-to-end write and read through the bookies), then the level's namespace policy."""
    base = pl.endpoints["pulsar"]["httpUrl"]
    ss = dur.server_settings("pulsar", pl.level, pl.tuning, pl.durability)
    checks = [(n["name"], lambda n=n: spulsar._bookie_writable(n["ports"]["http"], n["host"]))
              for n in pl.nodes if n["role"] == "bookie"]
    checks += [("broker-1 ready", lambda: spulsar.http("GET", f"{base}/admin/v2/brokers/ready", timeout=3)[0] == 200),
               ("broker-1 health", lambda: spulsar.http("GET", f"{base}/admin/v2/brokers/health", timeout=20)[0] == 200)]
    for what, ok in checks:
        while not ok():
            if time.monotonic() > deadline:
                raise TestbedError(f"pulsar: {what} not ready after {pl.cfg['startup_timeout_seconds']} s "
                                   f"(host {next((n['hostName'] for n in pl.nodes if n['name'] == what.split()[0]), '?')})")
            time.sleep(0.5)
    spulsar.set_persistence(base, ss)


# --- up / verify / status / down ---------------------------------------------------------------------------
def _settings_view(doc_or_plan) -> SimpleNamespace:
    d = doc_or_plan
    return SimpleNamespace(system=d.system, level=d.level, tuning=d.tuning, durability=d.durability,
                           endpoints=d.endpoints, nodes=d.nodes, extra=d.extra, cfg=d.cfg)


def up(inv: Inventory, system: str, level: str, rundir: Path, tuning: str = "stock", cfg: dict | None = None,
       log=print) -> dict[str, Any]:
    cfg = cfg or load_config()
    rundir = Path(rundir).resolve()
    rundir.mkdir(parents=True, exist_ok=True)
    if system not in ("kafka", "pulsar"):
        raise TestbedError(f"unknown system {system!r} (known: kafka, pulsar)")
    pl = Plan(inv, system, level, tuning, rundir, cfg)
    try:
        pl.durability.level(system, level)
        pl.durability.profile(system, tuning)
    except dur.DurabilityError as e:
        raise TestbedError(str(e)) from None
    for f in (CLUSTER_JSON, REMOTE_JSON):
        (rundir / f).unlink(missing_ok=True)
    if system == "kafka":
        plan_kafka(pl)
    else:
        from systems import dist
        plan_pulsar(pl, dist.require_dist("pulsar") / "conf")
    # before anything starts: where the cluster lives, so that `down` finds it after any failure
    pvars = pl.vars()
    atomic_write_json(rundir / REMOTE_JSON, {"inventory": str(inv.path), "system": system, **pvars})
    started_at = now()
    t0 = time.monotonic()
    try:
        remote.playbook(inv, "cluster-start", pvars, log=rundir / "ansible-start.log",
                        timeout=cfg["startup_timeout_seconds"] + 300)
        if system == "pulsar":
            _pulsar_ready(pl, time.monotonic() + cfg["startup_timeout_seconds"])
        ready_s = time.monotonic() - t0
        effective = _verify_settings(pl, create=True)
        verified_s = time.monotonic() - t0
        doc = {
            "schemaVersion": SCHEMA_VERSION, "system": system, "version": pl.version, "level": level,
            "tuning": tuning, "replication": pl.durability.levels[level]["replication"],
            "local": pl.durability.levels[level]["local"], "hosts": [h.address for h in pl.servers],
            "rundir": str(rundir), "nodes": pl.nodes, **pl.endpoints,
            "requested": dur.server_settings(system, level, tuning, pl.durability), "effective": effective,
            "client": dur.client_settings(system, level, tuning, pl.durability),
            "pageCacheDropped": {"dropped": False, "reason": "not done on remote hosts"},
            "startedAt": started_at, "readySeconds": round(verified_s, 2), "startSeconds": round(ready_s, 2),
            "verifiedAt": now(), "config": {k: v for k, v in cfg.items() if not k.startswith("_")},
            "durabilityFile": str(pl.durability.path),
            "distribution": {h.name: pl.dist(h) for h in pl.servers},
            "testbed": inv.summary(),
            **({"extra": pl.extra} if pl.extra else {}),
        }
        atomic_write_json(rundir / CLUSTER_JSON, doc)
        log(f"{system} {level}/{tuning} on {', '.join(h.name for h in pl.servers)} ready and verified in "
            f"{verified_s:.1f} s: {rundir / CLUSTER_JSON}")
        return doc
    except BaseException as e:
        log(f"cluster up failed ({type(e).__name__}); stopping the cluster on every reachable host")
        try:
            down(inv, rundir, cfg, log=log)
        except Exception as e2:
            log(f"cleanup after failed up: {e2}")
        raise


def _verify_settings(view, create: bool) -> dict[str, Any]:
    impl = skafka if view.system == "kafka" else spulsar
    try:
        return impl.verify(_settings_view(view), create=create)
    except SystemsError as e:
        raise TestbedError(str(e)) from None


def _load(rundir: Path, name: str) -> dict[str, Any]:
    f = Path(rundir) / name
    try:
        return json.loads(f.read_text())
    except OSError:
        raise TestbedError(f"{f}: missing (was `cluster up` run with --dir {rundir}?)") from None
    except ValueError as e:
        raise TestbedError(f"{f}: not valid JSON ({e})") from None


def verify(inv: Inventory, rundir: Path, cfg: dict | None = None, log=print) -> dict[str, Any]:
    """Every node alive and listening (Ansible, on each host), then the settings read back over the network."""
    cfg = cfg or load_config()
    doc = _load(rundir, CLUSTER_JSON)
    rem = _load(rundir, REMOTE_JSON)
    remote.playbook(inv, "cluster-verify", {"sb_cluster": rem["sb_cluster"]}, log=Path(rundir) / "ansible-verify.log",
                    timeout=300)
    view = SimpleNamespace(system=doc["system"], level=doc["level"], tuning=doc["tuning"],
                           durability=dur.load(doc["durabilityFile"]),
                           endpoints={k: doc[k] for k in ("kafka", "pulsar") if k in doc}, nodes=doc["nodes"],
                           extra=doc.get("extra", {}), cfg=cfg)
    doc["effective"] = _verify_settings(view, create=False)
    doc["verifiedAt"] = now()
    atomic_write_json(Path(rundir) / CLUSTER_JSON, doc)
    log(f"{doc['system']} {doc['level']}/{doc['tuning']}: effective settings match")
    return doc


def status(inv: Inventory, rundir: Path) -> dict[str, Any]:
    """running | degraded | stopped, from each server host's pid files (ssh; an unreachable host counts as
    its nodes not running)."""
    rem = _load(rundir, REMOTE_JSON)
    nodes, unreachable = {}, []
    for hname, rdir in rem["sb_cluster"]["rundir"].items():
        try:
            res = remote.ssh(inv.host(hname), f"python3 {inv.host(hname).work_dir}/lib/sbnode.py status {rdir}",
                             timeout=30)
            nodes.update({f"{hname}/{k}": v for k, v in json.loads(res.stdout or "{}").items()})
        except TestbedError:
            unreachable.append(hname)
    alive = [v for v in nodes.values()]
    state = "stopped" if not any(alive) else ("running" if all(alive) and not unreachable else "degraded")
    return {"state": state, "nodes": nodes, "unreachable": unreachable}


def down(inv: Inventory, rundir: Path, cfg: dict | None = None, log=print) -> dict[str, Any]:
    """Stop the cluster on every reachable host and remove its data directories; idempotent."""
    cfg = cfg or load_config()
    rundir = Path(rundir)
    if not (rundir / REMOTE_JSON).is_file():
        return {"stopped": False}
    rem = _load(rundir, REMOTE_JSON)
    sbc = dict(rem["sb_cluster"])
    sbc["stop_timeout"] = int(cfg["stop_timeout_seconds"])
    # keep the run directory (logs) on the hosts; remove the data
    sbc["wipe"] = {h: [d for d in ds if d != sbc["rundir"].get(h)] for h, ds in sbc["wipe"].items()}
    remote.playbook(inv, "cluster-down", {"sb_cluster": sbc}, log=rundir / "ansible-down.log", timeout=600)
    cj = rundir / CLUSTER_JSON
    if cj.is_file():
        try:
            doc = json.loads(cj.read_text())
            doc["stoppedAt"] = now()
            atomic_write_json(cj, doc)
        except ValueError:
            pass
    log(f"cluster {rundir.name}: stopped on {', '.join(sbc['rundir'])}")
    return {"stopped": True}


def down_all(inv: Inventory, log=print) -> None:
    """Every cluster on every reachable server host (the workflow's error path)."""
    remote.playbook(inv, "cluster-stop", {"sb_cluster": {"all": True, "rundir": {}}},
                    log=Path(inv.path).parent / "logs" / "down-all.log", timeout=600)
    log("every cluster stopped on every reachable server host")


# --- CLI ------------------------------------------------------------------------------------------------------
def add_parser(sub) -> None:
    p = sub.add_parser("cluster", help="a cluster on the server hosts")
    p.add_argument("action", choices=["up", "verify", "status", "down", "down-all"])
    p.add_argument("system", nargs="?")
    p.add_argument("--level")
    p.add_argument("--tuning", default="stock")
    p.add_argument("--dir", type=Path)
    p.add_argument("--inventory", required=True)
    p.add_argument("--config", help="YAML file with a `systems:` section (default env/config.yaml)")
    p.set_defaults(func=_main)


def _main(a, load_inv, log) -> int:
    inv = load_inv(a.inventory)
    cfg = load_config(a.config) if a.config else None
    if a.action == "down-all":
        down_all(inv, log=log)
        return 0
    if a.dir is None:
        raise TestbedError("cluster: --dir is required")
    if a.action == "up":
        if not a.system or not a.level:
            raise TestbedError("cluster up: SYSTEM and --level are required")
        up(inv, a.system, a.level, a.dir, a.tuning, cfg, log=log)
    elif a.action == "verify":
        verify(inv, a.dir, cfg, log=log)
    elif a.action == "status":
        print(json.dumps(status(inv, a.dir), indent=1))
    else:
        down(inv, a.dir, cfg, log=log)
    return 0
