"""README.md is a guide (size, tables, no hand-typed measurement), docs/measurements.md is generated and current, every
measurement record names its command, date and commit, and the relative links of README.md and docs/*.md resolve.

The first group checks the repository; the second feeds the same checks inputs they must reject, so none of them
passes whatever the input.
"""
from __future__ import annotations

import copy

import pytest

from docs import checks, measurements
from env.tests.support import ROOT

README = ROOT / "README.md"


# --- the repository ------------------------------------------------------------------------------------------

def test_every_measurement_record_has_its_command_date_and_commit():
    assert measurements.problems(measurements.load()) == []


def test_the_measurements_page_and_the_readme_quotes_are_current():
    assert measurements.stale(measurements.load()) == []


def test_the_readme_is_a_guide():
    assert checks.readme_problems(README.read_text(encoding="utf-8")) == []


def test_every_relative_link_names_an_existing_file_and_heading():
    files = checks.doc_files()
    assert len(files) > 5, files
    assert checks.link_problems(files) == []


def test_the_readme_quotes_measurements_only_through_records():
    text = README.read_text(encoding="utf-8")
    quoted = measurements.QUOTE_RE.findall(text)
    assert quoted, "README.md quotes no measurement (its time and disk sentences should)"
    ids = {r["id"] for r in measurements.load()["records"]}
    assert {q[0] for q in quoted} <= ids


def test_the_aws_estimate_in_the_readme_and_docs_is_the_one_the_code_computes():
    # the one digit-heavy table README.md may hold: testbeds/aws/tests/test_plan.py reads it there
    from testbeds.aws import plan
    from testbeds.aws.__main__ import load_config

    _, rows, prices = plan.plan_from_config(load_config("aws", []))
    table = plan.markdown_table(rows, prices)
    for path in (README, ROOT / "docs" / "aws.md"):
        text = path.read_text(encoding="utf-8")
        assert table in text, path
        found = [rows_ for _, rows_ in checks.tables(text) if rows_[0] == checks.AWS_ESTIMATE_HEADER]
        assert ["\n".join(r) for r in found] == [table.split("\n\n")[0].strip()], path


# --- the checks reject what they must -------------------------------------------------------------------------

# lines of the README before it became a guide (commit f2971ca): a measurement table and a measurement sentence
OLD_TABLE = """| what | size / time | measured with |
|---|---|---|
| `.venv` (Python environment) | 0.8 GB | `du -sh .venv` |
"""
OLD_SENTENCE = "Measured from a fresh clone: `local` 95 min and +9.82 GB at peak.\n"


def test_an_oversized_readme_fails():
    text = "# t\n\n" + "words " * 2100
    assert any("more than 12288" in p for p in checks.readme_problems(text))
    assert checks.readme_problems("# t\n\nwords\n") == []


def test_a_measurement_table_in_the_readme_fails():
    out = checks.readme_problems("# t\n\n" + OLD_TABLE)
    assert any("a table with the header '| what | size / time | measured with |'" in p for p in out)
    assert any("'0.8 GB' typed by hand" in p for p in out)


def test_a_quantity_typed_in_the_readme_fails_unless_quoted_or_code():
    assert any("'95 min' typed by hand" in p for p in checks.readme_problems(OLD_SENTENCE))
    assert checks.readme_problems("took <!-- m:local-all-d30cbd0.time -->95 min 10 s<!-- /m --> here\n") == []
    assert checks.readme_problems("run `sleep 5 s` and see 12 %\n") != []
    assert checks.readme_problems("run `sleep 5 s`, a 2-core machine, 3 server + 1 client hosts, L1 to L4\n") == []


def test_a_profiles_row_with_a_typed_time_fails():
    text = (checks.PROFILES_HEADER + "\n|---|---|---|---|\n"
            "| `ci` | the ci scale | this machine | 7 min |\n")
    assert any("'7 min' typed by hand" in p for p in checks.readme_problems(text))


def test_a_record_without_its_command_date_or_commit_fails():
    data = measurements.load()
    for key in ("command", "date", "commit"):
        bad = copy.deepcopy(data)
        del bad["records"][0][key]
        assert any(f"no `{key}`" in p for p in measurements.problems(bad)), key
    bad = copy.deepcopy(data)
    bad["records"][0]["date"] = __import__("datetime").date(2026, 11, 25)  # what an unquoted YAML date becomes
    assert any("`date` is not text" in p for p in measurements.problems(bad))


def test_a_quote_that_is_not_in_its_result_fails():
    data = copy.deepcopy(measurements.load())
    rec = next(r for r in data["records"] if r.get("quote"))
    key = next(iter(rec["quote"]))
    rec["quote"][key] = "1 min 1 s"
    assert any(f"quote.{key}" in p for p in measurements.problems(data))


def test_a_stale_page_or_readme_quote_is_reported(tmp_path):
    data = measurements.load()
    page, readme = tmp_path / "measurements.md", tmp_path / "README.md"
    page.write_text(measurements.render(data))
    rec = next(r for r in data["records"] if r.get("quote"))
    key, value = next(iter(rec["quote"].items()))
    readme.write_text(f"took <!-- m:{rec['id']}.{key} -->{value}<!-- /m -->\n")
    assert measurements.stale(data, page, readme) == []
    changed = copy.deepcopy(data)
    changed["records"][0]["result"] += " (edited)"
    assert any("stale" in p for p in measurements.stale(changed, page, readme))
    readme.write_text(f"took <!-- m:{rec['id']}.{key} -->a typo<!-- /m -->\n")
    assert any("differs" in p for p in measurements.stale(data, page, readme))
    readme.write_text("took <!-- m:no-such-record.time -->1 s<!-- /m -->\n")
    assert any("names no record" in p for p in measurements.stale(data, page, readme))


@pytest.mark.parametrize("link, problem", [
    ("[x](missing.md)", "no such file missing.md"),
    ("[x](b.md#no-such-heading)", "no heading #no-such-heading"),
    ("[x](#nowhere)", "no heading #nowhere"),
])
def test_a_broken_relative_link_fails(tmp_path, link, problem):
    (tmp_path / "b.md").write_text("# B page\n\n## Runs are bounded: time, disk\n")
    a = tmp_path / "a.md"
    a.write_text(f"# A\n\n{link} and [ok](b.md#runs-are-bounded-time-disk) and [web](https://example.org/x)\n")
    out = checks.link_problems([a], root=tmp_path)
    assert len(out) == 1 and problem in out[0], out
    a.write_text("# A\n\n[ok](b.md#runs-are-bounded-time-disk) [self](#a) `[code](missing.md)`\n")
    assert checks.link_problems([a], root=tmp_path) == []
