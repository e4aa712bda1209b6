"""The fault hook of one host: kill -9 and restart a cluster's nodes there, on command, as the fault runs need.

Standard library only, with relative imports of proc and ready: this machine runs it as `python -m systems.faulthook`,
an inventory's host as `python3 -m sbhost.faulthook` (the host-side helper's copy, testbeds/hostside). One hook per
host that holds targets; the controller (workloads/faultrun.py) drives them all through their stdin, one command per
line, and reads one JSON event per line from their stdout:

  (start)        {"event": "ready"}        the targets' pid records are read; imports done before any strike
  strike         {"event": "struck", "t"}  kill -9 every target's process group, wait until none is left
  drop           {"event": "dropped", "t", "detail"}   power loss: unsynced writes of the faultfs mounts dropped
  restart S      {"event": "restarted", "t", "nodes"}  start the targets of stop stage S again from their records
  back S|all     {"event": "back", "t"}    the targets of stage S (all: every target) listen on their ports
  isolate A,B    {"event": "isolated", "t", "peers", "keep"}   this host drops every packet to and from the addresses
                 A, B (a network partition: one nftables table of its own in the host's network namespace) but TCP on
                 its own ssh server's port; the address @ssh-client stands for the one the hook's ssh connection comes
                 from (the controller, and on the lab the fault cycle's client)
  isolate-all    {"event": "isolated", "t", "peers": "all", "keep"}   this host drops every packet that is not on its
                 loopback, its clients' included, but for its own ssh server's port (the hook's control channel:
                 the port of SSH_CONNECTION; none when the hook was not started over ssh)
  throttle K     {"event": "throttled", "t", "devices", "kbit"}  a token bucket (tc tbf) of K kbit/s on the egress of
                 every interface of this host but loopback (a slow link); root qdiscs of this cluster's handle
  heal           {"event": "healed", "t"}  the partition's table removed, the token buckets removed
  pause          {"event": "paused", "t", "targets"}   SIGSTOP of every target's process group (a stall: a long GC
                 pause, a frozen VM); its sockets stay open
  resume         {"event": "resumed", "t"} SIGCONT of the same
  any failure    {"event": "failed", "node", "error", "logTail"}, then the hook exits 1

Whatever ends the hook (end of its input, a failure, SIGTERM, SIGINT, SIGHUP), it heals its partition and resumes
what it paused before it exits. `heal RUNDIR` as a command of its own removes the partition table and the token
buckets of RUNDIR's cluster on this host (testbeds' cluster down runs it: a hook killed with SIGKILL cannot).

    python -m systems.faulthook --rundir RUNDIR --targets n1,n2 --restart-deadline S [--power-loss]
    python -m systems.faulthook heal RUNDIR
"""
from __future__ import annotations

import argparse
import hashlib
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .proc import port_listening, read_pid_records, start_process, tail


def say(**kv) -> None:
    print(json.dumps(kv), flush=True)


class Hook:
    def __init__(self, rundir: Path, names: list[str], deadline: float, power_loss: bool):
        self.rundir, self.names, self.deadline = rundir, names, deadline
        self.drop = None
        if power_loss:
            from . import faultfs  # imported now, not after the strike

            self.drop = faultfs.drop_all
        cluster = json.loads((rundir / "cluster.json").read_text()) if (rundir / "cluster.json").is_file() else {}
        nodes = {n["name"]: n for n in cluster.get("nodes", [])}
        self.recs = {r.node: r for r in read_pid_records(rundir)}
        missing = [n for n in names if n not in self.recs]
        if missing:
            raise HookError(missing[0], "no pid file")
        # a node is back when its ports listen on its address (not a bookie's metrics port: switched off)
        self.ports = {n: [(nodes.get(n, {}).get("host") or "127.0.0.1", p)
                          for k, p in (nodes.get(n, {}).get("ports") or {}).items() if k != "metrics"] for n in names}
        self.procs: dict = {}
        self.restarted: list[str] = []
        self.paused: list[str] = []
        self.net = Net(rundir)

    def strike(self) -> None:
        t = time.time()
        for n in self.names:
            try:
                os.killpg(self.recs[n].pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        say(event="struck", t=t, targets=self.names)
        stop = time.monotonic() + 30
        while any(self.recs[n].alive() for n in self.names) and time.monotonic() < stop:
            time.sleep(0.02)

    def drop_unsynced(self) -> None:
        if self.drop is None:
            raise HookError("-", "drop: not a power-loss hook")
        detail = self.drop(self.rundir)
        say(event="dropped", t=time.time(), detail=detail if isinstance(detail, (dict, list, int)) else str(detail))

    def restart(self, stage: int) -> None:
        group = [n for n in self.names if self.recs[n].stop_stage == stage and n not in self.restarted]
        for n in group:
            r = self.recs[n]
            if not r.cwd:
                raise HookError(n, "its pid file has no start command (cluster started by an older launcher)")
            env = dict(os.environ)
            env.update(r.env or {})
            p, _ = start_process(self.rundir, r.node, r.cmd, cwd=Path(r.cwd), log=Path(r.log), env=env,
                                 stop_stage=r.stop_stage, env_extra=r.env)
            self.procs[n] = p
        self.restarted += group
        say(event="restarted", t=time.time(), nodes=group)

    def back(self, stage: int | None, end: float) -> None:
        group = [n for n in self.restarted if stage is None or self.recs[n].stop_stage == stage]
        for n in group:
            while not all(port_listening(p, a) for a, p in self.ports[n]):
                if self.procs[n].poll() is not None:
                    raise HookError(n, f"{n} exited with status {self.procs[n].returncode}", self.recs[n].log)
                if time.monotonic() > end:
                    raise HookError(n, f"{n} not back (ports {[p for _, p in self.ports[n]]}) {self.deadline:.0f} s "
                                       "after the restart", self.recs[n].log)
                time.sleep(0.1)
        say(event="back", t=time.time(), nodes=group)


    def pause(self) -> None:
        for n in self.names:
            try:
                os.killpg(self.recs[n].pgid, signal.SIGSTOP)
            except ProcessLookupError:
                raise HookError(n, f"{n} is not running: nothing to pause", self.recs[n].log) from None
            self.paused.append(n)
        say(event="paused", t=time.time(), targets=self.names)

    def resume(self, quiet: bool = False) -> None:
        for n in self.paused:
            try:
                os.killpg(self.recs[n].pgid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.paused = []
        if not quiet:
            say(event="resumed", t=time.time())

    def isolate(self, peers: list[str]) -> None:
        keep = kept_ports()
        peers = resolve_peers(peers)
        self.net.isolate(peers, keep)
        say(event="isolated", t=time.time(), peers=peers, keep=keep)

    def isolate_all(self) -> None:
        keep = kept_ports()
        self.net.isolate_all(keep)
        say(event="isolated", t=time.time(), peers="all", keep=keep)

    def throttle(self, kbit: int) -> None:
        devs = self.net.throttle(kbit)
        say(event="throttled", t=time.time(), devices=devs, kbit=kbit)

    def heal(self) -> None:
        self.net.heal()
        say(event="healed", t=time.time())

    def close(self) -> None:
        """Whatever happened: no partition and no paused process outlive the hook."""
        self.resume(quiet=True)
        self.net.heal()


def table_name(rundir: Path | str) -> str:
    """The nftables table of a cluster's partitions on a host: by its run directory, so that `cluster down` finds it."""
    return "sbfault_" + hashlib.sha1(os.path.normpath(str(rundir)).encode()).hexdigest()[:12]


SSH_CLIENT = "@ssh-client"


def resolve_peers(peers: list[str]) -> list[str]:
    """The peers with @ssh-client replaced by the address this hook's ssh connection comes from (the first field of
    SSH_CONNECTION); a HookError when the hook was not started over ssh."""
    out = []
    for a in peers:
        if a == SSH_CLIENT:
            parts = os.environ.get("SSH_CONNECTION", "").split()
            if len(parts) != 4:
                raise HookError("-", f"isolate: {SSH_CLIENT} names the ssh client's address, and this hook was not "
                                     "started over ssh (no SSH_CONNECTION)")
            a = parts[0]
        out.append(a)
    return out


def partition_ruleset(table: str, peers: list[str], keep_ports: list[int] = ()) -> str:
    """One inet table: packets from and to the peers dropped in both directions, before any other filter, but TCP
    to and from the local ports kept (the ssh server's: the hook's control channel, when the controller is among the
    peers). Stateless: established connections are cut as well, as when a switch port dies."""
    ports = sorted({int(p) for p in keep_ports})
    if any(not 0 < p < 65536 for p in ports):
        raise ValueError(f"a kept port out of range: {ports}")
    v4 = sorted({str(ipaddress.ip_address(a)) for a in peers if ipaddress.ip_address(a).version == 4},
                key=ipaddress.ip_address)
    v6 = sorted({str(ipaddress.ip_address(a)) for a in peers if ipaddress.ip_address(a).version == 6},
                key=ipaddress.ip_address)
    if not v4 and not v6:
        raise ValueError("a partition needs at least one peer address")
    lines = [f"table inet {table} {{"]
    rules_in = [f"tcp dport {{ {', '.join(map(str, ports))} }} accept;"] if ports else []
    rules_out = [f"tcp sport {{ {', '.join(map(str, ports))} }} accept;"] if ports else []
    if v4:
        lines.append(f"  set peers4 {{ type ipv4_addr; elements = {{ {', '.join(v4)} }}; }}")
        rules_in.append("ip saddr @peers4 drop;")
        rules_out.append("ip daddr @peers4 drop;")
    if v6:
        lines.append(f"  set peers6 {{ type ipv6_addr; elements = {{ {', '.join(v6)} }}; }}")
        rules_in.append("ip6 saddr @peers6 drop;")
        rules_out.append("ip6 daddr @peers6 drop;")
    lines.append(f"  chain input {{ type filter hook input priority -10; policy accept; {' '.join(rules_in)} }}")
    lines.append(f"  chain output {{ type filter hook output priority -10; policy accept; {' '.join(rules_out)} }}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def isolate_all_ruleset(table: str, keep_ports: list[int]) -> str:
    """One inet table: every packet dropped but on loopback (the host's own nodes talk over it) and TCP to and from
    the local ports kept (the ssh server's: the fault hook's own control channel), in both directions."""
    ports = sorted({int(p) for p in keep_ports})
    if any(not 0 < p < 65536 for p in ports):
        raise ValueError(f"a kept port out of range: {ports}")
    keep_in = f" tcp dport {{ {', '.join(map(str, ports))} }} accept;" if ports else ""
    keep_out = f" tcp sport {{ {', '.join(map(str, ports))} }} accept;" if ports else ""
    return "\n".join([
        f"table inet {table} {{",
        f'  chain input {{ type filter hook input priority -10; policy drop; iif "lo" accept;{keep_in} }}',
        f'  chain output {{ type filter hook output priority -10; policy drop; oif "lo" accept;{keep_out} }}',
        "}"]) + "\n"


def kept_ports() -> list[int]:
    """What a partition leaves open on this host: the ssh server's port the hook was reached on (none without ssh)."""
    port = ssh_server_port()
    return [port] if port else []


def ssh_server_port() -> int | None:
    """The local port of the ssh connection this process was started over (SSH_CONNECTION), or None."""
    parts = os.environ.get("SSH_CONNECTION", "").split()
    try:
        return int(parts[3]) if len(parts) == 4 else None
    except ValueError:
        return None


def qdisc_handle(rundir: Path | str) -> str:
    """The tc handle of a cluster's token buckets on a host (`MAJOR:`), by its run directory like the nft table."""
    major = int(hashlib.sha1(os.path.normpath(str(rundir)).encode()).hexdigest()[:4], 16) % 0xfffd + 1
    return f"{major:x}:"


def tbf_args(kbit: int) -> list[str]:
    """A token bucket of `kbit` kbit/s: a burst of 10 ms of the rate (at least 10 KB: a jumbo frame of EC2's 9001-byte
    MTU must fit, or it would never pass), a queue of 200 ms of it (at least two bursts): past that, packets are
    dropped as at a saturated link."""
    if not isinstance(kbit, int) or isinstance(kbit, bool) or kbit <= 0:
        raise ValueError(f"a token-bucket rate must be a positive number of kbit/s, not {kbit!r}")
    burst = max(10240, kbit * 1000 // 8 // 100)
    limit = max(2 * burst, kbit * 1000 // 8 // 5)
    return ["tbf", "rate", f"{kbit}kbit", "burst", str(burst), "limit", str(limit)]


def _sbin(name: str) -> str | None:
    """A system tool on this host (a login user's PATH may lack /usr/sbin), or None."""
    return shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/sbin/{name}") if os.path.exists(p)), None)


def tc_path() -> str | None:
    return _sbin("tc")


def nft_path() -> str | None:
    return _sbin("nft")


def _run_privileged(exe: str | None, name: str, package: str, args: list[str],
                    stdin: str | None = None) -> subprocess.CompletedProcess:
    """A system tool as root: itself when this is root, else through `sudo -n` (a login user's hook)."""
    if exe is None:
        raise HookError("-", f"{name} not found on this host (Debian/Ubuntu package {package})")
    cmd = [exe, *args]
    if os.geteuid() != 0:
        cmd = ["sudo", "-n", *cmd]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=30)


class Net:
    """This host's side of a partition: one nftables table named for the cluster, added and removed atomically."""

    def __init__(self, rundir: Path):
        self.table = table_name(rundir)
        self.handle = qdisc_handle(rundir)
        self.on = False
        self.shaped: list[str] = []

    @staticmethod
    def nft(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
        return _run_privileged(nft_path(), "nft", "nftables", args, stdin)

    @staticmethod
    def tc(args: list[str]) -> subprocess.CompletedProcess:
        return _run_privileged(tc_path(), "tc", "iproute2", args)

    def isolate(self, peers: list[str], keep_ports: list[int] = ()) -> None:
        self._table("isolate", lambda: partition_ruleset(self.table, peers, keep_ports))

    def isolate_all(self, keep_ports: list[int]) -> None:
        self._table("isolate-all", lambda: isolate_all_ruleset(self.table, keep_ports))

    def _table(self, cmd: str, ruleset) -> None:
        """Add the cluster's table with the rules `ruleset()` writes (a ValueError of it: the command's error)."""
        if self.on:
            raise HookError("-", f"{cmd}: table {self.table} is in place already (heal first)")
        try:
            rules = ruleset()
        except ValueError as e:
            raise HookError("-", f"{cmd}: {e}") from None
        self.on = True  # set first: a table added by a call that then timed out is still removed
        r = self.nft(["-f", "-"], rules)
        if r.returncode != 0:
            self.heal()
            raise HookError("-", f"{cmd}: nft refused the ruleset: {r.stderr.strip().splitlines()[0] if r.stderr.strip() else r.returncode}")

    def throttle(self, kbit: int) -> list[str]:
        if self.shaped:
            raise HookError("-", f"throttle: token buckets {self.handle} are in place already (heal first)")
        try:
            spec = tbf_args(kbit)
        except ValueError as e:
            raise HookError("-", f"throttle: {e}") from None
        devs = [d for d in os.listdir("/sys/class/net") if d != "lo"]
        if not devs:
            raise HookError("-", "throttle: this host has no interface but loopback")
        for d in sorted(devs):
            self.shaped.append(d)  # first: one added by a call that then timed out is still removed
            r = self.tc(["qdisc", "add", "dev", d, "root", "handle", self.handle, *spec])
            if r.returncode != 0:
                self.shaped.pop()
                self.heal()
                raise HookError("-", f"throttle: tc refused a token bucket on {d}: {r.stderr.strip() or r.returncode}")
        return sorted(devs)

    def heal(self) -> None:
        if self.shaped:
            remove_qdiscs(self.handle, self.tc)
            self.shaped = []
        if not self.on:
            return
        remove_table(self.table, self.nft)
        self.on = False


def remove_table(table: str, nft=Net.nft) -> bool:
    """Delete the table if it is there; True when it was. Any other failure is an error."""
    r = nft(["list", "table", "inet", table])
    if r.returncode != 0:
        return False
    r = nft(["delete", "table", "inet", table])
    if r.returncode != 0:
        raise HookError("-", f"heal: nft could not delete table inet {table}: {r.stderr.strip()}")
    return True


def remove_qdiscs(handle: str, tc=Net.tc) -> list[str]:
    """Delete the root qdisc of every interface whose handle is `handle` (this cluster's token buckets), leaving any
    other alone; the interfaces it was removed from."""
    out = []
    for d in sorted(os.listdir("/sys/class/net")):
        r = tc(["qdisc", "show", "dev", d, "root"])
        if r.returncode != 0 or not any(line.split()[2:3] == [handle] for line in r.stdout.splitlines()
                                        if line.startswith("qdisc ")):
            continue
        r = tc(["qdisc", "del", "dev", d, "root", "handle", handle])
        if r.returncode != 0:
            raise HookError("-", f"heal: tc could not delete the token bucket {handle} on {d}: {r.stderr.strip()}")
        out.append(d)
    return out


class HookError(RuntimeError):
    def __init__(self, node: str, error: str, log: str | None = None):
        super().__init__(error)
        self.node, self.error, self.log = node, error, log


def _stop_on_signal(signum, frame):
    raise SystemExit(128 + signum)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["heal"]:
        if len(argv) != 2:
            print("usage: faulthook heal RUNDIR", file=sys.stderr)
            return 2
        try:
            removed = remove_table(table_name(argv[1]))
            unshaped = remove_qdiscs(qdisc_handle(argv[1])) if tc_path() else []
        except HookError as e:
            print(e.error, file=sys.stderr)
            return 1
        say(event="healed", removed=removed, unshaped=unshaped)
        return 0
    ap = argparse.ArgumentParser(prog="faulthook", description=__doc__.splitlines()[0])
    ap.add_argument("--rundir", type=Path, required=True)
    ap.add_argument("--targets", required=True)
    ap.add_argument("--restart-deadline", type=float, default=120)
    ap.add_argument("--power-loss", action="store_true")
    a = ap.parse_args(argv)
    hook = None
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _stop_on_signal)
    try:
        hook = Hook(a.rundir, [n for n in a.targets.split(",") if n], a.restart_deadline, a.power_loss)
        say(event="ready")
        end = None
        for line in sys.stdin:
            cmd = line.split()
            if not cmd:
                continue
            if cmd[0] == "strike":
                hook.strike()
            elif cmd[0] == "drop":
                hook.drop_unsynced()
            elif cmd[0] == "restart":
                if end is None:  # the restart deadline runs from the first restart
                    end = time.monotonic() + a.restart_deadline
                hook.restart(int(cmd[1]))
            elif cmd[0] == "back":
                hook.back(None if cmd[1] == "all" else int(cmd[1]),
                          end if end is not None else time.monotonic() + a.restart_deadline)
            elif cmd[0] == "isolate" and len(cmd) == 2:
                hook.isolate([x for x in cmd[1].split(",") if x])
            elif cmd[0] == "isolate-all" and len(cmd) == 1:
                hook.isolate_all()
            elif cmd[0] == "throttle" and len(cmd) == 2 and cmd[1].isdigit():
                hook.throttle(int(cmd[1]))
            elif cmd[0] == "heal":
                hook.heal()
            elif cmd[0] == "pause":
                hook.pause()
            elif cmd[0] == "resume":
                hook.resume()
            else:
                raise HookError("-", f"unknown command {line.strip()!r}")
    except HookError as e:
        say(event="failed", node=e.node, error=e.error, logTail=tail(Path(e.log), 40) if e.log else "")
        return 1
    finally:
        if hook is not None:
            try:
                hook.close()
            except HookError as e:
                say(event="failed", node=e.node, error=e.error, logTail="")
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
