"""env/lint.py: parsing of Snakemake's lint report and the not-applicable list."""

from env.lint import IGNORED, Lint, parse, remaining

REPORT = """\
Lints for snakefile /w/analysis/rules.smk:
    * Mixed rules and functions in same snakefile.:
      Small one-liner functions used only once should be defined as lambda
    * Absolute path "/x" in line 23:
      Do not define absolute paths inside of the workflow, since this renders

Lints for rule probe (line 33, /w/hw-probes/rules.smk):
    * Specify a conda environment or container for each rule.:
      This way, the used software for each specific step is documented, and the
    * Shell command directly uses variable HWP from outside of the rule:
      It is recommended to pass all files as input and output, and non-file
"""


def test_parse_reads_every_lint_with_its_place():
    assert parse(REPORT) == [
        Lint("snakefile /w/analysis/rules.smk", "Mixed rules and functions in same snakefile."),
        Lint("snakefile /w/analysis/rules.smk", 'Absolute path "/x" in line 23'),
        Lint("rule probe (line 33, /w/hw-probes/rules.smk)", "Specify a conda environment or container for each rule."),
        Lint("rule probe (line 33, /w/hw-probes/rules.smk)", "Shell command directly uses variable HWP from outside of the rule"),
    ]


def test_only_the_listed_lints_are_ignored():
    left = remaining(parse(REPORT))
    assert [lint.title for lint in left] == [
        'Absolute path "/x" in line 23', "Shell command directly uses variable HWP from outside of the rule"]
    assert all(reason for reason in IGNORED.values())


def test_a_clean_report_has_no_lints():
    assert parse("Congratulations, your workflow is in a good condition!\n") == []
