"""Issue 30, blocker 5: the disk guard of a cell on an inventory's hosts measures the servers' data directories (df
over ssh), not the controller's disk: each server's share of the cell is checked against its own file system before
the cluster starts, and a shortfall is one line naming the host and the path. A real sshd on 127.0.0.1."""
from __future__ import annotations

import json
import shutil

import pytest

from testbeds import hooks
from testbeds.tests.localsshd import free_port, inventory_doc, needs_sshd
from workloads import guard
from workloads.run import CellFailure, Clusters


def _inventory(tmp_path, sshd, closed: int | None = None):
    doc = inventory_doc(tmp_path, sshd)
    if closed:
        doc["hosts"][1]["ssh"] = {"port": closed}
    f = tmp_path / "inventory.json"
    f.write_text(json.dumps(doc))
    return f, doc


@needs_sshd
def test_each_server_s_data_directory_is_read_with_df_over_ssh(sshd, tmp_path):
    sshd.start()
    f, doc = _inventory(tmp_path, sshd)
    disks = hooks.server_disks(str(f))
    servers = [h for h in doc["hosts"] if "server" in h["roles"]]
    assert [d["host"] for d in disks] == [h["name"] for h in servers]  # one file system each here
    du = shutil.disk_usage(tmp_path)
    for d in disks:
        assert d["total"] == du.total and abs(d["free"] - du.free) < 2e9, d  # the same disk, read remotely


@needs_sshd
def test_a_cell_too_big_for_the_servers_is_refused_naming_host_and_path(sshd, tmp_path):
    sshd.start()
    f, doc = _inventory(tmp_path, sshd)
    cl = Clusters(tmp_path / "clusters", {}, str(f))
    checked = cl.check_disk(3e9, "cell kafka/L1/x/rep-1")  # 1 GB per server
    assert len(checked) == 3 and all(c["needBytes"] == int(1e9) for c in checked)
    with pytest.raises(guard.DiskShort) as e:
        cl.check_disk(3e18, "cell kafka/L1/x/rep-1")
    msg = str(e.value)
    first = doc["hosts"][0]
    assert "\n" not in msg and f"on {first['name']}:{first['dataDirs']['log']}" in msg
    assert "needs about 1000000000.0 GB" in msg and "33% of it per server" in msg


@needs_sshd
def test_a_server_that_does_not_answer_fails_the_cell_naming_it(sshd, tmp_path):
    sshd.start()
    f, doc = _inventory(tmp_path, sshd, closed=free_port())
    with pytest.raises(CellFailure) as e:
        Clusters(tmp_path / "clusters", {}, str(f)).check_disk(1e6, "cell x")
    assert f"host {doc['hosts'][1]['name']}" in str(e.value)


def test_directories_on_one_file_system_count_once_while_it_is_written(tmp_path, monkeypatch):
    """The servers' disks are read while clusters write there: two df calls on one file system differ in their numbers,
    and the file system is still one (known by its mount point). Before, the numbers were its identity, so a busy disk
    was counted twice, its free space with it (seen in env/test with the lab's hosts beside other work)."""
    import subprocess
    from types import SimpleNamespace

    from testbeds import remote

    key = tmp_path / "key"
    key.write_text("not used: ssh is replaced below\n")
    doc = inventory_doc(tmp_path, SimpleNamespace(port=22, client_key=key))
    for h in doc["hosts"]:
        h["root"] = "/"
        if "server" in h["roles"]:
            h["dataDirs"] = {"journal": "/data/j", "ledger": "/data/l", "log": "/other/log"}
    f = tmp_path / "inventory.json"
    f.write_text(json.dumps(doc))
    # df of /data/j, /data/l, /other/log (sorted) on each server: /data written between the first two calls
    out = "1000 100 900 /data\n1000 104 896 /data\n500 10 490 /other fs\n"
    monkeypatch.setattr(remote, "ssh", lambda h, cmd, **kw: subprocess.CompletedProcess(cmd, 0, out, ""))
    disks = hooks.server_disks(str(f))
    assert [(d["host"], d["path"], d["free"]) for d in disks] == [
        (h, p, free) for h in ("server-1", "server-2", "server-3") for p, free in (("/data/j", 900), ("/other/log", 490))]
