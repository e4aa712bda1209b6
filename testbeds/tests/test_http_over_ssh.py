"""Issue 30, blocker 1 (the HTTP part): the controller's admin and verify requests to a cluster on an inventory's
hosts are sent from the first server host over ssh (sbnode.py `http`, shipped as prepare ships it), so Pulsar's and
Pravega's checks need no route from the controller to the hosts' private addresses. A real sshd on 127.0.0.1 and a
real HTTP server; the helper runs under the system's python3."""
from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import threading

import pytest

from systems import pulsar, ready
from testbeds import cluster, deploy, remote
from testbeds.inventory import load
from testbeds.tests.localsshd import free_port, inventory_doc, needs_sshd

PY = shutil.which("python3", path="/usr/bin:/bin")


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def _answer(self, code: int, doc) -> None:
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/admin/v2/namespaces/public/default/persistence":
            self._answer(200, {"bookkeeperEnsemble": 3, "bookkeeperWriteQuorum": 3, "bookkeeperAckQuorum": 2})
        else:
            self._answer(404, {"reason": f"no {self.path}"})

    def do_PUT(self):
        n = int(self.headers.get("Content-Length") or 0)
        self._answer(200, {"got": json.loads(self.rfile.read(n)), "type": self.headers.get("Content-Type")})


@pytest.fixture
def web():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture(autouse=True)
def _no_control_sockets_left():
    """The sender shares one ssh connection (a control socket in the instance's control_path_dir): removed after."""
    yield
    remote.remove_control_dirs("aws", "t30")


def _hosts(tmp_path, sshd, port=None):
    """An inventory at the local sshd with the host-side helper where prepare puts it on server-1."""
    doc = inventory_doc(tmp_path, sshd, port=port)
    lib = deploy.install_hostside(tmp_path / "hosts" / "server-1" / "opt" / "streambench" / "lib")
    f = tmp_path / "inventory.json"
    f.write_text(json.dumps(doc))
    return load(f), lib


@needs_sshd
@pytest.mark.skipif(PY is None, reason="no system python3")
def test_requests_go_from_the_first_server_host_and_the_systems_checks_use_them(sshd, tmp_path, web, monkeypatch):
    sshd.start()
    inv, _ = _hosts(tmp_path, sshd)
    send = cluster.http_over_ssh(inv)
    code, text = send("GET", f"{web}/admin/v2/namespaces/public/default/persistence")
    assert code == 200 and json.loads(text)["bookkeeperAckQuorum"] == 2
    # the requests share one connection: its control socket is in the instance's directory
    assert list(remote.control_path_dir(inv.testbed, inv.id, inv.path).glob("sb-*"))
    code, text = send("PUT", f"{web}/admin/v2/x", {"partitions": 3})
    assert code == 200 and json.loads(text) == {"got": {"partitions": 3}, "type": "application/json"}
    code, text = send("GET", f"{web}/nothing")
    assert code == 404 and "no /nothing" in text
    code, text = send("GET", f"http://127.0.0.1:{free_port()}/", None, 2)
    assert code == 0 and "refused" in text.lower(), text   # nothing answered on the host: as from here
    # inside http_via every request of the systems' checks goes this way: nothing is sent from this process
    sent_here = []
    monkeypatch.setattr(ready, "http_here", lambda *a, **k: sent_here.append(a) or (599, "sent from here"))
    with ready.http_via(send):
        assert pulsar._get_json(f"{web}/admin/v2/namespaces/public/default/persistence")["bookkeeperEnsemble"] == 3
    assert sent_here == []
    assert ready.http("GET", f"{web}/nothing") == (599, "sent from here")   # and outside it, from here again


@needs_sshd
def test_an_unreachable_server_host_is_no_answer_naming_the_host(sshd, tmp_path, web):
    inv, _ = _hosts(tmp_path, sshd, port=free_port())   # nothing listens at that ssh port
    code, text = cluster.http_over_ssh(inv)("GET", f"{web}/x", None, 5)
    assert code == 0 and text.startswith("host server-1 (127.0.0.1): unreachable over ssh"), text


@pytest.mark.skipif(PY is None, reason="no system python3")
def test_the_helper_refuses_a_request_that_is_not_one_in_one_line(tmp_path):
    lib = deploy.install_hostside(tmp_path / "lib")
    for bad in ("not json", json.dumps({"url": "http://127.0.0.1:1/"})):
        r = subprocess.run([PY, "-I", str(lib / "sbnode.py"), "http", bad], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and r.stderr.startswith("sbnode: error: http: REQUEST must be a JSON object"), r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
