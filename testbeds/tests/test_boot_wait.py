"""Waiting for hosts that are still booting (issue 30, blocker 8): "running" is not "ready". Every host's SSH
port, the login and the user data's completion marker are awaited within one deadline; a host that never
answers is one line naming it, a host that answers late is waited for."""
from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from testbeds import inventory, remote, util
from testbeds.aws import plan, provision
from testbeds.tests.localsshd import free_port, inventory_doc, needs_sshd


def _inv(tmp_path, sshd, closed_host: str | None = None, closed_port: int | None = None) -> inventory.Inventory:
    doc = inventory_doc(tmp_path, sshd)
    if closed_host:
        h = next(h for h in doc["hosts"] if h["name"] == closed_host)
        h["ssh"] = {"port": closed_port}
    return inventory.check(doc, tmp_path / "inventory.json")


def _mark_done(inv: inventory.Inventory, status: int = 0) -> None:
    for h in inv.hosts:
        f = Path(h.root) / remote.USERDATA_MARKER
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(f"{status} 2026-01-01T00:00:00Z\n")


@needs_sshd
def test_a_host_that_never_answers_fails_within_the_deadline_naming_it(sshd, tmp_path):
    sshd.start()
    closed = free_port()  # nothing listens there
    inv = _inv(tmp_path, sshd, closed_host="server-2", closed_port=closed)
    _mark_done(inv)
    t0 = time.monotonic()
    with pytest.raises(util.TestbedError) as e:
        remote.wait_for_hosts(inv, 4, poll_s=0.5)
    took = time.monotonic() - t0
    assert 4 <= took < 12, took
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("host server-2: not ready within 4 s: its ssh port (127.0.0.1:") and f":{closed})" in msg


@needs_sshd
def test_hosts_that_answer_late_are_waited_for(sshd, tmp_path):
    inv = _inv(tmp_path, sshd)
    # the sshd starts 2 s late, the user data ends 4 s late
    threading.Timer(2.0, sshd.start).start()
    threading.Timer(4.0, _mark_done, args=(inv,)).start()
    t0 = time.monotonic()
    took = remote.wait_for_hosts(inv, 60, poll_s=0.5)
    assert sorted(took) == sorted(h.name for h in inv.hosts)
    assert all(t >= 3.5 for t in took.values()) and time.monotonic() - t0 < 30, took


@needs_sshd
def test_a_user_data_that_failed_is_one_line_at_once(sshd, tmp_path):
    sshd.start()
    inv = _inv(tmp_path, sshd)
    _mark_done(inv, status=1)
    t0 = time.monotonic()
    with pytest.raises(util.TestbedError, match=r"^host server-1 \(127\.0\.0\.1\): its user data failed \(exit 1,"):
        remote.wait_for_hosts(inv, 60, poll_s=0.5)
    assert time.monotonic() - t0 < 20


@needs_sshd
def test_a_login_that_never_works_names_the_host_and_why(sshd, tmp_path):
    sshd.start()
    (sshd.dir / "authorized_keys").write_text("")  # sshd answers, but lets nobody in (key not yet installed)
    inv = _inv(tmp_path, sshd)
    _mark_done(inv)
    with pytest.raises(util.TestbedError, match=r"^host server-1: not ready within 3 s: ssh did not let us in: .*"
                                                r"Permission denied"):
        remote.wait_for_hosts(inv, 3, poll_s=0.5)


@pytest.mark.parametrize("role, status", [("client", 0), ("server", 1)])
def test_the_user_data_writes_its_completion_marker(tmp_path, role, status):
    """The marker the wait reads is what testbeds/aws/userdata.sh writes when it ends, success or not: a client
    wants no disks (exit 0); a server finds none of its 2 instance-store disks in an empty sysfs (exit 1)."""
    fleet = plan.load_fleets("testbeds/aws/instances.yaml")[0]["s002"]
    script = tmp_path / "ud.sh"
    script.write_text(provision.user_data(fleet, role, 2))
    sysfs = tmp_path / "sys"
    (sysfs / "block").mkdir(parents=True)
    state = tmp_path / "state"
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True,
                       env={"SB_SYSFS": str(sysfs), "SB_DRYRUN": "1", "SB_STATE": str(state), "PATH": "/usr/bin:/bin"})
    assert r.returncode == status, r.stderr
    marker = (state / "userdata-done").read_text().split()
    assert marker[0] == str(r.returncode) and marker[1].endswith("Z")
    assert oct((state / "userdata-done").stat().st_mode & 0o777) == "0o644"
    assert remote.USERDATA_MARKER == "var/lib/streambench/userdata-done"
    assert "/var/lib/streambench" in script.read_text()
