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
  any failure    {"event": "failed", "node", "error", "logTail"}, then the hook exits 1

    python -m systems.faulthook --rundir RUNDIR --targets n1,n2 --restart-deadline S [--power-loss]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
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


class HookError(RuntimeError):
    def __init__(self, node: str, error: str, log: str | None = None):
        super().__init__(error)
        self.node, self.error, self.log = node, error, log


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="faulthook", description=__doc__.splitlines()[0])
    ap.add_argument("--rundir", type=Path, required=True)
    ap.add_argument("--targets", required=True)
    ap.add_argument("--restart-deadline", type=float, default=120)
    ap.add_argument("--power-loss", action="store_true")
    a = ap.parse_args(argv)
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
            else:
                raise HookError("-", f"unknown command {line.strip()!r}")
    except HookError as e:
        say(event="failed", node=e.node, error=e.error, logTail=tail(Path(e.log), 40) if e.log else "")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
