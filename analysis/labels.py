"""Labels of result files from their paths (never from the free-text `workload` string inside).

Published study 000 files: `results/<experiment folders>/<system>-<partitions>-partition(s)-...-ack-<n>-<mode>.json`.
This project's runs: `<testbed>/<system>/<level>/<workload>/rep-<n>.json` under data/raw.
Unknown patterns raise InputError naming the file.
"""
from __future__ import annotations

import re

from . import InputError

PUBLISHED_TESTBED = "aws-i3en.2xlarge"
PUBLISHED_TESTBED_LABEL = "aws i3en.2xlarge (study 000)"
PUBLISHED_VERSIONS = {"pulsar": "2.6.1-sn-16", "kafka": "n/a"}

# the faults of this project's fault runs (workloads/plan.py FAULTS; a test keeps the two lists equal): killed
FAULTS = ["kill-leader", "kill-bookie", "kill-one", "crash-all", "power-loss"]
# the leader held apart instead of killed (issue 31; these need hosts of their own): a grid's column only where its
# testbed has such runs, so a testbed that cannot run them keeps its grid and claims as they were
HOLD_FAULTS = ["partition-leader", "partition-minority", "partition-majority", "pause-leader", "slow-link-leader"]
# the hold faults that keep the leader from its peers altogether (a slow link only slows it)
APART_FAULTS = ["partition-leader", "partition-minority", "partition-majority", "pause-leader"]
PARTITION_FAULTS = ["partition-leader", "partition-minority", "partition-majority"]
KNOWN_FAULTS = FAULTS + HOLD_FAULTS
FAULT_SUFFIXES = tuple(f"--{f}" for f in KNOWN_FAULTS)  # workload ids of fault runs (workloads.plan.Run.workload_id)

# level from (local durability, ack): study 000 Table 1-6; a bypass run is the async level of its ack
LEVELS = {("sync", 2): "L1", ("async", 2): "L2", ("sync", 1): "L3", ("async", 1): "L4",
          ("bypass", 2): "L2", ("bypass", 1): "L4"}

_FILE = re.compile(
    r"^(?P<system>kafka|pulsar)-(?P<backlog>backlog-)?(?P<partitions>\d+)-partitions?-1kb-batched-1ms(?:-1mb)?"
    r"-ack-(?P<ack>1|2|all)(?P<client>-1-client)?(?P<subs>-10-sub)?-(?P<mode>sync|nosync|bypass-journal)\.json$")

# folder (relative to results/) -> experiment and fixed workload facts
_FOLDERS = [
    (r"catchup_read/(?P<cu>bypass-journal|nosync|sync)", "E000-CU"),
    (r"latency/(?P<lsync>sync|nosync)", "E000-LAT1"),
    (r"latency/10_subscriptions/data_(?P<lsync>sync|nosync)", "E000-LAT2"),
    (r"latency/partitions/data_(?P<lsync>sync|nosync)_ack_(?P<fack>1|all)", "E000-LAT3"),
    (r"latency/partitions/pulsar/data_(?P<lsync>sync|nosync)_ack_(?P<fack>1|2)", "E000-LAT3"),
    (r"max_throughput/multiple_partitions/data_(?P<lsync>sync|nosync)", "E000-MT1"),
    (r"max_throughput/multiple_partitions/2000_partitions", "E000-MT2"),
    (r"max_throughput/single_partition/data_(?P<lsync>sync|nosync)", "E000-MT3"),
    (r"max_throughput/single_partition_single_client/data_(?P<lsync>sync|nosync)", "E000-MT4"),
    (r"single_partition", "E000-LAT1P"),
]
_FOLDER_RES = [(re.compile("^" + f + "$"), e) for f, e in _FOLDERS]


def series_name(system: str, ack: int) -> str:
    """Study 000's series label: pulsar-ack-1/2, kafka-ack-1/kafka-ack-all."""
    if system == "kafka":
        return "kafka-ack-1" if ack == 1 else "kafka-ack-all"
    return f"{system}-ack-{ack}"


def parse_published_path(rel: str) -> dict:
    """Labels of one study 000 result file from its path relative to the download root (``results/...``)."""
    parts = rel.split("/")
    if len(parts) < 3 or parts[0] != "results":
        raise InputError(rel, "path", "not under results/")
    folder, name = "/".join(parts[1:-1]), parts[-1]
    m = _FILE.match(name)
    if not m:
        raise InputError(rel, "path", f"unknown file name pattern {name!r}")
    for rx, experiment in _FOLDER_RES:
        fm = rx.match(folder)
        if fm:
            break
    else:
        raise InputError(rel, "path", f"unknown folder {folder!r}")
    g, fg = m.groupdict(), fm.groupdict()
    system = g["system"]
    ack = 1 if g["ack"] == "1" else 2
    if system == "pulsar" and g["ack"] == "all" or system == "kafka" and g["ack"] == "2":
        raise InputError(rel, "path", f"ack-{g['ack']} is not a {system} setting")
    mode = g["mode"]
    local = {"sync": "sync", "nosync": "async", "bypass-journal": "bypass"}[mode]
    if local == "bypass" and system != "pulsar":
        raise InputError(rel, "path", "journal bypass is a Pulsar setting")
    # the folder must agree with the file name
    if fg.get("lsync"):
        want = "sync" if fg["lsync"] == "sync" else "async"
        if (local if local != "bypass" else "async") != want:
            raise InputError(rel, "path", f"folder says {fg['lsync']} but file says {mode}")
    if fg.get("fack"):
        if (1 if fg["fack"] == "1" else 2) != ack:
            raise InputError(rel, "path", f"folder says ack_{fg['fack']} but file says ack-{g['ack']}")
    if fg.get("cu") and fg["cu"] != "bypass-journal" and {"nosync": "async"}.get(fg["cu"], fg["cu"]) != local:
        raise InputError(rel, "path", f"folder says {fg['cu']} but file says {mode}")
    if (experiment == "E000-CU") != bool(g["backlog"]):
        raise InputError(rel, "path", "backlog file outside catchup_read/ (or the reverse)")
    if (experiment == "E000-LAT2") != bool(g["subs"]):
        raise InputError(rel, "path", "10-sub file outside 10_subscriptions/ (or the reverse)")
    one_client = bool(g["client"]) or experiment == "E000-MT4"
    partitions = int(g["partitions"])
    max_rate = experiment.startswith("E000-MT")
    return {
        "source": "published", "study": "000", "experiment": experiment, "system": system,
        "version": PUBLISHED_VERSIONS[system], "level": LEVELS[(local, ack)], "local_durability": local,
        "ack": ack, "series": series_name(system, ack), "tuning": "study-000",
        "topics": 1, "partitions": partitions, "subscriptions": 10 if g["subs"] else 1,
        "producers_per_topic": 1 if one_client else 2,
        "consumers_per_subscription": 1 if one_client else 2,
        "message_size_bytes": 1024,
        "producer_rate_msgps": 0 if max_rate else 200000,
        "backlog_gb": 512 if experiment == "E000-CU" else 0,
        "catchup_mode": fg.get("cu"),
        "testbed": PUBLISHED_TESTBED, "testbed_label": PUBLISHED_TESTBED_LABEL, "repetition": 1,
    }


_RAW = re.compile(r"^(?P<testbed>[A-Za-z0-9_.-]+)/(?P<system>[a-z][a-z0-9_-]*)/(?P<level>L[1-4](?:-bypass)?)"
                  r"(?:\+(?P<tuning>[A-Za-z0-9_.+-]+))?/(?P<workload>[A-Za-z0-9_.+-]+)/rep-(?P<rep>\d+)\.json$")
# workloads/omb file names: 1-topic-100-partitions-1kb-2p-2c-10sub-200k(-backlog|-mixed), ...-max, [--rate-N]
_WL = re.compile(r"^(?P<topics>\d+)-topics?-(?P<partitions>\d+)-partitions?-(?P<size>\d+)(?P<unit>b|kb)"
                 r"-(?P<p>\d+)p-(?P<c>\d+)c(?P<rest>[A-Za-z0-9_.-]*?)(?:--rate-(?P<rate>\d+))?$")
_LEVEL_LOCAL = {"L1": ("sync", 2), "L2": ("async", 2), "L3": ("sync", 1), "L4": ("async", 1)}


# experiments of studies 002 and 004 (workloads/experiments.yaml) -> their study
OTHER_STUDIES = {"E002-LAT": "002", "E004-T1C1": "004", "E004-T1C2": "004", "E004-T2": "004", "E004-T3": "004"}


def _study_002_004(w: dict) -> str | None:
    """E002-LAT / E004-* from a workload shape (the workloads/omb files experiments.yaml names), else None.
    Study 002: 1 topic of 1, 6 or 16 partitions, 100 B, 1 producer, 1 consumer, 50K msg/s, no other tag (study 001's
    100-B workloads carry keyed/nokey). Study 004: 1 KB, 4 producers; 1 partition / 1 consumer at the maximum rate
    (T1C1), or 100 partitions / 4 consumers at 2000K (T1C2), 500K (T2) or 200K with a backlog (T3)."""
    if w.get("topics") != 1 or w.get("subscriptions") != 1:
        return None
    p, prod, cons, rate = w["partitions"], w["producers_per_topic"], w["consumers_per_subscription"], w.get("producer_rate_msgps")
    if (w.get("message_size_bytes") == 100 and p in (1, 6, 16) and prod == cons == 1 and rate == 50000
            and not w.get("max_rate") and w.get("tags") == "-50k"):
        return "E002-LAT"
    if w.get("message_size_bytes") != 1024 or prod != 4:
        return None
    if w.get("max_rate") and p == 1 and cons == 1:
        return "E004-T1C1"
    if p != 100 or cons != 4 or w.get("max_rate"):
        return None
    if w.get("kind") == "backlog" and w.get("tags") == "-200k-backlog":
        return "E004-T3"
    if w.get("kind") is None and w.get("tags") in ("-2000k", "-500k"):
        return "E004-T1C2" if w["tags"] == "-2000k" else "E004-T2"
    return None


def experiment_of(w: dict) -> str:
    """Experiment id of a workload shape (from its file name): study 000's, E002-LAT or E004-*, else 'other'
    (the shapes of studies 001 and 003, which their own modules read)."""
    mine = _study_002_004(w)
    if mine:
        return mine
    if w.get("message_size_bytes") != 1024 or w.get("topics") != 1:
        return "other"
    p, prod, cons = w["partitions"], w["producers_per_topic"], w["consumers_per_subscription"]
    if w.get("max_rate"):
        if prod == cons == 2 and p == 100:
            return "E000-MT1"
        if p == 2000 and prod == cons and prod in (2, 4):
            return "E000-MT2"
        if p == 1 and prod == cons == 2:
            return "E000-MT3"
        if p == 1 and prod == cons == 1:
            return "E000-MT4"
        return "other"
    if prod != 2 or cons != 2:
        return "other"
    if w.get("kind") == "backlog" and p == 100:
        return "E000-CU"
    if w.get("kind") == "mixed" and p == 100:
        return "E000-MIX"
    if w.get("kind"):
        return "other"
    if w.get("subscriptions") == 10 and p == 100:
        return "E000-LAT2"
    if w.get("subscriptions") == 1:
        return "E000-LAT1" if p == 100 else "E000-LAT3"
    return "other"


def parse_workload_id(name: str) -> dict:
    """Nominal workload shape from a workloads/omb file name (the study's sizes, before any scaling)."""
    m = _WL.match(name)
    if not m:
        return {}
    g = m.groupdict()
    rest = g["rest"] or ""
    out = {"topics": int(g["topics"]), "partitions": int(g["partitions"]),
           "message_size_bytes": int(g["size"]) * (1024 if g["unit"] == "kb" else 1),
           "producers_per_topic": int(g["p"]), "consumers_per_subscription": int(g["c"]),
           "max_rate": rest.endswith("-max"), "subscriptions": 1, "kind": None, "tags": rest}
    sm = re.search(r"-(\d+)sub\b", rest)
    if sm:
        out["subscriptions"] = int(sm.group(1))
    rm = re.search(r"-(\d+)k(?:-|$)", rest)
    if rm:
        out["producer_rate_msgps"] = int(rm.group(1)) * 1000
    if g["rate"]:
        out["producer_rate_msgps"] = int(g["rate"])
    if out["max_rate"]:
        out["producer_rate_msgps"] = 0
    for kind in ("backlog", "mixed"):
        if re.search(rf"-{kind}(?:-|$)", rest):
            out["kind"] = kind
    return out


def parse_raw_path(rel: str) -> dict:
    """Labels of one of this project's runs from ``<testbed>/<system>/<level>[+<tuning>]/<workload>/rep-<n>.json``."""
    m = _RAW.match(rel)
    if not m:
        raise InputError(rel, "path", "expected <testbed>/<system>/<L1..L4[-bypass]>[+<tuning>]/<workload>/rep-<n>.json")
    g = m.groupdict()
    base = g["level"].split("-")[0]
    local, ack = _LEVEL_LOCAL[base]
    if g["level"].endswith("-bypass"):
        if g["system"] != "pulsar" or local != "async":
            raise InputError(rel, "level", f"{g['level']} exists only for Pulsar at L2/L4")
        local = "bypass"
    out = {"source": "local", "study": "000", "system": g["system"], "level": base, "local_durability": local,
           "ack": ack, "series": series_name(g["system"], ack), "testbed": g["testbed"], "tuning": g["tuning"],
           "testbed_label": g["testbed"], "repetition": int(g["rep"]), "workload_file": g["workload"]}
    w = parse_workload_id(g["workload"])
    if w:
        out.update({k: v for k, v in w.items() if k not in ("max_rate", "kind", "tags")})
        out["experiment"] = experiment_of(w)
        if w.get("kind") == "backlog":
            out["backlog_gb"] = 512.0
    else:
        out["experiment"] = "other"
    if out["experiment"] == "other":
        out["study"] = "other"
    elif out["experiment"] in OTHER_STUDIES:
        out["study"] = OTHER_STUDIES[out["experiment"]]
    return out
