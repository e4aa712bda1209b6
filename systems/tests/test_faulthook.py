"""The fault hook's network partition and pause (issue 31): the nftables ruleset (pure), and a real hook in a network
namespace of its own cutting a real TCP path to a peer namespace, healing it, and leaving nothing behind when it is
told to, when it is terminated mid-partition, and (through `faulthook heal RUNDIR`) when it was killed."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from systems import faulthook, proc

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------------------------------ pure logic
def test_the_ruleset_drops_both_directions_for_each_family_in_a_table_of_the_clusters_name():
    t = faulthook.table_name("/work/runs/x/cluster-1")
    assert t.startswith("sbfault_") and t == faulthook.table_name(Path("/work/runs/x/cluster-1"))
    assert t != faulthook.table_name("/work/runs/x/cluster-2")
    rules = faulthook.partition_ruleset(t, ["10.77.0.13", "10.77.0.12", "10.77.0.12", "fd00::2"])
    assert rules.splitlines()[0] == f"table inet {t} {{"
    assert "elements = { 10.77.0.12, 10.77.0.13 }" in rules  # sorted, once each
    assert "type ipv6_addr; elements = { fd00::2 }" in rules
    inp = next(line for line in rules.splitlines() if "chain input" in line)
    out = next(line for line in rules.splitlines() if "chain output" in line)
    assert "ip saddr @peers4 drop;" in inp and "ip6 saddr @peers6 drop;" in inp and "policy accept" in inp
    assert "ip daddr @peers4 drop;" in out and "ip6 daddr @peers6 drop;" in out
    only4 = faulthook.partition_ruleset(t, ["10.0.0.1"])
    assert "peers6" not in only4


def test_isolate_all_drops_everything_but_loopback_and_the_kept_ssh_port():
    rules = faulthook.isolate_all_ruleset("sbfault_x", [2222, 22, 22])
    inp = next(line for line in rules.splitlines() if "chain input" in line)
    out = next(line for line in rules.splitlines() if "chain output" in line)
    assert "policy drop;" in inp and 'iif "lo" accept;' in inp and "tcp dport { 22, 2222 } accept;" in inp
    assert "policy drop;" in out and 'oif "lo" accept;' in out and "tcp sport { 22, 2222 } accept;" in out
    bare = faulthook.isolate_all_ruleset("sbfault_x", [])
    assert "tcp" not in bare and "policy drop" in bare
    with pytest.raises(ValueError, match="out of range"):
        faulthook.isolate_all_ruleset("sbfault_x", [0])


def test_the_ssh_port_kept_is_the_one_the_hook_was_reached_on(monkeypatch):
    monkeypatch.setenv("SSH_CONNECTION", "10.77.31.1 51234 10.77.31.11 2201")
    assert faulthook.ssh_server_port() == 2201
    monkeypatch.delenv("SSH_CONNECTION")
    assert faulthook.ssh_server_port() is None


def test_a_token_bucket_has_a_burst_and_a_queue_of_its_rate_and_a_handle_of_the_cluster():
    assert faulthook.tbf_args(8000) == ["tbf", "rate", "8000kbit", "burst", "10240", "limit", "200000"]
    assert faulthook.tbf_args(64) == ["tbf", "rate", "64kbit", "burst", "10240", "limit", "20480"]
    assert faulthook.tbf_args(10 ** 6)[4] == "1250000"  # 10 ms of 1 Gbit/s
    for bad in (0, -5, 1.5, "8000", True):
        with pytest.raises(ValueError, match="positive number of kbit/s"):
            faulthook.tbf_args(bad)
    h = faulthook.qdisc_handle("/work/runs/x/cluster-1")
    assert h == faulthook.qdisc_handle(Path("/work/runs/x/cluster-1")) != faulthook.qdisc_handle("/work/runs/x/cluster-2")
    assert h.endswith(":") and 1 <= int(h[:-1], 16) <= 0xfffe


def test_a_partition_keeps_the_ssh_port_open_to_its_peers_and_names_the_ssh_client_on_request(monkeypatch):
    rules = faulthook.partition_ruleset("sbfault_x", ["10.77.0.1", "10.77.0.11"], [22])
    inp = next(line for line in rules.splitlines() if "chain input" in line)
    out = next(line for line in rules.splitlines() if "chain output" in line)
    # the kept port comes first: a controller among the peers still drives and heals the hook
    assert inp.index("tcp dport { 22 } accept;") < inp.index("ip saddr @peers4 drop;")
    assert out.index("tcp sport { 22 } accept;") < out.index("ip daddr @peers4 drop;")
    assert "tcp" not in faulthook.partition_ruleset("sbfault_x", ["10.77.0.1"])
    with pytest.raises(ValueError, match="out of range"):
        faulthook.partition_ruleset("sbfault_x", ["10.77.0.1"], [70000])
    monkeypatch.setenv("SSH_CONNECTION", "10.77.31.1 51234 10.77.31.12 22")
    assert faulthook.resolve_peers(["10.77.31.11", "@ssh-client"]) == ["10.77.31.11", "10.77.31.1"]
    monkeypatch.delenv("SSH_CONNECTION")
    with pytest.raises(faulthook.HookError, match="not started over ssh"):
        faulthook.resolve_peers(["@ssh-client"])
    assert faulthook.resolve_peers(["10.77.31.11"]) == ["10.77.31.11"]


@pytest.mark.parametrize("peers", [[], ["not-an-address"]])
def test_a_partition_without_a_peer_address_is_refused(peers):
    with pytest.raises(ValueError):
        faulthook.partition_ruleset("sbfault_x", peers)


# ------------------------------------------------------------------------------------------- a real hook, real nft
needs_root_nft = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("nft") is None or shutil.which("ip") is None,
                                    reason="needs root, ip and nft (Debian package nftables)")


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def _in_ns(ns, *cmd, **kw):
    return subprocess.run(["ip", "netns", "exec", ns, *cmd], capture_output=True, text=True, **kw)


@pytest.fixture
def two_hosts():
    """Two namespaces joined by a veth pair: host a (10.99.31.1, where the hook runs) and its peer b (10.99.31.2)."""
    tag = f"sbt-fh{os.getpid()}"
    a, b = f"{tag}-a", f"{tag}-b"
    try:
        _ip("netns", "add", a)
        _ip("netns", "add", b)
        _ip("link", "add", f"{tag}a", "type", "veth", "peer", "name", f"{tag}b")
        _ip("link", "set", f"{tag}a", "netns", a)
        _ip("link", "set", f"{tag}b", "netns", b)
        for ns, dev, addr in ((a, f"{tag}a", "10.99.31.1/24"), (b, f"{tag}b", "10.99.31.2/24")):
            _ip("-n", ns, "addr", "add", addr, "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        yield a, b
    finally:
        for ns in (a, b):
            _ip("netns", "delete", ns, check=False)
        assert not [n for n in _ip("netns", "list").stdout.split() if n.startswith(tag)]


def _connects(ns_from: str, address: str, port: int, timeout: float = 1.5) -> bool:
    code = (f"import socket,sys\ns=socket.socket();s.settimeout({timeout})\n"
            f"try:\n s.connect(({address!r},{port}));print('ok')\nexcept OSError as e:\n print('no',e)\n")
    return _in_ns(ns_from, sys.executable, "-c", code, timeout=30).stdout.startswith("ok")


def _tables(ns: str) -> str:
    return _in_ns(ns, "nft", "list", "tables", timeout=30).stdout


def _heal_rundir(ns: str, rundir: Path) -> subprocess.CompletedProcess:
    """`python -m systems.faulthook heal RUNDIR` in the namespace, as `cluster down` runs it on a host."""
    return _in_ns(ns, sys.executable, "-m", "systems.faulthook", "heal", str(rundir), cwd=ROOT,
                  env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)


class _HookProc:
    def __init__(self, ns: str, rundir: Path, targets: str, **env_extra: str):
        env = dict(os.environ, PYTHONPATH=str(ROOT), **env_extra)
        self.p = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-m", "systems.faulthook",
                                   "--rundir", str(rundir), "--targets", targets, "--restart-deadline", "10"],
                                  cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def event(self, timeout: float = 30) -> dict:
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end:
            line = self.p.stdout.readline()
            if not line:
                break
            return json.loads(line)
        raise AssertionError(f"no event from the hook (exit {self.p.poll()})")

    def send(self, line: str) -> dict:
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.event()


def _state(pid: int) -> str:
    st = Path(f"/proc/{pid}/stat").read_text()
    return st[st.rindex(")") + 2]


@pytest.fixture
def node(tmp_path, two_hosts):
    """A node of a cluster on host a: a TCP listener (a broker's port) in a's namespace, recorded as launchers do."""
    a, _ = two_hosts
    rundir = tmp_path / "run"
    log = rundir / "nodes" / "n1" / "logs" / "node.log"
    log.parent.mkdir(parents=True)
    code = ("import socket,time\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
            "s.bind(('10.99.31.1',19092));s.listen(50)\nwhile True:\n c,_=s.accept();c.close()\n")
    p, rec = proc.start_process(rundir, "n1", ["ip", "netns", "exec", a, sys.executable, "-c", code], cwd=rundir,
                                log=log, env=dict(os.environ))
    (rundir / "cluster.json").write_text(json.dumps({"system": "kafka", "rundir": str(rundir), "nodes": [
        {"name": "n1", "role": "broker", "host": "10.99.31.1", "ports": {"client": 19092}, "log": str(log)}]}))
    t_end = time.monotonic() + 20
    while not _connects(two_hosts[1], "10.99.31.1", 19092) and time.monotonic() < t_end:
        time.sleep(0.2)
    try:
        yield rundir, rec
    finally:
        try:
            os.killpg(rec.pgid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        proc.stop_records([rec], 5)


@needs_root_nft
def test_isolate_cuts_the_path_to_the_peer_heal_restores_it_and_pause_stops_the_node(two_hosts, node):
    a, b = two_hosts
    rundir, rec = node
    table = faulthook.table_name(rundir)
    assert _connects(b, "10.99.31.1", 19092), "the path works before the partition"
    hook = _HookProc(a, rundir, "n1")
    try:
        assert hook.event()["event"] == "ready"
        ev = hook.send("isolate 10.99.31.2")
        assert ev["event"] == "isolated" and ev["peers"] == ["10.99.31.2"], ev
        assert table in _tables(a) and table not in _tables(b)  # on the hook's host only
        assert not _connects(b, "10.99.31.1", 19092), "the peer no longer reaches the node"
        assert _in_ns(a, "nft", "list", "tables", timeout=30).returncode == 0
        assert subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout.count(table) == 0, \
            "nothing in this machine's own namespace"
        ev = hook.send("isolate 10.99.31.2")  # a second partition on top of the first is refused
        assert ev["event"] == "failed" and "heal first" in ev["error"], ev
    finally:
        hook.p.stdin.close()
        hook.p.wait(30)
    # the hook failed mid-partition and exited: its table went with it
    assert table not in _tables(a)
    assert _connects(b, "10.99.31.1", 19092), "healed"

    hook = _HookProc(a, rundir, "n1")
    try:
        assert hook.event()["event"] == "ready"
        assert hook.send("isolate 10.99.31.2")["event"] == "isolated"
        assert hook.send("heal")["event"] == "healed"
        assert table not in _tables(a) and _connects(b, "10.99.31.1", 19092)
        ev = hook.send("pause")
        assert ev["event"] == "paused" and ev["targets"] == ["n1"]
        time.sleep(0.2)
        assert _state(rec.pid) == "T"
        assert hook.send("resume")["event"] == "resumed"
        time.sleep(0.2)
        assert _state(rec.pid) in ("S", "R")
    finally:
        hook.p.stdin.close()
        assert hook.p.wait(30) == 0


@needs_root_nft
def test_a_terminated_hook_heals_and_resumes_and_a_killed_ones_table_is_removed_by_heal_rundir(two_hosts, node):
    a, b = two_hosts
    rundir, rec = node
    table = faulthook.table_name(rundir)
    hook = _HookProc(a, rundir, "n1")
    assert hook.event()["event"] == "ready"
    assert hook.send("isolate 10.99.31.2")["event"] == "isolated"
    assert hook.send("pause")["event"] == "paused"
    # SIGTERM, what faultrun's stop sends (`ip netns exec` execs the hook: the pid is the hook's python)
    assert _comm(hook.p.pid).startswith("python")
    os.kill(hook.p.pid, signal.SIGTERM)
    hook.p.wait(30)
    assert table not in _tables(a), "healed on SIGTERM"
    time.sleep(0.2)
    assert _state(rec.pid) in ("S", "R"), "resumed on SIGTERM"

    hook = _HookProc(a, rundir, "n1")
    assert hook.event()["event"] == "ready"
    assert hook.send("isolate 10.99.31.2")["event"] == "isolated"
    os.kill(hook.p.pid, signal.SIGKILL)
    hook.p.wait(30)
    assert table in _tables(a), "a killed hook cannot heal"
    r = _heal_rundir(a, rundir)
    assert r.returncode == 0 and json.loads(r.stdout) == {"event": "healed", "removed": True, "unshaped": []}, r.stderr
    assert table not in _tables(a) and _connects(b, "10.99.31.1", 19092)
    r = _heal_rundir(a, rundir)
    assert r.returncode == 0 and json.loads(r.stdout)["removed"] is False  # idempotent


def _listen(ns: str, port: int) -> subprocess.Popen:
    code = ("import socket\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
            f"s.bind(('10.99.31.1',{port}));s.listen(50)\nwhile True:\n c,_=s.accept();c.close()\n")
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", code])


def _listen_ready(ns: str, client_ns: str, port: int) -> subprocess.Popen:
    """_listen, then wait (20 s at most) until client_ns connects: an ssh-like port on host ns."""
    p = _listen(ns, port)
    t_end = time.monotonic() + 20
    while not _connects(client_ns, "10.99.31.1", port) and time.monotonic() < t_end:
        time.sleep(0.2)
    return p


def _qdiscs(ns: str) -> str:
    return _in_ns(ns, "tc", "qdisc", "show", timeout=30).stdout


@needs_root_nft
def test_isolate_all_cuts_every_path_but_the_ssh_port_and_loopback_and_heals(two_hosts, node):
    a, b = two_hosts
    rundir, rec = node
    table = faulthook.table_name(rundir)
    ssh_like = _listen_ready(a, b, 19022)
    try:
        # as if reached over ssh on port 19022 of host a (SSH_CONNECTION set as sshd sets it)
        hook = _HookProc(a, rundir, "n1", SSH_CONNECTION="10.99.31.2 40000 10.99.31.1 19022")
        try:
            assert hook.event()["event"] == "ready"
            ev = hook.send("isolate-all")
            assert ev["event"] == "isolated" and ev["peers"] == "all" and ev["keep"] == [19022], ev
            assert table in _tables(a) and table not in _tables(b)
            assert not _connects(b, "10.99.31.1", 19092), "the node's clients and peers are cut off"
            assert _connects(b, "10.99.31.1", 19022), "the ssh port (the hook's channel) stays open"
            assert _connects(a, "10.99.31.1", 19092), "the host's own traffic (loopback) still flows"
            assert hook.send("isolate-all")["event"] == "failed", "a second partition on top of the first is refused"
        finally:
            hook.p.stdin.close()
            hook.p.wait(30)
        assert table not in _tables(a) and _connects(b, "10.99.31.1", 19092), "healed as the hook failed and exited"
    finally:
        ssh_like.kill()
        ssh_like.wait(10)


@needs_root_nft
def test_isolate_from_the_ssh_client_cuts_its_traffic_but_the_ssh_port_and_heals(two_hosts, node):
    """partition-majority's side of a server: the controller (the fault cycle's client on the lab) is among the peers
    as @ssh-client; its traffic to the node is cut, the hook's own channel (the ssh port) is not."""
    a, b = two_hosts
    rundir, rec = node
    table = faulthook.table_name(rundir)
    ssh_like = _listen_ready(a, b, 19022)
    try:
        hook = _HookProc(a, rundir, "n1", SSH_CONNECTION="10.99.31.2 40000 10.99.31.1 19022")
        try:
            assert hook.event()["event"] == "ready"
            ev = hook.send("isolate @ssh-client")
            assert ev["event"] == "isolated" and ev["peers"] == ["10.99.31.2"] and ev["keep"] == [19022], ev
            assert not _connects(b, "10.99.31.1", 19092), "the ssh client's host no longer reaches the node"
            assert _connects(b, "10.99.31.1", 19022), "but still the ssh port"
            assert hook.send("heal")["event"] == "healed"
            assert table not in _tables(a) and _connects(b, "10.99.31.1", 19092)
        finally:
            hook.p.stdin.close()
            hook.p.wait(30)
        # without SSH_CONNECTION the name is refused in one event, and nothing is added
        hook = _HookProc(a, rundir, "n1")
        try:
            assert hook.event()["event"] == "ready"
            ev = hook.send("isolate @ssh-client")
            assert ev["event"] == "failed" and "not started over ssh" in ev["error"], ev
        finally:
            hook.p.stdin.close()
            hook.p.wait(30)
        assert table not in _tables(a)
    finally:
        ssh_like.kill()
        ssh_like.wait(10)


@needs_root_nft
def test_throttle_puts_a_token_bucket_on_the_hosts_link_heal_and_heal_rundir_remove_only_it(two_hosts, node):
    a, b = two_hosts
    rundir, rec = node
    handle = faulthook.qdisc_handle(rundir)
    assert "tbf" not in _qdiscs(a)
    hook = _HookProc(a, rundir, "n1")
    try:
        assert hook.event()["event"] == "ready"
        ev = hook.send("throttle 800")
        assert ev["event"] == "throttled" and ev["kbit"] == 800 and len(ev["devices"]) == 1, ev
        q = _qdiscs(a)
        assert f"qdisc tbf {handle} dev" in q and "rate 800Kbit" in q, q
        assert "tbf" not in _qdiscs(b), "only on the hook's host"
        assert "tbf" not in subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True).stdout, \
            "nothing on this machine's own interfaces"
        assert _connects(b, "10.99.31.1", 19092), "slowed, not cut"
        assert hook.send("throttle 800")["event"] == "failed", "a second bucket on top of the first is refused"
    finally:
        hook.p.stdin.close()
        hook.p.wait(30)
    assert "tbf" not in _qdiscs(a), "removed as the hook failed and exited"

    # a throttle refused by tc (a rate it cannot take) leaves nothing either
    hook = _HookProc(a, rundir, "n1")
    try:
        assert hook.event()["event"] == "ready"
        assert hook.send("throttle 0")["event"] == "failed"
    finally:
        hook.p.stdin.close()
        hook.p.wait(30)
    assert "tbf" not in _qdiscs(a)

    # killed mid-throttle: `heal RUNDIR` removes this cluster's bucket and leaves another's alone
    other = faulthook.qdisc_handle(rundir.parent / "another-cluster")
    dev = next(d for d in _in_ns(a, "ls", "/sys/class/net", timeout=30).stdout.split() if d != "lo")
    hook = _HookProc(a, rundir, "n1")
    assert hook.event()["event"] == "ready"
    assert hook.send("throttle 800")["event"] == "throttled"
    os.kill(hook.p.pid, signal.SIGKILL)
    hook.p.wait(30)
    assert handle in _qdiscs(a), "a killed hook cannot heal"
    r = _heal_rundir(a, rundir)
    assert r.returncode == 0 and json.loads(r.stdout) == {"event": "healed", "removed": False, "unshaped": [dev]}, r
    assert "tbf" not in _qdiscs(a)
    _in_ns(a, "tc", "qdisc", "add", "dev", dev, "root", "handle", other, *faulthook.tbf_args(800), check=True,
           timeout=30)
    r = _heal_rundir(a, rundir)
    assert r.returncode == 0 and json.loads(r.stdout)["unshaped"] == [], r
    assert other in _qdiscs(a), "another cluster's bucket is not this one's to remove"


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""
