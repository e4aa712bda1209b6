"""systems/tests/sharedcluster.py: the tests of one cluster run together, the cluster starts before the first and stops
right after the last of them, one cluster at a time, also across test files and when a test fails. The cluster's
start and stop are recorded instead of run (the plugin's hooks and ordering are what is tested here; the real start
and stop run in every integration test that uses it)."""
from __future__ import annotations

from pathlib import Path

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]

CONFTEST = '''
import json, os
from pathlib import Path
import pytest
from systems.tests import sharedcluster as sc

LOG = Path(os.environ["SC_LOG"])

def _say(*words):
    with LOG.open("a") as f:
        f.write(" ".join(words) + "\\n")

def _start(system, level, rundir):
    _say("start", system, level)
    (rundir / "cluster.json").write_text(json.dumps({"nodes": [], "system": system}))
    return sc.SharedCluster(system, level, rundir, {"nodes": []})

def _stop(cl):
    _say("stop", cl.system, cl.level)
    if os.environ.get("SC_FAIL_STOP") == cl.system:
        raise AssertionError(f"{cl.system}: port 9092 still listening after `down`")

sc.start, sc.stop = _start, _stop

def pytest_runtest_call(item):
    _say("test", item.name)

@pytest.hookimpl(hookwrapper=True)
def pytest_collection_modifyitems(items):
    yield  # after every other implementation, the plugin's ordering included
    want = os.environ.get("SC_ORDER")
    if want:  # another plugin's order (e.g. a random one) wins: the clusters must still never overlap
        by_name = {it.name: it for it in items}
        items[:] = [by_name[n] for n in want.split(",")]
'''

FILE_A = '''
import pytest

@pytest.mark.cluster("kafka", "L1", last=True)
def test_kills_a_broker(shared_cluster):
    assert shared_cluster.system == "kafka"

def test_alone():
    pass

@pytest.mark.cluster("pulsar", "L1")
def test_pulsar_one(shared_cluster):
    assert shared_cluster.level == "L1"

@pytest.mark.cluster("kafka", "L1")
def test_kafka_a(shared_cluster):
    pass
'''

FILE_B = '''
import pytest

@pytest.fixture(params=[pytest.param(s, marks=pytest.mark.cluster(s, "L1"), id=s) for s in ("kafka", "pulsar")])
def system(request, shared_cluster):
    assert shared_cluster.system == request.param
    return request.param

def test_runner(system):
    pass

@pytest.mark.cluster("pulsar", "L1")
def test_pulsar_fails(shared_cluster):
    assert False, "a failing test does not keep its cluster up"
'''


def _run(pytester, monkeypatch, *args, fail_stop="", order=""):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_a=FILE_A, test_b=FILE_B)
    log = pytester.path / "events.log"
    monkeypatch.setenv("SC_LOG", str(log))
    monkeypatch.setenv("SC_FAIL_STOP", fail_stop)
    monkeypatch.setenv("SC_ORDER", order)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv("CI", raising=False)
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "systems.tests.sharedcluster", *args)
    return r, log.read_text().split("\n")[:-1]


def test_one_cluster_at_a_time_its_tests_together_the_harmful_one_last(pytester, monkeypatch):
    r, events = _run(pytester, monkeypatch)
    r.assert_outcomes(passed=6, failed=1)
    assert events == [
        "start kafka L1", "test test_kafka_a", "test test_runner[kafka]", "test test_kills_a_broker", "stop kafka L1",
        "test test_alone",
        "start pulsar L1", "test test_pulsar_one", "test test_runner[pulsar]", "test test_pulsar_fails",
        "stop pulsar L1",
    ]


def test_a_selection_keeps_the_grouping(pytester, monkeypatch):
    r, events = _run(pytester, monkeypatch, "-k", "runner or pulsar_one")
    r.assert_outcomes(passed=3)
    assert events == ["start pulsar L1", "test test_pulsar_one", "test test_runner[pulsar]", "stop pulsar L1",
                      "start kafka L1", "test test_runner[kafka]", "stop kafka L1"]


def test_an_order_imposed_after_the_grouping_never_runs_two_clusters_at_once(pytester, monkeypatch):
    r, events = _run(pytester, monkeypatch, "-k", "runner or pulsar_one or kafka_a",
                     order="test_kafka_a,test_pulsar_one,test_runner[kafka],test_runner[pulsar]")
    r.assert_outcomes(passed=4)
    assert events == ["start kafka L1", "test test_kafka_a", "stop kafka L1",
                      "start pulsar L1", "test test_pulsar_one", "stop pulsar L1",
                      "start kafka L1", "test test_runner[kafka]", "stop kafka L1",
                      "start pulsar L1", "test test_runner[pulsar]", "stop pulsar L1"]


def test_what_a_stop_finds_left_is_an_error_of_the_clusters_last_test(pytester, monkeypatch):
    r, events = _run(pytester, monkeypatch, fail_stop="kafka")
    r.assert_outcomes(passed=6, failed=1, errors=1)
    r.stdout.fnmatch_lines(["*ERROR at teardown of test_kills_a_broker*", "*port 9092 still listening after `down`*"])
    assert events.count("stop kafka L1") == 1 and events[-1] == "stop pulsar L1"


def test_a_test_without_the_mark_is_refused(pytester, monkeypatch):
    pytester.makepyfile(test_c="def test_unmarked(shared_cluster):\n    pass\n")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "systems.tests.sharedcluster")
    r.assert_outcomes(errors=1)
    r.stdout.fnmatch_lines(["*shared_cluster needs @pytest.mark.cluster(system, level)*"])
