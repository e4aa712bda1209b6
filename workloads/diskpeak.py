"""Run a command and report the peak disk use of a file system while it ran.

  python -m workloads.diskpeak [--path data] [--interval 1] [--du-every 10] -- CMD ARGS...

Samples the used bytes of the file system holding --path (statvfs) every --interval seconds and, every
--du-every seconds, the bytes under --path itself (what this project wrote, whatever else the machine does).
Prints, when CMD ends: the file system's use before, at its peak and after, the peak above the start, and the
peak of the bytes under --path, and which cluster directory (one holding a cluster.json) held the most of them at
that peak, so the run that sets a profile's disk peak can be named; exits with CMD's status. Ctrl-C reaches CMD
(its process group) first.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path


def tree_bytes(path: Path) -> tuple[int, dict[str, int]]:
    """The bytes under path, and the bytes under each cluster directory in it (a directory with a cluster.json;
    the first such directory on the way down owns everything below it)."""
    total = 0
    owner: dict[str, str | None] = {}
    clusters: dict[str, int] = {}
    for root, dirs, files in os.walk(path, onerror=lambda e: None):
        own = owner.pop(root, None)
        if own is None and "cluster.json" in files:
            own = root
        for d in dirs:
            owner[os.path.join(root, d)] = own
        for f in files:
            try:
                st = os.lstat(os.path.join(root, f))
            except OSError:
                continue
            total += st.st_blocks * 512
            if own is not None:
                clusters[own] = clusters.get(own, 0) + st.st_blocks * 512
    return total, clusters


def largest(clusters: dict[str, int]) -> str:
    if not clusters:
        return ""
    d, n = max(clusters.items(), key=lambda kv: kv[1])
    return f", of which {n / 1e9:.2f} GB in cluster directory {d}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workloads.diskpeak", description=__doc__.splitlines()[0])
    ap.add_argument("--path", type=Path, default=Path("data"))
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--du-every", type=float, default=10.0)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no command given (python -m workloads.diskpeak -- CMD ...)")
    a.path.mkdir(parents=True, exist_ok=True)
    start = shutil.disk_usage(a.path).used
    tb0, cl0 = tree_bytes(a.path)
    peak = {"fs": start, "fs_at": 0.0, "tree": tb0, "tree_at": 0.0, "clusters": cl0}
    stop = threading.Event()
    t0 = time.monotonic()

    def sample():
        last_du = time.monotonic()
        while not stop.is_set():
            used = shutil.disk_usage(a.path).used
            if used > peak["fs"]:
                peak["fs"], peak["fs_at"] = used, time.monotonic() - t0
            if time.monotonic() - last_du >= a.du_every:
                last_du = time.monotonic()
                tb, cl = tree_bytes(a.path)
                if tb > peak["tree"]:
                    peak["tree"], peak["tree_at"], peak["clusters"] = tb, time.monotonic() - t0, cl
            stop.wait(a.interval)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    p = subprocess.Popen(cmd, start_new_session=True)
    try:
        rc = p.wait()
    except KeyboardInterrupt:
        os.killpg(p.pid, signal.SIGINT)
        rc = p.wait()
    stop.set()
    th.join(5)
    end = shutil.disk_usage(a.path).used
    g = 1e9
    print(f"diskpeak: {' '.join(cmd)}: {time.monotonic() - t0:.0f} s; file system of {a.path}: "
          f"{start / g:.2f} GB used at start, peak {peak['fs'] / g:.2f} GB at {peak['fs_at']:.0f} s "
          f"(+{(peak['fs'] - start) / g:.2f} GB), {end / g:.2f} GB at the end; "
          f"under {a.path}: peak {peak['tree'] / g:.2f} GB at {peak['tree_at']:.0f} s{largest(peak['clusters'])}",
          flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
