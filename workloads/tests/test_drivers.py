"""Driver files are generated from systems/durability.yaml and stay in step with it."""
import subprocess
import sys

import pytest
import yaml

from systems import durability as dur
from workloads import drivers, plan


def props(block: str) -> dict:
    return dict(line.split("=", 1) for line in block.splitlines() if line)


def test_committed_drivers_are_up_to_date():
    res = subprocess.run([sys.executable, "-m", "workloads.drivers", "--check"], capture_output=True, text=True,
                         cwd=plan.HERE.parent)
    assert res.returncode == 0, res.stderr


def test_shipped_experiments_resolve_against_durability_yaml():
    plan.check(plan.load(), drivers.catalog())


@pytest.mark.parametrize("level, acks, flush", [("L1", "all", "1"), ("L2", "all", "10000"), ("L3", "1", "1"), ("L4", "1", "10000")])
def test_kafka_driver_carries_the_level(level, acks, flush):
    doc = yaml.safe_load(drivers.render("kafka", level, "tuned"))
    assert doc["replicationFactor"] == 3
    assert props(doc["producerConfig"])["acks"] == acks
    topic = props(doc["topicConfig"])
    assert topic["flush.messages"] == flush and topic["min.insync.replicas"] == "2"


@pytest.mark.parametrize("level, ack", [("L1", 2), ("L2", 2), ("L3", 1), ("L4", 1), ("L2-bypass", 2), ("L4-bypass", 1)])
def test_pulsar_driver_carries_the_level(level, ack):
    doc = yaml.safe_load(drivers.render("pulsar", level, "stock"))
    assert doc["client"]["persistence"] == {"ensembleSize": 3, "writeQuorum": 3, "ackQuorum": ack, "deduplicationEnabled": False}


def test_tuning_and_variant_patch_the_client_side_only():
    tuned = yaml.safe_load(drivers.render("pulsar", "L1", "tuned"))
    stock = yaml.safe_load(drivers.render("pulsar", "L1", "stock"))
    assert tuned["consumer"]["maxTotalReceiverQueueSizeAcrossPartitions"] == 5000000
    assert stock["consumer"]["maxTotalReceiverQueueSizeAcrossPartitions"] == 50000
    nob = yaml.safe_load(drivers.render("pulsar", "L1", "stock", "no-batch"))
    assert nob["producer"]["batchingEnabled"] is False and nob["client"] == stock["client"]
    big = yaml.safe_load(drivers.render("kafka", "L1", "stock", "batch-128k-1ms"))
    assert props(big["producerConfig"])["batch.size"] == "131072" and props(big["producerConfig"])["acks"] == "all"


def test_kafka_has_no_bypass_level():
    with pytest.raises(dur.DurabilityError, match="not defined for kafka"):
        drivers.render("kafka", "L2-bypass", "tuned")


def test_pravega_driver_has_only_ombs_fields_and_names_the_quorums(monkeypatch):
    # the level's client settings stubbed (pure rendering): the BookKeeper quorums are the segment store's, so they go
    # into the header comment; the fields are OMB's PravegaConfig ones, which the runner checks strictly
    monkeypatch.setattr(drivers.dur, "client_settings", lambda system, level, tuning, d=None: {
        "bookkeeper": {"ensembleSize": 3, "writeQuorumSize": 3, "ackQuorumSize": 1}, "writer": {}})
    text = drivers.render("pravega", "L3", "stock", None, {"driver_variants": {}}, d=object())
    assert "ensemble 3 / write quorum 3 / ack quorum 1" in text.splitlines()[2]
    doc = yaml.safe_load(text)
    assert doc["driverClass"] == "io.openmessaging.benchmark.driver.pravega.PravegaBenchmarkDriver"
    assert set(doc) <= {"name", "driverClass", "client", "writer", "includeTimestampInEvent", "enableTransaction",
                        "eventsPerTransaction", "enableStreamAutoScaling", "eventsPerSecond", "kbytesPerSecond",
                        "createScope", "deleteStreams"}
    assert doc["client"] == {"controllerURI": "tcp://127.0.0.1:9090", "scopeName": "streambench"}
    assert doc["enableStreamAutoScaling"] is False and doc["includeTimestampInEvent"] is True
