"""Helpers of the env/ tests (importable as env.tests.support)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the Snakemake of the shell (env/shell: the venv's; nix develop: the store's), else this Python's module
SNAKEMAKE = [shutil.which("snakemake")] if shutil.which("snakemake") else [sys.executable, "-m", "snakemake"]
STAGES = ("hw-probes", "systems", "workloads", "analysis", "paper")


def run(cmd, cwd=ROOT, env=None, timeout=300):
    """Run a command; return the CompletedProcess with text output (never raises on failure)."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)
