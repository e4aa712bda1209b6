"""Issue 30, blocker 2: hosts reached as a login user other than root, who escalates with sudo (EC2's `ubuntu`, a
user of your own machines). A real lab whose sshd lets in only the lab's own login user (sbl<id>, made and removed
with the lab): without passwordless sudo, prepare stops in one line naming the inventory field and the host, and
makes nothing. Needs root, sshd and sudo (env/apt-packages.txt).

The path with sudo is env/test's EC2-like lab check (`python -m testbeds.labtest --ec2-like`, the same lab with a
login user): there prepare must hand each host's work directory and a server's data directories to the login user
(the hosts' roots stay root's), the kept Kafka cluster's JVMs must all be that user's processes, and the user, its
sudoers file and its JVMs' perf-data directory must be gone with the lab. It was a test of its own here, which
started a second lab, prepare and Kafka cluster beside that check for the same assertions."""
from __future__ import annotations

import json
import os
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
