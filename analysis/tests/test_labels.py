import collections
import csv

import pytest

from analysis import InputError, labels
from analysis.tests.paths import MANIFEST


def manifest_paths():
    with open(MANIFEST, newline="") as f:
        return [r["local_path"] for r in csv.DictReader(f, delimiter="\t")]


def test_every_published_path_parses():
    paths = manifest_paths()
    assert len(paths) == 124
    got = collections.Counter(labels.parse_published_path(p)["experiment"] for p in paths)
    assert got == {"E000-LAT3": 60, "E000-CU": 12, "E000-MT1": 9, "E000-MT3": 9, "E000-MT4": 9,
                   "E000-LAT2": 8, "E000-LAT1": 8, "E000-MT2": 5, "E000-LAT1P": 4}
    # every label set is complete
    for p in paths:
        lab = labels.parse_published_path(p)
        assert lab["level"] in {"L1", "L2", "L3", "L4"} and lab["partitions"] >= 1, p


@pytest.mark.parametrize("path, expect", [
    ("results/latency/sync/kafka-100-partitions-1kb-batched-1ms-1mb-ack-all-sync.json",
     dict(experiment="E000-LAT1", system="kafka", ack=2, local_durability="sync", level="L1", series="kafka-ack-all",
          partitions=100, subscriptions=1, producers_per_topic=2)),
    ("results/latency/10_subscriptions/data_nosync/pulsar-100-partitions-1kb-batched-1ms-1mb-ack-1-10-sub-nosync.json",
     dict(experiment="E000-LAT2", system="pulsar", ack=1, local_durability="async", level="L4", subscriptions=10)),
    ("results/catchup_read/bypass-journal/pulsar-backlog-100-partitions-1kb-batched-1ms-ack-2-bypass-journal.json",
     dict(experiment="E000-CU", local_durability="bypass", level="L2", backlog_gb=512, catchup_mode="bypass-journal")),
    ("results/catchup_read/bypass-journal/kafka-backlog-100-partitions-1kb-batched-1ms-ack-1-nosync.json",
     dict(experiment="E000-CU", system="kafka", local_durability="async", level="L4")),
    ("results/max_throughput/single_partition_single_client/data_sync/kafka-1-partitions-1kb-batched-1ms-1mb-ack-all-1-client-sync.json",
     dict(experiment="E000-MT4", producers_per_topic=1, consumers_per_subscription=1, partitions=1, producer_rate_msgps=0)),
    ("results/latency/partitions/pulsar/data_sync_ack_2/pulsar-1-partitions-1kb-batched-1ms-1mb-ack-2-sync.json",
     dict(experiment="E000-LAT3", partitions=1, ack=2, level="L1")),
    ("results/max_throughput/multiple_partitions/2000_partitions/pulsar-2000-partitions-1kb-batched-1ms-1mb-ack-2-bypass-journal.json",
     dict(experiment="E000-MT2", partitions=2000, local_durability="bypass")),
])
def test_hand_checked_labels(path, expect):
    lab = labels.parse_published_path(path)
    for k, v in expect.items():
        assert lab[k] == v, k


@pytest.mark.parametrize("path, why", [
    ("results/latency/sync/kafka-100-partitions-1kb-ack-all-sync.json", "unknown file name"),
    ("results/latency/weird/kafka-100-partitions-1kb-batched-1ms-1mb-ack-all-sync.json", "unknown folder"),
    ("results/latency/sync/kafka-100-partitions-1kb-batched-1ms-1mb-ack-all-nosync.json", "folder says"),
    ("results/latency/sync/kafka-100-partitions-1kb-batched-1ms-1mb-ack-2-sync.json", "not a kafka"),
    ("results/latency/partitions/data_sync_ack_1/kafka-100-partitions-1kb-batched-1ms-1mb-ack-all-sync.json", "folder says"),
    ("other/kafka.json", "not under results"),
])
def test_unknown_patterns_name_the_file(path, why):
    with pytest.raises(InputError) as e:
        labels.parse_published_path(path)
    assert path in str(e.value) and why in str(e.value)


def test_raw_path():
    lab = labels.parse_raw_path("local/pulsar/L2-bypass/1-topic-100-partitions-1kb-2p-2c-200k/rep-3.json")
    assert (lab["system"], lab["level"], lab["local_durability"], lab["ack"], lab["repetition"]) == ("pulsar", "L2", "bypass", 2, 3)
    assert (lab["partitions"], lab["producers_per_topic"], lab["message_size_bytes"]) == (100, 2, 1024)
    with pytest.raises(InputError, match="kafka/L2-bypass"):
        labels.parse_raw_path("local/kafka/L2-bypass/w/rep-1.json")
    with pytest.raises(InputError, match="local/kafka/L5/w/rep-1.json"):
        labels.parse_raw_path("local/kafka/L5/w/rep-1.json")
    with pytest.raises(InputError, match="local/kafka/L1/w/run-1.json"):
        labels.parse_raw_path("local/kafka/L1/w/run-1.json")
    # a system other than Kafka/Pulsar (e.g. Pravega for study 001) is labelled, not rejected
    assert labels.parse_raw_path("local/pravega/L1/w/rep-1.json")["series"] == "pravega-ack-2"


@pytest.mark.parametrize("workload, experiment, shape", [
    ("1-topic-100-partitions-1kb-2p-2c-200k", "E000-LAT1", dict(partitions=100, subscriptions=1, producer_rate_msgps=200000)),
    ("1-topic-100-partitions-1kb-2p-2c-10sub-200k", "E000-LAT2", dict(subscriptions=10)),
    ("1-topic-8000-partitions-1kb-2p-2c-200k", "E000-LAT3", dict(partitions=8000)),
    ("1-topic-2000-partitions-1kb-4p-4c-max", "E000-MT2", dict(producers_per_topic=4, producer_rate_msgps=0)),
    ("1-topic-1-partition-1kb-1p-1c-max", "E000-MT4", dict(partitions=1)),
    ("1-topic-100-partitions-1kb-2p-2c-200k-backlog", "E000-CU", dict(backlog_gb=512.0)),
    ("1-topic-100-partitions-1kb-2p-2c-200k-mixed", "E000-MIX", {}),
    ("1-topic-100-partitions-1kb-4p-4c-500k", "E004-T2", dict(partitions=100, producers_per_topic=4, study="004")),
    ("1-topic-1-partition-1kb-4p-1c-max", "E004-T1C1", dict(partitions=1, consumers_per_subscription=1, study="004")),
    ("1-topic-6-partitions-100b-1p-1c-50k", "E002-LAT", dict(partitions=6, message_size_bytes=100, study="002")),
    ("1-topic-1-partition-100b-1p-1c-keyed-10k--rate-50000", "other", dict(producer_rate_msgps=50000, message_size_bytes=100)),
    ("not-a-workload-name", "other", {}),
])
def test_raw_workload_ids(workload, experiment, shape):
    lab = labels.parse_raw_path(f"ci/kafka/L1+stock/{workload}/rep-1.json")
    assert lab["experiment"] == experiment and lab["tuning"] == "stock"
    for k, v in shape.items():
        assert lab[k] == v, k
