"""Checks that a rendered paper holds its content (used by the tests; also a CLI).

    python -m paper.checks pdf paper/_build/paper.pdf [--claims paper/tables/claims.csv]
    python -m paper.checks html paper/_build/paper.html            # needs chromium (Debian) on PATH

PDF (poppler's `pdftotext -bbox-layout`, the position of every word on every page):
- no word printed over another word (figures included: their text is text in the PDF);
- no word outside the page's text area (the margins come from the render settings, paper/_quarto.yml),
  except the page number in the footer;
- every row of the claims table is in the text (its claim_id, spaces and soft breaks ignored).
HTML (headless Chromium): no table wider than its container unless the table (or a wrapper) scrolls.
Each problem is one line naming the page (or table) and the words; the CLI exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import csv
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from paper.settings import load_settings, page_geometry

_PAGE = re.compile(r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', re.S)
_WORD = re.compile(r'<word xMin="([\d.-]+)" yMin="([\d.-]+)" xMax="([\d.-]+)" yMax="([\d.-]+)">(.*?)</word>', re.S)
# characters that are not ink: zero-width space/joiners, soft hyphen
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\u00ad"), None)


@dataclass(frozen=True)
class Word:
    page: int
    x0: float
    y0: float
    x1: float
    y1: float
    text: str

    @property
    def area(self) -> float:
        return max(0.0, self.x1 - self.x0) * max(0.0, self.y1 - self.y0)


@dataclass(frozen=True)
class Page:
    number: int
    width: float
    height: float
    words: list


def pdf_pages(pdf: Path) -> list[Page]:
    exe = shutil.which("pdftotext")
    if not exe:
        raise RuntimeError("pdftotext not found (Debian package poppler-utils, env/apt-packages.txt)")
    p = subprocess.run([exe, "-bbox-layout", str(pdf), "-"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"pdftotext -bbox-layout {pdf} failed: {p.stderr.strip().splitlines()[-1:]}")
    pages = []
    for n, m in enumerate(_PAGE.finditer(p.stdout), 1):
        words = []
        for w in _WORD.finditer(m.group(3)):
            text = html.unescape(w.group(5)).translate(_INVISIBLE)
            if text.strip():
                words.append(Word(n, *(float(w.group(i)) for i in range(1, 5)), text))
        pages.append(Page(n, float(m.group(1)), float(m.group(2)), words))
    return pages


def overlaps(page: Page, min_fraction: float = 0.25) -> list[tuple[Word, Word]]:
    """Pairs of words whose boxes share more than `min_fraction` of the smaller box (a sweep over y).

    Boxes span the font's full height, so the lines of a tight table touch; a shared sliver is not an
    overlap, a word printed over another shares a large part of its box."""
    words = sorted(page.words, key=lambda w: w.y0)
    out = []
    for i, a in enumerate(words):
        for b in words[i + 1:]:
            if b.y0 >= a.y1:
                break
            dx = min(a.x1, b.x1) - max(a.x0, b.x0)
            dy = min(a.y1, b.y1) - max(a.y0, b.y0)
            if dx <= 0 or dy <= 0:
                continue
            smaller = min(a.area, b.area)
            if smaller > 0 and dx * dy > min_fraction * smaller:
                out.append((a, b))
    return out


def outside(page: Page, area: tuple[float, float, float, float], tol: float = 1.0) -> list[Word]:
    """Words not inside the text area (x0, y0, x1, y1), the page number below the text excepted."""
    x0, y0, x1, y1 = area
    out = []
    for w in page.words:
        # a word's box spans the font's ascent, which starts above the glyphs of the first line
        ty = max(tol, 0.3 * (w.y1 - w.y0))
        if w.x0 >= x0 - tol and w.x1 <= x1 + tol and w.y0 >= y0 - ty and w.y1 <= y1 + ty:
            continue
        if w.text.strip() == str(page.number) and w.y0 > y1 and x0 <= w.x0 and w.x1 <= x1:
            continue  # the page number in the footer
        out.append(w)
    return out


def _fragments(words: list, gap: float = 4.0) -> list[tuple[float, float, str]]:
    """Runs of words on one line closer than `gap` pt (one table cell's line): (x0, y0, text joined)."""
    out: list[list] = []
    for w in sorted(words, key=lambda w: (round(w.y0, 1), w.x0)):
        last = out[-1] if out else None
        if last and abs(last[1] - w.y0) < 0.5 and 0 <= w.x0 - last[3] < gap:
            last[2] += w.text
            last[3] = w.x1
        else:
            out.append([w.x0, w.y0, w.text, w.x1])
    return [(x0, y0, t) for x0, y0, t, _ in out]


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text.translate(_INVISIBLE))


def missing_claims(pages: list[Page], claims_csv: Path) -> list[str]:
    """claim_ids of claims_csv that are not in the PDF's text (words joined, spaces and soft breaks ignored)."""
    with open(claims_csv, newline="") as f:
        ids = [r["claim_id"] for r in csv.DictReader(f)]
    # a cell that wraps puts the rest of an id on the next line of the same column: join the words of each
    # page column by column (sorted by x, then y) as well as in reading order
    text = "".join(w.text for p in pages for w in p.words)
    by_column = "".join(f[2] for p in pages for f in sorted(_fragments(p.words), key=lambda f: (round(f[0]), f[1])))
    hay = _squash(text) + "\n" + _squash(by_column)
    # typst 0.13 (Quarto 1.7's) maps the hyphen of Libertinus Serif to a space in the PDF's text layer, though
    # the page shows it: compare without hyphens as well (an id still has to be there, character for character)
    bare = hay.replace("-", "")
    return [i for i in ids if _squash(i) not in hay and _squash(i).replace("-", "") not in bare]


def check_pdf(pdf: Path, claims_csv: Path | None = None, settings_dir: Path | None = None) -> list[str]:
    settings = load_settings(settings_dir or Path(__file__).parent)
    pages = pdf_pages(pdf)
    problems = []
    if not pages:
        return [f"{pdf}: no pages"]
    for page in pages:
        area = page_geometry(settings, page.width, page.height)
        for a, b in overlaps(page):
            problems.append(f"{pdf.name} page {page.number}: '{a.text}' at ({a.x0:.0f},{a.y0:.0f}) is printed over "
                            f"'{b.text}' at ({b.x0:.0f},{b.y0:.0f})")
        for w in outside(page, area):
            problems.append(f"{pdf.name} page {page.number}: '{w.text}' at ({w.x0:.0f},{w.y0:.0f})-({w.x1:.0f},{w.y1:.0f}) "
                            f"lies outside the text area ({area[0]:.0f},{area[1]:.0f})-({area[2]:.0f},{area[3]:.0f})")
    if claims_csv is not None:
        for cid in missing_claims(pages, claims_csv):
            problems.append(f"{pdf.name}: claims row {cid} ({claims_csv.name}) is not in the text")
    return problems


# ---------------------------------------------------------------- HTML in headless Chromium

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]

# runs in the page: every table wider than its container must sit in something that scrolls horizontally
_PROBE = r"""
<script>
window.addEventListener('load', () => {
  const out = [];
  document.querySelectorAll('table').forEach((t, i) => {
    const cap = (t.querySelector('caption') || {}).textContent || (t.id || ('table ' + (i + 1)));
    let el = t, scrolls = false;
    while (el && el !== document.body) {
      const s = getComputedStyle(el);
      if ((s.overflowX === 'auto' || s.overflowX === 'scroll') && el.scrollWidth > el.clientWidth - 1) { scrolls = true; break; }
      el = el.parentElement;
    }
    const box = t.getBoundingClientRect();
    const parent = t.parentElement.getBoundingClientRect();
    const clipped = box.width > parent.width + 1 || box.right > document.documentElement.clientWidth + 1;
    out.push({caption: cap.trim().slice(0, 80), width: Math.round(box.width), container: Math.round(parent.width),
              scrolls: scrolls, clipped: clipped});
  });
  document.title = 'STREAMBENCH-TABLES ' + JSON.stringify(out);
});
</script>
"""


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        exe = shutil.which(name)
        if exe:
            return exe
    return None


def html_tables(page: Path, width: int = 1000) -> list[dict]:
    """Width of every table of `page` against its container, measured by headless Chromium at `width` px."""
    exe = chromium()
    if exe is None:
        raise RuntimeError("chromium not found (Debian package chromium, env/apt-packages.txt)")
    with tempfile.TemporaryDirectory(prefix="paper-html-check-") as tmp:
        probe = Path(tmp) / "page.html"
        text = page.read_text()
        probe.write_text(text.replace("</body>", _PROBE + "</body>", 1) if "</body>" in text else text + _PROBE)
        p = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={tmp}/profile", f"--window-size={width},900",
                            "--virtual-time-budget=10000", "--dump-dom", probe.as_uri()],
                           capture_output=True, text=True, timeout=180)
        m = re.search(r"<title>STREAMBENCH-TABLES (.*?)</title>", p.stdout, re.S)
        if not m:
            raise RuntimeError(f"chromium gave no measurement of {page} (exit {p.returncode}): "
                               f"{(p.stderr.strip().splitlines() or ['no output'])[-1]}")
        return json.loads(html.unescape(m.group(1)))


def check_html(page: Path, width: int = 1000) -> list[str]:
    return [f"{page.name}: table '{t['caption']}' is {t['width']} px wide in a {t['container']} px container "
            "and does not scroll" for t in html_tables(page, width) if t["clipped"] and not t["scrolls"]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m paper.checks", description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=["pdf", "html"])
    ap.add_argument("file", type=Path)
    ap.add_argument("--claims", type=Path, default=None, help="claims.csv whose rows must all be in the PDF")
    ap.add_argument("--width", type=int, default=1000, help="browser window width for the HTML check (px)")
    args = ap.parse_args(argv)
    try:
        problems = (check_pdf(args.file, args.claims) if args.kind == "pdf" else check_html(args.file, args.width))
    except (RuntimeError, OSError) as e:
        print(f"paper.checks: error: {e}", file=sys.stderr)
        return 2
    for line in problems[:200]:
        print(line)
    print(f"{args.file}: {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
