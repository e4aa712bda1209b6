"""The benchmark runner on every client host of an inventory, merged as OMB's distributed mode does.

  python -m testbeds run --inventory F --workload W --driver D --cluster RUNDIR/cluster.json --output OUT
                         [--log LOG] [--lead-seconds S]

One runner process per client host (started over ssh by the host-side helper, so an interrupt stops it):
with n > 1 clients each gets `--process-index i --process-count n --start-at T` (disjoint shares of the
producers and consumers, one shared start), and the parts are merged with runner/bin/omb-merge. The merged
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

import yaml

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
    return [x.strip() for x in lines if x.strip() and not x.strip().startswith("#")]


def _remote_cmd(h: Host, rdir: str, rev: str, dirty, i: int, n: int, start_at: int | None,
                extra: list[str]) -> list[str]:
    rr = posixpath.join(h.work_dir, "runner")
    cmd = ["java", *java_opts(), f"-Dstreambench.gitRevision={rev}",
           f"-Dstreambench.gitDirty={'' if dirty is None else str(dirty).lower()}",
           "-cp", f"{rr}/omb-runner.jar:{rr}/lib/*", MAIN,
           "--workload", f"{rdir}/workload.yaml", "--driver", f"{rdir}/driver.yaml",
           "--cluster", f"{rdir}/cluster.json", "--output", f"{rdir}/part.json", "--log", f"{rdir}/runner.log"]
    cmd += extra
    if n > 1:
        cmd += ["--process-index", str(i), "--process-count", str(n), "--start-at", str(start_at)]
    return cmd


def clients_for(inv: Inventory, workload: Path) -> list[Host]:
    """The client hosts that run this workload: all of them, but only the first for a fan-out workload (study 003,
    `x-streambench.fanOut`): workloads/fanout.py sizes such a run's open files for one runner process, and the
    runner's way to share one among processes (`--fanout-barrier`, a directory) needs a file system the hosts do
    not share; split by --start-at alone, a process still connecting its consumers at that time fails the run
    ("set-up finished ... after --start-at"), and connecting thousands takes minutes."""
    from workloads.fanout import is_fanout

    doc = yaml.safe_load(workload.read_text()) or {}
    return inv.clients[:1] if is_fanout(doc) else inv.clients


def run(inv: Inventory, workload: Path, driver: Path, cluster: Path, output: Path, log: Path | None = None,
        lead_seconds: float = 30, timeout: float = 3600, say=print, extra: list[str] | None = None) -> Path:
    clients = clients_for(inv, workload)
    if len(clients) < len(inv.clients):
        say(f"fan-out workload: the runner on {clients[0].name} only (one process holds every consumer)")
    n = len(clients)
    tag = f"{output.stem}-{time.strftime('%Y%m%dT%H%M%S')}"
    rev, dirty = deploy.git_revision()
    start_at = int((time.time() + lead_seconds) * 1000) if n > 1 else None
    rdirs = {h.name: posixpath.join(h.work_dir, "bench", tag) for h in clients}
    procs: dict[str, subprocess.Popen] = {}
    with tempfile.TemporaryDirectory(prefix="sb-run-") as tmp:
        tmpd = Path(tmp)
        try:
            for i, h in enumerate(clients):
                rdir = rdirs[h.name]
                spec = {"node": "runner", "rundir": rdir, "cmd": _remote_cmd(h, rdir, rev, dirty, i, n, start_at, extra or []),
                        "env": {}, "cwd": rdir, "log": f"{rdir}/runner.out", "stopStage": 0, "timeout": timeout}
                atomic_write_text(tmpd / f"spec-{h.name}.json", json.dumps(spec))
                remote.ssh(h, f"mkdir -p {shlex.quote(rdir)}", timeout=60)
                for src, name in ((workload, "workload.yaml"), (driver, "driver.yaml"), (cluster, "cluster.json"),
                                  (tmpd / f"spec-{h.name}.json", "spec.json")):
                    remote.scp_to(h, src, f"{rdir}/{name}")
            for h in clients:
                helper = posixpath.join(h.work_dir, "lib", "sbnode.py")
                procs[h.name] = subprocess.Popen(
                    remote.ssh_cmd(h, f"python3 {helper} once {rdirs[h.name]}/spec.json"),
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
            outs = {name: p.communicate(timeout=timeout)[0] for name, p in procs.items()}
            parts = []
            for i, h in enumerate(clients):
                p = procs[h.name]
                local_log = tmpd / f"runner-{h.name}.log"
                try:
                    remote.scp_from(h, f"{rdirs[h.name]}/runner.log", local_log, timeout=120)
                except TestbedError:
                    local_log.write_text("")
                if log:
                    with open(log, "a") as fh:
                        fh.write(f"=== {h.name} (exit {p.returncode})\n{local_log.read_text(errors='replace')}")
                if p.returncode == 255:
                    raise TestbedError(f"host {h.name} ({h.ssh_address}): lost during the run (ssh exit 255): "
                                       f"{outs[h.name].strip().splitlines()[-1:] or ''}")
                if p.returncode != 0:
                    errs = [ln for ln in local_log.read_text(errors="replace").splitlines() if " ERROR " in ln]
                    why = errs[0].strip() if errs else (outs[h.name].strip().splitlines() or [""])[-1]
                    raise RunnerFailed(f"host {h.name}: runner exited {p.returncode}: {why}", p.returncode)
                part = tmpd / f"part-{i}-{h.name}.json"
                remote.scp_from(h, f"{rdirs[h.name]}/part.json", part, timeout=300)
                parts.append(part)
            merged = tmpd / "merged.json"
            if n == 1:
                shutil.copyfile(parts[0], merged)
            else:
                res = subprocess.run([str(root() / "runner" / "bin" / "omb-merge"), "--output", str(merged),
                                      *map(str, parts)], capture_output=True, text=True, timeout=600)
                if res.returncode != 0 or not merged.is_file():
                    raise TestbedError(f"omb-merge failed: {(res.stderr.strip().splitlines() or [''])[-1]}")
            pdir = output.with_suffix(".parts")
            shutil.rmtree(pdir, ignore_errors=True)
            pdir.mkdir(parents=True)
            for p in parts:
                shutil.copyfile(p, pdir / p.name)
            output.parent.mkdir(parents=True, exist_ok=True)
            tmp_out = output.with_name(f".{output.name}.tmp")
            shutil.copyfile(merged, tmp_out)
            tmp_out.replace(output)
            say(f"runner on {', '.join(h.name for h in clients)}: {output}")
            return output
        except BaseException:
            for name, p in procs.items():
                if p.poll() is None:
                    p.kill()
            for h in clients:  # the runner processes on every reachable client host
                try:
                    remote.ssh(h, f"python3 {posixpath.join(h.work_dir, 'lib', 'sbnode.py')} stop {rdirs[h.name]} "
                                  "--timeout 10", timeout=60, check=False)
                except TestbedError:
                    pass
            raise
        finally:
            for h in clients:
                try:
                    remote.ssh(h, f"rm -rf {shlex.quote(rdirs[h.name])}", timeout=60, check=False)
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
    p.add_argument("--lead-seconds", type=float, default=30)
    p.add_argument("--deadline-seconds", help="passed on to each runner (its own deadline watchdog)")
    p.set_defaults(func=_main)


def _main(a, load_inv, log) -> int:
    inv = load_inv(a.inventory)
    extra = ["--deadline-seconds", a.deadline_seconds] if a.deadline_seconds else []
    timeout = float(a.deadline_seconds) + a.lead_seconds + 120 if a.deadline_seconds else 3600
    try:
        run(inv, a.workload, a.driver, a.cluster, a.output, a.log, a.lead_seconds, timeout=timeout, say=log,
            extra=extra)
    except RunnerFailed as e:
        print(f"testbeds: error: {e}", file=__import__("sys").stderr)
        return 3 if e.rc == 3 else 2
    return 0
