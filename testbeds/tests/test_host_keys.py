"""First contact with hosts whose keys nobody knows yet (issue 30, blocker 3): the inventory's host-key choice
wins for ssh, scp and Ansible (OpenSSH keeps the first value of an option), new keys go to the testbed's own
known_hosts, and a changed key is refused afterwards."""
from __future__ import annotations

import configparser
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from testbeds.tests.localsshd import inventory_doc, keygen, needs_sshd

from testbeds import inventory, remote
from testbeds.aws import plan, provision
from testbeds import util


def first(options: list[str], name: str) -> str | None:
    """The value ssh uses for an option: the first one given (`-o Name=value` pairs or `Name=value` words)."""
    words = [w for w in options if w != "-o"]
    for w in words:
        k, _, v = w.partition("=")
        if k.lower() == name.lower():
            return v
    return None


def known_hosts_key(known: Path, port: int) -> str | None:
    """The key a known_hosts file holds for 127.0.0.1:port (hashed or not: ssh-keygen -F finds both)."""
    r = subprocess.run(["ssh-keygen", "-F", f"[127.0.0.1]:{port}", "-f", str(known)], capture_output=True, text=True)
    keys = [line.split()[-1] for line in r.stdout.splitlines() if line and not line.startswith("#")]
    return keys[0] if len(keys) == 1 else None



def aws_inventory(tmp_path) -> inventory.Inventory:
    """The inventory testbeds/aws/provision.py makes for a fleet (from what up.yml reports)."""
    fleet = plan.load_fleets("testbeds/aws/instances.yaml")[0]["s002"]
    key = tmp_path / "cache" / "aws" / "t30" / "id_ed25519"
    made = {"vpc": "vpc-1", "subnet": "subnet-1", "securityGroup": "sg-1", "internetGateway": "igw-1",
            "keyName": "sb-t30-s002", "amiName": "ubuntu",
            "instances": [{"tags": {"Name": n}, "private_ip_address": f"10.40.0.{10 + i}",
                           "public_ip_address": f"198.51.100.{10 + i}", "instance_type": t,
                           "placement": {"availability_zone": "us-east-1a"}, "image_id": "ami-1",
                           "instance_id": f"i-{i}"} for i, (n, _, t) in enumerate(fleet.hosts)]}
    doc = provision.make_inventory(fleet, "t30", made, key, {"ssh_user": "ubuntu", "region": "us-east-1"})
    return inventory.check(doc, tmp_path / "inventory.json")


def test_aws_ssh_arguments_accept_new_keys_into_the_fleets_known_hosts(tmp_path):
    inv = aws_inventory(tmp_path)
    # each fleet has its own file: fleets up at once must not write one file, and a later fleet may be given an
    # address an earlier fleet's host had, with another key
    fleet_known = str(tmp_path / "cache" / "aws" / "t30" / "known_hosts-s002")
    for h in inv.hosts:
        for args in (remote.ssh_cmd(h, "true"), remote.ssh_options(h)):
            assert first(args, "StrictHostKeyChecking") == "accept-new"
            assert first(args, "UserKnownHostsFile") == fleet_known
            assert not any("~/.ssh" in a or a.endswith("/.ssh/known_hosts") for a in args)


def test_ansible_uses_the_same_host_key_choice(tmp_path):
    inv = aws_inventory(tmp_path)
    # each fleet has its own file: fleets up at once must not write one file, and a later fleet may be given an
    # address an earlier fleet's host had, with another key
    fleet_known = str(tmp_path / "cache" / "aws" / "t30" / "known_hosts-s002")
    cfg = configparser.ConfigParser()
    cfg.read(remote.ANSIBLE_DIR / "ansible.cfg")
    ssh_args = shlex.split(cfg["ssh_connection"]["ssh_args"])
    # ansible.cfg's ssh_args come first on Ansible's ssh command line: they must not choose for the inventory
    assert first(ssh_args, "StrictHostKeyChecking") is None and first(ssh_args, "UserKnownHostsFile") is None
    # host_key_checking false would make Ansible add StrictHostKeyChecking=no (no check at all)
    assert cfg["defaults"].getboolean("host_key_checking") is True
    assert "ANSIBLE_HOST_KEY_CHECKING" not in remote.ansible_env(inv)
    for name, v in remote.ansible_inventory(inv)["all"]["hosts"].items():
        common = shlex.split(v["ansible_ssh_common_args"])
        assert first(common, "StrictHostKeyChecking") == "accept-new", name
        assert first(common, "UserKnownHostsFile") == fleet_known, name


def test_the_lab_keeps_strict_checking_against_its_own_known_hosts(tmp_path):
    from testbeds.lab import inventory_doc as lab_doc, plan as lab_plan

    inv = inventory.check(lab_doc(lab_plan("u3", 3, 1, "10.77.0.0/24", base=tmp_path), tmp_path / "u3"),
                          tmp_path / "inventory.json")
    args = remote.ssh_options(inv.hosts[0])
    assert first(args, "StrictHostKeyChecking") == "yes"
    assert first(args, "UserKnownHostsFile") == str(tmp_path / "u3" / "keys" / "known_hosts")
    assert sum(a.lower().startswith("stricthostkeychecking=") for a in args) == 1


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d["ssh"].update(options=["StrictHostKeyChecking=no"]), "ssh.options[0]: StrictHostKeyChecking=no"),
    (lambda d: d["ssh"].pop("knownHosts"), "ssh.knownHosts: missing; StrictHostKeyChecking=accept-new"),
    (lambda d: d["hosts"][2].update(ssh={"options": ["BatchMode=yes", "StrictHostKeyChecking off"]}),
     "hosts[2].ssh.options[1]: StrictHostKeyChecking=off"),
])
def test_host_key_choices_that_would_not_check_are_one_line(tmp_path, mutate, field):
    doc = aws_inventory(tmp_path).doc
    mutate(doc)
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(inventory.InventoryError) as e:
        inventory.load(f)
    assert str(e.value).startswith(f"{f}: ") and field in str(e.value) and "\n" not in str(e.value)


@needs_sshd
def test_first_contact_over_ssh_then_strict(sshd, tmp_path):
    sshd.start()
    inv = inventory.check(inventory_doc(tmp_path, sshd), tmp_path / "inventory.json")
    known = Path(inv.hosts[0].ssh["knownHosts"])
    user_known = Path(os.path.expanduser("~/.ssh/known_hosts"))
    user_before = user_known.read_bytes() if user_known.exists() else None
    assert not known.exists()
    # first contact: ssh and scp work, and the host's key is now in the fleet's file (only there)
    assert remote.ssh(inv.hosts[0], "echo hello").stdout.strip() == "hello"
    local = tmp_path / "hello.txt"
    local.write_text("hi\n")
    remote.scp_to(inv.hosts[1], local, str(tmp_path / "hosts" / "server-2" / "hi.txt"))
    pub = sshd.hostkey.with_suffix(".pub").read_text().split()[1]
    assert known_hosts_key(known, sshd.port) == pub
    assert (user_known.read_bytes() if user_known.exists() else None) == user_before
    # afterwards strict: the same address with another host key is refused, naming the host
    sshd.stop()
    keygen(sshd.hostkey)
    sshd.start()
    with pytest.raises(util.TestbedError, match=r"^host server-3 \(127\.0\.0\.1\): unreachable over ssh"):
        remote.ssh(inv.hosts[2], "true")


@needs_sshd
def test_first_contact_with_ansible(sshd, tmp_path):
    sshd.start()
    inv = inventory.check(inventory_doc(tmp_path, sshd), tmp_path / "inventory.json")
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps(remote.ansible_inventory(inv)))
    env = remote.ansible_env(inv)
    try:
        r = subprocess.run(["ansible", "server-1", "-i", str(hosts), "-m", "ansible.builtin.ping", "-o"], env=env,
                           capture_output=True, text=True, timeout=180)
    finally:  # the control-socket directory is this inventory's (its master ends with the fixture's sshd)
        shutil.rmtree(remote.control_path_dir(inv.testbed, inv.id, inv.path), ignore_errors=True)
    assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout + r.stderr
    assert known_hosts_key(Path(inv.hosts[0].ssh["knownHosts"]), sshd.port) == sshd.hostkey.with_suffix(".pub").read_text().split()[1]
