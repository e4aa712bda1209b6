"""Run one fault cell (issue 15): a cluster, keyed traffic on a new topic at a fixed rate with an audit of every
acknowledged send, a fault at a seeded time of the measured phase, the restart, then a verifier that reads the whole
topic back from the beginning and joins it with the audit. The verdict goes into the result file under
`x-streambench.fault`.

One cluster, several cycles: with `--keep-cluster` (the Snakemake rule) a cycle that ended well leaves its cluster
running, its topic deleted, and the next fault run of the same cluster key (workloads/plan.py: system, level, tuning;
faultfs or not) runs its cycle there instead of starting a cluster (a start is 20-40 s of a 60-s run on this
machine). Before a cycle on such a cluster every node must run (`systems status`) and the cluster must serve: all
Kafka brokers registered, the Pulsar broker's health check (a write and read through the bookies) passing; a faultfs
cluster is checkpointed first (what a kernel's periodic write-back would have made durable between two cycles), so
a power loss drops only what its own cycle wrote without a sync. The result records the cycle's number on its
cluster (`clusterCycle`, 1 = a cluster started for it). A cycle that failed, or any interruption, stops the cluster:
the next run starts a fresh one. Without `--keep-cluster` the cluster is stopped after the run, as before.

    python -m workloads.faultrun --clusters data/runs/<tb>/clusters --testbed <tb> --scale <scale> \\
        --system kafka --level L1 --tuning stock --workload <omb workload> --fault crash-all --rep 1 \\
        --in-experiments E000-FAULT --driver workloads/drivers/kafka-L1-stock.yaml \\
        --result data/raw/<tb>/kafka/L1+stock/<workload>--crash-all/rep-1.json --status ... --log ...

Faults (workloads/plan.py FAULTS): kill-leader (the Kafka node leading most partitions of the topic / the Pulsar
broker owning its bundle / Pravega's segment store), kill-bookie (Pulsar, Pravega; one bookie drawn from the run's
seed), kill-one (one node other than the leader, drawn from the seed), crash-all (every server process),
power-loss (every server process, then every write not fsynced is dropped from the faultfs mounts under the nodes'
data directories, systems.faultfs.drop_all).
Each is kill -9 of the nodes' process groups, `downSeconds` of nothing, then the nodes start again from their pid
files (the command, directory, log and variables `up` recorded; ZooKeeper first, then bookies and broker).
The hold faults (plan.HOLD_FAULTS; hosts of their own only) strike the leader without killing it and end after
`downSeconds`: partition-leader (its host cut off from the other server hosts, nftables), partition-minority (cut
off from every host, its clients included, but its ssh port), partition-majority (every other server host cut off
from the leader's host and from the clients: the leader keeps its clients and loses its peers), pause-leader (SIGSTOP, then SIGCONT) and
slow-link-leader (a token bucket of slowLinkKbit on its host's egress, tc tbf).

The strike comes from the fault hooks (systems/faulthook.py: one per host holding targets, on this machine one
process, on an inventory's hosts one over ssh each) started with the cycle, their imports done, waiting on their
stdin: at the planned time the traffic's timer has the driver write one line to each, so no Python start-up lies
between the planned time and the kill; the driver then restarts the targets stage by stage across the hosts. A node that is not back (its ports listening) within restartDeadlineSeconds makes the run failed, with the
node's log tail; the cluster is then torn down, and partial results never reach data/raw. SIGTERM/SIGINT/SIGHUP: the hook is stopped (TERM, KILL after 5 s), then the cluster.

The verdict (never inferred from rates):
  acknowledged           sends the cluster acknowledged
  lost                   acknowledged, not read back
  duplicated             reads of a message beyond its first
  reordered              per key: messages read after a message of the same key with a higher sequence number
  unacknowledgedPresent  read back, but their send failed or was never acknowledged
  publishErrors          sends that failed (client timeout or error)
  unavailableMs          per key: its first failed or slow (> slowMs) send after the strike, to the acknowledgement of
                         its first good send after that; the longest over the keys (0: no send failed or was slow;
                         null: some key never had a good send again)
  recoveryMs             strike to the acknowledgement of the first good send made after the restart
  read                   messages read back (duplicates included)
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import yaml

from systems import faultclient
from systems import plan as splan
from systems.faultclient import SLOW_MS, Audit, CycleFailure
from workloads import plan, scale
from workloads.run import CellFailure, Clusters, hooks, now, tail

ROOT = Path(__file__).resolve().parents[1]
FLUSH_SECONDS = 45.0   # bound on waiting for the last acknowledgements after the traffic
READ_SECONDS = 120.0   # bound on reading the topic back


# ----------------------------------------------------------------------------------------------------- the verdict
def verdict(audit: Audit, read: list[int], strike: float | None, restarted: float | None,
            slow_ms: float = SLOW_MS) -> dict:
    """Join what was read back (message indices in the order read, per partition concatenated) with the audit."""
    n = audit.count
    acked = {i for i in range(n) if audit.state[i] == Audit.OK}
    seen: dict[int, int] = {}
    reordered = 0
    last_seq: dict[int, int] = {}
    for i in read:
        seen[i] = seen.get(i, 0) + 1
        if seen[i] > 1:
            continue  # a duplicate is counted as such, not as a reordering
        k, seq = i % audit.keys, i // audit.keys
        if seq < last_seq.get(k, -1):
            reordered += 1
        else:
            last_seq[k] = seq
    present = set(seen)
    out = {
        "acknowledged": len(acked),
        "lost": len(acked - present),
        "duplicated": sum(c - 1 for c in seen.values()),
        "reordered": reordered,
        "unacknowledgedPresent": len(present - acked),
        "publishErrors": sum(1 for i in range(n) if audit.state[i] == Audit.FAILED),
        "read": len(read),
        "unavailableMs": None,
        "recoveryMs": None,
    }
    if strike is None:
        return out

    def bad(i):
        return audit.state[i] != Audit.OK or (audit.done[i] - audit.sent[i]) * 1000.0 > slow_ms

    # per key (one key, one partition): from its first failed or slow send after the strike to the acknowledgement
    # of its first good send after that one; the longest over the keys (a fault that stalls only the killed
    # leader's partitions is measured on those)
    first_bad: dict[int, float] = {}
    windows: list[float] = []
    closed: set[int] = set()
    for i in range(n):
        k = i % audit.keys
        if k in closed or audit.sent[i] < strike - slow_ms / 1000.0:
            continue
        if bad(i):
            first_bad.setdefault(k, audit.sent[i])
        elif k in first_bad:
            windows.append(audit.done[i] - first_bad[k])
            closed.add(k)
    if not first_bad:
        out["unavailableMs"] = 0.0
    elif len(closed) == len(first_bad):
        out["unavailableMs"] = round(max(windows) * 1000.0, 1)
    if restarted is not None:
        goods = [audit.done[i] for i in range(n) if audit.state[i] == Audit.OK and audit.sent[i] >= restarted]
        if goods:
            out["recoveryMs"] = round((min(goods) - strike) * 1000.0, 1)
    return out


def per_second(audit: Audit, read: list[int], t0: float) -> list[dict]:
    """The cycle second by second from the start of traffic (t0, epoch s): sends made, acknowledgements and
    publish errors received, and acknowledged sends never read back (counted at the second they were sent). What
    the paper's fault timeline draws beside the hook's events."""
    n = audit.count
    if not n:
        return []
    present = set(read)
    last = max([audit.sent[i] for i in range(n)] + [audit.done[i] for i in range(n) if audit.state[i] != Audit.PENDING])
    rows = [{"s": s, "sent": 0, "acked": 0, "errors": 0, "lost": 0} for s in range(int(max(0.0, last - t0)) + 1)]

    def at(t: float) -> dict:
        return rows[min(len(rows) - 1, max(0, int(t - t0)))]
    for i in range(n):
        at(audit.sent[i])["sent"] += 1
        if audit.state[i] == Audit.OK:
            at(audit.done[i])["acked"] += 1
            if i not in present:
                at(audit.sent[i])["lost"] += 1
        elif audit.state[i] == Audit.FAILED:
            at(audit.done[i])["errors"] += 1
    return rows


# ----------------------------------------------------------------------------------------------------- the clients
def with_fault_jvm_opts(opts: list[str]) -> list[str]:
    """The scale's faults.jvmExtraOpts added to STREAMBENCH_JVM_EXTRA_OPTS of this process, which every cluster it
    starts inherits (systems/plan.py reads it; env/test may have set it already): a fault run judges what was lost,
    not how fast, and on two cores C1 alone cuts a Pulsar cycle's cluster start by a third (docs/measurements.yaml
    fault-c1). Returns the options in force (none: [])."""
    have = splan.jvm_extra_opts()
    add = [o for o in opts if o not in have]
    if add:
        os.environ[splan.JVM_EXTRA_ENV] = shlex.join([*have, *add])
    return splan.jvm_extra_opts()


def make_client(system: str, cluster: dict, driver: dict, log: Path, inventory: str | None = None):
    """The cycle's client: in this process on this machine (systems/faultclient.py); on an inventory's hosts the
    agent of that module on the first client host, over ssh (issue 30: the controller of a real fleet has no route
    to the brokers' private addresses; every inventory takes this path, the lab's too, so the lab checks it)."""
    if inventory is None:
        return faultclient.make_client(system, cluster, driver, log)
    from testbeds import inventory as inv_mod, remote
    inv = inv_mod.load(inventory)
    if not inv.clients:
        raise CellFailure("error", f"{inventory}: hosts: no host with role client to run the fault client on",
                          "set-up")
    h = inv.clients[0]
    lib = f"{h.work_dir}/lib"
    cmd = remote.ssh_cmd(h, f"cd {lib} && PYTHONPATH=py exec python3 -m sbhost.faultclient")
    return faultclient.Remote(cmd, h.name, log, system, cluster, driver, f"{h.work_dir}/runs/faultclient.log")


def checkpoint_faultfs(cluster: dict, rundir: Path, inventory: str | None) -> None:
    """Before a cycle on a reused faultfs cluster: every cached write of its mounts made durable (what a kernel's
    periodic write-back would have done between two cycles), here or on each server host (over ssh)."""
    if inventory is None:
        from systems import faultfs

        faultfs.checkpoint_all(rundir)
        return
    from testbeds import cluster as tb_cluster, inventory as inv_mod
    from testbeds.util import TestbedError
    try:
        tb_cluster.faultfs_checkpoint(inv_mod.load(inventory), {
            n["hostName"]: n["hostRunDir"] for n in cluster["nodes"] if n.get("hostRunDir")})
    except TestbedError as e:
        raise CellFailure("cluster", f"faultfs checkpoint before the cycle: {e}", "set-up") from None


def client_addresses(inventory: str | None) -> list[str]:
    """The addresses of the inventory's client hosts (none on this machine)."""
    if inventory is None:
        return []
    from testbeds import inventory as inv_mod
    return sorted({h.address for h in inv_mod.load(inventory).clients})


def server_nodes(cluster: dict) -> list[dict]:
    """Every node of cluster.json is a server process (Kafka's three nodes; Pulsar's ZooKeeper, bookies, broker)."""
    return list(cluster["nodes"])


def partition_peers(cluster: dict, names: list[str]) -> dict[str, list[str]]:
    """Per host of the targets: the addresses of every other server host of the cluster (its clients are not
    among them). One line naming the cluster's hosts when the targets share their host's address with another node's."""
    nodes = {n["name"]: n for n in cluster["nodes"]}
    out: dict[str, list[str]] = {}
    for name in names:
        host = nodes[name].get("hostName") or "local"
        mine = nodes[name].get("host") or "127.0.0.1"
        out[host] = sorted({n.get("host") or "127.0.0.1" for n in cluster["nodes"]} - {mine})
        if not out[host]:
            raise ValueError(f"{name}: every node of the cluster is on its host ({mine}): nothing to partition it from")
    return out


def _apart_from(nodes: list[dict], leader: str) -> tuple[str, list[dict]]:
    """The leader's host address and the nodes on other hosts."""
    mine = next(n for n in nodes if n["name"] == leader).get("host") or "127.0.0.1"
    return mine, [n for n in nodes if (n.get("host") or "127.0.0.1") != mine]


def majority_peers(cluster: dict, leader: str, clients: list[str]) -> dict[str, list[str]]:
    """partition-majority: per server host other than the leader's, what it drops: the leader's host, the client
    hosts' addresses and @ssh-client (the controller the hook's ssh comes from; on the lab the fault cycle's own
    client). One line naming the leader when no server host is apart from it."""
    from systems.faulthook import SSH_CLIENT

    mine, apart = _apart_from(cluster["nodes"], leader)
    out: dict[str, list[str]] = {}
    for n in apart:
        out.setdefault(n.get("hostName") or "local", sorted({mine, *clients}) + [SSH_CLIENT])
    if not out:
        raise ValueError(f"{leader}: every node of the cluster is on its host ({mine}): no majority to cut it from")
    return out


def targets(fault: str, cluster: dict, leader: str, strike: dict) -> list[str]:
    nodes = server_nodes(cluster)
    if fault == "partition-majority":  # the hook runs on every other server host: the majority cuts itself off
        return [n["name"] for n in _apart_from(nodes, leader)[1]]
    if fault in ("kill-leader", "partition-leader", "pause-leader", "partition-minority", "slow-link-leader"):
        return [leader]
    if fault in ("crash-all", "power-loss"):
        return [n["name"] for n in nodes]
    if fault == "kill-bookie":
        pool = [n["name"] for n in nodes if n["role"] == "bookie"]
    else:  # kill-one
        pool = [n["name"] for n in nodes if n["name"] != leader]
    return [sorted(pool)[strike["seed"] % len(pool)]]


# ---------------------------------------------------------------------------------------------------------- hook
class _HookProc:
    """One host's fault hook (systems/faulthook.py) and a reader of its event lines."""

    def __init__(self, host: str, cmd: list[str], log):
        self.host = host
        self.p = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                  text=True, start_new_session=True)
        self.events: list[dict] = []
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self.cv:
                self.events.append(ev)
                self.cv.notify_all()
        with self.cv:
            self.events.append({"event": "exited", "host": self.host})
            self.cv.notify_all()

    def send(self, line: str) -> None:
        try:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def next(self, name: str, after: int, end: float) -> tuple[dict | None, int]:
        """The first event `name` (or failed/exited) at index >= after, before `end`; and the index after it."""
        with self.cv:
            while True:
                for k in range(after, len(self.events)):
                    if self.events[k]["event"] in (name, "failed", "exited"):
                        return self.events[k], k + 1
                left = end - time.monotonic()
                if left <= 0:
                    return None, after
                self.cv.wait(left)

    def stop(self) -> None:
        """TERM the hook's process group, KILL after 5 s."""
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            if self.p.poll() is not None:
                break
            try:
                os.killpg(self.p.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.p.wait(wait)
            except subprocess.TimeoutExpired:
                continue


class Hook:
    """The cycle's fault hooks, one per host that holds targets (on this machine one; on an inventory's hosts one
    over ssh each), driven together, and their events merged into the cycle's timeline: ready (every hook), struck
    (the first kill), dropped, restarted (per stop stage, every host's targets of it), back (every target listening
    again), failed (a hook's, naming the node), exited.

    The restart follows the stop stages as `up` starts them, across hosts: ZooKeeper (stage 2 and up) and every node
    of a stage waited for before the next starts, bookies and broker together (the broker retries until they are
    there); Kafka's nodes all at once."""

    def __init__(self, cluster: dict, names: list[str], down: float, power_loss: bool, deadline: float, log: Path,
                 inventory: str | None = None, hold: str | None = None, peers: dict[str, list[str]] | None = None,
                 kbit: int | None = None):
        """hold: None (kill -9 and restart), "pause" (SIGSTOP, SIGCONT after `down`), "partition" (each target's
        host cut off from peers[host] for `down`, then healed), "isolate-all" (each target's host cut off from every
        other host, its clients included) or "throttle" (a token bucket of `kbit` kbit/s on each target's host's
        egress)."""
        from testbeds import hooks

        by_name = {n["name"]: n for n in cluster["nodes"]}
        self.down, self.deadline, self.power_loss = down, deadline, power_loss
        self.hold, self.peers, self.kbit = hold, peers or {}, kbit
        self.log = open(log, "a")
        self.stage_of = {n: int(by_name[n].get("stopStage", 0)) for n in names}
        groups: dict[str, list[str]] = {}
        for n in names:
            groups.setdefault(by_name[n].get("hostName") or "local", []).append(n)
        self.procs: dict[str, _HookProc] = {}
        self.targets = groups
        for host, ns in groups.items():
            rundir = by_name[ns[0]].get("hostRunDir") or cluster["rundir"]
            args = ["--rundir", rundir, "--targets", ",".join(ns), "--restart-deadline", str(deadline)] + (
                ["--power-loss"] if power_loss else [])
            self.procs[host] = _HookProc(host, hooks.fault_hook_cmd(
                args, host if inventory else None, inventory), self.log)
        self.events: list[dict] = []
        self.cv = threading.Condition()
        self._go = threading.Event()
        self._done = threading.Event()
        threading.Thread(target=self._drive, daemon=True).start()

    def _emit(self, **ev) -> None:
        with self.cv:
            self.events.append(ev)
            self.cv.notify_all()

    def _all(self, hosts, name: str, pos: dict, end: float) -> list[dict] | None:
        """Each host's next event `name`; None after emitting failed (a hook failed, exited or was too slow)."""
        out = []
        for h in hosts:
            ev, pos[h] = self.procs[h].next(name, pos[h], end)
            if ev is None or ev["event"] != name:
                ev = ev or {"event": "failed", "node": "?", "error": f"host {h}: no '{name}' from its fault hook"}
                if ev["event"] == "exited":
                    ev = {"event": "failed", "node": "?", "error": f"host {h}: its fault hook exited"}
                self._emit(**{**ev, "host": h})
                return None
            out.append(ev)
        return out

    def _drive(self) -> None:
        try:
            pos = {h: 0 for h in self.procs}
            hosts = list(self.procs)
            if self._all(hosts, "ready", pos, time.monotonic() + 60) is None:
                return
            self._emit(event="ready")
            self._go.wait()
            if self._done.is_set():
                return
            if self.hold:
                self._hold(hosts, pos)
                return
            for h in hosts:
                self.procs[h].send("strike")
            evs = self._all(hosts, "struck", pos, time.monotonic() + 60)
            if evs is None:
                return
            t = min(e["t"] for e in evs)
            # the hosts' kills are not one instant: their spread (each host's clock, the same one in the lab; on a
            # fleet, chrony's) says how long some nodes ran while others were dead, which a run's verdict may need
            self._emit(event="struck", t=t, targets=[n for h in hosts for n in self.targets[h]],
                       spreadMs=round((max(e["t"] for e in evs) - t) * 1000, 1))
            if self.power_loss:
                for h in hosts:
                    self.procs[h].send("drop")
                evs = self._all(hosts, "dropped", pos, time.monotonic() + 120)
                if evs is None:
                    return
                detail = evs[0]["detail"] if len(evs) == 1 else {e_h: e["detail"] for e_h, e in zip(hosts, evs)}
                self._emit(event="dropped", t=max(e["t"] for e in evs), detail=detail)
            time.sleep(max(0.0, t + self.down - time.time()))
            restarted = time.time()
            end = time.monotonic() + self.deadline + 30
            for stage in sorted(set(self.stage_of.values()), reverse=True):
                hs = [h for h in hosts if any(self.stage_of[n] == stage for n in self.targets[h])]
                for h in hs:
                    self.procs[h].send(f"restart {stage}")
                evs = self._all(hs, "restarted", pos, end)
                if evs is None:
                    return
                self._emit(event="restarted", t=max(e["t"] for e in evs), nodes=[n for e in evs for n in e["nodes"]])
                if stage >= 2:
                    for h in hs:
                        self.procs[h].send(f"back {stage}")
                    if self._all(hs, "back", pos, end) is None:
                        return
            for h in hosts:
                self.procs[h].send("back all")
            if self._all(hosts, "back", pos, end) is None:
                return
            self._emit(event="back", t=time.time(), restarted=restarted)
        except Exception as exc:  # the driver must report, never die silently
            self._emit(event="failed", node="?", error=f"fault hook driver: {type(exc).__name__}: {exc}")
        finally:
            self._emit(event="exited")

    def _hold(self, hosts: list[str], pos: dict) -> None:
        """A pause or a partition: begun on every target's host, held `down` seconds, ended on every host. The
        timeline gets struck (begun), healed (ended) and back (restarted = the end: the verdict's recovery runs
        from it)."""
        begin, begun, end_cmd, ended = {
            "pause": ("pause", "paused", "resume", "resumed"),
            "partition": (None, "isolated", "heal", "healed"),
            "isolate-all": ("isolate-all", "isolated", "heal", "healed"),
            "throttle": (f"throttle {self.kbit}", "throttled", "heal", "healed")}[self.hold]
        for h in hosts:
            self.procs[h].send(begin or f"isolate {','.join(self.peers[h])}")
        evs = self._all(hosts, begun, pos, time.monotonic() + 60)
        if evs is None:
            return
        t = min(e["t"] for e in evs)
        extra = ({"peers": self.peers} if self.hold == "partition" else {"kbit": self.kbit} if self.hold == "throttle"
                 else {"keep": {h: e.get("keep", []) for h, e in zip(hosts, evs)}} if self.hold == "isolate-all" else {})
        self._emit(event="struck", t=t, targets=[n for h in hosts for n in self.targets[h]], hold=self.hold, **extra)
        time.sleep(max(0.0, t + self.down - time.time()))
        for h in hosts:
            self.procs[h].send(end_cmd)
        evs = self._all(hosts, ended, pos, time.monotonic() + 60)
        if evs is None:
            return
        t_end = max(e["t"] for e in evs)
        self._emit(event="healed", t=t_end)
        self._emit(event="back", t=t_end, restarted=t_end)

    def wait(self, names: tuple[str, ...], timeout: float) -> dict | None:
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                for ev in self.events:
                    if ev["event"] in names or ev["event"] in ("failed", "exited"):
                        return ev
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.cv.wait(left)

    def strike(self) -> None:
        self._go.set()

    def first(self, name: str) -> dict | None:
        return next((e for e in self.events if e["event"] == name), None)

    def ended(self) -> bool:
        return self.first("exited") is not None

    def stop(self) -> None:
        """End the driver, then TERM each hook's process group (KILL after 5 s)."""
        self._done.set()
        self._go.set()
        for hp in self.procs.values():
            hp.stop()
        self.log.close()


# ------------------------------------------------------------------------------------------------------ the cycle


def execute(run: plan.Run, testbed: str, scale_name: str, result: Path, status: Path, clusters: Path, log: Path,
            driver: Path, seed: int, experiments: Path = plan.EXPERIMENTS, limits: dict | None = None,
            inventory: str | None = None, keep_cluster: bool = False) -> dict:
    doc = plan.load(experiments)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    record = {"run": run.relpath(testbed), "system": run.system, "level": run.level, "tuning": run.tuning_label,
              "workload": run.workload_id, "baseWorkload": run.base_workload, "fault": run.fault, "rep": run.rep,
              "experiments": list(run.experiments), "scale": scale_name, "testbed": testbed, "startedAt": now(),
              "log": str(log)}
    expect = plan.expectation(doc, scale_name, run)
    if expect:
        record["faultExpect"] = expect
    cl = Clusters(clusters, limits, inventory)
    hook = None
    client = None
    old = {}

    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for s_ in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            old[s_] = signal.signal(s_, on_signal)
        except ValueError:
            pass
    phase = "set-up"
    try:
        gone = hooks.testbed_failed(inventory)  # an aws fleet torn down after its bring-up failed: nothing to reach
        if gone:
            raise CellFailure("testbed", gone, "set-up")
        if inventory is None and run.fault in plan.NEEDS_HOSTS:
            raise CellFailure("error", f"{run.relpath(testbed)}: fault {run.fault} needs hosts of their own (an "
                              "inventory: --profile lab or aws); on this machine every node shares one network",
                              "set-up")
        exp_id = next(e for e in run.experiments if "faults" in doc["experiments"][e])
        timing = plan.fault_timing(doc, scale_name, exp_id)
        wl = yaml.safe_load((plan.OMB_DIR / f"{run.base_workload}.yaml").read_text())
        drv = yaml.safe_load(driver.read_text())
        rate = int(timing["rate"] or wl["producerRate"])
        seconds = float(timing["testSeconds"])
        size = int(wl["messageSize"])
        partitions = int(wl["partitionsPerTopic"])
        strike = plan.strike_plan(run, seed, timing)
        fault = {"type": run.fault, "strikeAtSeconds": strike["strikeAtSeconds"],
                 "downSeconds": float(timing["downSeconds"]), "seed": strike["seed"], "targets": []}
        record["faultPlan"] = dict(fault, rateMsgs=rate, testSeconds=seconds)
        extra = with_fault_jvm_opts(timing["jvmExtraOpts"])
        if extra:  # every JVM of the cluster this run starts has them (a reused one had them from its first run)
            record["jvmExtraOpts"] = extra
        up_args = ("--faults",) + (("--faultfs",) if run.fault == "power-loss" else ())
        t_up = time.monotonic()
        rundir = cl.ensure(run, log, 0.0, up_args=up_args)
        cycle = _next_cycle(rundir)
        reused = cycle > 1  # the count lives in the cluster's own directory: 1 on a cluster started for this run
        record["clusterUpSeconds"] = 0.0 if reused else round(time.monotonic() - t_up, 1)
        record.update(clusterDir=str(rundir), clusterCycle=cycle)
        fault["clusterCycle"] = cycle
        cluster = json.loads((rundir / "cluster.json").read_text())
        if reused and cluster.get("faultfs"):
            checkpoint_faultfs(cluster, rundir, inventory)
        topic = f"fault-{uuid.uuid4().hex[:10]}"
        client = make_client(run.system, cluster, drv, log, inventory)
        t_serve = time.monotonic()
        client.wait_serving(float(timing["restartDeadlineSeconds"]))
        record["servingWaitSeconds"] = round(time.monotonic() - t_serve, 1)
        client.create_topic(topic, partitions)
        leader = client.leader(topic)
        fault["targets"] = targets(run.fault, cluster, leader, strike)
        record["faultPlan"]["targets"] = fault["targets"]
        hold = plan.HOLD_FAULTS.get(run.fault)
        peers = None
        if hold == "partition":
            try:
                peers = (majority_peers(cluster, leader, client_addresses(inventory)) if run.fault == "partition-majority"
                         else partition_peers(cluster, fault["targets"]))
            except ValueError as e:
                raise CellFailure("error", f"{run.fault}: {e}", "set-up") from None
            record["faultPlan"]["peers"] = peers
        elif hold == "throttle":
            record["faultPlan"]["slowLinkKbit"] = timing["slowLinkKbit"]
        hook = Hook(cluster, fault["targets"], fault["downSeconds"], run.fault == "power-loss",
                    float(timing["restartDeadlineSeconds"]), log, inventory, hold=hold, peers=peers,
                    kbit=timing["slowLinkKbit"] if hold == "throttle" else None)
        ev = hook.wait(("ready",), 60)
        if not ev or ev["event"] != "ready":
            raise CellFailure("error", f"fault hook did not start: {ev}", "set-up")
        # room for the traffic, and for sending on until the restarted cluster takes a send (or its deadline)
        audit = Audit(int(rate * (seconds + fault["downSeconds"] + float(timing["restartDeadlineSeconds"]) + 30)),
                      client.KEYS)

        def back() -> tuple[bool, float | None]:  # systems/faultclient.rules: the hook's news for the traffic loop
            ev = hook.first("back")
            return (bool(hook.first("failed")) or (hook.ended() and ev is None)), (ev or {}).get("restarted")
        phase = "traffic"
        t_cycle = time.monotonic()
        t0 = client.run_traffic(topic, rate, seconds, size, audit, fault["strikeAtSeconds"], hook.strike, back)
        t_end = time.time()
        phase = "restart"
        back = hook.wait(("back",), fault["downSeconds"] + float(timing["restartDeadlineSeconds"]) + 60)
        if back is None or back["event"] != "back":
            ev = back or {"event": "timeout"}
            node = ev.get("node", "?")
            record["logTail"] = ev.get("logTail", "")
            raise CellFailure("cluster", f"{node} did not come back: {ev.get('error', ev['event'])}", "restart")
        phase = "flush"
        left = client.flush(FLUSH_SECONDS)
        phase = "verify"
        t_read = time.monotonic()
        read = client.read_back(topic, partitions, time.monotonic() + READ_SECONDS, audit)
        record["cycleSeconds"] = round(time.monotonic() - t_cycle, 1)
        record["readSeconds"] = round(time.monotonic() - t_read, 1)
        # who led before the strike and after the cycle, from the cluster's own metadata (Kafka: the broker leading
        # most of the topic's partitions; Pulsar: the broker owning its bundle)
        fault["leaderBefore"] = leader
        try:
            fault["leaderAfter"] = client.leader(topic)
        except Exception as exc:  # the cycle's counts stand; the missing answer is recorded as such
            fault["leaderAfter"] = None
            with open(log, "a") as fh:
                fh.write(f"leader of {topic} after the cycle: {exc}\n")
        struck = hook.first("struck")
        v = verdict(audit, read, struck["t"] if struck else None, back.get("restarted"))
        fault.update(v)
        fault["strikeSpreadMs"] = struck.get("spreadMs") if struck else None
        fault["sent"] = audit.count
        fault["pendingAtEnd"] = sum(1 for i in range(audit.count) if audit.state[i] == Audit.PENDING)
        if getattr(client, "verify_end", None):  # Pravega: how its verifier knew the end of the stream
            fault["verifyEnd"] = client.verify_end
        res = {
            "workload": wl.get("name", run.base_workload), "driver": drv.get("name", driver.stem),
            "x-streambench": {
                "kind": "fault-run", "run": run.relpath(testbed), "system": run.system, "level": run.level,
                "tuning": run.tuning, "testbed": testbed, "scale": scale_name, "experiments": list(run.experiments),
                "workload": {"topic": topic, "partitionsPerTopic": partitions, "messageSize": size, "keys": audit.keys,
                             "producerRate": rate, "testDurationSeconds": seconds},
                "measurementStartTime": dt.datetime.fromtimestamp(t0, dt.timezone.utc).isoformat(),
                "measurementEndTime": dt.datetime.fromtimestamp(t_end, dt.timezone.utc).isoformat(),
                "cluster": {**{k: cluster.get(k) for k in ("system", "version", "level", "tuning", "faults", "requested",
                                                           "effective", "client", "startedAt", "readySeconds")},
                            # (cluster.json has them only when set, systems/cluster.py)
                            **({"jvmExtraOpts": cluster["jvmExtraOpts"]} if "jvmExtraOpts" in cluster else {})},
                "fault": fault,
                "faultTimeline": {"events": hook.events, "slowMs": SLOW_MS, "unflushedAtEnd": left,
                                  "perSecond": per_second(audit, read, t0)},
            },
        }
        tmp = result.with_name(result.name + ".tmp")
        result.parent.mkdir(parents=True, exist_ok=True)
        scale.write_atomic(tmp, json.dumps(res, indent=2) + "\n")
        os.replace(tmp, result)
        if keep_cluster:  # the next cycle on this cluster starts without this one's data
            try:
                client.delete_topic(topic)
            except Exception as exc:
                with open(log, "a") as fh:
                    fh.write(f"deleting {topic} after the cycle: {exc}\n")
        record.update(status="ok", result=str(result), fault={k: fault[k] for k in (
            "type", "targets", "strikeAtSeconds", "acknowledged", "lost", "duplicated", "reordered",
            "unacknowledgedPresent", "publishErrors", "unavailableMs", "recoveryMs", "read", "clusterCycle", "leaderBefore",
            "leaderAfter", "strikeSpreadMs")})
    except (Exception, KeyboardInterrupt) as exc:
        reason = exc.reason if isinstance(exc, CycleFailure) else ("interrupted" if isinstance(exc, KeyboardInterrupt)
                                                                  else "error")
        record.update(status="failed", reason=reason, phase=getattr(exc, "phase", None) or phase,
                      error=f"{type(exc).__name__}: {exc}" if not isinstance(exc, CycleFailure) else str(exc))
        record.setdefault("logTail", tail(log))
        if isinstance(exc, KeyboardInterrupt):
            _stop_all(hook, client, cl, log)
            record["endedAt"] = now()
            scale.write_atomic(status, json.dumps(record, indent=2) + "\n")
            raise
    _stop_all(hook, client, cl, log, failed=record["status"] != "ok",
              keep=keep_cluster and record["status"] == "ok")
    for s_, h in old.items():
        signal.signal(s_, h)
    record["endedAt"] = now()
    scale.write_atomic(status, json.dumps(record, indent=2) + "\n")
    return record


def _next_cycle(rundir: Path) -> int:
    """The number of this cycle on the cluster in rundir (1: the cluster's first), counted in a file beside it."""
    f = rundir / "fault-cycles"
    try:
        n = int(f.read_text().strip()) + 1
    except (OSError, ValueError):
        n = 1
    f.write_text(f"{n}\n")
    return n


def _stop_all(hook, client, cl, log, failed=False, keep=False) -> None:
    """The hook first (it may be restarting nodes), then the clients, then the cluster (unless `keep`: a cycle that
    ended well leaves it to the next fault run of its key)."""
    if hook is not None:
        hook.stop()
    if client is not None:
        try:
            client.close()
        except Exception:
            pass
    if keep:
        return
    cur = (cl.read() or {}).get("dir")
    try:
        cl.down(log, failed=failed)
    except Exception as exc:
        with open(log, "a") as fh:
            fh.write(f"down after the fault run: {exc}\n")
    if cur:  # `systems down` could not run (e.g. its interpreter broken): stop the nodes from here
        from systems import cluster as sys_cluster
        from systems.proc import read_pid_records

        if any(r.alive() for r in read_pid_records(Path(cur))):
            with open(log, "a") as fh:
                fh.write(f"{cur}: nodes still running after down; stopping them in-process\n")
                try:
                    sys_cluster.down(Path(cur), log=lambda m: fh.write(m + "\n"))
                except Exception as exc:
                    fh.write(f"in-process down failed: {exc}\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workloads.faultrun", description=__doc__.splitlines()[0])
    ap.add_argument("--clusters")
    ap.add_argument("--driver")
    ap.add_argument("--experiments", default=str(plan.EXPERIMENTS))
    ap.add_argument("--testbed")
    ap.add_argument("--scale")
    ap.add_argument("--system")
    ap.add_argument("--level")
    ap.add_argument("--tuning")
    ap.add_argument("--workload")
    ap.add_argument("--fault")
    ap.add_argument("--rep", type=int)
    ap.add_argument("--seed", type=int, default=20201, help="config workloads.seed (when the faults strike)")
    ap.add_argument("--default-tuning", default="tuned")
    ap.add_argument("--in-experiments", default="")
    ap.add_argument("--result")
    ap.add_argument("--status")
    ap.add_argument("--log")
    ap.add_argument("--limits", default="{}")
    ap.add_argument("--inventory")
    ap.add_argument("--keep-cluster", action="store_true",
                    help="leave the cluster running after a cycle that ended well, for the next fault run of its key")
    a = ap.parse_args(argv)
    missing = [k for k in ("clusters", "testbed", "scale", "system", "level", "tuning", "workload", "fault", "rep",
                           "driver", "result", "status", "log") if getattr(a, k) is None]
    if missing:
        ap.error("missing " + ", ".join("--" + m for m in missing))
    if a.fault not in plan.FAULTS or a.system not in plan.FAULTS[a.fault]:
        ap.error(f"--fault: {a.fault!r} is not a fault of {a.system} (known: "
                 f"{', '.join(f for f, s in plan.FAULTS.items() if a.system in s)})")
    exps = tuple(e for e in a.in_experiments.split(",") if e)
    run = plan.Run(a.system, a.level, a.tuning, None, a.workload, None, a.rep, exps, a.default_tuning, a.fault)
    if a.inventory and not hooks.testbed_failed(a.inventory):
        hooks.enter_controller(a.inventory)  # the cycle's clients talk to the hosts themselves
    rec = execute(run, a.testbed, a.scale, Path(a.result), Path(a.status), Path(a.clusters), Path(a.log),
                  Path(a.driver), a.seed, Path(a.experiments), json.loads(a.limits), a.inventory, a.keep_cluster)
    f = rec.get("fault") or {}
    print(f"{rec['run']}: {rec['status']}" + (f" ({rec.get('error', '').splitlines()[0]})" if rec["status"] != "ok"
                                             else f" ({f.get('lost')} lost of {f.get('acknowledged')} acknowledged)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
