"""Coverage of the five studies: every published figure, table and headline claim, and what the artifact does with it.

python -m analysis.coverage --registry analysis/coverage --tables paper/tables \
    --known-figures ID... --known-tables ID...

The registry is one YAML file per study, `analysis/coverage/study-<NNN>.yaml`:

    study: "000"                 # the file's study number (must match the file name)
    title: short name of the study
    items:                       # one entry per published figure, table and headline claim
      - item: Figure 2-4         # the study's own id, or a short quote for a headline claim
        kind: figure             # figure | table | claim
        what: publish latency at 2000 partitions
        # exactly one of:
        ids: [fig:maxtput, tbl:claims#max_tput_2000part_2p2c]   # what reproduces it
        needs: aws scale         # "<scale> scale[: detail]": not reproduced in this build, it can be at that scale
        out_of_scope: reason     # the artifact does not reproduce it, and why
        note: optional caveat

An id is `fig:<figure id>` or `tbl:<table id>` (ids the DAG builds: paper/figures/<id>, paper/tables/<id>),
`tbl:<table id>#<row>` (the rows of that table whose first column equals <row> or holds it as whole
':'-separated fields, e.g. `claims#T2-2` or `claims#max_tput_1part_2p2c`), or `gen:durability` (the durability
table paper.render prepare writes from systems/durability.yaml). Scales: `published` (study 000's published
result files hold the data; the figure or table is not drawn yet), `local`, `ci`, `aws` (the testbed profiles).

Writes `coverage` (one row per item) and `coverage-counts` (per study: items, mapped, needs a scale, out of
scope) as `<id>.csv` and `<id>.md`. Bad input is one line naming the file and the field (exit 2), before any output.
"""
from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

import yaml

from . import InputError, cli

REGISTRY_DIR = Path("analysis/coverage")
STUDIES = ("000", "001", "002", "003", "004")
KINDS = ("figure", "table", "claim")
SCALES = ("published", "local", "ci", "aws")
STATUS_KEYS = ("ids", "needs", "out_of_scope")
ITEM_KEYS = {"item", "kind", "what", "note", *STATUS_KEYS}
FILE_KEYS = {"study", "title", "items"}
# outputs of paper.render prepare (paper/_generated/<name>.md) that a registry entry may name
GENERATED = ("durability",)
ID_RE = re.compile(r"(fig|tbl|gen):([a-z0-9][a-z0-9-]*)(?:#([^#\s]+))?")
NEEDS_RE = re.compile(rf"({'|'.join(SCALES)}) scale(?:: (\S.*))?")
TABLE_IDS = ["coverage", "coverage-counts"]
COLUMNS = ["study", "item", "kind", "what", "status", "reproduced_by", "note"]
COUNT_COLUMNS = ["study", "title", "items", "mapped", "needs_scale", "out_of_scope"]


def _text(path, field, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(path, field, f"must be a non-empty string, got {value!r}")
    return value.strip()


def parse_id(path, field, ref) -> tuple[str, str, str | None]:
    """('fig'|'tbl'|'gen', id, row key or None) of one `ids` element."""
    m = ID_RE.fullmatch(ref) if isinstance(ref, str) else None
    if not m:
        raise InputError(path, field, f"{ref!r} is not fig:<id>, tbl:<id>, tbl:<id>#<row> or gen:<name>")
    kind, name, row = m.groups()
    if row is not None and kind != "tbl":
        raise InputError(path, field, f"{ref!r}: only a table id can name a row (#{row})")
    if kind == "gen" and name not in GENERATED:
        raise InputError(path, field, f"{ref!r}: paper.render prepare writes no '{name}' (known: {', '.join(GENERATED)})")
    return kind, name, row


def _item(path, i: int, e) -> dict:
    where = f"items[{i}]"
    if not isinstance(e, dict):
        raise InputError(path, where, f"must be a mapping, got {type(e).__name__}")
    extra = sorted(set(e) - ITEM_KEYS)
    if extra:
        raise InputError(path, f"{where}.{extra[0]}", f"unknown key (allowed: {', '.join(sorted(ITEM_KEYS))})")
    out = {"item": _text(path, f"{where}.item", e.get("item"))}
    where = f"items[{i}] ({out['item']})"
    if e.get("kind") not in KINDS:
        raise InputError(path, f"{where}.kind", f"must be one of {', '.join(KINDS)}, got {e.get('kind')!r}")
    out["kind"] = e["kind"]
    out["what"] = _text(path, f"{where}.what", e.get("what"))
    out["note"] = _text(path, f"{where}.note", e["note"]) if "note" in e else ""
    given = [k for k in STATUS_KEYS if k in e]
    if len(given) != 1:
        raise InputError(path, where, f"needs exactly one of {', '.join(STATUS_KEYS)}, has {', '.join(given) or 'none'}")
    key = given[0]
    if key == "ids":
        ids = e["ids"]
        if not isinstance(ids, list) or not ids:
            raise InputError(path, f"{where}.ids", f"must be a non-empty list, got {ids!r}")
        for j, ref in enumerate(ids):
            parse_id(path, f"{where}.ids[{j}]", ref)
        if len(set(ids)) != len(ids):
            raise InputError(path, f"{where}.ids", "names an id twice")
        out["ids"] = list(ids)
    elif key == "needs":
        v = _text(path, f"{where}.needs", e["needs"])
        if not NEEDS_RE.fullmatch(v):
            raise InputError(path, f"{where}.needs", f"{v!r} is not '<scale> scale[: detail]' with a scale of {', '.join(SCALES)}")
        out["needs"] = v
    else:
        out["out_of_scope"] = _text(path, f"{where}.out_of_scope", e["out_of_scope"])
    return out


def load_file(path: Path) -> dict:
    """One study's registry file, checked (InputError naming the file and the field on bad input)."""
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(path, "(file)", f"unreadable: {e.strerror}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputError(path, "(file)", f"not YAML (line {mark.line + 1 if mark else '?'})") from None
    if not isinstance(doc, dict):
        raise InputError(path, "(file)", "must be a mapping with study, title and items")
    extra = sorted(set(doc) - FILE_KEYS)
    if extra:
        raise InputError(path, extra[0], f"unknown key (allowed: {', '.join(sorted(FILE_KEYS))})")
    study = doc.get("study")
    if study not in STUDIES:
        raise InputError(path, "study", f"must be one of {', '.join(STUDIES)} as a quoted string, got {study!r}")
    if Path(path).name != f"study-{study}.yaml":
        raise InputError(path, "study", f"{study!r} does not match the file name (expected study-{study}.yaml)")
    title = _text(path, "title", doc.get("title"))
    items = doc.get("items")
    if not isinstance(items, list) or not items:
        raise InputError(path, "items", "must be a non-empty list")
    out = [_item(path, i, e) for i, e in enumerate(items)]
    seen = set()
    for i, e in enumerate(out):
        if e["item"] in seen:
            raise InputError(path, f"items[{i}].item", f"{e['item']!r} is listed twice")
        seen.add(e["item"])
    return {"study": study, "title": title, "items": out, "path": str(path)}


def load(registry: Path = REGISTRY_DIR) -> list[dict]:
    """Every study's file, in study order; a missing or unexpected file is an error naming it."""
    registry = Path(registry)
    files = sorted(registry.glob("*.yaml"))
    for f in files:
        if not re.fullmatch(r"study-\d{3}\.yaml", f.name):
            raise InputError(f, "(file)", "unexpected file name (expected study-<NNN>.yaml)")
    names = {f.name for f in files}
    for s in STUDIES:
        if f"study-{s}.yaml" not in names:
            raise InputError(registry / f"study-{s}.yaml", "(file)", "missing: every study needs its registry file")
    return [load_file(registry / f"study-{s}.yaml") for s in STUDIES]


def status(e: dict) -> str:
    return "mapped" if "ids" in e else "needs scale" if "needs" in e else "out of scope"


def row_tables(studies: list[dict]) -> list[str]:
    """Table ids whose rows an entry names (their CSV is needed to check the rows)."""
    return sorted({parse_id("", "", r)[1] for s in studies for e in s["items"] for r in e.get("ids", ())
                   if "#" in r})


def row_matches(key: str, value: str) -> bool:
    """`claims#T2-2` names 'T2-2:pulsar-ack-1-100:avg'; `claims#max_tput_1part_2p2c` names
    'R004:max_tput_1part_2p2c:kafka:…': the key is the value, or whole ':'-separated fields of it."""
    return f":{key}:" in f":{value}:"


def first_column(csv_path: Path) -> list[str]:
    with open(csv_path, newline="", encoding="utf-8") as f:
        r = csv.reader(f)
        next(r, None)
        return [row[0] for row in r if row]


def check_ids(studies: list[dict], figures, tables, tables_dir: Path | None = None) -> None:
    """Every id an entry names is one the DAG builds (figures / tables given), and every row it names is in
    that table's CSV under tables_dir (when tables_dir is given)."""
    figures, tables = set(figures), set(tables)
    rows_of = {}
    for s in studies:
        for i, e in enumerate(s["items"]):
            for j, ref in enumerate(e.get("ids", ())):
                field = f"items[{i}] ({e['item']}).ids[{j}]"
                kind, name, row = parse_id(s["path"], field, ref)
                known = figures if kind == "fig" else tables if kind == "tbl" else set(GENERATED)
                if name not in known:
                    what = {"fig": "figure", "tbl": "table", "gen": "generated file"}[kind]
                    raise InputError(s["path"], field, f"{ref!r}: no rule builds the {what} '{name}'")
                if row is None or tables_dir is None:
                    continue
                if name not in rows_of:
                    p = Path(tables_dir) / f"{name}.csv"
                    if not p.exists():
                        raise InputError(s["path"], field, f"{ref!r}: {p} not found (build the table first)")
                    rows_of[name] = first_column(p)
                if not any(row_matches(row, v) for v in rows_of[name]):
                    raise InputError(s["path"], field, f"{ref!r}: no row of {name} is '{row}' or has it as a field")


def _status_text(e: dict) -> str:
    if "ids" in e:
        return "mapped"
    if "needs" in e:
        return f"needs {e['needs']}"
    return f"out of scope: {e['out_of_scope']}"


def table_rows(studies: list[dict]) -> list[dict]:
    return [{"study": s["study"], "item": e["item"], "kind": e["kind"], "what": e["what"],
             "status": _status_text(e), "reproduced_by": ", ".join(e.get("ids", ())), "note": e["note"]}
            for s in studies for e in s["items"]]


def counts(studies: list[dict]) -> dict:
    """{study: {items, mapped, needs_scale, out_of_scope}} plus 'all'."""
    out = {}
    for s in studies:
        st = [status(e) for e in s["items"]]
        out[s["study"]] = {"items": len(st), "mapped": st.count("mapped"), "needs_scale": st.count("needs scale"),
                           "out_of_scope": st.count("out of scope")}
    out["all"] = {k: sum(c[k] for c in out.values()) for k in ("items", "mapped", "needs_scale", "out_of_scope")}
    return out


def variables(registry: Path = REGISTRY_DIR) -> dict:
    """The `coverage.*` keys of paper/_variables.yml: coverage.study000.mapped … coverage.all.out_of_scope."""
    return {("all" if k == "all" else f"study{k}"): v for k, v in counts(load(registry)).items()}


def count_rows(studies: list[dict]) -> list[dict]:
    c = counts(studies)
    rows = [{"study": s["study"], "title": s["title"], **c[s["study"]]} for s in studies]
    return rows + [{"study": "all", "title": "", **c["all"]}]


def _md_cell(v) -> str:
    return str(v).replace("|", "/").replace("\n", " ")


def to_md(cols, rows) -> str:
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(_md_cell(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def to_csv(cols, rows) -> str:
    import io
    b = io.StringIO()
    w = csv.DictWriter(b, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerows({c: r[c] for c in cols} for r in rows)
    return b.getvalue()


def write(studies: list[dict], out: Path) -> None:
    from .report import write_text_atomic
    for tid, cols, rows in (("coverage", COLUMNS, table_rows(studies)),
                            ("coverage-counts", COUNT_COLUMNS, count_rows(studies))):
        write_text_atomic(Path(out) / f"{tid}.csv", to_csv(cols, rows))
        write_text_atomic(Path(out) / f"{tid}.md", to_md(cols, rows))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--registry", type=Path, default=REGISTRY_DIR)
    ap.add_argument("--tables", type=Path, required=True, help="paper/tables: the output, and the CSVs of named rows")
    ap.add_argument("--known-figures", nargs="*", default=[], help="figure ids the DAG builds")
    ap.add_argument("--known-tables", nargs="*", default=[], help="table ids the DAG builds")
    a = ap.parse_args(argv)

    def body():
        studies = load(a.registry)
        check_ids(studies, a.known_figures, a.known_tables, a.tables)
        write(studies, a.tables)
        c = counts(studies)["all"]
        print(f"coverage: {c['items']} items; {c['mapped']} mapped, {c['needs_scale']} need a scale, "
              f"{c['out_of_scope']} out of scope")

    return cli(body)


if __name__ == "__main__":
    sys.exit(main())
