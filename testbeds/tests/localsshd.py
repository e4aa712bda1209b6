"""A real sshd on 127.0.0.1 (a free port, its own host key, key login for the current user) for the tests of
first contact (host keys) and of waiting for booting hosts. Needs root and /usr/sbin/sshd, as the lab's tests."""
from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"
needs_sshd = pytest.mark.skipif(os.geteuid() != 0 or not Path(SSHD).exists(), reason="needs root and sshd")

CONFIG = """\
ListenAddress 127.0.0.1
Port {port}
HostKey {hostkey}
PidFile {pidfile}
AuthorizedKeysFile {authorized}
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
UseDNS no
Subsystem sftp internal-sftp
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.with_suffix(".pub").unlink(missing_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


class Sshd:
    def __init__(self, d: Path):
        self.dir = d
        self.port = free_port()
        self.client_key = d / "id_ed25519"
        keygen(self.client_key)
        (d / "authorized_keys").write_text(self.client_key.with_suffix(".pub").read_text())
        self.hostkey = d / "hostkey"
        keygen(self.hostkey)
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        conf = self.dir / "sshd_config"
        conf.write_text(CONFIG.format(port=self.port, hostkey=self.hostkey, pidfile=self.dir / "sshd.pid",
                                      authorized=self.dir / "authorized_keys"))
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
        self.proc = subprocess.Popen([SSHD, "-D", "-f", str(conf), "-E", str(self.dir / "sshd.log")])
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"sshd did not start: {(self.dir / 'sshd.log').read_text()[-1000:]}")
                time.sleep(0.1)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None


@pytest.fixture
def sshd(tmp_path):
    d = tmp_path / "sshd"
    d.mkdir()
    s = Sshd(d)
    try:
        yield s
    finally:
        s.stop()


def inventory_doc(tmp_path: Path, sshd: Sshd, *, testbed="aws", strict="accept-new", port=None) -> dict:
    """An inventory of 3 servers + 1 client, all at the local sshd (each with its own root under tmp_path), with
    the host-key choices of the aws inventory (testbeds/aws/provision.py make_inventory)."""
    (tmp_path / "fleet").mkdir(exist_ok=True)
    hosts = []
    for name, role in (("server-1", "server"), ("server-2", "server"), ("server-3", "server"), ("client-1", "client")):
        root = tmp_path / "hosts" / name
        root.mkdir(parents=True, exist_ok=True)
        hosts.append({"name": name, "roles": [role], "address": "127.0.0.1", "root": str(root),
                      "dataDirs": {"log": str(root / "data")}})
    return {"schemaVersion": 1, "testbed": testbed, "id": "t30", "createdAt": "2026-01-01T00:00:00Z",
            "ssh": {"user": "root", "port": port or sshd.port, "privateKey": str(sshd.client_key),
                    "knownHosts": str(tmp_path / "fleet" / "known_hosts"),
                    "options": [f"StrictHostKeyChecking={strict}"]},
            "hosts": hosts}
