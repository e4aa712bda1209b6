"""durability.yaml: the shipped file, the settings it implies, and a corpus of bad files."""
import copy
from pathlib import Path

import pytest
import yaml

from systems import durability as dur

SHIPPED = yaml.safe_load(dur.DEFAULT_PATH.read_text())


def test_shipped_file_loads_with_all_levels():
    d = dur.load()
    assert d.levels_for("kafka") == ["L1", "L2", "L3", "L4"]
    assert d.levels_for("pulsar") == ["L1", "L2", "L2-bypass", "L3", "L4", "L4-bypass"]
    assert d.levels_for("pravega") == ["L1", "L2", "L3", "L4"]
    assert set(d.tuning) >= {"stock", "tuned"}


@pytest.mark.parametrize("level,acks,flush", [("L1", "all", "1"), ("L2", "all", "10000"),
                                              ("L3", "1", "1"), ("L4", "1", "10000")])
def test_kafka_client_settings(level, acks, flush):
    c = dur.client_settings("kafka", level, "stock")
    assert c["producerConfig"]["acks"] == acks
    assert c["topicConfig"]["flush.messages"] == flush
    assert c["topicConfig"]["min.insync.replicas"] == "2"
    assert c["replicationFactor"] == 3
    assert all(isinstance(v, str) for v in c["producerConfig"].values())
    assert c["producerConfig"]["batch.size"] == "1048576" and c["producerConfig"]["linger.ms"] == "10"


@pytest.mark.parametrize("level,ack,write,sync", [("L1", 2, True, True), ("L2", 2, True, False),
                                                  ("L2-bypass", 2, False, False), ("L3", 1, True, True),
                                                  ("L4", 1, True, False), ("L4-bypass", 1, False, False)])
def test_pulsar_settings(level, ack, write, sync):
    c = dur.client_settings("pulsar", level, "tuned")
    assert c["client"]["persistence"] == {"ensembleSize": 3, "writeQuorum": 3, "ackQuorum": ack,
                                          "deduplicationEnabled": False}
    s = dur.server_settings("pulsar", level, "tuned")
    assert s["bookie"]["journalWriteData"] is write and s["bookie"]["journalSyncData"] is sync
    assert s["broker"]["managedLedgerDefaultAckQuorum"] == ack


@pytest.mark.parametrize("level,ack,sync", [("L1", 2, True), ("L2", 2, False), ("L3", 1, True), ("L4", 1, False)])
def test_pravega_settings(level, ack, sync):
    """Study 001: E3/W3/A2 with journal flush ("flush") is L1, without ("no flush") L2; A1 gives L3/L4."""
    s = dur.server_settings("pravega", level, "stock")
    assert s["segmentstore"] == {"bookkeeper.ensemble.size": 3, "bookkeeper.write.quorum.size": 3,
                                 "bookkeeper.ack.quorum.size": ack}
    assert s["bookie"]["journalWriteData"] is True and s["bookie"]["journalSyncData"] is sync
    assert s["bookie"]["journalPageCacheFlushIntervalMSec"] == (1 if sync else 1000)
    c = dur.client_settings("pravega", level, "tuned")
    assert c["bookkeeper"] == {"ensembleSize": 3, "writeQuorumSize": 3, "ackQuorumSize": ack}
    # the same bookie journal settings as Pulsar's at every level both systems have
    assert s["bookie"] == dur.server_settings("pulsar", level)["bookie"]


def test_tuning_profiles_differ_as_study_000_says():
    stock = dur.server_settings("pulsar", "L1", "stock")["broker"]
    tuned = dur.server_settings("pulsar", "L1", "tuned")["broker"]
    assert (stock["managedLedgerNewEntriesCheckDelayInMillis"], tuned["managedLedgerNewEntriesCheckDelayInMillis"]) == (10, 0)
    assert (stock["bookkeeperNumberOfChannelsPerBookie"], tuned["bookkeeperNumberOfChannelsPerBookie"]) == (16, 64)
    c = dur.client_settings("pulsar", "L1", "tuned")
    assert c["consumer"]["maxTotalReceiverQueueSizeAcrossPartitions"] == 5000000
    assert c["producer"]["batchingPartitionSwitchFrequencyByPublishDelay"] == 2


def test_kafka_server_settings_carry_broker_defaults():
    s = dur.server_settings("kafka", "L1")
    assert s["broker"]["log.flush.interval.messages"] == 1
    assert s["broker"]["default.replication.factor"] == 3


@pytest.mark.parametrize("system,level,tuning,field", [
    ("kafka", "L2-bypass", "stock", "levels.L2-bypass.kafka"),
    ("pravega", "L2-bypass", "stock", "levels.L2-bypass.pravega: level L2-bypass is not defined for pravega"),
    ("pravega", "L4-bypass", "tuned", "levels.L4-bypass.pravega"),
    ("pravega", "L5", "stock", "levels: unknown level 'L5'"),
    ("kafka", "L9", "stock", "unknown level"),
    ("rabbit", "L1", "stock", "unknown system"),
    ("pulsar", "L1", "fast", "unknown tuning profile"),
])
def test_bad_lookups(system, level, tuning, field):
    with pytest.raises(dur.DurabilityError, match=field):
        dur.client_settings(system, level, tuning)


def _set(doc, path, value):
    *parents, last = path
    node = doc
    for p in parents:
        node = node[p]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value


_DELETE = object()

# (description, path to change, new value, field the message must name, words it must contain)
BAD = [
    ("unknown top-level key", ["colour"], "blue", "colour", "unknown key"),
    ("unknown system in a level", ["levels", "L1", "rabbitmq"], {}, "levels.L1.rabbitmq", "unknown key"),
    ("unknown level name", ["levels", "L7"], copy.deepcopy(SHIPPED["levels"]["L1"]), "levels.L7", "L1..L4"),
    ("level name disagrees with modes", ["levels", "L2", "replication"], "async", "levels.L2", "level L4"),
    ("unknown replication mode", ["levels", "L1", "replication"], "quorum", "levels.L1.replication", "one of"),
    ("unknown Kafka key", ["levels", "L1", "kafka", "topic", "flush.mesages"], 1,
     "levels.L1.kafka.topic.flush.mesages", "unknown key"),
    ("unknown Pulsar bookie key", ["levels", "L1", "pulsar", "bookie", "journalSync"], True,
     "levels.L1.pulsar.bookie.journalSync", "unknown key"),
    ("acks=1 under sync replication", ["levels", "L1", "kafka", "producer", "acks"], "1",
     "levels.L1.kafka.producer.acks", "contradicts replication: sync"),
    ("acks=all under async replication", ["levels", "L4", "kafka", "producer", "acks"], "all",
     "levels.L4.kafka.producer.acks", "contradicts replication: async"),
    ("fsync per message under async local", ["levels", "L2", "kafka", "topic", "flush.messages"], 1,
     "levels.L2.kafka.topic.flush.messages", "contradicts local: async"),
    ("no fsync under sync local", ["levels", "L1", "kafka", "topic", "flush.messages"], 10000,
     "levels.L1.kafka.topic.flush.messages", "contradicts local: sync"),
    ("broker and topic flush differ", ["levels", "L1", "kafka", "broker", "log.flush.interval.messages"], 5,
     "levels.L1.kafka.broker.log.flush.interval.messages", "differ"),
    ("replication factor above node count", ["levels", "L1", "kafka", "replicationFactor"], 5,
     "levels.L1.kafka.replicationFactor", "exceeds"),
    ("min.insync above RF", ["levels", "L1", "kafka", "topic", "min.insync.replicas"], 4,
     "levels.L1.kafka.topic.min.insync.replicas", "exceeds"),
    ("Pravega ack quorum 1 under sync replication", ["levels", "L1", "pravega", "bookkeeper", "ackQuorum"], 1,
     "levels.L1.pravega.bookkeeper.ackQuorum", "contradicts replication: sync"),
    ("Pravega ack quorum 2 under async replication", ["levels", "L3", "pravega", "bookkeeper", "ackQuorum"], 2,
     "levels.L3.pravega.bookkeeper.ackQuorum", "contradicts replication: async"),
    ("Pravega ensemble above its bookies", ["levels", "L1", "pravega", "bookkeeper", "ensemble"], 4,
     "levels.L1.pravega.bookkeeper.ensemble", "exceeds the 3 bookies"),
    ("Pravega ack quorum above write quorum", ["levels", "L1", "pravega", "bookkeeper", "ackQuorum"], 4,
     "levels.L1.pravega.bookkeeper.ackQuorum", "exceeds writeQuorum"),
    ("Pravega journal sync under async local", ["levels", "L2", "pravega", "bookie", "journalSyncData"], True,
     "levels.L2.pravega.bookie.journalSyncData", "contradicts local: async"),
    ("Pravega without journal flush under sync local", ["levels", "L1", "pravega", "bookie", "journalSyncData"], False,
     "levels.L1.pravega.bookie.journalSyncData", "contradicts local: sync"),
    ("unknown Pravega bookie key", ["levels", "L1", "pravega", "bookie", "journalSync"], True,
     "levels.L1.pravega.bookie.journalSync", "unknown key"),
    ("Pravega on a bypass level", ["levels", "L2-bypass", "pravega"], copy.deepcopy(SHIPPED["levels"]["L2"]["pravega"]),
     "levels.L2-bypass.pravega", "must be null"),
    ("Pravega settings missing", ["levels", "L1", "pravega"], _DELETE, "levels.L1.pravega", "missing"),
    ("tuning sets a Pravega level key", ["tuning", "stock", "pravega", "segmentstore", "bookkeeper.ack.quorum.size"], 1,
     "tuning.stock.pravega.segmentstore.bookkeeper.ack.quorum.size", "belongs to the durability level"),
    ("journalWriteData=false with journalSyncData=true", ["levels", "L2-bypass", "pulsar", "bookie", "journalSyncData"],
     True, "levels.L2-bypass.pulsar.bookie.journalSyncData", "contradicts journalWriteData=false"),
    ("ackQuorum > writeQuorum", ["levels", "L1", "pulsar", "persistence", "ackQuorum"], 4,
     "levels.L1.pulsar.persistence.ackQuorum", "exceeds writeQuorum"),
    ("writeQuorum > ensemble", ["levels", "L1", "pulsar", "persistence", "ensemble"], 2,
     "levels.L1.pulsar.persistence.writeQuorum", "exceeds ensemble"),
    ("ensemble > bookies", ["levels", "L1", "pulsar", "persistence"], {"ensemble": 4, "writeQuorum": 3, "ackQuorum": 2},
     "levels.L1.pulsar.persistence.ensemble", "exceeds the 3 bookies"),
    ("ack-1 under sync replication", ["levels", "L1", "pulsar", "persistence", "ackQuorum"], 1,
     "levels.L1.pulsar.persistence.ackQuorum", "contradicts replication: sync"),
    ("ack-2 under async replication", ["levels", "L3", "pulsar", "persistence", "ackQuorum"], 2,
     "levels.L3.pulsar.persistence.ackQuorum", "contradicts replication: async"),
    ("journal sync under async local", ["levels", "L2", "pulsar", "bookie", "journalSyncData"], True,
     "levels.L2.pulsar.bookie.journalSyncData", "contradicts local: async"),
    ("journal bypass under sync local", ["levels", "L1", "pulsar", "bookie"],
     {"journalWriteData": False, "journalSyncData": False, "journalMaxGroupWaitMSec": 1,
      "journalPageCacheFlushIntervalMSec": 1}, "levels.L1.pulsar.bookie.journalWriteData", "contradicts local: sync"),
    ("Kafka settings on a bypass level", ["levels", "L2-bypass", "kafka"], copy.deepcopy(SHIPPED["levels"]["L2"]["kafka"]),
     "levels.L2-bypass.kafka", "no journal"),
    ("missing Pulsar settings", ["levels", "L1", "pulsar"], None, "levels.L1.pulsar", "must define"),
    ("string where an integer belongs", ["levels", "L1", "pulsar", "persistence", "ensemble"], "3",
     "levels.L1.pulsar.persistence.ensemble", "integer"),
    ("missing key", ["levels", "L1", "kafka", "producer"], _DELETE, "levels.L1.kafka.producer", "missing"),
    ("tuned profile missing", ["tuning", "tuned"], _DELETE, "tuning.tuned", "missing"),
    ("tuning sets a level key", ["tuning", "stock", "kafka", "producer", "acks"], "1",
     "tuning.stock.kafka.producer.acks", "belongs to the durability level"),
    ("unknown Pulsar tuning key", ["tuning", "tuned", "pulsar", "broker", "managedLedgerNewEntriesCheckDelay"], 0,
     "tuning.tuned.pulsar.broker.managedLedgerNewEntriesCheckDelay", "unknown key"),
    ("wrong schema version", ["schemaVersion"], 2, "schemaVersion", "unsupported"),
]


@pytest.mark.parametrize("desc,path,value,field,words", BAD, ids=[b[0] for b in BAD])
def test_bad_files(tmp_path, desc, path, value, field, words):
    doc = copy.deepcopy(SHIPPED)
    _set(doc, path, value)
    f = tmp_path / "durability.yaml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(dur.DurabilityError) as ei:
        dur.load(f)
    msg = str(ei.value)
    assert msg.startswith(f"{f}: "), msg
    assert f" {field}:" in msg or f" {field}." in msg or f": {field}:" in msg, msg
    assert words in msg, msg
    assert "\n" not in msg


def test_unreadable_and_invalid_yaml(tmp_path):
    with pytest.raises(dur.DurabilityError, match="cannot read"):
        dur.load(tmp_path / "absent.yaml")
    f = tmp_path / "broken.yaml"
    f.write_text("levels: [unclosed\n")
    with pytest.raises(dur.DurabilityError, match=f"{f}: not valid YAML"):
        dur.load(f)
