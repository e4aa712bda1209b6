# Study 003 (one topic, thousands of consumers): figures and tables from this project's fan-out runs and the
# study's published numbers (analysis/study003.py). Included by analysis/rules.smk.
AN_S003_FIGURES = ["study003-connection-time", "study003-p99", "study003-histogram"]
AN_S003_TABLES = ["study003-fanout", "study003-claims"]


rule analysis_study003:
    """Connection time and p99 end to end vs consumers, the connection-time histogram, the study's claims."""
    input:
        raw=_an_raw_inputs,
        runs=_AN_RUN_INPUTS,
        reference="data/reference/studies.csv",
        code=AN_CODE,
    output:
        expand("paper/figures/{f}.{ext}", f=AN_S003_FIGURES, ext=("svg", "png", "pdf", "json")),
        expand("paper/tables/{t}.{ext}", t=AN_S003_TABLES, ext=("csv", "md")),
    params:
        scale=_AN.get("png_scale", 2.0),
        suspect=_AN.get("suspect_runs", "mark"),
    log:
        "logs/analysis/study003.log",
    shell:
        "python -m analysis.study003 --raw data/raw --reference {input.reference} --tables paper/tables"
        " --figures paper/figures --png-scale {params.scale} --suspect {params.suspect} > {log} 2>&1"


ALL_TARGETS.extend(expand("paper/figures/{f}.{ext}", f=AN_S003_FIGURES, ext=("svg", "png", "pdf", "json")))
ALL_TARGETS.extend(expand("paper/tables/{t}.{ext}", t=AN_S003_TABLES, ext=("csv", "md")))
