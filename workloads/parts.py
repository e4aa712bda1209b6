"""One run split over several runner processes on this machine (a fan-out run whose consumers do not fit in one).

    python -m workloads.parts --processes K -- runner/bin/omb-run --workload W ... --output OUT --log LOG [...]

starts K runners, process i with `--process-index i --process-count K --start-at NOW --barrier DIR` (one barrier
directory for all: they share the consumers, start together once every one is connected and agree on the drain; the
start time names the run in every part, runner/README.md),
each with its own `--output` and `--log`, and waits for them. Then the parts are merged with `omb-merge` into OUT
(written once, complete, or not at all), the parts kept in `<OUT without suffix>.parts/` (as a run split over client
hosts keeps them, testbeds/runner.py), and every part's log appended to LOG under a header naming the part.

The exit status is the runners': 0 when every part ended 0 and the merge succeeded; 3 when any part passed its
deadline (the runner's own exit 3); otherwise the first failing part's status, or 2 for a failed merge. When one part
fails the others are stopped (SIGTERM, SIGKILL after 15 s), so a run never waits on a barrier a dead part will not
reach. SIGTERM or SIGINT of this process stops every part the same way. The runners are started in this process's
process group, so the caller's group signal (workloads/run.py kill_group) reaches them too.
"""
from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MERGE = ROOT / "runner" / "bin" / "omb-merge"
STOP_GRACE_S = 15


class PartsError(ValueError):
    """A command line this module cannot split; the message names the option."""


def _take(args: list[str], opt: str) -> tuple[list[str], str]:
    """args without `opt VALUE` (or `opt=VALUE`), and VALUE; the option must be there once."""
    rest, found = [], []
    i = 0
    while i < len(args):
        a = args[i]
        if a == opt and i + 1 < len(args):
            found.append(args[i + 1])
            i += 2
            continue
        if a.startswith(opt + "="):
            found.append(a[len(opt) + 1:])
        else:
            rest.append(a)
        i += 1
    if len(found) != 1:
        raise PartsError(f"runner command: {opt}: given {len(found)} times, needs exactly one")
    return rest, found[0]


def part_commands(runner_cmd: list[str], k: int, work: Path, start_at: int = 0) -> tuple[list[list[str]], Path, Path,
                                                                                       list[Path], list[Path]]:
    """The K runner commands, and the merged output, the log, the parts' outputs and logs they imply."""
    if k < 2:
        raise PartsError(f"--processes: {k}: a run split over processes needs at least 2")
    for opt in ("--process-index", "--process-count", "--barrier", "--fanout-barrier", "--start-at"):
        if any(a == opt or a.startswith(opt + "=") for a in runner_cmd):
            raise PartsError(f"runner command: {opt}: set by workloads.parts, not by its caller")
    rest, out = _take(runner_cmd, "--output")
    rest, log = _take(rest, "--log")
    out_p, log_p = Path(out), Path(log)
    barrier = work / "barrier"
    outs = [work / f"part-{i}.json" for i in range(k)]
    logs = [work / f"part-{i}.log" for i in range(k)]
    cmds = [rest + ["--output", str(outs[i]), "--log", str(logs[i]), "--process-index", str(i),
                    "--process-count", str(k), "--start-at", str(start_at), "--barrier", str(barrier)] for i in range(k)]
    return cmds, out_p, log_p, outs, logs


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    end = time.monotonic() + STOP_GRACE_S
    for p in procs:
        try:
            p.wait(timeout=max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def status_of(codes: list[int | None]) -> int:
    """The parts' exit statuses as one: 3 if any passed its deadline, else the first non-zero one, else 0."""
    if any(c == 3 for c in codes):
        return 3
    for c in codes:
        if c:
            return c if c > 0 else 1  # killed by a signal: a failure all the same
    return 0


def run(runner_cmd: list[str], k: int, poll_s: float = 0.2, say=print) -> int:
    work = Path(_take(runner_cmd, "--output")[1]).with_suffix(".parts-work")
    # every refusal before anything is made; the start time names the run (the barrier decides when it starts)
    cmds, out, log, outs, logs = part_commands(runner_cmd, k, work, int(time.time() * 1000))
    shutil.rmtree(work, ignore_errors=True)
    (work / "barrier").mkdir(parents=True)
    procs: list[subprocess.Popen] = []

    def on_signal(signum, _frame):
        _stop(procs)
        raise SystemExit(128 + signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for c in cmds:
            procs.append(subprocess.Popen(c, stdin=subprocess.DEVNULL))
        first_failed = None
        while any(p.poll() is None for p in procs):
            bad = [i for i, p in enumerate(procs) if p.poll() not in (None, 0)]
            if bad:
                first_failed = bad[0]
                _stop(procs)  # a part that failed never reaches the barrier or the drain: end the others now
                break
            time.sleep(poll_s)
        codes = [p.returncode for p in procs]
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as fh:
            for i, (lp, c) in enumerate(zip(logs, codes)):
                text = lp.read_text(errors="replace") if lp.is_file() else ""
                fh.write(f"=== runner process {i} of {k} (exit {c})\n{text}")
        if first_failed is not None:  # the others were stopped: their statuses say only that
            c = codes[first_failed]
            say(f"workloads.parts: runner process {first_failed} of {k} exited {c} (the others were stopped)")
            return status_of([c])
        rc = status_of(codes)
        if rc != 0:
            i = next(i for i, c in enumerate(codes) if c)
            say(f"workloads.parts: runner process {i} of {k} exited {codes[i]}")
            return rc
        missing = [str(o) for o in outs if not o.is_file()]
        if missing:
            say(f"workloads.parts: a runner process ended 0 without its result: {missing[0]}")
            return 2
        tmp = out.with_name(f".{out.name}.merging")
        res = subprocess.run([str(MERGE), "--output", str(tmp), *map(str, outs)], capture_output=True, text=True,
                             timeout=600)
        if res.returncode != 0 or not tmp.is_file():
            tmp.unlink(missing_ok=True)
            say(f"workloads.parts: omb-merge failed: {(res.stderr.strip().splitlines() or [''])[-1]}")
            return 2
        pdir = out.with_suffix(".parts")
        shutil.rmtree(pdir, ignore_errors=True)
        pdir.mkdir(parents=True)
        for i, o in enumerate(outs):
            shutil.copyfile(o, pdir / f"part-{i}-local.json")
        tmp.replace(out)
        return 0
    finally:
        _stop(procs)
        for s, h in old.items():
            signal.signal(s, h)
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workloads.parts", description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, required=True, help="runner processes to split the run over (>= 2)")
    ap.add_argument("runner", nargs=argparse.REMAINDER, help="-- then the runner's command line")
    a = ap.parse_args(argv)
    cmd = a.runner[1:] if a.runner[:1] == ["--"] else a.runner
    if not cmd:
        print("workloads.parts: error: no runner command after --", file=sys.stderr)
        return 2
    try:
        return run(cmd, a.processes, say=lambda m: print(m, file=sys.stderr))
    except PartsError as e:
        print(f"workloads.parts: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
