"""`--profile published` builds the figures, tables and paper from what is on disk: no probe, no cluster, no run,
whatever target is asked for, `all` included (`all` once planned every benchmark and fault run of the local scale
under this profile, and starting it on a fresh checkout started clusters)."""

import re

import pytest

from env.tests.support import ROOT, run

pytestmark = pytest.mark.slow

RUN_RULES = re.compile(r"^(benchmark_run|fault_run|hw_probe\w*|systems_\w+|testbed_\w+|lab_\w+|aws_\w+)\s+\d+\s*$", re.M)


def test_published_all_plans_no_probe_cluster_or_run():
    r = run([str(ROOT / "env/shell"), "snakemake", "-n", "--profile", "published", "all"], timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert not RUN_RULES.findall(r.stdout), r.stdout[-3000:]
