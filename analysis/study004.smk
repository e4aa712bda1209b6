# Study 004 (Pulsar 2.9 vs Kafka 3.0, StreamNative 2022): the one-partition maximum-throughput and fixed-rate latency
# figures, the runs table and the five headlines judged per scale, from this project's E004-* runs and the study's
# printed numbers (analysis/study004.py). Included by analysis/rules.smk.
AN_S004_FIGURES = ["study004-maxtput", "study004-latency"]
AN_S004_TABLES = ["study004-runs", "study004-claims"]


rule analysis_study004:
    """Study 004's figures (Figures 2 and 4 with this testbed's runs), runs and claims tables."""
    input:
        raw=_an_raw_inputs,
        runs=_AN_RUN_INPUTS,
        reference="data/reference/studies.csv",
        code=AN_CODE,
    output:
        expand("paper/figures/{f}.{ext}", f=AN_S004_FIGURES, ext=("svg", "png", "pdf", "json")),
        expand("paper/tables/{t}.{ext}", t=AN_S004_TABLES, ext=("csv", "md")),
    params:
        scale=_AN.get("png_scale", 2.0),
        suspect=_AN.get("suspect_runs", "mark"),
    log:
        "logs/analysis/study004.log",
    shell:
        "python -m analysis.study004 --raw data/raw --reference {input.reference} --tables paper/tables"
        " --figures paper/figures --png-scale {params.scale} --suspect {params.suspect} > {log} 2>&1"


ALL_TARGETS.extend(expand("paper/figures/{f}.{ext}", f=AN_S004_FIGURES, ext=("svg", "png", "pdf", "json")))
ALL_TARGETS.extend(expand("paper/tables/{t}.{ext}", t=AN_S004_TABLES, ext=("csv", "md")))
