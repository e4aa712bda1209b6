"""Cluster plans on an inventory's hosts (systems/plan.py with testbeds/cluster.py's placement), as shipped: each
host's archive holds every file at its path, with the inventory's addresses and no loopback anywhere, the level's
settings from systems/durability.yaml, and a spec per node, one-off command and readiness stage."""
from __future__ import annotations

import json
import tarfile

import pytest

from systems import dist, durability
from systems import plan as splan
from systems.util import load_config, resolve
from testbeds import cluster, inventory
from testbeds.lab import inventory_doc, plan


@pytest.fixture()
def inv(tmp_path):
    doc = inventory_doc(plan("r1", 3, 1, "10.77.0.0/24", base=tmp_path), tmp_path / "r1")
    f = tmp_path / "inventory.json"
    f.write_text(json.dumps(doc))
    return inventory.load(f)


def shipped(inv, system, level, tmp_path, conf_dir=None, faultfs=False):
    """The plan, remote.json's vars, and every shipped file by host: {host: {path: text}}."""
    cfg = load_config()
    rundir = tmp_path / "run"
    rundir.mkdir()
    pl = splan.build(system, level, "tuned", cluster.hosts_placement(inv, system, rundir.name), cfg,
                     durability.load(resolve(cfg["durability_file"])), conf_dir=conf_dir)
    v = cluster.remote_vars(pl, rundir, cfg, faultfs)["sb_cluster"]
    by_host = {}
    for h, tar in v["bundles"].items():
        with tarfile.open(tar) as t:
            by_host[h] = {"/" + m.name: t.extractfile(m).read().decode() for m in t.getmembers()}
    return pl, v, by_host


def _files(by_host):
    return {p: t for fs in by_host.values() for p, t in fs.items()}


def test_kafka_plan(inv, tmp_path):
    pl, v, by_host = shipped(inv, "kafka", "L1", tmp_path)
    files = _files(by_host)
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
        for p in by_host[h.name]:
            assert inventory.under(p, h.root)
    for n in pl.nodes:
        host = next(h for h in inv.hosts if h.address == n.host.address)
        assert all(d.startswith(host.data_dir("log") + "/") for d in n.data_dirs)
    specs = [json.loads(t) for d, t in files.items() if d.endswith(".spec.json")]
    assert {s["node"] for s in specs} == {"kafka-1", "kafka-2", "kafka-3", "kafka-1-format", "kafka-2-format",
                                          "kafka-3-format"}
    # the node's log is capped on the host as on this machine
    assert {s["maxLogBytes"] for s in specs} == {load_config()["node_log_max_mb"] << 20}
    # each host waits for its own node's start-up line, checked there
    for h in inv.servers:
        (ready,) = v["stages"][0]["wait"][h.name]
        conds = json.loads(by_host[h.name][ready])["conds"]
        assert [(c["kind"], c["node"]) for c in conds] == [("log", f"kafka-{h.name[-1]}")]


def test_a_faultfs_kafka_mounts_every_data_directory_before_its_format_writes_there(inv, tmp_path):
    """Power-loss clusters on hosts: each broker's spec asks for faultfs, and the start playbook mounts them (sbnode.py
    mount) before the first stage, whose one-off command (StorageTool format) writes meta.properties into them; a
    mount made at the broker's start would hide what the format wrote."""
    pl, v, by_host = shipped(inv, "kafka", "L1", tmp_path, faultfs=True)
    assert v["stages"][0]["once"]  # the format runs in the first stage, before any start
    for h in inv.servers:
        (path,) = v["faultfs"][h.name]
        spec = json.loads(by_host[h.name][path])
        assert spec["node"] == f"kafka-{h.name[-1]}" and spec["faultfs"] is True and spec["mkdirs"]
        assert path in v["stages"][0]["start"][h.name]
    (tmp_path / "plain").mkdir()
    _, plain, plain_files = shipped(inv, "kafka", "L1", tmp_path / "plain")
    assert plain["faultfs"] == {}
    assert not any(json.loads(t).get("faultfs") for d, t in _files(plain_files).items() if d.endswith(".spec.json"))


@pytest.mark.skipif(not (dist.dist_dir("pulsar") / "conf").is_dir(), reason="pulsar distribution not prepared")
def test_pulsar_plan(inv, tmp_path):
    pl, sv, by_host = shipped(inv, "pulsar", "L1", tmp_path, dist.dist_dir("pulsar") / "conf")
    files = _files(by_host)
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
    assert [sorted(s["start"]) for s in sv["stages"]] == [["server-1"], ["server-1", "server-2", "server-3"]]
    # no loopback in any setting (the shipped templates' comments mention it)
    assert not [ln for t in files.values() for ln in t.splitlines() if "127.0.0.1" in ln and not ln.startswith("#")]


def test_pravega_plan(inv, tmp_path):
    pl, v, by_host = shipped(inv, "pravega", "L1", tmp_path)
    files = _files(by_host)
    assert not any("127.0.0.1" in t for t in files.values())
    where = {n.name: n.host.name for n in pl.nodes}
    assert where == {"zookeeper": "server-1", "bookie-1": "server-1", "bookie-2": "server-2", "bookie-3": "server-3",
                     "segmentstore": "server-1", "controller": "server-1"}
    ss = next(t for d, t in files.items() if d.endswith("segmentstore/config.properties"))
    assert "pravegaservice.service.published.host.nameOrIp=10.77.0.11\n" in ss
    tier2 = next(n for n in pl.nodes if n.name == "segmentstore").data_dirs[0]
    assert f"filesystem.root={tier2}\n" in ss and tier2.startswith(inv.servers[0].data_dir("log") + "/")
    for i in (1, 2, 3):
        bk = next(t for d, t in files.items() if d.endswith(f"bookie-{i}/bookkeeper.conf"))
        assert f"advertisedAddress=10.77.0.{10 + i}\n" in bk and "listeningInterface" not in bk
        assert "allowLoopback=false\n" in bk
        spec = json.loads(next(t for d, t in files.items() if d.endswith(f"bookie-{i}.spec.json")))
        assert f"-Dstreambench.http.bindAddress=10.77.0.{10 + i}" in spec["cmd"]
    ctl = json.loads(next(t for d, t in files.items() if d.endswith("controller.spec.json")))
    assert "-Dstreambench.grpc.bindAddress=10.77.0.11" in ctl["cmd"]
    # the bookies' readiness is checked on their own hosts, the controller's after the segment store's
    assert sorted(h for s in v["stages"] for h in s["wait"]) == ["server-1", "server-1", "server-1", "server-1",
                                                                  "server-2", "server-3"]
    assert pl.endpoints["pravega"]["controllerUri"] == "tcp://10.77.0.11:9090"


def test_the_inventory_plan_is_the_local_plan_node_by_node(tmp_path):
    """Issue 29's check on a real inventory (3 servers + 2 clients, the lab's): testbeds/cluster.py's placement gives,
    for every system, the plan this machine's launcher carries out, node by node (systems/tests/test_plan.py's
    comparison: placement taken out); the clients hold no node."""
    from systems.tests.test_plan import build, shape

    doc = inventory_doc(plan("r2", 3, 2, "10.77.0.0/24", base=tmp_path), tmp_path / "r2")
    f = tmp_path / "inventory.json"
    f.write_text(json.dumps(doc))
    inv5 = inventory.load(f)
    assert len(inv5.servers) == 3 and len(inv5.clients) == 2
    cfg = load_config()
    dur = durability.load(resolve(cfg["durability_file"]))
    conf = tmp_path / "conf"
    conf.mkdir()
    for name in ("zookeeper.conf", "bookkeeper.conf", "broker.conf"):
        (conf / name).write_text("")
    for system in splan.SYSTEMS:
        hosts = build(system, cluster.hosts_placement(inv5, system, "c1"), cfg, dur, conf)
        local = build(system, splan.local_placement(tmp_path / "run", tmp_path / "dist", "java"), cfg, dur, conf)
        a, b = shape(local), shape(hosts)
        for na, nb in zip(a["nodes"], b["nodes"], strict=True):
            assert na == nb, (system, na["name"])
        assert (a["stages"], a["files"], a["endpoints"]) == (b["stages"], b["files"], b["endpoints"]), system
        assert {n.host.name for n in hosts.nodes} <= {h.name for h in inv5.servers}
