"""One source of render settings: _quarto.yml (read by Quarto) is what the pandoc + typst path uses."""

import yaml
import pytest

from paper import checks, render, settings
from paper.settings import SettingsError

from .conftest import PAPER


def test_quarto_config_names_the_shared_files():
    """Quarto's own keys point at the shared header and CSS; nothing is inline (no second copy to drift)."""
    doc = yaml.safe_load((PAPER / "_quarto.yml").read_text())
    assert doc["format"]["typst"]["include-in-header"] == "render-header.typ"
    assert doc["format"]["html"]["css"] == "style.css"
    s = settings.load_settings(PAPER)
    assert [p.name for p in s.typst_headers] == ["render-header.typ"] and [p.name for p in s.css] == ["style.css"]
    header = (PAPER / "render-header.typ").read_text()
    assert "#show figure: set block(breakable: true)" in header  # long tables break across pages
    assert "max-width: 52em" not in (PAPER / "style.css").read_text().split("body {")[1].split("}")[0]
    # render.py keeps no typst or CSS rules of its own
    src = (PAPER / "render.py").read_text()
    assert "#show" not in src and "#set" not in src and "papersize:a4" not in src


def test_pandoc_path_reads_quarto_yml(fake_paper, monkeypatch):
    """Change the margins, the header and the CSS in _quarto.yml: the pandoc path's PDF and HTML follow."""
    q = fake_paper / "_quarto.yml"
    doc = yaml.safe_load(q.read_text())
    doc["format"]["typst"]["margin"] = {"x": "4cm", "y": "3cm"}
    (fake_paper / "other.typ").write_text((fake_paper / "render-header.typ").read_text() + "\n#set text(fill: rgb(1, 2, 3))\n")
    doc["format"]["typst"]["include-in-header"] = "other.typ"
    (fake_paper / "other.css").write_text("body { color: rgb(9, 8, 7); }\n")
    doc["format"]["html"]["css"] = "other.css"
    q.write_text(yaml.safe_dump(doc))
    calls = []
    real_run = render._run
    monkeypatch.setattr(render, "_run", lambda cmd, what: (calls.append(cmd), real_run(cmd, what))[1])
    outs = render.render(fake_paper, renderer="pandoc")
    typst_cmd = next(c for c in calls if "--to=typst" in c)
    assert f"--include-in-header={fake_paper / 'other.typ'}" in typst_cmd
    assert not any(a.startswith("--columns") for a in typst_cmd)  # pandoc's default, as Quarto uses
    assert "rgb(9, 8, 7)" in outs["html"].read_text()
    pages = checks.pdf_pages(outs["pdf"])
    left = min(w.x0 for p in pages for w in p.words)
    assert abs(left - 4 / 2.54 * 72) < 1.0, left  # 4 cm = 113.4 pt


def test_bad_settings_are_one_line(fake_paper):
    q = fake_paper / "_quarto.yml"
    doc = yaml.safe_load(q.read_text())
    doc["format"]["typst"]["margin"] = {"x": "wide", "y": "2cm"}
    q.write_text(yaml.safe_dump(doc))
    with pytest.raises(SettingsError, match=r"_quarto\.yml: format\.typst\.margin\.x: 'wide' is not a length"):
        settings.load_settings(fake_paper)
