"""Figures of study 000 (altair -> SVG, PNG, PDF with vl-convert), each with caption and alt text.

python -m analysis.figures --derived data/derived --reference data/reference/studies.csv --id maxtput --out paper/figures
Writes <out>/<id>.svg, .png, .pdf and <id>.json ({"id", "caption", "alt"}); every file atomically.
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

import altair as alt
import polars as pl
import vl_convert as vlc

from . import InputError, cli, report
from .labels import PUBLISHED_TESTBED_LABEL
from .pdfstable import stable_pdf

FIGURE_IDS = ["maxtput", "latency-publish-1sub", "latency-e2e-1sub", "latency-publish-10sub", "latency-e2e-10sub",
              "latency-timeline", "partition-sweep", "catchup-rate", "mixed-publish-p99", "fsync-probe",
              # study 000 Figures 2-4, 2-8 / 2-9 and 2-36 … 2-38
              "latency-publish-2000p", "latency-publish-1part", "latency-e2e-1part",
              "catchup-publish-bypass", "catchup-publish-async", "catchup-publish-sync"]
STAT_LABEL = {"avg_ms": "avg", "p50_ms": "p50", "p90_ms": "p90", "p99_ms": "p99", "p99_9_ms": "p99.9"}
W, H = 220, 160
# One colour per system in every figure (Pravega and RabbitMQ included, for the figures that draw them).
SYSTEM_COLORS = {"kafka": "#1f6fb4", "pulsar": "#d9531e", "pravega": "#2a9d5b", "rabbitmq": "#8d5fb3"}
# Print size: the paper shows each figure at the text width (paper/_quarto.yml: A4, 2 cm margins) and
# no text in it may be smaller than MIN_FONT_PT there; render() scales the fonts to the figure's width.
TEXT_WIDTH_PT = 595.2756 - 2 * 72 / 2.54 * 2
MIN_FONT_PT = 8.0


LOG_TICKS = [0.01, 0.1, 1, 10, 100, 1000, 10000, 100000]


def log_axis(**kw):
    """A log-scale axis labelled at powers of ten only (1, 2, … 9 labels collide at print size)."""
    return alt.Axis(values=LOG_TICKS, format="~s", **kw)


def system_color(field: str = "system:N", title: str | None = "system", **legend):
    """The colour channel of a system field, the same colours in every figure."""
    return alt.Color(field, title=title, scale=alt.Scale(domain=list(SYSTEM_COLORS), range=list(SYSTEM_COLORS.values())),
                     **({"legend": alt.Legend(**legend)} if legend else {}))


def ack_channels() -> dict:
    """Acknowledgement level as dash and marker of a line with points, under one legend: Vega-Lite does not merge a
    dash legend with a marker legend there (it drew two, the dash one with plain dots), so the marker one stays."""
    return {"strokeDash": alt.StrokeDash("ack_label:N", legend=None),
            "shape": alt.Shape("ack_label:N", title="acknowledgement")}


def _with_system(df: pl.DataFrame) -> pl.DataFrame:
    """Add `system` and `ack` (from `series`, e.g. kafka-ack-all) when missing."""
    if "system" not in df.columns:
        df = df.with_columns(pl.col("series").str.split("-ack-").list.first().alias("system"))
    return df.with_columns(("ack-" + pl.col("series").str.split("-ack-").list.last()).alias("ack_label"))


def _rows(df: pl.DataFrame):
    return alt.Data(values=df.to_dicts())


def empty_chart(msg: str, width: int = 420):
    """A figure with nothing to draw: the message in its place (every study's and the fault study's figures)."""
    return alt.Chart(alt.Data(values=[{"t": msg}])).mark_text(size=14).encode(text="t:N").properties(width=width,
                                                                                                  height=60)


def _empty(msg):
    return empty_chart(msg, width=400)


def _ceilings(d, ref):
    """Disk write ceilings in MiB/s: study 000's dd figures (per disk and both disks) and our probes."""
    out = []
    with open(ref, newline="") as f:
        dd = [float(r["value"]) for r in csv.DictReader(f) if r["study"] == "000" and r["experiment"] == "dd_probe"]
    if dd:
        out.append((PUBLISHED_TESTBED_LABEL, "dd, one disk (journal)", min(dd) * 1e6 / 2 ** 20))
        out.append((PUBLISHED_TESTBED_LABEL, "dd, both disks", sum(dd) * 1e6 / 2 ** 20))
    w = d["probes"].filter(pl.col("key") == "writeMBps")
    for (tb,), g in w.group_by(["testbed"]):
        out.append((tb, "probe, best disk write", g["value"].max() * 1e6 / 2 ** 20))
    return out


OFF_SCALE = 3.0  # a disk ceiling more than this many times a row's highest bar is named, not drawn


def fig_maxtput(d, ref):
    """One row per testbed (each its own throughput scale), one column per local durability, the partition /
    producer shapes along x and the series side by side; disk ceilings as dashed lines, or named in the row's
    title when they would flatten its bars."""
    runs = _with_system(report.distinct(d["runs"].filter(pl.col("experiment").str.starts_with("E000-MT")
                                                         & pl.col("publish_mean_mibps").is_not_null())))
    if runs.is_empty():
        return _empty("No max-throughput runs."), "Maximum publish throughput: no runs.", "No max-throughput runs."
    # `partitions|producers/consumers`, drawn on two lines (the axis splits at `|`)
    df = runs.with_columns(pl.format("{}|{}/{}", "partitions", "producers_per_topic", "consumers_per_subscription")
                           .alias("shape")).select(
        "testbed_label", "shape", "partitions", "producers_per_topic", "series", "system", "ack_label",
        "local_durability", "level", "publish_mean_mibps")
    shapes = [r["shape"] for r in df.select("shape", "partitions", "producers_per_topic").unique().sort(
        "partitions", "producers_per_topic").to_dicts()]
    durabilities = sorted(df["local_durability"].unique().to_list())
    ceilings = _ceilings(d, ref)
    rows, notes = [], []
    testbeds = sorted(df["testbed_label"].unique().to_list(), key=lambda t: (t != PUBLISHED_TESTBED_LABEL, t))
    for i, tb in enumerate(testbeds):
        part = df.filter(pl.col("testbed_label") == tb)
        top = part.group_by("shape", "series", "local_durability").agg(pl.col("publish_mean_mibps").median())[
            "publish_mean_mibps"].max() or 0.0
        drawn, named = [], []
        for label, mibps in ((lb, v) for t, lb, v in ceilings if t == tb):
            (drawn if top > 0 and mibps <= OFF_SCALE * top else named).append((label, mibps))
        if named:
            notes.append(tb)
        title = [tb] + [f"off scale: {label} {mibps:,.0f} MiB/s" for label, mibps in named]
        layers = [{**r, "kind": "run"} for r in part.to_dicts()]
        layers += [{"kind": "ceiling", "ceiling": label, "ceiling_mibps": mibps, "local_durability": dur}
                   for label, mibps in drawn for dur in durabilities]
        # every row has every durability column, in the same place, whether or not it ran it
        layers += [{"kind": "pad", "local_durability": dur} for dur in durabilities]
        base = alt.Chart(alt.Data(values=layers))
        bars = base.transform_filter(alt.datum.kind == "run").mark_bar().encode(
            x=alt.X("shape:N", sort=shapes, scale=alt.Scale(domain=shapes),
                    title=["partitions,", "producers / consumers"] if i == len(testbeds) - 1 else None,
                    axis=alt.Axis(labelAngle=0, labelExpr="split(datum.label, '|')", labelOverlap=False,
                                  labels=i == len(testbeds) - 1)),
            xOffset=alt.XOffset("series:N", scale=alt.Scale(domain=sorted(df["series"].unique().to_list()))),
            y=alt.Y("median(publish_mean_mibps):Q", title="MiB/s"),
            color=system_color(orient="bottom", direction="horizontal"),
            opacity=alt.Opacity("ack_label:N", title="acknowledgement", legend=alt.Legend(orient="bottom", direction="horizontal"),
                                scale=alt.Scale(domain=["ack-1", "ack-2", "ack-all"], range=[0.45, 1.0, 1.0])),
            tooltip=["shape:N", "series:N", "local_durability:N", "level:N", "median(publish_mean_mibps):Q"])
        rules = base.transform_filter(alt.datum.kind == "ceiling").mark_rule(strokeDash=[4, 3], color="black").encode(
            y="ceiling_mibps:Q", tooltip=["ceiling:N", "ceiling_mibps:Q"])
        rows.append(alt.layer(bars, rules).properties(width=170, height=110).facet(
            column=alt.Column("local_durability:N", sort=durabilities, title=None)).properties(
            title=alt.TitleParams(title, anchor="start", fontWeight="normal")))
    ch = alt.vconcat(*rows, spacing=14)
    n = df.height
    cap = ("Maximum publish throughput by partitions × producers/consumers (x), series (bars: system, with the weaker "
           "acknowledgement lighter) and local durability (columns: sync, async, Pulsar journal bypass); bar = median "
           "over runs of the mean 10-s publish rate, in MiB/s (the study's MB/s). Dashed lines: disk write ceilings "
           "(study 000's dd result for one disk and for both disks; this project's best probed disk write when "
           "present). Each testbed row has its own scale; a ceiling more than "
           f"{OFF_SCALE:.0f}× the row's highest bar is given in the row's title instead of drawn.")
    alt_text = (f"Grouped bar charts from {n} runs in {len(testbeds)} testbed rows ({', '.join(testbeds)}): one panel "
                "per local durability, bars per series over the partition/producer shapes, dashed disk-ceiling lines"
                + (f"; off-scale ceilings named for {', '.join(notes)}" if notes else "") + ".")
    return ch, cap, alt_text


def _latency(d, metric, sub):
    runs = report.latency_runs(d["runs"], 1 if sub == "1sub" else 10, partitions=100)
    j = runs.join(d["stats"].filter(pl.col("metric") == metric), on="run_id")
    long = _with_system(j.select("testbed_label", "series", "local_durability", *STAT_LABEL).unpivot(
        index=["testbed_label", "series", "local_durability"], variable_name="stat", value_name="ms").with_columns(
        pl.col("stat").replace_strict(STAT_LABEL)))
    ch = alt.Chart(_rows(long)).mark_line(point=True).encode(
        x=alt.X("stat:N", sort=list(STAT_LABEL.values()), title=None),
        y=alt.Y("median(ms):Q", scale=alt.Scale(type="log"), axis=log_axis(), title=f"{'publish' if metric == 'publish' else 'end-to-end'} latency (ms)"),
        color=system_color(), **ack_channels(), detail="series:N",
        tooltip=["testbed_label:N", "series:N", "stat:N", "median(ms):Q"],
    ).properties(width=W, height=H).facet(column=alt.Column("local_durability:N", title="local durability"),
                                         row=alt.Row("testbed_label:N", title=None))
    subs = "1 subscription" if sub == "1sub" else "10 subscriptions"
    tabs = {"publish1sub": "2-2 / 2-4", "e2e1sub": "2-3 / 2-5", "publish10sub": "2-7 / 2-9", "e2e10sub": "2-8 / 2-10"}[metric + sub]
    cap = (f"{'Publish' if metric == 'publish' else 'End-to-end'} latency, 100 partitions, {subs}, 200 K msg/s of 1 KiB "
           f"(study 000 Tables {tabs}): average and percentiles of each run's aggregated latency distribution "
           "by local durability and acknowledgement level; log scale.")
    alt_text = (f"Line chart, one line per series (pulsar-ack-1/2, kafka-ack-1/all) across avg, p50, p90, p99, p99.9, "
                f"panels for sync and async local durability; {j.height} runs.")
    return ch, cap, alt_text


def fig_timeline(d, ref):
    runs = report.latency_runs(d["runs"], 1, partitions=100)
    w = d["windows"].join(runs.select("run_id", "testbed_label", "series", "local_durability"), on="run_id")
    # points as well as lines: a run of one window (a short local measured phase) is a point, which a line alone
    # would not draw; each row its own time axis (the study ran minutes, a local run seconds)
    ch = alt.Chart(_rows(_with_system(w.select("run_id", "testbed_label", "series", "local_durability", "t_s", "publish_p99_ms")))).mark_line(
        point=True).encode(
        x=alt.X("t_s:Q", title="time after warm-up (s)"),
        y=alt.Y("publish_p99_ms:Q", scale=alt.Scale(type="log"), axis=log_axis(), title=["p99 publish", "latency (ms)"]),
        color=system_color(), **ack_channels(), detail="run_id:N",
    ).properties(width=W + 60, height=H).facet(column=alt.Column("local_durability:N", title="local durability"),
                                              row=alt.Row("testbed_label:N", title=None)).resolve_scale(x="independent")
    cap = ("p99 publish latency of each 10-s window over the run (study 000 Figures 2-11 / 2-14), 100 partitions, "
           "1 subscription; OMB's per-window percentiles, plotted as measured (never averaged). Each row has its own "
           "time axis; a run with a single window is a point.")
    return ch, cap, f"Time-series lines of per-window p99 publish latency for {runs.height} runs, one line per series."


def fig_sweep(d, ref):
    runs = report.latency_runs(d["runs"], 1)
    j = runs.join(d["stats"].filter(pl.col("metric").is_in(["publish", "e2e"])), on="run_id").with_columns(
        (pl.col("local_durability") + " local, ack-" + pl.col("ack").cast(pl.Utf8)).alias("durability"))
    base = alt.Chart(_rows(j.select("testbed_label", "system", "durability", "metric", "partitions", "p99_ms"))).encode(
        x=alt.X("partitions:Q", scale=alt.Scale(type="log"), title="partitions", axis=alt.Axis(values=[1, 100, 10000], format="~s")),
        y=alt.Y("median(p99_ms):Q", scale=alt.Scale(type="log"), axis=log_axis(), title="p99 (ms)"),
        color=system_color(), tooltip=["testbed_label:N", "system:N", "partitions:Q", "median(p99_ms):Q"])
    # the testbed as dash and marker under one legend (the marker's; see ack_channels)
    line = base.mark_line().encode(strokeDash=alt.StrokeDash("testbed_label:N", legend=None))
    pts = base.mark_point(filled=True, size=40).encode(shape=alt.Shape("testbed_label:N", title="testbed"))
    ch = alt.layer(line, pts).properties(width=150, height=H).facet(
        column=alt.Column("durability:N", title=None, header=alt.Header(labelExpr="split(datum.label, ', ')")),
        row=alt.Row("metric:N", title=None))
    cap = ("Partition sweep (study 000 Tables 2-12 … 2-16 and 1-3): p99 publish and end-to-end latency against partitions "
           "at 200 K msg/s, by local durability and acknowledgement level; log–log.")
    return ch, cap, f"Line chart of p99 latency versus partitions (1 to 10000) for Kafka and Pulsar, {runs.height} runs."


def fig_catchup(d, ref):
    runs = report.catchup_mode(report.distinct(d["runs"].filter(pl.col("experiment") == "E000-CU"))).with_columns(
        (pl.col("system") + " ack-" + pl.col("ack").cast(pl.Utf8)).alias("run"))
    w = d["windows"].join(runs.select("run_id", "testbed_label", "run", "system", "mode", "message_size_bytes"), on="run_id").with_columns(
        (pl.col("consume_rate_msgps") / 1e6).alias("consume_mmsgps"))
    ch = alt.Chart(_rows(w.select("testbed_label", "run", "system", "mode", "t_s", "consume_mmsgps"))).mark_line().encode(
        x=alt.X("t_s:Q", title="time (s)", axis=alt.Axis(format="~s")), y=alt.Y("consume_mmsgps:Q", title="consume rate (M msg/s)"),
        color=system_color(), strokeDash=alt.StrokeDash("run:N", title="run"), detail="testbed_label:N",
    ).properties(width=W, height=H).facet(column=alt.Column("mode:N", title="study 000 catch-up mode (Kafka runs async in mode 1)"),
                                         row=alt.Row("testbed_label:N", title=None)).resolve_scale(y="independent", x="independent")
    cap = ("Catch-up read (study 000 Figures 2-33 … 2-35): consume rate per 10-s window while producers write 200 K "
           "msg/s; consumers start once 512 GB of backlog has built up. The peak is the catch-up read rate.")
    return ch, cap, f"Time-series of consume rate for {runs.height} catch-up runs, panels 1 bypass journal, 2 async, 3 sync."


def fig_mixed(d, ref):
    cols, rows = report.mixed_table(d, ref, _claims(d, ref))
    long = []
    for r in rows:
        cfg = f"{r['local_durability']} local, ack-{r['ack']}"
        if r.get("study_publish_p99_ms") is not None:
            long.append({"config": cfg, "system": r["system"], "source": "study 000 Table 1-4 (printed)", "p99": r["study_publish_p99_ms"]})
        if r.get("publish_p99_ms") is not None:
            src = "catch-up run of the same level (proxy)" if r["source"].startswith("proxy") else r["source"]
            long.append({"config": cfg, "system": r["system"], "source": f"{r['testbed']}: {src}", "p99": r["publish_p99_ms"]})
    ch = alt.Chart(alt.Data(values=long)).mark_point(filled=True, size=90).encode(
        x=alt.X("system:N", title=None), xOffset="source:N",
        y=alt.Y("p99:Q", scale=alt.Scale(type="log"), axis=log_axis(), title="p99 publish latency (ms)"),
        color=system_color(),
        shape=alt.Shape("source:N", legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=0)), tooltip=["config:N", "system:N", "source:N", "p99:Q"],
    ).properties(width=120, height=H).facet(column=alt.Column("config:N", title=None))
    cap = ("Mixed workload (study 000 Table 1-4): p99 publish latency while a catch-up consumer reads the backlog. "
           "No mixed-workload files were published: the study's printed numbers are drawn beside the p99 of the "
           "catch-up run of the same level (an assumption) and this project's mixed runs when present.")
    return ch, cap, f"Dot plot (log scale) of p99 publish latency, {len(long)} points, by durability and system."


def fig_fsync(d, ref):
    pts = []
    with open(ref, newline="") as f:
        for r in csv.DictReader(f):
            if r["study"] == "000" and r["experiment"] == "fsync_probe":
                pts.append({"testbed": PUBLISHED_TESTBED_LABEL, "host": "3 instances (printed range)",
                            "p99_ms": float(r["value"]), "source": "study 000 (printed)"})
    pr = d["probes"].filter((pl.col("probe") == "fio-fsync") & (pl.col("key") == "latencyUs.p99"))
    for r in pr.to_dicts():
        pts.append({"testbed": r["testbed"], "host": f"{r['host']} {r['dir']}".strip(), "p99_ms": r["value"] / 1000,
                    "source": "hw-probes fio-fsync"})
    ch = alt.Chart(alt.Data(values=pts)).mark_point(filled=True, size=80).encode(
        x=alt.X("host:N", title=None), y=alt.Y("p99_ms:Q", scale=alt.Scale(type="log"), axis=log_axis(), title="p99 fsync latency (ms)"),
        color="source:N", shape="testbed:N", tooltip=["testbed:N", "host:N", "p99_ms:Q"],
    ).properties(width=320, height=H)
    cap = ("p99 fsync latency: study 000's printed range over its three i3en.2xlarge instances (Figure 1-1; no raw "
           "data published) and this project's fio fsync probes per host and data directory when present.")
    return ch, cap, f"Dot plot of p99 fsync latency, {len(pts)} points: the study's 1 ms and 6 ms bounds and local probes."


DURABILITY_ORDER = ["sync", "async", "bypass"]


def _testbeds(df: pl.DataFrame) -> list[str]:
    """The testbed labels of `df`, study 000's first."""
    return sorted(df["testbed_label"].unique().to_list(), key=lambda t: (t != PUBLISHED_TESTBED_LABEL, t))


def _testbed_note(testbeds: list[str], what: str) -> str:
    """The caption's sentence on whose runs are drawn: study 000's alone, or this testbed's beside them."""
    mine = [t for t in testbeds if t != PUBLISHED_TESTBED_LABEL]
    if not mine:
        return f" No run of this testbed matches {what}: the figure shows study 000's published runs only."
    return f" Rows: study 000's published runs, then this testbed's runs of the same test ({', '.join(mine)})."


def _percentiles(runs: pl.DataFrame, stats: pl.DataFrame, metric: str, keep: list[str]):
    """(runs joined with their `metric` stats, the same in long form: one row per run and avg / percentile)."""
    j = runs.join(stats.filter(pl.col("metric") == metric), on="run_id")
    long = _with_system(j.select(*keep, *STAT_LABEL).unpivot(index=keep, variable_name="stat", value_name="ms")
                        .with_columns(pl.col("stat").replace_strict(STAT_LABEL)))
    return j, long


def _stat_axis():
    return alt.X("stat:N", sort=list(STAT_LABEL.values()), title=None)


def fig_latency_2000p(d, ref):
    """Study 000 Figure 2-4: the publish latency of the 2000-partition maximum-throughput runs (those of Figure 2-3)."""
    runs = report.distinct(d["runs"].filter(pl.col("experiment") == "E000-MT2")).with_columns(
        pl.format("{} / {}", "producers_per_topic", "consumers_per_subscription").alias("clients"))
    j, long = _percentiles(runs, d["stats"], "publish", ["testbed_label", "series", "local_durability", "clients"])
    if j.is_empty():
        return (_empty("No 2000-partition runs."), "Publish latency at 2000 partitions: no runs.",
                "No 2000-partition runs.")
    testbeds = _testbeds(j)
    durs = [x for x in DURABILITY_ORDER if x in set(j["local_durability"].to_list())]
    ch = alt.Chart(_rows(long)).mark_line(point=True).encode(
        x=_stat_axis(),
        y=alt.Y("median(ms):Q", scale=alt.Scale(type="log"), axis=log_axis(), title="publish latency (ms)"),
        color=system_color(), strokeDash=alt.StrokeDash("clients:N", legend=None),
        shape=alt.Shape("clients:N", title=["producers /", "consumers"]), detail="series:N",
        tooltip=["testbed_label:N", "series:N", "local_durability:N", "clients:N", "stat:N", "median(ms):Q"],
    ).properties(width=W - 40, height=H).facet(column=alt.Column("local_durability:N", sort=durs, title="local durability"),
                                           row=alt.Row("testbed_label:N", sort=testbeds, title=None))
    scaled = sorted({p for p in j.filter(pl.col("testbed_label") != PUBLISHED_TESTBED_LABEL)["effective_partitions"]
                     .drop_nulls().to_list() if p != 2000})
    cap = ("Publish latency at 2000 partitions (study 000 Figure 2-4): average and percentiles of the aggregated "
           "publish-latency distribution of each maximum-throughput run of Figure 2-3 (one topic, ack-2 / ack-all, at "
           "the rate the run reached), by local durability (bypass: Pulsar's journal bypassed); log scale. Study 000 "
           "published runs with 2 producers / 2 consumers only; its Kafka rerun with 4 producers has no file."
           + _testbed_note(testbeds, "the 2000-partition maximum-throughput test")
           + (f" This testbed's runs are labelled by the study's shape; they ran {', '.join(map(str, scaled))} "
              "partitions (the profile's scaling)." if scaled else ""))
    alt_text = (f"Line charts of average, p50, p90, p99 and p99.9 publish latency, one line per series and client "
                f"count, in {len(durs)} panels by local durability ({', '.join(durs)}) and {len(testbeds)} testbed "
                f"row(s); {j.height} runs.")
    return ch, cap, alt_text


ONE_PARTITION_SETS = {  # column of Figures 2-8 / 2-9 -> its header (split at '|')
    "mt4": "1 producer / 1 consumer|maximum rate (Figure 2-7's runs)",
    "fixed": "2 producers / 2 consumers|200 K msg/s (single_partition/)",
}


def fig_latency_1part(d, metric):
    """Study 000 Figures 2-8 (publish) and 2-9 (end to end): latency on one partition, sync local durability. The
    caption names 1 producer / 1 consumer (the maximum-throughput runs of Figure 2-7, E000-MT4); the published
    top-level single_partition/ folder (E000-LAT1P: 200 K msg/s, its files say 2 producers / 2 consumers) is the
    other set that fits. Both are drawn, one column each; this testbed's E000-LAT3 runs at one partition join the
    second."""
    r = report.distinct(d["runs"].filter(
        (pl.col("local_durability") == "sync") & (pl.col("partitions") == 1)
        & pl.col("experiment").is_in(["E000-MT4", "E000-LAT1P", "E000-LAT3"])))
    r = r.with_columns(pl.when(pl.col("experiment") == "E000-MT4").then(pl.lit(ONE_PARTITION_SETS["mt4"]))
                       .otherwise(pl.lit(ONE_PARTITION_SETS["fixed"])).alias("set"))
    j, long = _percentiles(r, d["stats"], metric, ["testbed_label", "series", "set"])
    name = "Publish" if metric == "publish" else "End-to-end"
    if j.is_empty():
        return _empty("No 1-partition sync runs."), f"{name} latency, 1 partition: no runs.", "No 1-partition sync runs."
    testbeds = _testbeds(j)
    sets = [v for v in ONE_PARTITION_SETS.values() if v in set(j["set"].to_list())]
    ch = alt.Chart(_rows(long)).mark_line(point=True).encode(
        x=_stat_axis(),
        y=alt.Y("median(ms):Q", scale=alt.Scale(type="log"), axis=log_axis(),
                title=f"{'publish' if metric == 'publish' else 'end-to-end'} latency (ms)"),
        color=system_color(), **ack_channels(), detail="series:N",
        tooltip=["testbed_label:N", "series:N", "set:N", "stat:N", "median(ms):Q"],
    ).properties(width=W, height=H).facet(
        column=alt.Column("set:N", sort=sets, title=None, header=alt.Header(labelExpr="split(datum.label, '|')")),
        row=alt.Row("testbed_label:N", sort=testbeds, title=None))
    fig = "2-8" if metric == "publish" else "2-9"
    cap = (f"{name} latency on one partition with sync local durability (study 000 Figure {fig}): average and "
           "percentiles of each run's aggregated distribution by acknowledgement level; log scale. The study's "
           "caption names 1 producer / 1 consumer, the shape of the maximum-throughput runs of Figure 2-7 (left "
           "column); the published folder single_partition/ holds a second set of 1-partition sync runs at a fixed "
           "200 K msg/s whose files name 2 producers / 2 consumers (right column). The study does not say which set "
           "it drew; both are shown." + _testbed_note(testbeds, "either set"))
    alt_text = (f"Line charts of {name.lower()} latency (average, p50, p90, p99, p99.9), one line per series "
                f"(pulsar-ack-1/2, kafka-ack-1/all), {len(sets)} column(s) by run set and {len(testbeds)} testbed "
                f"row(s); {j.height} runs.")
    return ch, cap, alt_text


# catch-up mode -> (report.catchup_mode's label, study 000 figure, published folder, the mode in words, a caption note)
CATCHUP_PUBLISH = {
    "bypass": ("1 bypass journal", "2-36", "catchup_read/bypass-journal/",
               "mode #1: Pulsar's journal bypassed, Kafka with async local durability", ""),
    "async": ("2 async", "2-37", "catchup_read/nosync/", "mode #2: async local durability, Pulsar's journal kept",
              " The study captions this figure \"with data sync\", though its section #2 does not fsync: the captions "
              "of Figures 2-37 and 2-38 look swapped, and this figure follows the published folder."),
    "sync": ("3 sync", "2-38", "catchup_read/sync/", "mode #3: sync local durability",
             " The study captions this figure \"without data sync\", though its section #3 fsyncs: the captions of "
             "Figures 2-37 and 2-38 look swapped, and this figure follows the published folder."),
}


def catchup_publish_windows(d, mode: str) -> pl.DataFrame:
    """The per-window rows of the catch-up runs of one mode: t_s, publish p99 (ms), backlog (GiB), run labels and the
    run's number of windows."""
    label = CATCHUP_PUBLISH[mode][0]
    runs = report.catchup_mode(report.distinct(d["runs"].filter(pl.col("experiment") == "E000-CU"))).filter(
        pl.col("mode") == label)
    w = d["windows"].join(runs.select("run_id", "testbed_label", "series", "message_size_bytes"), on="run_id")
    return _with_system(w.with_columns(
        (pl.col("backlog_msgs") * pl.col("message_size_bytes") / 2 ** 30).alias("backlog_gib"),
        pl.len().over("run_id").alias("n_windows")).select(
        "run_id", "testbed_label", "series", "t_s", "publish_p99_ms", "backlog_gib", "n_windows").sort("run_id", "t_s"))


def fig_catchup_publish(d, mode):
    """Study 000 Figures 2-36 … 2-38: the p99 publish latency of every window of the catch-up runs of one mode, over
    the run, above the backlog (which shows when the catch-up read runs). One row per testbed, each its own time
    axis."""
    _, fig, folder, words, note = CATCHUP_PUBLISH[mode]
    w = catchup_publish_windows(d, mode)
    if w.is_empty():
        return (_empty("No catch-up runs in this mode."), f"Publish latency during catch-up reads ({folder}): no runs.",
                "No catch-up runs in this mode.")
    testbeds = _testbeds(w)
    rows = []
    for i, tb in enumerate(testbeds):
        part = w.filter(pl.col("testbed_label") == tb)
        last = i == len(testbeds) - 1
        domain = alt.Scale(domain=[0, part["t_s"].max()])
        base = alt.Chart(_rows(part)).encode(color=system_color(), detail="run_id:N")
        # the two panels of a row share the time axis: labelled once, under the backlog
        x_top = alt.X("t_s:Q", title=None, scale=domain, axis=alt.Axis(labels=False))
        x_bottom = alt.X("t_s:Q", title="time (s)" if last else None, scale=domain)
        dash = alt.StrokeDash("ack_label:N", title="acknowledgement", scale=alt.Scale(domain=["ack-1", "ack-2", "ack-all"]))
        # a run of a few windows (a short local phase) would be an invisible line: its windows are points too
        few = alt.datum.n_windows <= 3
        p99 = alt.Y("publish_p99_ms:Q", scale=alt.Scale(type="log"), axis=log_axis(), title=["p99 publish", "latency (ms)"])
        lat = base.transform_filter(alt.datum.publish_p99_ms > 0)
        top = alt.layer(lat.mark_line(strokeWidth=1.2).encode(x=x_top, y=p99, strokeDash=dash),
                        lat.transform_filter(few).mark_point(filled=True, size=30).encode(x=x_top, y=p99)).properties(
            width=W + 160, height=H, title=alt.TitleParams(tb, anchor="start", fontWeight="normal"))
        gib = alt.Y("backlog_gib:Q", title=["backlog", "(GiB)"], axis=alt.Axis(tickCount=3))
        bottom = alt.layer(base.mark_line(strokeWidth=1.2).encode(x=x_bottom, y=gib, strokeDash=dash),
                           base.transform_filter(few).mark_point(filled=True, size=30).encode(x=x_bottom, y=gib)).properties(
            width=W + 160, height=60)
        rows.append(alt.vconcat(top, bottom, spacing=4))
    ch = alt.vconcat(*rows, spacing=16)
    n_runs = w["run_id"].n_unique()
    cap = (f"Publish latency during the catch-up read (study 000 Figure {fig}; published folder {folder}, {words}): "
           "the p99 publish latency of each 10-s window over the whole run (top, log scale; OMB's per-window "
           "percentiles as measured, never averaged) above the backlog (bottom, GiB). Producers write 200 K msg/s "
           "throughout; the backlog grows to 512 GB, then the consumers read it from the beginning (the backlog "
           "falls) and follow the tail. Lines: one per run, by system and acknowledgement level; each testbed row "
           "has its own time axis." + note + _testbed_note(testbeds, "this catch-up mode"))
    alt_text = (f"Time series of per-window p99 publish latency (log scale) above the backlog in GiB for {n_runs} "
                f"catch-up runs ({w.height} windows) in {len(testbeds)} testbed row(s), one line per run coloured "
                "by system and dashed by acknowledgement level.")
    return ch, cap, alt_text


def _svg_width(svg: str) -> float:
    import re
    m = re.search(r'<svg[^>]*\swidth="([\d.]+)', svg)
    return float(m.group(1)) if m else TEXT_WIDTH_PT


def print_spec(chart, min_pt: float = MIN_FONT_PT) -> dict:
    """The chart's Vega-Lite spec with every font at least `min_pt` once the SVG is scaled to the text width.

    The SVG's width depends on its labels, so: draw, measure, set the fonts, draw again (a few rounds)."""
    font_px = 11.0
    for _ in range(4):
        spec = chart.configure_view(stroke=None).configure(font="DejaVu Sans").configure_axis(
            labelFontSize=font_px, titleFontSize=font_px, labelOverlap="greedy", labelSeparation=4,
        ).configure_axisX(tickCount=4).configure_axisY(tickCount=5).configure_legend(labelFontSize=font_px, titleFontSize=font_px, labelLimit=0).configure_header(
            labelFontSize=font_px, titleFontSize=font_px, labelLimit=0).configure_text(fontSize=font_px).to_dict()
        width = _svg_width(vlc.vegalite_to_svg(spec))
        need = min_pt * width / TEXT_WIDTH_PT + 0.1
        if font_px >= need:
            return spec
        font_px = need * 1.08
    return spec


_CLAIMS_CACHE = {}


def _claims(d, ref):
    key = id(d)
    if key not in _CLAIMS_CACHE:
        from . import claims
        _CLAIMS_CACHE[key] = claims.derive(d["runs"], d["stats"], ref)
    return _CLAIMS_CACHE[key]


BUILDERS = {
    "maxtput": fig_maxtput,
    "latency-publish-1sub": lambda d, r: _latency(d, "publish", "1sub"),
    "latency-e2e-1sub": lambda d, r: _latency(d, "e2e", "1sub"),
    "latency-publish-10sub": lambda d, r: _latency(d, "publish", "10sub"),
    "latency-e2e-10sub": lambda d, r: _latency(d, "e2e", "10sub"),
    "latency-timeline": fig_timeline,
    "partition-sweep": fig_sweep,
    "catchup-rate": fig_catchup,
    "mixed-publish-p99": fig_mixed,
    "fsync-probe": fig_fsync,
    "latency-publish-2000p": fig_latency_2000p,
    "latency-publish-1part": lambda d, r: fig_latency_1part(d, "publish"),
    "latency-e2e-1part": lambda d, r: fig_latency_1part(d, "e2e"),
    "catchup-publish-bypass": lambda d, r: fig_catchup_publish(d, "bypass"),
    "catchup-publish-async": lambda d, r: fig_catchup_publish(d, "async"),
    "catchup-publish-sync": lambda d, r: fig_catchup_publish(d, "sync"),
}
assert list(BUILDERS) == FIGURE_IDS


_HIDDEN_TEXT = re.compile(r'<text\b[^>]*\sopacity="0"[^>]*>.*?</text>', re.S)


def drop_hidden_text(svg: str) -> str:
    """The SVG without the text Vega hid (axis labels its overlap rule removed are kept, at opacity 0).

    Hidden words are still words to a PDF: they land in the paper's text layer (search, copy, screen
    readers) and sit under the axis title that was placed as if they were gone."""
    return _HIDDEN_TEXT.sub("", svg)


def render(d, ref, fid, out: Path, png_scale: float = 2.0):
    if fid not in BUILDERS:
        raise InputError("--id", "id", f"unknown figure {fid!r}; known: {', '.join(FIGURE_IDS)}")
    chart, caption, alt_text = BUILDERS[fid](d, ref)
    return save_chart(chart, fid, caption, alt_text, out, png_scale)


def save_chart(chart, fid, caption, alt_text, out: Path, png_scale: float = 2.0):
    """<out>/<fid>.svg, .png, .pdf (fonts for print, hidden words dropped) and .json (caption, alt text), each
    written atomically."""
    spec = print_spec(chart)
    out.mkdir(parents=True, exist_ok=True)
    svg = drop_hidden_text(vlc.vegalite_to_svg(spec))
    # the PNG and the PDF are drawn from that SVG, so all three hold the same marks and the same words
    blobs = {"svg": svg.encode(), "png": vlc.svg_to_png(svg, scale=png_scale),
             "pdf": stable_pdf(vlc.svg_to_pdf(svg)),  # vl-convert's object order changes per process
             "json": json.dumps({"id": fid, "caption": caption, "alt": alt_text}, ensure_ascii=False, indent=1).encode()}
    for ext, data in blobs.items():
        p = out / f"{fid}.{ext}"
        tmp = out / f".{fid}.{ext}.tmp"
        tmp.write_bytes(data)
        tmp.replace(p)
    return caption


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--derived", type=Path, required=True)
    ap.add_argument("--reference", type=Path, required=True)
    ap.add_argument("--id", required=True, help="a figure id, or 'all'")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--png-scale", type=float, default=2.0)
    a = ap.parse_args(argv)

    def body():
        d = report.load(a.derived, names=("runs", "windows", "stats", "probes"))
        for fid in FIGURE_IDS if a.id == "all" else [a.id]:
            render(d, a.reference, fid, a.out, a.png_scale)
    return cli(body)


if __name__ == "__main__":
    sys.exit(main())
