"""Byte-identical reruns: env.rerun (the published-only DAG twice) and the sources of nondeterminism it fixed."""

import subprocess
import sys

import pytest

from env import rerun
from env.tests.support import ROOT

in_git_checkout = pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout (e.g. the flake's check)")

PDF_OF_A_CHART = """
import sys, vl_convert as vlc
spec = {"data": {"values": [{"a": "x", "b": 1}, {"a": "y", "b": 2}]}, "mark": "bar", "title": "Tëst",
        "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative"}}}
sys.stdout.buffer.write(vlc.vegalite_to_pdf(spec))
"""


def test_compare_names_the_first_file_that_differs():
    a = {"paper/_build/paper.pdf": "1", "paper/figures/a.svg": "2", "paper/figures/b.png": "3"}
    assert rerun.compare(a, dict(a)) is None
    b = {**a, "paper/figures/b.png": "9", "paper/_build/paper.pdf": "8"}
    assert rerun.compare(a, b).startswith("paper/_build/paper.pdf: differs between the two runs")
    assert rerun.compare(a, {k: v for k, v in a.items() if k != "paper/figures/a.svg"}) == (
        "paper/figures/a.svg: made by the first run only")


def test_digests_cover_every_output_kind(tmp_path):
    for rel in ("data/derived/runs.parquet", "paper/figures/x.svg", "paper/figures/x.pdf", "paper/tables/t.csv",
                "paper/_variables.yml", "paper/_build/paper.html", "logs/analysis/x.log"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    assert list(rerun.digests(tmp_path)) == [
        "data/derived/runs.parquet", "paper/_build/paper.html", "paper/_variables.yml", "paper/figures/x.pdf",
        "paper/figures/x.svg", "paper/tables/t.csv"]


def test_figure_pdfs_are_stable_across_processes():
    """vl-convert's PDF object order changes from process to process; analysis.pdfstable makes it one."""
    from analysis.pdfstable import stable_pdf
    pdfs = [subprocess.run([sys.executable, "-c", PDF_OF_A_CHART], capture_output=True, check=True, timeout=120).stdout
            for _ in range(3)]
    stable = {stable_pdf(p) for p in pdfs}
    assert len(stable) == 1
    assert next(iter(stable)).startswith(b"%PDF-")


def test_paper_pdf_date_comes_from_source_date_epoch(monkeypatch, tmp_path):
    from paper import render
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert render.source_date_epoch(tmp_path) == 1700000000
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "soon")
    with pytest.raises(render.RenderError, match="SOURCE_DATE_EPOCH: 'soon' is not a number"):
        render.source_date_epoch(tmp_path)
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert render.source_date_epoch(tmp_path) == 0  # no git repository there, no variable: the epoch
    if (ROOT / ".git").exists():
        assert render.source_date_epoch(ROOT / "paper") > 0  # the last commit's time


@in_git_checkout
def test_the_copy_holds_the_sources_and_nothing_made(tmp_path):
    files = rerun.source_files()
    assert "Snakefile" in files and "uv.lock" in files and "env/xdg/snakemake" in files
    assert not any(f.startswith(("data/derived/", "paper/_build/", "paper/figures/", ".venv/", ".cache/"))
                   for f in files)
