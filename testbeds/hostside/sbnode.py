#!/usr/bin/env python3
"""Host side of the multi-host path: start, stop and inspect the nodes of a cluster on this host.

Shipped by the Ansible role `prepare` to <workDir>/lib/ next to a copy of systems/proc.py (package `sbhost`),
so nodes on a remote host are started, recorded (pid files: pid, pgid, start time) and stopped (staged TERM,
then KILL) exactly as the local launcher does. Python 3 standard library only.

  sbnode.py start SPEC.json          start the node SPEC describes, in its own session; prints its pid
  sbnode.py once SPEC.json           run a one-off command (kafka format, pulsar initialize-cluster-metadata)
  sbnode.py mount SPEC.json          make the node's data directories and mount them on faultfs (SPEC "faultfs")
  sbnode.py stop RUNDIR [--timeout S]   stop every node recorded under RUNDIR/pids (staged, then KILL)
  sbnode.py stop-all WORKDIR [--timeout S]   the same for every run directory under WORKDIR/runs
  sbnode.py status RUNDIR            JSON {node: alive}
  sbnode.py wait READY.json          wait for a start-up stage's readiness conditions on this host (systems/ready.py)
  sbnode.py stage STEP...            steps of a start-up stage on this host in one call: each STEP once:SPEC.json,
                                     start:SPEC.json or wait:READY.json, run in the order given (Ansible passes a
                                     stage's one-off commands in one call, then its starts and waits in another);
                                     the first that fails ends the call with its exit code
  sbnode.py reset RUNDIR|- [DIR...]  before a cluster starts here: stop RUNDIR's stale nodes (as `stop`; - for
                                     none), then remove each DIR (its run and data directories) if present
  sbnode.py http REQUEST             one HTTP request from this host, REQUEST a JSON object {"method", "url", "body"?,
                                     "timeout"?}; prints {"status", "text"} (status 0: nothing answered). The
                                     controller's admin and verify requests to a cluster it has no route to

SPEC: {"node", "rundir", "cmd": [...], "env": {...}, "cwd", "log", "stopStage", "timeout", "mkdirs": [...],
       "maxLogBytes", "faultfs"}  (the node's log is capped as on this machine, whatever the number of starts;
       with "faultfs" true each of mkdirs is a faultfs mount, sbhost.faultfs, its durable state in the sibling
       directory <dir>.faultfs on the same disk, and listed in RUNDIR/faultfs-mounts.json; `stop` unmounts them)
READY: {"rundir", "conds": [...], "timeout"}
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sbhost import ready  # noqa: E402
from sbhost.proc import read_pid_records, start_process, stop_records, tail  # noqa: E402
from sbhost.util import SystemsError  # noqa: E402


def _limits() -> None:
    """Open files: raise the soft limit to the hard limit (brokers keep one descriptor per segment)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _spec(path: str) -> dict:
    return json.loads(Path(path).read_text())


def _start(spec: dict):
    _limits()
    env = dict(os.environ)
    env.update(spec.get("env") or {})
    for d in [spec["cwd"], *(spec.get("mkdirs") or [])]:
        Path(d).mkdir(parents=True, exist_ok=True)
    if spec.get("faultfs"):
        _mount_faultfs(spec)
    return start_process(Path(spec["rundir"]), spec["node"], spec["cmd"], cwd=Path(spec["cwd"]),
                         log=Path(spec["log"]), env=env, stop_stage=int(spec.get("stopStage", 0)),
                         max_log_bytes=spec.get("maxLogBytes"), env_extra=spec.get("env") or {})


def _mount_faultfs(spec: dict) -> None:
    """The node's data directories on faultfs (power-loss cells), as the local launcher mounts them."""
    from sbhost import faultfs

    for d in spec.get("mkdirs") or []:
        if faultfs.is_mounted(d):
            continue
        try:
            faultfs.mount(f"{d}.faultfs", d, log=Path(spec["cwd"]) / f"faultfs-{Path(d).name}.log")
        except faultfs.FaultfsError as e:
            raise SystemsError(f"{spec['node']}: faultfs: {e}") from None
        faultfs.record_mount(spec["rundir"], d)


def _unmount_faultfs(rundir: Path) -> list[str]:
    if not (rundir / "faultfs-mounts.json").is_file():
        return []
    from sbhost import faultfs

    try:
        return faultfs.unmount_all(rundir, discard=False)
    except faultfs.FaultfsError as e:
        raise SystemsError(f"{rundir}: faultfs: {e}") from None


def start(spec: dict) -> int:
    p, _ = _start(spec)
    print(p.pid)
    return 0


def once(spec: dict) -> int:
    """Run a one-off command to completion; it is recorded in RUNDIR/pids while it runs, so `stop` (after a
    failure or an interrupt of the controller) ends it too."""
    log = Path(spec["log"])
    rundir = Path(spec["rundir"])
    p, rec = _start(spec)
    try:
        rc = p.wait(timeout=float(spec.get("timeout", 300)))
    except subprocess.TimeoutExpired:
        stop_records([rec], 10)
        rc = 124
    (rundir / "pids" / f"{spec['node']}.json").unlink(missing_ok=True)
    if rc != 0:
        print(f"{spec['node']}: exit {rc}; last lines of {log}:\n{tail(log, 15)}", file=sys.stderr)
    return rc


def wait(spec: dict) -> int:
    """A stage's readiness conditions, in order, until the spec's timeout; a node of this host that dies ends the
    wait at once. One line on failure naming the node (and its log's last lines), exit 1."""
    rundir = Path(spec["rundir"])

    def dead(node: str) -> str | None:
        rec = next((r for r in read_pid_records(rundir) if r.node == node), None)
        if rec is None or rec.alive():
            return None
        return f"exited during start-up; last lines of {rec.log}:\n{tail(Path(rec.log), 15)}"
    try:
        ready.wait(spec["conds"], time.monotonic() + float(spec.get("timeout", 300)), dead)
    except ready.NotReady as e:
        print(f"{e.node}: {e}", file=sys.stderr)
        return 1
    return 0


def heal(rundir: Path) -> bool:
    """The cluster's partition table and token buckets on this host, if a fault hook that could not heal (killed)
    left them; True when there was any."""
    from sbhost import faulthook

    try:
        # no nft (no tc): no partition (no slow link) was ever made here
        removed = faulthook.nft_path() is not None and faulthook.remove_table(faulthook.table_name(rundir))
        unshaped = faulthook.remove_qdiscs(faulthook.qdisc_handle(rundir)) if faulthook.tc_path() else []
    except faulthook.HookError as e:
        raise SystemsError(f"{rundir}: {e.error}") from None
    return bool(removed or unshaped)


def stop(rundir: Path, timeout: float) -> dict:
    healed = heal(rundir)
    recs = read_pid_records(rundir)
    alive = [r for r in recs if r.alive()]
    killed = stop_records(alive, timeout) if alive else []
    for r in recs:
        (rundir / "pids" / f"{r.node}.json").unlink(missing_ok=True)
    unmounted = _unmount_faultfs(rundir)
    return {"stopped": [r.node for r in alive], "killed": killed, **({"healed": True} if healed else {}),
            **({"unmounted": unmounted} if unmounted else {})}


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, arg = argv[0], argv[1]
    timeout = float(argv[argv.index("--timeout") + 1]) if "--timeout" in argv else 20.0
    try:
        if cmd == "start":
            return start(_spec(arg))
        if cmd == "once":
            return once(_spec(arg))
        if cmd == "mount":
            spec = _spec(arg)
            for d in spec.get("mkdirs") or []:
                Path(d).mkdir(parents=True, exist_ok=True)
            _mount_faultfs(spec)
            return 0
        if cmd == "wait":
            return wait(_spec(arg))
        if cmd == "stop":
            print(json.dumps(stop(Path(arg), timeout)))
            return 0
        if cmd == "stage":
            steps = {"once": once, "start": start, "wait": wait}
            for step in argv[1:]:
                kind, _, path = step.partition(":")
                if kind not in steps or not path:
                    print(f"sbnode: error: stage: {step!r} is not once:, start: or wait: with a file", file=sys.stderr)
                    return 2
                rc = steps[kind](_spec(path))
                if rc != 0:
                    return rc
            return 0
        if cmd == "reset":
            out = stop(Path(arg), timeout) if arg != "-" else {}
            for d in argv[2:]:
                if d.startswith("--"):
                    break
                if os.path.lexists(d):
                    shutil.rmtree(d) if os.path.isdir(d) and not os.path.islink(d) else os.unlink(d)
                    out.setdefault("removed", []).append(d)
            print(json.dumps(out))
            return 0
        if cmd == "stop-all":
            runs = Path(arg) / "runs"
            out = {d.name: stop(d, timeout) for d in sorted(runs.iterdir())} if runs.is_dir() else {}
            print(json.dumps(out))
            return 0
        if cmd == "status":
            print(json.dumps({r.node: r.alive() for r in read_pid_records(Path(arg))}))
            return 0
        if cmd == "http":
            try:
                req = json.loads(arg)
                req["method"], req["url"]
            except (ValueError, KeyError, TypeError) as e:
                print(f"sbnode: error: http: REQUEST must be a JSON object with method and url ({e})", file=sys.stderr)
                return 2
            code, text = ready.http_here(req["method"], req["url"], req.get("body"), float(req.get("timeout", 15)))
            print(json.dumps({"status": code, "text": text}))
            return 0
    except SystemsError as e:
        print(f"sbnode: error: {e}", file=sys.stderr)
        return 2
    print(f"sbnode: unknown command {cmd}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
