"""Host sampling on an inventory's hosts (issue 29: host sampling on every host; issue 30, blocker 9): each host is
sampled on itself over ssh, its cluster and runner processes found from the pid records sbnode.py writes. Here every
"host" is this machine behind a real sshd, each with its own work directory: a busy process recorded as a node of
server-1's cluster is server-1's cluster CPU, and the same process is other work to every other host."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbeds import hostsample, inventory
from testbeds.tests.localsshd import inventory_doc, needs_sshd
from workloads import guard


def _inv(tmp_path, sshd):
    sshd.start()
    doc = inventory_doc(tmp_path, sshd)
    for h in doc["hosts"]:
        os.makedirs(h["dataDirs"]["log"], exist_ok=True)
    return inventory.check(doc, tmp_path / "inventory.json")


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:  # ended meanwhile
        return ""


def _busy(seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", f"import time\nt=time.time()\nwhile time.time()-t<{seconds}: pass"],
                            start_new_session=True)


# serial: it measures this machine's CPU (the top foreign process must be its own busy loop); beside another test on
# the second pytest-xdist worker that process can be the other test's (seen: a neighbour's CPU-bound process on top)
@pytest.mark.serial
@needs_sshd
def test_each_host_attributes_cpu_from_its_own_pid_records(sshd, tmp_path):
    inv = _inv(tmp_path, sshd)
    server = inv.servers[0]
    busy = _busy(6)
    try:
        rec = tmp_path / "hosts" / server.name / "opt" / "streambench" / "runs" / "c1" / "pids" / "kafka-1.json"
        rec.parent.mkdir(parents=True)
        rec.write_text(json.dumps({"node": "kafka-1", "pid": busy.pid, "pgid": busy.pid}))
        s = hostsample.RemoteSampler(inv, guard.limits_with_defaults({}), interval=0.25)
        s.start()
        time.sleep(4)
        s.stop()
    finally:
        busy.kill()
        busy.wait()
    mine = s.host_summary(server.name)
    other = s.host_summary(inv.clients[0].name)
    assert mine and other, (s.samples, s.errors)
    assert mine["cores"] == os.cpu_count() and mine["clusterCores"] > 0.3, mine  # one busy core, its own node
    assert other["clusterCores"] == 0 and other["foreignCores"] > 0.3, other  # the same process: not client-1's
    # on client-1 the busy process is other work, and it is named (by the kernel's name of it) with its pid
    assert other["foreignProcesses"][0]["pid"] == busy.pid and other["foreignProcesses"][0]["cores"] > 0.3, other
    assert other["foreignProcesses"][0]["name"].startswith("python"), other
    assert all(p["pid"] != busy.pid for p in mine["foreignProcesses"]), mine
    summ = s.summary()
    assert set(summ["hosts"]) == {h.name for h in inv.hosts} and summ["unsampled"] == []
    assert summ["foreignHost"] != server.name and summ["foreignCores"] > 0.3
    v = guard.validity(summ, {}, guard.limits_with_defaults({"suspect_foreign_cpu_cores": 0.25}))
    assert v["status"] == "suspect" and f"the host ({summ['foreignHost']}) ran other work" in v["reasons"][0]
    assert all(d[0] == server.data_dirs["log"] for smp in s.samples[server.name] for d in smp["disks"])


@needs_sshd
def test_a_full_data_file_system_on_a_server_is_reported_naming_host_and_path(sshd, tmp_path):
    inv = _inv(tmp_path, sshd)
    seen = []
    # a free-space floor no disk meets: the first sample of a server's data directory trips it
    s = hostsample.RemoteSampler(inv, guard.limits_with_defaults({"disk_min_free_gb": 1e9}), on_disk_full=seen.append,
                                 interval=0.25)
    s.start()
    deadline = time.time() + 20
    while not s.disk_full and time.time() < deadline:
        time.sleep(0.1)
    s.stop()
    assert s.disk_full and len(seen) == 1 and s.peak_used > 0
    assert any(f"{h.name}:{h.data_dirs['log']}" in s.disk_full for h in inv.servers), s.disk_full
    # the samplers ended with their connections: nothing of them is left (this test's own: their command lines name
    # its hosts' directories; another lab's samplers may run on this machine meanwhile)
    left = [p for p in subprocess.run(["pgrep", "-f", "stop.wait"], capture_output=True, text=True).stdout.split()
            if str(tmp_path) in _cmdline(p)]
    assert left == [], left


def test_the_summary_is_none_without_samples(tmp_path):
    doc = {"schemaVersion": 1, "testbed": "hosts", "id": "x", "ssh": {"user": "root", "privateKey": "/k"},
           "hosts": [{"name": f"s{i}", "roles": ["server"], "address": "10.0.0.1", "dataDirs": {"log": "/d"}}
                     for i in range(3)] + [{"name": "c", "roles": ["client"], "address": "10.0.0.2"}]}
    s = hostsample.RemoteSampler(inventory.check(doc, tmp_path / "i.json"), guard.limits_with_defaults({}))
    assert s.summary() is None


@needs_sshd
def test_the_nodes_gc_logs_of_hosts_elsewhere_are_fetched_for_the_pause_check(sshd, tmp_path):
    """guard.gc_pauses reads node GC logs; on hosts without a shared file system they are copied over ssh first."""
    import datetime as dt
    from testbeds import hooks
    inv = _inv(tmp_path, sshd)
    f = tmp_path / "inventory.json"
    f.write_text(json.dumps(inv.doc))
    remote_dirs = {}
    t = dt.datetime.now(dt.timezone.utc)
    for i, h in enumerate(inv.servers):
        rd = tmp_path / "hosts" / h.name / "opt" / "streambench" / "runs" / "c1"
        logs = rd / "nodes" / f"kafka-{i + 1}" / "logs"
        logs.mkdir(parents=True)
        stamp = t.strftime("%Y-%m-%dT%H:%M:%S.000+0000")
        (logs / "gc.log").write_text(f"[{stamp}][info][gc] GC(3) Pause Young (Normal) 12M->4M(64M) {5 + i}.250ms\n")
        remote_dirs[h.name] = str(rd)
    rundir = tmp_path / "controller-run"
    rundir.mkdir()
    (rundir / "remote.json").write_text(json.dumps({"sb_cluster": {"rundir": remote_dirs}}))
    dirs = hooks.node_dirs(rundir, str(f))
    assert dirs == [rundir / "host-logs" / h.name for h in inv.servers]
    logs = {n: fs for d in dirs for n, fs in guard.node_gc_logs(d).items()}
    pauses = guard.gc_pauses(logs, t.timestamp() - 5, t.timestamp() + 5)
    assert pauses == {"kafka-1": 5.25, "kafka-2": 6.25, "kafka-3": 7.25}
