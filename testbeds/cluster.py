"""A cluster on the server hosts of an inventory: the plan of systems/plan.py, carried out by Ansible and the
host-side helper (the multi-host twin of `python -m systems`, which carries the same plan out on this machine).

  python -m testbeds cluster up SYSTEM --level L [--tuning T] [--faults] [--faultfs] --dir RUNDIR --inventory F
  python -m testbeds cluster verify|status|down --dir RUNDIR --inventory F

The plan is built on the controller with the hosts' addresses, fixed ports (systems/plan.py PORTS) and the
inventory's directories; its files go to each host in one archive, its stages run with cluster-start.yml: one-off
commands, node starts (testbeds/hostside/sbnode.py, the same pid records and log cap as on this machine), then the
readiness conditions, checked by sbnode.py on the host of the node each names (systems/ready.py), so the
controller needs no route to the hosts' private addresses for them. `verify` reads the effective settings back with
the systems' own checks before RUNDIR/cluster.json is written; their HTTP requests (Pulsar's and Pravega's admin
and bookie APIs) are sent from the first server host over ssh (sbnode.py `http`), and Kafka's admin requests are
made there by the distribution's own Java client (systems/kafka/check/KafkaVerifySnapshot.java), so those checks
need no route either; `down` stops every node on every reachable host
(cluster-down.yml) and removes the cluster's data directories. RUNDIR (on the controller) holds the archives, the
Ansible logs, remote.json (what was started where, written before anything starts) and cluster.json.

Layout on a host: <workDir>/runs/<cluster>/ (pids/, nodes/<node>/ with its conf, spec and logs/node.log);
data under <dataDirs.log|journal|ledger>/<cluster>/<node>/. With --faultfs (power-loss cells) each node's data
directories are faultfs mounts made on its host by sbnode.py as the login user (their durable state in the sibling
`<dir>.faultfs`), listed in the host's run directory; the fault hook drops them there and `down` unmounts them
before the data is removed.
"""
from __future__ import annotations

import io
import json
import posixpath
import shlex
import tarfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from systems import durability as dur
from systems import kafka as skafka
from systems import plan as splan
from systems import pravega as spravega
from systems import pulsar as spulsar
from systems import ready as sready
from systems.cluster import CLUSTER_JSON, SCHEMA_VERSION
from systems.util import SystemsError, load_config, resolve, versions

from . import remote
from .inventory import Inventory
from .util import TestbedError, atomic_write_json, now

REMOTE_JSON = "remote.json"
IMPL = {"kafka": skafka, "pulsar": spulsar, "pravega": spravega}


def hosts_placement(inv: Inventory, system: str, cluster: str) -> splan.Placement:
    """The inventory's first three server hosts (fewer: nodes share them in turn), fixed ports."""
    if not inv.servers:
        raise TestbedError(f"{inv.path}: no server host for the cluster")
    version = versions()[system]
    hosts = [splan.Host(h.name, h.address, posixpath.join(h.work_dir, "runs", cluster),
                        posixpath.join(h.work_dir, "dist", f"{system}-{version}"), "java",
                        {r: posixpath.join(h.data_dir(r), cluster) for r in ("log", "journal", "ledger")})
             for h in inv.servers[:3]]
    return splan.Placement(hosts, splan.fixed_ports)


def _tar(files: list[tuple[str, str]], out: Path) -> str:
    """One archive of (path on the host, text), paths relative to /: one transfer per host."""
    with tarfile.open(out, "w") as t:
        for path, text in files:
            data = text.encode()
            ti = tarfile.TarInfo(path.lstrip("/"))
            ti.size, ti.mode, ti.mtime = len(data), 0o644, int(time.time())
            t.addfile(ti, io.BytesIO(data))
    return str(out)


def remote_vars(pl: splan.ClusterPlan, rundir: Path, cfg: dict, faultfs: bool = False) -> dict[str, Any]:
    """The plan as cluster-start.yml's sb_cluster: each node's and one-off command's spec (a JSON file beside it on
    its host), each stage's readiness conditions per host (the host of the node each names), one archive per host.
    With faultfs every node's data directories are faultfs mounts (sbnode.py mounts them before the node starts)."""
    name = rundir.name
    max_log = int(cfg["node_log_max_mb"] * (1 << 20))
    files: dict[str, list[tuple[str, str]]] = {h.name: [] for h in pl.placement.hosts}
    for h, path, text in pl.files:
        files[h.name].append((path, text))

    def spec(h: splan.Host, node: str, d: dict[str, Any], where: str) -> str:
        path = posixpath.join(where, f"{node}.spec.json")
        files[h.name].append((path, json.dumps({"node": node, "rundir": h.root, **d}, indent=1)))
        return path

    stages = []
    mounts: dict[str, list[str]] = {}
    for k, st in enumerate(pl.stages):
        once: dict[str, list[str]] = {}
        start: dict[str, list[str]] = {}
        wait: dict[str, list[str]] = {}
        for o in st.once:
            once.setdefault(o.host.name, []).append(spec(o.host, o.name, {
                "cmd": o.cmd, "env": o.env, "cwd": o.cwd, "log": o.log, "stopStage": 0, "timeout": o.timeout,
                "maxLogBytes": max_log}, o.cwd))
        for n in (pl.node(x) for x in st.start):
            start.setdefault(n.host.name, []).append(spec(n.host, n.name, {
                "cmd": n.cmd, "env": n.env, "cwd": n.dir, "log": n.log, "stopStage": n.stop_stage,
                "mkdirs": n.data_dirs, "maxLogBytes": max_log, **({"faultfs": True} if faultfs and n.data_dirs else {})},
                n.dir))
            if faultfs and n.data_dirs:  # mounted before the first stage: its one-off commands (Kafka's format) write there
                mounts.setdefault(n.host.name, []).append(start[n.host.name][-1])
        by_host: dict[str, list[dict]] = {}
        for c in st.wait:
            by_host.setdefault(pl.host_of(c["node"]).name, []).append(c)
        for hname, conds in by_host.items():
            h = next(x for x in pl.placement.hosts if x.name == hname)
            path = posixpath.join(h.root, "nodes", f"stage-{k + 1}.ready.json")
            files[hname].append((path, json.dumps({"rundir": h.root, "conds": conds,
                                                   "timeout": int(cfg["startup_timeout_seconds"])}, indent=1)))
            wait.setdefault(hname, []).append(path)
        stages.append({"once": once, "start": start, "wait": wait})
    wipe = {h.name: [h.root] + list(h.data.values()) for h in pl.placement.hosts}
    ports: dict[str, list[dict[str, Any]]] = {}
    for n in pl.nodes:
        for k, p in n.ports.items():
            if k != "metrics":  # the bookies' Prometheus endpoint is off
                ports.setdefault(n.host.name, []).append({"address": n.host.address, "port": p})
    bundles = {hname: _tar(fs, rundir / f"ship-{hname}.tar") for hname, fs in files.items() if fs}
    return {"sb_cluster": {"name": name, "rundir": {h.name: h.root for h in pl.placement.hosts}, "wipe": wipe,
                           "bundles": bundles, "stages": stages, "ports": ports, "faultfs": mounts,
                           "timeout": int(cfg["startup_timeout_seconds"]),
                           "stop_timeout": int(cfg["stop_timeout_seconds"])}}


# --- up / verify / status / down ---------------------------------------------------------------------------
def _read_log(inv: Inventory):
    """A node's log from its host (Pravega's verify reads what the segment store logged at start-up)."""
    def read(node: dict) -> str:
        return remote.ssh(inv.host(node["hostName"]), f"cat {shlex.quote(node['log'])}", timeout=60).stdout
    return read


def up(inv: Inventory, system: str, level: str, rundir: Path, tuning: str = "stock", cfg: dict | None = None,
       log=print, faults: bool = False, faultfs: bool = False) -> dict[str, Any]:
    cfg = cfg or load_config()
    rundir = Path(rundir).resolve()
    rundir.mkdir(parents=True, exist_ok=True)
    durability = dur.load(resolve(cfg["durability_file"]))
    try:
        pl = splan.build(system, level, tuning, hosts_placement(inv, system, rundir.name), cfg, durability,
                         faults=faults)
    except SystemsError as e:
        raise TestbedError(str(e)) from None
    for f in (CLUSTER_JSON, REMOTE_JSON):
        (rundir / f).unlink(missing_ok=True)
    # before anything starts: where the cluster lives, so that `down` finds it after any failure
    pvars = remote_vars(pl, rundir, cfg, faultfs)
    atomic_write_json(rundir / REMOTE_JSON, {"inventory": str(inv.path), "system": system, **pvars})
    started_at = now()
    t0 = time.monotonic()
    nodes = [n.record() for n in pl.nodes]
    servers = pl.hosts
    try:
        remote.playbook(inv, "cluster-start", pvars, log=rundir / "ansible-start.log",
                        timeout=len(pl.stages) * cfg["startup_timeout_seconds"] + 300)
        ready_s = time.monotonic() - t0
        view = SimpleNamespace(system=system, level=level, tuning=tuning, durability=durability,
                               endpoints=pl.endpoints, nodes=nodes, extra=pl.extra, cfg=cfg, faults=faults,
                               read_log=_read_log(inv), http=http_over_ssh(inv),
                               kafka_snapshot=kafka_snapshot_over_ssh(inv, servers[0].name, servers[0].dist))
        effective = _verify_settings(view, create=True)
        verified_s = time.monotonic() - t0
        if faultfs:
            # as the local launcher does: what the cluster wrote while it started (Kafka's bootstrap.checkpoint, the
            # bookies' cookies) becomes durable, as the OS's write-back would make it long before a fault
            faultfs_checkpoint(inv, {h.name: h.root for h in pl.placement.hosts})
        doc = {
            "schemaVersion": SCHEMA_VERSION, "system": system, "version": versions()[system], "level": level,
            "tuning": tuning, "faults": faults, "replication": durability.levels[level]["replication"],
            "local": durability.levels[level]["local"], "hosts": [h.address for h in servers],
            "rundir": str(rundir), "nodes": nodes, **pl.endpoints,
            "requested": dur.server_settings(system, level, tuning, durability), "effective": effective,
            "client": dur.client_settings(system, level, tuning, durability),
            "pageCacheDropped": {"dropped": False, "reason": "not done on remote hosts"},
            "startedAt": started_at, "readySeconds": round(verified_s, 2), "startSeconds": round(ready_s, 2),
            "verifiedAt": now(), "config": {k: v for k, v in cfg.items() if not k.startswith("_")},
            "durabilityFile": str(durability.path),
            "distribution": {h.name: h.dist for h in servers},
            "testbed": inv.summary(),
            **({"extra": pl.extra} if pl.extra else {}),
            # env/test's STREAMBENCH_JVM_EXTRA_OPTS (systems/plan.py), when set: every JVM of this cluster had them
            **({"jvmExtraOpts": pl.jvm_extra_opts} if pl.jvm_extra_opts else {}),
            # as the local launcher records them: per node, its faultfs mount points (on its host)
            **({"faultfs": {n.name: list(n.data_dirs) for n in pl.nodes if n.data_dirs}} if faultfs else {}),
        }
        atomic_write_json(rundir / CLUSTER_JSON, doc)
        log(f"{system} {level}/{tuning} on {', '.join(h.name for h in servers)} ready and verified in "
            f"{verified_s:.1f} s: {rundir / CLUSTER_JSON}")
        return doc
    except BaseException as e:
        log(f"cluster up failed ({type(e).__name__}); stopping the cluster on every reachable host")
        try:
            down(inv, rundir, cfg, log=log)
        except Exception as e2:
            log(f"cleanup after failed up: {e2}")
        raise


def faultfs_checkpoint(inv: Inventory, rundirs: dict[str, str]) -> None:
    """Every cached write of the faultfs mounts of a run made durable, on each host {host name: its run directory}
    (sbhost.faultfs checkpoint-run over ssh); one line naming the host on failure."""
    for name, hrun in sorted(rundirs.items()):
        h = inv.host(name)
        lib = shlex.quote(f"{h.work_dir}/lib")
        remote.ssh(h, f"cd {lib} && exec python3 -m sbhost.faultfs checkpoint-run {shlex.quote(hrun)}", timeout=120)


def http_over_ssh(inv: Inventory):
    """A sender for systems/ready.http_via: each request made by sbnode.py `http` on the first server host, which
    sits on the cluster's network (the controller may have no route to it: an EC2 fleet seen from a laptop, the
    EC2-like lab). (0, why) when the host cannot be reached, as when nothing answered."""
    host = inv.servers[0]
    helper = f"python3 {shlex.quote(posixpath.join(host.work_dir, 'lib', 'sbnode.py'))}"
    mux = remote.control_path_dir(inv.testbed, inv.id, inv.path)  # verify makes tens of requests: one connection

    def send(method: str, url: str, body: Any = None, timeout: float = 15) -> tuple[int, str]:
        req = json.dumps({"method": method, "url": url, "body": body, "timeout": timeout})
        try:
            res = remote.ssh(host, f"{helper} http {shlex.quote(req)}", timeout=timeout + 60, control_dir=mux)
            out = json.loads(res.stdout)
            return int(out["status"]), str(out["text"])
        except TestbedError as e:
            return 0, str(e)
        except (ValueError, KeyError, TypeError):
            return 0, f"host {host.name}: sbnode.py http answered {res.stdout[-200:]!r}"
    return send


def kafka_snapshot_over_ssh(inv: Inventory, host_name: str, dist: str, java: str = "java"):
    """systems/kafka.py's snapshot, taken on a server host by KafkaVerifySnapshot.java (shipped by prepare to
    <workDir>/lib/) run as a source file on the distribution's classpath, over ssh."""
    host = inv.host(host_name)
    src = posixpath.join(host.work_dir, "lib", "KafkaVerifySnapshot.java")

    def take(bootstrap: str, broker_keys, topic_keys, topic_config: dict[str, str], rf: int, create: bool,
             timeout: float) -> dict[str, Any]:
        args = [java, *splan.jvm_extra_opts(), "-Xmx256m", "-Dlog4j2.level=off", "-cp", posixpath.join(dist, "libs", "*"), src, bootstrap,
                str(skafka.NODES), skafka.VERIFY_TOPIC, str(rf), "true" if create else "false", str(int(timeout)),
                ",".join(broker_keys), ",".join(topic_keys), *(f"{k}={v}" for k, v in topic_config.items())]
        res = remote.ssh(host, " ".join(shlex.quote(a) for a in args), timeout=timeout + 120, check=False)
        line = next((x for x in res.stdout.splitlines() if x.startswith("SNAPSHOT ")), None)
        if res.returncode != 0 or line is None:
            why = (res.stderr.strip() or res.stdout.strip() or "no output").splitlines()[-1]
            raise SystemsError(why if why.startswith("kafka: ") else
                               f"kafka: verification on host {host.name} exited {res.returncode}: {why}")
        return json.loads(line[len("SNAPSHOT "):])
    return take


def _verify_settings(view, create: bool) -> dict[str, Any]:
    try:
        with sready.http_via(view.http):
            return IMPL[view.system].verify(view, create=create)
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
                           endpoints={k: doc[k] for k in IMPL if k in doc}, nodes=doc["nodes"],
                           extra=doc.get("extra", {}), cfg=cfg, faults=bool(doc.get("faults")),
                           read_log=_read_log(inv), http=http_over_ssh(inv),
                           kafka_snapshot=kafka_snapshot_over_ssh(inv, doc["nodes"][0]["hostName"],
                                                                  doc["distribution"][doc["nodes"][0]["hostName"]]))
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
    p.add_argument("--faults", action="store_true", help="a cluster for fault runs (as `python -m systems up --faults`)")
    p.add_argument("--faultfs", action="store_true",
                   help="every node's data directories on faultfs (power-loss cells; as `python -m systems up --faultfs`)")
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
        up(inv, a.system, a.level, a.dir, a.tuning, cfg, log=log, faults=a.faults, faultfs=a.faultfs)
    elif a.action == "verify":
        verify(inv, a.dir, cfg, log=log)
    elif a.action == "status":
        print(json.dumps(status(inv, a.dir), indent=1))
    else:
        down(inv, a.dir, cfg, log=log)
    return 0
