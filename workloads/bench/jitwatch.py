"""CPU of the JIT compilers of every JVM on this machine, sampled beside a run or a bench (record maxrate-jit-warmup).

    env/shell python workloads/bench/jitwatch.py [--interval 10] [--seconds N]

Every --interval seconds one line: the time, then per java process `pid:main-class:jit=S:all=S`, the CPU seconds
(user + system, from /proc/<pid>/task/*/stat) its compiler threads (those named C1/C2 CompilerThread) and all of its
threads have used since it started. A broker whose jit figure still grows is still compiling its hot paths: what it
measures then is a JVM warming up. Stops after --seconds (default: never; Ctrl-C). Reads /proc only (Linux).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")
MAIN_PREFIXES = (b"kafka.", b"org.", b"io.")


def java_processes():
    """(pid, main class) of every java process."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"java"):
            yield pid, next((a.decode() for a in argv[1:] if a.startswith(MAIN_PREFIXES)), "?")


def cpu_seconds(pid: str) -> tuple[float, float] | None:
    """(compiler threads', all threads') CPU seconds of one process, or None once it is gone."""
    jit = total = 0.0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/stat") as fh:
                st = fh.read()
            name = st[st.index("(") + 1:st.rindex(")")]
            fields = st[st.rindex(")") + 2:].split()
            t = (int(fields[11]) + int(fields[12])) / HZ  # utime, stime
            total += t
            if "CompilerThre" in name:
                jit += t
    except (OSError, ValueError):
        return None
    return jit, total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--interval", type=float, default=10.0)
    ap.add_argument("--seconds", type=float, default=None)
    a = ap.parse_args(argv)
    if a.interval <= 0:
        ap.error("--interval: must be above 0")
    end = None if a.seconds is None else time.monotonic() + a.seconds
    try:
        while end is None or time.monotonic() < end:
            parts = []
            for pid, main_class in java_processes():
                got = cpu_seconds(pid)
                if got:
                    parts.append(f"{pid}:{main_class.rsplit('.', 1)[-1]}:jit={got[0]:.1f}:all={got[1]:.1f}")
            print(time.strftime("%H:%M:%S"), " ".join(parts), flush=True)
            time.sleep(a.interval)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
