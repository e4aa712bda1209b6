"""up / verify / status / down of one cluster in a run directory."""
from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import dist
from . import durability as dur
from . import faultfs as ffs
from . import plan as splan
from .proc import (LOOPBACK, PidRecord, ensure_ports_free, port_listening, read_pid_records,
                   rss_bytes, start_process, stop_records, tail, wait_ports_closed, pid_dir)
from .util import SystemsError, atomic_write_json, load_config, resolve, versions

SYSTEMS = ("kafka", "pulsar", "pravega")
CLUSTER_JSON = "cluster.json"
SCHEMA_VERSION = 1


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _impl(system: str):
    if system == "kafka":
        from . import kafka as m
    elif system == "pulsar":
        from . import pulsar as m
    elif system == "pravega":
        from . import pravega as m
    else:
        raise SystemsError(f"unknown system {system!r} (known: {', '.join(SYSTEMS)})")
    return m


def check_hosts(hosts: list[str]) -> list[str]:
    if not hosts:
        raise SystemsError("--hosts: empty host list")
    for h in hosts:
        if h not in (LOOPBACK, "localhost"):
            raise SystemsError(f"--hosts: {h}: this command starts clusters on this machine only (127.0.0.1); for "
                               "hosts elsewhere write an inventory and use `python -m testbeds cluster up --inventory "
                               "FILE` (docs/hosts.md)")
    return [LOOPBACK]


class Run:
    """State of one `up`: the nodes started so far, their ports, the deadline."""

    def __init__(self, system: str, level: str, tuning: str, rundir: Path, cfg: dict, durability, log,
                 faults: bool = False, faultfs: bool = False):
        self.system, self.level, self.tuning = system, level, tuning
        self.faults = faults  # started for fault runs (workloads/faultrun.py): e.g. Pulsar's fault_bookie settings
        self.faultfs: dict[str, list[str]] | None = {} if faultfs else None
        self.rundir, self.cfg, self.durability, self.log = rundir, cfg, durability, log
        self.dist = dist.require_dist(system)
        self.version = versions()[system]
        java = cfg["java"]
        if java == "java" and os.environ.get("JAVA_HOME"):
            java = str(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
        if shutil.which(java) is None:
            raise SystemsError(f"java executable {java!r} not found (config systems.java)")
        self.java = java
        self.nodes: list[dict[str, Any]] = []
        self.procs: dict[str, subprocess.Popen] = {}
        self.all_ports: dict[str, int] = {}
        self.endpoints: dict[str, Any] = {}
        self.extra: dict[str, Any] = {}
        self.deadline = time.monotonic() + cfg["startup_timeout_seconds"]

    # --- layout
    def node_dir(self, name: str) -> Path:
        return self.rundir / "nodes" / name

    def tail(self, path: Path, n: int = 30) -> str:
        return tail(path, n)

    def mount_faultfs(self, name: str, data_dirs: list[Path]) -> None:
        """Put each (still empty) data directory of the node on its own faultfs mount; the backing directory is
        RUNDIR/nodes/<node>/.faultfs/<dir name>, the daemon's output goes to logs/faultfs-<dir name>.log."""
        for d in data_dirs:
            d = Path(d)
            backing = self.node_dir(name) / ".faultfs" / d.name
            try:
                ffs.mount(backing, d, log=self.node_dir(name) / "logs" / f"faultfs-{d.name}.log")
            except ffs.FaultfsError as e:
                raise SystemsError(f"{name}: --faultfs: {e}") from None
            self.faultfs.setdefault(name, []).append(str(d))

    # --- processes
    def spawn(self, name: str, cmd: list[str], *, cwd: Path, log: Path, env: dict[str, str],
              stop_stage: int = 0) -> subprocess.Popen:
        e = dict(os.environ)
        e.update(env)
        Path(cwd).mkdir(parents=True, exist_ok=True)
        p, rec = start_process(self.rundir, name, cmd, cwd=cwd, log=log, env=e, stop_stage=stop_stage,
                               max_log_bytes=int(self.cfg["node_log_max_mb"] * (1 << 20)), env_extra=env)
        self.procs[name] = p
        return p

    def wait_exit(self, p: subprocess.Popen, name: str, log: Path, timeout: float) -> int:
        try:
            rc = p.wait(timeout=min(timeout, max(1.0, self.deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            raise SystemsError(f"{name}: did not finish within the start-up timeout "
                               f"({self.cfg['startup_timeout_seconds']} s); last lines of {log}:\n{tail(log)}") from None
        (pid_dir(self.rundir) / f"{name}.json").unlink(missing_ok=True)
        return rc

    def dead(self, name: str) -> str | None:
        """Why node `name` (or, for "*", any node started so far) no longer runs, or None."""
        for n in self.nodes:
            p = self.procs.get(n["name"])
            if (name in ("*", n["name"])) and p is not None and p.poll() is not None:
                return (f"{n['name']} exited with status {p.returncode} during start-up; "
                        f"last lines of {n['log']}:\n{tail(Path(n['log']))}")
        return None

    # --- the plan (systems/plan.py), on this machine
    def execute(self, pl) -> None:
        """Write the plan's files, make its nodes' data directories (faultfs mounts if asked), then run its stages:
        one-off commands in parallel to completion, node starts, readiness conditions in order."""
        from . import ready

        self.all_ports = pl.ports
        for _h, path, text in pl.files:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text)
        for n in pl.nodes:
            for d in n.data_dirs:
                Path(d).mkdir(parents=True, exist_ok=True)
            self.nodes.append(n.record())
            if self.faultfs is not None and n.data_dirs:
                self.mount_faultfs(n.name, [Path(d) for d in n.data_dirs])
        for stage in pl.stages:
            procs = [(o, self.spawn(o.name, o.cmd, cwd=Path(o.cwd), log=Path(o.log), env=o.env)) for o in stage.once]
            for o, p in procs:
                rc = self.wait_exit(p, o.name, Path(o.log), o.timeout)
                if rc != 0:
                    raise SystemsError(f"{self.system}: {o.name} failed (exit {rc}); last lines of {o.log}:\n"
                                       f"{tail(Path(o.log))}")
            for name in stage.start:
                self.start_node(pl.node(name))
            try:  # any node of the cluster that dies ends the wait (a bookie while the broker's health is awaited)
                ready.wait(stage.wait, self.deadline, lambda node: self.dead("*"))
            except ready.NotReady as e:
                why = self.dead("*")
                if why:
                    raise SystemsError(why) from None
                log = pl.node(e.node).log
                raise SystemsError(f"{e.node}: {e} after {self.cfg['startup_timeout_seconds']} s; last lines of "
                                   f"{log}:\n{tail(Path(log))}") from None
            for name in stage.start:  # a node that died while a later one was awaited
                why = self.dead(name)
                if why:
                    raise SystemsError(why)
        self.endpoints = dict(pl.endpoints)
        self.extra.update(pl.extra)

    def start_node(self, node) -> None:
        ensure_ports_free({f"{node.name}.{k}": v for k, v in node.ports.items()})
        p = self.spawn(node.name, node.cmd, cwd=Path(node.dir), log=Path(node.log), stop_stage=node.stop_stage,
                       env=node.env)
        rec = next(n for n in self.nodes if n["name"] == node.name)
        rec["pid"], rec["pgid"] = p.pid, os.getpgid(p.pid)
        self.log(f"started {node.name} (pid {p.pid})")


def drop_page_cache(enabled: bool) -> dict[str, Any]:
    if not enabled:
        return {"dropped": False, "reason": "disabled by config systems.drop_caches"}
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return {"dropped": True, "reason": "sync; echo 3 > /proc/sys/vm/drop_caches"}
    except OSError as e:
        return {"dropped": False, "reason": f"not permitted: /proc/sys/vm/drop_caches: {e.strerror}"}


def stale_records(rundir: Path) -> list[PidRecord]:
    """Pid records in rundir whose processes still run (a cluster left behind by a crashed run)."""
    return [r for r in read_pid_records(rundir) if r.alive()]


def _ports_of(rundir: Path) -> list[int]:
    f = rundir / "state.json"
    if f.is_file():
        try:
            return sorted(set(json.loads(f.read_text()).get("ports", {}).values()))
        except ValueError:
            return []
    return []


def down(rundir: Path, cfg: dict | None = None, log=print) -> dict[str, Any]:
    """Stop every process recorded in rundir (TERM, then KILL after the stop timeout) and check that no
    recorded port is still listening. Works after a crash of `up`, of a node, or of the caller."""
    rundir = Path(rundir)
    cfg = cfg or load_config()
    recs = read_pid_records(rundir)
    alive = [r for r in recs if r.alive()]
    killed = stop_records(alive, cfg["stop_timeout_seconds"], log=log) if alive else []
    for r in recs:
        (pid_dir(rundir) / f"{r.node}.json").unlink(missing_ok=True)
    _unmount_faultfs(rundir, log)
    busy = wait_ports_closed(_ports_of(rundir))
    if busy:
        raise SystemsError(f"{rundir}: ports still listening after down: {busy}")
    cj = rundir / CLUSTER_JSON
    if cj.is_file():
        try:
            doc = json.loads(cj.read_text())
            doc["stoppedAt"] = _now()
            atomic_write_json(cj, doc)
        except ValueError:
            pass
    return {"stopped": [r.node for r in alive], "killed": killed}


def _unmount_faultfs(rundir: Path, log) -> None:
    """Unmount the run's faultfs mounts (a clean shutdown: unsynced writes are written back)."""
    try:
        mps = ffs.unmount_all(rundir, discard=False)
    except ffs.FaultfsError as e:
        raise SystemsError(f"{rundir}: {e}") from None
    if mps:
        log(f"down: unmounted {len(mps)} faultfs mount(s)")


def purge_data(rundir: Path) -> int:
    """Delete the data of a stopped cluster (every directory under RUNDIR/nodes/<node>/ but logs/), keeping its
    logs, configuration and cluster.json; returns the bytes freed. Refuses while a node of it still runs."""
    rundir = Path(rundir)
    if any(r.alive() for r in read_pid_records(rundir)):
        raise SystemsError(f"{rundir}: cannot delete the data of a running cluster; run `down` first")
    freed = 0
    nodes = rundir / "nodes"
    if not nodes.is_dir():
        return 0
    for nd in sorted(p for p in nodes.iterdir() if p.is_dir()):
        for sub in sorted(p for p in nd.iterdir() if p.is_dir() and p.name != "logs"):
            for f in sub.rglob("*"):
                try:
                    if f.is_file() and not f.is_symlink():
                        freed += f.stat().st_size
                except OSError:
                    pass
            shutil.rmtree(sub, ignore_errors=True)
    return freed


def _install_signal_handlers():
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    old = {}
    for s in (signal.SIGTERM, signal.SIGHUP):
        try:
            old[s] = signal.signal(s, handler)
        except ValueError:  # not in the main thread
            pass
    return old


def up(system: str, level: str, rundir: Path, tuning: str = "stock", hosts: list[str] | None = None,
       cfg: dict | None = None, log=print, faultfs: bool = False, faults: bool = False) -> dict[str, Any]:
    """Start a fresh, verified cluster in rundir and write rundir/cluster.json (returned). With faultfs, every
    data directory is a faultfs mount (systems/faultfs.py) and cluster.json["faultfs"] lists them per node.
    faults: a cluster for fault runs (nodes get killed and restarted; Pulsar's bookies get config
    systems.pulsar.fault_bookie, read back by verify)."""
    cfg = cfg or load_config()
    hosts = check_hosts(hosts or [LOOPBACK])
    _impl(system)
    durability = dur.load(resolve(cfg["durability_file"]))
    try:
        durability.level(system, level)
        durability.profile(system, tuning)
    except dur.DurabilityError as e:
        raise SystemsError(str(e)) from None
    dist.require_dist(system)  # fail before touching the run directory
    rundir = Path(rundir).resolve()
    rundir.mkdir(parents=True, exist_ok=True)
    if faultfs:
        try:
            import mfusepy  # noqa: F401  (loads libfuse3: fail here, before anything starts)
        except (ImportError, OSError) as e:
            raise SystemsError(f"--faultfs: the FUSE binding cannot load ({e}); env/shell installs mfusepy "
                               f"(uv.lock) and fuse3 (env/apt-packages.txt)") from None
        for mp in ffs.sweep():
            log(f"faultfs: swept dead mount {mp}")
    stale = stale_records(rundir)
    if stale:
        log(f"{rundir}: stale cluster found ({', '.join(r.node for r in stale)}); stopping it")
        down(rundir, cfg, log=log)
    _unmount_faultfs(rundir, log)  # mounts left by an earlier run whose processes are gone
    for sub in ("nodes", "pids"):
        shutil.rmtree(rundir / sub, ignore_errors=True)
    for f in (CLUSTER_JSON, "state.json"):
        (rundir / f).unlink(missing_ok=True)
    run = Run(system, level, tuning, rundir, cfg, durability, log, faults=faults, faultfs=faultfs)
    page_cache = drop_page_cache(cfg["drop_caches"])
    started_at = _now()
    t0 = time.monotonic()
    old = _install_signal_handlers()
    try:
        impl = _impl(system)
        placement = splan.local_placement(rundir, run.dist, run.java)
        pl = splan.build(system, level, tuning, placement, cfg, durability, faults=faults,
                         conf_dir=run.dist / "conf" if system == "pulsar" else None)
        try:
            run.execute(pl)
        finally:
            atomic_write_json(rundir / "state.json", {"system": system, "ports": run.all_ports})
        ready_s = time.monotonic() - t0
        effective = impl.verify(run)
        verified_s = time.monotonic() - t0
        if run.faultfs:
            # what the cluster wrote while it started (kafka-storage format's bootstrap.checkpoint is never
            # fsync'ed) becomes durable, as the OS's writeback would make it long before a fault is injected:
            # the fault window starts with a ready cluster
            try:
                ffs.checkpoint_all(rundir)
            except ffs.FaultfsError as e:
                raise SystemsError(f"--faultfs: {e}") from None
        doc = {
            "schemaVersion": SCHEMA_VERSION,
            "system": system,
            "version": run.version,
            "level": level,
            "tuning": tuning,
            "faults": faults,
            "replication": durability.levels[level]["replication"],
            "local": durability.levels[level]["local"],
            "hosts": hosts,
            "rundir": str(rundir),
            "nodes": run.nodes,
            **run.endpoints,
            "requested": dur.server_settings(system, level, tuning, durability),
            "effective": effective,
            "client": dur.client_settings(system, level, tuning, durability),
            "pageCacheDropped": page_cache,
            "startedAt": started_at,
            "readySeconds": round(verified_s, 2),
            "startSeconds": round(ready_s, 2),
            "verifiedAt": _now(),
            "config": {k: v for k, v in cfg.items() if not k.startswith("_")},
            "durabilityFile": str(durability.path),
            "distribution": str(run.dist),
            **({"extra": run.extra} if run.extra else {}),
            **({"faultfs": run.faultfs} if run.faultfs is not None else {}),
            # env/test's STREAMBENCH_JVM_EXTRA_OPTS (systems/plan.py), when set: every JVM of this cluster had them
            **({"jvmExtraOpts": pl.jvm_extra_opts} if pl.jvm_extra_opts else {}),
        }
        atomic_write_json(rundir / CLUSTER_JSON, doc)
        log(f"{system} {level}/{tuning} ready and verified in {verified_s:.1f} s: {rundir / CLUSTER_JSON}")
        return doc
    except BaseException as e:
        log(f"up failed ({type(e).__name__}); stopping everything started in {rundir}")
        try:
            down(rundir, cfg, log=log)
        except Exception as e2:  # report, but keep the original error
            log(f"cleanup after failed up: {e2}")
        raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def load_cluster(rundir: Path) -> dict[str, Any]:
    f = Path(rundir) / CLUSTER_JSON
    try:
        return json.loads(f.read_text())
    except OSError:
        raise SystemsError(f"{f}: no cluster.json (was `up` run with --dir {rundir}?)") from None
    except ValueError as e:
        raise SystemsError(f"{f}: not valid JSON ({e})") from None


class _Attached:
    """A Run-like view of an already running cluster, for verify."""

    def __init__(self, doc: dict, cfg: dict):
        self.system, self.level, self.tuning = doc["system"], doc["level"], doc["tuning"]
        self.durability = dur.load(doc.get("durabilityFile") or resolve(cfg["durability_file"]))
        self.endpoints = {k: doc[k] for k in SYSTEMS if k in doc}
        self.nodes = doc["nodes"]
        self.extra = doc.get("extra", {})
        self.faults = bool(doc.get("faults", False))
        self.cfg = cfg


def verify(rundir: Path, cfg: dict | None = None, log=print) -> dict[str, Any]:
    """Read the effective settings back from the running cluster; fail if they differ from the level."""
    cfg = cfg or load_config()
    doc = load_cluster(rundir)
    dead = [r.node for r in read_pid_records(Path(rundir)) if not r.alive()]
    if dead:
        raise SystemsError(f"{rundir}: nodes not running: {', '.join(dead)}")
    effective = _impl(doc["system"]).verify(_Attached(doc, cfg), create=False)
    doc["effective"] = effective
    doc["verifiedAt"] = _now()
    atomic_write_json(Path(rundir) / CLUSTER_JSON, doc)
    log(f"{doc['system']} {doc['level']}/{doc['tuning']}: effective settings match")
    return doc


def kill_nodes(rundir: Path, nodes: list[str] | None = None, timeout: float = 10.0) -> list[str]:
    """SIGKILL the process group of each node (default: every node of the run) and wait until none of its
    processes is left. Their pid files stay, for restart_nodes. Returns the nodes killed."""
    rundir = Path(rundir)
    recs = {r.node: r for r in read_pid_records(rundir)}
    names = list(recs) if nodes is None else nodes
    unknown = [n for n in names if n not in recs]
    if unknown:
        raise SystemsError(f"{rundir}: no pid file for node(s) {', '.join(unknown)} (known: {', '.join(recs)})")
    victims = [recs[n] for n in names if recs[n].alive()]
    for r in victims:
        try:
            os.killpg(r.pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + timeout
    while any(r.alive() for r in victims):
        if time.monotonic() > deadline:
            raise SystemsError(f"{rundir}: still alive {timeout:.0f} s after SIGKILL: "
                               f"{', '.join(r.node for r in victims if r.alive())}")
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return [r.node for r in victims]


def restart_nodes(rundir: Path, nodes: list[str] | None = None, cfg: dict | None = None, log=print,
                  timeout: float | None = None) -> list[str]:
    """Start stopped nodes again with the command, directory and environment recorded at `up` (default: every
    node of the run that is not running). Nodes start in reverse stop order (Pulsar: ZooKeeper, then the bookies,
    then the broker; Kafka: all at once); each stage waits until its nodes' first port listens. Updates the pid
    files and the pids in cluster.json. Returns the nodes started."""
    rundir = Path(rundir)
    cfg = cfg or load_config()
    timeout = timeout or cfg["startup_timeout_seconds"]
    doc = load_cluster(rundir)
    by_name = {n["name"]: n for n in doc["nodes"]}
    recs = {r.node: r for r in read_pid_records(rundir) if r.node in by_name}
    names = [n for n in recs if not recs[n].alive()] if nodes is None else nodes
    missing = [n for n in names if n not in recs or not recs[n].cwd]
    if missing:
        raise SystemsError(f"{rundir}: cannot restart {', '.join(missing)}: no pid file with the start "
                           f"command (was the cluster started by this launcher version?)")
    running = [n for n in names if recs[n].alive()]
    if running:
        raise SystemsError(f"{rundir}: cannot restart {', '.join(running)}: still running")
    started = []
    for stage in sorted({recs[n].stop_stage for n in names}, reverse=True):
        group = [n for n in names if recs[n].stop_stage == stage]
        for n in group:
            r = recs[n]
            env = dict(os.environ)
            env.update(r.env or {})
            p, new = start_process(rundir, n, r.cmd, cwd=Path(r.cwd), log=Path(r.log or by_name[n]["log"]),
                                   env=env, stop_stage=r.stop_stage, env_extra=r.env)
            by_name[n]["pid"], by_name[n]["pgid"] = p.pid, os.getpgid(p.pid)
            started.append(n)
            log(f"restarted {n} (pid {p.pid})")
        deadline = time.monotonic() + timeout
        for n in group:
            port = next(iter(by_name[n]["ports"].values()), None)
            while port is not None and not port_listening(port):
                if not read_pid_records(rundir) or not next(
                        (r for r in read_pid_records(rundir) if r.node == n)).alive():
                    raise SystemsError(f"{n} exited during restart; last lines of {by_name[n]['log']}:\n"
                                       f"{tail(Path(by_name[n]['log']))}")
                if time.monotonic() > deadline:
                    raise SystemsError(f"{n}: port {port} not listening {timeout:.0f} s after restart; last lines "
                                       f"of {by_name[n]['log']}:\n{tail(Path(by_name[n]['log']))}")
                time.sleep(0.2)
    doc["restartedAt"] = _now()
    atomic_write_json(rundir / CLUSTER_JSON, doc)
    return started


def status(rundir: Path) -> dict[str, Any]:
    rundir = Path(rundir)
    recs = read_pid_records(rundir)
    nodes = []
    for r in recs:
        a = r.alive()
        nodes.append({"node": r.node, "pid": r.pid, "alive": a, "rssBytes": rss_bytes(r.pid) if a else None})
    doc = None
    if (rundir / CLUSTER_JSON).is_file():
        doc = load_cluster(rundir)
    ports = _ports_of(rundir)
    listening = [p for p in ports if port_listening(p)]
    state = "stopped" if not any(n["alive"] for n in nodes) else (
        "running" if all(n["alive"] for n in nodes) else "degraded")
    return {"state": state, "system": doc and doc["system"], "level": doc and doc["level"],
            "nodes": nodes, "listeningPorts": listening}
