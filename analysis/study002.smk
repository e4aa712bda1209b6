# Study 002 (Kafka vs Pulsar latency on 1 / 6 / 16 partitions): the latency figure, the latency-over-time figure of
# its 1-partition tests, the runs table and the study's main claim judged per scale, from this project's E002-LAT
# runs and the study's printed numbers (analysis/study002.py). Included by analysis/rules.smk.
AN_S002_FIGURES = ["study002-latency", "study002-timeseries"]
AN_S002_TABLES = ["study002-runs", "study002-claims"]


rule analysis_study002:
    """Study 002's figures (publish p99 and average end to end against partitions; both over time in the 1-partition
    tests), runs and claims tables."""
    input:
        raw=_an_raw_inputs,
        runs=_AN_RUN_INPUTS,
        reference="data/reference/studies.csv",
        code=AN_CODE,
    output:
        expand("paper/figures/{f}.{ext}", f=AN_S002_FIGURES, ext=("svg", "png", "pdf", "json")),
        expand("paper/tables/{t}.{ext}", t=AN_S002_TABLES, ext=("csv", "md")),
    params:
        scale=_AN.get("png_scale", 2.0),
        suspect=_AN.get("suspect_runs", "mark"),
    log:
        "logs/analysis/study002.log",
    shell:
        "python -m analysis.study002 --raw data/raw --reference {input.reference} --tables paper/tables"
        " --figures paper/figures --png-scale {params.scale} --suspect {params.suspect} > {log} 2>&1"


ALL_TARGETS.extend(expand("paper/figures/{f}.{ext}", f=AN_S002_FIGURES, ext=("svg", "png", "pdf", "json")))
ALL_TARGETS.extend(expand("paper/tables/{t}.{ext}", t=AN_S002_TABLES, ext=("csv", "md")))
