"""The benchmark runner on every client host of an inventory, merged as OMB's distributed mode does.

  python -m testbeds run --inventory F --workload W --driver D --cluster RUNDIR/cluster.json --output OUT
                         [--log LOG] [--deadline-seconds S]

One runner process per client host (started over ssh by the host-side helper, so an interrupt stops it):
with n > 1 clients each gets `--process-index i --process-count n` (disjoint shares of the producers and
consumers) and a coordinated barrier: each process marks itself ready in its own host's barrier directory once
its set-up is done (consumers connected, producers created), this controller waits over ssh until every host has
its mark, then writes one start time a few seconds ahead on every host (`coordinate_start`). So a slow JVM start,
a slow copy or thousands of consumers connecting on one host delay the start instead of failing the run; fan-out
runs (study 003) are split over every client host the same way. The parts are merged with runner/bin/omb-merge. The merged
file is OUT; each host's part is kept in OUT-without-.json + ".parts/part-<i>-<host>.json". A failure on any
host (unreachable, runner error, a host that dies) is one line naming the host; nothing is written to OUT.
"""
from __future__ import annotations

import json
import posixpath
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from systems.plan import jvm_extra_opts  # env/test's STREAMBENCH_JVM_EXTRA_OPTS, which omb-run adds too

from . import deploy, remote
from .inventory import Host, Inventory
from .util import TestbedError, atomic_write_text, root

MAIN = "org.streambench.runner.Main"


class RunnerFailed(TestbedError):
    """A runner on a client host exited non-zero (rc kept: 3 is the runner's own deadline)."""

    def __init__(self, msg: str, rc: int):
        super().__init__(msg)
        self.rc = rc


def java_opts() -> list[str]:
    """The runner's JVM options, from the file runner/bin/omb-run reads too: a remote result comes from the same
    JVM set-up as a local one."""
    lines = (root() / "runner" / "bin" / "jvm.options").read_text().splitlines()
    return [x.strip() for x in lines if x.strip() and not x.strip().startswith("#")] + jvm_extra_opts()


START_LEAD_MS = 3000  # from the moment every process is ready to the shared start: room for the go files' ssh
# end-to-end latency is the consumer's clock minus the producer's: with producers and consumers on several client
# hosts, their clocks must agree far better than the latencies measured (NTP keeps EC2 hosts within ~1 ms)
MAX_CLIENT_CLOCK_SKEW_MS = 50.0
CLOCK_PINGS = 8
# the host side of a clock reading: one line in, the host's time out (a test replaces it to play a skewed clock)
CLOCK_COMMAND = "python3 -u -c 'import sys, time\nfor _ in sys.stdin: print(repr(time.time()), flush=True)'"


def clock_offset(h: Host, pings: int = CLOCK_PINGS) -> dict[str, float]:
    """The host's clock minus this machine's, in ms: over one ssh connection, `pings` round trips of one line
    each; the reading of the shortest round trip is taken at its midpoint (error at most half that round trip)."""
    p = subprocess.Popen(remote.ssh_cmd(h, CLOCK_COMMAND), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    best = None
    try:
        for _ in range(pings + 1):  # the first round trip also starts the interpreter: not counted
            t0 = time.time()
            p.stdin.write("t\n")
            p.stdin.flush()
            line = p.stdout.readline()
            t1 = time.time()
            if not line:
                err = (p.stderr.read() or "").strip().splitlines()
                raise TestbedError(f"host {h.name}: cannot read its clock over ssh: {err[-1] if err else 'no answer'}")
            if best is None:
                best = (float("inf"), 0.0)
                continue
            rtt = t1 - t0
            if rtt < best[0]:
                best = (rtt, float(line) - (t0 + t1) / 2)
    finally:
        if p.stdin and not p.stdin.closed:
            p.stdin.close()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return {"offsetMs": round(best[1] * 1000, 3), "rttMs": round(best[0] * 1000, 3)}


def check_clocks(clocks: dict[str, dict[str, float]], bound_ms: float = MAX_CLIENT_CLOCK_SKEW_MS) -> dict[str, Any]:
    """The spread of the client hosts' offsets (the skew one end-to-end latency can carry), with the error of each
    reading (half its round trip) counted against it; TestbedError in one line naming both hosts above bound_ms."""
    hi = max(clocks, key=lambda k: clocks[k]["offsetMs"])
    lo = min(clocks, key=lambda k: clocks[k]["offsetMs"])
    skew = clocks[hi]["offsetMs"] - clocks[lo]["offsetMs"]
    err = (clocks[hi]["rttMs"] + clocks[lo]["rttMs"]) / 2
    if skew - err > bound_ms:
        raise TestbedError(f"client clocks: {hi} is {skew:.1f} ms ahead of {lo} (±{err:.1f} ms; bound {bound_ms:g} ms): "
                           "end-to-end latencies between them would carry that error; synchronise the clocks (NTP)")
    return {"hosts": clocks, "maxSkewMs": round(skew, 3), "readingErrorMs": round(err, 3), "boundMs": bound_ms}


def _remote_cmd(h: Host, rdir: str, rev: str, dirty, i: int, n: int, start_at: int | None,
                extra: list[str]) -> list[str]:
    rr = posixpath.join(h.work_dir, "runner")
    cmd = ["java", *java_opts(), f"-Dstreambench.gitRevision={rev}",
           f"-Dstreambench.gitDirty={'' if dirty is None else str(dirty).lower()}",
           "-cp", f"{rr}/omb-runner.jar:{rr}/lib/*", MAIN,
           "--workload", f"{rdir}/workload.yaml", "--driver", f"{rdir}/driver.yaml",
           "--cluster", f"{rdir}/cluster.json", "--output", f"{rdir}/part.json", "--log", f"{rdir}/runner.log"]
    cmd += extra
    if n > 1:  # --start-at names the run (every part carries it); the barrier decides when it starts
        cmd += ["--process-index", str(i), "--process-count", str(n), "--start-at", str(start_at),
                "--barrier", f"{rdir}/barrier", "--barrier-coordinated"]
    return cmd


def coordinate_start(hosts: list[tuple[Host, str]], alive, deadline_s: float, lead_ms: int = START_LEAD_MS,
                     poll_s: float = 5.0, ssh=None) -> int:
    """The coordinator of a coordinated barrier: waits until process i has written `ready-i` in its host's barrier
    directory, for each (host, barrier dir) of hosts (process i is hosts[i]); then writes the start time (epoch ms)
    into `go` in every directory at once (one thread a host; written aside, then renamed) and returns it. The start
    lies lead_ms ahead, or three times the slowest ssh call seen so far plus a second when that is longer (a host
    busy connecting thousands of consumers answers slowly, and a start it reads late fails its run). alive() is
    false once a runner process has ended (it failed before the start): then TestbedError at once; past
    deadline_s, TestbedError naming the hosts not ready."""
    import threading

    ssh = ssh or remote.ssh
    deadline = time.monotonic() + deadline_s
    waiting = list(range(len(hosts)))
    slowest = 0.0  # seconds of the slowest ssh call that returned at once (a ready mark found)
    while waiting:
        if not alive():
            raise TestbedError("a runner process ended before every process was ready: "
                               f"{', '.join(hosts[i][0].name for i in waiting)} not ready")
        if time.monotonic() > deadline:
            raise TestbedError(f"runner start: {', '.join(hosts[i][0].name for i in waiting)} not ready "
                               f"{deadline_s:.0f} s after the runners started (barrier)")
        i = waiting[0]
        h, bdir = hosts[i]
        # wait on the host itself, up to poll_s, so a ready process is seen within 0.1 s without an ssh per check
        f = shlex.quote(f"{bdir}/ready-{i}")
        tries = max(1, int(poll_s / 0.1))
        t0 = time.monotonic()
        r = ssh(h, f"n=0; for _ in $(seq {tries}); do [ -f {f} ] && {{ echo $n; exit 0; }}; n=$((n+1)); sleep 0.1; "
                   "done; exit 1", timeout=poll_s + 60, check=False)
        if r.returncode == 0:
            try:  # the call's own cost: its time less the polls it spent waiting on the host
                waited = int(r.stdout.split()[-1]) * 0.1
            except (ValueError, IndexError):
                waited = 0.0
            slowest = max(slowest, time.monotonic() - t0 - waited)
            waiting.pop(0)
    lead = max(lead_ms, int(3000 * slowest) + 1000)
    at = int(time.time() * 1000) + lead
    errors: list[str] = []

    def write(h: Host, bdir: str) -> None:
        d = shlex.quote(bdir)
        try:
            ssh(h, f"mkdir -p {d} && printf %s {at} > {d}/.go.tmp && mv {d}/.go.tmp {d}/go", timeout=60)
        except TestbedError as e:
            errors.append(str(e))
    threads = [threading.Thread(target=write, args=hb, daemon=True) for hb in hosts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    if errors:
        raise TestbedError(f"runner start: {errors[0]}")
    return at


def drain_agreed(states: list[str | None]) -> bool:
    """The runners' drain agreement (runner Barrier.drainAgreed, the same rule): every process has written its state
    (`acked N`; `whole K MIN` for the K subscriptions all of whose consumers are its own, MIN the fewest unique
    messages any of them received; `sub NAME N` per subscription split over the processes: the unique messages its
    consumers there received), every whole subscription's fewest and every split subscription's unique messages
    summed over the processes reach the acknowledged sends of all of them."""
    acked, received, whole = 0, {}, []
    for st in states:
        if st is None:
            return False
        saw = False
        for line in st.splitlines():
            f = line.split()
            if len(f) == 2 and f[0] == "acked":
                acked += int(f[1])
                saw = True
            elif len(f) == 3 and f[0] == "sub":
                received[f[1]] = received.get(f[1], 0) + int(f[2])
            elif len(f) == 3 and f[0] == "whole":
                whole.append(int(f[2]))
        if not saw:
            return False
    return all(r >= acked for r in received.values()) and all(r >= acked for r in whole)


def coordinate_drain(hosts: list[tuple[Host, str]], alive, poll_s: float = 1.0, deadline_s: float = 3600,
                     ssh=None) -> bool:
    """The coordinator of the drain, for runner processes on hosts that share no file system: process i writes its
    drain state into `drain-i` of its host's barrier directory once its producers stopped (every 0.2 s); once
    drain_agreed over them all, `drained` is written in every directory (aside, then renamed), which ends each
    process's drain wait. Returns whether it did; False once every runner ended first (each then ends its wait at its
    own deadline) or past deadline_s. A process alone cannot tell: its consumers may hold few of a subscription's
    partitions and fall quiet while the others' still read."""
    ssh = ssh or remote.ssh
    deadline = time.monotonic() + deadline_s
    while alive() and time.monotonic() < deadline:
        states = []
        for i, (h, bdir) in enumerate(hosts):
            r = ssh(h, f"cat {shlex.quote(f'{bdir}/drain-{i}')} 2>/dev/null", timeout=60, check=False)
            states.append(r.stdout if r.returncode == 0 else None)
        if drain_agreed(states):
            for h, bdir in hosts:
                d = shlex.quote(bdir)
                ssh(h, f"printf 1 > {d}/.drained.tmp && mv {d}/.drained.tmp {d}/drained", timeout=60, check=False)
            return True
        time.sleep(poll_s if all(st is not None for st in states) else 2 * poll_s)
    return False


def clients_for(inv: Inventory, workload: Path) -> list[Host]:
    """The client hosts that run this workload. A fan-out workload (study 003): every one, each process connecting
    its share of the consumers (the coordinated barrier starts them together once all are connected, however long
    that takes on each host). A max-rate search, a backlog build or a mixed (catch-up) workload: the first only,
    because one process judges the search and times the backlog (the runner refuses them with --process-count > 1).
    Any other: one host per producer at most (each process needs a producer of its own)."""
    from workloads.fanout import is_fanout

    doc = yaml.safe_load(workload.read_text()) or {}
    ext = doc.get("x-streambench") or {}
    if is_fanout(doc):
        return list(inv.clients)
    backlog = float(doc.get("consumerBacklogSizeGB") or 0) > 0 or float(ext.get("consumerBacklogSizeBytes") or 0) > 0
    if doc.get("producerRate", 0) == 0 or backlog or ext.get("catchUpSubscriptions"):
        return inv.clients[:1]
    producers = int(doc.get("topics", 1)) * int(doc.get("producersPerTopic", 1))
    return inv.clients[:max(1, min(len(inv.clients), producers))]


def slots_for(clients: list[Host], processes: int) -> list[Host]:
    """The host of each runner process: `processes` of them (at least one per client host) spread as evenly as they
    go over the client hosts, process i on slots[i]."""
    from workloads.fanout import spread

    out: list[Host] = []
    for h, k in zip(clients, spread(processes, len(clients))):
        out += [h] * k
    return out


def run(inv: Inventory, workload: Path, driver: Path, cluster: Path, output: Path, log: Path | None = None,
        timeout: float = 3600, say=print, extra: list[str] | None = None, processes: int = 1) -> Path:
    """The run on the inventory's client hosts: one runner process per client host that clients_for names, or, for a
    fan-out run given `processes` > that number, `processes` of them spread over its client hosts (slots_for), each
    in a directory of its own; the parts are merged with omb-merge and kept beside the output."""
    from workloads.fanout import is_fanout

    clients = clients_for(inv, workload)
    fanout = is_fanout(yaml.safe_load(workload.read_text()) or {})
    if processes > len(clients) and not fanout:
        raise TestbedError(f"{workload}: --processes {processes}: only a fan-out run is split over more runner "
                           f"processes than client hosts ({len(clients)})")
    slots = slots_for(clients, processes) if fanout else clients
    n = len(slots)
    tag = f"{output.stem}-{time.strftime('%Y%m%dT%H%M%S')}"
    rev, dirty = deploy.git_revision()
    start_at = int(time.time() * 1000) if n > 1 else None  # names the run; the barrier sets the start
    clocks = None
    if len(clients) > 1:  # producers and consumers on several hosts: their clocks must agree (before anything starts)
        clocks = check_clocks({h.name: clock_offset(h) for h in clients})
        say(f"client clocks: max skew {clocks['maxSkewMs']:.2f} ms (reading error ±{clocks['readingErrorMs']:.2f} ms)")
    base = {h.name: posixpath.join(h.work_dir, "bench", tag) for h in clients}
    rdirs = [posixpath.join(base[h.name], f"p{i}") for i, h in enumerate(slots)]
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix="sb-run-") as tmp:
        tmpd = Path(tmp)
        try:
            for h in clients:
                remote.ssh(h, "mkdir -p " + " ".join(shlex.quote(d) for d, s in zip(rdirs, slots) if s is h),
                           timeout=60)
            for i, (h, rdir) in enumerate(zip(slots, rdirs)):
                spec = {"node": "runner", "rundir": rdir, "cmd": _remote_cmd(h, rdir, rev, dirty, i, n, start_at, extra or []),
                        "env": {}, "cwd": rdir, "log": f"{rdir}/runner.out", "stopStage": 0, "timeout": timeout}
                atomic_write_text(tmpd / f"spec-{i}.json", json.dumps(spec))
                for src, name in ((workload, "workload.yaml"), (driver, "driver.yaml"), (cluster, "cluster.json"),
                                  (tmpd / f"spec-{i}.json", "spec.json")):
                    remote.scp_to(h, src, f"{rdir}/{name}")
            for h, rdir in zip(slots, rdirs):
                helper = posixpath.join(h.work_dir, "lib", "sbnode.py")
                procs.append(subprocess.Popen(
                    remote.ssh_cmd(h, f"python3 {helper} once {rdir}/spec.json"),
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True))
            where = ", ".join(f"{h.name} ({slots.count(h)})" if slots.count(h) > 1 else h.name for h in clients)
            if n > 1:
                barriers = [(h, f"{rdir}/barrier") for h, rdir in zip(slots, rdirs)]
                try:
                    at = coordinate_start(barriers, lambda: all(p.poll() is None for p in procs), deadline_s=timeout)
                    say(f"runners on {where} ready; start at {at}")
                except TestbedError as e:
                    if all(p.poll() is None for p in procs):
                        raise
                    say(f"runner start: {e}")  # a runner ended first: its own error is reported below
                # the parts agree on their drain here (each alone would judge it by a quiet spell); a fan-out part's
                # state is a few lines however many subscriptions it holds (runner Barrier.drainState)
                if coordinate_drain(barriers, lambda: all(p.poll() is None for p in procs), deadline_s=timeout):
                    say("runners drained: every subscription received every acknowledged message")
            outs = [p.communicate(timeout=timeout)[0] for p in procs]
            parts = []
            for i, (h, rdir, p) in enumerate(zip(slots, rdirs, procs)):
                local_log = tmpd / f"runner-{i}.log"
                try:
                    remote.scp_from(h, f"{rdir}/runner.log", local_log, timeout=120)
                except TestbedError:
                    local_log.write_text("")
                if log:
                    with open(log, "a") as fh:
                        name = h.name if n == len(clients) else f"{h.name} process {i}"
                        fh.write(f"=== {name} (exit {p.returncode})\n{local_log.read_text(errors='replace')}")
                if p.returncode == 255:
                    raise TestbedError(f"host {h.name} ({h.ssh_address}): lost during the run (ssh exit 255): "
                                       f"{outs[i].strip().splitlines()[-1:] or ''}")
                if p.returncode != 0:
                    errs = [ln for ln in local_log.read_text(errors="replace").splitlines() if " ERROR " in ln]
                    why = errs[0].strip() if errs else (outs[i].strip().splitlines() or [""])[-1]
                    raise RunnerFailed(f"host {h.name}: runner exited {p.returncode}: {why}", p.returncode)
                part = tmpd / f"part-{i}-{h.name}.json"
                remote.scp_from(h, f"{rdir}/part.json", part, timeout=300)
                parts.append(part)
            merged = tmpd / "merged.json"
            if n == 1:
                shutil.copyfile(parts[0], merged)
            else:
                res = subprocess.run([str(root() / "runner" / "bin" / "omb-merge"), "--output", str(merged),
                                      *map(str, parts)], capture_output=True, text=True, timeout=600)
                if res.returncode != 0 or not merged.is_file():
                    raise TestbedError(f"omb-merge failed: {(res.stderr.strip().splitlines() or [''])[-1]}")
                if clocks is not None:
                    doc = json.loads(merged.read_text())
                    doc.setdefault("x-streambench", {})["clientClocks"] = clocks  # the skew its e2e latencies carry
                    atomic_write_text(merged, json.dumps(doc, indent=2))
            pdir = output.with_suffix(".parts")
            shutil.rmtree(pdir, ignore_errors=True)
            pdir.mkdir(parents=True)
            for p in parts:
                shutil.copyfile(p, pdir / p.name)
            output.parent.mkdir(parents=True, exist_ok=True)
            tmp_out = output.with_name(f".{output.name}.tmp")
            shutil.copyfile(merged, tmp_out)
            tmp_out.replace(output)
            say(f"runner on {where}: {output}")
            return output
        except BaseException:
            for p in procs:
                if p.poll() is None:
                    p.kill()
            for h, rdir in zip(slots, rdirs):  # the runner processes on every reachable client host
                try:
                    remote.ssh(h, f"python3 {posixpath.join(h.work_dir, 'lib', 'sbnode.py')} stop {rdir} "
                                  "--timeout 10", timeout=60, check=False)
                except TestbedError:
                    pass
            raise
        finally:
            for h in clients:
                try:
                    remote.ssh(h, f"rm -rf {shlex.quote(base[h.name])}", timeout=60, check=False)
                except TestbedError:
                    pass


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="the runner on every client host")
    p.add_argument("--inventory", required=True)
    p.add_argument("--workload", type=Path, required=True)
    p.add_argument("--driver", type=Path, required=True)
    p.add_argument("--cluster", type=Path, required=True)
    p.add_argument("--output", type=Path, required=True)
    p.add_argument("--log", type=Path)
    p.add_argument("--deadline-seconds", help="passed on to each runner (its own deadline watchdog)")
    p.add_argument("--processes", type=int, default=1,
                   help="runner processes for a fan-out run, spread over the client hosts (at least one per host)")
    p.set_defaults(func=_main)


def _main(a, load_inv, log) -> int:
    inv = load_inv(a.inventory)
    extra = ["--deadline-seconds", a.deadline_seconds] if a.deadline_seconds else []
    # the runner's own deadline, plus the barrier's lead and the copies back
    timeout = float(a.deadline_seconds) + START_LEAD_MS / 1000 + 120 if a.deadline_seconds else 3600
    try:
        run(inv, a.workload, a.driver, a.cluster, a.output, a.log, timeout=timeout, say=log,
            extra=extra, processes=a.processes)
    except RunnerFailed as e:
        print(f"testbeds: error: {e}", file=__import__("sys").stderr)
        return 3 if e.rc == 3 else 2
    return 0
