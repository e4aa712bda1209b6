"""Cluster plans for remote hosts: every file rendered by the local launcher's functions, with the inventory's
addresses and no loopback anywhere; the level's settings from systems/durability.yaml."""
from __future__ import annotations

import json

import pytest

from systems import dist, durability
from systems.util import load_config
from testbeds import cluster, inventory
from testbeds.lab import inventory_doc, plan


@pytest.fixture()
def inv(tmp_path):
    doc = inventory_doc(plan("r1", 3, 1, "10.77.0.0/24", base=tmp_path), tmp_path / "r1")
    f = tmp_path / "inventory.json"
    f.write_text(json.dumps(doc))
    return inventory.load(f)


def _files(pl):
    return {f["dest"]: open(f["src"]).read() for fs in pl.files.values() for f in fs}


def test_kafka_plan(inv, tmp_path):
    pl = cluster.Plan(inv, "kafka", "L1", "tuned", tmp_path / "run", load_config())
    cluster.plan_kafka(pl)
    files = _files(pl)
    props = [t for d, t in files.items() if d.endswith("server.properties")]
    assert len(props) == 3
    voters = "1@10.77.0.11:9093,2@10.77.0.12:9093,3@10.77.0.13:9093"
    for i, t in enumerate(props):
        assert f"controller.quorum.voters={voters}" in t
        assert f"listeners=PLAINTEXT://10.77.0.{11 + i}:9092,CONTROLLER://10.77.0.{11 + i}:9093" in t
        assert "log.flush.interval.messages=1" in t
    assert not any("127.0.0.1" in t for t in files.values())
    assert pl.endpoints["kafka"]["bootstrapServers"] == "10.77.0.11:9092,10.77.0.12:9092,10.77.0.13:9092"
    # every remote path under the host's root; data under the host's log directory
    for h in inv.servers:
        for f in pl.files[h.name]:
            assert inventory.under(f["dest"], h.root)
    for n in pl.nodes:
        host = next(h for h in inv.hosts if h.address == n["host"])
        assert all(d.startswith(host.data_dir("log") + "/") for d in n["dataDirs"])
    specs = [json.loads(t) for d, t in files.items() if d.endswith("/spec.json")]
    assert {s["node"] for s in specs} == {"kafka-1", "kafka-2", "kafka-3", "kafka-1-format", "kafka-2-format",
                                          "kafka-3-format"}


@pytest.mark.skipif(not (dist.dist_dir("pulsar") / "conf").is_dir(), reason="pulsar distribution not prepared")
def test_pulsar_plan(inv, tmp_path):
    pl = cluster.Plan(inv, "pulsar", "L1", "tuned", tmp_path / "run", load_config())
    cluster.plan_pulsar(pl, dist.dist_dir("pulsar") / "conf")
    files = _files(pl)
    bk = {d: t for d, t in files.items() if d.endswith("bookkeeper.conf")}
    assert len(bk) == 3
    ss = durability.server_settings("pulsar", "L1", "tuned")
    for d, t in bk.items():
        i = int(d.split("bookie-")[1][0])
        assert f"\nadvertisedAddress=10.77.0.{10 + i}\n" in t
        assert "\nlisteningInterface=lo" not in t and "\nallowLoopback=false" in t
        assert "\nzkServers=10.77.0.11:2181\n" in t
        for k, v in ss["bookie"].items():
            assert f"\n{k}={str(v).lower() if isinstance(v, bool) else v}\n" in t
    broker = next(t for d, t in files.items() if d.endswith("broker.conf"))
    assert "\nbindAddress=10.77.0.11\n" in broker and "\nadvertisedAddress=10.77.0.11\n" in broker
    zk = next(t for d, t in files.items() if d.endswith("zookeeper.conf"))
    assert "\nclientPortAddress=10.77.0.11\n" in zk
    assert pl.endpoints["pulsar"]["serviceUrl"] == "pulsar://10.77.0.11:6650"
    assert [sorted(s.get("start", {})) for s in pl.stages] == [["server-1"], ["server-1", "server-2", "server-3"]]
