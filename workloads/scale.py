"""Rewrite an OMB workload for a scale profile (rates, durations, backlog sizes, partition counts).

The workload files in workloads/omb/ keep the studies' true sizes; a profile's scale (experiments.yaml
`scales.<name>`) derives the file a run actually uses. The `aws` scale changes nothing but a rate sweep
point. Every change is listed in the returned `changes` so the run's status record says what was scaled.
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
from pathlib import Path

import yaml

from workloads import plan

EXT = "x-streambench"


def scale_workload(workload: dict, scale: dict, rate: int | None = None) -> tuple[dict, list[str]]:
    wl = copy.deepcopy(workload)
    changes: list[str] = []
    ext = dict(wl.get(EXT) or {})

    def set_field(key, new):
        old = wl.get(key)
        if old != new:
            changes.append(f"{key}: {old} -> {new}")
            wl[key] = new

    def set_ext(key, new):
        old = ext.get(key)
        if old != new:
            changes.append(f"{EXT}.{key}: {old} -> {new}")
            ext[key] = new

    # a fan-out workload (study 003) keeps its rate (1 msg/s) and layout; fanout_map scales its consumer count
    fan = isinstance(ext.get("fanOut"), dict)
    if rate is not None:
        set_field("producerRate", rate)
    r = wl.get("producerRate", 0)
    if fan:
        fmap = {int(k): v for k, v in (scale.get("fanout_map") or {}).items()}
        key = "consumerPerSubscription" if wl.get("consumerPerSubscription", 0) > 1 else "subscriptionsPerTopic"
        if wl.get(key, 0) in fmap:
            set_field(key, fmap[wl[key]])
        fo = dict(ext["fanOut"])
        for skey, fkey in (("fanout_connect_concurrency", "connectConcurrency"),
                           ("fanout_connect_deadline_seconds", "connectDeadlineSeconds")):
            if skey in scale and fo.get(fkey) != scale[skey]:
                changes.append(f"{EXT}.fanOut.{fkey}: {fo.get(fkey)} -> {scale[skey]}")
                fo[fkey] = scale[skey]
        ext["fanOut"] = fo
    elif r > 0 and "rate_factor" in scale:
        scaled = max(scale.get("min_rate", 100), round(r * scale["rate_factor"]))
        if "max_rate" in scale:
            scaled = min(scaled, scale["max_rate"])
        set_field("producerRate", int(scaled))
    elif r > 0 and "max_rate" in scale and not fan:
        set_field("producerRate", int(min(r, scale["max_rate"])))
    if r == 0 and "discovery" in scale:
        set_ext("rateDiscovery", dict(scale["discovery"]))

    parts = wl.get("partitionsPerTopic", 0)
    pmap = {int(k): v for k, v in (scale.get("partition_map") or {}).items()}
    if parts in pmap:
        set_field("partitionsPerTopic", pmap[parts])
    elif "max_partitions" in scale and parts > scale["max_partitions"]:
        set_field("partitionsPerTopic", scale["max_partitions"])

    if not fan and "max_subscriptions" in scale and wl.get("subscriptionsPerTopic", 0) > scale["max_subscriptions"]:
        set_field("subscriptionsPerTopic", scale["max_subscriptions"])

    if "backlog_gb" in scale:
        if wl.get("consumerBacklogSizeGB", 0) > 0:
            # OMB's field is a whole number of GB; the runner's x-streambench.consumerBacklogSizeBytes overrides it
            set_ext("consumerBacklogSizeBytes", int(scale["backlog_gb"] * (1 << 30)))
        if ext.get("catchUpStartBacklogGB", 0) > 0:
            set_ext("catchUpStartBacklogGB", scale["backlog_gb"])

    if "test_seconds" in scale:
        set_ext("testDurationSeconds", scale["test_seconds"])
    if "warmup_seconds" in scale:
        set_ext("warmupDurationSeconds", scale["warmup_seconds"])

    # a mixed workload's catch-up subscription starts once the backlog reaches catchUpStartBacklogGB; with a
    # scaled rate and a short measured phase that size may never be reached (the local runs' 50 MB at 4K msg/s
    # of 1 KB takes 13 s, the phase lasts 10), so cap it at what the producers write by a third of the phase
    rate = wl.get("producerRate", 0)
    if ext.get("catchUpStartBacklogGB", 0) > 0 and "test_seconds" in scale and rate > 0:
        warm = ext.get("warmupDurationSeconds", wl.get("warmupDurationMinutes", 1) * 60)
        reach = rate * wl.get("messageSize", 1024) * (warm + scale["test_seconds"] / 3) / (1 << 30)
        if ext["catchUpStartBacklogGB"] > reach:
            set_ext("catchUpStartBacklogGB", round(reach, 6))

    if ext:
        wl[EXT] = ext
    return wl, changes


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workloads.scale", description=__doc__.splitlines()[0])
    ap.add_argument("workload", help="name in workloads/omb/ (no .yaml)")
    ap.add_argument("--scale", required=True)
    ap.add_argument("--rate", type=int)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    try:
        doc = plan.load()
        if a.scale not in doc["scales"]:
            raise plan.PlanError(f"{plan.EXPERIMENTS}: scales: unknown scale '{a.scale}'")
        src = plan.OMB_DIR / f"{a.workload}.yaml"
        wl, changes = scale_workload(yaml.safe_load(src.read_text()), doc["scales"][a.scale], a.rate)
    except (plan.PlanError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    header = f"# {src.name} scaled for '{a.scale}'\n" + "".join(f"#   {c}\n" for c in changes)
    write_atomic(Path(a.out), header + yaml.safe_dump(wl, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
