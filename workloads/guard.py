"""What keeps one benchmark cell honest and bounded: its planned length and deadline, the disk it may use, and
the state of the host while it ran.

- `plan_seconds` / `deadline_seconds`: from the scaled workload, how long the runner should take (nominal) and
  the wall-clock bound past which `workloads.run` kills it and records the cell as failed (reason `timeout`).
- `disk_need_bytes`: what a cell can write to the cluster's data file system (rate x time x size x replicas) and
  `check_disk` the refusal, before a cluster starts, when the file system cannot take it below the brokers'
  thresholds.
- `HostSampler`: a thread that samples /proc once a second while the runner runs: CPU use of the whole host,
  of the cluster's processes, of the runner and of the kernel (threads, irq, softirq), steal, load average, and the data file system's use (it calls
  back when that crosses the stop threshold, so the run is stopped before the bookies turn read-only).
- `gc_pauses`: the longest JVM pause of each node in a time window, from the nodes' GC logs.
- `validity`: the run's verdict: `suspect` with reasons when the host was busy with other work, stolen from,
  or the runner fell behind its own schedule, or a max-rate run's measured phase did not hold its rate.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import threading
import time
from pathlib import Path

# BookKeeper turns a bookie read-only when its disk is fuller than diskUsageThreshold (0.95 by default); Kafka
# has no threshold and fails its log directory when a write fails.
BOOKIE_READONLY_FRACTION = 0.95

LIMIT_DEFAULTS = {
    "deadline_factor": 2.0,
    "deadline_margin_seconds": 120,
    "late_factor": 1.5,
    "systems_timeout_seconds": 900,
    "keep_data": "last-failed",
    "disk_stop_used_fraction": 0.90,
    "disk_min_free_gb": 2.0,
    "assumed_max_mbps": 120,
    "suspect_foreign_cpu_cores": 0.5,
    "suspect_steal_percent": 5.0,
    "suspect_publish_delay_p99_ms": 1000,
}


def limits_with_defaults(limits: dict | None) -> dict:
    out = dict(LIMIT_DEFAULTS)
    out.update(limits or {})
    return out


def _ext(wl: dict) -> dict:
    return wl.get("x-streambench") or {}


def _warmup_s(wl: dict) -> float:
    e = _ext(wl)
    return float(e["warmupDurationSeconds"]) if "warmupDurationSeconds" in e else 60.0 * wl.get("warmupDurationMinutes", 1)


def _test_s(wl: dict) -> float:
    e = _ext(wl)
    return float(e["testDurationSeconds"]) if "testDurationSeconds" in e else 60.0 * wl.get("testDurationMinutes", 0)


def limits_arg(config: dict) -> str:
    """The --limits JSON of a cell (workloads/run.py, workloads/faultrun.py) from a checked config: its
    workloads.limits and the systems' disk-space settings the disk estimate needs (`_storage`)."""
    return json.dumps({**config["workloads"]["limits"],
                       "_storage": {"kafka": config["systems"]["kafka"]["storage"],
                                    "pulsar": config["systems"]["pulsar"]["bookie_storage"],
                                    "pravega": config["systems"]["pravega"]["bookie_storage"]}}, sort_keys=True)


def _discovery(wl: dict) -> dict:
    rd = _ext(wl).get("rateDiscovery") or {}
    return {"stepSeconds": rd.get("stepSeconds", 5), "maxSteps": rd.get("maxSteps", 24), "retries": rd.get("retries", 1),
            "remeasures": rd.get("remeasures", 2), "initialRate": rd.get("initialRate", 1000),
            "maxRateMBps": rd.get("maxRateMBps"), "mode": rd.get("mode", "ladder"),
            "saturateSeconds": rd.get("saturateSeconds", 10)}


def _discovery_seconds(d: dict) -> float:
    """The nominal length of a max-rate run's discovery: the saturation phase, or every step of the ladder."""
    return d["saturateSeconds"] if d["mode"] == "saturate" else d["stepSeconds"] * d["maxSteps"]


def _backlog_bytes(wl: dict) -> float:
    e = _ext(wl)
    if e.get("consumerBacklogSizeBytes"):
        return float(e["consumerBacklogSizeBytes"])
    return float(wl.get("consumerBacklogSizeGB", 0)) * (1 << 30)


def plan_seconds(wl: dict) -> float:
    """Nominal wall time of one runner invocation on a healthy cluster: set-up (topics, consumers), warm-up, every
    discovery step without retries, backlog build and drain, the measured phase, drain wait and clean-up."""
    rate = wl.get("producerRate", 0)
    s = 20.0 + 0.05 * wl.get("topics", 1) * wl.get("partitionsPerTopic", 1)
    s += _warmup_s(wl) + _test_s(wl)
    if rate == 0:
        s += _discovery_seconds(_discovery(wl))
    bb = _backlog_bytes(wl)
    if bb > 0 and rate > 0:
        s += 2 * bb / (rate * wl.get("messageSize", 1024))  # build at the producer rate, drain at least as fast
    return s + 15.0


def deadline_seconds(wl: dict, limits: dict) -> int:
    """The wall-clock bound of one runner invocation: factor x plan + margin, and every discovery retry, the
    longest recovery after discovery and every measured phase the runner may run again lower on top."""
    s = limits["deadline_factor"] * plan_seconds(wl) + limits["deadline_margin_seconds"]
    if wl.get("producerRate", 0) == 0:
        d = _discovery(wl)
        if d["mode"] != "saturate":  # a saturation phase has no retries
            s += d["stepSeconds"] * d["maxSteps"] * d["retries"]
        recovery = max(10, 2 * d["stepSeconds"])  # the runner's longest recovery before a measured phase
        s += recovery + d["remeasures"] * (recovery + _test_s(wl))  # measured phases run again lower
    fan = _ext(wl).get("fanOut")
    if isinstance(fan, dict):  # study 003: connecting may take the whole connect deadline, closing about as long
        s += 2 * fan.get("connectDeadlineSeconds", 600)
    return int(round(s))


def disk_need_bytes(wl: dict, replicas: int, limits: dict) -> float:
    """Upper estimate of what one cell writes to the data file system: the producers' bytes over warm-up,
    discovery and the measured phase (at the workload's rate, or for a max-rate search at assumed_max_mbps or the
    search's ceiling, maxRateMBps, whichever is lower), times the replicas, plus the backlog it builds."""
    rate = wl.get("producerRate", 0)
    size = wl.get("messageSize", 1024)
    secs = _warmup_s(wl) + _test_s(wl)
    if rate == 0:
        d = _discovery(wl)
        secs += _discovery_seconds(d)
        bps = min(limits["assumed_max_mbps"], d["maxRateMBps"] or float("inf")) * 1e6
    else:
        bps = rate * size
    return bps * secs * replicas + _backlog_bytes(wl) * replicas


def fixed_need_bytes(system: str, storage: dict) -> float:
    """What a cluster holds on disk before any message: the bookie journals of Pulsar and Pravega (each of the 3 bookies
    keeps its current journal and journalMaxBackups old ones, journalMaxSizeMB each) and one open entry log per bookie;
    512 MB for a Kafka cluster."""
    if system not in ("pulsar", "pravega"):
        return 512e6
    j = storage.get("journalMaxSizeMB", 2048) * 1e6 * (1 + storage.get("journalMaxBackups", 5))
    return 3 * (j + storage.get("logSizeLimit", 1 << 30)) + 256e6


class DiskShort(RuntimeError):
    pass


def check_disk(path: Path, need: float, limits: dict, what: str) -> dict:
    """Refuse (DiskShort, one line with both numbers) when path's file system cannot take `need` bytes and still
    stay below the stop threshold (itself below BookKeeper's read-only threshold) with disk_min_free_gb free."""
    du = shutil.disk_usage(path)
    return check_space(str(path), du.total, du.used, du.free, need, limits, what)


def check_space(where: str, total: float, used: float, free: float, need: float, limits: dict, what: str) -> dict:
    """check_disk's rule for a file system known by its numbers (bytes): a local path, or a server host's data
    directory read with df over ssh (`where` names it: host:path)."""
    stop = min(limits["disk_stop_used_fraction"], BOOKIE_READONLY_FRACTION)
    usable = min(stop * total - used, free - limits["disk_min_free_gb"] * 1e9)
    info = {"path": where, "totalBytes": int(total), "freeBytes": int(free), "needBytes": int(need),
            "usableBytes": int(usable)}
    if need > usable:
        raise DiskShort(f"disk: {what} needs about {need / 1e9:.1f} GB on {where}, but only {max(0, usable) / 1e9:.1f} GB "
                        f"can be used there ({free / 1e9:.1f} GB free of {total / 1e9:.1f} GB; runs stop at "
                        f"{stop:.0%} full, BookKeeper turns read-only at {BOOKIE_READONLY_FRACTION:.0%})")
    return info


# ------------------------------------------------------------------------------------------------------------
def read_stat() -> tuple[int, int, int]:
    """(total, idle+iowait, steal) jiffies of the whole host."""
    total, idle, steal, _ = read_stat_irq()
    return total, idle, steal


def read_stat_irq() -> tuple[int, int, int, int]:
    """(total, idle+iowait, steal, irq+softirq) jiffies of the whole host."""
    with open("/proc/stat") as fh:
        parts = fh.readline().split()[1:]
    v = [int(x) for x in parts]
    total = sum(v[:8])  # user nice system idle iowait irq softirq steal (guest is inside user)
    return total, v[3] + v[4], v[7] if len(v) > 7 else 0, v[5] + v[6]


PF_KTHREAD = 0x00200000  # task flag of a kernel thread (include/linux/sched.h)


def _all_stats():
    """(pid, the fields of /proc/PID/stat after the command name) of every process now."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            s = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        yield int(d), s[s.rindex(")") + 2:].split()


def _proc_name(pid: int) -> str:
    """A process's command line, shortened (the interpreter's own path dropped for python and java), or its name."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        argv = [a.decode(errors="replace") for a in argv if a]
    except OSError:
        argv = []
    if not argv:
        try:
            st = Path(f"/proc/{pid}/stat").read_text()
            return st[st.index("(") + 1:st.rindex(")")]
        except OSError:
            return "?"
    prog = os.path.basename(argv[0])
    rest = argv[1:]
    if prog.startswith("python") and rest[:1] == ["-m"]:
        rest = rest[1:2]
    elif prog.startswith("python") and rest:
        rest = [os.path.basename(rest[0])] if not rest[0].startswith("-") else rest[:1]
    elif prog == "java":
        main = next((a for a in rest if not a.startswith("-") and "/" not in a and "." in a), None)
        rest = [main] if main else []
    else:
        rest = rest[:2]
    return " ".join([prog, *rest])[:80]


def _group_pids(pgids: set[int]) -> list[int]:
    return [pid for pid, rest in _all_stats() if int(rest[2]) in pgids]


def group_pids(pgids: set[int]):
    """A function listing the current members of the process groups pgids (for HostSampler)."""
    pgids = set(pgids)
    return (lambda: _group_pids(pgids)) if pgids else None


class HostSampler(threading.Thread):
    """Samples the host once per `interval` s until stop(): CPU jiffies (all, idle, steal), the CPU jiffies of the
    cluster's and of the runner's process groups, the 1-min load average, and the data file system's use.
    `on_disk_full` is called once when the file system's use passes the stop fraction."""

    def __init__(self, cluster_pids, runner_pids, data_path: Path, limits: dict, on_disk_full=None,
                 interval: float = 1.0):
        """cluster_pids, runner_pids: functions listing the pids of the cluster's and of the runner's processes
        now (group_pids for process groups of this machine; testbeds/hooks.py's for a lab's hosts), or None."""
        super().__init__(name="host-sampler", daemon=True)
        self.cluster_pids, self.runner_pids = cluster_pids, runner_pids
        self.data_path, self.limits, self.on_disk_full, self.interval = data_path, limits, on_disk_full, interval
        self.samples: list[dict] = []
        self.names: dict[int, str] = {}
        self._last_other: dict[int, int] = {}
        self.disk_full: str | None = None
        self.peak_used = 0
        self._halt = threading.Event()

    def sample(self) -> dict:
        total, idle, steal, irq = read_stat_irq()
        cpids = set(self.cluster_pids()) if self.cluster_pids else set()
        rpids = set(self.runner_pids()) if self.runner_pids else set()
        cl = rn = kt = 0
        now: dict[int, int] = {}
        for pid, rest in _all_stats():  # one pass over /proc: the kernel threads, the cluster, the runner, the rest
            j = int(rest[11]) + int(rest[12])  # utime + stime
            if int(rest[6]) & PF_KTHREAD:
                kt += j
            elif pid in cpids:
                cl += j
            elif pid in rpids:
                rn += j
            else:
                now[pid] = j
        other = self._other_delta(now)
        with open("/proc/loadavg") as fh:
            load1 = float(fh.read().split()[0])
        du = shutil.disk_usage(self.data_path)
        self.peak_used = max(self.peak_used, du.used)
        return {"t": time.time(), "total": total, "idle": idle, "steal": steal, "irq": irq, "kthreads": kt,
                "cluster": cl, "runner": rn, "other": other,
                "load1": load1, "used": du.used, "diskTotal": du.total, "free": du.free}

    def _other_delta(self, now: dict[int, int]) -> dict[int, int]:
        """The CPU jiffies each other process (neither the cluster's nor the runner's, not a kernel thread) used since
        the last sample, only those that used any; their names are kept once (what a suspect run names)."""
        last, self._last_other = self._last_other, now
        out: dict[int, int] = {}
        if not last:  # the first sample: nothing to compare with
            return out
        for pid, j in now.items():
            d = j - last.get(pid, 0)  # a process new since the last sample: all it used
            if d > 0:
                out[pid] = d
                if pid not in self.names:
                    self.names[pid] = _proc_name(pid)
        return out

    def run(self) -> None:
        stop_frac = min(self.limits["disk_stop_used_fraction"], BOOKIE_READONLY_FRACTION)
        while not self._halt.is_set():
            try:
                s = self.sample()
            except (OSError, ValueError):
                s = None
            if s is not None:
                self.samples.append(s)
                full = s["used"] / s["diskTotal"] > stop_frac or s["free"] < self.limits["disk_min_free_gb"] * 1e9
                if full and self.disk_full is None:
                    self.disk_full = (f"the data file system {self.data_path} reached {s['used'] / s['diskTotal']:.1%} "
                                      f"used ({s['free'] / 1e9:.1f} GB free); the run was stopped before the brokers "
                                      f"turn read-only ({BOOKIE_READONLY_FRACTION:.0%})")
                    if self.on_disk_full:
                        self.on_disk_full(self.disk_full)
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join(5)

    def summary(self, t0: float | None = None, t1: float | None = None) -> dict | None:
        """CPU and load over [t0, t1] (epoch s; the whole sampling when None): the host's CPU use in cores and %,
        steal %, the cores used by the cluster, by the runner, by the kernel (its threads plus interrupt and softirq
        time: the I/O and loopback traffic of the cluster and the runner), and by everything else (foreign: user
        processes that are neither), mean and max load."""
        ss = [s for s in self.samples if (t0 is None or s["t"] >= t0 - 1) and (t1 is None or s["t"] <= t1 + 1)]
        if len(ss) < 2:
            return None
        a, b = ss[0], ss[-1]
        hz = a.get("hz") or os.sysconf("SC_CLK_TCK")  # a remote host's samples carry its own (testbeds/hostsample.py)
        secs = b["t"] - a["t"]
        dtot = max(1, b["total"] - a["total"])
        cores = a.get("cores") or os.cpu_count() or 1
        busy = 1 - (b["idle"] - a["idle"]) / dtot

        def used(key):  # a process group's jiffies only grow; a member that exits drops out of the sum, so add rises only
            return sum(max(0, y[key] - x[key]) for x, y in zip(ss, ss[1:]))
        cluster = used("cluster") / hz / secs
        runner = used("runner") / hz / secs
        # kernel threads come and go (kworkers); irq+softirq is host-wide. Sampler rows taken before this field
        # existed have neither.
        kernel = (used("kthreads") + used("irq")) / hz / secs if "kthreads" in a else 0.0
        busy_cores = busy * cores
        loads = [s["load1"] for s in ss]
        per: dict[int, int] = {}
        for s_ in ss[1:]:  # each row holds what the other processes used since the row before it
            for pid, d in (s_.get("other") or {}).items():
                per[pid] = per.get(pid, 0) + d
        top = sorted(per.items(), key=lambda kv: -kv[1])[:3]
        named = [{"pid": int(pid), "name": self.names.get(pid, "?"), "cores": round(d / hz / secs, 2)}
                 for pid, d in top if d / hz / secs >= 0.01]
        return {"cores": cores, "seconds": round(secs, 1), "cpuUtilisationPercent": round(100 * busy, 1),
                "stealPercent": round(100 * (b["steal"] - a["steal"]) / dtot, 2),
                "clusterCores": round(cluster, 2), "runnerCores": round(runner, 2),
                "kernelCores": round(kernel, 2),
                "foreignCores": round(max(0.0, busy_cores - cluster - runner - kernel), 2),
                "foreignProcesses": named,
                "loadAverageMean": round(sum(loads) / len(loads), 2), "loadAverageMax": round(max(loads), 2)}


# ------------------------------------------------------------------------------------------------------------
_GC_LINE = re.compile(r"^\[(?P<ts>[0-9T:.+\-]+)\].*?\bPause\b.*?(?P<ms>[0-9]+(?:\.[0-9]+)?)ms\s*$")


def _parse_ts(s: str) -> float | None:
    # 2026-11-23T22:30:01.123+0000 (JDK unified logging 'time' decoration)
    try:
        if re.search(r"[+-]\d{4}$", s):
            s = s[:-2] + ":" + s[-2:]
        return dt.datetime.fromisoformat(s).timestamp()
    except ValueError:
        return None


def gc_pauses(gc_logs: dict[str, list[Path]], t0: float, t1: float) -> dict[str, float]:
    """Longest stop-the-world pause (ms) per node whose GC log lines fall in [t0, t1] (epoch s)."""
    out: dict[str, float] = {}
    for node, files in gc_logs.items():
        worst = 0.0
        for f in files:
            try:
                text = f.read_text(errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                m = _GC_LINE.match(line)
                if not m:
                    continue
                ts = _parse_ts(m.group("ts"))
                if ts is not None and t0 <= ts <= t1:
                    worst = max(worst, float(m.group("ms")))
        out[node] = round(worst, 3)
    return out


def node_gc_logs(rundir: Path) -> dict[str, list[Path]]:
    nodes = rundir / "nodes"
    out = {}
    if nodes.is_dir():
        for nd in sorted(p for p in nodes.iterdir() if p.is_dir()):
            files = sorted((nd / "logs").glob("gc.log*"))
            if files:
                out[nd.name] = files
    return out


def validity(host: dict | None, result: dict, limits: dict) -> dict:
    """`ok` or `suspect` with reasons: the host did other work (foreign CPU), the hypervisor stole CPU, or the
    runner fell behind its own schedule (the measured phase missed its rate while the producers lagged)."""
    reasons = []
    if host:
        on = f" ({host['foreignHost']})" if host.get("foreignHost") else ""
        if host["foreignCores"] > limits["suspect_foreign_cpu_cores"]:
            top = "; ".join(f"{p['name']} (pid {p['pid']}) {p['cores']}" for p in host.get("foreignProcesses") or [])
            reasons.append(f"the host{on} ran other work: {host['foreignCores']} cores beside the cluster and the runner "
                           f"(bound {limits['suspect_foreign_cpu_cores']})" + (f"; the busiest: {top}" if top else ""))
        if host["stealPercent"] > limits["suspect_steal_percent"]:
            where = f" on {host['stealHost']}" if host.get("stealHost") else ""
            reasons.append(f"CPU steal {host['stealPercent']} %{where} (bound {limits['suspect_steal_percent']} %)")
    x = result.get("x-streambench") or {}
    mp = x.get("measuredPhase") or {}
    pd = mp["publishDelayP99Micros"] / 1000.0 if mp.get("publishDelayP99Micros") is not None else None
    behind = []
    if mp.get("rateMet") is False:
        behind.append(f"achieved {mp.get('achievedRate', 0):.0f} of {mp.get('targetRate', 0):.0f} msg/s")
    if pd is not None and pd > limits["suspect_publish_delay_p99_ms"]:
        behind.append(f"publish delay p99 {pd:.0f} ms (bound {limits['suspect_publish_delay_p99_ms']} ms)")
    if behind:
        reasons.append("the runner fell behind its schedule in the measured phase: " + "; ".join(behind))
    if mp.get("sustained") is False and (x.get("producerRate") or {}).get("target") is None:
        # a max-rate run whose last measured phase did not hold its rate (the runner's re-measurements spent):
        # its rate is not one the system sustains
        reasons.append("the measured phase did not sustain the discovered rate: " + "; ".join(mp.get("reasons") or []))
    return {"status": "suspect" if reasons else "ok", "reasons": reasons}
