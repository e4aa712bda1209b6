"""Host sampling on an inventory's hosts: CPU, steal, the kernel's share, the cluster's and the runner's CPU, and the
data directories' disk use, sampled on every host once a second while the runner runs, as workloads/guard.py's
HostSampler does on this machine.

One ssh connection per host runs a small standard-library Python sampler (SAMPLER below; python3 is on every host
the prepare role accepts). It prints one JSON line per second and ends when its standard input closes (the
controller stops it, or the connection drops). On a server host "the cluster" is every process group recorded under
<workDir>/runs/*/pids/ (the nodes sbnode.py started), on a client host "the runner" those under
<workDir>/bench/*/pids/; everything else on a host that is neither the kernel nor those is other work.

`RemoteSampler` has the interface workloads/run.py uses of a HostSampler (start, stop, summary, peak_used,
disk_full); its summary is the worst host's numbers (so guard.validity judges the run by its busiest host) with
every host's own summary under `hosts`.
"""
from __future__ import annotations

import json
import posixpath
import subprocess
import threading
from typing import Any

from . import remote
from .inventory import Host, Inventory

SAMPLER = r"""
import glob, json, os, shutil, sys, threading, time
runs, bench, dirs, interval = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), float(sys.argv[4])
stop = threading.Event()
def eof():
    sys.stdin.read()
    stop.set()
threading.Thread(target=eof, daemon=True).start()
def pgids(pattern):
    out = set()
    for f in glob.glob(pattern):
        try:
            with open(f) as fh:
                out.add(int(json.load(fh)["pgid"]))
        except (OSError, ValueError, KeyError):
            pass
    return out
last, named = {}, set()
while not stop.is_set():
    with open("/proc/stat") as fh:
        v = [int(x) for x in fh.readline().split()[1:]]
    cl, rn = pgids(runs), pgids(bench)
    c = r = k = 0
    cur = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as fh:
                s = fh.read()
        except OSError:
            continue
        rest = s[s.rindex(")") + 2:].split()
        t = int(rest[11]) + int(rest[12])
        if int(rest[6]) & 0x00200000:
            k += t
        elif int(rest[2]) in cl:
            c += t
        elif int(rest[2]) in rn:
            r += t
        else:
            cur[d] = (t, s[s.index("(") + 1:s.rindex(")")])
    other, names = {}, {}
    for p, (t, comm) in cur.items():  # what each other process used since the last line (none on the first)
        if last and t > last.get(p, 0):
            other[p] = t - last.get(p, 0)
            if p not in named:
                named.add(p)
                names[p] = comm
    last = {p: tc[0] for p, tc in cur.items()}
    disks = []
    for d in dirs:
        try:
            u = shutil.disk_usage(d)
            disks.append([d, u.total, u.used, u.free])
        except OSError:
            pass
    with open("/proc/loadavg") as fh:
        load1 = float(fh.read().split()[0])
    print(json.dumps({"t": time.time(), "total": sum(v[:8]), "idle": v[3] + v[4], "steal": v[7] if len(v) > 7 else 0,
                      "irq": v[5] + v[6], "kthreads": k, "cluster": c, "runner": r, "other": other,
                      "names": names, "load1": load1,
                      "cores": os.cpu_count(), "hz": os.sysconf("SC_CLK_TCK"), "disks": disks}), flush=True)
    stop.wait(interval)
"""


def sampler_command(h: Host, interval: float = 1.0) -> str:
    import shlex
    dirs = sorted(set(h.data_dirs.values())) if "server" in h.roles else []
    return " ".join(shlex.quote(a) for a in (
        "python3", "-u", "-c", SAMPLER, posixpath.join(h.work_dir, "runs", "*", "pids", "*.json"),
        posixpath.join(h.work_dir, "bench", "*", "pids", "*.json"), json.dumps(dirs), str(interval)))


class RemoteSampler:
    """Every host of the inventory sampled over ssh while the runner runs (see the module's docstring)."""

    def __init__(self, inv: Inventory, limits: dict, on_disk_full=None, interval: float = 1.0):
        from workloads import guard
        self.inv, self.limits, self.on_disk_full, self.interval = inv, limits, on_disk_full, interval
        self.stop_frac = min(limits["disk_stop_used_fraction"], guard.BOOKIE_READONLY_FRACTION)
        self.samples: dict[str, list[dict]] = {h.name: [] for h in inv.hosts}
        self.errors: dict[str, str] = {}
        self.procs: dict[str, subprocess.Popen] = {}
        self.threads: list[threading.Thread] = []
        self.disk_full: str | None = None
        self.peak_used = 0

    def start(self) -> None:
        for h in self.inv.hosts:
            p = subprocess.Popen(remote.ssh_cmd(h, sampler_command(h, self.interval)), stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.procs[h.name] = p
            t = threading.Thread(target=self._read, args=(h, p), name=f"sampler-{h.name}", daemon=True)
            t.start()
            self.threads.append(t)

    def _read(self, h: Host, p: subprocess.Popen) -> None:
        for line in p.stdout:
            try:
                s = json.loads(line)
            except ValueError:
                continue
            self.samples[h.name].append(s)
            for d, total, used, free in s.get("disks", []):
                self.peak_used = max(self.peak_used, used)
                full = used / total > self.stop_frac or free < self.limits["disk_min_free_gb"] * 1e9
                if full and self.disk_full is None:
                    from workloads import guard
                    self.disk_full = (f"the data file system of {h.name}:{d} reached {used / total:.1%} used "
                                      f"({free / 1e9:.1f} GB free); the run was stopped before the brokers turn "
                                      f"read-only ({guard.BOOKIE_READONLY_FRACTION:.0%})")
                    if self.on_disk_full:
                        self.on_disk_full(self.disk_full)
        err = (p.stderr.read() or "").strip().splitlines()
        if err and p.poll() not in (0, None, -15):
            self.errors[h.name] = err[-1]

    def stop(self) -> None:
        for p in self.procs.values():
            try:
                p.stdin.close()
            except OSError:
                pass
        for p in self.procs.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.terminate()
                p.wait(10)
        for t in self.threads:
            t.join(5)

    def host_summary(self, name: str, t0: float | None = None, t1: float | None = None) -> dict | None:
        from workloads import guard
        s = guard.HostSampler(None, None, ".", self.limits)
        s.samples = self.samples.get(name, [])
        s.names = {p: n for row in s.samples for p, n in (row.get("names") or {}).items()}  # a host's kernel names
        return s.summary(t0, t1)

    def summary(self, t0: float | None = None, t1: float | None = None) -> dict[str, Any] | None:
        """The busiest host's numbers (most foreign cores; steal the highest of any host), each host's under
        `hosts`; None when no host gave two samples in the window."""
        hosts = {h.name: self.host_summary(h.name, t0, t1) for h in self.inv.hosts}
        got = {k: v for k, v in hosts.items() if v}
        if not got:
            return None
        worst = max(got, key=lambda k: got[k]["foreignCores"])
        steal = max(got, key=lambda k: got[k]["stealPercent"])
        out = dict(got[worst])
        out.update(stealPercent=got[steal]["stealPercent"], foreignHost=worst, stealHost=steal,
                   clusterCores=round(sum(got[k]["clusterCores"] for k in got), 2),
                   runnerCores=round(sum(got[k]["runnerCores"] for k in got), 2), hosts=hosts,
                   unsampled=sorted(set(hosts) - set(got)), samplerErrors=self.errors)
        return out
