"""The PDF and HTML checks find what they are meant to find (real typst PDFs, real headless Chromium)."""

import shutil

import pytest
import typst

from paper import checks

from .conftest import PAPER

DOC = """#set page(paper: "a4", margin: (x: 2cm, y: 2.2cm))
#set text(size: 10pt)
Claim R1:first and claim R2:second.
{extra}
"""


def _pdf(tmp_path, extra=""):
    src = tmp_path / "doc.typ"
    src.write_text(DOC.format(extra=extra))
    out = tmp_path / "doc.pdf"
    typst.compile(str(src), output=str(out))
    return out


def test_pdf_check_passes_a_clean_page(tmp_path):
    claims = tmp_path / "claims.csv"
    claims.write_text("claim_id,verdict\nR1:first,matches\nR2:second,matches\n")
    assert checks.check_pdf(_pdf(tmp_path), claims, PAPER) == []


def test_pdf_check_finds_overlap_margin_and_missing_claim(tmp_path):
    pdf = _pdf(tmp_path, '#place(dx: 0pt, dy: -12pt)[Claim R1:first]\n#place(dx: -1.5cm, dy: 2cm)[marginal]')
    claims = tmp_path / "claims.csv"
    claims.write_text("claim_id,verdict\nR1:first,matches\nR3:absent,differs\n")
    problems = checks.check_pdf(pdf, claims, PAPER)
    assert any("printed over" in p for p in problems), problems
    assert any("'marginal'" in p and "outside the text area" in p for p in problems), problems
    assert any("claims row R3:absent" in p for p in problems) and not any("R1:first (" in p for p in problems)


WIDE = "<tr>" + "".join(f"<td>column_{i}_with_a_long_name</td>" for i in range(30)) + "</tr>"


@pytest.mark.skipif(checks.chromium() is None, reason="chromium not installed (env/apt-packages.txt)")
@pytest.mark.parametrize("css,clipped", [
    ("main { max-width: 30em; overflow: hidden } table { display: table }", True),
    ("main { max-width: 30em } table { display: block; max-width: 100%; overflow-x: auto }", False),
])
def test_html_check_in_headless_chromium(tmp_path, css, clipped):
    page = tmp_path / "p.html"
    page.write_text(f"<html><head><style>{css}</style></head><body><main><table><caption>Wide</caption>{WIDE}"
                    "</table></main></body></html>")
    problems = checks.check_html(page)
    assert bool(problems) == clipped, problems
    if clipped:
        assert "table 'Wide'" in problems[0] and "does not scroll" in problems[0]
