"""Bounded cells (issue 11): a broker frozen mid-cell makes the cell fail with reason `timeout` within its deadline,
nothing is left running, and the next cell runs on a fresh cluster; a disk that cannot take a cell refuses it before
any cluster starts."""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from systems import cluster as sys_cluster
from workloads import plan
from workloads import run as wrun

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = "1-topic-100-partitions-1kb-2p-2c-200k"
DRIVER = ROOT / "workloads/drivers/kafka-L1-tuned.yaml"


def cell(tmp: Path, rep: int) -> tuple[plan.Run, Path, Path, Path]:
    r = plan.Run("kafka", "L1", "tuned", None, WORKLOAD, None, rep, ("E000-LAT1",))
    return r, tmp / f"raw/{r.key}.json", tmp / f"runs/status/{r.key}.json", tmp / f"runs/logs/{r.key}.log"


def test_a_cell_the_disk_cannot_take_is_refused_before_any_cluster_starts(tmp_path):
    r, result, status, log = cell(tmp_path, 1)
    clusters = tmp_path / "runs/clusters"
    rec = wrun.execute(r, "ci", "ci", result, status, clusters, log, DRIVER,
                       limits={"disk_min_free_gb": 1e9})
    assert rec["status"] == "failed" and rec["reason"] == "disk" and rec["phase"] == "set-up"
    assert rec["error"].startswith("disk: a kafka cluster and cell kafka/L1/") and "GB can be used there" in rec["error"]
    assert not result.exists()
    assert not [p for p in clusters.glob("*") if p.is_dir()], "no cluster was started"


def _node_pgids(clusters: Path) -> list[int]:
    cur = json.loads((clusters / "current.json").read_text())
    return [json.loads(p.read_text())["pgid"] for p in (Path(cur["dir"]) / "pids").glob("*.json")]


def _live_java(rundirs: list[Path]) -> list[str]:
    out = []
    for rd in rundirs:
        st = sys_cluster.status(rd)
        out += [n["node"] for n in st["nodes"] if n["alive"]]
    return out


@pytest.mark.integration
@pytest.mark.serial  # the next cell must meet its rate (rateMet): nothing may run beside it
def test_a_frozen_broker_fails_the_cell_with_a_timeout_and_the_next_cell_runs(tmp_path):
    clusters = tmp_path / "runs/clusters"
    # a deadline of 0.5 x the 45.5 s the runner's plan allows a ci cell, + 10 s: 33 s, twice what the next cell's runner
    # takes alone (15 s); the frozen cell waits that long, then its clean-up
    limits = {"deadline_factor": 0.5, "deadline_margin_seconds": 10, "systems_timeout_seconds": 600}
    r, result, status, log = cell(tmp_path, 1)
    frozen: list[int] = []

    def freeze_when_producing():
        work = clusters.parent / "work" / r.relpath("ci") / "runner.log"
        t_end = time.time() + 600
        while time.time() < t_end:
            try:
                if "producing at" in work.read_text(errors="replace"):
                    break
            except OSError:
                pass
            time.sleep(0.2)
        for pg in _node_pgids(clusters):
            os.killpg(pg, signal.SIGSTOP)  # the brokers hang: no ack, no answer, no crash
            frozen.append(pg)

    t = threading.Thread(target=freeze_when_producing, daemon=True)
    t.start()
    rec = wrun.execute(r, "ci", "ci", result, status, clusters, log, DRIVER, limits=limits)
    t.join(5)
    try:
        assert frozen, f"the brokers were never frozen (the runner never started producing): {rec}"
        assert rec["status"] == "failed", rec
        assert rec["reason"] == "timeout", rec
        assert rec["phase"] in ("measure", "flush", "drain-wait", "clean-up"), rec
        # the runner stops itself at its deadline (plus a bounded clean-up); run.py's hard bound is 45 s later
        assert rec["runnerSeconds"] <= rec["deadlineSeconds"] + 45, rec
        assert "logTail" in rec and not result.exists()
        rundirs = [p for p in clusters.iterdir() if p.is_dir()]
        assert not _live_java(rundirs), "the frozen cluster was stopped"
        assert not (clusters / "current.json").exists()
        kept = json.loads((clusters / "kept.json").read_text())["dir"]
        assert any((Path(kept) / "nodes").rglob("*.log")), "the failed cluster's logs are kept"
        # the matrix goes on: the next cell gets a fresh cluster and succeeds
        r2, result2, status2, log2 = cell(tmp_path, 2)
        rec2 = wrun.execute(r2, "ci", "ci", result2, status2, clusters, log2, DRIVER, limits=limits)
        assert rec2["status"] == "ok", rec2
        assert rec2["audit"]["lost"] == 0 and rec2["audit"]["duplicated"] == 0
        res = json.loads(result2.read_text())
        assert res["x-streambench"]["testbedHost"]["validity"]["status"] in ("ok", "suspect")
        assert res["x-streambench"]["measuredPhase"]["rateMet"] is True, res["x-streambench"]["measuredPhase"]
        assert json.loads((clusters / "current.json").read_text())["dir"] != kept
    finally:
        for pg in frozen:
            try:
                os.killpg(pg, signal.SIGCONT)
            except ProcessLookupError:
                pass
        wrun.Clusters(clusters, limits).down(tmp_path / "down.log")
        assert not _live_java([p for p in clusters.iterdir() if p.is_dir()])
