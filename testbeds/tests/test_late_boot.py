"""Hosts that boot as EC2 instances do (issue 30; testbeds/lab.py boot, the AWS rehearsal's instances): an unbooted
EC2-like lab host answers nothing until boot(); after its delay its sshd lets in only the key pair's key, with a new
host key, as the non-root login user with sudo; its user data (testbeds/aws/userdata.sh, unchanged but for the
device directory) finds the "instance-store" disks by model in the made-up sysfs (skipping the EBS root disk),
formats them xfs on loop devices and mounts them at /mnt/data-N, appends to /etc/fstab and limits.d and writes the
completion marker, all inside the host's own mount namespace: nothing of it shows on this machine. power_off() ends
the host (processes, mounts, loop devices, files), a second boot comes with a new host key, and `down` leaves no
namespace, loop device or user. A real lab: namespaces, nftables, sshd, losetup, mkfs.xfs. Needs root."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from testbeds import lab
from testbeds.aws import plan, provision

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.geteuid() != 0 or not Path(lab.SSHD).exists() or not shutil.which("mkfs.xfs"),
                                 reason="needs root, sshd and mkfs.xfs (xfsprogs)")]
ID = "lb30"
SUBNET = "10.77.48.0/24"


def _loops_of(path: Path) -> str:
    return subprocess.run(["losetup", "--associated", str(path)], capture_output=True, text=True).stdout.strip()


def _ssh(state: dict, host: dict, key: Path, known: Path, command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", state["controller"]["netns"], "ssh", "-i", str(key),
                           "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=accept-new",
                           "-o", f"UserKnownHostsFile={known}", "-o", "BatchMode=yes", "-o", "ConnectTimeout=3",
                           f"{state['loginUser']['name']}@{host['publicAddress']}", command],
                          capture_output=True, text=True, timeout=60)


def _wait_marker(state, host, key, known, within: float) -> tuple[float, str]:
    t0 = time.monotonic()
    while True:
        r = _ssh(state, host, key, known, "cat /var/lib/streambench/userdata-done")
        if r.returncode == 0 and r.stdout.strip():
            return time.monotonic() - t0, r.stdout.strip()
        assert time.monotonic() - t0 < within, f"no completion marker within {within} s: {r.stderr.strip()}"
        time.sleep(0.5)


def test_an_unbooted_host_boots_like_an_instance_and_powers_off_without_a_trace():
    base = Path(tempfile.mkdtemp(prefix="sb-lateboot-", dir="/tmp"))
    base.chmod(0o755)  # the login user reaches its home under it
    key = base / "pair"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    known = base / "known_hosts"
    fleet = plan.load_fleets("testbeds/aws/instances.yaml")[0]["s000"]
    fstab_before = Path("/etc/fstab").read_text()
    state_dir_before = Path("/var/lib/streambench").exists()
    disks = []
    try:
        lab.up(ID, 3, 1, SUBNET, base=base, log=lambda m: None, login_user=True, ec2_like=True, unbooted=True)
        state = json.loads((base / ID / "state.json").read_text())
        server = state["hosts"][0]
        ctl = state["controller"]["netns"]
        assert not lab._port_open(ctl, server["publicAddress"], 22, within=1), "an unbooted host answered ssh"
        rec = lab.boot(ID, "server-1", authorized_key=key.with_suffix(".pub").read_text(),
                       user_data=provision.user_data(fleet, "server", 2), disks=2, disk_gb=1, delay_s=3, base=base)
        disks = [Path(d["file"]) for d in rec["disks"]]
        assert len(disks) == 2 and all(_loops_of(f) for f in disks)
        assert not lab._port_open(ctl, server["publicAddress"], 22, within=0.5), "sshd before the boot delay"
        took, marker = _wait_marker(state, server, key, known, within=90)
        assert marker.split()[0] == "0", marker
        r = _ssh(state, server, key, known,
                 "whoami; hostname; sudo -n whoami; findmnt -n -o FSTYPE /mnt/data-1; findmnt -n -o FSTYPE /mnt/data-2;"
                 " ls /mnt/data-1 /mnt/data-2; grep -c ' /mnt/data-' /etc/fstab;"
                 " grep -c nofile /etc/security/limits.d/90-streambench.conf; cat /etc/streambench/disks.json")
        assert r.returncode == 0, r.stderr
        out = r.stdout.splitlines()
        assert out[:5] == [state["loginUser"]["name"], "server-1", "root", "xfs", "xfs"], out
        listing = " ".join(out[5:-3])
        assert "journal" in listing and "ledger" in listing and "log" in listing, listing
        assert out[-3:-1] == ["2", "2"], out
        found = json.loads(out[-1])
        assert [d["mount"] for d in found] == ["/mnt/data-1", "/mnt/data-2"]
        assert all(d["sizeBytes"] == 1024 ** 3 for d in found)
        # the user data's lifetime timer is recorded by the lab's systemd-run, never set
        assert "--on-active=120m" in (base / ID / "hosts" / "server-1" / "poweroff-timer").read_text()
        # nothing of it on this machine: its fstab, its mounts, its /var/lib
        assert Path("/etc/fstab").read_text() == fstab_before
        assert "/mnt/data-1" not in Path("/proc/self/mounts").read_text()
        assert Path("/var/lib/streambench").exists() == state_dir_before
        first_key = (base / ID / "keys" / "host-server-1.pub").read_text()

        assert lab.power_off(ID, "server-1", base=base, log=lambda m: None) is True
        assert lab.booted(ID, base) == []
        assert not any(f.exists() for f in disks) and not any(_loops_of(f) for f in disks)
        assert not lab._port_open(ctl, server["publicAddress"], 22, within=1)
        # a new instance on the same address: a new host key (what the fleet's known_hosts must forget: provision.up)
        lab.boot(ID, "server-1", authorized_key=key.with_suffix(".pub").read_text(),
                 user_data=provision.user_data(fleet, "server", 2), disks=2, disk_gb=1, delay_s=0, base=base)
        assert (base / ID / "keys" / "host-server-1.pub").read_text() != first_key
        known.unlink()
        _wait_marker(state, server, key, known, within=90)
        disks = [Path(d["file"]) for d in json.loads((base / ID / "boot" / "server-1.json").read_text())["disks"]]
    finally:
        lab.down(ID, base=base, log=lambda m: None)
        shutil.rmtree(base, ignore_errors=True)
    # down ends a booted host too: its loop devices, namespaces and the login user
    assert not any(_loops_of(f) for f in disks)
    assert not [n for n in lab.netns_list() if n.startswith(f"sbl-{ID}-")]
    assert subprocess.run(["getent", "passwd", lab.login_user_name(ID)], capture_output=True).returncode != 0
