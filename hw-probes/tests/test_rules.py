"""hw-probes/rules.smk: targets, paths and config defaults (Snakemake dry run)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_dry_run_lists_every_probe(tmp_path):
    (tmp_path / "Snakefile").write_text(
        "ALL_TARGETS = []\n"
        f'include: "{ROOT}/hw-probes/rules.smk"\n'
        "rule all:\n    input: ALL_TARGETS\n")
    cfg = 'hw_probes={"dirs":{"journal":"j","ledger":"l"},"host":"n1"}'
    p = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--config", "testbed=ci", cfg],
                       cwd=tmp_path, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'hw-probes'}"))
    assert p.returncode == 0, p.stderr + p.stdout
    out = p.stdout + p.stderr
    base = "data/raw/ci/probes/n1"
    for label in ("journal", "ledger"):
        for probe in ("dd", "dd-fdatasync", "fio-seqwrite", "fio-fsync"):
            assert f"{base}/{probe}-{label}.json" in out
    assert f"{base}/host.json" in out
    # defaults from config.schema.yaml reach the command lines
    assert "--size-mb 256 --bs-kb 1024" in out and "--bs 4k --runtime-s 30" in out
