"""The numbers a study printed (data/reference/studies.csv), as a table per study for the paper.

Studies without published raw files (002, 004) are represented by what they printed, beside this
testbed's runs of their experiments once those exist.
"""
from __future__ import annotations

import csv
from pathlib import Path

from . import InputError

COLUMNS = ["experiment", "system", "config", "metric", "value", "unit", "source"]
STUDIES = ["002", "004"]  # the studies whose printed numbers get a table of their own (published-<study>)


def reference_table(reference_csv: Path, study: str) -> tuple[list, list]:
    with open(reference_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    if rows and not set(COLUMNS) <= set(rows[0]):
        raise InputError(reference_csv, "header", f"needs columns {COLUMNS}")
    return COLUMNS, [{c: r[c] for c in COLUMNS} for r in rows if r["study"] == study]
