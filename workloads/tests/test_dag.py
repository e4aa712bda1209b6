"""The Snakemake DAG of the workloads stage: built from experiments.yaml; a bad name stops it at construction."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def snakemake(*args, cwd=ROOT):
    exe = shutil.which("snakemake") or str(Path(sys.executable).with_name("snakemake"))
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'hw-probes'}"}
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


def configfile(tmp_path, experiments_file):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump({"testbed": "ci", "published": {"mirror": str(ROOT.parent / "shared/published/streamnative-2020")},
                                   "workloads": {"experiments_file": str(experiments_file)}}))
    return cfg


@pytest.mark.parametrize(
    "edit, expected",
    [
        (lambda d: d["experiments"]["E000-LAT1"]["workloads"].append("1-topic-3-partitions-2kb"), "unknown workload '1-topic-3-partitions-2kb'"),
        (lambda d: d["experiments"]["E000-MT4"].__setitem__("systems", ["kafka", "redpanda"]), "unknown system 'redpanda'"),
        (lambda d: d["experiments"]["E000-MT4"].__setitem__("levels", ["L1", "L5"]), "unknown level 'L5'"),
        (lambda d: d["experiments"]["E000-FAULTCI"].update(systems=["kafka"], levels=["L1"], faults=["kill-bookie"],
                                                           fault_cells=[{"faults": ["kill-bookie"], "levels": ["L1"]}]),
         "experiments.E000-FAULTCI.faults: kafka does not support fault 'kill-bookie'"),
    ],
)
def test_unknown_name_fails_at_dag_construction(tmp_path, edit, expected):
    doc = yaml.safe_load((ROOT / "workloads/experiments.yaml").read_text())
    edit(doc)
    bad = tmp_path / "experiments.yaml"
    bad.write_text(yaml.safe_dump(doc, sort_keys=False))
    res = snakemake("-n", "all", "--configfile", str(configfile(tmp_path, bad)))
    assert res.returncode != 0
    line = [ln for ln in res.stderr.splitlines() if expected in ln]
    assert line and str(bad) in line[0], res.stderr[-2000:]


def test_dry_run_lists_every_run_of_the_scale(tmp_path):
    res = snakemake("-n", "all", "--configfile", str(configfile(tmp_path, ROOT / "workloads/experiments.yaml")))
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout + res.stderr
    assert "benchmark_run" in out and "benchmarks" in out
    counts = {ln.split()[0]: int(ln.split()[1]) for ln in out.splitlines() if len(ln.split()) == 2 and ln.split()[1].isdigit()}
    assert counts.get("benchmark_run") == 8  # ci: 2 systems x 2 levels x 2 workloads x 1 repetition
    # ci: Kafka L1 power-loss, Pulsar L4-bypass crash-all (E000-FAULTCI), twice each (the second on the first's cluster)
    assert counts.get("fault_run") == 4


def test_every_run_waits_for_every_prepare_and_the_runner(tmp_path):
    """Runs become ready at one moment, so the priorities alone order them: the ci's second Pulsar fault run
    once ran on a fresh cluster because Pulsar's prepare ended before Kafka's and one Pulsar run started alone."""
    res = snakemake("--forceall", "--configfile", str(configfile(tmp_path, ROOT / "workloads/experiments.yaml")),
                    "--dag", "dot", "--", "all")
    assert res.returncode == 0, res.stderr[-3000:]
    label = {m[0]: m[1].split("\\n")[0] for m in re.findall(r'^\s*(\d+)\[label = "([^"]*)"', res.stdout, re.M)}
    before: dict[str, set] = {}
    for a, b in re.findall(r"^\s*(\d+) -> (\d+)", res.stdout, re.M):
        before.setdefault(b, set()).add(label[a])
    runs = [n for n, lab in label.items() if lab in ("benchmark_run", "fault_run")]
    assert len(runs) == 12
    want = {"runner_build", "systems_prepare_kafka", "systems_prepare_pulsar"}
    assert all(before[n] & (want | {"systems_prepare_pravega"}) == want for n in runs), \
        {label[n]: before[n] for n in runs}


def test_a_partition_asked_of_a_testbed_on_this_machine_stops_the_dag_in_one_line(tmp_path):
    """E000-FAULTHOLD's partition-leader needs hosts of their own: on the ci testbed (this machine) the DAG is not
    built, and the line names the cell, the fault and its experiment; nothing starts."""
    cfg = configfile(tmp_path, ROOT / "workloads/experiments.yaml")
    doc = yaml.safe_load(cfg.read_text())
    doc["workloads"]["experiments"] = ["E000-FAULTHOLD"]
    cfg.write_text(yaml.safe_dump(doc))
    res = snakemake("-n", "all", "--configfile", str(cfg))
    assert res.returncode != 0
    line = [ln for ln in res.stderr.splitlines() if "needs hosts of their own" in ln]
    assert line and re.search(r"ci/(kafka|pulsar)/L\d\+stock/[^ ]+--partition-leader/rep-1: fault partition-leader "
                              r"\(experiments E000-FAULTHOLD\)", line[0]), res.stderr[-2000:]
    assert "benchmark_run" not in res.stdout


def test_workloads_faults_keeps_only_those_faults_cells_and_a_bad_name_is_refused(tmp_path):
    """workloads.faults: only the named faults' cells run (here a pause, which needs no hosts, on the ci testbed);
    a network fault among them still stops the DAG on this machine; a name that is no fault is refused by the
    config's schema, naming the field."""
    cfg = configfile(tmp_path, ROOT / "workloads/experiments.yaml")
    doc = yaml.safe_load(cfg.read_text())
    doc["workloads"].update(experiments=["E000-FAULTHOLD"], faults=["pause-leader"])
    cfg.write_text(yaml.safe_dump(doc))
    res = snakemake("-n", "faults", "--configfile", str(cfg))
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout + res.stderr
    faults = set(re.findall(r"workload=[^,\s]+--([a-z-]+), rep=", out))
    assert faults == {"pause-leader"}, out[-2000:]
    doc["workloads"]["faults"] = ["pause-leader", "slow-link-leader"]
    cfg.write_text(yaml.safe_dump(doc))
    res = snakemake("-n", "faults", "--configfile", str(cfg))
    assert res.returncode != 0 and re.search(r"--slow-link-leader/rep-1: fault slow-link-leader .*needs hosts of their "
                                             r"own", res.stderr), res.stderr[-2000:]
    doc["workloads"]["faults"] = ["partition-everything"]
    cfg.write_text(yaml.safe_dump(doc))
    res = snakemake("-n", "faults", "--configfile", str(cfg))
    assert res.returncode != 0 and "partition-everything" in res.stderr and "faults" in res.stderr, res.stderr[-2000:]


def test_the_config_schema_names_every_fault_the_plan_knows():
    schema = yaml.safe_load((ROOT / "workloads/config.schema.yaml").read_text())
    from workloads import plan
    assert schema["properties"]["faults"]["items"]["enum"] == list(plan.FAULTS)


def test_the_analysis_knows_every_fault_the_plan_runs():
    """The analysis recognises fault runs by their workload id's --<fault> suffix; a fault the plan runs but the
    analysis does not list is read as an OMB result and stops `analysis_ingest`."""
    from analysis import labels
    from workloads import plan
    assert sorted(labels.KNOWN_FAULTS) == sorted(plan.FAULTS)
    assert sorted(labels.HOLD_FAULTS) == sorted(plan.HOLD_FAULTS)
    assert set(labels.PARTITION_FAULTS) <= set(plan.NEEDS_HOSTS) and set(labels.APART_FAULTS) <= set(plan.HOLD_FAULTS)


def test_workloads_levels_keeps_only_those_levels_cells_faults_included_and_an_unknown_level_is_one_line(tmp_path):
    """workloads.levels (the aws rehearsal sets [L1, L4-bypass]): the ci scale's runs at L4 drop out, its L1 runs
    and its L4-bypass fault cell stay; a level no system has stops the DAG in one line naming the key."""
    cfg = configfile(tmp_path, ROOT / "workloads/experiments.yaml")
    doc = yaml.safe_load(cfg.read_text())
    doc["workloads"]["levels"] = ["L1", "L4-bypass"]
    cfg.write_text(yaml.safe_dump(doc))
    res = snakemake("-n", "all", "--configfile", str(cfg))
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout + res.stderr
    cells = set(re.findall(r"data/runs/ci/status/(\w+)/(L[1-4][^/]*)/([^/\s]+)/rep-\d+\.json", out))
    assert {lv.split("+")[0] for _, lv, _ in cells} == {"L1", "L4-bypass"}, sorted(cells)
    assert any(w.endswith("--crash-all") and lv.startswith("L4-bypass") for _, lv, w in cells), sorted(cells)
    assert any(not w.count("--") and lv == "L1" for _, lv, w in cells), sorted(cells)
    doc["workloads"]["levels"] = ["L3-bypass"]
    cfg.write_text(yaml.safe_dump(doc))
    res = snakemake("-n", "all", "--configfile", str(cfg))
    assert res.returncode != 0
    assert "workloads: config workloads.levels: unknown level 'L3-bypass'" in res.stderr, res.stderr[-2000:]
