"""Materialise the broker distributions from Maven Central into $STREAMBENCH_CACHE/dist/<system>-<version>/.

kafka:  `mvn dependency:copy-dependencies` on systems/kafka/pom.xml -> libs/*.jar
pravega: the same on systems/pravega/pom.xml -> libs/*.jar (controller, segment store, BookKeeper, ZooKeeper)
pulsar: `mvn dependency:copy@fetch-dist` on systems/pulsar/pom.xml -> the official bin tarball, whose sha512
        must match systems/pulsar/dist.sha512, unpacked (bin/, conf/, lib/ ...).
Both are built in a temporary directory next to the target and renamed into place, so a reader never
sees half a distribution; a directory with a complete marker file is left alone (idempotent).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from .util import SystemsError, atomic_write_json, cache_dir, root, versions

MARKER = ".streambench-dist.json"
SYSTEMS = ("kafka", "pulsar", "pravega")


def dist_dir(system: str) -> Path:
    return cache_dir() / "dist" / f"{system}-{versions()[system]}"


def require_dist(system: str) -> Path:
    """The prepared distribution directory, or a clear error saying how to make it."""
    d = dist_dir(system)
    if not (d / MARKER).is_file():
        raise SystemsError(f"{system} distribution missing at {d}: run `python -m systems prepare {system}`")
    return d


def _maven_env() -> dict[str, str]:
    env = dict(os.environ)
    if "maven.repo.local" not in env.get("MAVEN_OPTS", ""):
        env["MAVEN_OPTS"] = (env.get("MAVEN_OPTS", "") + f" -Dmaven.repo.local={cache_dir() / 'm2'}").strip()
    return env


def _mvn(args: list[str], log: Path) -> None:
    if shutil.which("mvn") is None:
        raise SystemsError("mvn not found on PATH (install maven, see env/apt-packages.txt)")
    with open(log, "ab") as lf:
        r = subprocess.run(["mvn", "-B", *args], stdout=lf, stderr=subprocess.STDOUT, env=_maven_env(),
                           cwd=root())
    if r.returncode != 0:
        tail = Path(log).read_text(errors="replace").splitlines()[-15:]
        raise SystemsError(f"mvn {' '.join(args)} failed (exit {r.returncode}); log {log}:\n" + "\n".join(tail))


def pinned_sha512(version: str, path: Path | None = None) -> str:
    path = path or root() / "systems" / "pulsar" / "dist.sha512"
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#") and parts[0] == version:
            return parts[1].lower()
    raise SystemsError(f"{path}: no sha512 pinned for Pulsar {version}")


def sha512_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha512").hexdigest()


def _compile_patch(out: Path) -> int:
    """javac systems/pravega/patch/**.java against libs/ into out/patch (put first on the classpath of the controller
    and the bookies: the loopback gRPC server and the bookie's loopback HTTP server, see systems/pravega/README.md)."""
    src = sorted(str(p) for p in (root() / "systems" / "pravega" / "patch").rglob("*.java"))
    javac = shutil.which("javac")
    if javac is None:
        raise SystemsError("javac not found on PATH (a JDK 17 is needed to prepare pravega)")
    r = subprocess.run([javac, "-nowarn", "--release", "17", "-cp", str(out / "libs") + "/*", "-d", str(out / "patch"),
                        *src], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemsError(f"javac of systems/pravega/patch failed: {r.stderr.strip().splitlines()[0]}")
    return sum(1 for _ in (out / "patch").rglob("*.class"))


def prepare(system: str, log=print) -> Path:
    if system not in SYSTEMS:
        raise SystemsError(f"unknown system {system!r} (known: {', '.join(SYSTEMS)})")
    final = dist_dir(system)
    if (final / MARKER).is_file():
        log(f"{system}: {final} already prepared")
        return final
    version = versions()[system]
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    t0 = time.monotonic()
    try:
        mvnlog = tmp / "mvn.log"
        pom = root() / "systems" / system / "pom.xml"
        if system in ("kafka", "pravega"):
            out = tmp / "dist"
            _mvn(["-q", "-f", str(pom), "dependency:copy-dependencies", f"-DoutputDirectory={out / 'libs'}"],
                 mvnlog)
            jars = sorted(p.name for p in (out / "libs").glob("*.jar"))
            need = (["kafka_2.13-"] if system == "kafka" else
                    ["pravega-controller-", "pravega-segmentstore-server-host-", "bookkeeper-server-", "zookeeper-"])
            for prefix in need:
                if not any(j.startswith(prefix) for j in jars):
                    raise SystemsError(f"{pom}: copy-dependencies produced no {prefix.rstrip('-')} jar")
            info = {"system": system, "version": version, "jars": len(jars)}
            if system == "pravega":
                info["patchClasses"] = _compile_patch(out)
        else:
            dl = tmp / "download"
            _mvn(["-q", "-f", str(pom), "dependency:copy@fetch-dist", f"-Dpulsar.dist.dir={dl}"], mvnlog)
            tarball = dl / f"apache-pulsar-{version}-bin.tar.gz"
            digest = sha512_file(tarball)
            want = pinned_sha512(version)
            if digest != want:
                raise SystemsError(f"{tarball}: sha512 {digest[:16]}... differs from the pinned {want[:16]}... "
                                   f"(systems/pulsar/dist.sha512)")
            unpack = tmp / "unpack"
            unpack.mkdir()
            r = subprocess.run(["tar", "-xzf", str(tarball), "-C", str(unpack)], capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemsError(f"{tarball}: tar failed: {r.stderr.strip()}")
            out = unpack / f"apache-pulsar-{version}"
            if not (out / "bin" / "pulsar").is_file():
                raise SystemsError(f"{tarball}: no apache-pulsar-{version}/bin/pulsar inside")
            tarball.unlink()
            info = {"system": system, "version": version, "sha512": digest}
        info["preparedSeconds"] = round(time.monotonic() - t0, 1)
        atomic_write_json(out / MARKER, info)
        if final.exists():  # an incomplete leftover without marker
            shutil.rmtree(final)
        os.rename(out, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"{system}: prepared {final} in {time.monotonic() - t0:.1f} s")
    return final
