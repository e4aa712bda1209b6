"""The host-side helper as shipped (sbnode.py + a copy of systems/proc.py + the stdlib shim), run by the
system's python3 with no third-party package: start records a pid file, status sees it, stop ends it;
`once` returns the command's exit code and leaves no pid file."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from testbeds import deploy

PY = shutil.which("python3", path="/usr/bin:/bin")


@pytest.fixture()
def shipped(tmp_path):
    return deploy.install_hostside(tmp_path / "lib")


def test_the_layout_tests_use_is_the_one_prepare_ships(tmp_path, monkeypatch):
    """deploy.HOSTSIDE_LAYOUT (what tests and benches lay out) is what the archive prepare unpacks under lib holds;
    a server's archive adds the hardware probes, and the role unpacks the archive of the host's role."""
    import tarfile

    import yaml

    monkeypatch.setenv("STREAMBENCH_CACHE", str(tmp_path))
    client, server = deploy.hostside_archive(server=False), deploy.hostside_archive(server=True)
    with tarfile.open(client) as t:
        files = {m.name: m for m in t.getmembers() if m.isfile()}
        assert sorted(files) == sorted(deploy.HOSTSIDE_LAYOUT.values())
        assert {m.mode for m in files.values()} == {0o644}
        assert t.extractfile("sbnode.py").read() == (deploy.HERE / "hostside" / "sbnode.py").read_bytes()
    with tarfile.open(server) as t:
        extra = sorted(m.name for m in t.getmembers() if m.isfile() and m.name not in files)
    assert extra == sorted(f"hwprobe/{f.name}" for f in (deploy.root() / "hw-probes" / "hwprobe").glob("*.py"))
    # named by their contents: the same files give the same archive, kept
    assert deploy.hostside_archive(server=False) == client and client != server
    tasks = yaml.safe_load((deploy.HERE / "ansible" / "roles" / "prepare" / "tasks" / "main.yml").read_text())
    task = next(t for t in tasks if str(t.get("name", "")).startswith("host-side helper"))
    assert task["ansible.builtin.unarchive"] == {
        "src": "{{ sb_ship.hostside['server' if 'server' in group_names else 'client'] }}", "dest": "{{ sb_work }}/lib"}


def _sb(lib, *args):
    return subprocess.run([PY, "-I", str(lib / "sbnode.py"), *map(str, args)], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.skipif(PY is None, reason="no system python3")
def test_start_status_stop(shipped, tmp_path):
    run = tmp_path / "run"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"node": "n1", "rundir": str(run), "cmd": ["sleep", "300"], "env": {},
                                "cwd": str(run / "n1"), "log": str(run / "n1" / "node.log"), "stopStage": 0}))
    r = _sb(shipped, "start", spec)
    assert r.returncode == 0, r.stderr
    pid = int(r.stdout.strip())
    assert (run / "pids" / "n1.json").is_file()
    assert json.loads(_sb(shipped, "status", run).stdout) == {"n1": True}
    r = _sb(shipped, "stop", run, "--timeout", "5")
    assert json.loads(r.stdout)["stopped"] == ["n1"]
    time.sleep(0.2)
    st = Path(f"/proc/{pid}/stat")
    assert not st.exists() or st.read_text().split(") ")[1].startswith("Z")
    assert json.loads(_sb(shipped, "status", run).stdout) == {}


@pytest.mark.skipif(PY is None, reason="no system python3")
def test_once_exit_code(shipped, tmp_path):
    run = tmp_path / "run"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"node": "fmt", "rundir": str(run), "cmd": ["sh", "-c", "echo boom; exit 7"],
                                "env": {}, "cwd": str(run), "log": str(run / "fmt.log"), "timeout": 30}))
    r = _sb(shipped, "once", spec)
    assert r.returncode == 7
    assert "boom" in r.stderr
    assert not (run / "pids" / "fmt.json").exists()


@pytest.mark.skipif(PY is None, reason="no system python3")
def test_wait_checks_the_stage_on_the_host_and_a_dead_node_ends_it_at_once(shipped, tmp_path):
    run = tmp_path / "run"
    log = run / "n1" / "node.log"
    spec = tmp_path / "spec.json"
    # a node that prints its ready line after a moment, then keeps running
    spec.write_text(json.dumps({"node": "n1", "rundir": str(run), "cmd": ["sh", "-c", "sleep 1; echo up and ready; sleep 300"],
                                "env": {}, "cwd": str(run / "n1"), "log": str(log), "stopStage": 0,
                                "mkdirs": [str(run / "data" / "n1")], "maxLogBytes": 1 << 20}))
    assert _sb(shipped, "start", spec).returncode == 0
    assert (run / "data" / "n1").is_dir()
    ready = tmp_path / "ready.json"
    ready.write_text(json.dumps({"rundir": str(run), "timeout": 30,
                                 "conds": [{"kind": "log", "node": "n1", "path": str(log), "text": "up and ready"}]}))
    t0 = time.monotonic()
    r = _sb(shipped, "wait", ready)
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 < 20
    # a condition that never holds: the timeout, one line naming the node and what it waited for
    ready.write_text(json.dumps({"rundir": str(run), "timeout": 1,
                                 "conds": [{"kind": "port", "node": "n1", "address": "127.0.0.1", "port": 1}]}))
    r = _sb(shipped, "wait", ready)
    assert r.returncode == 1 and r.stderr.strip() == "n1: not ready (port 127.0.0.1:1 not listening)"
    _sb(shipped, "stop", run, "--timeout", "5")
    # a node that dies: the wait ends at once with its log's last lines, not at the timeout
    spec.write_text(json.dumps({"node": "n2", "rundir": str(run), "cmd": ["sh", "-c", "echo cannot bind; exit 3"],
                                "env": {}, "cwd": str(run / "n2"), "log": str(run / "n2" / "node.log"), "stopStage": 0}))
    assert _sb(shipped, "start", spec).returncode == 0
    time.sleep(0.5)
    ready.write_text(json.dumps({"rundir": str(run), "timeout": 60,
                                 "conds": [{"kind": "log", "node": "n2", "path": str(run / "n2" / "node.log"),
                                            "text": "never printed"}]}))
    t0 = time.monotonic()
    r = _sb(shipped, "wait", ready)
    assert r.returncode == 1 and time.monotonic() - t0 < 20
    assert r.stderr.startswith("n2: exited during start-up; last lines of ") and "cannot bind" in r.stderr
    _sb(shipped, "stop", run, "--timeout", "5")


@pytest.mark.skipif(PY is None, reason="no system python3")
def test_a_stage_runs_its_steps_in_order_in_one_call_and_stops_at_the_first_failure(shipped, tmp_path):
    """cluster-start's stage on a host: its one-off commands, then its starts, then its waits, one call."""
    run = tmp_path / "run"
    order = tmp_path / "order"

    def spec(name, cmd, **kw):
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps({"node": name, "rundir": str(run), "cmd": ["sh", "-c", cmd], "env": {},
                                 "cwd": str(run / name), "log": str(run / name / "node.log"), "stopStage": 0, **kw}))
        return p
    fmt = spec("fmt", f"echo fmt >> {order}", timeout=30)
    n1 = spec("n1", f"echo n1 >> {order}; echo up; sleep 300")
    ready = tmp_path / "ready.json"
    ready.write_text(json.dumps({"rundir": str(run), "timeout": 30,
                                 "conds": [{"kind": "log", "node": "n1", "path": str(run / "n1" / "node.log"),
                                            "text": "up"}]}))
    r = _sb(shipped, "stage", f"once:{fmt}", f"start:{n1}", f"wait:{ready}")
    assert r.returncode == 0, r.stderr
    assert order.read_text().split() == ["fmt", "n1"]
    assert json.loads(_sb(shipped, "status", run).stdout) == {"n1": True}
    # a one-off command that fails: its exit code, and nothing after it runs
    bad = spec("bad", "echo broken; exit 5", timeout=30)
    n2 = spec("n2", f"echo n2 >> {order}; sleep 300")
    r = _sb(shipped, "stage", f"once:{bad}", f"start:{n2}")
    assert r.returncode == 5 and "broken" in r.stderr
    assert "n2" not in order.read_text().split()
    r = _sb(shipped, "stage", f"begin:{bad}")
    assert r.returncode == 2 and "'begin:" in r.stderr
    # reset: the stale node stopped, the run's directories removed (and one already gone is no error)
    data = tmp_path / "data" / "n1"
    data.mkdir(parents=True)
    r = _sb(shipped, "reset", run, data, tmp_path / "never-made")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["stopped"] == ["n1"] and out["removed"] == [str(data)] and not data.exists()
    assert json.loads(_sb(shipped, "status", run).stdout) == {}
    assert json.loads(_sb(shipped, "reset", "-", tmp_path / "never-made").stdout) == {}


@pytest.mark.skipif(PY is None, reason="no system python3")
def test_a_faultfs_node_gets_its_data_dirs_mounted_dropped_by_the_hook_module_and_unmounted_by_stop(shipped, tmp_path):
    """The power-loss cells on an inventory's host: sbnode start mounts each data directory on faultfs (the FUSE
    binding from lib/py, as prepare ships it; its durable state beside it on the same disk) and lists it in the run;
    the hook's drop_all(rundir) finds it there although it is not under the run directory; stop unmounts it."""
    import mfusepy

    from systems import faultfs

    (shipped / "py").mkdir()
    shutil.copy(mfusepy.__file__, shipped / "py" / "mfusepy.py")
    run, disk = tmp_path / "run", tmp_path / "disk" / "log" / "c1" / "n1"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"node": "n1", "rundir": str(run), "cmd": ["sleep", "300"], "env": {},
                                "cwd": str(run / "n1"), "log": str(run / "n1" / "node.log"), "stopStage": 0,
                                "mkdirs": [str(disk)], "faultfs": True}))
    try:
        r = _sb(shipped, "start", spec)
        assert r.returncode == 0, r.stderr
        assert faultfs.is_mounted(disk)
        assert json.loads((run / "faultfs-mounts.json").read_text()) == [str(disk.resolve())]
        assert Path(f"{disk}.faultfs").is_dir()  # the durable state, a sibling on the same disk
        (disk / "unsynced").write_text("x" * 100)
        with open(disk / "synced", "w") as f:
            f.write("y" * 100)
            f.flush()
            os.fsync(f.fileno())
        code = ("import sys, json; sys.path[:0] = [sys.argv[1]]; from sbhost import faultfs; "
                "print(json.dumps(faultfs.drop_all(sys.argv[2], require_idle=False)))")
        d = subprocess.run([PY, "-I", "-c", code, str(shipped), str(run)], capture_output=True, text=True, timeout=60)
        assert d.returncode == 0, d.stderr
        assert list(json.loads(d.stdout)) == [str(disk.resolve())]
        # a file created and never fsync'ed is kept, empty (systems/README.md, faultfs); the synced one whole
        assert (disk / "unsynced").read_text() == "" and (disk / "synced").read_text() == "y" * 100
        r = _sb(shipped, "stop", run, "--timeout", "5")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["unmounted"] == [str(disk.resolve())]
        assert not faultfs.is_mounted(disk)
    finally:
        for mp in faultfs.mounts_under(tmp_path):
            faultfs.unmount(mp, discard=True)
        _sb(shipped, "stop", run, "--timeout", "5")
