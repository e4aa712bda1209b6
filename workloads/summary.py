"""Summarise the run records of a testbed: how many runs, which failed and why, how long they took."""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

from workloads import scale


def summarise(status_dir: Path, experiment: str | None = None) -> dict:
    runs = []
    for p in sorted(status_dir.rglob("*.json")):
        try:
            rec = json.loads(p.read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"{p}: unreadable run record: {exc}") from None
        if experiment is None or experiment in rec.get("experiments", []):
            runs.append(rec)
    failed = [r for r in runs if r.get("status") != "ok"]
    seconds = 0.0
    for r in runs:
        try:
            seconds += (dt.datetime.fromisoformat(r["endedAt"]) - dt.datetime.fromisoformat(r["startedAt"])).total_seconds()
        except (KeyError, ValueError):
            pass
    lost = sum((r.get("audit") or {}).get("lost") or 0 for r in runs)
    dup = sum((r.get("audit") or {}).get("duplicated") or 0 for r in runs)
    suspect = [r for r in runs if r.get("status") == "ok" and (r.get("validity") or {}).get("status") == "suspect"]
    late = [r for r in runs if r.get("warnings")]
    reasons: dict[str, int] = {}
    for r in failed:
        reasons[r.get("reason", "error")] = reasons.get(r.get("reason", "error"), 0) + 1
    peak = max((r.get("diskPeakUsedBytes") or 0 for r in runs), default=0)
    # fault runs (workloads/faultrun.py): their losses are the measurement, not a fault of the harness; what a scale
    # expects of some of them (faults.expect: zero / some lost) is checked here
    # "zero" is a claim about every run: one loss refutes it. "some" is a claim that the level can lose: one run that
    # lost shows it, and a run that lost nothing shows nothing (a bookie's periodic flush may land between the last
    # acknowledgement and the kill); so it is judged over the cell's repetitions, and fails when none of them lost.
    faults, unmet, some = [], [], {}
    for r in runs:
        if r.get("fault") is None and "faultPlan" not in r:
            continue
        f = r.get("fault") if isinstance(r.get("fault"), dict) else {}
        row = {"run": r.get("run"), "status": r.get("status"), "type": f.get("type") or (r.get("faultPlan") or {}).get("type"),
               "lost": f.get("lost"), "acknowledged": f.get("acknowledged"), "expect": r.get("faultExpect"),
               "cycle": r.get("clusterCycle")}
        faults.append(row)
        exp = r.get("faultExpect")
        if exp == "zero" and r.get("status") == "ok" and f.get("lost") != 0:
            unmet.append(row)
        elif exp == "some" and r.get("status") == "ok":
            some.setdefault(_cell(r.get("run") or ""), []).append(row)
    for cell, rows in some.items():
        if not any((x["lost"] or 0) > 0 for x in rows):
            unmet.extend(rows)
        else:
            for x in rows:
                if not x["lost"]:
                    x["note"] = "this repetition lost none; another of its cell did"
    return {
        "runs": len(runs), "ok": len(runs) - len(failed), "failed": len(failed), "failedBy": reasons,
        "suspect": len(suspect), "withWarnings": len(late),
        "runSeconds": round(seconds, 1), "lostMessages": lost, "duplicatedMessages": dup,
        "diskPeakUsedBytes": peak,
        "failures": [{"run": r.get("run"), "reason": r.get("reason", "error"), "phase": r.get("phase"),
                      "error": (r.get("error") or "").splitlines()[:1], "log": r.get("log")} for r in failed],
        "suspects": [{"run": r.get("run"), "reasons": r["validity"]["reasons"]} for r in suspect],
        "warnings": [{"run": r.get("run"), "warnings": r["warnings"]} for r in late],
        "results": [r["result"] for r in runs if r.get("status") == "ok"],
        "faultRuns": faults, "faultExpectationsUnmet": unmet,
    }


def _cell(run: str) -> str:
    """A run's cell: its path without the trailing rep-N."""
    head, _, last = run.rpartition("/")
    return head if last.startswith("rep-") else run


def failure_line(f: dict) -> str:
    """One failed run of a summary's `failures`, as a line: why, in which phase, which run, its error, its log."""
    return (f"failed ({f.get('reason', 'error')}{', in ' + f['phase'] if f.get('phase') else ''}): {f.get('run')}: "
            f"{' '.join(f.get('error') or [])} (log {f.get('log')})")


def check(path: Path) -> int:
    """Exit status for a summary: 0 when it has runs, none failed, and nothing was lost or duplicated."""
    try:
        s = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        print(f"error: {path}: {exc}", file=sys.stderr)
        return 2
    print(f"{path}: {s['ok']}/{s['runs']} runs ok, {s['lostMessages']} lost, {s['duplicatedMessages']} duplicated, "
          f"{s.get('suspect', 0)} suspect, {s['runSeconds']} s of runs")
    for f in s["failures"]:
        print(f"  {failure_line(f)}")
    for w in s.get("warnings", []):
        print(f"  warning: {w['run']}: {'; '.join(w['warnings'])}")
    for f in s.get("faultRuns", []):
        print(f"  fault run: {f['run']}: {f['type']}, {f['lost']} lost of {f['acknowledged']} acknowledged"
              + (f" (expected: {f['expect']} lost)" if f.get("expect") else "")
              + (f", cycle {f['cycle']} on its cluster" if f.get("cycle") else "")
              + (f" ({f['note']})" if f.get("note") else ""))
    for f in s.get("faultExpectationsUnmet", []):
        print(f"  fault expectation not met: {f['run']}: {f['lost']} lost, expected {f['expect']}"
              + (" (in none of its cell's repetitions)" if f["expect"] == "some" else ""))
    return 0 if (s["runs"] > 0 and s["failed"] == 0 and s["lostMessages"] == 0 and s["duplicatedMessages"] == 0
                 and not s.get("faultExpectationsUnmet")) else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workloads.summary", description=__doc__)
    ap.add_argument("--check", metavar="SUMMARY", help="only check a written summary (exit 1 on failures or losses)")
    ap.add_argument("--status-dir")
    ap.add_argument("--scale")
    ap.add_argument("--testbed")
    ap.add_argument("--experiment")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    if a.check:
        return check(Path(a.check))
    missing = [k for k in ("status_dir", "scale", "testbed", "out") if getattr(a, k) is None]
    if missing:
        ap.error("missing " + ", ".join("--" + m.replace("_", "-") for m in missing))
    try:
        s = summarise(Path(a.status_dir), a.experiment)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    s = {"testbed": a.testbed, "scale": a.scale, "experiment": a.experiment, **s}
    scale.write_atomic(Path(a.out), json.dumps(s, indent=2) + "\n")
    print(f"{s['ok']}/{s['runs']} runs ok, {s['failed']} failed, {s['runSeconds']} s of runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
