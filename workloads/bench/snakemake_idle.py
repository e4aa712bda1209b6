"""What Snakemake's own process costs while one benchmark job runs and the others wait for the `cluster` resource.

    env/shell python workloads/bench/snakemake_idle.py [--jobs 150] [--window 20] [--max-ratio 0.25]

A local run of this artifact holds `cluster=1`: one job runs, the 100-odd others of the DAG are ready and wait.
Snakemake re-selects jobs every second while they wait (its default `--max-jobs-per-timespan 100/1s` schedules a
re-evaluation after each selection; a longer timespan is no cure: the timer thread holds Snakemake's exit for that
long), and its default `--scheduler ilp` solves each selection with a CBC subprocess. A fresh-clone `local all` named
the Snakemake process as the busiest "foreign" one beside the clusters in most of its runs (0.1-0.37 cores of two).

Here a Snakefile of `--jobs` trivial jobs holding `cluster=1`, the first (highest priority) sleeping while the window
is measured, runs twice: with Snakemake's default scheduler, then with `env/profiles/local/config.yaml`'s. The
CPU of the Snakemake process and of the children it reaped (utime + stime + cutime + cstime in /proc) is read at the
window's two ends, 3 s after the first job began. Prints both, their ratio, the criterion and PASS or FAIL; the exit
status is the verdict (1 on FAIL, 2 when the bench itself could not run). Nothing of it outlives the bench (its
directories are temporary, Snakemake is stopped on any error).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "env" / "profiles" / "local" / "config.yaml"
DEFAULTS = {"scheduler": "ilp"}  # Snakemake 9's own (`snakemake --help`)

SNAKEFILE = """
N = int(config["jobs"])
SLEEP = int(config["sleep"])
wildcard_constraints:
    i="[1-9][0-9]*"
rule all:
    input: ["out/0.done"] + [f"out/{i}.done" for i in range(1, N)]
rule first:
    output: "out/0.done"
    priority: 100
    resources: cluster=1
    shell: "touch started && sleep {SLEEP} && touch {output}"
rule job:
    output: "out/{i}.done"
    resources: cluster=1
    shell: "touch {output}"
"""


def jiffies(pid: int) -> int:
    f = Path(f"/proc/{pid}/stat").read_text()
    rest = f[f.rindex(")") + 2:].split()
    return sum(int(x) for x in rest[11:15])  # utime stime cutime cstime


def one(settings: dict, jobs: int, window: float) -> float:
    """Snakemake's CPU seconds over the window while the first job sleeps."""
    with tempfile.TemporaryDirectory(prefix="sb-smk-idle-") as tmp:
        d = Path(tmp)
        (d / "Snakefile").write_text(SNAKEFILE)
        sleep = int(window + 8)
        cmd = [sys.executable, "-m", "snakemake", "-s", str(d / "Snakefile"), "-d", str(d), "--cores", "2",
               "--resources", "cluster=1", "--scheduler", str(settings["scheduler"]),
               "--config", f"jobs={jobs}", f"sleep={sleep}"]
        err = open(d / "snakemake.err", "w+")  # a file: Snakemake's log of 150 jobs would fill a pipe and block it
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, text=True)

        def why() -> str:
            err.flush()
            return (d / "snakemake.err").read_text(errors="replace")[-500:]
        try:
            t_end = time.monotonic() + 120
            while not (d / "started").exists():
                if p.poll() is not None or time.monotonic() > t_end:
                    raise RuntimeError(f"snakemake ended or never started the first job: {why()}")
                time.sleep(0.1)
            time.sleep(3)
            a = jiffies(p.pid)
            time.sleep(window)
            b = jiffies(p.pid)
            rc = p.wait(timeout=sleep + 600)
            if rc != 0:
                raise RuntimeError(f"snakemake exited {rc}: {why()}")
            done = len(list((d / "out").glob("*.done")))
            if done != jobs:
                raise RuntimeError(f"{done} of {jobs} jobs done")
            return (b - a) / os.sysconf("SC_CLK_TCK")
        finally:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            err.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=150, help="jobs in the DAG (local all has 225, about 180 of them runs)")
    ap.add_argument("--window", type=float, default=20.0, help="seconds measured while the first job sleeps")
    ap.add_argument("--max-ratio", type=float, default=0.25, help="criterion: profile's CPU / defaults' CPU")
    a = ap.parse_args(argv)
    prof = yaml.safe_load(PROFILE.read_text()) or {}
    mine = {k: prof.get(k) for k in DEFAULTS}
    if None in mine.values():
        print(f"{PROFILE}: {', '.join(k for k, v in mine.items() if v is None)}: not set; the bench compares the "
              "profile's setting with Snakemake's default")
        return 2
    load0 = os.getloadavg()[0]
    try:
        base = one(DEFAULTS, a.jobs, a.window)
        tuned = one(mine, a.jobs, a.window)
    except RuntimeError as e:
        print(f"snakemake_idle: error: {e}")
        return 2
    ratio = tuned / base if base > 0 else float("inf")
    ok = ratio <= a.max_ratio
    print(f"{a.jobs} jobs waiting on cluster=1, {a.window:.0f} s measured while one runs "
          f"(load average {load0:.2f} before)")
    print(f"  Snakemake defaults {DEFAULTS}: {base:.2f} CPU-s ({base / a.window:.3f} cores)")
    print(f"  env/profiles/local {mine}: {tuned:.2f} CPU-s ({tuned / a.window:.3f} cores)")
    print(f"  ratio {ratio:.3f}; criterion <= {a.max_ratio}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
