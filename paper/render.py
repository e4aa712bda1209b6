"""Render the paper: Quarto where it exists, else the same sources with pandoc + typst.

    python -m paper.render [--paper paper] [--renderer auto|quarto|pandoc]   # -> paper/_build/paper.{html,pdf}
    python -m paper.render prepare [--paper paper]                          # only the generated snippets
    python -m paper.render check [--paper paper]                            # expand shortcodes, report errors

Steps
1. prepare: write paper/_generated/
   - fig-<id>.md for every id in paper/ids.py: `![caption](figures/<id>.svg){#fig-<id> fig-alt="alt"}`,
     with caption and alt text read from paper/figures/<id>.json (made by analysis);
   - durability.md: the table of the durability levels, read from systems/durability.yaml.
   paper.md includes these with `{{< include _generated/... >}}`, so Quarto and pandoc see the same text.
2. expand (pandoc path; also run as a check before Quarto): `{{< include FILE >}}` (recursive; as in
   Quarto, the path is relative to the main document's folder paper/, in included files too) and `{{< var a.b >}}` (from paper/_variables.yml). A missing file, an unknown
   key or any other shortcode is an error naming the key/file and the source file and line.
3. cross-references (pandoc path): `@fig-x` / `@tbl-x` become "Figure N" / "Table N" in document order,
   as Quarto numbers them; HTML captions get the "Figure N:" prefix, typst numbers its own figures.
   A reference followed directly by `;`, `(`, `[` or `.word` is an error on both paths: Quarto's typst writes it
   as code, `#ref(<tbl-x>, ...)`, which swallows the `;` or fails to compile (docs/quarto-by-hand.md).
4. pandoc -> standalone HTML with embedded figures; pandoc -t typst -> typst.compile -> PDF.
Every output is written to a temp file and renamed, so a failed render leaves no half-written paper.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from paper.ids import FIGURE_IDS, TABLE_IDS
from paper.settings import SettingsError, load_settings

MAIN = "paper.md"
OUT_NAME = "paper"


class RenderError(Exception):
    """One-line error naming the file (and key or field) at fault."""


def _rel(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # pragma: no cover - other drive on Windows
        return str(path)


def write_atomic(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ---------------------------------------------------------------- step 1: generated snippets

def _md_escape(text: str) -> str:
    return re.sub(r"([\\\[\]*_`<>#])", r"\\\1", " ".join(text.split()))


def _attr_escape(text: str) -> str:
    return " ".join(text.split()).replace("\\", "\\\\").replace('"', '\\"')


def figure_snippet(fig_id: str, meta_path: Path) -> str:
    """The markdown image for one figure, caption and alt text from its JSON."""
    if not meta_path.exists():
        raise RenderError(f"{_rel(meta_path)}: missing (analysis makes it with the figure)")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as e:
        raise RenderError(f"{_rel(meta_path)}: not valid JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(meta, dict):
        raise RenderError(f"{_rel(meta_path)}: expected a JSON object with 'caption' and 'alt'")
    for field in ("caption", "alt"):
        if not isinstance(meta.get(field), str) or not meta[field].strip():
            raise RenderError(f"{_rel(meta_path)}: field '{field}' is missing or not a non-empty string")
    svg = meta_path.with_suffix(".svg")
    if not svg.exists():
        raise RenderError(f"{_rel(svg)}: missing (analysis makes it with {meta_path.name})")
    return (f"![{_md_escape(meta['caption'])}](figures/{fig_id}.svg)"
            f'{{#fig-{fig_id} fig-alt="{_attr_escape(meta["alt"])}"}}\n')


def _settings(d: dict | None) -> str:
    if not d:
        return ""
    return ", ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in d.items())


def durability_table(path: Path) -> str:
    """Markdown table of the durability levels from systems/durability.yaml (the one definition)."""
    if not path.exists():
        raise RenderError(f"{_rel(path)}: missing (systems/ defines the durability levels there)")
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise RenderError(f"{_rel(path)}: not valid YAML ({str(e).splitlines()[0]})") from None
    levels = doc.get("levels") if isinstance(doc, dict) else None
    if not isinstance(levels, dict) or not levels:
        raise RenderError(f"{_rel(path)}: field 'levels' is missing or empty")
    # dashes set the relative column widths of a wide pipe table (pandoc)
    rows = ["| Level | Replication | Local | Kafka | Pulsar | Pravega |",
            "|----|-----|----|------------|------------|----------|"]
    for name, lv in levels.items():
        where = f"{_rel(path)}: field 'levels.{name}"
        if not isinstance(lv, dict):
            raise RenderError(f"{where}' is not a mapping")
        for field in ("replication", "local"):
            if not isinstance(lv.get(field), str):
                raise RenderError(f"{where}.{field}' is missing")
        for system in ("kafka", "pulsar", "pravega"):
            if system not in lv:
                raise RenderError(f"{where}.{system}' is missing (null means n/a)")
        k = lv["kafka"]
        if k is None:
            kafka = "n/a (no journal to bypass)"
        elif isinstance(k, dict):
            rf = {"replication.factor": k["replicationFactor"]} if k.get("replicationFactor") else None
            kafka = ", ".join(x for x in (_settings(rf), _settings(k.get("producer")), _settings(k.get("topic"))) if x)
        else:
            raise RenderError(f"{where}.kafka' is not a mapping or null")
        p = lv["pulsar"]
        if p is None:
            pulsar = "n/a"
        elif isinstance(p, dict):
            per = p.get("persistence") or {}
            quorum = (f"E{per.get('ensemble')}/W{per.get('writeQuorum')}/A{per.get('ackQuorum')}"
                      if per else "")
            pulsar = ", ".join(x for x in (quorum, _settings(p.get("bookie"))) if x)
        else:
            raise RenderError(f"{where}.pulsar' is not a mapping or null")
        v = lv["pravega"]
        if v is None:
            pravega = "n/a (no bypass: the segment store acknowledges only what its BookKeeper log holds)"
        elif isinstance(v, dict):
            bk = v.get("bookkeeper") or {}
            quorum = f"E{bk.get('ensemble')}/W{bk.get('writeQuorum')}/A{bk.get('ackQuorum')}" if bk else ""
            bookie = v.get("bookie")
            same = isinstance(p, dict) and bookie and bookie == p.get("bookie")
            pravega = ", ".join(x for x in (quorum, "bookies as Pulsar's" if same else _settings(bookie)) if x)
        else:
            raise RenderError(f"{where}.pravega' is not a mapping or null")
        rows.append(f"| {name} | {lv['replication']} | {lv['local']} | {kafka} | {pulsar} | {pravega} |")
    return "\n".join(rows) + "\n"


PUBLISHED_PROFILE = "env/profiles/published"
BUILD_HINT = "env/shell snakemake --profile published paper/_build/paper.pdf"


def analysis_outputs(paper: Path) -> list[Path]:
    """The files of the analysis stage that the paper includes (paper/ids.py)."""
    return [*(paper / "figures" / f"{i}.{ext}" for i in FIGURE_IDS for ext in ("svg", "json")),
            *(paper / "tables" / f"{t}.md" for t in TABLE_IDS), paper / "_variables.yml"]


def ensure_analysis_outputs(paper: Path) -> None:
    """Build missing figures, tables and _variables.yml with the published-only part of the DAG
    (`snakemake --profile published`: no probe, no cluster) so a fresh checkout renders; one-line error otherwise."""
    missing = [f for f in analysis_outputs(paper) if not f.exists()]
    if not missing:
        return
    root = paper.parent
    targets = [os.path.relpath(f, root) for f in missing]
    if not (root / "Snakefile").is_file() or os.environ.get("STREAMBENCH_PAPER_NO_BUILD"):
        more = f" (and {len(missing) - 1} more analysis outputs)" if len(missing) > 1 else ""
        raise RenderError(f"{_rel(missing[0])}: missing{more}; run: {BUILD_HINT}")
    log = root / "logs" / "paper" / "published-dag.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    print(f"paper.render: {len(missing)} analysis output(s) missing, building them from the published data "
          f"(snakemake --profile published, log {_rel(log)})", file=sys.stderr)
    with open(log, "w") as out:
        p = subprocess.run([sys.executable, "-m", "snakemake", "--profile", str(root / PUBLISHED_PROFILE), *targets],
                           cwd=root, stdout=out, stderr=subprocess.STDOUT,
                           env=dict(os.environ, STREAMBENCH_PAPER_NO_BUILD="1"))
    still = [f for f in missing if not f.exists()]
    if p.returncode != 0 or still:
        raise RenderError(f"building the analysis outputs failed (snakemake exit {p.returncode}, log {_rel(log)}); "
                          f"run: {BUILD_HINT}")


REBUILD = "env/shell snakemake --profile published {target}"
_FIGURE_READS = "data/derived/*.parquet, data/reference/studies.csv"
_TABLE_READS = _FIGURE_READS + ", analysis/published/study000-tables.csv"
# study 003 (analysis/study003.py) reads this project's fan-out result files, not the derived tables
_STUDY003_READS = "data/raw/ (the study-003 workloads' result files), data/reference/studies.csv"
# so does study 001 (analysis/study001.py), its study's workloads
_STUDY001_READS = "data/raw/ (the study-001 workloads' result files), data/reference/studies.csv"
# the coverage tables (analysis/coverage.py) read the registry alone
_COVERAGE_READS = "analysis/coverage/*.yaml"


# and studies 002 and 004 (analysis/study002.py, study004.py), their experiments' result files
_STUDY_READS = {"study001-": _STUDY001_READS, "study003-": _STUDY003_READS,
                "study002-": "data/raw/ (the E002-LAT result files), data/reference/studies.csv",
                "study004-": "data/raw/ (the E004-* result files), data/reference/studies.csv"}


def _own_reads(name: str) -> str | None:
    if name.startswith("coverage"):
        return _COVERAGE_READS
    return next((reads for prefix, reads in _STUDY_READS.items() if name.startswith(prefix)), None)


def reviewer_rows() -> list[tuple[str, str, str]]:
    """(what, command, reads) for every figure and table of the paper (paper/ids.py)."""
    rows = [(f"Figure `{i}`", REBUILD.format(target=f"paper/figures/{i}.svg"),
             _own_reads(i) or _FIGURE_READS) for i in FIGURE_IDS]
    debate = "data/published/confluent-2020/, data/derived/runs.parquet, data/derived/stats.parquet"
    rows += [(f"Table `{t}`", REBUILD.format(target=f"paper/tables/{t}.md"),
              debate if t in ("debate-2020", "confluent-2020-files") else
              _own_reads(t) or _TABLE_READS) for t in TABLE_IDS]
    return rows


def reviewer_table() -> str:
    out = ["| figure / table | command | reads |", "|---|---|---|"]
    out += [f"| {what} | `{cmd}` | {reads} |" for what, cmd, reads in reviewer_rows()]
    return "\n".join(out) + "\n"


def prepare(paper: Path, durability: Path | None = None, build: bool = True) -> list[Path]:
    """Write paper/_generated/ (figure snippets, durability table); return the files written.
    With `build`, missing analysis outputs are first made from the published data (ensure_analysis_outputs)."""
    if build:
        ensure_analysis_outputs(paper)
    gen = paper / "_generated"
    durability = durability or paper.parent / "systems" / "durability.yaml"
    todo = {gen / f"fig-{i}.md": figure_snippet(i, paper / "figures" / f"{i}.json") for i in FIGURE_IDS}
    todo[gen / "durability.md"] = durability_table(durability)
    todo[gen / "reviewer.md"] = reviewer_table()
    for path, text in todo.items():  # all checked before any is written
        write_atomic(path, text)
    return list(todo)


# ---------------------------------------------------------------- step 2: shortcodes

_ESCAPED = re.compile(r"\{\{\{<(.*?)>\}\}\}")
_SHORTCODE = re.compile(r"\{\{<\s*([A-Za-z][\w-]*)\s*(.*?)\s*>\}\}")


def load_variables(path: Path) -> dict:
    if not path.exists():
        raise RenderError(f"{_rel(path)}: missing (analysis writes it: python -m analysis.report)")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise RenderError(f"{_rel(path)}: not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise RenderError(f"{_rel(path)}: expected a mapping of keys to values")
    return data


def lookup(variables: dict, key: str, varfile: Path, where: str) -> str:
    cur = variables
    for part in key.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise RenderError(f"{where}: {{{{< var {key} >}}}}: no key '{key}' in {_rel(varfile)}")
        cur = cur[part]
    if cur is None or isinstance(cur, (dict, list)):
        kind = "null" if cur is None else type(cur).__name__
        raise RenderError(f"{where}: {{{{< var {key} >}}}}: '{key}' in {_rel(varfile)} is a {kind}, not a value")
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


# Quarto 1.7 writes a cross-reference into its typst file as code, `#ref(<tbl-x>, supplement: [Table])`, and typst
# reads the character right after such code as more of it. The pandoc path writes `@tbl-x` and shows none of this,
# so both paths reject these followers in the sources (found by rendering with Quarto itself: docs/quarto-by-hand.md).
_REF_AS_CODE = re.compile(r"(?<![\w@\\])@((?:fig|tbl)-[\w-]*\w)(;|\(|\[|\.[^\W\d])")
_AS_CODE = {";": "takes ';' as the end of the expression: the PDF loses it",
            "(": "takes '(' as a call of the result: the PDF fails to compile",
            "[": "takes '[' as a content argument: the PDF fails to compile",
            ".": "takes '.' and a word as a field access: the PDF fails to compile"}


def expand(path: Path, variables: dict, varfile: Path, _stack: tuple = (), root: Path | None = None) -> str:
    """The text of `path` with every include and var shortcode replaced.

    As in Quarto, an include is pasted text: a relative include path is resolved against the directory
    of the main document (`root`, default: the directory of `path`), also inside included files, and
    a path starting with `/` against the project folder (the same directory here)."""
    path = path.resolve()
    root = (root or path.parent).resolve()
    if path in _stack:
        raise RenderError(f"{_rel(_stack[-1])}: include cycle through {_rel(path)}")
    out = []
    for lineno, line in enumerate(path.read_text().splitlines(keepends=True), 1):
        where = f"{_rel(path)}:{lineno}"
        escaped: list[str] = []

        def keep(m):
            escaped.append("{{<" + m.group(1) + ">}}")
            return f"\x00{len(escaped) - 1}\x00"

        line = _ESCAPED.sub(keep, line)
        bad = _REF_AS_CODE.search(line)
        if bad:
            ref, after = bad.group(1), bad.group(2)
            raise RenderError(f"{where}: '@{ref}{after}': Quarto's typst writer makes the reference code "
                              f"(#ref(<{ref}>, ...)) and typst {_AS_CODE[after[0]]}; put a space or a comma after it")

        def sub(m):
            name, arg = m.group(1), m.group(2).strip()
            if name == "var":
                if not arg or " " in arg:
                    raise RenderError(f"{where}: {m.group(0)}: var takes exactly one key")
                return lookup(variables, arg, varfile, where)
            if name == "include":
                if not arg:
                    raise RenderError(f"{where}: {m.group(0)}: include needs a file")
                target = root / arg.strip("\"'").lstrip("/")
                if not target.is_file():
                    raise RenderError(f"{where}: {{{{< include {arg} >}}}}: file {_rel(target)} not found")
                text = expand(target, variables, varfile, _stack + (path,), root)
                return text if text.endswith("\n") else text + "\n"
            raise RenderError(f"{where}: {m.group(0)}: unknown shortcode '{name}' (only include and var)")

        line = _SHORTCODE.sub(sub, line)
        line = re.sub("\x00(\\d+)\x00", lambda m: escaped[int(m.group(1))], line)
        out.append(line)
    return "".join(out)


# ---------------------------------------------------------------- step 3: cross-references

_FIG_DEF = re.compile(r"!\[((?:[^\]\\]|\\.)*)\]\(([^)\s]+)\)\{#(fig-[\w-]+)([^}]*)\}")
# a table caption paragraph: starts with ": ", may wrap over several lines, ends with {#tbl-id}
_TBL_DEF = re.compile(r"^(:[ \t]+)((?:[^\n]+\n)*?[^\n]*?)[ \t]*\{#(tbl-[\w-]+)\}[ \t]*$", re.MULTILINE)
_REF = re.compile(r"(?<![\w@\\])@((?:fig|tbl)-[\w-]*\w)")


def crossref(md: str, fmt: str, source: str = MAIN) -> str:
    """Number figures and tables in document order and resolve @fig-/@tbl- references for `fmt`."""
    fig_ids = [m.group(3) for m in _FIG_DEF.finditer(md)]
    tbl_ids = [m.group(3) for m in _TBL_DEF.finditer(md)]
    for ids, kind in ((fig_ids, "figure"), (tbl_ids, "table")):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise RenderError(f"{source}: {kind} id {dup[0]} is defined twice")
    figs = {i: n for n, i in enumerate(fig_ids, 1)}
    tbls = {i: n for n, i in enumerate(tbl_ids, 1)}

    def ref(m):
        key = m.group(1)
        table = figs if key.startswith("fig-") else tbls
        if key not in table:
            raise RenderError(f"{source}: reference @{key} points to no {'figure' if key.startswith('fig-') else 'table'}")
        if fmt == "typst":
            return f"`@{key}`{{=typst}}"
        return f"[{'Figure' if key.startswith('fig-') else 'Table'}&nbsp;{table[key]}](#{key})"

    def fig(m):
        caption, src, fid, attrs = m.groups()
        attrs = attrs.replace("fig-alt=", "alt=")
        if fmt != "typst":
            caption = f"Figure {figs[fid]}: {caption}"
        return f"![{caption}]({src}){{#{fid}{attrs}}}"

    def tbl(m):
        lead, caption, tid = m.groups()
        if fmt != "typst":
            caption = f"Table {tbls[tid]}: {caption}"
        return f"{lead}{caption} {{#{tid}}}"

    md = _REF.sub(ref, md)
    md = _FIG_DEF.sub(fig, md)
    return _TBL_DEF.sub(tbl, md)


# ---------------------------------------------------------------- step 4: renderers

def pandoc_path() -> str:
    exe = shutil.which("pandoc")
    if exe:
        return exe
    try:
        import pypandoc
        return pypandoc.get_pandoc_path()
    except (ImportError, OSError) as e:
        raise RenderError(f"pandoc not found on PATH and pypandoc-binary is not installed ({e})") from None


def _run(cmd: list[str], what: str) -> None:
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["no output"])[-1]
        raise RenderError(f"{what} failed (exit {p.returncode}): {last}")


def source_date_epoch(paper: Path) -> int:
    """The date the PDF records (byte-identical reruns): $SOURCE_DATE_EPOCH (env/shell and the flake set it to
    the last commit's time), else the last commit's time, else 0."""
    value = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not value:
        p = subprocess.run(["git", "-C", str(paper), "log", "-1", "--format=%ct"], capture_output=True, text=True)
        value = p.stdout.strip() if p.returncode == 0 else ""
    try:
        return int(value or 0)
    except ValueError:
        raise RenderError(f"SOURCE_DATE_EPOCH: '{value}' is not a number of seconds") from None


def render_pandoc(paper: Path, out_dir: Path) -> dict[str, Path]:
    varfile = paper / "_variables.yml"
    md = expand(paper / MAIN, load_variables(varfile), varfile)
    pandoc = pandoc_path()
    out_dir.mkdir(parents=True, exist_ok=True)
    tag = f".render-{os.getpid()}"
    html_md, typ_md = paper / f"{tag}.html.md", paper / f"{tag}.typst.md"
    typ = paper / f"{tag}.typ"
    html_tmp, pdf_tmp = out_dir / f"{tag}.html", out_dir / f"{tag}.pdf"
    try:
        html_md.write_text(crossref(md, "html"))
        typ_md.write_text(crossref(md, "typst"))
        settings = load_settings(paper)  # _quarto.yml: the settings Quarto reads too
        meta = paper / f"{tag}.meta.yml"
        meta.write_text(yaml.safe_dump(settings.typst_metadata(), sort_keys=True))
        common = ["--from=markdown", "--standalone", "--number-sections", f"--resource-path={paper}"]
        _run([pandoc, str(html_md), *common, "--to=html5", *(["--toc"] if settings.toc else []), "--embed-resources",
              *(f"--css={c}" for c in settings.css), "--metadata=lang:en", f"--output={html_tmp}"],
             "pandoc (HTML)")
        # pandoc's default line width, as in Quarto (whose `columns` key means page columns in typst): pipe
        # tables with long rows get relative column widths in both renderers
        _run([pandoc, str(typ_md), *common, "--to=typst", f"--metadata-file={meta}",
              *(f"--include-in-header={h}" for h in settings.typst_headers), f"--output={typ}"], "pandoc (typst)")
        import typst
        try:
            typst.compile(str(typ), output=str(pdf_tmp), root=str(paper), timestamp=source_date_epoch(paper))
        except Exception as e:  # typst.TypstError and friends
            raise RenderError(f"typst compile of {_rel(typ)} failed: {str(e).splitlines()[0]}") from None
        outputs = {"html": out_dir / f"{OUT_NAME}.html", "pdf": out_dir / f"{OUT_NAME}.pdf"}
        os.replace(html_tmp, outputs["html"])
        os.replace(pdf_tmp, outputs["pdf"])
        return outputs
    finally:
        for f in (html_md, typ_md, typ, html_tmp, pdf_tmp, paper / f"{tag}.meta.yml"):
            if f.exists():
                f.unlink()


def render_quarto(paper: Path, out_dir: Path) -> dict[str, Path]:
    varfile = paper / "_variables.yml"
    expand(paper / MAIN, load_variables(varfile), varfile)  # same errors as the pandoc path, before Quarto runs
    quarto = shutil.which("quarto")
    if not quarto:
        raise RenderError("quarto not found on PATH (use --renderer pandoc)")
    _run([quarto, "render", str(paper)], "quarto render")
    outputs = {"html": paper / "_build" / f"{OUT_NAME}.html", "pdf": paper / "_build" / f"{OUT_NAME}.pdf"}
    for kind, path in outputs.items():
        if not path.exists():
            raise RenderError(f"quarto render wrote no {_rel(path)}")
        if out_dir.resolve() != path.parent.resolve():
            out_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out_dir / path.name)
            outputs[kind] = out_dir / path.name
    return outputs


def choose(renderer: str) -> str:
    if renderer == "auto":
        return "quarto" if shutil.which("quarto") else "pandoc"
    if renderer not in ("quarto", "pandoc"):
        raise RenderError(f"config paper.renderer: '{renderer}' is not one of auto, quarto, pandoc")
    return renderer


def render(paper: Path, renderer: str = "auto", out_dir: Path | None = None,
           durability: Path | None = None) -> dict[str, Path]:
    paper = paper.resolve()
    out_dir = (out_dir or paper / "_build").resolve()
    prepare(paper, durability)
    return (render_quarto if choose(renderer) == "quarto" else render_pandoc)(paper, out_dir)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m paper.render", description=__doc__.split("\n\n")[0])
    ap.add_argument("step", nargs="?", default="render", choices=["render", "prepare", "check"])
    ap.add_argument("--paper", default=str(Path(__file__).parent), help="the Quarto project folder")
    ap.add_argument("--renderer", default="auto", help="auto (quarto if on PATH), quarto or pandoc")
    ap.add_argument("--out-dir", default=None, help="where paper.html and paper.pdf go (default PAPER/_build)")
    ap.add_argument("--durability", default=None, help="durability levels file (default: ../systems/durability.yaml)")
    args = ap.parse_args(argv)
    paper = Path(args.paper)
    try:
        if args.step == "prepare":
            prepare(paper.resolve(), Path(args.durability) if args.durability else None)
        elif args.step == "check":
            prepare(paper.resolve(), Path(args.durability) if args.durability else None)
            varfile = paper / "_variables.yml"
            expand(paper / MAIN, load_variables(varfile), varfile)
        else:
            t0 = time.perf_counter()
            outs = render(paper, args.renderer, Path(args.out_dir) if args.out_dir else None,
                          Path(args.durability) if args.durability else None)
            print(f"rendered {', '.join(_rel(p) for p in outs.values())} in {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr)
    except (RenderError, SettingsError) as e:
        print(f"paper.render: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
