"""Confluent 2020's raw files: fetched from the mirror against the pinned manifest, labelled, read, tabulated."""

from pathlib import Path

import pytest

from analysis import debate, published
from analysis.tests.paths import REPO

MIRROR = (REPO / ".." / "shared" / "published" / "confluent-2020").resolve()
MANIFEST = REPO / "analysis" / "published" / "confluent-2020.tsv"


@pytest.fixture(scope="module")
def fetched(tmp_path_factory):
    if not (MIRROR / "results").is_dir():
        pytest.fail(f"Confluent 2020 mirror not found at {MIRROR} (../shared/published/confluent-2020)")
    out = tmp_path_factory.mktemp("conf") / "confluent-2020"
    assert published.fetch(MANIFEST, out, mirror=MIRROR) == 26
    return out


def test_manifest_is_pinned_to_the_commit():
    rows = published.read_manifest(MANIFEST)
    assert {r["commit"] for r in rows.values()} == {"5b96f199e6628d8d969f886e7e329484061192ec"}
    assert sum(k.startswith("results/") for k in rows) == 12


def test_a_changed_file_is_refused(fetched, tmp_path):
    bad = tmp_path / "mirror"
    import shutil
    shutil.copytree(MIRROR, bad)
    f = bad / "results/kafka/latency/sync-200k.json"
    f.write_bytes(f.read_bytes().replace(b"Kafka", b"Kafkb", 1))
    with pytest.raises(Exception, match=r"sync-200k\.json.*blob_sha1"):
        published.fetch(MANIFEST, tmp_path / "out", mirror=bad)
    assert not (tmp_path / "out").exists()


def test_all_twelve_files_load_with_their_durability(fetched):
    rows = debate.confluent_rows(fetched, MANIFEST)
    assert len(rows) == 12 and {r["system"] for r in rows} == {"kafka", "pulsar", "rabbitmq"}
    by = {r["file"]: r for r in rows}
    k = by["results/kafka/latency/sync-200k.json"]
    assert k["level"] == "L1" and k["windows"] == 60
    # the annotated example of omb-formats.md: aggregated p99 publish 19.712 ms; the quantile map agrees
    assert k["publish_p99_ms"] == pytest.approx(19.712, rel=0.01)
    assert by["results/kafka/throughput/default-sync.json"]["level"] == "L2"
    assert by["results/pulsar/throughput/default-sync-raid0.json"]["level"] == "L1"
    assert by["results/rabbitmq/latency/classic-30k.json"]["level"] == "n/a"


def test_unknown_path_names_the_file():
    with pytest.raises(Exception, match=r"results/kafka/odd\.json"):
        debate.parse_path("results/kafka/odd.json")
