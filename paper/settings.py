"""The one source of render settings: paper/_quarto.yml, read by Quarto and by the pandoc + typst path.

Quarto reads `_quarto.yml` itself. `paper/render.py` reads the same file through `load_settings()`:
- `format.typst`: `papersize`, `fontsize`, `margin` (x, y) become pandoc metadata of the typst template,
  `include-in-header` (a file, paper/render-header.typ: table, figure and page-break rules) goes to `pandoc -H`;
- `format.html`: `css` (paper/style.css) and `toc`.
So neither renderer has settings of its own; paper/tests/test_settings.py shows both read them. The PDF
check (paper/checks.py) takes the text area from the same margins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

QUARTO_FILE = "_quarto.yml"
_UNITS = {"pt": 1.0, "mm": 72 / 25.4, "cm": 72 / 2.54, "in": 72.0}
PAPER_SIZES = {"a4": (595.2756, 841.8898), "us-letter": (612.0, 792.0)}


class SettingsError(Exception):
    """One line naming _quarto.yml and the key at fault."""


@dataclass(frozen=True)
class Settings:
    path: Path
    papersize: str
    fontsize: str
    margin_x: str
    margin_y: str
    typst_headers: tuple  # paths of the typst header files
    css: tuple  # paths of the CSS files
    toc: bool

    def typst_metadata(self) -> dict:
        """Metadata of pandoc's typst template (the names Quarto's typst format uses too)."""
        return {"papersize": self.papersize, "fontsize": self.fontsize,
                "margin": {"x": self.margin_x, "y": self.margin_y}}


def length_pt(value: str, where: str = "") -> float:
    m = re.fullmatch(r"\s*([\d.]+)\s*(pt|mm|cm|in)\s*", str(value))
    if not m:
        raise SettingsError(f"{where}: '{value}' is not a length (number with pt, mm, cm or in)")
    return float(m.group(1)) * _UNITS[m.group(2)]


def _files(value, paper: Path, key: str) -> tuple:
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        name = item.get("file") if isinstance(item, dict) else item
        if not isinstance(name, str):
            raise SettingsError(f"{paper / QUARTO_FILE}: {key}: give file names (inline text would be a second copy)")
        path = paper / name
        if not path.is_file():
            raise SettingsError(f"{paper / QUARTO_FILE}: {key}: file {name} not found")
        out.append(path)
    return tuple(out)


def load_settings(paper: Path) -> Settings:
    path = Path(paper) / QUARTO_FILE
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise SettingsError(f"{path}: cannot read ({str(e).splitlines()[0]})") from None
    fmt = (doc or {}).get("format") or {}
    typ, html = fmt.get("typst") or {}, fmt.get("html") or {}
    for key in ("papersize", "fontsize", "margin", "include-in-header"):
        if key not in typ:
            raise SettingsError(f"{path}: format.typst.{key} is missing")
    margin = typ["margin"]
    if not isinstance(margin, dict) or not {"x", "y"} <= set(margin):
        raise SettingsError(f"{path}: format.typst.margin needs x and y")
    for k in ("x", "y"):
        length_pt(margin[k], f"{path}: format.typst.margin.{k}")
    length_pt(typ["fontsize"], f"{path}: format.typst.fontsize")
    if str(typ["papersize"]) not in PAPER_SIZES:
        raise SettingsError(f"{path}: format.typst.papersize '{typ['papersize']}' is not one of {sorted(PAPER_SIZES)}")
    if "css" not in html:
        raise SettingsError(f"{path}: format.html.css is missing")
    return Settings(path=path, papersize=str(typ["papersize"]), fontsize=str(typ["fontsize"]),
                    margin_x=str(margin["x"]), margin_y=str(margin["y"]),
                    typst_headers=_files(typ["include-in-header"], Path(paper), "format.typst.include-in-header"),
                    css=_files(html["css"], Path(paper), "format.html.css"), toc=bool(html.get("toc", False)))


def page_geometry(settings: Settings, width: float, height: float) -> tuple[float, float, float, float]:
    """The text area (x0, y0, x1, y1) in pt of a page of this size, from the margins."""
    mx, my = length_pt(settings.margin_x), length_pt(settings.margin_y)
    return (mx, my, width - mx, height - my)
