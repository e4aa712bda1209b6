"""Every kind of run the aws plan holds, on each system, is a kind `snakemake --profile lab all` runs (issue 29): a
fleet is paid for only what has run on hosts of their own. A kind is what the code paths of a run depend on: the
workload's shape (fixed rate, max-rate search, backlog, catch-up read, fan-out) and whether its processes split over
client hosts (testbeds/runner.clients_for, with the number of client hosts of the fleet or the lab), or its fault.
The lab runs each once (scales.lab)."""
from __future__ import annotations

import types
from functools import lru_cache

import yaml

from systems import durability
from testbeds import runner
from testbeds.aws import plan as aws_plan
from workloads import drivers, fanout, plan

ROOT = plan.HERE.parent


@lru_cache(maxsize=1)
def _doc_catalog():
    return plan.load(), drivers.catalog(durability.load())


@lru_cache(maxsize=None)
def _workload(name: str) -> dict:
    return yaml.safe_load((plan.OMB_DIR / f"{name}.yaml").read_text()) or {}


def kinds(run: plan.Run, client_hosts: int) -> set[str]:
    """The facets of a run its code paths depend on: its fault, or its workload's shape and whether its processes
    split over client hosts (a fan-out run on one host and a fixed-rate run on two cover both placements of both)."""
    if run.fault:
        return {f"fault {run.fault}"}
    wl, path = _workload(run.base_workload), plan.OMB_DIR / f"{run.base_workload}.yaml"
    x = wl.get("x-streambench") or {}
    if fanout.is_fanout(wl):
        shape = "fan-out"
    elif x.get("catchUpSubscriptions"):
        shape = "catch-up"
    elif float(wl.get("consumerBacklogSizeGB") or 0) > 0 or float(x.get("consumerBacklogSizeBytes") or 0) > 0:
        shape = "backlog"
    elif wl.get("producerRate", 0) == 0 and run.rate is None:
        shape = "max-rate"
    else:
        shape = "fixed-rate"
    hosts = len(runner.clients_for(types.SimpleNamespace(clients=[object()] * client_hosts), path))
    return {shape, "on one client host" if hosts == 1 else "split over client hosts"}


def _kinds(runs, client_hosts) -> set[tuple[str, str]]:
    return {(r.system, k) for r in runs for k in kinds(r, client_hosts)}


def _aws_kinds() -> set[tuple[str, str]]:
    doc, catalog = _doc_catalog()
    fleets, _ = aws_plan.load_fleets(ROOT / "testbeds/aws/instances.yaml")
    by_fleet = aws_plan.assign(plan.expand(doc, catalog, "aws"), doc, fleets, "testbeds/aws/instances.yaml")
    out = set()
    for name, runs in by_fleet.items():
        out |= _kinds(runs, fleets[name].clients.count)
    return out


def _lab_kinds() -> set[tuple[str, str]]:
    doc, catalog = _doc_catalog()
    prof = yaml.safe_load((ROOT / "env/profiles/lab/config.yaml").read_text())["config"]
    runs = plan.expand(doc, catalog, prof["workloads"]["scale"])
    return _kinds(runs, prof["testbeds"]["lab"]["clients"])


def test_every_kind_of_run_the_aws_plan_holds_runs_in_the_lab_profile():
    aws, lab = _aws_kinds(), _lab_kinds()
    missing = sorted(aws - lab)
    assert not missing, f"the aws plan holds kinds of run `--profile lab all` does not run: {missing}"
    # the check has something to check: the aws plan's faults, its fan-out and its runs split over client hosts
    assert {k for _, k in aws} >= {"fan-out", "fixed-rate", "max-rate", "backlog", "catch-up", "on one client host",
                                   "split over client hosts", "fault power-loss", "fault partition-majority"}
    assert {s for s, _ in aws} == {"kafka", "pulsar", "pravega"}


def test_a_kind_the_lab_does_not_run_is_named():
    """The comparison fails, naming the pair, when the lab's scale leaves a kind out (here: its fault cells)."""
    lab = _lab_kinds()
    without_faults = {(s, k) for s, k in lab if not k.startswith("fault ")}
    missing = sorted(_aws_kinds() - without_faults)
    assert ("pravega", "fault pause-leader") in missing and ("kafka", "fault power-loss") in missing
