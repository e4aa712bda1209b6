"""The thin hooks through which workloads/run.py runs on a multi-host testbed.

`python -m workloads.run --inventory F` (passed by testbeds/rules.smk for `--profile lab`, by
testbeds/aws/rules.smk for each fleet's runs): the cluster commands (`python -m systems up|status|down ...`)
become `python -m testbeds cluster ... --inventory F` with the same arguments, and the runner
(`runner/bin/omb-run ARGS`) becomes `python -m testbeds run --inventory F ARGS` (one runner per client host,
merged). The inventory a cluster was started with is recorded beside it (workloads/run.py's current.json), so
stopping it later (`--down-all`, the workflow's error path) reaches the same hosts. Without an inventory nothing
changes.
"""
from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable


# beside an inventory: the testbed failed before its runs and was torn down (an aws fleet whose bring-up, prepare or
# probes failed: testbeds/aws/provision.py fleet_step)
FLEET_FAILED = "failed.json"


def testbed_failed(inventory: str | None) -> str | None:
    """Why the hosts of this inventory cannot run anything (one line), or None. A failed aws fleet's inventory is a
    stub with its failure, or a real one with failed.json of the same run beside it; its runs are then recorded
    failed at once, without reaching for hosts that are gone."""
    if inventory is None:
        return None
    path = Path(inventory)
    try:
        inv = json.loads(path.read_text())
    except (OSError, ValueError):
        inv = {}
    rec = inv.get("failed") if isinstance(inv, dict) else None
    if not rec:
        try:
            rec = json.loads((path.parent / FLEET_FAILED).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(rec, dict) or (inv.get("id") and rec.get("run") != inv.get("id")):
            return None
    return (f"fleet {rec.get('fleet')} failed at {rec.get('step')} ({rec.get('error')}) and was torn down; this run"
            " did not start")


def enter_controller(inventory: str | None) -> None:
    """Re-run this command inside the controller's network namespace when the inventory names one (the lab: the
    hosts' addresses exist only there), as `python -m testbeds` does; a process that talks to the hosts itself (a
    fault run's clients) needs it."""
    if inventory is None:
        return
    from testbeds import inventory as inv_mod, util
    util.reexec_in(inv_mod.load(inventory).provider.get("controllerNetns"))


def systems_cmd(*args: str, inventory: str | None = None) -> list[str]:
    """The command line of `python -m systems ARGS` on the testbed of this inventory (None: this machine)."""
    if inventory is None:
        return [sys.executable, "-m", "systems", *args]
    return [sys.executable, "-m", "testbeds", "cluster", *args, "--inventory", inventory]


def fault_hook_cmd(args: list[str], host: str | None = None, inventory: str | None = None) -> list[str]:
    """The command line of a fault hook (systems/faulthook.py ARGS) on one host of this inventory (None: this
    machine, where the hook is `python -m systems.faulthook`): over ssh, the host-side helper's copy, its stdin and
    stdout the controller's pipe."""
    if inventory is None:
        return [sys.executable, "-m", "systems.faulthook", *args]
    from testbeds import inventory as inv_mod, remote
    h = inv_mod.load(inventory).host(host)
    lib = f"{h.work_dir}/lib"
    return remote.ssh_cmd(h, f"cd {shlex.quote(lib)} && exec python3 -m sbhost.faulthook {shlex.join(args)}")


def runner_cmd(runner: str, *args: str, inventory: str | None = None, processes: int = 1) -> list[str]:
    """The command line of `runner/bin/omb-run ARGS` on the testbed of this inventory (None: this machine), split
    over `processes` runner processes when more than one (workloads/fanout.py): here by workloads.parts, on an
    inventory over its client hosts (testbeds/runner.py)."""
    if inventory is None:
        if processes > 1:
            return [sys.executable, "-m", "workloads.parts", "--processes", str(processes), "--", runner, *args]
        return [runner, *args]
    return [sys.executable, "-m", "testbeds", "run", "--inventory", inventory,
            *(["--processes", str(processes)] if processes > 1 else []), *args]


def keep_parts(tmp_out: Path, result: Path) -> None:
    """Move the per-client parts (<tmp_out stem>.parts/) beside the result (rep-<n>.parts/)."""
    parts = tmp_out.with_suffix(".parts")
    if parts.is_dir():
        dest = result.with_suffix(".parts")
        shutil.rmtree(dest, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(parts), str(dest))


def server_disks(inventory: str) -> list[dict]:
    """Each server host's data directories (one per file system) with their file system's size, use and free space
    in bytes, read with df over ssh: [{host, path, total, used, free}]. A host that does not answer, or a directory
    df cannot read, is a TestbedError naming the host."""
    from testbeds import inventory as inv_mod, remote
    from testbeds.util import TestbedError
    inv = inv_mod.load(inventory)
    out = []
    for h in inv.servers:
        dirs = sorted(set(h.data_dirs.values()))
        # the nearest existing ancestor: a directory prepare has not made yet lies on its parent's file system
        probe = " ".join(f'd={shlex.quote(d)}; while [ ! -e "$d" ]; do d=$(dirname "$d"); done; '
                         f'df -B1 --output=size,used,avail,target "$d" | tail -n 1;' for d in dirs)
        res = remote.ssh(h, probe, timeout=60, check=False)
        rows = [ln.split(None, 3) for ln in res.stdout.splitlines() if ln.strip()]
        if res.returncode != 0 or len(rows) != len(dirs) or any(len(r) != 4 for r in rows):
            raise TestbedError(f"host {h.name}: cannot read the free space of {', '.join(dirs)} with df: "
                               f"{(res.stderr.strip().splitlines() or [''])[-1]}")
        seen = set()
        for d, (size, used, avail, target) in zip(dirs, rows):
            # directories on one file system share it: count it once, known by its mount point (not by its numbers,
            # which change between two df calls while anything writes there)
            if target in seen:
                continue
            seen.add(target)
            out.append({"host": h.name, "path": d, "total": int(size), "used": int(used), "free": int(avail)})
    return out


def remote_sampler(inventory: str, limits: dict):
    """A sampler of every host of the inventory over ssh (testbeds/hostsample.py), for hosts elsewhere."""
    from testbeds import hostsample, inventory as inv_mod
    return hostsample.RemoteSampler(inv_mod.load(inventory), limits)


def host_pids(inventory: str | None) -> tuple[Callable[[], list[int]], Callable[[], list[int]]] | str | None:
    """What the host sampler of workloads/run.py can attribute on this machine's CPU.

    None without an inventory: the caller knows its cluster's and its runner's process groups. On a lab (hosts
    that are network namespaces of this machine) two functions listing the pids in the server hosts' and in the
    client hosts' namespaces: the cluster's and the runners' CPU, everything else being other work. "remote"
    for hosts elsewhere (aws, your own machines): this machine's CPU says nothing about theirs; each host is sampled
    over ssh instead (remote_sampler)."""
    if inventory is None:
        return None
    from testbeds import inventory as inv_mod, lab
    inv = inv_mod.load(inventory)
    netns = inv.provider.get("netns") or {}
    if inv.provider.get("kind") != "lab" or not netns:
        return "remote"

    def pids(hosts) -> Callable[[], list[int]]:
        names = [netns[h.name] for h in hosts if h.name in netns]
        return lambda: lab.netns_pids(*names)
    return pids(inv.servers), pids(inv.clients)


def node_dirs(rundir: Path, inventory: str | None) -> list[Path]:
    """The directories holding a cluster's nodes/<node>/ on this machine: the run directory itself, or on a lab
    (one shared file system) each server host's run directory as recorded in remote.json; for hosts elsewhere, a
    copy of their nodes' GC logs fetched over ssh into RUNDIR/host-logs/<host>/ (what guard.gc_pauses reads)."""
    if inventory is None:
        return [rundir]
    try:
        rem = json.loads((rundir / "remote.json").read_text())
        dirs = rem["sb_cluster"]["rundir"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []
    from testbeds import inventory as inv_mod, remote
    inv = inv_mod.load(inventory)
    if inv.provider.get("sharedFilesystem"):  # a lab: the hosts' files are this machine's
        return [Path(d) for d in dirs.values() if Path(d).is_dir()]
    out = []
    for h in inv.servers:
        if h.name not in dirs:
            continue
        dest = rundir / "host-logs" / h.name
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        cmd = remote.ssh_cmd(h, f"cd {shlex.quote(dirs[h.name])} && tar cf - nodes/*/logs/gc.log* 2>/dev/null || true")
        ssh = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        tar = subprocess.run(["tar", "xf", "-", "-C", str(dest)], stdin=ssh.stdout, capture_output=True, timeout=300)
        ssh.stdout.close()
        ssh.wait(60)
        if tar.returncode == 0 and (dest / "nodes").is_dir():
            out.append(dest)
    return out
