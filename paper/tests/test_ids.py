"""CONTRIBUTING.md's list of figure and table ids names every id the DAG builds (so it cannot drift again)."""

import ast
import itertools
import re
from pathlib import Path

from paper.ids import FIGURE_IDS, TABLE_IDS

from .conftest import ROOT

RULE_FILES = [*sorted((ROOT / "analysis").glob("*.smk")), ROOT / "paper" / "rules.smk"]
ID_LIST = re.compile(r"^(AN_\w*(?:FIGURES|TABLES))\s*=", re.M)
LITERAL_PATH = re.compile(r"[\"']paper/(?:figures|tables)/([A-Za-z0-9_-]+)\.(?:svg|png|pdf|json|csv|md)[\"']")


def _statement(text: str, start: int) -> ast.Assign:
    """The Python assignment that begins at offset `start` of a rules file (it may span several lines)."""
    lines = text[start:].splitlines()
    for n in range(1, len(lines) + 1):
        try:
            (stmt,) = ast.parse("\n".join(lines[:n])).body
            return stmt
        except SyntaxError:
            continue
    raise AssertionError(f"unparsable assignment at offset {start}")


def ids_in_rules(path: Path) -> set[str]:
    """Figure and table ids a rules file builds: its AN_*FIGURES / AN_*TABLES lists (plain literals or
    comprehensions, evaluated without builtins) and the literal paper/{figures,tables}/<id>.<ext> outputs."""
    text = path.read_text()
    ids = set(LITERAL_PATH.findall(text))
    for m in ID_LIST.finditer(text):
        stmt = _statement(text, m.start())
        value = eval(compile(ast.Expression(stmt.value), str(path), "eval"), {"__builtins__": {}}, {})
        assert value and all(isinstance(v, str) for v in value), f"{path.name}: {m.group(1)} is not a list of ids"
        ids |= set(value)
    return ids


def dag_ids() -> dict[str, set[str]]:
    out = {p.relative_to(ROOT).as_posix(): ids_in_rules(p) for p in RULE_FILES}
    out["paper/ids.py"] = set(FIGURE_IDS) | set(TABLE_IDS)
    return out


def _expand(token: str) -> list[str]:
    """`latency-<publish|e2e>-<1sub|10sub>` -> every combination of the alternatives."""
    parts = re.split(r"<([^<>]+)>", token)
    choices = [[p] if i % 2 == 0 else p.split("|") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


def listed_ids(contributing: str) -> set[str]:
    """The ids named in backticks in CONTRIBUTING.md's section "Figures and tables"."""
    m = re.search(r"^## Figures and tables.*?$(.*?)(?=^## |\Z)", contributing, re.M | re.S)
    assert m, "CONTRIBUTING.md has no section '## Figures and tables'"
    out = set()
    for token in re.findall(r"`([^`]+)`", m.group(1)):
        if re.fullmatch(r"[a-z0-9][a-z0-9<>|-]*", token):
            out.update(_expand(token))
    return out


def test_the_rules_files_name_the_ids():
    found = dag_ids()
    for name in ("analysis/rules.smk", "analysis/study001.smk", "analysis/study003.smk", "analysis/faults.smk"):
        assert found[name], f"{name}: no figure or table id found (did the list's name change?)"
    assert {"maxtput", "claims", "debate-2020", "study001-runs", "faults-lost", "faults-runs"} <= set().union(*found.values())
    assert "latency-e2e-10sub-async" in found["analysis/rules.smk"]  # the comprehension was evaluated


def test_contributing_lists_every_id_the_dag_builds():
    listed = listed_ids((ROOT / "CONTRIBUTING.md").read_text())
    missing = {f"{src}: {i}" for src, ids in dag_ids().items() for i in ids if i not in listed}
    assert not missing, f"CONTRIBUTING.md ('Figures and tables') lacks ids: {sorted(missing)}"


def test_a_missing_id_is_reported():
    text = ("# x\n## Figures and tables (analysis → paper)\nFigures: `maxtput`, `latency-<publish|e2e>-<1sub|10sub>`.\n"
            "Tables live in `paper/tables/<id>.md`.\n## Git\n`faults-lost`\n")
    listed = listed_ids(text)
    assert listed == {"maxtput", "latency-publish-1sub", "latency-publish-10sub", "latency-e2e-1sub", "latency-e2e-10sub"}
    assert "faults-lost" not in listed  # outside the section
