# Snakemake rules of the analysis stage (included by the root Snakefile).
# Study 000's published files -> data/derived/*.parquet -> paper/figures/<id>.{svg,png,pdf,json},
# paper/tables/<id>.{csv,md}, paper/_variables.yml. This project's runs and probes under data/raw are optional
# inputs, found by glob: the paper builds from the published data alone.
import glob as _an_glob
from pathlib import PurePath as _AnPath

_AN = config.get("analysis") or {}
_AN_PUB = config.get("published") or {}
AN_PUBLISHED_DIR = "data/published/streamnative-2020"
AN_MANIFEST = "analysis/published/streamnative-2020.tsv"
AN_DERIVED = ["runs", "windows", "stats", "quantiles", "probes"]
AN_FIGURES = ["maxtput", "latency-publish-1sub", "latency-e2e-1sub", "latency-publish-10sub", "latency-e2e-10sub",
              "latency-timeline", "partition-sweep", "catchup-rate", "mixed-publish-p99", "fsync-probe",
              # study 000 Figures 2-4, 2-8 / 2-9 and 2-36 … 2-38 (analysis/figures.py)
              "latency-publish-2000p", "latency-publish-1part", "latency-e2e-1part",
              "catchup-publish-bypass", "catchup-publish-async", "catchup-publish-sync"]
AN_TABLES = [f"latency-{m}-{s}-{d}" for m in ("publish", "e2e") for s in ("1sub", "10sub") for d in ("sync", "async")] + [
    "maxtput", "partition-sweep", "catchup", "mixed", "claims", "testbed", "runs", "verdicts", "published-002", "published-004"]
AN_STATS_OPTS = (f"--bootstrap-resamples {_AN.get('bootstrap_resamples', 2000)} "
                 f"--bootstrap-seed {_AN.get('bootstrap_seed', 20201)} --ci-level {_AN.get('ci_level', 0.95)} "
                 f"--approx-tolerance-pct {_AN.get('approx_tolerance_pct', 5.0)}")


# the package itself is an input: a change to the analysis code rebuilds what it makes
AN_CODE = sorted(_an_glob.glob("analysis/*.py"))


# Ingest waits for this testbed's runs and probes (defined by the workloads and hw-probes stages, which the
# Snakefile includes first); analysis.with_runs=false, or this file included alone, builds from what is on disk.
_AN_RUN_INPUTS = (
    [WL_SUMMARY, *HW_PROBE_FILES]
    if (config.get("analysis") or {}).get("with_runs", True) and "WL_SUMMARY" in globals()
    else []
)


def _an_raw_inputs(wildcards):
    """This project's result files and probes, if any (optional inputs)."""
    runs = [p for p in _an_glob.glob("data/raw/*/*/*/*/rep-*.json") if _AnPath(p).parts[3] != "probes"]
    return sorted(runs) + sorted(_an_glob.glob("data/raw/*/probes/*/*.json"))


rule analysis_published:
    """Study 000's raw OMB results by pinned URL or from published.mirror, checked against the manifest."""
    input:
        manifest=AN_MANIFEST,
        code=["analysis/published.py", "analysis/__init__.py"],
    output:
        directory(AN_PUBLISHED_DIR),
    params:
        # the mirror when its directory exists, else the pinned URL (the same files either way: both are
        # checked against the manifest, so the choice does not change the output)
        source=(f"--url-base {_AN_PUB['url_base']}"
                + (f" --mirror {_AN_PUB['mirror']}" if _AN_PUB.get("mirror") else "")),
    log:
        "logs/analysis/published.log",
    shell:
        "python -m analysis.published --manifest {input.manifest} --out {output} {params.source} > {log} 2>&1"


rule analysis_ingest:
    """Every result file (published + data/raw) -> tidy parquet tables."""
    input:
        published=AN_PUBLISHED_DIR,
        manifest=AN_MANIFEST,
        raw=_an_raw_inputs,
        runs=_AN_RUN_INPUTS,
        code=AN_CODE,
    output:
        expand("data/derived/{t}.parquet", t=AN_DERIVED),
        validity="data/derived/validity.json",
    params:
        suspect=_AN.get("suspect_runs", "mark"),
    log:
        "logs/analysis/ingest.log",
    shell:
        "python -m analysis.ingest --published {input.published} --manifest {input.manifest} --raw data/raw"
        " --out data/derived --suspect {params.suspect} > {log} 2>&1"


rule analysis_tables:
    """Paper tables, the claims table and paper/_variables.yml."""
    input:
        derived=expand("data/derived/{t}.parquet", t=AN_DERIVED),
        validity="data/derived/validity.json",
        reference="data/reference/studies.csv",
        study_tables="analysis/published/study000-tables.csv",
        coverage=sorted(_an_glob.glob("analysis/coverage/study-*.yaml")),
        # the findings' numbers (analysis/findings.py): the study modules' runs tables and the fault runs
        findings=["paper/tables/study001-runs.csv", "paper/tables/study002-runs.csv", "paper/tables/study003-fanout.csv",
                  "paper/tables/study004-runs.csv", "data/derived/faults.parquet"],
        code=AN_CODE,
    output:
        expand("paper/tables/{t}.{ext}", t=AN_TABLES, ext=("csv", "md")),
        variables="paper/_variables.yml",
    params:
        testbed=config.get("testbed", "local"),
        opts=AN_STATS_OPTS,
    log:
        "logs/analysis/tables.log",
    shell:
        "python -m analysis.report --derived data/derived --reference {input.reference}"
        " --study-tables {input.study_tables} --tables paper/tables --variables {output.variables}"
        " --testbed {params.testbed} --coverage analysis/coverage --findings-tables paper/tables {params.opts}"
        " > {log} 2>&1"


# one rule per figure: `snakemake paper/figures/<id>.svg` rebuilds exactly that figure
for _an_fid in AN_FIGURES:

    rule:
        name:
            f"analysis_figure_{_an_fid.replace('-', '_')}"
        input:
            derived=expand("data/derived/{t}.parquet", t=AN_DERIVED),
            reference="data/reference/studies.csv",
            code=AN_CODE,
        output:
            multiext(f"paper/figures/{_an_fid}", ".svg", ".png", ".pdf", ".json"),
        params:
            fid=_an_fid,
            scale=_AN.get("png_scale", 2.0),
        log:
            f"logs/analysis/figure-{_an_fid}.log",
        shell:
            "python -m analysis.figures --derived data/derived --reference {input.reference} --id {params.fid}"
            " --png-scale {params.scale} --out paper/figures > {log} 2>&1"


# Confluent's August 2020 results (the other side of study 000's debate) beside study 000's and ours
AN_CONFLUENT_DIR = "data/published/confluent-2020"
AN_CONFLUENT_MANIFEST = "analysis/published/confluent-2020.tsv"
AN_DEBATE_TABLES = ["debate-2020", "confluent-2020-files"]


rule analysis_published_confluent:
    """Confluent 2020's raw OMB results by pinned URL or from published.confluent_mirror, checked against the manifest."""
    input:
        manifest=AN_CONFLUENT_MANIFEST,
        code=["analysis/published.py", "analysis/__init__.py"],
    output:
        directory(AN_CONFLUENT_DIR),
    params:
        source=(f"--url-base {_AN_PUB.get('confluent_url_base', '')}"
                + (f" --mirror {_AN_PUB['confluent_mirror']}" if _AN_PUB.get("confluent_mirror") else "")),
    log:
        "logs/analysis/published-confluent.log",
    shell:
        "python -m analysis.published --manifest {input.manifest} --out {output} {params.source} > {log} 2>&1"


rule analysis_debate:
    """The tests both sides of the 2020 debate ran, Confluent's and StreamNative's files side by side (and ours)."""
    input:
        confluent=AN_CONFLUENT_DIR,
        manifest=AN_CONFLUENT_MANIFEST,
        derived=expand("data/derived/{t}.parquet", t=AN_DERIVED),
        code=AN_CODE,
    output:
        expand("paper/tables/{t}.{ext}", t=AN_DEBATE_TABLES, ext=("csv", "md")),
    log:
        "logs/analysis/debate.log",
    shell:
        "python -m analysis.debate --confluent {input.confluent} --manifest {input.manifest} --derived data/derived"
        " --out paper/tables > {log} 2>&1"


ALL_TARGETS.extend(expand("paper/tables/{t}.{ext}", t=AN_DEBATE_TABLES, ext=("csv", "md")))
ALL_TARGETS.extend(expand("paper/figures/{f}.{ext}", f=AN_FIGURES, ext=("svg", "png", "pdf", "json")))
ALL_TARGETS.extend(expand("paper/tables/{t}.{ext}", t=AN_TABLES, ext=("csv", "md")))
ALL_TARGETS.append("paper/_variables.yml")
include: "study003.smk"
include: "faults.smk"
include: "study001.smk"
include: "study002.smk"
include: "study004.smk"


# The coverage of the five studies (analysis/coverage.py): the registry analysis/coverage/study-*.yaml -> tables
# coverage and coverage-counts. Its ids are checked against every AN_*FIGURES / AN_*TABLES list of the included rules
# files (evaluated at job time, so a list defined after this rule counts too), and the rows it names against the
# CSVs of those tables.
AN_COVERAGE_TABLES = ["coverage", "coverage-counts"]
AN_COVERAGE_REGISTRY = sorted(_an_glob.glob("analysis/coverage/study-*.yaml"))


def _an_coverage_known(kind):
    return sorted({i for k, v in list(globals().items()) if k.startswith("AN_") and k.endswith(kind)
                   and isinstance(v, list) for i in v})


def _an_coverage_row_tables(wildcards):
    import re as _re
    refs = set()
    for f in AN_COVERAGE_REGISTRY:
        refs |= set(_re.findall(r"tbl:([a-z0-9][a-z0-9-]*)#", open(f, encoding="utf-8").read()))
    return [f"paper/tables/{t}.csv" for t in sorted(refs)]


rule analysis_coverage:
    """Every published figure, table and headline claim of the five studies -> what reproduces it, or why not."""
    input:
        registry=AN_COVERAGE_REGISTRY,
        rows=_an_coverage_row_tables,
        code=["analysis/coverage.py", "analysis/report.py", "analysis/__init__.py"],
    output:
        expand("paper/tables/{t}.{ext}", t=AN_COVERAGE_TABLES, ext=("csv", "md")),
    params:
        figures=lambda wc: " ".join(_an_coverage_known("FIGURES")),
        tables=lambda wc: " ".join(_an_coverage_known("TABLES")),
    log:
        "logs/analysis/coverage.log",
    shell:
        "python -m analysis.coverage --registry analysis/coverage --tables paper/tables"
        " --known-figures {params.figures} --known-tables {params.tables} > {log} 2>&1"


ALL_TARGETS.extend(expand("paper/tables/{t}.{ext}", t=AN_COVERAGE_TABLES, ext=("csv", "md")))
