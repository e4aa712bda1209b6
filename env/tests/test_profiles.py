"""Profiles resolve by bare name from the repository root; bad config stops Snakemake before any rule runs."""

import os

import pytest

from env.tests.support import ROOT, SNAKEMAKE, run

pytestmark = pytest.mark.slow


def error_lines(stderr):
    """stderr without Snakemake's informational 'Using profile ...' line."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("Using profile ")]


def xdg_env(root):
    """The variable env/shell and the flake's shellHook set for profile look-up."""
    return {"XDG_CONFIG_DIRS": f"{root}/env/xdg:/etc/xdg", "XDG_CONFIG_HOME": str(root / "no-user-config")}


def test_ci_profile_dry_run_from_the_repository_root_inside_env_shell():
    r = run([str(ROOT / "env/shell"), "snakemake", "-n", "--profile", "ci", "all"], timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "This was a dry-run" in r.stdout
    assert "rule all:" in r.stdout


def test_env_shell_exports_the_profile_search_path():
    r = run([str(ROOT / "env/shell"), "sh", "-c", 'printf "%s" "$XDG_CONFIG_DIRS"'])
    assert r.returncode == 0, r.stderr
    first = r.stdout.split(":")[0]
    assert os.path.realpath(os.path.join(first, "snakemake")) == str(ROOT / "env" / "profiles")


@pytest.mark.parametrize("name", ["local", "ci", "aws", "lab", "hosts"])
def test_each_profile_dry_runs_in_a_copy(workflow_copy, name):
    r = run([*SNAKEMAKE, "-n", "--profile", name, "all"], cwd=workflow_copy, env=xdg_env(workflow_copy))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "make_file" in r.stdout


def test_a_missing_profile_fails_with_one_clear_line(workflow_copy):
    r = run([*SNAKEMAKE, "-n", "--profile", "nosuch", "all"], cwd=workflow_copy, env=xdg_env(workflow_copy))
    assert r.returncode != 0
    errors = error_lines(r.stderr)
    assert len(errors) == 1, r.stderr
    assert errors[0].startswith("Error: profile directory given (nosuch)")


def test_a_profile_with_an_unknown_nested_key_is_named_in_one_line(workflow_copy):
    profile = workflow_copy / "env/profiles/broken"
    profile.mkdir()
    (profile / "config.yaml").write_text("cores: 1\nconfig:\n  workloads:\n    scael: 0.1\n")
    r = run([*SNAKEMAKE, "-n", "--profile", "broken", "all"], cwd=workflow_copy, env=xdg_env(workflow_copy))
    assert r.returncode == 1
    errors = error_lines(r.stderr)
    assert len(errors) == 1, r.stderr
    assert errors[0].startswith(
        "config error: env/profiles/broken/config.yaml: workloads.scael: unknown key (allowed: "), r.stderr
    assert "Building DAG" not in r.stdout + r.stderr


def test_a_wrong_type_on_the_command_line_is_named(workflow_copy):
    r = run([*SNAKEMAKE, "-n", "--profile", "ci", "all", "--config", "testbed=5"],
            cwd=workflow_copy, env=xdg_env(workflow_copy))
    assert r.returncode == 1
    assert error_lines(r.stderr) == ["config error: command line: testbed: expected string, got integer 5"]


def test_a_real_run_with_the_local_profile_makes_the_target(workflow_copy):
    r = run([*SNAKEMAKE, "--profile", "local", "all"], cwd=workflow_copy, env=xdg_env(workflow_copy))
    assert r.returncode == 0, r.stderr[-3000:]
    assert (workflow_copy / "made-by-rule.txt").read_text() == "made\n"


def test_a_spawned_run_job_sees_the_nested_profile_values_with_their_types(workflow_copy):
    # a `run:` block is executed by a Snakemake subprocess that receives the config through --config
    (workflow_copy / "paper" / "rules.smk").write_text(
        'ALL_TARGETS.append("types.txt")\n\n'
        "rule types:\n"
        '    output: "types.txt"\n'
        '    log: "types.log"\n'
        "    run:\n"
        "        with open(output[0], 'w') as f:\n"
        "            f.write(type(config['hw_probes']['n']).__name__ + ' ' + config['testbed'])\n"
    )
    (workflow_copy / "hw-probes" / "config.schema.yaml").write_text(
        "type: object\nadditionalProperties: false\ndefault: {}\n"
        "properties:\n  n: {type: integer, default: 1, description: a number}\n"
    )
    profile = workflow_copy / "env/profiles/typed"
    profile.mkdir()
    (profile / "config.yaml").write_text("cores: 1\nconfig:\n  testbed: ci\n  hw_probes:\n    n: 16\n")
    r = run([*SNAKEMAKE, "--profile", "typed", "all"], cwd=workflow_copy, env=xdg_env(workflow_copy))
    assert r.returncode == 0, r.stderr[-3000:]
    assert (workflow_copy / "types.txt").read_text() == "int ci"


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "env" / "profiles").iterdir() if (p / "config.yaml").is_file()))
def test_every_profile_selects_jobs_greedily_not_with_a_cbc_process_every_second(name):
    """Snakemake re-selects jobs every second while the runs wait on `cluster`; its default ILP selection starts a CBC
    process each time (workloads/bench/snakemake_idle.py): each profile asks for greedy selection, and none sets a
    timespan longer than Snakemake's 1 s, whose timer thread would hold Snakemake's exit that long."""
    import yaml

    prof = yaml.safe_load((ROOT / "env" / "profiles" / name / "config.yaml").read_text())
    assert prof.get("scheduler") == "greedy", f"env/profiles/{name}/config.yaml: scheduler: {prof.get('scheduler')!r}"
    assert "max-jobs-per-timespan" not in prof
