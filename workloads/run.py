"""Run one benchmark cell: make sure the right cluster is up, run the workload, file the result.

Called by the Snakemake rule `benchmark_run` once per run. The cluster for (system, level, tuning) is kept
running between the runs that share it (the rules' priorities keep those runs together) and is replaced when
a run needs another one; `python -m workloads.run --down-all` stops whatever is left (the DAG's last step,
and the workflow's error handler).

Outcome of a run: a status record (always written; it is the rule's output) and, only on success, the
result file under data/raw. A failed run is recorded as failed, with the tail of its log, and does not stop
the other runs; partial results never reach data/raw. `python -m workloads.run --forget-failed` deletes the
failed records so that the next Snakemake call retries exactly those runs.

Bounds (workloads/guard.py, config `workloads.limits`): the runner gets a deadline derived from its scaled
workload and is killed (its whole process group) when it overstays it; every `systems` call has a timeout; the
data file system is checked before each cell and watched while it runs. A cell that hits a bound is recorded
`failed` with `reason` (`timeout`, `disk`, `cluster`, `testbed`, `error`) and the phase it was in, its cluster is replaced,
and the next cell runs. A stopped cluster's data is deleted (config `keep_data` keeps the last failed one).
"""
from __future__ import annotations

import argparse
import re
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

import signal
import threading

from systems import cluster as sys_cluster
from systems.faultclient import CycleFailure
from systems.plan import jvm_extra_opts
from testbeds import hooks
from workloads import fanout, guard, plan, scale, watch

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


class CellFailure(CycleFailure):
    """A cell that could not run to its end: `reason` is timeout | disk | cluster | testbed | error, `phase` where it
    was (`testbed`: the hosts it was to run on failed before it and are gone, testbeds/hooks.py testbed_failed). The
    fault cycle's client raises its base class (systems/faultclient.py, which runs on hosts too)."""


def systems_cli(*args: str, log: Path, timeout: float = 900, inventory: str | None = None) -> subprocess.CompletedProcess:
    cmd = hooks.systems_cmd(*args, inventory=inventory)
    with open(log, "a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        try:
            return subprocess.run(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            fh.write(f"systems {args[0]}: no answer within {timeout:.0f} s; killed\n")
            raise CellFailure("timeout", f"`systems {args[0]}` did not finish within {timeout:.0f} s", f"systems-{args[0]}") from None


_CLI_ERROR = re.compile(r"^(?:testbeds|systems): error: (.+)$")


def first_error(log: Path, since: int = 0, limit: int = 300) -> str | None:
    """The first one-line error the systems or testbeds CLI wrote to `log` after byte `since` (e.g. `host s000-server-2:
    cluster-start: ...`), cut to `limit` characters; None when it wrote none. A run's status then names the host or
    the node at fault, not only the log to read."""
    try:
        with open(log, "rb") as fh:
            fh.seek(since)
            text = fh.read().decode(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        m = _CLI_ERROR.match(line.strip())
        if m:
            msg = m.group(1).strip()
            return msg if len(msg) <= limit else msg[:limit - 3] + "..."
    return None


def kill_group(p: subprocess.Popen, grace: float = 15.0) -> None:
    """SIGTERM the process group of p (the runner and anything it started), SIGKILL after grace seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


_PHASE = re.compile(r"phase (\S+) -> (\S+) at t=")
_TIMEOUT = re.compile(r"timeout: (?:the run's deadline of \d+ s passed in phase (\S+)|phase=(\S+))")


def runner_phase(*logs: Path) -> str:
    """The phase a runner was in, from its log lines: its own timeout line, else the last phase change."""
    phase = "set-up"
    for lp in logs:
        try:
            text = lp.read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            m = _TIMEOUT.search(line)
            if m:
                return m.group(1) or m.group(2)
            m = _PHASE.search(line)
            if m:
                phase = m.group(2)
    return phase


class Clusters:
    """The one cluster this testbed has running, recorded in <clusters>/current.json (with the inventory of the
    hosts it runs on, if any: a cluster is always stopped through the inventory it was started with)."""

    def __init__(self, base: Path, limits: dict | None = None, inventory: str | None = None):
        self.base = base
        self.inventory = inventory
        self.current = base / "current.json"
        self.kept = base / "kept.json"
        self.limits = guard.limits_with_defaults(limits)

    def read(self) -> dict | None:
        try:
            return json.loads(self.current.read_text())
        except (OSError, ValueError):
            return None

    @staticmethod
    def running(rundir: str, inventory: str | None = None) -> bool:
        """True when every node of the cluster in rundir still runs (`systems status` says "running")."""
        res = subprocess.run(hooks.systems_cmd("status", "--dir", rundir, inventory=inventory), cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        try:
            return res.returncode == 0 and json.loads(res.stdout).get("state") == "running"
        except ValueError:
            return False

    def down(self, log: Path, failed: bool = False) -> None:
        """Stop the current cluster and delete its data, unless `keep_data` keeps it (a failed cluster's data is
        kept by the default `last-failed`, in place of the one kept before)."""
        cur = self.read()
        if cur is None:
            return
        res = systems_cli("down", "--dir", cur["dir"], log=log, timeout=self.limits["systems_timeout_seconds"],
                          inventory=cur.get("inventory"))
        self.current.unlink(missing_ok=True)
        if res.returncode != 0:
            return  # something still runs: never delete under a live process; the next `up` reports it
        keep = self.limits["keep_data"]
        if keep == "all" or (keep == "last-failed" and failed):
            if keep == "last-failed":
                self._purge_kept(log)
                scale.write_atomic(self.kept, json.dumps({"dir": cur["dir"], "since": now()}))
            return
        self._purge(Path(cur["dir"]), log)

    def _purge(self, rundir: Path, log: Path) -> None:
        try:
            freed = sys_cluster.purge_data(rundir)
        except Exception as exc:  # a live node: leave the data, say so
            with open(log, "a") as fh:
                fh.write(f"not deleting the data of {rundir}: {exc}\n")
            return
        with open(log, "a") as fh:
            fh.write(f"deleted the data of {rundir} ({freed / 1e9:.2f} GB)\n")

    def _purge_kept(self, log: Path) -> None:
        try:
            old = json.loads(self.kept.read_text())["dir"]
        except (OSError, ValueError, KeyError):
            return
        self._purge(Path(old), log)
        self.kept.unlink(missing_ok=True)

    def collect_garbage(self, log: Path) -> None:
        """Delete the data of every stopped cluster here but the kept one (left by a crash, a kill, a watcher)."""
        try:
            kept = json.loads(self.kept.read_text()).get("dir")
        except (OSError, ValueError):
            kept = None
        cur = (self.read() or {}).get("dir")
        for d in sorted(p for p in self.base.iterdir() if p.is_dir() and (p / "nodes").is_dir()):
            if str(d) in (kept, cur):
                continue
            if sys_cluster.status(d)["state"] == "stopped" and any(
                    c.is_dir() and c.name != "logs" for nd in (d / "nodes").iterdir() if nd.is_dir() for c in nd.iterdir()):
                self._purge(d, log)

    def check_disk(self, need_bytes: float, what: str) -> list[dict]:
        """The cluster's bytes against the file systems that will hold them, before anything starts: this machine's
        clusters directory, or on an inventory's hosts each server's data directories (read with df over ssh),
        each server taking its share (the replicas spread over the servers). DiskShort names the host and path."""
        if self.inventory is None:
            return [guard.check_disk(self.base, need_bytes, self.limits, what)]
        try:
            disks = hooks.server_disks(self.inventory)
        except Exception as exc:  # noqa: BLE001 - an unreachable host: one line, the cell fails
            raise CellFailure("disk", f"disk: {exc}", "set-up") from None
        servers = len({d["host"] for d in disks}) or 1
        return [guard.check_space(f"{d['host']}:{d['path']}", d["total"], d["used"], d["free"], need_bytes / servers,
                                  self.limits, f"{what} ({1 / servers:.0%} of it per server)") for d in disks]

    def ensure(self, run: plan.Run, log: Path, need_bytes: float = 0.0, up_args: tuple[str, ...] = ()) -> Path:
        cur = self.read()
        if (cur and cur["key"] == run.cluster_key and cur.get("inventory") == self.inventory
                and self.running(cur["dir"], cur.get("inventory"))):
            try:
                self.check_disk(need_bytes, f"cell {run.key}")
            except guard.DiskShort as exc:
                raise CellFailure("disk", str(exc), "set-up") from None
            return Path(cur["dir"])
        self.down(log)
        self.base.mkdir(parents=True, exist_ok=True)
        self.collect_garbage(log)
        storage = (self.limits.get("_storage") or {}).get(run.system, {})
        try:
            self.check_disk(need_bytes + guard.fixed_need_bytes(run.system, storage),
                            f"a {run.system} cluster and cell {run.key}")
        except guard.DiskShort as exc:
            raise CellFailure("disk", str(exc), "set-up") from None
        rundir = self.base / f"{run.cluster_key}-{time.strftime('%Y%m%dT%H%M%S')}"
        scale.write_atomic(self.current, json.dumps({"key": run.cluster_key, "dir": str(rundir), "since": now(),
                                                     "inventory": self.inventory}))
        since = log.stat().st_size if log.exists() else 0
        res = systems_cli("up", run.system, "--level", run.level, "--tuning", run.tuning, "--dir", str(rundir), *up_args,
                          log=log,
                          timeout=self.limits["systems_timeout_seconds"], inventory=self.inventory)
        if res.returncode != 0:
            why = first_error(log, since)  # read before the clean-up below appends its own lines
            self.down(log, failed=True)
            raise CellFailure("cluster", f"cluster {run.cluster_key} did not start"
                              + (f": {why}" if why else "") + f" (see {log})", "systems-up")
        owner = os.environ.get(watch.OWNER_ENV)
        if owner and owner.isdigit() and self.inventory is None:  # a multi-host testbed has its own teardown
            watch.spawn(int(owner), self.base, rundir)
        return rundir


def replicas_of(driver: Path) -> int:
    """How many copies of each message the cluster stores (Kafka replicationFactor, Pulsar writeQuorum; Pravega: its
    bookies' write quorum 3, which every level of durability.yaml sets and no driver file can change, plus the copy the
    segment store moves to long-term storage, a directory of the same file system)."""
    try:
        d = yaml.safe_load(driver.read_text()) or {}
    except (OSError, ValueError):
        return 3
    if ".pravega." in str(d.get("driverClass", "")):
        return 3 + 1
    for k in ("replicationFactor",):
        if isinstance(d.get(k), int):
            return d[k]
    for k in ("writeQuorum", "ensembleSize"):
        v = (d.get("client") or {}).get("persistence", {}).get(k) if isinstance(d.get("client"), dict) else None
        if isinstance(v, int):
            return v
    return 3


def run_runner(cmd: list[str], log: Path, runner_log: Path, deadline: float, rundir: Path, data_path: Path,
               limits: dict, host_view=None, inventory: str | None = None) -> tuple[int, guard.HostSampler, str | None, float]:
    """Run the runner in its own process group with a wall-clock bound and the disk watched; host_view is what
    testbeds/hooks.host_pids says of the hosts (None: this machine). Returns (exit code, the host sampler, why it
    was stopped or None, elapsed seconds)."""
    cluster_pgids = set()
    for pf in (rundir / "pids").glob("*.json"):
        try:
            cluster_pgids.add(int(json.loads(pf.read_text())["pgid"]))
        except (OSError, ValueError, KeyError):
            pass
    stop_why: list[str] = []
    with open(log, "a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
    cluster_pids, runner_pids = guard.group_pids(cluster_pgids), guard.group_pids({p.pid})  # this machine's
    if host_view == "remote":  # hosts elsewhere: each is sampled on itself, over ssh (its disks too)
        sampler = hooks.remote_sampler(inventory, limits)
    else:
        if host_view is not None:  # a lab: the server hosts' and the client hosts' namespaces (the ssh client here is
            own = guard.group_pids({p.pid})  # the runner's too)
            cluster_pids, runner_pids = host_view[0], (lambda: own() + host_view[1]())
        sampler = guard.HostSampler(cluster_pids, runner_pids, data_path, limits)
    sampler.start()
    t0 = time.monotonic()
    # the runner ends itself at its deadline (exit 3, after a bounded clean-up); past that and this grace it is killed
    hard = deadline + 45
    try:
        while True:
            try:
                rc = p.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                pass
            if sampler.disk_full and not stop_why:
                stop_why.append("disk")
                threading.Thread(target=kill_group, args=(p,), daemon=True).start()
            if time.monotonic() - t0 > hard and "timeout" not in stop_why:
                stop_why.append("timeout")
                kill_group(p)
    except BaseException:
        kill_group(p, grace=5)  # Ctrl-C or SIGTERM of this process: the runner goes with it
        raise
    finally:
        sampler.stop()
    return rc, sampler, (stop_why[0] if stop_why else None), time.monotonic() - t0


def execute(run: plan.Run, testbed: str, scale_name: str, result: Path, status: Path, clusters: Path, log: Path,
            driver: Path, experiments: Path = plan.EXPERIMENTS, limits: dict | None = None,
            inventory: str | None = None) -> dict:
    doc = plan.load(experiments)
    limits = guard.limits_with_defaults(limits)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    work = clusters.parent / "work" / run.relpath(testbed)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    record = {"run": run.relpath(testbed), "system": run.system, "level": run.level, "tuning": run.tuning_label,
              "workload": run.workload_id, "baseWorkload": run.base_workload, "rate": run.rate, "rep": run.rep,
              "experiments": list(run.experiments), "scale": scale_name, "testbed": testbed, "startedAt": now(),
              "log": str(log)}
    if inventory is not None:
        record["inventory"] = inventory
    warnings: list[str] = []
    cl = Clusters(clusters, limits, inventory)
    runner_log = work / "runner.log"
    try:
        gone = hooks.testbed_failed(inventory)  # an aws fleet torn down after its bring-up failed: nothing to reach
        if gone:
            raise CellFailure("testbed", gone, "set-up")
        host_view = hooks.host_pids(inventory)  # what of the hosts' CPU this machine can see
        wl_src = yaml.safe_load((plan.OMB_DIR / f"{run.base_workload}.yaml").read_text())
        wl, changes = scale.scale_workload(wl_src, doc["scales"][scale_name], run.rate)
        record["scaling"] = changes
        planned, deadline = guard.plan_seconds(wl), guard.deadline_seconds(wl, limits)
        record.update(plannedSeconds=round(planned, 1), deadlineSeconds=deadline)
        wl_file = work / f"{run.workload_id}.yaml"
        scale.write_atomic(wl_file, yaml.safe_dump(wl, sort_keys=False))
        drv_file = work / "driver.yaml"
        shutil.copyfile(driver, drv_file)  # the generated file (workloads/drivers/), kept in step by a test
        need = guard.disk_need_bytes(wl, replicas_of(drv_file), limits)
        record["diskNeedBytes"] = int(need)
        rundir = cl.ensure(run, log, need)
        tmp_out = work / "result.json"
        # a fan-out run whose consumers need more than one runner's open files or heap (workloads/fanout.py)
        procs = fanout.processes(run.system, wl, doc["scales"][scale_name])
        if procs > 1:
            record["runnerProcesses"] = procs
        cmd = hooks.runner_cmd(str(RUNNER), inventory=inventory, processes=procs) + [
               "--workload", str(wl_file), "--driver", str(drv_file),
               "--cluster", str(rundir / "cluster.json"), "--output", str(tmp_out), "--log", str(runner_log),
               "--deadline-seconds", str(deadline)]
        rc, sampler, stopped, elapsed = run_runner(cmd, log, runner_log, deadline, rundir, clusters, limits, host_view,
                                                   inventory)
        record["runnerSeconds"] = round(elapsed, 1)
        record["diskPeakUsedBytes"] = sampler.peak_used
        if stopped == "disk":
            raise CellFailure("disk", sampler.disk_full or "the data file system filled up", runner_phase(runner_log))
        if stopped == "timeout" or rc == 3:
            raise CellFailure("timeout", f"the runner passed its deadline of {deadline} s (planned {planned:.0f} s)",
                              runner_phase(runner_log, log))
        if rc != 0 or not tmp_out.is_file():
            why = first_error(runner_log) or first_error(log)
            raise CellFailure("error", f"runner exited {rc}: {why}", runner_phase(runner_log))
        if elapsed > limits["late_factor"] * planned + 30:
            warnings.append(f"the runner took {elapsed:.0f} s, far longer than the {planned:.0f} s planned")
        res = json.loads(tmp_out.read_text())
        x = res.setdefault("x-streambench", {})
        t0 = _epoch(x.get("measurementStartTime"))
        t1 = _epoch(x.get("measurementEndTime"))
        # hosts elsewhere were sampled on themselves (the busiest host's numbers, each host's under `hosts`)
        host = sampler.summary(t0, t1)
        gc_logs = {n: f for d in hooks.node_dirs(rundir, inventory) for n, f in guard.node_gc_logs(d).items()}
        gc = guard.gc_pauses(gc_logs, t0, t1) if t0 and t1 else {}
        val = guard.validity(host, res, limits)
        x["testbedHost"] = {"measuredPhase": host, "brokerMaxGcPauseMs": gc,
                            "maxGcPauseMs": max(gc.values()) if gc else None, "validity": val}
        extra = jvm_extra_opts()
        if extra:  # env/test's STREAMBENCH_JVM_EXTRA_OPTS: the runner's and the cluster's JVMs had them
            x["jvmExtraOpts"] = extra
            record["jvmExtraOpts"] = extra
        audit = x.get("audit", {})
        record["audit"] = {k: audit.get(k) for k in ("sent", "acked", "sendErrors", "lost", "duplicated", "outOfOrder")}
        record["validity"] = val
        record["host"] = host
        record["maxGcPauseMs"] = x["testbedHost"]["maxGcPauseMs"]
        record["runnerWarnings"] = x.get("warnings", [])
        scale.write_atomic(tmp_out, json.dumps(res, indent=2) + "\n")
        result.parent.mkdir(parents=True, exist_ok=True)
        hooks.keep_parts(tmp_out, result)  # a multi-host run's per-client parts, beside the merged result
        os.replace(tmp_out, result)  # same file system: data/raw and data/runs both live under data/
        record.update(status="ok", result=str(result))
    except Exception as exc:  # a failed run is recorded and the workflow goes on
        reason = exc.reason if isinstance(exc, CellFailure) else "error"
        record.update(status="failed", reason=reason, phase=getattr(exc, "phase", None), error=str(exc),
                      logTail=tail(runner_log) or tail(log))
        # a cell that failed may have left the cluster in any state: replace it (its data kept for debugging)
        try:
            cl.down(log, failed=True)
        except Exception as exc2:
            record["cleanupError"] = str(exc2)
    record["warnings"] = warnings
    record["endedAt"] = now()
    scale.write_atomic(status, json.dumps(record, indent=2) + "\n")
    return record


def _epoch(iso: str | None) -> float | None:
    if not iso:
        return None
    try:
        return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def forget_failed(status_root: Path) -> int:
    """Delete the failed run records under status_root, and with them the summaries built from them
    (`<testbed>/benchmarks.json`, `<testbed>/experiments/*.json`): Snakemake reruns a missing run record only for a
    target that needs it, and an existing summary newer than its records needs nothing, so without this `all`
    planned no retry (only the record's own path did)."""
    n = 0
    for p in status_root.rglob("*.json"):
        try:
            if json.loads(p.read_text()).get("status") == "failed":
                p.unlink()
                n += 1
        except (OSError, ValueError):
            continue
    if n:
        runs_dir = status_root.parent
        for summary_file in [runs_dir / "benchmarks.json", *sorted((runs_dir / "experiments").glob("*.json"))]:
            summary_file.unlink(missing_ok=True)
    return n


def terminate_on_signals() -> None:
    """SIGTERM and SIGHUP (a killed workflow, a closed terminal, Snakemake stopping its jobs) end this process the way
    Ctrl-C does: as a KeyboardInterrupt, so run_runner stops the runner's process group (on an inventory's hosts, the
    runners there with it) instead of leaving it running."""
    def _raise(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workloads.run", description=__doc__.splitlines()[0])
    ap.add_argument("--clusters", help="directory holding the running cluster (data/runs/<testbed>/clusters); every use "
                                       "but --forget-failed needs it")
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
    ap.add_argument("--limits", default="{}", help="JSON of config workloads.limits (defaults: workloads/guard.py)")
    ap.add_argument("--inventory", help="the testbed's inventory: clusters on its server hosts, runners on its client "
                    "hosts (testbeds/hooks.py); without it everything runs on this machine")
    a = ap.parse_args(argv)
    inventory = None
    if a.inventory:
        if not Path(a.inventory).is_file():
            ap.error(f"--inventory: {a.inventory}: no such file")
        inventory = str(Path(a.inventory).resolve())
    try:
        limits = json.loads(a.limits)
    except ValueError as exc:
        ap.error(f"--limits: not JSON: {exc}")
    if a.forget_failed:
        print(f"forgot {forget_failed(Path(a.forget_failed))} failed run(s)")
        return 0
    if a.clusters is None:
        ap.error("the following arguments are required: --clusters")
    clusters = Path(a.clusters)
    if a.down_all:
        clusters.mkdir(parents=True, exist_ok=True)
        Clusters(clusters, limits).down(clusters / "down.log")  # through the inventory the cluster recorded
        return 0
    missing = [k for k in ("testbed", "scale", "system", "level", "tuning", "workload", "rep", "driver", "result", "status", "log")
               if getattr(a, k) is None]
    if missing:
        ap.error("missing " + ", ".join("--" + m for m in missing))
    terminate_on_signals()
    exps = tuple(e for e in a.in_experiments.split(",") if e)
    run = plan.Run(a.system, a.level, a.tuning, a.variant or None, a.workload, a.rate, a.rep, exps, a.default_tuning)
    rec = execute(run, a.testbed, a.scale, Path(a.result), Path(a.status), clusters, Path(a.log), Path(a.driver),
                  Path(a.experiments), limits, inventory)
    print(f"{rec['run']}: {rec['status']}" + (f" ({rec.get('error', '').splitlines()[0]})" if rec["status"] != "ok" else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
