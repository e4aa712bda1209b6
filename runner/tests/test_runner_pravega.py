"""The runner's Pravega driver against a real Pravega cluster (`python -m systems up pravega`: ZooKeeper, 3 bookies,
controller, segment store, each its own JVM).

On the shared Pravega L4 cluster (systems/tests/sharedcluster.py; no journal fsync, ack quorum 1: the check is the
driver's, not the disk's), which the systems' own L4 test uses too. Needs the runner built (`mvn -q -f runner/pom.xml package`).
"""
from __future__ import annotations

import json

import pytest

from runner.tests.test_runner_integration import TESTDATA, _require_built, check_result, omb_run

DRIVER = TESTDATA / "pravega.yaml"
KEYED = TESTDATA / "keyed-4-partitions-1kb-2k-10s.yaml"


@pytest.fixture
def pravega(shared_cluster):
    _require_built()
    return shared_cluster.cluster_json, shared_cluster.doc


# serial: its sent count is held to its rate x seconds within 5 %, and a cluster beside it on two cores would make that a
# measurement of the other one (the next test judges no rate: it runs with the integration tests beside the others,
# on the Pravega L4 cluster systems/tests/test_integration.py's L4 test shares there)
@pytest.mark.integration
@pytest.mark.serial
@pytest.mark.cluster("pravega", "L4")
def test_keyed_steady_workload_on_pravega_has_a_clean_audit_in_order_per_key(pravega, tmp_path):
    """2 writers with routing keys (RANDOM_NANO) into 4 segments, 2 reader groups of 2 readers: every event arrives
    once in each group, in order per writer and segment (the order Pravega promises per routing key)."""
    cj, cobj = pravega
    out = tmp_path / "keyed.json"
    p = omb_run(KEYED, DRIVER, out, cj)
    assert p.returncode == 0, p.stderr[-4000:]
    res = json.loads(out.read_text())
    x = check_result(res, cobj)
    assert res["driver"] == "Pravega" and res["partitions"] == 4 and res["messageSize"] == 1024
    assert x["driver"]["driverType"] == "pravega"
    a = x["audit"]
    assert a["subscriptions"] == 2 and len(a["receivedPerSubscription"]) == 2
    for sub in a["receivedPerSubscription"].values():
        assert sub["duplicated"] == 0 and sub["lost"] == 0 and sub["outOfOrder"] == 0, sub
    assert a["outOfOrder"] == 0
    run_seconds = x["warmupSeconds"] + x["measurementSeconds"]
    assert a["sent"] == pytest.approx(2000 * run_seconds, rel=0.05)
    assert res["aggregatedEndToEndLatencyAvg"] > 0 and x["endpoints"]["controllerURI"] == cobj["pravega"]["controllerUri"]
    # the streams and reader groups the run created are gone again (deleteStreams: true, the runner's clean-up)
    log = out.with_suffix(".log").read_text()
    assert "Pravega clean-up" not in log, log[-3000:]


@pytest.mark.integration
@pytest.mark.cluster("pravega", "L4")
def test_more_readers_than_segments_runs_as_upstream_omb_does_with_a_warning(pravega, tmp_path):
    """Upstream OMB's workloads include reader groups with more readers than segments (readers without a segment
    stay idle); the runner runs them too, every event still arrives once, and the result says why readers idled."""
    import yaml

    cj, cobj = pravega
    wl = yaml.safe_load(KEYED.read_text())
    wl.update(name="2 segments, 1 reader group of 3 readers", partitionsPerTopic=2, subscriptionsPerTopic=1,
              consumerPerSubscription=3, producersPerTopic=1, producerRate=1000)
    wl["x-streambench"] = {"testDurationSeconds": 5, "warmupDurationSeconds": 2}
    f = tmp_path / "idle-readers.yaml"
    f.write_text(yaml.safe_dump(wl, sort_keys=False))
    out = tmp_path / "idle.json"
    p = omb_run(f, DRIVER, out, cj)
    assert p.returncode == 0, p.stderr[-4000:]
    x = json.loads(out.read_text())["x-streambench"]
    assert any("1 reader(s) per group receive nothing and stay idle" in w for w in x["warnings"]), x["warnings"]
    sub = next(iter(x["audit"]["receivedPerSubscription"].values()))
    assert x["audit"]["sent"] > 0 and sub["lost"] == 0 and sub["duplicated"] == 0, x["audit"]
