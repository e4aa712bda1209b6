"""`--profile hosts` (issue 30, blocker 11): the user's own machines, from an inventory written by hand
(docs/hosts.md). The documented example is valid as written; `python -m testbeds adopt` checks an inventory and
writes the working copy the workflow reads; the profile plans adopt -> prepare -> probes -> the runs, and without
an inventory stops at once with one line."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from testbeds import inventory

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "hosts.md"


def _example(tmp_path: Path) -> Path:
    """The JSON block of docs/hosts.md, written as my-hosts.json beside a key file (the doc's ~ paths made
    relative: the same resolution rule)."""
    block = re.search(r"```json\n(.*?)```", DOC.read_text(), re.S).group(1)
    doc = json.loads(block)
    doc["ssh"]["privateKey"] = "keys/id_ed25519"
    doc["ssh"]["knownHosts"] = "keys/known_hosts"
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id_ed25519").write_text("not a real key\n")
    f = tmp_path / "my-hosts.json"
    f.write_text(json.dumps(doc))
    return f


def test_the_documented_example_is_valid_as_written():
    block = re.search(r"```json\n(.*?)```", DOC.read_text(), re.S).group(1)
    inv = inventory.check(json.loads(block), "docs/hosts.md")
    assert [h.name for h in inv.servers] == ["srv-1", "srv-2", "srv-3"] and [h.name for h in inv.clients] == ["cli-1"]
    cli = inv.clients[0]
    assert cli.root == "/" and cli.work_dir == "/opt/streambench" and cli.data_dirs == {"log": "/opt/streambench/data"}
    assert inv.servers[0].ssh["privateKey"] == str(Path("~/.ssh/id_ed25519").expanduser())


def test_adopt_writes_a_working_copy_with_the_controller_paths_resolved(tmp_path):
    f = _example(tmp_path)
    out = tmp_path / "work" / "inventory.json"
    r = subprocess.run([sys.executable, "-m", "testbeds", "adopt", "--inventory", str(f), "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["ssh"]["privateKey"] == str(tmp_path / "keys" / "id_ed25519")
    assert doc["provider"]["adoptedFrom"] == str(f.resolve())
    inv = inventory.load(out)  # the copy loads from anywhere
    assert inv.hosts[0].ssh["knownHosts"] == str(tmp_path / "keys" / "known_hosts")


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d["hosts"][0].pop("dataDirs"), "hosts[0].dataDirs: missing"),
    (lambda d: d["hosts"].pop(2), "hosts: 2 host(s) with role 'server', at least 3 needed"),
    (lambda d: d["ssh"].pop("privateKey"), "hosts[0].ssh.privateKey: missing"),
    (lambda d: d.update(testbed="mine"), "testbed: 'mine' is not one of"),
])
def test_adopt_refuses_a_bad_inventory_in_one_line_and_writes_nothing(tmp_path, mutate, field):
    f = _example(tmp_path)
    doc = json.loads(f.read_text())
    mutate(doc)
    f.write_text(json.dumps(doc))
    out = tmp_path / "out.json"
    r = subprocess.run([sys.executable, "-m", "testbeds", "adopt", "--inventory", str(f), "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"testbeds: error: {f}: ") and field in lines[0], r.stderr
    assert not out.exists()


def _snakemake(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "snakemake", "-n", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


@pytest.mark.slow
def test_the_profile_plans_adopt_prepare_probes_and_the_runs(tmp_path):
    import yaml
    f = _example(tmp_path)
    # the profile's own workloads block (a --config replaces the profile's whole config: give it again)
    wl = yaml.safe_load((ROOT / "env" / "profiles" / "hosts" / "config.yaml").read_text())["config"]["workloads"]
    # --forceall: the whole DAG, whatever this checkout holds already (env/test's lab check leaves a hosts run's
    # probes and status records in data/runs/hosts, which a plain dry-run would not plan again)
    r = _snakemake("--profile", "env/profiles/hosts", "all", "--forceall", "--config", "testbed=hosts",
                   f"testbeds={{hosts: {{inventory: {f}}}}}", f"workloads={json.dumps(wl)}")
    assert r.returncode == 0, r.stderr[-3000:]
    for rule in ("testbed_hosts_adopt", "testbed_prepare", "testbed_probes", "benchmark_run"):
        assert re.search(rf"^rule {rule}:", r.stdout, re.M) or f" {rule} " in r.stdout, rule
    assert "testbed_lab_up" not in r.stdout and "testbed_lab_down" not in r.stdout
    assert "data/raw/hosts/" in r.stdout
    # every system's cells (Pravega starts on inventory hosts: systems/plan.py); what hosts cannot run yet is not
    # planned: no fault run (the fault claims' 60 cells have not been run on hosts yet)
    assert "status/kafka/" in r.stdout and "status/pulsar/" in r.stdout and "status/pravega/" in r.stdout
    assert "fault_run" not in r.stdout


@pytest.mark.slow
def test_without_an_inventory_the_profile_stops_in_one_line(tmp_path):
    r = _snakemake("--profile", "env/profiles/hosts", "all", "--config", "testbed=hosts",
                   f"testbeds={{hosts: {{inventory: {tmp_path / 'none.json'}}}}}")
    assert r.returncode == 1
    err = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("Using profile")]
    assert len(err) == 1 and err[0].startswith(f"config testbeds.hosts.inventory: {tmp_path / 'none.json'}: no such file"), err
