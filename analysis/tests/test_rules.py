import os
import subprocess
import sys

import pytest
import yaml

from analysis.tests.paths import REPO


def _workdir(tmp_path, mirror):
    wd = tmp_path / "wd"
    (wd / "data" / "reference").mkdir(parents=True)
    (wd / "data" / "reference" / "studies.csv").symlink_to(REPO / "data" / "reference" / "studies.csv")
    (wd / "analysis").symlink_to(REPO / "analysis")
    cfg = {"testbed": "local", "published": {"mirror": str(mirror), "url_base": "https://example.invalid/"},
           "analysis": {"bootstrap_resamples": 500, "bootstrap_seed": 1, "ci_level": 0.9,
                        "approx_tolerance_pct": 5.0, "png_scale": 1.0}}
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg))
    (wd / "Snakefile").write_text('configfile: "config.yaml"\nALL_TARGETS = []\ninclude: "analysis/rules.smk"\n'
                                  "rule all:\n    input: ALL_TARGETS\n    default_target: True\n")
    env = dict(os.environ, PYTHONPATH=str(REPO), PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    return wd, env


def _smk(wd, env, *args):
    return subprocess.run([sys.executable, "-m", "snakemake", "--nolock", "-c2", *args], cwd=wd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_dry_run_has_one_rule_per_figure(tmp_path, mirror):
    wd, env = _workdir(tmp_path, mirror)
    r = _smk(wd, env, "-n", "all")
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout + r.stderr
    for fid in ("maxtput", "latency_e2e_10sub", "fsync_probe", "catchup_rate", "latency_publish_2000p",
                "latency_publish_1part", "latency_e2e_1part", "catchup_publish_bypass", "catchup_publish_async",
                "catchup_publish_sync"):
        assert f"analysis_figure_{fid}" in out
    assert "analysis_published" in out and "analysis_tables" in out
    assert "analysis_faults" in out  # the fault study (analysis/faults.smk) is part of `all`, with or without fault runs
    # study 002's latency-over-time figure is a target of its rule (analysis/study002.smk)
    r = _smk(wd, env, "-n", "paper/figures/study002-timeseries.svg")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "analysis_study002" in r.stdout + r.stderr


@pytest.mark.slow
def test_build_tables_and_one_figure_from_the_mirror(tmp_path, mirror):
    wd, env = _workdir(tmp_path, mirror)
    r = _smk(wd, env, "paper/_variables.yml", "paper/figures/fsync-probe.svg")
    assert r.returncode == 0, r.stderr[-3000:]
    v = yaml.safe_load((wd / "paper" / "_variables.yml").read_text())
    assert v["published"]["files"] == 124
    # the findings' numbers wait for the study modules' tables and the fault runs (none here: not measured)
    assert v["findings"]["s002"]["measured"] == v["findings"]["faults"]["F1"] == (
        "local: not measured at this scale; aws: not measured at this scale")
    assert v["coverage"]["all"]["items"] > 0
    for ext in ("svg", "png", "pdf", "json"):
        assert (wd / "paper" / "figures" / f"fsync-probe.{ext}").stat().st_size > 0
    assert (wd / "logs" / "analysis" / "ingest.log").read_text().startswith("runs=124")
    assert len(list((wd / "data" / "published" / "streamnative-2020" / "results").rglob("*.json"))) == 124
