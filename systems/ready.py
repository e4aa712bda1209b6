"""The readiness conditions of a cluster's start-up stages, evaluated where the nodes run.

Standard library only (and proc.py, shipped beside it): the launcher on this machine imports it, and the host-side helper on an inventory's host
(testbeds/hostside/sbnode.py `wait`) runs the same file next to the nodes it checks, so a controller that cannot
reach the hosts' private addresses (an EC2 fleet seen from a laptop) still knows when a stage is ready.

A condition is a JSON object with a `kind` and a `node` (whose death ends the wait early):
  {"kind": "log", "path": P, "text": T}                a line of the node's log contains T
  {"kind": "port", "address": A, "port": N}            something accepts connections on A:N
  {"kind": "zk-ruok", "address": A, "port": N}         ZooKeeper answers `ruok` with `imok`
  {"kind": "zk-path", "address": A, "port": N, "path": Z}   the znode Z and its parents exist (made if missing)
  {"kind": "bookie-writable", "url": U}                a bookie's HTTP admin says running and not read-only
  {"kind": "http", "method": M, "url": U, "body": B?, "status": [codes], "text": T?, "timeout": S?}
                                                       the request answers one of the codes (and exactly T)
"""
from __future__ import annotations

import contextlib
import contextvars
import json
import socket
import struct
import time
import urllib.error
import urllib.request
from typing import Any, Callable

from .proc import port_listening  # sbhost.proc on a host (testbeds/hostside): the same file


# Where HTTP requests go from: here (None), or a function (method, url, body, timeout) -> (status, text) that sends
# them from a host that can reach the cluster (testbeds/cluster.py: over ssh, through sbnode.py `http` on a server
# host, for a controller without a route to the hosts' private addresses)
_VIA: contextvars.ContextVar[Callable[..., tuple[int, str]] | None] = contextvars.ContextVar("http_via", default=None)


@contextlib.contextmanager
def http_via(send: Callable[..., tuple[int, str]]):
    """Within the block, every http() of this context is sent by `send` instead of from this process."""
    token = _VIA.set(send)
    try:
        yield
    finally:
        _VIA.reset(token)


def http(method: str, url: str, body: Any = None, timeout: float = 15) -> tuple[int, str]:
    """(status, text) of one request; (0, the error) when nothing answered."""
    via = _VIA.get()
    if via is not None:
        return via(method, url, body, timeout)
    return http_here(method, url, body, timeout)


def http_here(method: str, url: str, body: Any = None, timeout: float = 15) -> tuple[int, str]:
    """http() from this process."""
    data = None
    headers = {"Accept": "application/json"}
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as e:
        return 0, str(e)


def zk_ok(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1) as s:
            s.sendall(b"ruok")
            return s.recv(16) == b"imok"
    except OSError:
        return False


def _zk_call(sock: socket.socket, payload: bytes) -> bytes:
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            raise OSError("ZooKeeper closed the connection")
        head += chunk
    (n,) = struct.unpack(">i", head)
    body = b""
    while len(body) < n:
        chunk = sock.recv(n - len(body))
        if not chunk:
            raise OSError("ZooKeeper closed the connection")
        body += chunk
    return body


def _zstr(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


class ZkError(RuntimeError):
    """ZooKeeper answered a request with an error (not a connection problem: waiting will not help)."""


def zk_create_path(address: str, port: int, path: str) -> None:
    """Create path and its parents as empty persistent znodes (open ACL), like `zkCli create`, through the
    ZooKeeper wire protocol (a session, one create per level, close). OSError while ZooKeeper is not serving."""
    with socket.create_connection((address, port), timeout=10) as s:
        _zk_call(s, struct.pack(">iqiq", 0, 0, 10000, 0) + _zstr(b"\0" * 16))
        parts = [p for p in path.split("/") if p]
        for i in range(1, len(parts) + 1):
            node = ("/" + "/".join(parts[:i])).encode()
            acl = struct.pack(">i", 1) + struct.pack(">i", 31) + _zstr(b"world") + _zstr(b"anyone")
            req = struct.pack(">ii", i, 1) + _zstr(node) + _zstr(b"") + acl + struct.pack(">i", 0)
            _xid, _zxid, err = struct.unpack(">iqi", _zk_call(s, req)[:16])
            if err not in (0, -110):  # -110: the node exists
                raise ZkError(f"ZooKeeper {address}:{port}: creating {node.decode()} failed (error {err})")
        _zk_call(s, struct.pack(">ii", len(parts) + 1, -11))


def bookie_writable(url: str) -> bool:
    """A bookie's HTTP admin at url (http://address:port) says it runs and is not read-only."""
    code, text = http("GET", f"{url}/api/v1/bookie/state", timeout=3)
    if code != 200:
        return False
    try:
        st = json.loads(text)
    except ValueError:
        return False
    return bool(st.get("running")) and not st.get("readOnly", False)


def _log_has(path: str, text: str) -> bool:
    try:
        with open(path, "rb") as f:
            return text.encode() in f.read()
    except OSError:
        return False


def check(c: dict[str, Any]) -> bool:
    """Whether condition c holds now (one attempt)."""
    kind = c["kind"]
    if kind == "log":
        return _log_has(c["path"], c["text"])
    if kind == "port":
        return port_listening(int(c["port"]), c["address"])
    if kind == "zk-ruok":
        return zk_ok(c["address"], int(c["port"]))
    if kind == "zk-path":
        try:  # `ruok` answers before the server takes sessions: retried until it does
            zk_create_path(c["address"], int(c["port"]), c["path"])
            return True
        except OSError:
            return False
    if kind == "bookie-writable":
        return bookie_writable(c["url"])
    if kind == "http":
        code, text = http(c.get("method", "GET"), c["url"], c.get("body"), timeout=float(c.get("timeout", 3)))
        return code in c.get("status", [200]) and ("text" not in c or text.strip() == c["text"])
    raise ValueError(f"unknown readiness condition kind {kind!r}")


def describe(c: dict[str, Any]) -> str:
    """What a condition waits for, for the error that names it."""
    kind = c["kind"]
    if kind == "log":
        return f"no '{c['text']}' in its log"
    if kind == "port":
        return f"port {c['address']}:{c['port']} not listening"
    if kind == "zk-ruok":
        return f"no 'imok' on {c['address']}:{c['port']}"
    if kind == "zk-path":
        return f"cannot create {c['path']} in ZooKeeper {c['address']}:{c['port']}"
    if kind == "bookie-writable":
        return f"{c['url']} not answering as a writable bookie"
    if kind == "http":
        want = f" with '{c['text']}'" if "text" in c else ""
        return f"{c.get('method', 'GET')} {c['url']} not answering {'/'.join(map(str, c.get('status', [200])))}{want}"
    return f"unknown condition {kind!r}"


INTERVAL = {"log": 0.25, "port": 0.25, "zk-ruok": 0.25, "zk-path": 0.5, "bookie-writable": 0.5, "http": 0.5}


class NotReady(RuntimeError):
    """A condition did not hold by the deadline, or its node died first; `node` names it."""

    def __init__(self, node: str, msg: str):
        super().__init__(msg)
        self.node = node


def wait(conds: list[dict[str, Any]], deadline: float, dead: Callable[[str], str | None] = lambda node: None,
         sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
    """Wait for each condition in turn until `deadline` (clock's time). dead(node) returns why the node is no
    longer running (then the wait ends at once) or None."""
    for c in conds:
        node = c.get("node", "?")
        while True:
            why = dead(node)
            if why:
                raise NotReady(node, why)
            try:
                if check(c):
                    break
            except ZkError as e:
                raise NotReady(node, str(e)) from None
            if clock() > deadline:
                raise NotReady(node, f"not ready ({describe(c)})")
            sleep(INTERVAL.get(c["kind"], 0.5))
