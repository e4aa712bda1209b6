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

import shutil
import sys
from pathlib import Path


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
