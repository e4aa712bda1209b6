"""The Maven lock: every artifact the build and the broker distributions need, one file each.

    python -m env.mavenlock write              # resolve against Maven Central in a fresh repository -> env/maven-lock.json
    python -m env.mavenlock check [--repo R]   # every locked file present in R (default $STREAMBENCH_CACHE/m2) has its sha256
    python -m env.mavenlock trace TRACE CMD... # run CMD (a Maven build) under strace, its reads into TRACE
    python -m env.mavenlock covers TRACE...    # every artifact a traced build read under R is in the lock

env/maven-lock.json lists, for each file (jar, pom, tarball...): its coordinates, its path in a Maven
repository, its URL on Maven Central and the sha256 of its bytes; plus, for each version range the build
resolved, the versions the lock holds (`metadata`). `write` runs exactly the Maven goals of the project
(GOALS: what env/shell, env/test and `python -m systems prepare` run) against Central with an empty local
repository and records what landed there. Both paths read the lock: env/shell checks its repository
against it (`check`, naming the artifact on a mismatch) and the flake builds its offline repository with
one fixed-output fetch per entry. Standard library only: env/shell runs it before the venv exists.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "env" / "maven-lock.json"
CENTRAL = "https://repo.maven.apache.org/maven2"
# this project's own modules: built, never downloaded
OWN_GROUP = "org/streambench/"
# files Maven keeps beside the artifacts (bookkeeping, checksums it fetched, partial downloads)
SKIP_NAMES = {"_remote.repositories", "resolver-status.properties"}
SKIP_SUFFIXES = (".lastUpdated", ".sha1", ".md5", ".sha256", ".sha512", ".asc", ".part", ".lock")
METADATA = re.compile(r"maven-metadata-[\w.-]+\.xml$")

# (pom relative to ROOT, Maven arguments): the goals whose downloads the lock must hold
GOALS = [
    ("systems/kafka/pom.xml", ["dependency:go-offline"]),
    ("systems/pulsar/pom.xml", ["dependency:go-offline"]),
    ("systems/pravega/pom.xml", ["dependency:go-offline"]),
    ("runner/pom.xml", ["dependency:go-offline"]),
    ("systems/kafka/pom.xml", ["package"]),
    ("systems/pulsar/pom.xml", ["package"]),
    ("systems/pravega/pom.xml", ["package"]),
    ("runner/pom.xml", ["package"]),
    ("systems/kafka/pom.xml", ["dependency:copy-dependencies", "-DoutputDirectory={out}/kafka-libs"]),
    ("systems/pulsar/pom.xml", ["dependency:copy@fetch-dist", "-Dpulsar.dist.dir={out}/pulsar-dist"]),
    ("systems/pravega/pom.xml", ["dependency:copy-dependencies", "-DoutputDirectory={out}/pravega-libs"]),
]


class LockError(Exception):
    """One line naming the file (and the artifact) at fault."""


def sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def is_artifact(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return not (name in SKIP_NAMES or name.endswith(SKIP_SUFFIXES) or METADATA.fullmatch(name)
                or rel.startswith(OWN_GROUP) or name.startswith("."))


def coordinates(rel: str) -> str:
    """group:artifact:extension[:classifier]:version of a repository path, e.g.
    org/apache/pulsar/pulsar-server-distribution/4.0.8/pulsar-server-distribution-4.0.8-bin.tar.gz
    -> org.apache.pulsar:pulsar-server-distribution:tar.gz:bin:4.0.8"""
    parts = rel.split("/")
    if len(parts) < 4:
        raise LockError(f"{rel}: not a Maven repository path (group/artifact/version/file)")
    group, artifact, version, name = ".".join(parts[:-3]), parts[-3], parts[-2], parts[-1]
    stem = f"{artifact}-{version}"
    if not name.startswith(stem) or len(name) == len(stem) or name[len(stem)] not in ".-":
        raise LockError(f"{rel}: file name does not start with {stem}")
    rest = name[len(stem):]
    if rest.startswith("-"):
        classifier, _, ext = rest[1:].partition(".")
        return f"{group}:{artifact}:{ext}:{classifier}:{version}"
    return f"{group}:{artifact}:{rest[1:]}:{version}"


def artifacts_in(repo: Path) -> dict[str, Path]:
    """Repository path -> file, for every artifact file under repo."""
    out = {}
    for dirpath, _dirs, files in os.walk(repo):
        for name in files:
            p = Path(dirpath) / name
            rel = p.relative_to(repo).as_posix()
            if is_artifact(rel):
                out[rel] = p
    return dict(sorted(out.items()))


def metadata_in(repo: Path) -> list[dict]:
    """The versions of each artifact whose maven-metadata Maven fetched (version ranges), as the lock holds
    them: only the versions of that artifact that are in the repository."""
    out = []
    for p in sorted(repo.rglob("maven-metadata-*.xml")):
        rel = p.relative_to(repo).parent.as_posix()
        if rel.startswith(OWN_GROUP):
            continue
        versions = sorted(d.name for d in p.parent.iterdir() if d.is_dir())
        if versions:
            parts = rel.split("/")
            out.append({"path": rel, "groupId": ".".join(parts[:-1]), "artifactId": parts[-1], "versions": versions})
    return sorted({m["path"]: m for m in out}.values(), key=lambda m: m["path"])


def lock_entries(repo: Path) -> dict:
    entries = [{"coordinates": coordinates(rel), "path": rel, "url": f"{CENTRAL}/{rel}", "sha256": sha256_file(p)}
               for rel, p in artifacts_in(repo).items()]
    return {"comment": "written by `python -m env.mavenlock write`; read by env/shell and flake.nix",
            "repository": CENTRAL, "artifacts": entries, "metadata": metadata_in(repo)}


def load(lock: Path = LOCK) -> dict[str, dict]:
    """Repository path -> lock entry."""
    try:
        doc = json.loads(lock.read_text())
    except FileNotFoundError:
        raise LockError(f"{lock}: missing (write it with: python -m env.mavenlock write)") from None
    except json.JSONDecodeError as e:
        raise LockError(f"{lock}: not valid JSON ({e.msg}, line {e.lineno})") from None
    out = {}
    items = doc.get("artifacts") if isinstance(doc, dict) else None
    for i, a in enumerate(items if isinstance(items, list) else []):
        for field in ("coordinates", "path", "url", "sha256"):
            if not isinstance(a, dict) or not isinstance(a.get(field), str):
                raise LockError(f"{lock}: artifacts[{i}].{field} is missing or not a string")
        out[a["path"]] = a
    if not out:
        raise LockError(f"{lock}: field 'artifacts' is missing or empty")
    return out


def check(repo: Path, lock: Path = LOCK, remove_bad: bool = False) -> int:
    """Every locked file present in repo has the locked sha256; returns how many were checked. With remove_bad, a
    file that differs is removed (with its remote record) instead, and its path printed, for the caller to resolve
    it again: a download cut short or left empty (seen once under `mvn -T`: a 0-byte jar beside its right .sha1)."""
    entries = load(lock)
    n = 0
    for rel, entry in entries.items():
        p = repo / rel
        if not p.is_file():
            continue
        got = sha256_file(p)
        if got != entry["sha256"]:
            if not remove_bad:
                raise LockError(f"{entry['coordinates']}: sha256 of {p} is {got}, {lock.name} says {entry['sha256']}")
            p.unlink()
            for side in (p.with_name(p.name + ".sha1"), p.parent / "_remote.repositories"):
                side.unlink(missing_ok=True)
            print(f"removed {p} (sha256 {got}, {lock.name} says {entry['sha256']})", file=sys.stderr)
            continue
        n += 1
    return n


# the syscalls through which a build finds or reads a file of its local repository
TRACED = "open,openat,stat,lstat,newfstatat,statx,access,faccessat,faccessat2,rename,renameat,renameat2"
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def trace_command(out: Path) -> list[str]:
    """The strace prefix whose output `covers` reads."""
    return ["strace", "-f", "-qq", "-e", f"trace={TRACED}", "-o", str(out)]


def opened_artifacts(traces: list[Path], repo: Path) -> set[str]:
    """Repository paths of the artifact files that strace logs (TRACED calls) name under repo and that exist.
    (A call may be split over an `<unfinished ...>` and a `resumed>` line; a file that exists was found.)"""
    prefixes = {os.path.abspath(repo) + "/", os.path.realpath(repo) + "/"}
    found = set()
    for t in traces:
        for line in t.read_text(errors="replace").splitlines():
            for path in _QUOTED.findall(line):
                path = os.path.normpath(path)
                for pre in prefixes:
                    if path.startswith(pre):
                        rel = path[len(pre):]
                        if rel not in found and is_artifact(rel) and (repo / rel).is_file():
                            found.add(rel)
    return found


def covers(traces: list[Path], repo: Path, lock: Path = LOCK) -> int:
    """Every artifact the traced builds opened under repo is in the lock (and has its sha256)."""
    entries = load(lock)
    read = opened_artifacts(traces, repo)
    missing = sorted(read - set(entries))
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise LockError(f"{coordinates(missing[0])} ({missing[0]}): read by the build but not in {lock.name}{more}; "
                        "rewrite it with: python -m env.mavenlock write")
    for rel in sorted(read):
        got = sha256_file(repo / rel)
        if got != entries[rel]["sha256"]:
            raise LockError(f"{entries[rel]['coordinates']}: sha256 of {repo / rel} is {got}, "
                            f"{lock.name} says {entries[rel]['sha256']}")
    return len(read)


def write(lock: Path = LOCK) -> dict:
    """Run GOALS against Maven Central with an empty local repository; write the lock from what landed."""
    if shutil.which("mvn") is None:
        raise LockError("mvn not found on PATH (env/shell installs it)")
    work = Path(tempfile.mkdtemp(prefix="mavenlock-"))
    try:
        repo, out = work / "m2", work / "out"
        settings = work / "settings.xml"  # Central only, whatever the user's ~/.m2/settings.xml says
        settings.write_text(
            "<settings><mirrors><mirror><id>central</id><mirrorOf>*</mirrorOf>"
            f"<url>{CENTRAL}</url></mirror></mirrors></settings>\n")
        env = {k: v for k, v in os.environ.items() if k != "MAVEN_OPTS"}
        for pom, args in GOALS:
            cmd = ["mvn", "-B", "-q", "-Dstyle.color=never", "-s", str(settings), f"-Dmaven.repo.local={repo}",
                   "-f", str(ROOT / pom), *[a.format(out=out) for a in args]]
            print(f"mavenlock: {pom}: {' '.join(args[:1])}", file=sys.stderr)
            r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
            if r.returncode != 0:
                tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-15:])
                raise LockError(f"mvn {' '.join(args)} on {pom} failed (exit {r.returncode}):\n{tail}")
        doc = lock_entries(repo)
        tmp = lock.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        os.replace(tmp, lock)
        return doc
    finally:
        shutil.rmtree(work, ignore_errors=True)


def default_repo() -> Path:
    return Path(os.environ.get("STREAMBENCH_CACHE", ROOT / ".cache")) / "m2"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m env.mavenlock", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("write", help="resolve against Maven Central into a fresh repository and rewrite the lock")
    c = sub.add_parser("check", help="locked files present in the repository have their sha256")
    c.add_argument("--repo", type=Path, default=None)
    c.add_argument("--remove-bad", action="store_true", help="remove the files that differ (and say which) instead of failing")
    v = sub.add_parser("covers", help="every artifact the traced builds opened is in the lock")
    t = sub.add_parser("trace", help="run CMD under strace, recording what `covers` reads, into TRACE")
    t.add_argument("trace", type=Path)
    t.add_argument("command", nargs=argparse.REMAINDER)
    v.add_argument("--repo", type=Path, default=None)
    v.add_argument("traces", type=Path, nargs="+", help="output files of `strace -f -e trace=TRACED`")
    for p in (c, v):
        p.add_argument("--lock", type=Path, default=LOCK)
    a = ap.parse_args(argv)
    if a.cmd == "trace":
        cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
        if not cmd:
            ap.error("trace: no command given")
        if shutil.which("strace") is None:
            print("mavenlock: error: strace not found (env/apt-packages.txt installs it)", file=sys.stderr)
            return 1
        os.execvp("strace", trace_command(a.trace) + cmd)
    try:
        if a.cmd == "write":
            doc = write()
            print(f"wrote {LOCK.relative_to(ROOT)}: {len(doc['artifacts'])} files, {len(doc['metadata'])} version ranges")
        elif a.cmd == "check":
            n = check(a.repo or default_repo(), a.lock, remove_bad=a.remove_bad)
            print(f"{n} files match {a.lock.name}", file=sys.stderr)
        else:
            n = covers(a.traces, a.repo or default_repo(), a.lock)
            print(f"all {n} artifacts the build read are in {a.lock.name}", file=sys.stderr)
    except LockError as e:
        print(f"mavenlock: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
