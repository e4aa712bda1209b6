"""A real lab (namespaces + sshd, no brokers) and the faults the issue names: an unreachable host, an SSH auth
failure, a data directory that cannot be created. Each is one line naming the host (and the inventory file
and field when the file is at fault); `down` leaves nothing. Needs root and /usr/sbin/sshd."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testbeds import lab, remote

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.geteuid() != 0 or not Path(lab.SSHD).exists(), reason="needs root and sshd")]
ID = "f12"


def _tb(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "testbeds", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def inv(tmp_path_factory):
    base = tmp_path_factory.mktemp("labs")
    path = lab.up(ID, 3, 1, "10.77.1.0/24", base=base, log=lambda m: None)
    try:
        yield path
    finally:
        lab.down(ID, base=base, log=lambda m: None)
        assert not [n for n in lab.netns_list() if n.startswith(f"sbl-{ID}-")]
        # the tests' inventory copies each had their own ssh control directory: down removes them all by the id
        assert not remote.control_path_dirs("lab", ID)


def _variant(inv: Path, name: str, mutate) -> Path:
    doc = json.loads(inv.read_text())
    mutate(doc)
    f = inv.with_name(name)
    f.write_text(json.dumps(doc))
    return f


def test_ping_all(inv):
    r = _tb("ping", "--inventory", str(inv))
    assert r.returncode == 0, r.stderr


def test_auth_failure_names_the_host(inv, tmp_path):
    key = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    f = _variant(inv, "wrong-key.json", lambda d: d["hosts"][2].setdefault("ssh", {}).update(privateKey=str(key)))
    r = _tb("ping", "--inventory", str(f))
    assert r.returncode == 2
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("testbeds: error: host server-3"), line


def test_unreachable_host_names_the_host(inv):
    f = _variant(inv, "unreachable.json", lambda d: d["hosts"][1].update(address="10.77.1.99"))
    r = _tb("ping", "--inventory", str(f))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("testbeds: error: host server-2")


def test_data_dir_not_creatable_names_file_and_field(inv):
    doc = json.loads(inv.read_text())
    root = Path(doc["hosts"][0]["root"])
    (root / "a-file").write_text("not a directory\n")
    f = _variant(inv, "baddir.json", lambda d: d["hosts"][0]["dataDirs"].update(log=str(root / "a-file" / "log")))
    r = _tb("prepare", "--inventory", str(f), "--systems", "", timeout=600)
    assert r.returncode == 2
    line = r.stderr.strip().splitlines()[-1]
    assert "host server-1" in line and f"{f}: hosts[0].dataDirs.log" in line
    # the other hosts stopped at that task too (any_errors_fatal): none got the later tasks' host-side helper
    assert not [h["name"] for h in doc["hosts"] if (Path(h["workDir"]) / "lib" / "sbnode.py").exists()]


def test_stale_lab_removed_by_next_up(tmp_path):
    p1 = lab.up("g12", 3, 1, "10.77.2.0/24", base=tmp_path, log=lambda m: None)
    pids = [int(Path(x).read_text().split()[0]) for x in json.loads(p1.read_text())["provider"]["sshdPidFiles"].values()]
    try:
        # a crash of the process that made it: nothing ran down; the next up finds and removes it
        lab.up("g12", 3, 1, "10.77.2.0/24", base=tmp_path, log=lambda m: None)
        for pid in pids:
            st = Path(f"/proc/{pid}/stat")
            assert not st.exists() or st.read_text().split(") ")[1].startswith("Z")
    finally:
        lab.down("g12", base=tmp_path, log=lambda m: None)
    assert not [n for n in lab.netns_list() if n.startswith("sbl-g12-")]
    assert not (tmp_path / "g12").exists()
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_a_caller_outside_the_controller_namespace_reaches_the_hosts(inv):
    """workloads/run.py runs in this machine's own namespace, where a lab's addresses do not exist: its ssh calls
    (the servers' disk check, the clocks, the samplers) go through the controller's namespace by themselves."""
    from testbeds import hooks, remote
    from testbeds import inventory as inv_mod
    i = inv_mod.load(inv)
    assert remote.via(i.hosts[0])[:3] == ["ip", "netns", "exec"]  # this test process is not in it
    disks = hooks.server_disks(str(inv))
    assert [d["host"] for d in disks] == [h.name for h in i.servers]
    assert remote.ssh(i.clients[0], "hostname").stdout.strip() == i.clients[0].name
