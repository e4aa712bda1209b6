"""conftest.py's rule: under CI a skipped test fails, unless it is marked skip_in_ci_ok."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]

TESTS = '''
import os, pytest

@pytest.mark.skipif(not os.path.exists("/nonexistent/dev/fuse"), reason="no FUSE here")
def test_needs_fuse():
    pass

def test_needs_distribution():
    pytest.skip("kafka distribution not prepared")

@pytest.mark.skip_in_ci_ok("runs only as a non-root user")
def test_allowed_to_skip():
    pytest.skip("root")

def test_runs():
    pass

@pytest.mark.xfail(reason="known", strict=True)
def test_expected_failure():
    assert False
'''


# a skipif mark skips in set-up, so there the failure is reported as an error (JUnit's "errors", which env/test
# counts as failures); a pytest.skip() in the test body fails the call phase
@pytest.mark.parametrize("ci, failed, skipped", [("true", 1, 1), ("1", 1, 1), ("", 0, 3), ("false", 0, 3), (None, 0, 3)])
def test_skips_fail_under_ci(pytester, monkeypatch, ci, failed, skipped):
    pytester.makeconftest((ROOT / "conftest.py").read_text())
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the plugins conftest.py names
    pytester.makepyfile(test_sample=TESTS)
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")
    r.assert_outcomes(passed=1, failed=failed, errors=failed, skipped=skipped, xfailed=1)
    if failed:
        r.stdout.fnmatch_lines(["*skipped under CI, which counts as a failure*no FUSE here*",
                                "*skipped under CI, which counts as a failure*kafka distribution not prepared*"])
    assert r.ret == (1 if failed else 0)
