"""python -m systems {prepare,up,verify,status,down} (see systems/README.md)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import cluster, dist
from .durability import DurabilityError
from .util import SystemsError, load_config


def _log(msg: str) -> None:
    print(f"[systems] {msg}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m systems",
                                 description="Start, verify and stop real Kafka/Pulsar clusters on loopback.")
    ap.add_argument("--config", help="config file with a `systems:` section (default env/config.yaml)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="materialise a distribution under $STREAMBENCH_CACHE/dist")
    p.add_argument("system")
    p = sub.add_parser("up", help="start a fresh cluster at a durability level, verify it, write cluster.json")
    p.add_argument("system")
    p.add_argument("--level", required=True)
    p.add_argument("--tuning", default="stock")
    p.add_argument("--dir", required=True, type=Path)
    p.add_argument("--hosts", nargs="+", default=["127.0.0.1"],
                   help="hosts to run on (only 127.0.0.1 is implemented); space or comma separated")
    p.add_argument("--faultfs", action="store_true",
                   help="put every data directory on a faultfs mount (power-loss emulation, systems/faultfs.py)")
    p.add_argument("--faults", action="store_true",
                   help="a cluster for fault runs (Pulsar bookies get config systems.pulsar.fault_bookie)")
    for name, hlp in (("verify", "re-read the effective settings of a running cluster"),
                      ("status", "print the state of the cluster in a run directory (JSON)"),
                      ("down", "stop every process of the run directory; no process or port remains")):
        p = sub.add_parser(name, help=hlp)
        p.add_argument("--dir", required=True, type=Path)
        if name == "down":
            p.add_argument("--purge", action="store_true",
                           help="then delete the cluster's data directories (its logs and cluster.json stay)")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "prepare":
            dist.prepare(a.system, log=_log)
            return 0
        if a.cmd == "status":
            print(json.dumps(cluster.status(a.dir), indent=2))
            return 0
        cfg = load_config(a.config)
        if a.cmd == "up":
            hosts = [h for x in a.hosts for h in x.split(",") if h]
            cluster.up(a.system, a.level, a.dir, tuning=a.tuning, hosts=hosts, cfg=cfg, log=_log,
                       faultfs=a.faultfs, faults=a.faults)
        elif a.cmd == "verify":
            cluster.verify(a.dir, cfg=cfg, log=_log)
        elif a.cmd == "down":
            r = cluster.down(a.dir, cfg=cfg, log=_log)
            if a.purge:
                freed = cluster.purge_data(a.dir)
                _log(f"down: deleted the cluster's data ({freed / 1e9:.2f} GB)")
            _log(f"down: stopped {len(r['stopped'])} node(s)"
                 + (f", killed {', '.join(r['killed'])}" if r["killed"] else ""))
        return 0
    except (SystemsError, DurabilityError) as e:
        print(f"systems: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("systems: interrupted (everything started was stopped)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
