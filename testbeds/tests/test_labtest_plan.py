"""testbeds/labtest.py's pure parts: the hosts profile's run it plans (`--hosts-profile`, issue 30: env/test runs
`--profile hosts` on the EC2-like lab's inventory), the refusal of a real hosts run's data, and the /tmp check that
counts only its own login user's files when another lab runs beside it."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from testbeds import labtest
from testbeds import util

ROOT = Path(__file__).resolve().parents[2]


def test_the_hosts_profile_plans_adopt_prepare_probes_and_one_l1_cell_per_system(tmp_path):
    exps = labtest.hosts_experiments_file(tmp_path, ["pravega"])
    inv = tmp_path / "inventory.json"
    inv.write_text("{}")  # adopt checks it when it runs; a dry run only needs the file
    cmd = labtest.hosts_profile_command(inv, ["pravega"], exps)
    # --forceall: the whole DAG of the target, whatever this checkout already made
    r = subprocess.run([cmd[0], "-n", "--forceall", *cmd[1:]], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", r.stdout, re.M))
    steps = {k: counts.get(k) for k in ("testbed_hosts_adopt", "testbed_prepare", "testbed_probes", "benchmark_run",
                                         "fault_run", "benchmarks")}
    assert steps == {"testbed_hosts_adopt": "1", "testbed_prepare": "1", "testbed_probes": "1",
                     "benchmark_run": "1", "fault_run": None, "benchmarks": "1"}, r.stdout[-2000:]
    assert f"data/runs/hosts/status/pravega/L1/{labtest.WORKLOAD}/rep-1.json" in r.stdout
    # no analysis or paper: the AWS rehearsal beside it writes those files in the same directory
    assert "paper" not in counts and not any(k.startswith("analysis") for k in counts)


def test_a_real_hosts_runs_data_are_refused_and_left_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(labtest, "root", lambda: tmp_path)
    mine = tmp_path / "data/runs/hosts/status/x.json"
    mine.parent.mkdir(parents=True)
    mine.write_text("{}")
    with pytest.raises(util.TestbedError, match=r"^data/runs/hosts: holds a --profile hosts run that is not this check's"):
        labtest.hosts_profile_run(tmp_path / "inv.json", ["pravega"], tmp_path / "out")
    assert mine.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a file to another uid (root only)")
def test_the_tmp_check_counts_only_the_labs_own_users_files():
    mine = Path(f"/tmp/native-sbtest-{os.getpid()}")
    mine.mkdir()
    try:
        os.chown(mine, 54321, 54321)
        names = labtest.tmp_entries()
        assert mine.name in names  # without a user: everything a JVM may leave
        assert mine.name in labtest.tmp_entries(54321)
        assert mine.name not in labtest.tmp_entries(54322)  # another lab's (e.g. the rehearsal's runner's)
        state = {"id": "zz-none", "pids": [], "tmp": set(), "uid": 54322}
        assert f"/tmp/{mine.name}" not in labtest.leftovers(state)
        state["uid"] = 54321
        assert f"/tmp/{mine.name}" in labtest.leftovers(state)
    finally:
        mine.rmdir()


def test_the_checks_experiment_is_e000_lat1s_workload_at_l1(tmp_path):
    doc = yaml.safe_load(labtest.hosts_experiments_file(tmp_path, ["pravega"]).read_text())
    exp = doc["experiments"][labtest.HOSTS_EXPERIMENT]
    assert exp["workloads"] == [labtest.WORKLOAD] and exp["levels"] == ["L1"] and exp["systems"] == ["pravega"]
    assert exp["study"] == "000"
