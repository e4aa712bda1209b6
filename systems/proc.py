"""Processes, pid files and ports of one run directory.

Each node runs in its own session (start_new_session=True), so its process group id equals the pid of
the process we started and a TERM/KILL to the group reaches every child. A pid file per node
(RUNDIR/pids/<node>.json: pid, pgid, start time from /proc, command) lets `down` find the processes
again after a crash of the launcher, and lets `up` detect a stale cluster.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .util import SystemsError, atomic_write_text

LOOPBACK = "127.0.0.1"


PORT_FLOOR = 20000


def _ephemeral_start() -> int:
    """First port of the kernel's ephemeral range (outgoing connections take their local port from it)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def allocate_ports(n: int, host: str = LOOPBACK, rng=None, exclude=()) -> list[int]:
    """n distinct free TCP ports on host, drawn at random below the kernel's ephemeral range.

    bind(0) would hand out a port of the ephemeral range, which any outgoing connection of another process
    (a client, a ZooKeeper session) may take as its local port before our node binds it; the ci Pulsar broker
    once failed with "Address already in use" that way. Ports in [PORT_FLOOR, ephemeral start) are never
    handed out as local ports, so only a server binding the same port can race with us. Each candidate is
    bound and held until all n are chosen, so the ports are distinct and were free when chosen. `exclude`: ports
    already handed out and not yet bound (a cluster's earlier nodes, which start after all are chosen): free when
    tested, so only this list keeps a later node off them (a local run once failed on kafka-3's "Address already in
    use" that way).
    """
    import random
    rng = rng or random.SystemRandom()
    top = _ephemeral_start()
    if top - PORT_FLOOR < 4 * n:
        raise SystemsError(f"allocate_ports: only {top - PORT_FLOOR} ports below the ephemeral range "
                           f"(/proc/sys/net/ipv4/ip_local_port_range starts at {top}) for {n}")
    socks: list[socket.socket] = []
    tried: set[int] = {p for p in exclude if PORT_FLOOR <= p < top}
    try:
        while len(socks) < n:
            if len(tried) >= top - PORT_FLOOR:
                raise SystemsError(f"allocate_ports: no {n} free ports in [{PORT_FLOOR}, {top})")
            port = rng.randrange(PORT_FLOOR, top)
            if port in tried:
                continue
            tried.add(port)
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind((host, port))
            except OSError:
                s.close()
                continue
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def port_listening(port: int, host: str = LOOPBACK, timeout: float = 0.3) -> bool:
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_bindable(port: int, host: str = LOOPBACK) -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def ensure_ports_free(ports: dict[str, int], host: str = LOOPBACK) -> None:
    """Raise a clear error naming the first port (by its role) that is already in use."""
    for name, port in ports.items():
        if not port_bindable(port, host):
            raise SystemsError(f"port {host}:{port} ({name}) is already in use")


def proc_start_time(pid: int) -> int | None:
    """Start time of pid in clock ticks since boot (field 22 of /proc/<pid>/stat), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may contain spaces; it is enclosed in parentheses
    rest = stat[stat.rindex(")") + 2:].split()
    if rest[0] == "Z":  # zombie: exited, not yet reaped
        return None
    return int(rest[19])


def group_members(pgid: int) -> list[int]:
    """Pids of live (non-zombie) processes whose process group is pgid."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2:].split()
        if rest[0] != "Z" and int(rest[2]) == pgid:
            out.append(int(d))
    return out


@dataclass
class PidRecord:
    node: str
    pid: int
    pgid: int
    start_time: int | None
    cmd: list[str]
    stop_stage: int = 0
    # what restart_nodes needs to start the node again: working directory, log, the variables added to the
    # launcher's environment
    cwd: str | None = None
    log: str | None = None
    env: dict[str, str] | None = None

    def alive(self) -> bool:
        """True while any process of the node's group lives (and the leader, if alive, is ours)."""
        st = proc_start_time(self.pid)
        if st is not None and self.start_time is not None and st != self.start_time:
            return False  # the pid was reused by an unrelated process
        if st is not None:
            return True
        return bool(group_members(self.pgid))

    def to_json(self) -> dict:
        return {"node": self.node, "pid": self.pid, "pgid": self.pgid, "startTime": self.start_time,
                "cmd": self.cmd, "stopStage": self.stop_stage, "cwd": self.cwd, "log": self.log, "env": self.env}

    @classmethod
    def from_json(cls, d: dict) -> "PidRecord":
        return cls(d["node"], int(d["pid"]), int(d["pgid"]), d.get("startTime"), d.get("cmd", []),
                   int(d.get("stopStage", 0)), d.get("cwd"), d.get("log"), d.get("env"))


def pid_dir(rundir: Path) -> Path:
    return rundir / "pids"


def read_pid_records(rundir: Path) -> list[PidRecord]:
    recs = []
    d = pid_dir(rundir)
    if not d.is_dir():
        return recs
    for f in sorted(d.glob("*.json")):
        try:
            recs.append(PidRecord.from_json(json.loads(f.read_text())))
        except (OSError, ValueError, KeyError) as e:
            raise SystemsError(f"{f}: unreadable pid file ({e})") from None
    return recs


# The node's stdout+stderr go through a pipe to a reader in the node's own process group: the log takes bytes up to
# its cap, then a marker line, then the rest is read and discarded (the node never blocks or gets EPIPE). The cap is
# the log's, not one start's: each start gets what the file has left below the cap (a node that fault cycles kill
# and restart, with the same recorded command, does not add a cap's worth per start), and a start that finds the log
# full adds one line saying so and discards all its output. bash execs the node after setting up the pipe, so the
# recorded pid is the node's own. The reader is `head -c` unbuffered (stdbuf -o0: it writes every read at once);
# buffered, a start-up line ("Kafka Server started") followed by silence would then never reach the log.
_CAPPED = ('sb_used=$(stat -c %s "$2" 2>/dev/null || echo 0); sb_left=$(( $1 - sb_used ));'
           ' if [ "$sb_left" -le 0 ]; then'
           ' printf "\n[streambench: log at its cap of %s bytes; this start\x27s output was discarded]\n" "$1" >>"$2";'
           ' exec >/dev/null 2>&1; shift 2; exec "$@"; fi;'
           ' exec > >({ stdbuf -o0 head -c "$sb_left"; if [ "$(head -c 1 | wc -c)" -gt 0 ]; then'
           ' printf "\n[streambench: log capped at %s bytes; the rest was discarded]\n" "$1"; exec cat >/dev/null; fi;'
           ' } >>"$2") 2>&1; shift 2; exec "$@"')


def capped(cmd: list[str], log: Path, max_bytes: int) -> list[str]:
    """cmd wrapped so that what it prints reaches log only while the file is below max_bytes (then a marker line);
    the same wrapped command started again appends only what is left below the cap."""
    return ["bash", "-c", _CAPPED, "streambench-node", str(int(max_bytes)), str(log), *cmd]


def raise_nofile() -> None:
    """In the child before exec: open-file soft limit up to the hard one (a broker serving a fan-out run holds a
    connection per consumer; study 003, workloads/fanout.py). Raising the hard limit needs CAP_SYS_RESOURCE."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass


def start_process(rundir: Path, node: str, cmd: list[str], *, cwd: Path, log: Path, env: dict[str, str],
                  stop_stage: int = 0, max_log_bytes: int | None = None,
                  env_extra: dict[str, str] | None = None) -> tuple[subprocess.Popen, PidRecord]:
    """Start cmd in a new session with stdout+stderr appended to log (at most max_log_bytes of it, if given);
    write its pid file first thing. env_extra (the variables env adds to the launcher's) is recorded for restarts."""
    log.parent.mkdir(parents=True, exist_ok=True)
    lib = (env_extra or {}).get("ROCKSDB_SHAREDLIB_DIR")
    if lib:
        # the node's own directory for RocksDB's extracted library (Cluster.spawn): a copy there belongs to an earlier
        # process of this node, which the callers have checked is not running (a kill -9 left it behind)
        Path(lib).mkdir(parents=True, exist_ok=True)
        for stale in Path(lib).glob("librocksdbjni*"):
            stale.unlink(missing_ok=True)
    if max_log_bytes:
        cmd = capped(cmd, log, max_log_bytes)
    with open(log, "ab") as lf:
        p = subprocess.Popen(cmd, cwd=cwd, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=env, start_new_session=True, preexec_fn=raise_nofile)
    rec = PidRecord(node, p.pid, p.pid, proc_start_time(p.pid), cmd, stop_stage, str(cwd), str(log),
                    dict(env_extra or {}))
    pid_dir(rundir).mkdir(parents=True, exist_ok=True)
    atomic_write_text(pid_dir(rundir) / f"{node}.json", json.dumps(rec.to_json(), indent=1))
    return p, rec


def _signal_group(rec: PidRecord, sig: int) -> None:
    try:
        os.killpg(rec.pgid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        # the pgid now belongs to someone else's process: never signal it
        pass


def stop_records(records: list[PidRecord], timeout: float, log=None) -> list[str]:
    """TERM each stage's process groups (lowest stop_stage first), wait up to timeout, then KILL.

    Returns the names of nodes that needed SIGKILL. Reaps children of this process (no zombies).
    """
    killed = []
    for stage in sorted({r.stop_stage for r in records}):
        group = [r for r in records if r.stop_stage == stage and r.alive()]
        for r in group:
            _signal_group(r, signal.SIGTERM)
            # a stopped group (a pause fault whose hook was killed, a frozen broker) takes its TERM once continued
            _signal_group(r, signal.SIGCONT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(r.alive() for r in group):
            _reap()
            time.sleep(0.1)
        for r in group:
            if r.alive():
                if log:
                    log(f"{r.node}: still running {timeout:.0f} s after SIGTERM; sending SIGKILL")
                _signal_group(r, signal.SIGKILL)
                killed.append(r.node)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(r.alive() for r in group):
            _reap()
            time.sleep(0.05)
        for r in group:
            if r.alive():
                raise SystemsError(f"{r.node} (pid {r.pid}) survived SIGKILL")
    _reap()
    return killed


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def wait_ports_closed(ports: list[int], timeout: float = 10.0) -> list[int]:
    """Wait until nothing listens on the ports; return those still listening after timeout."""
    deadline = time.monotonic() + timeout
    busy = [p for p in ports if port_listening(p)]
    while busy and time.monotonic() < deadline:
        time.sleep(0.2)
        busy = [p for p in busy if port_listening(p)]
    return busy


def tail(path: Path, n: int = 30) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return "\n".join(lines[-n:])


def rss_bytes(pid: int) -> int | None:
    """Resident set size of pid (VmRSS), None if gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
