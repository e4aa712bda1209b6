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
import shutil
import sys
from pathlib import Path
from typing import Callable


def systems_cmd(*args: str, inventory: str | None = None) -> list[str]:
    """The command line of `python -m systems ARGS` on the testbed of this inventory (None: this machine)."""
    if inventory is None:
        return [sys.executable, "-m", "systems", *args]
    return [sys.executable, "-m", "testbeds", "cluster", *args, "--inventory", inventory]


def runner_cmd(runner: str, *args: str, inventory: str | None = None) -> list[str]:
    """The command line of `runner/bin/omb-run ARGS` on the testbed of this inventory (None: this machine)."""
    if inventory is None:
        return [runner, *args]
    return [sys.executable, "-m", "testbeds", "run", "--inventory", inventory, *args]


def keep_parts(tmp_out: Path, result: Path) -> None:
    """Move the per-client parts (<tmp_out stem>.parts/) beside the result (rep-<n>.parts/)."""
    parts = tmp_out.with_suffix(".parts")
    if parts.is_dir():
        dest = result.with_suffix(".parts")
        shutil.rmtree(dest, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(parts), str(dest))


def host_pids(inventory: str | None) -> tuple[Callable[[], list[int]], Callable[[], list[int]]] | str | None:
    """What the host sampler of workloads/run.py can attribute on this machine's CPU.

    None without an inventory: the caller knows its cluster's and its runner's process groups. On a lab (hosts
    that are network namespaces of this machine) two functions listing the pids in the server hosts' and in the
    client hosts' namespaces: the cluster's and the runners' CPU, everything else being other work. "remote"
    for hosts elsewhere (aws): this machine's CPU says nothing about theirs, and no sample is taken."""
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
    (one shared file system) each server host's run directory as recorded in remote.json; none for remote hosts."""
    if inventory is None:
        return [rundir]
    try:
        remote = json.loads((rundir / "remote.json").read_text())
        return [Path(d) for d in remote["sb_cluster"]["rundir"].values() if Path(d).is_dir()]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []
