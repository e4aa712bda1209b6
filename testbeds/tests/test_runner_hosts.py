"""Which client hosts run a workload (testbeds.runner.clients_for): pure logic on a lab inventory, no hosts."""
from __future__ import annotations

import json

import pytest

from testbeds import inventory
from testbeds.lab import inventory_doc, plan
from testbeds.runner import clients_for
from workloads.plan import OMB_DIR


def _inventory(tmp_path, clients):
    f = tmp_path / "inventory.json"
    f.write_text(json.dumps(inventory_doc(plan("u1", 3, clients, "10.77.0.0/24", base=tmp_path), tmp_path / "u1")))
    return inventory.load(f)


def test_a_workload_runs_on_every_client_host(tmp_path):
    inv = _inventory(tmp_path, 2)
    assert [h.name for h in clients_for(inv, OMB_DIR / "1-topic-100-partitions-1kb-4p-4c-500k.yaml")] == \
        ["client-1", "client-2"]


def test_a_fanout_workload_is_split_over_every_client_host(tmp_path):
    # study 003: each host's process connects its share of the consumers; the coordinated barrier starts them together
    inv = _inventory(tmp_path, 2)
    assert [h.name for h in clients_for(inv, OMB_DIR / "1-topic-1-partition-10kb-1p-1c-20ksub-1.yaml")] == \
        ["client-1", "client-2"]


@pytest.mark.parametrize("change, hosts", [
    ({"producerRate": 0}, 1),                              # a max-rate search is judged by one process
    ({"consumerBacklogSizeGB": 1}, 1),                     # so is a backlog build and drain
    ({"x-streambench": {"catchUpSubscriptions": 1, "catchUpStartBacklogGB": 1}}, 1),  # and a mixed workload
    ({"producersPerTopic": 1}, 1),                         # each process needs a producer of its own
    ({"producersPerTopic": 4}, 2),
])
def test_workloads_one_process_must_run_stay_on_one_client_host(tmp_path, change, hosts):
    import yaml
    inv = _inventory(tmp_path, 2)
    wl = yaml.safe_load((OMB_DIR / "1-topic-100-partitions-1kb-4p-4c-500k.yaml").read_text())
    wl.update(change)
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump(wl))
    assert len(clients_for(inv, f)) == hosts


def test_the_remote_runner_starts_with_the_jvm_options_omb_run_uses(tmp_path, monkeypatch):
    """Issue 30, blocker 9: a remote result must come from the same JVM set-up as a local one. omb-run is run for real
    with a stand-in `java` that prints its arguments; the remote command must carry the same options."""
    import os
    import subprocess

    from testbeds.runner import _remote_cmd
    from testbeds.util import root

    jdk = tmp_path / "jdk" / "bin"
    jdk.mkdir(parents=True)
    (jdk / "java").write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    (jdk / "java").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "OMB_RUN_JAVA_OPTS"}
    env["JAVA_HOME"] = str(tmp_path / "jdk")
    out = subprocess.run([str(root() / "runner" / "bin" / "omb-run"), "--help"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 0, out.stderr  # needs the built runner (env/test builds it first)
    local = [a for a in out.stdout.splitlines() if a.startswith("-X")]
    inv = _inventory(tmp_path, 1)
    cmd = _remote_cmd(inv.clients[0], "/w/bench/x", "rev", False, 0, 1, None, [])
    remote = [a for a in cmd if a.startswith("-X")]
    assert local and remote == local, (remote, local)
    assert "-XX:MaxGCPauseMillis=10" in remote
    # env/test's extra JVM options (systems/plan.py) reach both, in the same place
    env["STREAMBENCH_JVM_EXTRA_OPTS"] = "-XX:TieredStopAtLevel=1"
    monkeypatch.setenv("STREAMBENCH_JVM_EXTRA_OPTS", "-XX:TieredStopAtLevel=1")
    out = subprocess.run([str(root() / "runner" / "bin" / "omb-run"), "--help"], capture_output=True, text=True,
                         env=env, timeout=60)
    cmd = _remote_cmd(inv.clients[0], "/w/bench/x", "rev", False, 0, 1, None, [])
    local2 = [a for a in out.stdout.splitlines() if a.startswith("-X")]
    assert local2 == [*local, "-XX:TieredStopAtLevel=1"] and [a for a in cmd if a.startswith("-X")] == local2


def test_a_fanout_runs_processes_spread_over_the_client_hosts_each_in_its_own_slot(tmp_path):
    # more processes than client hosts (the consumers' open files or heap, workloads/fanout.py): as even as they go
    from testbeds.runner import slots_for
    inv = _inventory(tmp_path, 2)
    assert [h.name for h in slots_for(inv.clients, 5)] == ["client-1"] * 3 + ["client-2"] * 2
    assert [h.name for h in slots_for(inv.clients, 1)] == ["client-1", "client-2"]  # every host takes one
    assert [h.name for h in slots_for(inv.clients[:1], 3)] == ["client-1"] * 3


def test_only_a_fanout_is_split_over_more_processes_than_client_hosts(tmp_path):
    from testbeds.runner import run
    from testbeds.util import TestbedError
    inv = _inventory(tmp_path, 2)
    wl = OMB_DIR / "1-topic-100-partitions-1kb-4p-4c-500k.yaml"
    with pytest.raises(TestbedError, match=r"500k\.yaml: --processes 3: only a fan-out run is split over more runner "
                                           r"processes than client hosts \(2\)"):
        run(inv, wl, tmp_path / "d.yaml", tmp_path / "c.json", tmp_path / "out.json", processes=3)
    assert not (tmp_path / "out.json").exists()
