"""Issue 30, blocker 2: hosts reached as a login user other than root, who escalates with sudo (EC2's `ubuntu`, a
user of your own machines). A real lab whose sshd lets in only the lab's own login user (sbl<id>, made and removed
with the lab): prepare makes the work and data directories with sudo and hands them to that user, a Kafka cluster
then runs as that user; without passwordless sudo, prepare stops in one line naming the inventory field and the
host. Needs root, sshd and sudo (env/apt-packages.txt)."""
from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from testbeds import lab

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.geteuid() != 0 or not Path(lab.SSHD).exists() or not Path("/usr/bin/sudo").exists(),
                                 reason="needs root, sshd and sudo")]
ROOT = Path(__file__).resolve().parents[2]


def _tb(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "testbeds", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


@pytest.fixture
def base():
    # the login user must reach the hosts' directories: pytest's tmp_path lies under a root-only directory
    d = Path(tempfile.mkdtemp(prefix="sb-lablogin-", dir="/tmp"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _down(lab_id, base):
    r = _tb("lab", "down", "--id", lab_id, "--dir", str(base))
    assert r.returncode == 0, r.stderr
    user = lab.login_user_name(lab_id)
    assert subprocess.run(["getent", "passwd", user], capture_output=True).returncode == 2, f"{user} outlived the lab"
    # nor its JVMs' perf-data directory in this machine's /tmp (the lab's hosts share it), owned by a removed uid
    assert not Path(f"/tmp/hsperfdata_{user}").exists(), f"/tmp/hsperfdata_{user} outlived the lab"
    assert not (lab.SUDOERS_DIR / f"streambench-lab-{lab_id}").exists()
    assert not [n for n in lab.netns_list() if n.startswith(f"sbl-{lab_id}-")]


def test_prepare_escalates_with_sudo_and_the_cluster_runs_as_the_login_user(base):
    lab_id = "lu1"
    r = _tb("lab", "up", "--id", lab_id, "--subnet", "10.77.8.0/24", "--dir", str(base), "--login-user")
    try:
        assert r.returncode == 0, r.stderr
        inv = base / lab_id / "inventory.json"
        doc = json.loads(inv.read_text())
        user = lab.login_user_name(lab_id)
        assert doc["ssh"]["user"] == user
        uid = pwd.getpwnam(user).pw_uid
        r = _tb("prepare", "--inventory", str(inv), "--systems", "kafka", "--log", str(base / "prepare.log"))
        assert r.returncode == 0, r.stderr + (base / "prepare.log").read_text()[-3000:]
        for h in doc["hosts"]:
            root = Path(h["root"])
            assert root.stat().st_uid == 0  # the host's / stays root's
            assert Path(h["workDir"]).stat().st_uid == uid  # made with sudo, handed to the login user
            if "server" in h["roles"]:
                assert all(Path(d).stat().st_uid == uid for d in h["dataDirs"].values()), h["dataDirs"]
        rundir = base / "cluster"
        r = _tb("cluster", "up", "kafka", "--level", "L1", "--dir", str(rundir), "--inventory", str(inv))
        try:
            assert r.returncode == 0, r.stderr[-3000:]
            running = subprocess.run(["ps", "-ww", "-o", "args=", "-u", user], capture_output=True, text=True).stdout
            # the JVMs (not the log cap's reader, a bash of the same arguments: sbnode.py caps a node's log on a
            # host as on this machine)
            brokers = [line for line in running.splitlines() if line.rstrip().endswith("server.properties")
                       and " kafka.Kafka " in line and line.split()[0].rsplit("/", 1)[-1] == "java"]
            assert len(brokers) == 3, running  # the three brokers, each a process of the login user
        finally:
            r = _tb("cluster", "down", "--dir", str(rundir), "--inventory", str(inv))
            assert r.returncode == 0, r.stderr
    finally:
        _down(lab_id, base)


def test_without_passwordless_sudo_prepare_stops_in_one_line_naming_the_field(base):
    lab_id = "lu2"
    r = _tb("lab", "up", "--id", lab_id, "--subnet", "10.77.9.0/24", "--dir", str(base), "--login-user",
            "--sudo", "none")
    try:
        assert r.returncode == 0, r.stderr
        inv = base / lab_id / "inventory.json"
        r = _tb("prepare", "--inventory", str(inv), "--systems", "kafka", "--log", str(base / "prepare.log"))
        assert r.returncode == 2
        err = r.stderr.strip().splitlines()
        assert len(err) == 1, err
        assert f"{inv}: ssh.user: {lab.login_user_name(lab_id)} cannot sudo without a password on server-" in err[0]
        # nothing was made on the hosts
        for h in json.loads(inv.read_text())["hosts"]:
            assert not Path(h["workDir"]).exists()
    finally:
        _down(lab_id, base)
