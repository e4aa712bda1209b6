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
# # Explore one experiment of study 000
#
# A thin view over the `analysis` package: it loads the derived tables (or ingests the published files in
# memory when `data/derived` is absent), then shows one experiment's runs, their run-level latency statistics
# and the claims that concern it. Nothing here feeds the paper; the paper's numbers come from the rules.

# %% tags=["parameters"]
import os
from pathlib import Path

EXPERIMENT = os.environ.get("ANALYSIS_EXPERIMENT", "E000-LAT1")
ROOT = Path(os.environ.get("STREAMBENCH_ROOT", Path.cwd()))
DERIVED = ROOT / "data" / "derived"
MIRROR = ROOT / ".." / "shared" / "published" / "streamnative-2020"

# %%
import polars as pl

from analysis import claims, figures, ingest, report

if (DERIVED / "runs.parquet").exists():
    d = report.load(DERIVED)
else:
    d = ingest.build(MIRROR, ROOT / "analysis" / "published" / "streamnative-2020.tsv", ROOT / "data" / "raw")
runs = report.distinct(d["runs"].filter(pl.col("experiment") == EXPERIMENT))
runs.select("testbed_label", "system", "series", "local_durability", "partitions", "subscriptions", "n_windows",
            "publish_mean_mibps", "path")

# %% [markdown]
# Run-level statistics (from each run's aggregated distribution, never from per-window percentiles):

# %%
per_run = runs.select("run_id", "series", "local_durability").join(d["stats"], on="run_id")
per_run.select("series", "local_durability", "metric", "avg_ms", "p50_ms", "p90_ms", "p99_ms", "p99_9_ms").sort(
    "metric", "local_durability", "series")

# %% [markdown]
# Claims of study 000 about this experiment:

# %%
cl = claims.derive(d["runs"], d["stats"], ROOT / "data" / "reference" / "studies.csv",
                   ROOT / "analysis" / "published" / "study000-tables.csv")
mine = cl.filter(pl.col("experiment") == EXPERIMENT)
print(mine.group_by("verdict").len().sort("len", descending=True))
mine.select("claim_id", "printed", "derived", "verdict", "ambiguous").head(20)

# %% [markdown]
# The per-window p99 publish latency of these runs (the figure `latency-timeline` draws the same for E000-LAT1):

# %%
w = d["windows"].join(runs.select("run_id", "series", "local_durability"), on="run_id")
w.group_by("series", "local_durability").agg(pl.len().alias("windows"), pl.col("publish_p99_ms").max().alias("worst_window_p99_ms"))
