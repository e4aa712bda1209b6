"""Snakemake's job selection on a timer, switched off for this workflow (the Snakefile's onstart handler).

Snakemake 9 selects the jobs to start each time a job ends, and also on a timer: its job-rate limiter
(`--max-jobs-per-timespan`, 100/1s by default; only a dry run has none) starts a `threading.Timer` of one timespan at
the end of every selection, and the timer's firing makes a selection of its own. So every selection that a job's end
caused starts one more chain of timed selections that never stops: after N jobs have ended, N chains wake the
scheduler N times a second, and each wake-up checks the inputs of every ready job and ranks them. In a fresh-clone
`local all` at bf359aa (170-odd runs ready, one running: `cluster=1`), Snakemake's main thread took 0.13 cores of two
beside the first runs and 0.29 after 30 jobs, with 33 threads alive (py-spy: `job_reward`, `update_input_sizes`;
docs/measurements.yaml snakemake-reselect); a longer timespan only divides that by its length.

This workflow submits a handful of jobs at a time to one machine or to its own hosts, never to a batch system that
would want a submission rate limited: without the limiter Snakemake selects when a job ends (or fails, or the user
stops it), as it does in a dry run.
"""
from __future__ import annotations


def no_reselection_timer(workflow) -> bool:
    """Drops the job scheduler's rate limiter (called from onstart: after the scheduler is made, before its first
    selection). False when this Snakemake has no such scheduler attribute (another version than uv.lock's)."""
    sched = getattr(workflow, "scheduler", None)
    if sched is None or not hasattr(sched, "job_rate_limiter"):
        return False
    sched.job_rate_limiter = None
    return True
