"""Which client hosts run a workload (testbeds.runner.clients_for): pure logic on a lab inventory, no hosts."""
from __future__ import annotations

import json

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


def test_a_fanout_workload_runs_on_the_first_client_host_only(tmp_path):
    # study 003: sized for one runner process (workloads/fanout.py); the processes' start barrier is a directory
    inv = _inventory(tmp_path, 2)
    assert [h.name for h in clients_for(inv, OMB_DIR / "1-topic-1-partition-10kb-1p-1c-20ksub-1.yaml")] == ["client-1"]
