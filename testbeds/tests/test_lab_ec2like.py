"""The EC2-like lab (`lab up --ec2-like --login-user`, issue 30): the controller has no route to the hosts' private
addresses and reaches each host only at its public address on tcp/22, as a non-root user with passwordless sudo,
learning the host keys on first contact and insisting on them afterwards; `down` leaves no namespace, user or
sudoers file. A real lab: namespaces, nftables, sshd, Ansible. Needs root, sshd and nft."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from testbeds import inventory, lab, remote
from testbeds import util

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.geteuid() != 0 or not Path(lab.SSHD).exists(), reason="needs root and sshd")]
ID = "e44"
SUBNET = "10.77.45.0/24"


@pytest.fixture(scope="module")
def ec2():
    # the login user must reach the lab's keys and hosts' directories: pytest's tmp_path lies under a root-only one
    base = Path(tempfile.mkdtemp(prefix="sb-labec2-", dir="/tmp"))
    base.chmod(0o755)
    try:
        path = lab.up(ID, 3, 1, SUBNET, base=base, log=lambda m: None, login_user=True, ec2_like=True)
        yield path, json.loads((base / ID / "state.json").read_text())
    finally:
        lab.down(ID, base=base, log=lambda m: None)
        shutil.rmtree(base, ignore_errors=True)
        assert not [n for n in lab.netns_list() if n.startswith(f"sbl-{ID}-")]
        assert subprocess.run(["getent", "passwd", lab.login_user_name(ID)], capture_output=True).returncode != 0
        assert not (lab.SUDOERS_DIR / f"streambench-lab-{ID}").exists()
        assert not remote.control_path_dirs("lab", ID)


def _listen(ns: str, port: int) -> subprocess.Popen:
    """A TCP listener on every address of namespace ns (as a broker binds 0.0.0.0), until killed."""
    code = ("import socket, sys\ns = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            f"s.bind(('0.0.0.0', {port})); s.listen(8); print('up', flush=True)\n"
            "while True:\n    c, _ = s.accept(); c.close()\n")
    p = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "up"
    return p


def test_the_inventory_reads_as_a_fleets(ec2):
    path, state = ec2
    inv = inventory.load(path)
    assert inv.doc["ssh"]["user"] == lab.login_user_name(ID) != "root"
    assert "StrictHostKeyChecking=accept-new" in inv.doc["ssh"]["options"]
    assert Path(inv.hosts[0].ssh["knownHosts"]).read_text() == "", "no host key is known before the first contact"
    assert inv.provider["sharedFilesystem"] is False and inv.provider["ec2Like"] is True
    for h in inv.hosts:
        assert h.ssh_address != h.address, h.name   # ssh goes to the public address, the cluster uses the private one


def test_the_controller_has_no_route_to_private_addresses_and_only_ssh_on_public_ones(ec2):
    _, state = ec2
    ctl = state["controller"]["netns"]
    server, other = state["hosts"][0], state["hosts"][1]
    broker = _listen(server["netns"], 9092)
    try:
        for h in state["hosts"]:
            assert lab._port_open(ctl, h["publicAddress"], 22, within=3), h["name"]
            assert not lab._port_open(ctl, h["address"], 22, within=3), f"{h['name']}: private address reached"
        # a port a broker listens on: another host reaches it at the private address; the controller does not at
        # the public one (dropped: as a security group admitting ssh only)
        assert lab._port_open(other["netns"], server["address"], 9092, within=3)
        assert not lab._port_open(ctl, server["publicAddress"], 9092, within=3)
        r = subprocess.run(["ip", "netns", "exec", ctl, "ip", "route", "get", server["address"]],
                           capture_output=True, text=True)
        assert r.returncode != 0 and "unreachable" in r.stderr, (r.stdout, r.stderr)
    finally:
        broker.kill()
        broker.wait()


def test_first_contact_learns_each_host_key_then_a_changed_key_is_refused_naming_the_host(ec2, tmp_path):
    path, state = ec2
    inv = inventory.load(path)
    for h in inv.hosts:
        out = remote.ssh(h, "id -un && sudo -n id -u", timeout=60).stdout.split()
        assert out == [lab.login_user_name(ID), "0"], (h.name, out)   # the login user, root through sudo
    known = Path(inv.hosts[0].ssh["knownHosts"])
    assert len(known.read_text().splitlines()) == len(inv.hosts)
    for h in inv.hosts:  # one key per host, learnt at its public address (ssh may hash the names)
        assert subprocess.run(["ssh-keygen", "-F", h.ssh_address, "-f", str(known)], capture_output=True).returncode == 0
    # a host whose key changed (a new instance at a reused address, or a man in the middle): refused
    victim = inv.hosts[1]
    kh = tmp_path / "known_hosts"
    shutil.copy(known, kh)
    subprocess.run(["ssh-keygen", "-q", "-R", victim.ssh_address, "-f", str(kh)], check=True, capture_output=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k")], check=True)
    fake = (tmp_path / "k.pub").read_text().split()
    with kh.open("a") as f:
        f.write(f"{victim.ssh_address} {fake[0]} {fake[1]}\n")
    doc = json.loads(path.read_text())
    doc["ssh"]["knownHosts"] = str(kh)
    (tmp_path / "inv.json").write_text(json.dumps(doc))
    changed = inventory.load(tmp_path / "inv.json")
    with pytest.raises(util.TestbedError) as e:
        remote.ssh(changed.host(victim.name), "true", timeout=60)
    assert str(e.value).startswith(f"host {victim.name} ({victim.ssh_address}): unreachable over ssh"), str(e.value)
    remote.ssh(changed.host(inv.hosts[0].name), "true", timeout=60)  # the others still answer


def test_ansible_reaches_every_host_as_the_login_user(ec2):
    path, _ = ec2
    r = subprocess.run([sys.executable, "-m", "testbeds", "ping", "--inventory", str(path)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
