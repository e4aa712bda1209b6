# The index of the workflow: it only validates the config and includes each stage's rules.
#   env/shell snakemake --profile local all     # every figure, table and the paper, from the probes up
#   env/shell snakemake -n --profile ci all     # the whole DAG at CI sizes, without running it
# Each stage (folder) owns its rules.smk, appends its final targets to ALL_TARGETS and documents its
# config keys in <stage>/config.schema.yaml (composed by env/config.schema.yaml).
import json
import os
import sys

from snakemake.utils import min_version

min_version("9.0")


configfile: "env/config.yaml"


# --- config: env/config.yaml + profile/--config overrides, checked against env/config.schema.yaml,
# with every default filled in, before any rule is even defined. One line per error, then exit 1.
sys.path.insert(0, workflow.basedir)
from env import configcheck  # noqa: E402

if workflow.is_main_process or configcheck.HANDOVER not in os.environ:
    try:
        _checked = configcheck.check(
            ("env/config.yaml", configcheck.load_yaml(configcheck.BASE_CONFIG)),
            configcheck.overrides(sys.argv, workflow.config_settings.overwrite_config),
        )
    except configcheck.ConfigError as _error:
        print(_error, file=sys.stderr)
        sys.exit(1)
    # jobs that Snakemake spawns as subprocesses (run: blocks) get the checked config with its types;
    # through --config they would get nested values as strings
    os.environ[configcheck.HANDOVER] = json.dumps(_checked)
else:
    _checked = json.loads(os.environ[configcheck.HANDOVER])
config.clear()
config.update(_checked)


ALL_TARGETS = []


# What a testbed adds to each benchmark run (workloads/rules.smk): input files (its inventory) and runner
# arguments. Loopback testbeds add nothing; testbeds/aws/rules.smk redefines both.
def TESTBED_RUN_INPUTS(run):
    return []


def TESTBED_RUN_ARGS(run):
    return ""


# Where a run's cluster is kept (workloads/run.py --clusters: the one cluster running there) and the resources a run
# holds: one `cluster` per testbed. testbeds/aws/ gives each fleet its own of both (its fleets run side by side).
def TESTBED_CLUSTERS_DIR(run):
    return f"data/runs/{config['testbed']}/clusters"


TESTBED_RUN_RESOURCES = {"cluster": 1}


include: "hw-probes/rules.smk"
include: "systems/rules.smk"
include: "testbeds/rules.smk"
include: "workloads/rules.smk"
include: "testbeds/aws/rules.smk"
include: "analysis/rules.smk"
include: "paper/rules.smk"


from env import snakesched  # noqa: E402


onstart:
    # no selection of jobs on a timer, only when a job ends: the timers' chains cost up to 0.3 cores of two beside the
    # runs (env/snakesched.py)
    if not snakesched.no_reselection_timer(workflow):
        print("snakemake: no job scheduler to tune (env/snakesched.py); jobs are selected on Snakemake's timer",
              file=sys.stderr)
    if config["testbed"] == "aws":
        _aws_gate()  # testbeds/aws/rules.smk: cost estimate, aws.confirm, credentials, before anything is created


def ALL_INPUTS():
    """Every stage's final targets; with analysis.with_runs false (the `published` profile: no probe, no cluster, no
    run) only the analysis and paper outputs, built from what is on disk."""
    if (config.get("analysis") or {}).get("with_runs", True):
        return ALL_TARGETS
    return [t for t in ALL_TARGETS if str(t).startswith("paper/")]


rule all:
    input:
        ALL_INPUTS(),
    default_target: True
