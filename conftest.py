"""Repository-wide pytest hooks.

Under CI (the environment variable CI set to anything but "", "0" or "false"; `.ci/run` runs with CI=true and
`env/test` sets it too) a skipped test is a failed test: a fault, FUSE, broker or lab test that skips because a
distribution, /dev/fuse, root or sshd is missing has tested nothing, and a green run must not hide that. A test that
cannot run in CI by design says so with `@pytest.mark.skip_in_ci_ok("why")`; its skips stay skips.
"""
from __future__ import annotations

import os

import pytest

# one real cluster per (system, level) shared by the integration tests marked cluster(system, level)
pytest_plugins = ["systems.tests.sharedcluster"]


def ci_strict() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")


@pytest.fixture(autouse=True)
def _unit_tests_see_no_extra_jvm_options(request, monkeypatch):
    """env/test exports STREAMBENCH_JVM_EXTRA_OPTS (systems/plan.py) and STREAMBENCH_JVM_CDS_DIR (systems/cds.py) for
    the JVMs of its clusters and runners; a unit test that compares command lines sees them as a user would, unset.
    Integration tests keep them."""
    if not (request.node.get_closest_marker("integration") or request.node.get_closest_marker("serial")):
        monkeypatch.delenv("STREAMBENCH_JVM_EXTRA_OPTS", raising=False)
        monkeypatch.delenv("STREAMBENCH_JVM_CDS_DIR", raising=False)
        monkeypatch.delenv("STREAMBENCH_JVM_CDS_TRAIN", raising=False)


def pytest_configure(config):
    config.addinivalue_line("markers", "skip_in_ci_ok(reason): this test may skip under CI (the reason says why)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if not (rep.skipped and ci_strict()) or hasattr(rep, "wasxfail") or item.get_closest_marker("skip_in_ci_ok"):
        return
    reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
    rep.outcome = "failed"
    rep.longrepr = f"skipped under CI, which counts as a failure (CI={os.environ.get('CI')}): {reason}"
