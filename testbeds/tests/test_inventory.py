"""The inventory loader: schema errors and the checks beyond it, each one line naming file and field."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from testbeds import inventory
from testbeds.lab import inventory_doc, plan


def _doc(tmp_path):
    p = plan("u1", 3, 1, "10.77.0.0/24", base=tmp_path)
    return inventory_doc(p, tmp_path / "u1")


def _write(tmp_path, doc):
    f = tmp_path / "inventory.json"
    f.write_text(json.dumps(doc))
    return f


def test_lab_inventory_is_valid(tmp_path):
    inv = inventory.load(_write(tmp_path, _doc(tmp_path)))
    assert [h.name for h in inv.servers] == ["server-1", "server-2", "server-3"]
    assert [h.name for h in inv.clients] == ["client-1"]
    assert inv.servers[1].address == "10.77.0.12"
    assert inv.provider["controllerNetns"] == "sbl-u1-ctl"
    assert all(not h.address.startswith("127.") for h in inv.hosts)


@pytest.mark.parametrize("mutate, expect", [
    (lambda d: d["hosts"][1]["dataDirs"].update(log="/elsewhere/log"),
     "hosts[1].dataDirs.log: /elsewhere/log is not under the host's root"),
    (lambda d: d["hosts"][0]["dataDirs"].update(journal="/x/../../etc"), "hosts[0].dataDirs.journal"),
    (lambda d: d["hosts"][2].update(workDir="/tmp/w"), "hosts[2].workDir: /tmp/w is not under"),
    (lambda d: d["hosts"].pop(2), "2 host(s) with role 'server', at least 3 needed"),
    (lambda d: d["hosts"].pop(3), "0 host(s) with role 'client', at least 1 needed"),
    (lambda d: d["hosts"][0].pop("roles"), "hosts[0]: 'roles' is a required property"),
    (lambda d: d["hosts"][3].update(roles=["switch"]), "hosts[3].roles[0]: 'switch' is not one of"),
    (lambda d: d["hosts"][1].update(name="server-1"), "hosts[1].name: 'server-1' is also hosts[0]"),
    (lambda d: d["ssh"].pop("privateKey"), "hosts[0].ssh.privateKey: missing"),
    (lambda d: d.update(schemaVersion=2), "schemaVersion: 1 was expected"),
    (lambda d: d["hosts"][0].update(colour="red"), "hosts[0]: Additional properties are not allowed"),
])
def test_bad_inventory_one_line(tmp_path, mutate, expect):
    d = copy.deepcopy(_doc(tmp_path))
    mutate(d)
    f = _write(tmp_path, d)
    with pytest.raises(inventory.InventoryError) as e:
        inventory.load(f)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{f}: ")
    assert expect in msg


def test_unreadable_and_bad_json(tmp_path):
    with pytest.raises(inventory.InventoryError, match="cannot read the inventory"):
        inventory.load(tmp_path / "missing.json")
    f = tmp_path / "bad.json"
    f.write_text("{")
    with pytest.raises(inventory.InventoryError, match="not valid JSON"):
        inventory.load(f)


def test_under():
    assert inventory.under("/a/b/c", "/a/b")
    assert inventory.under("/anything", "/")
    assert not inventory.under("/a/bc", "/a/b")
    assert not inventory.under("/a/b/../c", "/a/b")


def test_lab_names_carry_the_id_and_fit_ifnamsiz(tmp_path):
    p = plan("abc123", 3, 9, "10.77.0.0/24", base=tmp_path)
    names = [p["switch"], p["bridge"], p["controller"]["netns"], p["controller"]["veth"], p["controller"]["peer"]]
    for h in p["hosts"]:
        names += [h["netns"], h["veth"], h["peer"]]
        assert len(h["veth"]) <= 15 and len(h["peer"]) <= 15
    assert all("abc123" in n for n in names)
    from testbeds.util import TestbedError
    with pytest.raises(TestbedError, match="lab id"):
        plan("Bad_Id", 3, 1, "10.77.0.0/24", base=tmp_path)
    with pytest.raises(TestbedError, match="not a private range"):
        plan("ok", 3, 1, "8.8.8.0/24", base=tmp_path)


def test_host_pids_sees_the_lab_namespaces_and_nothing_of_remote_hosts(tmp_path, monkeypatch):
    from testbeds import hooks, lab
    seen = []
    monkeypatch.setattr(lab, "netns_pids", lambda *ns: seen.append(ns) or [len(seen)])
    assert hooks.host_pids(None) is None
    servers, clients = hooks.host_pids(str(_write(tmp_path, _doc(tmp_path))))
    assert servers() == [1] and seen == [("sbl-u1-s1", "sbl-u1-s2", "sbl-u1-s3")]
    assert clients() == [2] and seen[-1] == ("sbl-u1-c1",)
    doc = _doc(tmp_path)
    doc["testbed"], doc["provider"] = "aws", {"kind": "aws", "region": "eu-west-1"}
    assert hooks.host_pids(str(_write(tmp_path, doc))) == "remote"


def test_node_dirs_are_the_server_hosts_run_directories(tmp_path):
    """On a lab (the inventory says the hosts share this machine's file system) the server hosts' run directories
    are read in place; hosts elsewhere are test_hostsample.py's (their GC logs are copied over ssh)."""
    from testbeds import hooks
    rundir, hosts = tmp_path / "run", [tmp_path / "h1" / "run", tmp_path / "h2" / "run"]
    for d in (rundir, *hosts):
        d.mkdir(parents=True)
    inv = str(_write(tmp_path, _doc(tmp_path)))
    assert json.loads(Path(inv).read_text())["provider"]["sharedFilesystem"] is True
    assert hooks.node_dirs(rundir, None) == [rundir]
    assert hooks.node_dirs(rundir, inv) == []  # no remote.json (yet): nothing to read
    (rundir / "remote.json").write_text(json.dumps({"sb_cluster": {"rundir": {"server-1": str(hosts[0]),
                                                                              "server-2": str(hosts[1]),
                                                                              "server-3": str(tmp_path / "gone")}}}))
    assert hooks.node_dirs(rundir, inv) == hosts
