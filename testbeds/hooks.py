"""The thin hooks through which workloads/run.py runs on a multi-host testbed.

When STREAMBENCH_INVENTORY names an inventory (set by testbeds/rules.smk for `--profile lab`, later aws),
the cluster commands (`python -m systems up|status|down ...`) become `python -m testbeds cluster ...
--inventory F` with the same arguments, and the runner (`runner/bin/omb-run ARGS`) becomes
`python -m testbeds run --inventory F ARGS` (one runner per client host, merged). Without it nothing changes.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

INVENTORY_ENV = "STREAMBENCH_INVENTORY"


def inventory() -> str | None:
    return os.environ.get(INVENTORY_ENV) or None


def systems_cmd(*args: str) -> list[str]:
    """The command line of `python -m systems ARGS` on this testbed."""
    inv = inventory()
    if inv is None:
        return [sys.executable, "-m", "systems", *args]
    return [sys.executable, "-m", "testbeds", "cluster", *args, "--inventory", inv]


def runner_cmd(runner: str, *args: str) -> list[str]:
    """The command line of `runner/bin/omb-run ARGS` on this testbed."""
    inv = inventory()
    if inv is None:
        return [runner, *args]
    return [sys.executable, "-m", "testbeds", "run", "--inventory", inv, *args]


def keep_parts(tmp_out: Path, result: Path) -> None:
    """Move the per-client parts (<tmp_out stem>.parts/) beside the result (rep-<n>.parts/)."""
    parts = tmp_out.with_suffix(".parts")
    if parts.is_dir():
        dest = result.with_suffix(".parts")
        shutil.rmtree(dest, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(parts), str(dest))
