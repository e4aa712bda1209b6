"""Run one benchmark cell: make sure the right cluster is up, run the workload, file the result.

Called by the Snakemake rule `benchmark_run` once per run. The cluster for (system, level, tuning) is kept
running between the runs that share it (the rules' priorities keep those runs together) and is replaced when
a run needs another one; `python -m workloads.run --down-all` stops whatever is left (the DAG's last step,
and the workflow's error handler).

Outcome of a run: a status record (always written; it is the rule's output) and, only on success, the
result file under data/raw. A failed run is recorded as failed, with the tail of its log, and does not stop
the other runs; partial results never reach data/raw. `python -m workloads.run --forget-failed` deletes the
failed records so that the next Snakemake call retries exactly those runs.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from workloads import plan, scale, watch

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "runner" / "bin" / "omb-run"


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def tail(path: Path, n: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def first_error(path: Path) -> str:
    """The first line of a log that reports an error (the runner's `ERROR run failed: ...`), else ''."""
    try:
        for line in path.read_text(errors="replace").splitlines():
            if " ERROR " in line or line.lower().startswith(("error", "omb-run: error")):
                return line.strip()
    except OSError:
        pass
    return ""


def systems_cli(*args: str, log: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "systems", *args]
    with open(log, "a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        return subprocess.run(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout)


class Clusters:
    """The one cluster this testbed has running, recorded in <clusters>/current.json."""

    def __init__(self, base: Path):
        self.base = base
        self.current = base / "current.json"

    def read(self) -> dict | None:
        try:
            return json.loads(self.current.read_text())
        except (OSError, ValueError):
            return None

    @staticmethod
    def running(rundir: str) -> bool:
        """True when every node of the cluster in rundir still runs (`systems status` says "running")."""
        res = subprocess.run([sys.executable, "-m", "systems", "status", "--dir", rundir], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        try:
            return res.returncode == 0 and json.loads(res.stdout).get("state") == "running"
        except ValueError:
            return False

    def down(self, log: Path) -> None:
        cur = self.read()
        if cur is None:
            return
        systems_cli("down", "--dir", cur["dir"], log=log)
        self.current.unlink(missing_ok=True)

    def ensure(self, run: plan.Run, log: Path) -> Path:
        cur = self.read()
        if cur and cur["key"] == run.cluster_key and self.running(cur["dir"]):
            return Path(cur["dir"])
        self.down(log)
        rundir = self.base / f"{run.cluster_key}-{time.strftime('%Y%m%dT%H%M%S')}"
        self.base.mkdir(parents=True, exist_ok=True)
        scale.write_atomic(self.current, json.dumps({"key": run.cluster_key, "dir": str(rundir), "since": now()}))
        res = systems_cli("up", run.system, "--level", run.level, "--tuning", run.tuning, "--dir", str(rundir), log=log)
        if res.returncode != 0:
            self.down(log)
            raise RuntimeError(f"cluster {run.cluster_key} did not start (see {log})")
        owner = os.environ.get(watch.OWNER_ENV)
        if owner and owner.isdigit():
            watch.spawn(int(owner), self.base, rundir)
        return rundir


def execute(run: plan.Run, testbed: str, scale_name: str, result: Path, status: Path, clusters: Path, log: Path,
            driver: Path, experiments: Path = plan.EXPERIMENTS) -> dict:
    doc = plan.load(experiments)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    work = clusters.parent / "work" / run.relpath(testbed)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    record = {"run": run.relpath(testbed), "system": run.system, "level": run.level, "tuning": run.tuning_label,
              "workload": run.workload_id, "baseWorkload": run.base_workload, "rate": run.rate, "rep": run.rep,
              "experiments": list(run.experiments), "scale": scale_name, "testbed": testbed, "startedAt": now(),
              "log": str(log)}
    try:
        wl_src = yaml.safe_load((plan.OMB_DIR / f"{run.base_workload}.yaml").read_text())
        wl, changes = scale.scale_workload(wl_src, doc["scales"][scale_name], run.rate)
        record["scaling"] = changes
        wl_file = work / f"{run.workload_id}.yaml"
        scale.write_atomic(wl_file, yaml.safe_dump(wl, sort_keys=False))
        drv_file = work / "driver.yaml"
        shutil.copyfile(driver, drv_file)  # the generated file (workloads/drivers/), kept in step by a test
        rundir = Clusters(clusters).ensure(run, log)
        tmp_out = work / "result.json"
        cmd = [str(RUNNER), "--workload", str(wl_file), "--driver", str(drv_file),
               "--cluster", str(rundir / "cluster.json"), "--output", str(tmp_out), "--log", str(work / "runner.log")]
        with open(log, "a") as fh:
            fh.write(f"$ {' '.join(cmd)}\n")
            fh.flush()
            res = subprocess.run(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
        if res.returncode != 0 or not tmp_out.is_file():
            why = first_error(work / "runner.log") or first_error(log)
            raise RuntimeError(f"runner exited {res.returncode}: {why}\n{tail(work / 'runner.log') or tail(log)}")
        audit = json.loads(tmp_out.read_text()).get("x-streambench", {}).get("audit", {})
        record["audit"] = {k: audit.get(k) for k in ("sent", "acked", "sendErrors", "lost", "duplicated", "outOfOrder")}
        result.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp_out, result)  # same file system: data/raw and data/runs both live under data/
        record.update(status="ok", result=str(result))
    except Exception as exc:  # a failed run is recorded and the workflow goes on
        record.update(status="failed", error=str(exc), logTail=tail(log))
    record["endedAt"] = now()
    scale.write_atomic(status, json.dumps(record, indent=2) + "\n")
    return record


def forget_failed(status_root: Path) -> int:
    n = 0
    for p in status_root.rglob("*.json"):
        try:
            if json.loads(p.read_text()).get("status") == "failed":
                p.unlink()
                n += 1
        except (OSError, ValueError):
            continue
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workloads.run", description=__doc__.splitlines()[0])
    ap.add_argument("--clusters", required=True, help="directory holding the running cluster (data/runs/<testbed>/clusters)")
    ap.add_argument("--down-all", action="store_true", help="stop the cluster left running, then exit")
    ap.add_argument("--forget-failed", metavar="STATUS_DIR", help="delete failed status records under STATUS_DIR")
    ap.add_argument("--driver", help="the run's OMB driver file (workloads/drivers/<system>-<level>-<tuning>[-<variant>].yaml)")
    ap.add_argument("--experiments", default=str(plan.EXPERIMENTS), help="experiments file (default: %(default)s)")
    ap.add_argument("--testbed")
    ap.add_argument("--scale")
    ap.add_argument("--system")
    ap.add_argument("--level")
    ap.add_argument("--tuning")
    ap.add_argument("--variant")
    ap.add_argument("--workload")
    ap.add_argument("--rate", type=int)
    ap.add_argument("--rep", type=int)
    ap.add_argument("--default-tuning", default="tuned")
    ap.add_argument("--in-experiments", default="", help="comma-separated experiment ids this run belongs to")
    ap.add_argument("--result")
    ap.add_argument("--status")
    ap.add_argument("--log")
    a = ap.parse_args(argv)
    clusters = Path(a.clusters)
    if a.down_all:
        clusters.mkdir(parents=True, exist_ok=True)
        Clusters(clusters).down(clusters / "down.log")
        return 0
    if a.forget_failed:
        print(f"forgot {forget_failed(Path(a.forget_failed))} failed run(s)")
        return 0
    missing = [k for k in ("testbed", "scale", "system", "level", "tuning", "workload", "rep", "driver", "result", "status", "log")
               if getattr(a, k) is None]
    if missing:
        ap.error("missing " + ", ".join("--" + m for m in missing))
    exps = tuple(e for e in a.in_experiments.split(",") if e)
    run = plan.Run(a.system, a.level, a.tuning, a.variant or None, a.workload, a.rate, a.rep, exps, a.default_tuning)
    rec = execute(run, a.testbed, a.scale, Path(a.result), Path(a.status), clusters, Path(a.log), Path(a.driver), Path(a.experiments))
    print(f"{rec['run']}: {rec['status']}" + (f" ({rec.get('error', '').splitlines()[0]})" if rec["status"] != "ok" else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
