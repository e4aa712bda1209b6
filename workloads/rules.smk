# Snakemake rules of the workloads stage: every study experiment as runs, one job per run.
#
#   data/runs/<testbed>/status/<system>/<level-dir>/<workload>/rep-<n>.json   a run's record (its rule's output)
#   data/raw/<testbed>/<system>/<level-dir>/<workload>/rep-<n>.json           its result, only when it succeeded
#   data/runs/<testbed>/benchmarks.json                                        all runs, after the last cluster is down
#   data/runs/<testbed>/experiments/<id>.json                                   one experiment (a reviewer's target)
#
# Runs hold the `cluster` resource (one at a time; on aws each fleet's own, TESTBED_RUN_RESOURCES). Job priorities
# keep the runs of one cluster together and shuffle them inside it (workloads/plan.py); workloads/run.py starts,
# reuses and replaces the cluster. A failed run is recorded as failed and the rest go on; `python -m workloads.run
# --clusters data/runs/<testbed>/clusters --forget-failed data/runs/<testbed>/status` makes the next call retry
# exactly the failed runs.
import dataclasses as _wl_dc
import json
import sys as _wl_sys

from systems import cds as _wl_cds
from systems import durability as _wl_dur
from workloads import drivers as _wl_drivers
from workloads import guard as _wl_guard
from workloads import plan as _wl_plan
from workloads import watch as _wl_watch

WL_TESTBED = config["testbed"]
try:
    WL_FILE = config["workloads"]["experiments_file"]
    _WL_DOC = _wl_plan.load(WL_FILE)
    _WL_CATALOG = _wl_drivers.catalog(_wl_dur.load(config["systems"]["durability_file"]))
    _wl_plan.check(_WL_DOC, _WL_CATALOG, WL_FILE)
    WL_SCALE = config["workloads"]["scale"] or (WL_TESTBED if WL_TESTBED in _WL_DOC["scales"] else "local")
    WL_RUNS = _wl_plan.expand(_WL_DOC, _WL_CATALOG, WL_SCALE, WL_FILE, only=config["workloads"]["experiments"],
                            repetitions=config["workloads"]["repetitions"])
except (_wl_plan.PlanError, _wl_dur.DurabilityError) as _wl_error:
    print(f"workloads: {_wl_error}", file=_wl_sys.stderr)
    _wl_sys.exit(1)
WL_SYSTEMS = config["workloads"]["systems"]  # null: every system; else only these systems' cells
WL_FAULTS = config["workloads"].get("faults")  # null: every fault; else only these faults' cells (and no-fault runs)
WL_LEVELS = config["workloads"].get("levels")  # null: every level; else only the cells at these levels
for _wl_l in WL_LEVELS or []:
    if not any(_wl_l in _wl_ls for _wl_ls in _WL_CATALOG.levels.values()):
        print(f"workloads: config workloads.levels: unknown level {_wl_l!r} (known: "
              f"{', '.join(sorted(set().union(*_WL_CATALOG.levels.values())))})", file=_wl_sys.stderr)
        _wl_sys.exit(1)
WL_RUNS = _wl_plan.select(WL_RUNS, WL_SYSTEMS, WL_LEVELS, WL_FAULTS)

# the fault study's whole grid (E000-FAULT), the target `faults` (`snakemake --profile local faults`), beside the
# scale's own runs; its fault runs that `all` does not run are only in this target's DAG. On hosts of their own
# (lab, hosts, aws) the grid also holds the leader apart (E000-FAULTHOLD: partition-leader, partition-minority,
# partition-majority, pause-leader, slow-link-leader)
WL_FAULT_EXPS = ["E000-FAULT"] + (["E000-FAULTHOLD"] if WL_TESTBED in ("lab", "hosts", "aws") else [])
if config["workloads"]["experiments"]:  # experiments chosen (workloads.experiments): the faults target runs those of
    # them with faults, e.g. only E000-FAULTHOLD's hold cells on a lab
    WL_FAULT_EXPS = [e for e in config["workloads"]["experiments"] if _WL_DOC["experiments"][e].get("faults")]
try:
    WL_FAULT_RUNS = _wl_plan.expand(_WL_DOC, _WL_CATALOG, WL_SCALE, WL_FILE, only=WL_FAULT_EXPS,
                                    repetitions=config["workloads"]["repetitions"])
    WL_FAULT_RUNS = _wl_plan.select(WL_FAULT_RUNS, WL_SYSTEMS, WL_LEVELS, WL_FAULTS, keep_plain=False)
except _wl_plan.PlanError as _wl_error:
    print(f"workloads: {_wl_error}", file=_wl_sys.stderr)
    _wl_sys.exit(1)
# a partition needs hosts of their own: asked of a testbed on this machine (an experiment chosen with
# workloads.experiments, or added to the scale), it stops here in one line naming the cell, before anything starts
_WL_ON_HOSTS = WL_TESTBED in ("lab", "hosts", "aws")
for _wl_r in ([] if _WL_ON_HOSTS else WL_RUNS + WL_FAULT_RUNS):
    if _wl_r.fault in _wl_plan.NEEDS_HOSTS:
        print(f"workloads: {_wl_r.relpath(WL_TESTBED)}: fault {_wl_r.fault} (experiments "
              f"{', '.join(_wl_r.experiments)}) needs hosts of their own: testbed {WL_TESTBED} runs every node on "
              "this machine at one address (run it with --profile lab, hosts or aws)", file=_wl_sys.stderr)
        _wl_sys.exit(1)
WL_BY_KEY = {r.key: r for r in WL_FAULT_RUNS}
for _wl_r in WL_RUNS:  # a run of both: it belongs to the experiments of both
    _wl_o = WL_BY_KEY.get(_wl_r.key)
    WL_BY_KEY[_wl_r.key] = _wl_r if _wl_o is None else _wl_dc.replace(
        _wl_r, experiments=tuple(sorted(set(_wl_o.experiments) | set(_wl_r.experiments))))
# the cells' bounds (workloads/guard.py) and the systems' disk-space settings the disk estimate needs
WL_LIMITS = _wl_guard.limits_arg(config)

if workflow.is_main_process:
    # jobs inherit the mark: workloads/run.py starts a watcher (workloads/watch.py) next to each cluster that
    # stops the cluster once this Snakemake process is gone without having stopped it (SIGKILL, OOM kill, a hang)
    _wl_watch.mark_owner()
WL_PRIORITY = _wl_plan.priorities(list(WL_BY_KEY.values()), config["workloads"]["seed"])
WL_RUNS_DIR = f"data/runs/{WL_TESTBED}"
WL_STATUS = [f"{WL_RUNS_DIR}/status/{r.key}.json" for r in WL_RUNS]
WL_SUMMARY = f"{WL_RUNS_DIR}/benchmarks.json"
RUNNER_JAR = "runner/target/omb-runner.jar"
ALL_TARGETS.append(WL_SUMMARY)


# What every run waits for besides its own system and the runner: all the systems of the plan prepared, the
# runner built. Runs then become ready at one moment, so their priorities alone decide the order (a cluster's runs
# back to back, fault cycles on one cluster: a Pulsar prepare that ends before Kafka's no longer lets one Pulsar
# run start alone), and no run measures while a system is downloaded or the runner compiled. ancient(): these
# order the runs, a newer one does not make a run out of date.
# A run of `all` waits for the systems `all` runs; a run only the `faults` target has (e.g. Pravega's cells of the
# whole grid) for every system of both, so `--profile ci all` never prepares a system none of its runs uses.
WL_ALL_KEYS = {r.key for r in WL_RUNS}
WL_READY = [RUNNER_JAR] + [SYSTEMS_DIST_STAMP[s] for s in sorted({r.system for r in WL_RUNS})]
WL_READY_FAULTS = [RUNNER_JAR] + [SYSTEMS_DIST_STAMP[s] for s in sorted({r.system for r in WL_BY_KEY.values()})]

# Class-data sharing archives (systems/cds.py) for the JVMs the local testbed starts again and again: the runner (one
# JVM per run, 179 in `local all`), Kafka's broker and its format tool (each cluster start, each fault restart). Made
# once per runner build and Kafka distribution by the rule below, before the first run, under the cache; every run's
# JVMs map them (STREAMBENCH_JVM_CDS_DIR, inherited by the jobs). Only class loading at start changes: a run's
# measured phase comes after its warm-up, on the same JIT. env/test sets STREAMBENCH_JVM_CDS_DIR itself and trains on
# its own: then the workflow uses that directory as it is and trains nothing. Hosts of an inventory (lab, hosts, aws)
# have their own copies of the jars: no archive there. The variable is optional and the workflow sets it, never
# requires it of the user (so no `envvars:` assertion); its name lives once, in systems/cds.py.
WL_CDS_MARK = None
if WL_TESTBED == "local" and _wl_cds.directory() is None:
    WL_CDS_DIR = f"{_SYS_CACHE}/cds"
    os.environ[_wl_cds.CDS_ENV] = str(Path(WL_CDS_DIR).resolve())
    WL_CDS_MARK = f"{WL_CDS_DIR}/trained.txt"
    WL_READY.append(WL_CDS_MARK)
    WL_READY_FAULTS.append(WL_CDS_MARK)

    rule systems_cds_train:
        """The archives: a Kafka cluster at L1 started and stopped and a few seconds of the runner on it, each JVM
        writing its archive at exit (`python -m systems.cds train`, about 30 s). Holds `cluster` as a run does. A
        JDK without a base archive, or a training that made none, leaves the runs starting as without them."""
        input:
            runner=RUNNER_JAR,
            kafka=SYSTEMS_DIST_STAMP["kafka"],
        output:
            WL_CDS_MARK,
        log:
            "logs/systems/cds-train.log",
        params:
            dir=lambda wc, output: os.path.dirname(output[0]),
        resources:
            **TESTBED_RUN_RESOURCES,
        shell:
            "python -m systems.cds train > {log} 2>&1 || echo 'systems.cds: no archives (see {log}); the runs start"
            " without them' >&2; ls {params.dir} > {output}"


def _wl_ready(wc, *own):
    ready = WL_READY if _wl_run(wc).key in WL_ALL_KEYS else WL_READY_FAULTS
    return [ancient(p) for p in ready if p not in own]


def _wl_run(wc):
    key = f"{wc.system}/{wc.leveldir}/{wc.workload}/rep-{wc.rep}"
    if key not in WL_BY_KEY:
        raise ValueError(f"{key}: not a run of scale '{WL_SCALE}' in workloads/experiments.yaml")
    return WL_BY_KEY[key]


def _wl_driver_file(wc):
    r = _wl_run(wc)
    return f"workloads/drivers/{r.system}-{r.level}-{r.tuning}" + (f"-{r.variant}" if r.variant else "") + ".yaml"


rule runner_build:
    input:
        pom="runner/pom.xml",
        parent="pom.xml",
        sources=lambda wc: sorted(str(p) for p in Path("runner/src/main").rglob("*") if p.is_file()),
    output:
        RUNNER_JAR,
    log:
        "logs/runner-build.log",
    shell:
        "mvn -q -B -f runner/pom.xml package -DskipTests > {log} 2>&1"


rule benchmark_run:
    input:
        runner=RUNNER_JAR,
        prepared=lambda wc: SYSTEMS_DIST_STAMP[wc.system],
        ready=lambda wc: _wl_ready(wc, RUNNER_JAR, SYSTEMS_DIST_STAMP[wc.system]),
        workload=lambda wc: f"workloads/omb/{_wl_run(wc).base_workload}.yaml",
        driver=_wl_driver_file,
        experiments=WL_FILE,
        testbed=lambda wc: TESTBED_RUN_INPUTS(_wl_run(wc)),  # e.g. the aws fleet's inventory (Snakefile)
    output:
        status=f"{WL_RUNS_DIR}/status/{{system}}/{{leveldir}}/{{workload}}/rep-{{rep}}.json",
    log:
        f"{WL_RUNS_DIR}/logs/{{system}}/{{leveldir}}/{{workload}}/rep-{{rep}}.log",
    wildcard_constraints:
        system="kafka|pulsar|pravega",
        workload=r"(?![^/]*--(?:" + "|".join(_wl_plan.FAULTS) + r")/)[^/]+",  # not a fault run's
        rep=r"\d+",
    params:
        result=lambda wc: f"data/raw/{WL_TESTBED}/{_wl_run(wc).key}.json",
        args=lambda wc: (
            lambda r: f"--system {r.system} --level {r.level} --tuning {r.tuning} --workload {r.base_workload}"
            + (f" --variant {r.variant}" if r.variant else "")
            + (f" --rate {r.rate}" if r.rate else "")
            + f" --rep {r.rep} --default-tuning {r.default_tuning} --in-experiments {','.join(r.experiments)}"
        )(_wl_run(wc)),
        clusters=lambda wc: TESTBED_CLUSTERS_DIR(_wl_run(wc)),  # data/runs/<testbed>/clusters; per aws fleet
        testbed=WL_TESTBED,
        scale=WL_SCALE,
        limits=WL_LIMITS,
        testbed_args=lambda wc: TESTBED_RUN_ARGS(_wl_run(wc)),
    priority: lambda wc: WL_PRIORITY[_wl_run(wc).key]
    resources:
        **TESTBED_RUN_RESOURCES,  # cluster=1 (the Snakefile); an aws run holds its fleet's cluster_<fleet>
    shell:
        "python -m workloads.run --clusters {params.clusters} --testbed {params.testbed} --scale {params.scale}"
        " --experiments {input.experiments} --driver {input.driver}"
        " {params.args} {params.testbed_args} --result {params.result} --status {output.status} --log {log} --limits {params.limits:q}"


rule fault_run:
    """One fault cell (issue 15, workloads/faultrun.py): traffic on a new topic, the fault, the restart, the verdict;
    on the cluster the previous fault run of its key left running (--keep-cluster), or a fresh one."""
    input:
        prepared=lambda wc: SYSTEMS_DIST_STAMP[wc.system],
        ready=lambda wc: _wl_ready(wc, SYSTEMS_DIST_STAMP[wc.system]),
        workload=lambda wc: f"workloads/omb/{_wl_run(wc).base_workload}.yaml",
        driver=_wl_driver_file,
        experiments=WL_FILE,
        testbed=lambda wc: TESTBED_RUN_INPUTS(_wl_run(wc)),
    output:
        status=f"{WL_RUNS_DIR}/status/{{system}}/{{leveldir}}/{{workload}}/rep-{{rep}}.json",
    log:
        f"{WL_RUNS_DIR}/logs/{{system}}/{{leveldir}}/{{workload}}/rep-{{rep}}.log",
    wildcard_constraints:
        system="kafka|pulsar|pravega",
        workload=r"[^/]+--(?:" + "|".join(_wl_plan.FAULTS) + r")",
        rep=r"\d+",
    params:
        result=lambda wc: f"data/raw/{WL_TESTBED}/{_wl_run(wc).key}.json",
        args=lambda wc: (
            lambda r: f"--system {r.system} --level {r.level} --tuning {r.tuning} --workload {r.base_workload}"
            f" --fault {r.fault} --rep {r.rep} --default-tuning {r.default_tuning}"
            f" --in-experiments {','.join(r.experiments)}"
        )(_wl_run(wc)),
        clusters=lambda wc: TESTBED_CLUSTERS_DIR(_wl_run(wc)),
        testbed=WL_TESTBED,
        scale=WL_SCALE,
        seed=config["workloads"]["seed"],
        limits=WL_LIMITS,
        # a multi-host testbed's inventory: the cycle's hooks run on the server hosts, its client on the first client host
        testbed_args=lambda wc: TESTBED_RUN_ARGS(_wl_run(wc)),
    priority: lambda wc: WL_PRIORITY[_wl_run(wc).key]
    resources:
        **TESTBED_RUN_RESOURCES,
    shell:
        "python -m workloads.faultrun --clusters {params.clusters} --testbed {params.testbed} --scale {params.scale}"
        " --experiments {input.experiments} --driver {input.driver} --seed {params.seed}"
        " {params.args} {params.testbed_args} --result {params.result} --status {output.status} --log {log}"
        " --limits {params.limits:q} --keep-cluster"


rule faults:
    """The fault study's whole grid, E000-FAULT (every fault x every level of both systems; the scale's fault
    repetitions): `snakemake --profile local faults`. Its summary: data/runs/<testbed>/experiments/E000-FAULT.json."""
    input:
        [f"{WL_RUNS_DIR}/experiments/{e}.json" for e in WL_FAULT_EXPS],
        # then its figure and tables (analysis/faults.smk, included after this file)
        lambda wc: globals().get("AN_FAULT_OUTPUTS", []),


rule benchmarks:
    """Every run of the scale done (or recorded as failed); the last cluster stopped; a summary written."""
    input:
        WL_STATUS,
    output:
        WL_SUMMARY,
    log:
        f"{WL_RUNS_DIR}/logs/benchmarks.log",
    params:
        clusters=f"{WL_RUNS_DIR}/clusters",
        status=lambda wc: f"{WL_RUNS_DIR}/status",  # the directory of the inputs
        testbed=WL_TESTBED,
        scale=WL_SCALE,
        limits=WL_LIMITS,
    resources:
        cluster=1,
    shell:
        "python -m workloads.run --clusters {params.clusters} --down-all --limits {params.limits:q} > {log} 2>&1"
        " && python -m workloads.summary --status-dir {params.status} --scale {params.scale}"
        " --testbed {params.testbed} --out {output} >> {log} 2>&1"


rule experiment:
    """One experiment's runs (e.g. `snakemake --profile local data/runs/local/experiments/E000-LAT1.json`)."""
    input:
        lambda wc: [f"{WL_RUNS_DIR}/status/{r.key}.json" for r in WL_BY_KEY.values() if wc.exp in r.experiments]
        or [f"unknown-experiment/{wc.exp}"],
    output:
        f"{WL_RUNS_DIR}/experiments/{{exp}}.json",
    log:
        f"{WL_RUNS_DIR}/logs/experiment-{{exp}}.log",
    wildcard_constraints:
        exp=r"E[0-9]{3}-[A-Z0-9]+",
    params:
        clusters=f"{WL_RUNS_DIR}/clusters",
        status=lambda wc: f"{WL_RUNS_DIR}/status",  # the directory of the inputs
        testbed=WL_TESTBED,
        scale=WL_SCALE,
        limits=WL_LIMITS,
    resources:
        cluster=1,
    shell:
        "python -m workloads.run --clusters {params.clusters} --down-all --limits {params.limits:q} > {log} 2>&1"
        " && python -m workloads.summary --status-dir {params.status} --scale {params.scale}"
        " --testbed {params.testbed} --experiment {wildcards.exp} --out {output} >> {log} 2>&1"


onsuccess:
    # nor do a multi-host testbed's hosts outlive a target other than `all` (which has its own teardown rules)
    for _tb_hook in globals().get("TESTBED_ON_SUCCESS", []):
        _tb_hook(f"{WL_RUNS_DIR}/clusters")


onerror:
    # no broker outlives a failed or interrupted workflow
    shell(f"python -m workloads.run --clusters {WL_RUNS_DIR}/clusters --down-all || true")
    for _tb_hook in TESTBED_ON_ERROR:  # then a multi-host testbed's own teardown (the lab's namespaces)
        _tb_hook()
