"""Ship what the hosts need from the controller and prepare them (Ansible role `prepare`).

The archives are built once on the controller under $STREAMBENCH_CACHE/ship/ (the broker distributions that
`python -m systems prepare` made, the runner jar with its libraries, the host-side helper) and copied to the
hosts by Ansible; no host downloads anything.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import urllib.request
import zipfile
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


def _tar(out: Path, members: list[tuple[Path, str]], filter=None) -> Path:
    """An uncompressed tar of members (path, name in the archive), made atomically; kept while it exists. filter:
    tarfile's, applied to each member's TarInfo."""
    if out.exists():
        return out
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    with tarfile.open(tmp, "w") as t:
        for path, name in members:
            t.add(path, arcname=name, filter=filter)
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


# the Python libraries a host runs with, the versions uv.lock holds: on a client host the fault cycle's client
# (systems/faultclient.py), on a server host faultfs's FUSE binding (systems/faultfs.py, power-loss cells)
CLIENT_PACKAGES = ("confluent-kafka", "pulsar-client", "certifi", "pravega")
SERVER_PACKAGES = ("mfusepy",)
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<ver>[^-]+)(-\d[^-]*)?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")


def _fits(fname: str, py: str, machine: str, glibc: tuple[int, int] | None = None) -> tuple | None:
    """A sort key when the wheel installs on CPython `py` (cp311) on Linux `machine` (x86_64) with `glibc` (None: any),
    else None: the manylinux wheel of the oldest glibc first (the widest choice of hosts), then pure wheels."""
    m = _WHEEL.match(fname)
    if not m:
        return None
    return _tags_fit(m["py"].split("."), m["abi"].split("."), m["plat"].split("."), py, machine, glibc)


def _tags_fit(pys: list[str], abis: list[str], plats: list[str], py: str, machine: str,
              glibc: tuple[int, int] | None) -> tuple | None:
    if not (py in pys or "py3" in pys) or not (py in abis or "abi3" in abis or "none" in abis):
        return None
    if "any" in plats:
        return (1, 0, 0)
    need = [tuple(int(x) for x in re.findall(r"manylinux_(\d+)_(\d+)_" + re.escape(machine) + "$", pl)[0])
            for pl in plats if re.search(r"manylinux_\d+_\d+_" + re.escape(machine) + "$", pl)]
    need += [(2, 17) for pl in plats if pl == f"manylinux2014_{machine}"]
    if not need or (glibc is not None and min(need) > glibc):
        return None
    return (0, *min(need))


def lock_wheels(py: str, machine: str, lock: Path | None = None, packages: tuple[str, ...] = CLIENT_PACKAGES,
                glibc: tuple[int, int] | None = None) -> tuple[list[dict], list[str]]:
    """The wheels of `packages` for that Python and machine, from uv.lock ({name, version, url, sha256}), and
    the packages that have none there (Pravega's bindings: CPython 3.11 on x86_64 only)."""
    doc = tomllib.loads((lock or root() / "uv.lock").read_text())
    got, missing = [], []
    for name in packages:
        pkg = next((p for p in doc.get("package", []) if p["name"] == name), None)
        if pkg is None:
            raise TestbedError(f"uv.lock: no package {name} (env/lock)")
        fits = [(k, w) for w in pkg.get("wheels", [])
                if (k := _fits(w["url"].rsplit("/", 1)[1], py, machine, glibc))]
        if not fits:
            missing.append(name)
            continue
        w = min(fits, key=lambda kw: kw[0])[1]
        got.append({"name": name, "version": pkg["version"], "url": w["url"], "sha256": w["hash"].split(":", 1)[1]})
    return got, missing


def _fetch_wheel(w: dict) -> Path:
    """The wheel in $STREAMBENCH_CACHE/wheels, downloaded once and checked against uv.lock's sha256."""
    d = cache_dir() / "wheels"
    d.mkdir(parents=True, exist_ok=True)
    out = d / w["url"].rsplit("/", 1)[1]
    if out.is_file() and hashlib.sha256(out.read_bytes()).hexdigest() == w["sha256"]:
        return out
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        with urllib.request.urlopen(w["url"], timeout=120) as r, open(tmp, "wb") as f:
            while chunk := r.read(1 << 20):
                f.write(chunk)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise TestbedError(f"uv.lock: {w['name']} {w['version']}: cannot download {w['url']}: {e}") from None
    got = hashlib.sha256(tmp.read_bytes()).hexdigest()
    if got != w["sha256"]:
        tmp.unlink(missing_ok=True)
        raise TestbedError(f"uv.lock: {w['name']} {w['version']}: {out.name} has sha256 {got}, the lock says "
                           f"{w['sha256']}")
    os.replace(tmp, out)
    return out


def installed_files(name: str, version: str, py: str, machine: str,
                    glibc: tuple[int, int] | None) -> list[tuple[Path, str]] | None:
    """The files of package `name` as installed in this interpreter's environment ((path, name in a wheel)), when it
    is the lock's version and its wheel's tags fit the host (CPython `py` on `machine` with `glibc`); else None. The
    environment was installed from uv.lock (hash-checked), so these are that wheel's contents: a host like this
    machine needs no download (the lab's controller namespace has no route to the index)."""
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None
    if dist.version != version or not dist.files:
        return None
    tags = [line.split(":", 1)[1].strip() for line in (dist.read_text("WHEEL") or "").splitlines()
            if line.startswith("Tag:")]
    if not any(_tags_fit(*(part.split(".") for part in t.split("-")), py, machine, glibc)
               for t in tags if t.count("-") == 2):
        return None
    out = []
    for f in dist.files:
        rel = str(f)
        if rel.startswith("..") or "__pycache__" in rel or rel.endswith(".pyc"):
            continue  # scripts outside site-packages, byte code
        out.append((Path(dist.locate_file(f)), rel))
    return out


def _this_python() -> tuple[str, str]:
    return f"cp{sys.version_info[0]}{sys.version_info[1]}", platform.machine()


def py_archive(py: str, machine: str, packages: tuple[str, ...] = CLIENT_PACKAGES,
               glibc: tuple[int, int] | None = None) -> dict:
    """A tar of `packages` unpacked for CPython `py` on `machine` with `glibc` (a directory put on PYTHONPATH, no pip
    or venv needed on the host), with a marker named by their sources; what has no wheel is listed. A package this
    environment holds at the lock's version, with tags that fit the host, is copied from here; any other comes
    from its wheel in uv.lock (downloaded once, sha256 checked)."""
    wheels, missing = lock_wheels(py, machine, packages=packages, glibc=glibc)
    here = {w["name"]: installed_files(w["name"], w["version"], py, machine, glibc) for w in wheels} \
        if (py, machine) == _this_python() else {}
    source = " ".join(f"installed:{w['name']}=={w['version']}" if here.get(w["name"]) else w["sha256"] for w in wheels)
    tag = hashlib.sha256(f"{py} {machine} {glibc} {source}".encode()).hexdigest()[:12]
    marker = f".sb-py-{tag}"
    out = ship_dir() / f"py-{py}-{machine}-{tag}.tar"
    if not out.exists():
        with tempfile.TemporaryDirectory(dir=ship_dir()) as tmp:
            for w in wheels:
                files = here.get(w["name"])
                if files:
                    for path, rel in files:
                        dest = Path(tmp) / rel
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(path, dest)
                    continue
                with zipfile.ZipFile(_fetch_wheel(w)) as z:
                    z.extractall(tmp)
            (Path(tmp) / marker).write_text(" ".join(f"{w['name']}=={w['version']}" for w in wheels) + "\n")
            for so in Path(tmp).rglob("*.so*"):
                so.chmod(0o755)
            _tar(out, [(Path(tmp), ".")])
    return {"tar": str(out), "marker": marker, "missing": missing}


def host_pythons(inv: Inventory) -> dict[str, dict]:
    """Per host: its python3's CPython tag, machine and glibc (one ssh each), and the archive of its role's
    libraries."""
    out, made = {}, {}
    for h in inv.hosts:
        packages = (CLIENT_PACKAGES if "client" in h.roles else ()) + (SERVER_PACKAGES if "server" in h.roles else ())
        res = remote.ssh(h, "python3 -c 'import sys, platform; print(\"cp%d%d\" % sys.version_info[:2], "
                            "platform.machine(), platform.libc_ver()[1] or \"0.0\")'", timeout=120)
        try:
            py, machine, libc = res.stdout.split()
            glibc = tuple(int(x) for x in libc.split(".")[:2])
        except ValueError:
            raise TestbedError(f"host {h.name}: python3 did not say its version: {res.stdout.strip()[:80]!r}") from None
        key = (py, machine, glibc, packages)
        if key not in made:
            made[key] = py_archive(py, machine, packages, glibc)
        out[h.name] = made[key]
    return out


def hostside_sources() -> dict[str, Path]:
    """The host-side helper's files on the controller, by the keys of HOSTSIDE_LAYOUT."""
    return {"sbnode": HERE / "hostside" / "sbnode.py",
            "proc": root() / "systems" / "proc.py",
            "ready": root() / "systems" / "ready.py",
            "faulthook": root() / "systems" / "faulthook.py",
            "faultclient": root() / "systems" / "faultclient.py",
            "faultfs": root() / "systems" / "faultfs.py",
            "shim": HERE / "hostside" / "util_shim.py",
            "init": HERE / "hostside" / "__init__.py",
            "kafkacheck": root() / "systems" / "kafka" / "check" / "KafkaVerifySnapshot.java"}


# where prepare puts the host-side helper's files under <workDir>/lib (hostside_archive lays them out so)
HOSTSIDE_LAYOUT = {"sbnode": "sbnode.py", "proc": "sbhost/proc.py", "ready": "sbhost/ready.py",
                   "faulthook": "sbhost/faulthook.py", "faultclient": "sbhost/faultclient.py",
                   "faultfs": "sbhost/faultfs.py", "shim": "sbhost/util.py", "init": "sbhost/__init__.py",
                   "kafkacheck": "KafkaVerifySnapshot.java"}


def hostside_files(server: bool) -> list[tuple[Path, str]]:
    """(controller file, path under <workDir>/lib) of what prepare ships to a host: the host-side helper, and on a
    server the hardware probes (hw-probes' hwprobe package, standard library only)"""
    src = hostside_sources()
    files = [(src[k], rel) for k, rel in HOSTSIDE_LAYOUT.items()]
    if server:
        pkg = root() / "hw-probes" / "hwprobe"
        files += [(f, "hwprobe/" + f.relative_to(pkg).as_posix()) for f in sorted(pkg.rglob("*.py"))]
    return files


def _shipped_file(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.mode, info.uid, info.gid, info.uname, info.gname = 0o644, 0, 0, "", ""
    return info


def hostside_archive(server: bool) -> str:
    """One tar of hostside_files (files 0644, owner 0, the files' own times), named by its contents: prepare unpacks
    it under <workDir>/lib in one step instead of copying file by file"""
    files = hostside_files(server)
    h = hashlib.sha256()
    for path, rel in files:
        h.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    out = ship_dir() / f"hostside-{'server' if server else 'client'}-{h.hexdigest()[:12]}.tar"
    return str(_tar(out, files, filter=_shipped_file))


def ship_vars(systems=SYSTEMS, with_runner: bool = True, shared_fs: bool = False,
              host_py: dict | None = None) -> dict:
    return {"sb_shared_fs": shared_fs, "sb_host_py": host_py or {}, "sb_ship": {
        "hostside": {"server": hostside_archive(server=True), "client": hostside_archive(server=False)},
        "dists": [dist_archive(s) for s in systems],
        "runner": runner_archive() if with_runner else None}}


def install_hostside(lib: Path) -> Path:
    """The host-side helper laid out under lib as prepare ships it (tests and benches run it from there)."""
    for path, rel in hostside_files(server=False):
        dest = Path(lib) / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, dest)
    return Path(lib)


def prepare(inv: Inventory, log: Path, systems=SYSTEMS, with_runner: bool = True) -> None:
    shared = bool(inv.provider.get("sharedFilesystem"))
    host_py = host_pythons(inv) if with_runner else {}
    remote.playbook(inv, "prepare", ship_vars(systems, with_runner, shared, host_py), log=log, timeout=1800)


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
