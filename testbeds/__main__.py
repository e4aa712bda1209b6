"""python -m testbeds: the lab testbed and the multi-host path (see testbeds/README.md).

  lab up|down|status|exec       the lab of network-namespace hosts (testbeds/lab.py)
  adopt --inventory F --out C   check a hand-written inventory of the user's own machines and write the working
                                copy C the workflow reads (`--profile hosts`)
  ping   --inventory F          Ansible ping of every host
  prepare --inventory F         directories, limits, JDK, distributions, runner (Ansible role prepare)
  cluster up|verify|status|down --inventory F ...   a cluster on the server hosts (testbeds/cluster.py)
  run    --inventory F ...      the runner on every client host, merged (testbeds/runner.py)

Exit codes: 0 ok, 2 a one-line error `testbeds: error: ...` naming the host (and the inventory file and field),
130 interrupted.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

from .inventory import InventoryError
from .util import TestbedError


def _log(msg: str) -> None:
    print(f"[testbeds] {msg}", file=sys.stderr, flush=True)


def _inv(path: str):
    from . import inventory, util
    inv = inventory.load(path)
    util.reexec_in(inv.provider.get("controllerNetns"))
    return inv


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testbeds", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    lab = sub.add_parser("lab", help="the lab testbed")
    lab.add_argument("action", choices=["up", "down", "status", "exec"])
    lab.add_argument("--id", required=True, help="lab id ([a-z0-9]{1,6}); part of every name the lab makes")
    lab.add_argument("--servers", type=int, default=3)
    lab.add_argument("--clients", type=int, default=1)
    lab.add_argument("--subnet", default="10.77.0.0/24")
    lab.add_argument("--dir", type=Path, help="base directory of labs (default $STREAMBENCH_CACHE/lab)")
    lab.add_argument("--inventory-out", type=Path, help="also copy the inventory here")
    lab.add_argument("--login-user", action="store_true",
                     help="reach the hosts as a user of the lab's own (sbl<id>), not root, escalating with sudo as on "
                          "a rented machine; removed with the lab")
    lab.add_argument("--sudo", choices=["nopasswd", "none"], default="nopasswd",
                     help="with --login-user: passwordless sudo (default) or none")
    lab.add_argument("--ec2-like", action="store_true",
                     help="hosts on a private network the controller has no route to, reached only at public "
                          "addresses on tcp/22, host keys learnt on first contact (testbeds/lab.py)")
    lab.add_argument("rest", nargs="*", help="exec: -- CMD...")

    p = sub.add_parser("adopt", help="check a hand-written inventory and write its working copy")
    p.add_argument("--inventory", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)

    p = sub.add_parser("ping", help="reach every host with Ansible")
    p.add_argument("--inventory", required=True)
    p.add_argument("--log", type=Path, default=None)

    p = sub.add_parser("prepare", help="prepare every host (Ansible role prepare)")
    p.add_argument("--inventory", required=True)
    p.add_argument("--systems", default="kafka,pulsar,pravega")
    p.add_argument("--log", type=Path, default=None)

    from . import cluster as _c, probes as _p, runner as _r
    _c.add_parser(sub)
    _r.add_parser(sub)
    _p.add_parser(sub)

    a = ap.parse_args(argv)

    def _term(signum, frame):  # SIGTERM/SIGHUP (a deadline, a killed workflow): clean up as on Ctrl-C
        raise KeyboardInterrupt(f"signal {signum}")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _term)
    try:
        if a.cmd == "lab":
            from . import lab as labm
            if a.action == "up":
                path = labm.up(a.id, a.servers, a.clients, a.subnet, a.dir, log=_log, login_user=a.login_user,
                               sudo=a.sudo, ec2_like=a.ec2_like)
                if a.inventory_out:
                    from .util import atomic_write_text
                    atomic_write_text(a.inventory_out, path.read_text())
                print(path)
            elif a.action == "down":
                labm.down(a.id, a.dir, log=_log)
            elif a.action == "status":
                print(json.dumps(labm.status(a.id, a.dir), indent=1))
            else:
                rest = a.rest[1:] if a.rest[:1] == ["--"] else a.rest
                return labm.exec_in_controller(a.id, rest, a.dir)
            return 0
        if a.cmd == "adopt":
            from . import inventory
            inv = inventory.load(a.inventory)
            from .util import atomic_write_text
            atomic_write_text(a.out, json.dumps(inventory.working_copy(inv), indent=1) + "\n")
            _log(f"{a.inventory}: {len(inv.servers)} server and {len(inv.clients)} client host(s); working copy {a.out}")
            return 0
        if a.cmd == "ping":
            from . import remote
            inv = _inv(a.inventory)
            log = a.log or Path(inv.path).parent / "logs" / "ping.log"
            remote.playbook(inv, "ping", log=log, timeout=120)
            _log(f"{len(inv.hosts)} host(s) answer: {', '.join(h.name for h in inv.hosts)}")
            return 0
        if a.cmd == "prepare":
            from . import deploy
            inv = _inv(a.inventory)
            t0 = time.monotonic()
            deploy.prepare(inv, a.log or Path(inv.path).parent / "logs" / "prepare.log",
                           systems=[s for s in a.systems.split(",") if s])
            _log(f"{len(inv.hosts)} host(s) prepared in {time.monotonic() - t0:.1f} s")
            return 0
        return a.func(a, _inv, _log)
    except (TestbedError, InventoryError) as e:
        print(f"testbeds: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("testbeds: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
