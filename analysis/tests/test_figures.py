import json

import pytest

from analysis import figures, report
from analysis.tests.paths import REFERENCE


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
    assert not list(tmp_path.glob(".*tmp"))


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

