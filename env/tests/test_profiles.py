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
def test_every_profile_selects_jobs_greedily_not_with_a_cbc_process_each_time(name):
    """Snakemake selects jobs each time one ends; its default ILP selection starts a CBC process each time
    (workloads/bench/snakemake_idle.py): each profile asks for greedy selection. None sets a job-rate timespan: the
    workflow drops the limiter and its timer (env/snakesched.py)."""
    import yaml

    prof = yaml.safe_load((ROOT / "env" / "profiles" / name / "config.yaml").read_text())
    assert prof.get("scheduler") == "greedy", f"env/profiles/{name}/config.yaml: scheduler: {prof.get('scheduler')!r}"
    assert "max-jobs-per-timespan" not in prof


@pytest.mark.parametrize("timer", [False, True])
def test_jobs_are_selected_when_one_ends_not_on_a_timer(workflow_copy, timer):
    """A job sleeping 6 s on `cluster=1` while 4 quick ones wait, behind 4 quick ones that ended: with the Snakefile's
    onstart (env/snakesched.py) Snakemake selects once at the start and once per ended job; with Snakemake's
    job-rate timer left in place (the onstart line removed from the copy) it selects many more times, as each ended
    job started a chain of timed selections (the check can fail)."""
    snakefile = workflow_copy / "Snakefile"
    text = snakefile.read_text()
    call = "if not snakesched.no_reselection_timer(workflow):"
    assert call in text
    if timer:
        snakefile.write_text(text.replace(call, "if False:"))
    (workflow_copy / "workloads" / "rules.smk").write_text(
        'ALL_TARGETS.extend([f"q{i}.txt" for i in range(8)] + ["s.txt"])\n'
        "rule quick:\n"
        '    output: "q{i}.txt"\n'
        "    priority: lambda wc: 200 if int(wc.i) < 4 else 1\n"
        "    resources: cluster=1\n"
        '    shell: "echo {wildcards.i} > {output}"\n'
        "rule sleeper:\n"
        '    output: "s.txt"\n'
        "    priority: 100\n"
        "    resources: cluster=1\n"
        '    shell: "sleep 6; echo s > {output}"\n'
    )
    targets = [f"q{i}.txt" for i in range(8)] + ["s.txt"]
    r = run([*SNAKEMAKE, "--profile", "ci", "--cores", "2", "--verbose", *targets], cwd=workflow_copy,
            env=xdg_env(workflow_copy), timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    assert all((workflow_copy / t).is_file() for t in targets)
    selections = (r.stdout + r.stderr).count("Ready jobs:")
    if timer:
        assert selections > 20, f"Snakemake's timer left in place: only {selections} selections for 9 jobs"
    else:
        assert selections <= 11, f"{selections} selections for 9 jobs: Snakemake selects on a timer"
