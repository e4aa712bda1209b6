"""The coverage registry (analysis/coverage/study-*.yaml, analysis/coverage.py): every figure and table the study
catalogue (../shared/studies.md) names has an entry, every id an entry names is one the DAG builds, every claims
row it names exists, and a malformed entry is one line naming the file and the field."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from analysis import InputError, claims, coverage, study001
from analysis.report import to_csv
from analysis.tests.paths import REFERENCE, REPO, STUDY_TABLES

STUDIES_MD = (REPO / ".." / "shared" / "studies.md").resolve()
REGISTRY = REPO / "analysis" / "coverage"

HYPHEN_ID = r"\d+-\d+"
RANGE = re.compile(rf"({HYPHEN_ID}|\d+)\s*(?:\.\.|…|–)\s*({HYPHEN_ID}|\d+)")


def _expand(token: str) -> list[str]:
    """'2-16..2-19' -> 2-16 … 2-19; '7–10' -> 7 … 10; anything else as it is."""
    m = RANGE.fullmatch(token.strip())
    if not m:
        return [token.strip()]
    a, b = m.groups()
    pa, na = (a.rsplit("-", 1) if "-" in a else ("", a))
    _, nb = (b.rsplit("-", 1) if "-" in b else ("", b))
    return [f"{pa}-{n}" if pa else str(n) for n in range(int(na), int(nb) + 1)]


def _sections(text: str) -> dict[str, str]:
    """study number -> its text in studies.md (from '## Study NNN' to the next '## ')."""
    parts = re.split(r"^## ", text, flags=re.M)
    out = {}
    for p in parts:
        m = re.match(r"Study (\d{3})\b", p)
        if m:
            out[m.group(1)] = p
    return out


def _subsection(study_text: str, title: str) -> str:
    m = re.search(rf"^### \d{{3}}\.\d+ {title}\b.*?$(.*?)(?=^### |\Z)", study_text, re.M | re.S)
    return m.group(1) if m else ""


def catalogue_items(text: str) -> dict[str, set[str]]:
    """study -> the figure and table ids studies.md names for it, spelled as the registry spells them
    ('Figure 2-4', 'Table 1-1', 'Figure 5a', 'Table 1' for study 003's T1, 'Figure ING' for study 001's
    unnumbered figures, 'Test 3 table' / 'Test 3 figure (a)' for study 002's per-test results)."""
    out = {}
    for study, body in _sections(text).items():
        ids = set()
        hyphenated = bool(re.search(rf"\b(?:Tables?|Figures?) {HYPHEN_ID}", body))
        # mentions in the text: "Table 1-1", "Tables 1-7/1-8", "Tables 2-12 (…), 2-14 (…) and 2-16 (…)", "Figure 4"
        for m in re.finditer(r"\b(Table|Figure)s?\s+(.*?)(?:\*\*|\.\s|\.$|\n)", body):
            kind, rest = m.group(1), m.group(2)
            if hyphenated:
                tokens = re.findall(rf"{HYPHEN_ID}(?:\s*(?:\.\.|…)\s*{HYPHEN_ID})?", rest)
            else:
                tokens = re.findall(r"^\d+[a-z]?", rest)
            ids |= {f"{kind} {i}" for t in tokens for i in _expand(t)}
        # the figure tables of the "Figures" subsection: first cell "2-1 / 2-2", "2-16..2-19", "T1", "7–10", "5a"
        for row in re.findall(r"^\| ([^|]+?) \|", _subsection(body, "Figures"), re.M):
            if row in ("Fig",) or set(row) <= set("-: "):
                continue
            for tok in re.split(r"\s*(?:/|,)\s*", row):
                kind = "Table" if tok.startswith("T") else "Figure"
                ids |= {f"{kind} {i}" for i in _expand(tok.removeprefix("T"))}
        # study 001: unnumbered figures, one bullet per experiment ("  - ING: …")
        for name in re.findall(r"^\s+- ([A-Z]{3,}):", _subsection(body, "Figures"), re.M):
            ids.add(f"Figure {name}")
        # study 002: a results table and two figures per test, and two named comparison charts
        for n in re.findall(r"^\| (\d+) (?:Pulsar|Kafka)\b", _subsection(body, "Results"), re.M):
            ids |= {f"Test {n} table", f"Test {n} figure (a)", f"Test {n} figure (b)"}
        for line in re.findall(r"^- .*comparison charts.*$", _subsection(body, "Figures"), re.M):
            ids |= {f'"{title}"' for title in re.findall(r'"([^"]+)"', line)}
        out[study] = ids
    return out


def missing_items(studies: list[dict], catalogue: dict[str, set[str]]) -> list[str]:
    have = {s["study"]: {e["item"] for e in s["items"]} for s in studies}
    return sorted(f"study {s}: {i}" for s, ids in catalogue.items() for i in ids if i not in have.get(s, set()))


@pytest.fixture(scope="module")
def catalogue():
    if not STUDIES_MD.is_file():
        pytest.fail(f"study catalogue not found at {STUDIES_MD} (../shared/studies.md)")
    return catalogue_items(STUDIES_MD.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def registry():
    return coverage.load(REGISTRY)


def dag_figures_and_tables() -> tuple[set[str], set[str]]:
    """Figure and table ids the rules files build: their AN_*FIGURES / AN_*TABLES lists and literal
    paper/figures|tables/<id>.<ext> paths (the reading of paper/tests/test_ids.py, split by kind)."""
    import ast
    from paper.tests.test_ids import ID_LIST, RULE_FILES, _statement
    out = {"figures": set(), "tables": set()}
    for path in RULE_FILES:
        text = path.read_text()
        for kind, i in re.findall(r"[\"']paper/(figures|tables)/([A-Za-z0-9_-]+)\.\w+[\"']", text):
            out[kind].add(i)
        for m in ID_LIST.finditer(text):
            stmt = _statement(text, m.start())
            value = eval(compile(ast.Expression(stmt.value), str(path), "eval"), {"__builtins__": {}}, {})
            out["figures" if m.group(1).endswith("FIGURES") else "tables"].update(value)
    return out["figures"], out["tables"]


def test_the_catalogue_parser_finds_each_studys_items(catalogue):
    """The regexes see what studies.md names (so an empty parse cannot pass the next test)."""
    c = catalogue
    assert {f"Figure 2-{n}" for n in range(1, 39)} | {"Figure 1-1"} <= c["000"]
    assert {"Table 1-1", "Table 1-4", "Table 1-7", "Table 1-8", "Table 2-2", "Table 2-16", "Table 2-13"} <= c["000"]
    assert {"Figure ING", "Figure HIST", "Figure SCALE"} <= c["001"]
    assert {"Test 1 table", "Test 12 figure (b)", '"Average end-to-end latency, 6-partition, no flushing"'} <= c["002"]
    assert {"Figure 6", "Figure 12", "Table 1", "Table 3"} <= c["003"] and "Figure 13" not in c["003"]
    assert {"Figure 1", "Figure 5a", "Figure 5c"} <= c["004"]


def test_every_study_item_has_an_entry(catalogue, registry):
    assert missing_items(registry, catalogue) == []


def test_a_registry_without_an_item_fails(catalogue, tmp_path):
    reg = tmp_path / "coverage"
    shutil.copytree(REGISTRY, reg)
    doc = yaml.safe_load((reg / "study-000.yaml").read_text())
    doc["items"] = [e for e in doc["items"] if e["item"] != "Figure 2-4"]
    (reg / "study-000.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    assert missing_items(coverage.load(reg), catalogue) == ["study 000: Figure 2-4"]


def test_every_id_is_one_the_dag_builds(registry):
    figures, tables = dag_figures_and_tables()
    assert {"maxtput", "study003-histogram", "faults-lost"} <= figures and {"claims", "coverage"} <= tables
    coverage.check_ids(registry, figures, tables)
    # and the paper includes each of them (paper/ids.py)
    from paper.ids import FIGURE_IDS, TABLE_IDS
    named = {coverage.parse_id("", "", r)[:2] for s in registry for e in s["items"] for r in e.get("ids", ())}
    assert {n for k, n in named if k == "fig"} <= set(FIGURE_IDS)
    assert {n for k, n in named if k == "tbl"} <= set(TABLE_IDS)
    assert 'gen / "durability.md"' in (REPO / "paper" / "render.py").read_text()  # gen:durability


def test_an_id_the_dag_does_not_build_fails(registry):
    figures, tables = dag_figures_and_tables()
    bad = [dict(s, items=[dict(e) for e in s["items"]]) for s in registry]
    entry = next(e for e in bad[0]["items"] if e["item"] == "Figure 2-1")
    entry["ids"] = ["fig:maxtput", "fig:maxtput-2000"]
    with pytest.raises(InputError, match=r"study-000\.yaml: field 'items\[\d+\] \(Figure 2-1\)\.ids\[1\]': "
                                         r"'fig:maxtput-2000': no rule builds the figure 'maxtput-2000'"):
        coverage.check_ids(bad, figures, tables)


def test_every_named_row_exists(registry, published_tables, tmp_path):
    """Rows of `claims` (study 000, from the published files), `study001-claims`, `study002-claims` and
    `study004-claims` (their ids exist without runs)."""
    from analysis import study002, study004
    cl = claims.derive(published_tables["runs"], published_tables["stats"], REFERENCE, STUDY_TABLES)
    (tmp_path / "claims.csv").write_text(to_csv(list(claims.CLAIMS_SCHEMA), cl.to_dicts()))
    rows = study001.claims([], study001.published(REFERENCE))
    (tmp_path / "study001-claims.csv").write_text(to_csv(study001.CLAIM_COLS, rows))
    rows = study004.claims([], study004.published(REFERENCE))
    (tmp_path / "study004-claims.csv").write_text(to_csv(study002.CLAIM_COLS, rows))
    rows = study002.claims([], study002.published(REFERENCE))
    (tmp_path / "study002-claims.csv").write_text(to_csv(study002.CLAIM_COLS, rows))
    assert set(coverage.row_tables(registry)) == {"claims", "study001-claims", "study002-claims", "study004-claims"}
    figures, tables = dag_figures_and_tables()
    coverage.check_ids(registry, figures, tables, tmp_path)
    # a row that is not there fails, naming the entry
    bad = [dict(s, items=[dict(e) for e in s["items"]]) for s in registry]
    entry = next(e for e in bad[0]["items"] if e["item"] == "Table 2-2")
    entry["ids"] = ["tbl:claims#T2-6"]
    with pytest.raises(InputError, match=r"\(Table 2-2\)\.ids\[0\]': 'tbl:claims#T2-6': no row of claims is 'T2-6'"):
        coverage.check_ids(bad, figures, tables, tmp_path)


def test_row_keys_match_whole_fields():
    assert coverage.row_matches("T2-2", "T2-2:pulsar-ack-1-100:avg")
    assert coverage.row_matches("max_tput_1part_2p2c", "R004:max_tput_1part_2p2c:kafka:L1(sync-local;ack-2):publish_tput")
    assert coverage.row_matches("ING-1", "ING-1")
    assert not coverage.row_matches("T2-1", "T2-12:kafka-ack-1-100:avg")
    assert not coverage.row_matches("KEYS-1", "KEYS-1-kafka")


GOOD = {"item": "Figure 9-9", "kind": "figure", "what": "a figure", "ids": ["fig:maxtput"]}


@pytest.mark.parametrize("change, field, problem", [
    ({"kind": "chart"}, r"items\[0\] \(Figure 9-9\)\.kind", "must be one of figure, table, claim"),
    ({"what": ""}, r"items\[0\] \(Figure 9-9\)\.what", "must be a non-empty string"),
    ({"item": None}, r"items\[0\]\.item", "must be a non-empty string"),
    ({"ids": []}, r"items\[0\] \(Figure 9-9\)\.ids", "must be a non-empty list"),
    ({"ids": ["maxtput"]}, r"items\[0\] \(Figure 9-9\)\.ids\[0\]", "is not fig:<id>"),
    ({"ids": ["fig:maxtput#row"]}, r"items\[0\] \(Figure 9-9\)\.ids\[0\]", "only a table id can name a row"),
    ({"ids": ["gen:testbed"]}, r"items\[0\] \(Figure 9-9\)\.ids\[0\]", "paper.render prepare writes no 'testbed'"),
    ({"ids": ["fig:maxtput", "fig:maxtput"]}, r"items\[0\] \(Figure 9-9\)\.ids", "names an id twice"),
    ({"needs": "aws scale"}, r"items\[0\] \(Figure 9-9\)", "needs exactly one of ids, needs, out_of_scope, has ids, needs"),
    ({"ids": None, "needs": "more hardware"}, r"items\[0\] \(Figure 9-9\)\.needs", "is not '<scale> scale"),
    ({"ids": None, "out_of_scope": " "}, r"items\[0\] \(Figure 9-9\)\.out_of_scope", "must be a non-empty string"),
    ({"ids": None}, r"items\[0\] \(Figure 9-9\)", "needs exactly one of ids, needs, out_of_scope, has none"),
    ({"verdict": "ok"}, r"items\[0\]\.verdict", "unknown key"),
])
def test_a_malformed_entry_is_one_line_naming_file_and_field(tmp_path, change, field, problem):
    entry = {k: v for k, v in {**GOOD, **change}.items() if v is not None or k == "item"}
    f = tmp_path / "study-004.yaml"
    f.write_text(yaml.safe_dump({"study": "004", "title": "t", "items": [entry]}))
    with pytest.raises(InputError) as e:
        coverage.load_file(f)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{f}: field '")
    assert re.search(field, msg) and problem in msg, msg


@pytest.mark.parametrize("doc, field, problem", [
    ("study: '004'\ntitle: t\nitems: [", r"\(file\)", "not YAML"),
    ({"study": 4, "title": "t", "items": [GOOD]}, "study", "as a quoted string"),
    ({"study": "003", "title": "t", "items": [GOOD]}, "study", "does not match the file name"),
    ({"study": "004", "title": "t", "items": []}, "items", "must be a non-empty list"),
    ({"study": "004", "title": "t", "items": [GOOD, GOOD]}, r"items\[1\]\.item", "listed twice"),
    ({"study": "004", "items": [GOOD]}, "title", "must be a non-empty string"),
    ({"study": "004", "title": "t", "items": [GOOD], "extra": 1}, "extra", "unknown key"),
])
def test_a_malformed_file_is_one_line_naming_file_and_field(tmp_path, doc, field, problem):
    f = tmp_path / "study-004.yaml"
    f.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    with pytest.raises(InputError) as e:
        coverage.load_file(f)
    msg = str(e.value)
    assert "\n" not in msg and re.search(rf"^{re.escape(str(f))}: field '{field}': .*{re.escape(problem)}", msg), msg


def test_a_missing_study_file_is_named(tmp_path):
    reg = tmp_path / "coverage"
    shutil.copytree(REGISTRY, reg)
    (reg / "study-002.yaml").unlink()
    with pytest.raises(InputError, match=r"study-002\.yaml: field '\(file\)': missing"):
        coverage.load(reg)


def test_cli_writes_the_tables_and_counts(tmp_path, capsys):
    figures, tables = dag_figures_and_tables()
    for t in ("claims", "study001-claims", "study002-claims", "study004-claims"):  # rows are checked against these CSVs
        keys = sorted({coverage.parse_id("", "", r)[2] for s in coverage.load(REGISTRY) for e in s["items"]
                       for r in e.get("ids", ()) if r.startswith(f"tbl:{t}#")})
        (tmp_path / f"{t}.csv").write_text("id\n" + "\n".join(keys) + "\n")
    rc = coverage.main(["--registry", str(REGISTRY), "--tables", str(tmp_path),
                        "--known-figures", *figures, "--known-tables", *tables])
    assert rc == 0
    md = (tmp_path / "coverage.md").read_text()
    studies = coverage.load(REGISTRY)
    assert md.count("\n") == 2 + sum(len(s["items"]) for s in studies)
    # a mapped row names its ids; a row that needs a scale says which
    assert "| 000 | Figure 2-4 | figure | publish latency at 2000 partitions | mapped | fig:latency-publish-2000p" in md
    assert "| 002 | Test 2 figure (a) | figure | p99 publish latency vs time, Pulsar flush, 6 partitions | needs aws scale |" in md
    counts = list(csv_rows(tmp_path / "coverage-counts.csv"))
    assert [r["study"] for r in counts] == [*coverage.STUDIES, "all"]
    for r in counts:
        assert int(r["items"]) == int(r["mapped"]) + int(r["needs_scale"]) + int(r["out_of_scope"])
    assert int(counts[-1]["items"]) == sum(len(s["items"]) for s in studies)
    v = coverage.variables(REGISTRY)
    assert set(v) == {"study000", "study001", "study002", "study003", "study004", "all"}
    assert v["study000"]["items"] == int(counts[0]["items"])


def test_cli_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys):
    reg = tmp_path / "coverage"
    shutil.copytree(REGISTRY, reg)
    text = (reg / "study-003.yaml").read_text().replace("kind: figure", "kind: picture", 1)
    (reg / "study-003.yaml").write_text(text)
    out = tmp_path / "tables"
    rc = coverage.main(["--registry", str(reg), "--tables", str(out), "--known-figures", "--known-tables"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "study-003.yaml: field 'items[0] (Figure 1).kind'" in err
    assert not out.exists()


def csv_rows(path: Path):
    import csv
    with open(path, newline="") as f:
        yield from csv.DictReader(f)


# the appendix prints each entry's words in a narrow column of a PDF table: a run of characters with no space wider
# than the column overflows it (a note once cited "streamnative/openmessaging-benchmark@e750749)," and the real-data
# render found it 7 times in the PDF). 30 characters fit the narrowest column at the table's font size.
LONGEST_WORD = 30


def test_no_entry_has_a_word_wider_than_the_tables_column(registry):
    wide = [f"{s['path']}: {e['item']}: {k}: {w!r}" for s in registry for e in s["items"] for k, v in e.items()
            if isinstance(v, str) for w in v.split() if len(w) > LONGEST_WORD]
    assert not wide, wide
