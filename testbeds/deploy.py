"""Ship what the hosts need from the controller and prepare them (Ansible role `prepare`).

The archives are built once on the controller under $STREAMBENCH_CACHE/ship/ (the broker distributions that
`python -m systems prepare` made, the runner jar with its libraries, the host-side helper) and copied to the
hosts by Ansible; no host downloads anything.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import tarfile
from pathlib import Path

from systems import dist
from systems.util import versions

from . import remote
from .inventory import Inventory
from .util import TestbedError, cache_dir, root

HERE = Path(__file__).resolve().parent
SYSTEMS = ("kafka", "pulsar", "pravega")


def ship_dir() -> Path:
    d = cache_dir() / "ship"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _tar(out: Path, members: list[tuple[Path, str]]) -> Path:
    """An uncompressed tar of members (path, name in the archive), made atomically; kept while it exists."""
    if out.exists():
        return out
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    with tarfile.open(tmp, "w") as t:
        for path, name in members:
            t.add(path, arcname=name)
    os.replace(tmp, out)
    return out


def dist_archive(system: str) -> dict[str, str]:
    d = dist.require_dist(system)
    name = d.name  # <system>-<version>
    marker = d / ".streambench-dist.json"
    tag = hashlib.sha256(marker.read_bytes()).hexdigest()[:12]
    return {"name": name, "dir": str(d), "tar": str(_tar(ship_dir() / f"{name}-{tag}.tar", [(d, name)]))}


def runner_archive() -> dict[str, str]:
    r = root() / "runner"
    jar = r / "target" / "omb-runner.jar"
    if not jar.is_file() or not (r / "target" / "lib").is_dir():
        raise TestbedError(f"{jar}: runner not built (mvn -q -f runner/pom.xml package)")
    h = hashlib.sha256(jar.read_bytes())
    for p in sorted((r / "target" / "lib").iterdir()):
        h.update(p.name.encode())
    tag = h.hexdigest()[:12]
    marker = f".sb-runner-{tag}"
    mk = ship_dir() / marker
    mk.write_text(tag + "\n")
    tar = _tar(ship_dir() / f"runner-{tag}.tar",
               [(jar, "omb-runner.jar"), (r / "target" / "lib", "lib"), (mk, marker)])
    return {"tar": str(tar), "marker": marker}


def ship_vars(systems=SYSTEMS, with_runner: bool = True, shared_fs: bool = False) -> dict:
    return {"sb_shared_fs": shared_fs, "sb_ship": {
        "hostside": {"sbnode": str(HERE / "hostside" / "sbnode.py"),
                     "proc": str(root() / "systems" / "proc.py"),
                     "ready": str(root() / "systems" / "ready.py"),
                     "faulthook": str(root() / "systems" / "faulthook.py"),
                     "shim": str(HERE / "hostside" / "util_shim.py"),
                     "init": str(HERE / "hostside" / "__init__.py"),
                     "kafkacheck": str(root() / "systems" / "kafka" / "check" / "KafkaVerifySnapshot.java"),
                     "hwprobe": str(root() / "hw-probes" / "hwprobe")},
        "dists": [dist_archive(s) for s in systems],
        "runner": runner_archive() if with_runner else None}}


def prepare(inv: Inventory, log: Path, systems=SYSTEMS, with_runner: bool = True) -> None:
    shared = bool(inv.provider.get("sharedFilesystem"))
    remote.playbook(inv, "prepare", ship_vars(systems, with_runner, shared), log=log, timeout=1800)


def git_revision() -> tuple[str, bool | None]:
    try:
        rev = subprocess.run(["git", "-C", str(root()), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(root()), "status", "--porcelain", "--untracked-files=no",
                                     "--", "runner"], capture_output=True, text=True, timeout=10).stdout.strip())
        return rev, dirty
    except (OSError, subprocess.TimeoutExpired):
        return "", None


__all__ = ["prepare", "ship_vars", "versions", "git_revision"]
