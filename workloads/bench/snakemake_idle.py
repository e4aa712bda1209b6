"""What Snakemake's own process costs while one benchmark job runs and the others wait for the `cluster` resource.

    env/shell python workloads/bench/snakemake_idle.py [--jobs 170] [--done 30] [--inputs 6] [--window 30]
        [--max-ratio 0.25]

A local run of this artifact holds `cluster=1`: one job runs, the 170-odd others of the DAG are ready and wait.
Snakemake selects jobs when one ends and also on its job-rate limiter's timer, and each selection that a job's end
caused starts one more chain of timed selections (env/snakesched.py): after N jobs have ended it selects N times a
second, each time checking every ready job's inputs and ranking them; its default `--scheduler ilp` also starts a CBC
process for each selection. The workflow asks for greedy selection (its profiles) and drops the timer (the
Snakefile's onstart, env/snakesched.py).

Here a Snakefile of `--jobs` jobs holding `cluster=1`, each with `--inputs` input files (drawn from a pool, as the runs
share the runner jar, the experiments file and the drivers) and params and priority functions, runs `--done` quick
jobs first, then one that sleeps while the window is measured, then the rest. It runs three times: with Snakemake's
defaults, with `env/profiles/local/config.yaml`'s scheduler alone (the timer left in place; printed for the record),
then with that scheduler and the workflow's onstart. The CPU of the Snakemake process and of the children it reaped
(utime + stime + cutime + cstime in /proc) is read at the window's two ends, 3 s after the sleeping job began. Prints
the three, the ratio of the last to the defaults, the criterion and PASS or FAIL; the exit status is the verdict (1 on
FAIL, 2 when the bench itself could not run). Nothing of it outlives the bench (its directories are temporary,
Snakemake is stopped on any error).
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
import sys
sys.path.insert(0, config["root"])
from env import snakesched
N = int(config["jobs"])
DONE = int(config["done"])
K = int(config["inputs"])
SLEEP = int(config["sleep"])
POOL = [f"in/{j}.txt" for j in range(4 * K + 8)]
wildcard_constraints:
    i="[1-9][0-9]*"
rule all:
    input: ["out/0.done"] + [f"out/{i}.done" for i in range(1, N)]
rule sleeper:
    output: "out/0.done"
    priority: 100
    resources: cluster=1
    shell: "touch started && sleep {SLEEP} && touch {output}"
rule job:
    input: lambda wc: [POOL[(int(wc.i) * 7 + j * 3) % len(POOL)] for j in range(K)]
    output: "out/{i}.done"
    params: tag=lambda wc: f"job-{wc.i}"
    priority: lambda wc: 200 if int(wc.i) <= DONE else int(wc.i) % 50
    resources: cluster=1
    shell: "touch {output}"
onstart:
    if config.get("no_timer") and not snakesched.no_reselection_timer(workflow):
        raise SystemExit("no job scheduler to tune")
"""


def jiffies(pid: int) -> int:
    f = Path(f"/proc/{pid}/stat").read_text()
    rest = f[f.rindex(")") + 2:].split()
    return sum(int(x) for x in rest[11:15])  # utime stime cutime cstime


def one(settings: dict, jobs: int, done: int, inputs: int, window: float, no_timer: bool) -> tuple[float, float]:
    """Snakemake's CPU seconds over the window while the sleeping job runs, and the seconds from its last output to
    its exit."""
    with tempfile.TemporaryDirectory(prefix="sb-smk-idle-") as tmp:
        d = Path(tmp)
        (d / "Snakefile").write_text(SNAKEFILE)
        (d / "in").mkdir()
        for j in range(4 * inputs + 8):
            (d / "in" / f"{j}.txt").write_text("x")
        sleep = int(window + 8)
        cmd = [sys.executable, "-m", "snakemake", "-s", str(d / "Snakefile"), "-d", str(d), "--cores", "2",
               "--resources", "cluster=1", "--scheduler", str(settings["scheduler"]),
               "--config", f"jobs={jobs}", f"done={done}", f"inputs={inputs}", f"sleep={sleep}", f"root={ROOT}",
               f"no_timer={1 if no_timer else 0}"]
        err = open(d / "snakemake.err", "w+")  # a file: Snakemake's log of 150 jobs would fill a pipe and block it
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, text=True)

        def why() -> str:
            err.flush()
            return (d / "snakemake.err").read_text(errors="replace")[-500:]
        try:
            t_end = time.monotonic() + 120
            while not (d / "started").exists():
                if p.poll() is not None or time.monotonic() > t_end:
                    raise RuntimeError(f"snakemake ended or never started the sleeping job: {why()}")
                time.sleep(0.1)
            time.sleep(3)
            a = jiffies(p.pid)
            time.sleep(window)
            b = jiffies(p.pid)
            rc = p.wait(timeout=sleep + 600)
            ended = time.time()
            if rc != 0:
                raise RuntimeError(f"snakemake exited {rc}: {why()}")
            outs = list((d / "out").glob("*.done"))
            if len(outs) != jobs:
                raise RuntimeError(f"{len(outs)} of {jobs} jobs done")
            hold = ended - max(o.stat().st_mtime for o in outs)
            return (b - a) / os.sysconf("SC_CLK_TCK"), hold
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
    ap.add_argument("--jobs", type=int, default=170, help="jobs in the DAG (local all: 179 runs)")
    ap.add_argument("--done", type=int, default=30, help="quick jobs that end before the measured one starts")
    ap.add_argument("--inputs", type=int, default=6, help="input files per job (benchmark_run has 6-7)")
    ap.add_argument("--window", type=float, default=30.0, help="seconds measured while the sleeping job runs")
    ap.add_argument("--max-ratio", type=float, default=0.25, help="criterion: the workflow's CPU / defaults' CPU")
    a = ap.parse_args(argv)
    prof = yaml.safe_load(PROFILE.read_text()) or {}
    mine = {k: prof.get(k) for k in DEFAULTS}
    if None in mine.values():
        print(f"{PROFILE}: {', '.join(k for k, v in mine.items() if v is None)}: not set; the bench compares the "
              "profile's setting with Snakemake's default")
        return 2
    load0 = os.getloadavg()[0]
    try:
        base, base_hold = one(DEFAULTS, a.jobs, a.done, a.inputs, a.window, no_timer=False)
        timer, _ = one(mine, a.jobs, a.done, a.inputs, a.window, no_timer=False)  # the profile alone, for the record
        tuned, hold = one(mine, a.jobs, a.done, a.inputs, a.window, no_timer=True)
    except RuntimeError as e:
        print(f"snakemake_idle: error: {e}")
        return 2
    ratio = tuned / base if base > 0 else float("inf")
    ok = ratio <= a.max_ratio
    print(f"{a.jobs} jobs of {a.inputs} inputs holding cluster=1, {a.done} of them ended, {a.window:.0f} s measured "
          f"while one runs (load average {load0:.2f} before)")
    print(f"  Snakemake defaults {DEFAULTS}: {base:.2f} CPU-s ({base / a.window:.3f} cores); exit {base_hold:.1f} s "
          "after the last job")
    print(f"  env/profiles/local {mine}, Snakemake's timer: {timer:.2f} CPU-s ({timer / a.window:.3f} cores)")
    print(f"  env/profiles/local {mine}, no timer (env/snakesched.py): {tuned:.2f} CPU-s ({tuned / a.window:.3f} "
          f"cores); exit {hold:.1f} s after the last job")
    print(f"  ratio {ratio:.3f}; criterion <= {a.max_ratio}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
