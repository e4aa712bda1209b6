# The fault study (issue 15): acknowledged messages lost per durability level x fault (analysis/faults.py).
# Included by analysis/rules.smk.
#   env/shell snakemake --profile local faults    # the fault runs of the scale, then this study's figure and tables
# Inputs: the summaries (rule experiment, which also stops the last cluster) of the experiments whose runs name a
# fault (workloads.plan.Run.fault): in `all`, the scale's own (ci: E000-FAULTCI; local: E000-FAULTCLAIM, the claims' 20 cells); with the
# target `faults` (workloads/rules.smk: E000-FAULT, the whole grid) that one too, so the figure waits for every run
# of the grid. Without any (a scale without fault experiments, analysis.with_runs=false, or this file included
# alone) the figure and tables are built from the result files on disk: an empty grid says "not run".
AN_FAULT_FIGURES = ["faults-lost", "faults-timeline"]
AN_FAULT_TABLES = ["faults", "faults-claims", "faults-hosts"]
AN_FAULT_EXPERIMENTS = sorted({e for r in globals().get("WL_RUNS", []) if getattr(r, "fault", None) for e in r.experiments})


def _an_fault_run_inputs(wildcards):
    """The experiment summaries the fault analysis waits for. An input function, because the targets given on the
    command line reach Snakemake (workflow.dag_settings.targets) only after the Snakefile is parsed."""
    if not (_AN.get("with_runs", True) and "WL_RUNS_DIR" in globals()):
        return []
    exps = set(AN_FAULT_EXPERIMENTS)
    if "faults" in (getattr(workflow.dag_settings, "targets", None) or ()) and "WL_FAULT_RUNS" in globals():
        exps.update(globals().get("WL_FAULT_EXPS", ["E000-FAULT"]))
    return [f"{WL_RUNS_DIR}/experiments/{e}.json" for e in sorted(exps)]


AN_FAULT_OUTPUTS = expand("paper/figures/{f}.{ext}", f=AN_FAULT_FIGURES, ext=("svg", "png", "pdf", "json")) + expand(
    "paper/tables/{t}.{ext}", t=AN_FAULT_TABLES, ext=("csv", "md")
)


rule analysis_faults:
    """Fault runs -> tidy table (data/derived/faults.parquet, paper/tables/faults-runs.csv), the level x fault
    grid, the level-definition claims, figures faults-lost and faults-timeline."""
    input:
        raw=_an_raw_inputs,
        runs=_an_fault_run_inputs,
        code=AN_CODE,
    output:
        AN_FAULT_OUTPUTS,
        runs_csv="paper/tables/faults-runs.csv",
        derived="data/derived/faults.parquet",
    params:
        testbed=config.get("testbed", "local"),
        scale=_AN.get("png_scale", 2.0),
        suspect=_AN.get("suspect_runs", "mark"),
    log:
        "logs/analysis/faults.log",
    shell:
        "python -m analysis.faults --raw data/raw --testbed {params.testbed} --tables paper/tables"
        " --figures paper/figures --derived data/derived --png-scale {params.scale} --suspect {params.suspect}"
        " > {log} 2>&1"


# `snakemake --profile <p> faults` (rule faults, workloads/rules.smk) asks for AN_FAULT_OUTPUTS too


ALL_TARGETS.extend(AN_FAULT_OUTPUTS)
