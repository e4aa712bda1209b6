# Study 001 (Pravega vs Kafka vs Pulsar): latency-vs-throughput figures, the runs table and the study's findings
# with verdicts, from this project's runs and the study's printed numbers (analysis/study001.py). Included by
# analysis/rules.smk. One rule per figure: `snakemake paper/figures/study001-dur.svg` rebuilds exactly that one.
AN_S001_FIGURES = ["study001-ing", "study001-dur", "study001-batch", "study001-large", "study001-tail", "study001-keys"]
AN_S001_TABLES = ["study001-runs", "study001-claims"]


rule analysis_study001_tables:
    """Study 001's runs table and its findings (studies.md §001.4) with this testbed's values and verdicts."""
    input:
        raw=_an_raw_inputs,
        runs=_AN_RUN_INPUTS,
        reference="data/reference/studies.csv",
        code=AN_CODE,
    output:
        expand("paper/tables/{t}.{ext}", t=AN_S001_TABLES, ext=("csv", "md")),
    params:
        suspect=_AN.get("suspect_runs", "mark"),
    log:
        "logs/analysis/study001-tables.log",
    shell:
        "python -m analysis.study001 --raw data/raw --reference data/reference/studies.csv"
        " --suspect {params.suspect} --id tables --tables paper/tables > {log} 2>&1"


for _an_s001 in AN_S001_FIGURES:

    rule:
        name:
            f"analysis_figure_{_an_s001.replace('-', '_')}"
        input:
            raw=_an_raw_inputs,
            runs=_AN_RUN_INPUTS,
            reference="data/reference/studies.csv",
            code=AN_CODE,
        output:
            multiext(f"paper/figures/{_an_s001}", ".svg", ".png", ".pdf", ".json"),
        params:
            fid=_an_s001,
            scale=_AN.get("png_scale", 2.0),
            suspect=_AN.get("suspect_runs", "mark"),
        log:
            f"logs/analysis/figure-{_an_s001}.log",
        shell:
            "python -m analysis.study001 --raw data/raw --reference data/reference/studies.csv"
            " --suspect {params.suspect} --id {params.fid} --figures paper/figures"
            " --png-scale {params.scale} > {log} 2>&1"


ALL_TARGETS.extend(expand("paper/figures/{f}.{ext}", f=AN_S001_FIGURES, ext=("svg", "png", "pdf", "json")))
ALL_TARGETS.extend(expand("paper/tables/{t}.{ext}", t=AN_S001_TABLES, ext=("csv", "md")))
