"""Fixtures of the env/ tests."""

import os
import shutil

import pytest

from env.tests.support import ROOT, STAGES


@pytest.fixture
def workflow_copy(tmp_path):
    """A copy of the Snakefile, env/ config machinery and stage schemas, with trivial stage rules.

    Lets a test really run Snakemake (not only -n) without touching the shared work tree or other
    stages' rules: the only rule writes `made-by-rule.txt` inside the copy.
    """
    root = tmp_path / "repo"
    (root / "env").mkdir(parents=True)
    shutil.copy(ROOT / "Snakefile", root / "Snakefile")
    for name in ("__init__.py", "configcheck.py", "snakesched.py", "config.yaml", "config.schema.yaml"):
        shutil.copy(ROOT / "env" / name, root / "env" / name)
    shutil.copytree(ROOT / "env" / "profiles", root / "env" / "profiles")
    (root / "env" / "xdg").mkdir()
    os.symlink("../profiles", root / "env" / "xdg" / "snakemake")
    for stage in STAGES:
        (root / stage).mkdir()
        shutil.copy(ROOT / stage / "config.schema.yaml", root / stage / "config.schema.yaml")
        (root / stage / "rules.smk").write_text("")
    # the testbeds' schemas (composed by env/config.schema.yaml), an empty testbeds/rules.smk and an aws rules
    # file with a no-op gate
    (root / "testbeds" / "aws").mkdir(parents=True)
    shutil.copy(ROOT / "testbeds" / "config.schema.yaml", root / "testbeds" / "config.schema.yaml")
    (root / "testbeds" / "rules.smk").write_text("")
    shutil.copy(ROOT / "testbeds" / "aws" / "config.schema.yaml", root / "testbeds" / "aws" / "config.schema.yaml")
    (root / "testbeds" / "aws" / "rules.smk").write_text("def _aws_gate():\n    pass\n")
    (root / "paper" / "rules.smk").write_text(
        'ALL_TARGETS.append("made-by-rule.txt")\n\n'
        "rule make_file:\n"
        '    output: "made-by-rule.txt"\n'
        '    log: "made-by-rule.log"\n'
        '    shell: "echo made > {output} 2> {log}"\n'
    )
    return root
