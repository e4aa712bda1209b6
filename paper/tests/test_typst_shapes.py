"""The typst that Quarto 1.7 writes, compiled without Quarto: render-header.typ's rules must reach it as they reach
the pandoc path's typst, and the reference followers that paper.render rejects really break it.

The snippets below have the shape Quarto 1.7.34's typst writer gives a figure (`#figure([#box(image(...))],
kind: "quarto-float-fig", ...)`) and a cross-reference (`#ref(<tbl-x>, supplement: [Table])`), read from its
output of this paper (docs/quarto-by-hand.md); the pandoc path writes `#figure(image(...))` and `@tbl-x`.
"""

import pytest
import typst

from paper import checks
from paper.settings import load_settings, page_geometry

from .conftest import PAPER

# 300 x 60 px: at its own size (0.75 pt a px) a third of the text width; a word at each edge
SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="300" height="60" viewBox="0 0 300 60">'
       '<text x="2" y="35" font-size="12">LEFTMARK</text>'
       '<text x="298" y="35" font-size="12" text-anchor="end">RIGHTMARK</text></svg>')

FIGURES = {
    "quarto": '#figure([\n#box(image("fig.svg"))\n], caption: figure.caption(\nposition: bottom, \n[\nA figure.\n]), \n'
              'kind: "quarto-float-fig", \nsupplement: "Figure", \n)\n<fig-x>\n',
    "pandoc": '#figure(image("fig.svg"),\n  caption: [\n    A figure.\n  ]\n)\n<fig-x>\n',
}


def _compile(tmp_path, body: str):
    """body after the page set-up of _quarto.yml and render-header.typ; returns the PDF's pages (paper.checks)."""
    (tmp_path / "fig.svg").write_text(SVG)
    header = (PAPER / "render-header.typ").read_text()
    src = tmp_path / "doc.typ"
    src.write_text('#set page(paper: "a4", margin: (x: 2cm, y: 2.2cm))\n#set text(size: 10pt)\n' + header + "\n" + body)
    out = tmp_path / "doc.pdf"
    typst.compile(str(src), output=str(out), root=str(tmp_path))
    return checks.pdf_pages(out)


@pytest.mark.parametrize("writer", sorted(FIGURES))
def test_figure_image_spans_the_text_width(tmp_path, writer):
    (page,) = _compile(tmp_path, FIGURES[writer])
    x0, _, x1, _ = page_geometry(load_settings(PAPER), page.width, page.height)
    left = next(w for w in page.words if w.text == "LEFTMARK")
    right = next(w for w in page.words if w.text == "RIGHTMARK")
    # the marks sit 2 px inside the SVG's edges: a few pt inside the text area once the image spans it
    assert left.x0 - x0 < 8 and x1 - right.x1 < 8, (
        f"{writer}'s figure spans {left.x0:.0f}-{right.x1:.0f} pt of the text area {x0:.0f}-{x1:.0f} pt")


TABLE = '#figure([\n#table(columns: 1, [cell])\n], kind: "quarto-float-tbl", supplement: "Table")\n<tbl-x>\n\n'


def _after_ref(tmp_path, follower: str) -> str:
    pages = _compile(tmp_path, TABLE + f"See #ref(<tbl-x>, supplement: [Table]){follower} next.\n")
    return "".join(w.text for p in pages for w in p.words)


def test_a_comma_after_a_quarto_reference_stays_a_semicolon_does_not(tmp_path):
    assert "1,next." in _after_ref(tmp_path, ",")
    text = _after_ref(tmp_path, ";")
    assert "1next." in text and ";" not in text  # why paper.render rejects '@tbl-x;'


@pytest.mark.parametrize("follower", ["(", "[", ".word"])
def test_other_rejected_followers_do_not_compile(tmp_path, follower):
    with pytest.raises(Exception):  # typst's own error type differs between typst-py versions
        _after_ref(tmp_path, follower + ("x)" if follower == "(" else "x]" if follower == "[" else ""))
