"""The per-study summary of claim verdicts (the body's table; the full claims table is in the appendix).

One row per study and experiment: how many of the study's printed numbers re-derive from the raw data,
how many differ, how many have no raw data, and how many touch an ambiguity of the study.
"""
from __future__ import annotations

import polars as pl

COLUMNS = ["study", "experiment", "claims", "match", "differ", "no_raw_data", "ambiguous"]


def verdict_table(cl: pl.DataFrame) -> tuple[list, list]:
    """(columns, rows) from the claims frame (analysis.claims.derive)."""
    if cl.is_empty():
        return COLUMNS, []
    v = cl["verdict"].cast(pl.Utf8)
    df = cl.with_columns(
        pl.col("claim_id").cast(pl.Utf8),
        v.str.starts_with("matches").alias("_m"), v.str.starts_with("differs").alias("_d"),
        (v == "no raw data").alias("_n"),
        pl.col("ambiguous").cast(pl.Utf8).fill_null("").str.strip_chars().ne("").alias("_a"),
        pl.col("section").cast(pl.Utf8).str.extract(r"§(\d{3})").fill_null("000").alias("study"),
        pl.col("experiment").cast(pl.Utf8).fill_null("(testbed)"),
    )
    g = df.group_by(["study", "experiment"]).agg(
        pl.len().alias("claims"), pl.col("_m").sum().alias("match"), pl.col("_d").sum().alias("differ"),
        pl.col("_n").sum().alias("no_raw_data"), pl.col("_a").sum().alias("ambiguous")).sort(["study", "experiment"])
    rows = g.select(COLUMNS).to_dicts()
    total = {"study": "all", "experiment": "total", **{c: int(g[c].sum()) for c in COLUMNS[2:]}}
    return COLUMNS, rows + [total]
