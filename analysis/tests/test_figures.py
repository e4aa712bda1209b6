import json

import polars as pl
import pytest

from analysis import figures, report
from analysis.tests.paths import REFERENCE
from paper import checks


def _overlapping_words(pdf):
    return [(a.text, b.text) for page in checks.pdf_pages(pdf) for a, b in checks.overlaps(page)]


def local_scale(published: dict) -> dict:
    """The published tables plus two rows of this project's local scale, as `snakemake --profile local all` left
    them: a `local` and a `local (suspect)` testbed, five partition/producer shapes (one study 000 never ran), tens
    of MiB/s under a probed disk ceiling of about 1 GB/s, runs of one 10-s window."""
    runs, windows, stats = published["runs"], published["windows"], published["stats"]
    extra_runs, extra_windows, extra_stats = [], [], []
    shapes = [(1, 1, 1), (1, 2, 2), (100, 2, 2), (2000, 2, 2), (2000, 4, 4)]
    for k, label in enumerate(["local", "local (suspect)"]):
        suffix = f"-fixture-{k}"
        r = runs.with_columns(pl.col("run_id") + suffix, pl.col("blob_sha1") + suffix, pl.lit("local").alias("testbed"),
                              pl.lit(label).alias("testbed_label"), (pl.col("publish_mean_mibps") / 20 + k))
        mt = r.filter(pl.col("experiment").str.starts_with("E000-MT"))
        # the max-throughput runs spread over the five local shapes (the last one study 000 did not run)
        mt = mt.with_columns(pl.int_range(pl.len()).mod(len(shapes)).alias("_s"))
        for col, i in (("partitions", 0), ("producers_per_topic", 1), ("consumers_per_subscription", 2)):
            mt = mt.with_columns(pl.col("_s").replace_strict({j: s[i] for j, s in enumerate(shapes)}).cast(
                runs.schema[col]).alias(col))
        r = pl.concat([r.filter(~pl.col("experiment").str.starts_with("E000-MT")), mt.drop("_s")])
        extra_runs.append(r.select(runs.columns))
        w = windows.filter(pl.col("window") == windows["window"].min())  # one window per run
        extra_windows.append(w.with_columns(pl.col("run_id") + suffix, pl.col("publish_p99_ms") * (30 + k)))
        extra_stats.append(stats.with_columns(pl.col("run_id") + suffix))
    probes = pl.DataFrame({"testbed": ["local"] * 2, "host": ["h"] * 2, "probe": ["fio"] * 2, "dir": ["/d"] * 2,
                           "device": ["sda"] * 2, "key": ["writeMBps"] * 2, "value": [954.7, 1137.5],
                           "text": [None, None], "path": ["p"] * 2}, schema=published["probes"].schema)
    return {**published, "runs": pl.concat([runs, *extra_runs]), "windows": pl.concat([windows, *extra_windows]),
            "stats": pl.concat([stats, *extra_stats]), "probes": pl.concat([published["probes"], probes])}


@pytest.mark.slow
def test_every_figure_renders(published_tables, tmp_path):
    d = dict(published_tables)
    for fid in figures.FIGURE_IDS:
        figures.render(d, REFERENCE, fid, tmp_path, png_scale=1.0)
        meta = json.loads((tmp_path / f"{fid}.json").read_text())
        assert meta["id"] == fid and len(meta["caption"]) > 40 and len(meta["alt"]) > 20
        svg = (tmp_path / f"{fid}.svg").read_text()
        assert svg.lstrip().startswith("<svg") and 'opacity="0"' not in svg, fid  # no hidden words
        assert (tmp_path / f"{fid}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (tmp_path / f"{fid}.pdf").read_bytes()[:5] == b"%PDF-"
        assert _overlapping_words(tmp_path / f"{fid}.pdf") == [], fid
    assert not list(tmp_path.glob(".*tmp"))


@pytest.mark.slow
def test_figures_at_local_scale_print_no_word_over_another(published_tables, tmp_path):
    # after the local DAG the figures gain testbed rows and a fifth shape: facet headers ran into each other, axis
    # titles longer than a row overprinted the next, and a 1 GB/s disk ceiling flattened bars of tens of MiB/s
    d = local_scale(dict(published_tables))
    for fid in figures.FIGURE_IDS:
        figures.render(d, REFERENCE, fid, tmp_path, png_scale=1.0)
        assert _overlapping_words(tmp_path / f"{fid}.pdf") == [], fid
    svg = (tmp_path / "maxtput.svg").read_text()
    # 1137.5 MB/s = 1085 MiB/s
    assert "off scale: probe, best disk write 1,085 MiB/s" in svg, "the ceiling far above the local bars is named"
    assert svg.count(">local (suspect)<") == 1 and svg.count(">2000<") >= 1
    meta = json.loads((tmp_path / "maxtput.json").read_text())
    assert "3 testbed rows" in meta["alt"] and "off-scale ceilings named for local" in meta["alt"]


def test_figure_ids_match_contract():
    text = (report.Path(__file__).resolve().parents[2] / "CONTRIBUTING.md").read_text()
    for fid in figures.FIGURE_IDS:
        assert f"`{fid}`" in text


def test_unknown_figure_id(published_tables, tmp_path):
    with pytest.raises(figures.InputError, match="nope"):
        figures.render(dict(published_tables), REFERENCE, "nope", tmp_path)


def test_labels_vega_hides_are_not_in_the_svg_or_pdf(tmp_path):
    # 40 long labels on a narrow axis: Vega's overlap rule hides most of them (it keeps them at opacity 0)
    import altair as alt
    import polars as pl
    import subprocess

    rows = pl.DataFrame({"x": [f"label-number-{i:02d}" for i in range(40)], "y": list(range(40))})
    chart = alt.Chart(rows).mark_bar().encode(x=alt.X("x:N", axis=alt.Axis(labelAngle=0, labelOverlap="greedy")),
                                              y="y:Q").properties(width=120, height=80)
    raw = figures.vlc.vegalite_to_svg(chart.to_dict())
    assert 'opacity="0"' in raw  # the case this guards against does arise
    clean = figures.drop_hidden_text(raw)
    assert 'opacity="0"' not in clean and clean.count("<text") < raw.count("<text")
    assert "label-number-00" in clean  # the first label stays visible
    pdf = tmp_path / "f.pdf"
    pdf.write_bytes(figures.vlc.svg_to_pdf(clean))
    words = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout.split()
    assert sum(w.startswith("label-number-") for w in words) == clean.count(">label-number-")

