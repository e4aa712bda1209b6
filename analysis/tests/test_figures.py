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
        assert (tmp_path / f"{fid}.svg").read_text().lstrip().startswith("<svg")
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
