"""Shortcode expansion, generated snippets and cross-references (pure logic, no pandoc)."""

import json
import re
from pathlib import Path

import pytest
import yaml

from paper import render
from paper.ids import FIGURE_IDS, TABLE_IDS
from paper.render import RenderError

from .conftest import FAKE_VARIABLES, ROOT


def expand_text(paper: Path, text: str, name: str = "doc.qmd") -> str:
    (paper / name).write_text(text)
    varfile = paper / "_variables.yml"
    return render.expand(paper / name, render.load_variables(varfile), varfile)


def test_var_and_nested_include(fake_paper):
    (fake_paper / "part.md").write_text("cores: {{< var testbed.cores >}}\n{{< include sub/inner.md >}}")
    (fake_paper / "sub").mkdir()
    (fake_paper / "sub" / "inner.md").write_text("inner {{<var claims.matched>}} of {{< var claims.total >}}\n")
    out = expand_text(fake_paper, "A {{< var testbed.cpu >}}.\n\n{{< include part.md >}}\nend\n")
    assert out == "A Fake CPU 9000.\n\ncores: 2\ninner 7 of 10\n\nend\n"


def test_unknown_var_names_key_and_file(fake_paper):
    with pytest.raises(RenderError) as e:
        expand_text(fake_paper, "ok\nsee {{< var claims.nope >}}\n", name="sec.qmd")
    msg = str(e.value)
    assert "sec.qmd:2" in msg and "'claims.nope'" in msg and "_variables.yml" in msg
    assert "\n" not in msg


def test_var_inside_an_included_file_names_that_file(fake_paper):
    (fake_paper / "inc.md").write_text("x\ny\n{{< var nothing.here >}}\n")
    with pytest.raises(RenderError, match=r"inc\.md:3: .*'nothing\.here'"):
        expand_text(fake_paper, "{{< include inc.md >}}\n")


def test_missing_include_names_file_and_source(fake_paper):
    with pytest.raises(RenderError, match=r"doc\.qmd:1: \{\{< include tables/gone\.md >\}\}: file .*tables/gone\.md not found"):
        expand_text(fake_paper, "{{< include tables/gone.md >}}\n")


def test_other_errors(fake_paper):
    with pytest.raises(RenderError, match="unknown shortcode 'pagebreak'"):
        expand_text(fake_paper, "{{< pagebreak >}}\n")
    with pytest.raises(RenderError, match="'claims' in .* is a dict, not a value"):
        expand_text(fake_paper, "{{< var claims >}}\n")
    (fake_paper / "loop.md").write_text("{{< include loop.md >}}\n")
    with pytest.raises(RenderError, match="include cycle"):
        expand_text(fake_paper, "{{< include loop.md >}}\n")


def test_escaped_shortcode_stays_literal(fake_paper):
    assert expand_text(fake_paper, "write {{{< var x.y >}}} in the source\n") == "write {{< var x.y >}} in the source\n"


def test_missing_or_bad_variables_file(fake_paper):
    (fake_paper / "_variables.yml").unlink()
    with pytest.raises(RenderError, match=r"_variables\.yml: missing"):
        render.load_variables(fake_paper / "_variables.yml")
    (fake_paper / "_variables.yml").write_text("- a list\n")
    with pytest.raises(RenderError, match="expected a mapping"):
        render.load_variables(fake_paper / "_variables.yml")


def test_prepare_writes_snippets_from_figure_json(fake_paper):
    written = render.prepare(fake_paper)
    assert len(written) == len(FIGURE_IDS) + 2  # + durability.md, reviewer.md
    snippet = (fake_paper / "_generated" / "fig-maxtput.md").read_text()
    assert snippet == ('![Fake figure maxtput: p99 \\[ms\\] of \\*series\\* \\<a & b\\>.](figures/maxtput.svg)'
                       '{#fig-maxtput fig-alt="Bar chart \\"maxtput\\" with one bar."}\n')
    dur = (fake_paper / "_generated" / "durability.md").read_text()
    levels = yaml.safe_load((ROOT / "systems" / "durability.yaml").read_text())["levels"]
    rows = [line for line in dur.splitlines()[2:]]
    assert [r.split("|")[1].strip() for r in rows] == list(levels)
    assert "acks=all" in rows[0] and "journalSyncData=true" in rows[0]
    # a Pravega column, from the file: every level it defines shows its quorum, the bypass levels say n/a
    assert dur.splitlines()[0].split("|")[6].strip() == "Pravega"
    for row, (name, lv) in zip(rows, levels.items()):
        cell = row.split("|")[6].strip()
        if lv["pravega"] is None:
            assert cell.startswith("n/a"), name
        else:
            bk = lv["pravega"]["bookkeeper"]
            assert cell.startswith(f"E{bk['ensemble']}/W{bk['writeQuorum']}/A{bk['ackQuorum']}"), (name, cell)
    assert sum(lv["pravega"] is not None for lv in levels.values()) >= 2  # Pravega runs at L1 and L2 at least


@pytest.mark.parametrize("field", ["caption", "alt"])
def test_figure_json_missing_field_names_file_and_field(fake_paper, field):
    meta = fake_paper / "figures" / "latency-timeline.json"
    doc = json.loads(meta.read_text())
    del doc[field]
    meta.write_text(json.dumps(doc))
    with pytest.raises(RenderError, match=rf"latency-timeline\.json: field '{field}' is missing"):
        render.prepare(fake_paper)
    assert not (fake_paper / "_generated").exists()  # nothing half-written


def test_missing_figure_svg_and_bad_durability(fake_paper, tmp_path):
    (fake_paper / "figures" / "fsync-probe.svg").unlink()
    with pytest.raises(RenderError, match=r"fsync-probe\.svg: missing"):
        render.prepare(fake_paper)
    bad = tmp_path / "durability.yaml"
    bad.write_text("levels:\n  L1: {replication: sync, kafka: {}, pulsar: {}}\n")
    with pytest.raises(RenderError, match=r"durability\.yaml: field 'levels\.L1\.local' is missing"):
        render.durability_table(bad)
    bad.write_text("levels:\n  L1: {replication: sync, local: sync, kafka: {}, pulsar: {}}\n")
    with pytest.raises(RenderError, match=r"durability\.yaml: field 'levels\.L1\.pravega' is missing"):
        render.durability_table(bad)
    bad.write_text("levels:\n  L1: {replication: sync, local: sync, kafka: null, pulsar: null, pravega: [1]}\n")
    with pytest.raises(RenderError, match=r"durability\.yaml: field 'levels\.L1\.pravega' is not a mapping"):
        render.durability_table(bad)


MD = """See @fig-b, @tbl-y and @fig-a; mail x@fig-a.org.

![Cap B](figures/b.svg){#fig-b fig-alt="alt b"}

![Cap A](figures/a.svg){#fig-a fig-alt="alt a"}

: Caption Y spans
two lines {#tbl-y}
"""


def test_crossref_html_numbers_in_document_order():
    out = render.crossref(MD, "html")
    assert "See [Figure&nbsp;1](#fig-b), [Table&nbsp;1](#tbl-y) and [Figure&nbsp;2](#fig-a)" in out
    assert "x@fig-a.org" in out
    assert '![Figure 1: Cap B](figures/b.svg){#fig-b alt="alt b"}' in out
    assert ": Table 1: Caption Y spans\ntwo lines {#tbl-y}" in out


def test_crossref_typst_uses_native_references():
    out = render.crossref(MD, "typst")
    assert "See `@fig-b`{=typst}, `@tbl-y`{=typst}" in out
    assert "![Cap B](figures/b.svg){#fig-b alt=\"alt b\"}" in out


def test_crossref_unknown_reference_and_duplicate():
    with pytest.raises(RenderError, match="@fig-c points to no figure"):
        render.crossref(MD + "\nand @fig-c\n", "html")
    with pytest.raises(RenderError, match="fig-a is defined twice"):
        render.crossref(MD + "\n![again](a.svg){#fig-a}\n", "html")


@pytest.mark.parametrize("follower", [";", "(", "[", ".Next"])
def test_reference_that_typst_would_read_on_as_code_is_an_error(fake_paper, follower):
    """Quarto's typst makes `@tbl-x` the code `#ref(<tbl-x>, ...)`: a ';' after it vanishes from the PDF, '(', '['
    and '.word' break it (paper/tests/test_typst_shapes.py); the pandoc path would hide both."""
    with pytest.raises(RenderError) as e:
        expand_text(fake_paper, f"ok\n(@tbl-x{follower} more)\n", name="sec.qmd")
    msg = str(e.value)
    assert "sec.qmd:2: " in msg and f"'@tbl-x{follower[:2]}'" in msg and "\n" not in msg


def test_reference_followers_that_stay_text(fake_paper):
    text = "(@tbl-x, and @fig-y) and @tbl-z. Then @fig-w: see @tbl-v.\nmail x@tbl-a;b \\@tbl-q; @fig-r-(\n"
    assert expand_text(fake_paper, text) == text


def test_the_paper_expands(fake_paper):
    """The paper's own sources pass every check of the expansion (with the fake outputs)."""
    render.prepare(fake_paper, build=False)
    varfile = fake_paper / "_variables.yml"
    assert "@tbl-claims" in render.expand(fake_paper / "paper.md", render.load_variables(varfile), varfile)


def test_paper_uses_only_documented_variables_and_every_id():
    """paper.md's var keys: the documented ones of analysis/README.md, or derived.* (checked on real data)."""
    qmd = "".join(p.read_text() for p in [ROOT / "paper" / "paper.md", *sorted((ROOT / "paper" / "sections").glob("*.qmd"))])
    used = set(re.findall(r"\{\{< var ([\w.]+) >\}\}", qmd))
    readme = (ROOT / "analysis" / "README.md").read_text()
    documented = set()
    for cell in re.findall(r"^\| ((?:`[\w.]+`(?:, | / )?)+) \|", readme, re.MULTILINE):
        documented |= set(re.findall(r"`([\w.]+)`", cell))
    assert documented, "analysis/README.md documents no _variables.yml keys"
    plain = {k for k in used if not k.startswith("derived.")}
    assert plain <= documented, plain - documented
    assert {k[len("derived."):] for k in used if k.startswith("derived.")} == set(FAKE_VARIABLES["derived"])
    for fid in FIGURE_IDS:
        assert f"{{{{< include _generated/fig-{fid}.md >}}}}" in qmd
    for tid in TABLE_IDS:
        assert f"{{{{< include tables/{tid}.md >}}}}" in qmd and f"{{#tbl-{tid}}}" in qmd


def test_every_section_file_is_included_once():
    """paper.md is a list of includes of sections/*.qmd (one file per section, one line per file)."""
    qmd = (ROOT / "paper" / "paper.md").read_text()
    included = re.findall(r"^\{\{< include sections/([\w.-]+) >\}\}$", qmd, re.MULTILINE)
    files = sorted(p.name for p in (ROOT / "paper" / "sections").glob("*.qmd"))
    assert sorted(included) == files, "each paper/sections/*.qmd needs exactly one include line in paper.md"
    assert len(set(included)) == len(included)


def test_include_paths_are_relative_to_the_main_document(fake_paper):
    """Quarto pastes an include's text: paths inside an included file resolve from the main document."""
    (fake_paper / "sections").mkdir(exist_ok=True)
    (fake_paper / "sections" / "s.qmd").write_text("{{< include tables/runs.md >}}\n{{< include /tables/maxtput.md >}}\n")
    out = expand_text(fake_paper, "{{< include sections/s.qmd >}}\n")
    assert "| runs | 1.25 |" in out and "| maxtput | 1.25 |" in out


@pytest.mark.slow
def test_every_reviewer_command_dry_runs():
    """The reviewer's appendix: every command is `snakemake --profile published TARGET` and the targets dry-run.

    One `snakemake -n` with every target (the same profile and options as each command; one start-up instead of
    one per row keeps this inside the test budget)."""
    import shlex
    import subprocess
    import sys
    rows = render.reviewer_rows()
    assert len(rows) == len(FIGURE_IDS) + len(TABLE_IDS)
    targets = []
    for _, cmd, _ in rows:
        argv = shlex.split(cmd)
        assert argv[:4] == ["env/shell", "snakemake", "--profile", "published"] and len(argv) == 5, cmd
        targets.append(argv[4])
    p = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--profile", str(ROOT / "env/profiles/published"),
                        *targets], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, (p.stdout + p.stderr)[-2000:]
