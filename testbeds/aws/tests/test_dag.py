"""The aws DAG runs its fleets side by side (issue 30, blocker 10): `snakemake -n --profile aws all` plans every fleet
at once with aws.parallel_fleets unset, one after another with 1, and as packed under aws.vcpu_quota; every run
holds its own fleet's cluster resource and keeps its cluster in its fleet's directory; and the resources really
let runs of different fleets overlap while each fleet runs one at a time (a small real Snakemake workflow)."""
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from testbeds.aws import plan
from testbeds.aws.__main__ import load_config
from testbeds.aws.plan import ROOT

pytestmark = pytest.mark.slow

SNAKEMAKE = [shutil.which("snakemake")] if shutil.which("snakemake") else [sys.executable, "-m", "snakemake"]
FLEETS = ["s000", "s001", "s002", "s003", "s004"]


def no_credentials_env() -> dict:
    """This machine's environment without any AWS credentials (the quota is then not known when planning)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                        "AWS_ENDPOINT_URL")}
    env.update(AWS_SHARED_CREDENTIALS_FILE="/nonexistent", AWS_CONFIG_FILE="/nonexistent",
               AWS_EC2_METADATA_DISABLED="true")
    return env


def dry_run(*config: str) -> tuple[list[dict], str]:
    """The jobs of `snakemake -n --profile aws all [--config testbed=aws ...]` (rule, input, wildcards, resources,
    shell command) and its whole output."""
    cmd = [*SNAKEMAKE, "-n", "--profile", str(ROOT / "env/profiles/aws"), "all"]
    if config:
        cmd += ["--config", "testbed=aws", *config]  # --config replaces the profile's config: testbed again
    r = subprocess.run(cmd, cwd=ROOT, env=no_credentials_env(), capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    jobs = []
    for block in re.split(r"\n(?=rule \w+:\n)", out):
        m = re.match(r"rule (\w+):\n", block)
        if not m:
            continue
        job = {"rule": m.group(1)}
        for key in ("input", "wildcards", "resources"):
            km = re.search(rf"^    {key}: (.*)$", block, re.M)
            job[key] = km.group(1) if km else ""
        sm = re.search(r"^Shell command: (.*)$", block, re.M)
        job["shell"] = sm.group(1) if sm else ""
        jobs.append(job)
    return jobs, out


def resources(job: dict) -> dict:
    return {k: v for k, v in (item.split("=", 1) for item in job["resources"].split(", ") if "=" in item)}


def waits_for(jobs: list[dict]) -> dict:
    """fleet -> the fleets whose down.json its aws_up waits for."""
    out = {}
    for j in jobs:
        if j["rule"] == "aws_up":
            fleet = j["wildcards"].split("=")[1]
            out[fleet] = tuple(sorted(re.findall(r"data/runs/aws/fleets/(s\d{3})/down\.json", j["input"])))
    return out


def test_unset_parallel_fleets_plans_every_fleet_at_once_each_holding_its_own_cluster():
    jobs, out = dry_run()
    assert waits_for(jobs) == {f: () for f in FLEETS}
    assert "aws: " not in out  # nothing to say: all at once
    runs = [j for j in jobs if j["rule"] == "benchmark_run"]
    assert len(runs) == 1188
    for j in runs:
        fleet = re.search(r"--inventory data/runs/aws/fleets/(s\d{3})/inventory\.json", j["shell"]).group(1)
        held = resources(j)
        assert "cluster" not in held  # the one cluster of a single machine is not held on aws
        assert {k: v for k, v in held.items() if k.startswith("cluster_")} == {
            f"cluster_{f}": ("1" if f == fleet else "0") for f in FLEETS}, j
        assert f"--clusters data/runs/aws/fleets/{fleet}/clusters " in j["shell"]
    assert {f for f in FLEETS} == {re.search(r"--inventory data/runs/aws/fleets/(s\d{3})/", j["shell"]).group(1) for j in runs}
    for j in (j for j in jobs if j["rule"] == "aws_probes"):
        fleet = j["wildcards"].split("=")[1]
        assert resources(j)[f"cluster_{fleet}"] == "1"
    for rule in ("aws_up", "aws_prepare", "aws_probes"):  # each fleet step runs through the per-fleet failure path
        steps = [j for j in jobs if j["rule"] == rule]
        assert len(steps) == 5 and all(j["shell"].startswith("python -m testbeds.aws step --fleet s0") for j in steps)
    # each fleet's prepare ships the distributions of the systems its runs start, and no other
    started = {f: set() for f in FLEETS}
    for j in (j for j in jobs if j["rule"] in ("benchmark_run", "fault_run")):
        fleet = re.search(r"--inventory data/runs/aws/fleets/(s\d{3})/", j["shell"]).group(1)
        started[fleet].add(re.search(r"--system (\w+)", j["shell"]).group(1))
    assert {"pravega"} & set().union(*started.values()) and any("pravega" not in s for s in started.values()), started
    for j in (j for j in jobs if j["rule"] == "aws_prepare"):
        fleet = j["wildcards"].split("=")[1]
        assert re.search(r"testbeds prepare --inventory \S+ --systems (\S+) ", j["shell"]).group(1) == \
            ",".join(sorted(started[fleet])), j["shell"]
        assert set(re.findall(r"dist/(kafka|pulsar|pravega)-", j["input"])) == started[fleet], j["input"]


def test_parallel_fleets_1_plans_one_fleet_after_another():
    jobs, out = dry_run("aws={parallel_fleets: 1}")
    assert waits_for(jobs) == {"s000": (), "s001": ("s000",), "s002": ("s001",), "s003": ("s002",), "s004": ("s003",)}
    assert "aws: config aws.parallel_fleets is 1: one fleet at a time (s000 first; s001 after s000;" in out


def test_a_vcpu_quota_plans_the_fleets_as_packed_and_says_so():
    jobs, out = dry_run("aws={vcpu_quota: 300}")
    _, rows, _ = plan.plan_from_config(load_config("aws", ["aws.vcpu_quota=300"]))
    packing = plan.pack(rows, None, 300)
    assert 1 < packing.most < len(FLEETS)  # the quota packs some fleets side by side, not all of them
    assert waits_for(jobs) == {f: tuple(sorted(packing.after[f])) for f in FLEETS}
    assert f"aws: {packing.note()}" in out


def test_the_fleet_resources_let_fleets_overlap_and_keep_each_fleet_to_one_run_at_a_time(tmp_path):
    """testbeds/aws/resources.smk in a real (tiny) Snakemake workflow: four 2-second jobs, two per fleet, 4 cores."""
    (tmp_path / "Snakefile").write_text(textwrap.dedent(f"""\
        import sys, types
        sys.path.insert(0, {str(ROOT)!r})
        config.update({{"testbed": "aws", "aws": {{"instances_file": {str(ROOT / "testbeds/aws/instances.yaml")!r}}}}})
        AWS_FLEET_OF = {{"r1": "s000", "r2": "s000", "r3": "s001", "r4": "s001"}}

        def _wl_run(wildcards):
            return types.SimpleNamespace(key=wildcards.run)

        include: {str(ROOT / "testbeds/aws/resources.smk")!r}

        rule all:
            input: expand("out/{{run}}.txt", run=sorted(AWS_FLEET_OF))

        rule job:
            output: "out/{{run}}.txt"
            resources: **TESTBED_RUN_RESOURCES
            shell: "date +%s.%N > {{output}}.start; sleep 2; date +%s.%N > {{output}}"
        """))
    r = subprocess.run([*SNAKEMAKE, "--cores", "4", "-q"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    span = {n: (float((tmp_path / f"out/{n}.txt.start").read_text()), float((tmp_path / f"out/{n}.txt").read_text()))
            for n in ("r1", "r2", "r3", "r4")}

    def overlap(a, b):
        return span[a][0] < span[b][1] and span[b][0] < span[a][1]

    assert not overlap("r1", "r2") and not overlap("r3", "r4")  # one at a time on each fleet
    assert any(overlap(a, b) for a in ("r1", "r2") for b in ("r3", "r4"))  # the fleets side by side


def test_the_faults_target_plans_the_whole_grid_on_the_fault_studys_fleet_only():
    """`snakemake -n --profile aws faults`: the grid (E000-FAULT and the hold faults) on fleet s000, the fleet of
    study 000, and no other fleet brought up (it used to stop: "the aws plan holds no fault runs yet")."""
    r = subprocess.run([*SNAKEMAKE, "-n", "--profile", str(ROOT / "env/profiles/aws"), "faults"], cwd=ROOT,
                       env=no_credentials_env(), capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)\s*$", out, re.M))
    assert int(counts.get("fault_run", 0)) > 0 and "benchmark_run" not in counts, out[-3000:]
    fleets = set(re.findall(r"data/runs/aws/fleets/(s\d{3})/inventory\.json", out))
    assert fleets == {"s000"}, fleets
    faults = set(re.findall(r"--(partition-leader|kill-leader|power-loss|crash-all|pause-leader)/rep-", out))
    assert faults == {"partition-leader", "kill-leader", "power-loss", "crash-all", "pause-leader"}, faults
