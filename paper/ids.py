"""The one list of figure and table ids the paper uses (CONTRIBUTING.md, "Figures and tables").

The analysis stage writes paper/figures/<id>.{svg,png,pdf,json} and paper/tables/<id>.{md,csv};
paper/rules.smk makes the paper depend on every one of them through these lists.
"""

FIGURE_IDS = [
    "maxtput",
    "latency-publish-1sub",
    "latency-e2e-1sub",
    "latency-publish-10sub",
    "latency-e2e-10sub",
    "latency-timeline",
    "partition-sweep",
    "catchup-rate",
    "mixed-publish-p99",
    "fsync-probe",
    "latency-publish-2000p",
    "latency-publish-1part",
    "latency-e2e-1part",
    "catchup-publish-bypass",
    "catchup-publish-async",
    "catchup-publish-sync",
    # study 001 (paper/sections/study-001.qmd, analysis/study001.py)
    "study001-ing",
    "study001-dur",
    "study001-batch",
    "study001-large",
    "study001-tail",
    "study001-keys",
    # study 003 (paper/sections/study-003.qmd, analysis/study003.py)
    "study003-connection-time",
    "study003-p99",
    "study003-histogram",
    # study 002 (paper/sections/study-002.qmd, analysis/study002.py)
    "study002-latency",
    "study002-timeseries",
    # study 004 (paper/sections/study-004.qmd, analysis/study004.py)
    "study004-maxtput",
    "study004-latency",
    # the fault study (paper/sections/faults.qmd, analysis/faults.py)
    "faults-lost",
    "faults-timeline",
]

TABLE_IDS = [
    *(f"latency-{metric}-{subs}-{local}"
      for subs in ("1sub", "10sub") for local in ("sync", "async") for metric in ("publish", "e2e")),
    "maxtput",
    "partition-sweep",
    "catchup",
    "mixed",
    "claims",
    "testbed",
    "runs",
    "verdicts",
    "published-002",
    "published-004",
    "debate-2020",
    "confluent-2020-files",
    # study 001 (paper/sections/study-001.qmd, analysis/study001.py)
    "study001-runs",
    "study001-claims",
    # study 003 (paper/sections/study-003.qmd, analysis/study003.py)
    "study003-fanout",
    "study003-claims",
    # study 002 (paper/sections/study-002.qmd, analysis/study002.py)
    "study002-runs",
    "study002-claims",
    # study 004 (paper/sections/study-004.qmd, analysis/study004.py)
    "study004-runs",
    "study004-claims",
    # the fault study (paper/sections/faults.qmd, analysis/faults.py)
    "faults",
    "faults-claims",
    "faults-hosts",
    # the coverage of the five studies (paper/sections/coverage.qmd, analysis/coverage.py)
    "coverage",
    "coverage-counts",
]
