"""Hardware probes on every server host of an inventory: hw-probes' own probes (dd, dd with fdatasync, fio
sequential write, fio fsync latency, and the host facts) run on the host, on each of its data directories.

  python -m testbeds probes --inventory F --out data/raw/<testbed>/probes [--config env/config.yaml] [--summary S]

Results: <out>/<host>/<probe>-<disk role>.json and <out>/<host>/host.json (the hw-probes format), each with
an added `inventory` block (the inventory file, testbed, id, the host's name, roles and address). The probed
facts are written back into the inventory (hosts[i].facts). The hosts are probed one after another (on the
lab they share one disk). A failure names the host; nothing partial is left in <out>/<host>.
"""
from __future__ import annotations

import json
import posixpath
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

from . import remote
from .inventory import DISK_ROLES, Host, Inventory
from .util import TestbedError, atomic_write_json, atomic_write_text

DEFAULTS = {"dd_size_mb": 256, "dd_bs_kb": 1024, "fio_size_mb": 256, "fio_bs": "1M", "fio_fsync_size_mb": 16,
            "fio_fsync_bs": "4k", "fio_runtime_s": 30, "timeout_s": 1800}


def probe_commands(h: Host, hw: dict[str, Any], rdir: str) -> list[tuple[str, list[str]]]:
    """(result file name, hwprobe arguments) for every probe of host h."""
    c = {**DEFAULTS, **hw}
    dirs: dict[str, str] = {}
    for role in DISK_ROLES:  # one probe set per distinct directory
        d = h.data_dir(role)
        if d not in dirs.values():
            dirs[role] = d
    out = [("host.json", ["host", "--dir", next(iter(dirs.values())), "--host", h.name, "--out", f"{rdir}/host.json"])]
    for role, d in dirs.items():
        common = ["--dir", posixpath.join(d, "probe"), "--create", "--host", h.name]
        to = ["--timeout-s", str(c["timeout_s"])]
        out += [
            (f"dd-{role}.json", ["dd", *common, "--size-mb", str(c["dd_size_mb"]), "--bs-kb", str(c["dd_bs_kb"]), *to,
                                 "--out", f"{rdir}/dd-{role}.json"]),
            (f"dd-fdatasync-{role}.json", ["dd", "--fdatasync", *common, "--size-mb", str(c["dd_size_mb"]),
                                           "--bs-kb", str(c["dd_bs_kb"]), *to, "--out", f"{rdir}/dd-fdatasync-{role}.json"]),
            (f"fio-seqwrite-{role}.json", ["fio-seq", *common, "--size-mb", str(c["fio_size_mb"]), "--bs", c["fio_bs"],
                                           "--runtime-s", str(c["fio_runtime_s"]), *to,
                                           "--out", f"{rdir}/fio-seqwrite-{role}.json"]),
            (f"fio-fsync-{role}.json", ["fio-fsync", *common, "--size-mb", str(c["fio_fsync_size_mb"]),
                                        "--bs", c["fio_fsync_bs"], "--runtime-s", str(c["fio_runtime_s"]), *to,
                                        "--out", f"{rdir}/fio-fsync-{role}.json"]),
        ]
    return out


def probe_host(inv: Inventory, h: Host, hw: dict[str, Any], out: Path, log=print) -> list[Path]:
    rdir = posixpath.join(h.work_dir, "probes")
    lib = posixpath.join(h.work_dir, "lib")
    cmds = probe_commands(h, hw, rdir)
    script = [f"set -e; rm -rf {shlex.quote(rdir)}; mkdir -p {shlex.quote(rdir)}"]
    script += [f"PYTHONPATH={shlex.quote(lib)} python3 -m hwprobe {shlex.join(args)} 2>>{rdir}/probes.log"
               for _, args in cmds]
    res = remote.ssh(h, "; ".join(script), timeout=float({**DEFAULTS, **hw}["timeout_s"]) * len(cmds), check=False)
    if res.returncode != 0:
        why = remote.ssh(h, f"tail -n 3 {rdir}/probes.log", check=False).stdout.strip().splitlines()
        raise TestbedError(f"host {h.name}: probes failed (exit {res.returncode}): {why[-1] if why else ''}")
    dest = out / h.name
    with tempfile.TemporaryDirectory(prefix=f".{h.name}-", dir=out) as tmp:
        files = []
        for name, _ in cmds:
            loc = Path(tmp) / name
            remote.scp_from(h, f"{rdir}/{name}", loc)
            doc = json.loads(loc.read_text())
            doc["inventory"] = {**inv.summary(), "host": {"name": h.name, "roles": list(h.roles),
                                                          "address": h.address}}
            atomic_write_text(loc, json.dumps(doc, indent=2) + "\n")
            files.append(name)
        shutil.rmtree(dest, ignore_errors=True)
        Path(tmp).rename(dest)  # all of a host's results appear at once
    remote.ssh(h, f"rm -rf {shlex.quote(rdir)}", check=False)
    log(f"probes of {h.name}: {len(files)} files in {dest}")
    return [dest / f for f in files]


def write_facts(inv: Inventory, out: Path) -> None:
    """hosts[i].facts from each probed host's host.json (the inventory records what the probes found)."""
    doc = json.loads(inv.path.read_text())
    for hd in doc["hosts"]:
        f = out / hd["name"] / "host.json"
        if f.is_file():
            r = json.loads(f.read_text()).get("result", {})
            hd["facts"] = {k: r[k] for k in ("cpuModel", "cores", "memBytes", "kernel", "os") if k in r}
    atomic_write_json(inv.path, doc)


def run(inv: Inventory, out: Path, hw: dict[str, Any], log=print, summary: Path | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for h in inv.servers:
        probe_host(inv, h, hw, out, log=log)
    write_facts(inv, out)
    if summary is not None:  # one file naming what was probed (the aws DAG's per-fleet target)
        files = sorted(str(f) for h in inv.servers for f in (out / h.name).glob("*.json"))
        atomic_write_json(summary, {"inventory": str(inv.path), "hosts": [h.name for h in inv.servers],
                                    "files": files})


def add_parser(sub) -> None:
    p = sub.add_parser("probes", help="dd/fio on every server host's data directories")
    p.add_argument("--inventory", required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--config", help="YAML with a hw_probes section (sizes); default: hw-probes' defaults")
    p.add_argument("--summary", type=Path, help="also write a JSON naming the hosts and the result files")
    p.set_defaults(func=_main)


def _main(a, load_inv, log) -> int:
    inv = load_inv(a.inventory)
    hw = {}
    if a.config:
        import yaml
        hw = (yaml.safe_load(Path(a.config).read_text()) or {}).get("hw_probes", {}) or {}
    run(inv, a.out, {k: v for k, v in hw.items() if k in DEFAULTS}, log=log, summary=a.summary)
    return 0
