# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Claims overview: which of study 000's numbers re-derive
#
# Reads `paper/tables/claims.csv` (made by the `analysis_tables` rule) and slices it by section and verdict.
# Exploration only; the paper reads the same table through the rules.

# %% tags=["parameters"]
import os
from pathlib import Path

ROOT = Path(os.environ.get("STREAMBENCH_ROOT", Path.cwd()))
CLAIMS = ROOT / "paper" / "tables" / "claims.csv"

# %%
import polars as pl

cl = pl.read_csv(CLAIMS, infer_schema_length=None)
cl = cl.with_columns(pl.col("verdict").str.extract(r"^(matches|differs|no raw data)").alias("kind"))
cl.group_by("section", "kind").len().pivot(on="kind", index="section", values="len").sort("section")

# %% [markdown]
# The largest differences (absolute percent):

# %%
cl.filter(pl.col("kind") == "differs").sort(pl.col("diff_pct").abs(), descending=True).select(
    "claim_id", "printed", "derived", "verdict", "ambiguous").head(15)

# %% [markdown]
# The ambiguities of studies.md, as flagged rows:

# %%
cl.filter(pl.col("ambiguous").is_not_null()).select("claim_id", "verdict", "ambiguous")
