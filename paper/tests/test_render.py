"""End to end: the fake paper through the pandoc + typst path, and the real analysis outputs (slow)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from paper import render
from paper.ids import FIGURE_IDS, TABLE_IDS

from .conftest import PAPER, ROOT, copy_sources
from .local_fixture import STUDY001_SERIES

PDFTOPPM = shutil.which("pdftoppm")


def page_ink(pdf: Path, tmp: Path, page: int = 1) -> float:
    """Fraction of non-white pixels of one PDF page, via pdftoppm -> PGM (8-bit grey)."""
    assert PDFTOPPM, "pdftoppm missing (apt-get install poppler-utils; env/apt-packages.txt lists it)"
    prefix = tmp / "page"
    subprocess.run([PDFTOPPM, "-gray", "-r", "40", "-f", str(page), "-l", str(page), str(pdf), str(prefix)],
                   check=True, capture_output=True)
    (pgm,) = tmp.glob("page*.pgm")
    data = pgm.read_bytes()
    m = re.match(rb"P5\s+(\d+)\s+(\d+)\s+(\d+)\s", data)
    assert m, "pdftoppm did not write a binary PGM"
    w, h = int(m.group(1)), int(m.group(2))
    pixels = data[m.end():m.end() + w * h]
    assert len(pixels) == w * h
    pgm.unlink()
    return sum(1 for p in pixels if p < 200) / (w * h)


def check_outputs(outs: dict, tmp: Path) -> str:
    html = outs["html"].read_text()
    for fid in FIGURE_IDS:
        assert f'id="fig-{fid}"' in html, f"figure {fid} missing from the HTML"
    for tid in TABLE_IDS:
        assert f'id="tbl-{tid}"' in html, f"table {tid} missing from the HTML"
    assert html.count("data:image/svg+xml;base64,") >= len(FIGURE_IDS)  # figures embedded, standalone
    assert "{{<" not in html and "?var:" not in html
    pdf = outs["pdf"]
    assert pdf.read_bytes()[:5] == b"%PDF-"
    ink = page_ink(pdf, tmp)
    assert 0.01 < ink < 0.6, f"page 1 looks blank or black (ink {ink:.3f})"
    return html


@pytest.mark.slow
def test_pandoc_typst_render_of_fake_outputs(fake_paper, tmp_path):
    outs = render.render(fake_paper, renderer="pandoc")
    assert outs == {"html": fake_paper / "_build" / "paper.html", "pdf": fake_paper / "_build" / "paper.pdf"}
    html = check_outputs(outs, tmp_path)
    assert "Fake CPU 9000" in html and "Figure 1: Fake figure fsync-probe" in html
    assert '<a href="#fig-maxtput">Figure\u00a02</a>' in html  # pandoc writes &nbsp; as the character
    text = subprocess.run(["pdftotext", "-l", "1", str(outs["pdf"]), "-"], capture_output=True, text=True).stdout
    assert "Kafka, Pulsar and Pravega at the same durability" in text and "5 published benchmark studies" in text
    assert not list(fake_paper.glob(".render-*")) and not list((fake_paper / "_build").glob(".render-*"))


@pytest.mark.slow
def test_pandoc_render_of_the_local_scale_fixture(tmp_path):
    """The tables a local run fills (every study-001 variant label, the study-003 ladder) hold their text in the
    PDF and fit (or scroll) in the HTML: the ci data has no such row, so only this fixture shows them."""
    from paper import checks

    from .local_fixture import make_local_paper
    paper = make_local_paper(tmp_path / "local")
    from analysis import study001
    runs_md = (paper / "tables" / "study001-runs.md").read_text()
    runs_csv = (paper / "tables" / "study001-runs.csv").read_text()
    for variant in ("batch-128k-1ms", "batch-1m-10ms", "no-batch"):  # every variant the local profile runs
        assert f",{variant}," in runs_csv, variant
    for label in study001.LABEL.values():  # ... each under its series label in the paper's table
        assert label in runs_md, label
    assert runs_md.count("\n") == 2 + len(STUDY001_SERIES) * 2  # header, rule, one row per run
    assert "local (suspect)" in runs_md
    from analysis import study004
    s002, s004 = ((paper / "tables" / f"{t}.md").read_text() for t in ("study002-runs", "study004-runs"))
    assert s002.count("\n") == 2 + 4 and "local (suspect)" in s002  # both systems, flush and no flush
    for cfg in study004.CONFIG.values():  # every study-004 configuration the local profile runs, both experiments
        assert s004.count(f"| {cfg} |") == 2, cfg
    assert "needs aws scale: partition sweep" in (paper / "tables" / "study002-claims.md").read_text()
    assert "needs aws scale: E004-T3" in (paper / "tables" / "study004-claims.md").read_text()
    outs = render.render(paper, renderer="pandoc", durability=ROOT / "systems" / "durability.yaml")
    check_outputs(outs, tmp_path)
    problems = checks.check_pdf(outs["pdf"], None, paper)
    assert not problems, f"{len(problems)} PDF problems, e.g. " + "; ".join(problems[:5])
    if checks.chromium() is not None:
        problems = checks.check_html(outs["html"])
        assert not problems, "; ".join(problems[:5])


def test_local_fixture_fills_a_paper_folder_but_keeps_outputs_there(tmp_path, capsys):
    """python -m paper.tests.local_fixture PAPER: the inputs of a by-hand Quarto render (docs/quarto-by-hand.md)."""
    from .local_fixture import main
    paper = tmp_path / "paper"
    paper.mkdir()
    copy_sources(PAPER, paper)
    assert main([str(paper)]) == 0
    assert "| local (suspect) |" in (paper / "tables" / "study001-runs.md").read_text()
    assert {p.stem for p in (paper / "figures").glob("*.svg")} == set(FIGURE_IDS)
    (paper / "_variables.yml").write_text("real: outputs\n")
    assert main([str(paper)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("local_fixture: error: ") and "paper/figures: exists" in err and "--replace" in err
    assert (paper / "_variables.yml").read_text() == "real: outputs\n"
    assert main([str(paper), "--replace"]) == 0 and "local:" in (paper / "_variables.yml").read_text()
    assert main([str(tmp_path / "nowhere")]) == 2


def test_cli_error_is_one_line_and_writes_nothing(fake_paper):
    (fake_paper / "paper.md").write_text((fake_paper / "paper.md").read_text()
                                          + "\nBroken {{< var claims.bogus_key >}}\n")
    p = subprocess.run([sys.executable, "-m", "paper.render", "--paper", str(fake_paper), "--renderer", "pandoc"],
                       capture_output=True, text=True, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'hw-probes'}"))
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "paper.md:" in lines[0] and "'claims.bogus_key'" in lines[0]
    assert not (fake_paper / "_build" / "paper.html").exists()


def test_renderer_choice(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert render.choose("auto") == "pandoc"
    monkeypatch.setattr(shutil, "which", lambda name: "/nix/store/quarto/bin/quarto")
    assert render.choose("auto") == "quarto" and render.choose("pandoc") == "pandoc"
    with pytest.raises(render.RenderError, match="paper.renderer: 'latex'"):
        render.choose("latex")


def test_rules_dry_run(fake_paper):
    root = fake_paper.parent
    (root / "Snakefile").write_text(f'ALL_TARGETS = []\ninclude: "{PAPER}/rules.smk"\n'
                                    "rule all:\n    input: ALL_TARGETS\n")
    for name in ("render.py", "ids.py"):
        shutil.copy(PAPER / name, fake_paper / name)
    p = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--config", 'paper={"renderer":"pandoc"}'],
                       cwd=root, capture_output=True, text=True)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "rule paper:" in out and "paper/_build/paper.pdf" in out
    assert "python -m paper.render --paper paper --renderer pandoc" in out
    (fake_paper / "figures" / "maxtput.json").unlink()
    missing = subprocess.run([sys.executable, "-m", "snakemake", "-n"], cwd=root, capture_output=True, text=True)
    assert missing.returncode != 0 and "paper/figures/maxtput.json" in missing.stdout + missing.stderr


REAL = [PAPER / "_variables.yml", *(PAPER / "figures" / f"{i}.json" for i in FIGURE_IDS),
        *(PAPER / "figures" / f"{i}.svg" for i in FIGURE_IDS), *(PAPER / "tables" / f"{t}.md" for t in TABLE_IDS)]


@pytest.mark.slow
def test_render_from_real_analysis_outputs(tmp_path):
    missing = [str(p.relative_to(ROOT)) for p in REAL if not p.exists()]
    if missing and os.environ.get("STREAMBENCH_REQUIRE_BUILT"):  # env/test runs this after the ci DAG
        pytest.fail(f"analysis outputs missing after the DAG ran: {', '.join(missing[:5])}")
    if missing:
        pytest.skip(f"analysis outputs not built yet ({len(missing)} missing, e.g. {missing[0]}); "
                    "run: snakemake -c2 paper/_variables.yml " + " ".join(f"paper/figures/{i}.svg" for i in FIGURE_IDS[:1]) + " …")
    paper = tmp_path / "paper"
    paper.mkdir()
    copy_sources(PAPER, paper)
    for sub in ("figures", "tables"):
        shutil.copytree(PAPER / sub, paper / sub)
    shutil.copy(PAPER / "_variables.yml", paper / "_variables.yml")
    outs = render.render(paper, renderer="pandoc", durability=ROOT / "systems" / "durability.yaml")
    check_outputs(outs, tmp_path)
    # the pages hold their content: no word over another (figures included), none outside the text area,
    # every claims row in the text; in the HTML no table wider than its column that does not scroll
    from paper import checks
    problems = checks.check_pdf(outs["pdf"], PAPER / "tables" / "claims.csv", paper)
    assert not problems, f"{len(problems)} PDF problems, e.g. " + "; ".join(problems[:5])
    if checks.chromium() is None and os.environ.get("STREAMBENCH_REQUIRE_BUILT"):
        pytest.fail("chromium not installed (env/apt-packages.txt): the HTML check cannot run")
    if checks.chromium() is not None:
        problems = checks.check_html(outs["html"])
        assert not problems, "; ".join(problems[:5])


def test_quarto_path_checks_first_then_calls_quarto(fake_paper, tmp_path, monkeypatch):
    """The Quarto branch with a stand-in `quarto` on PATH (Quarto itself exists only under Nix)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "calls.txt"
    (bindir / "quarto").write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {calls}\n'
        '[ "$1" = render ] || exit 3\n'
        'mkdir -p "$2/_build" && echo "<html>" > "$2/_build/paper.html" && echo "%PDF-" > "$2/_build/paper.pdf"\n')
    (bindir / "quarto").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    assert render.choose("auto") == "quarto"
    outs = render.render(fake_paper, renderer="auto", durability=ROOT / "systems" / "durability.yaml")
    assert outs["pdf"] == fake_paper / "_build" / "paper.pdf" and outs["pdf"].read_text() == "%PDF-\n"
    assert calls.read_text().split() == ["render", str(fake_paper)]
    assert (fake_paper / "_generated" / "fig-maxtput.md").exists()  # prepared before Quarto runs
    # an unknown var stops the Quarto path before Quarto runs, with the same error as the pandoc path
    calls.unlink()
    (fake_paper / "paper.md").write_text("{{< var no.such >}}\n")
    with pytest.raises(render.RenderError, match=r"paper\.md:1: .*'no\.such'"):
        render.render(fake_paper, renderer="quarto")
    assert not calls.exists()
