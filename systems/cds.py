"""Class-data sharing (AppCDS) archives for the JVMs this machine starts again and again: env/test's.

env/test starts a Kafka node, a `kafka-storage format` and a runner JVM dozens of times each, always from the same jars,
and most of a short-lived JVM's CPU is its start-up (docs/measurements.yaml env-test-profile-68f028b: 62 % of the JVMs'
CPU in their first 30 s). A dynamic CDS archive (JDK 13+: `-XX:ArchiveClassesAtExit` writes the classes a JVM loaded,
already parsed and verified, `-XX:SharedArchiveFile` maps them at the next start) takes that parsing and verifying off
every later start.

Only when STREAMBENCH_JVM_CDS_DIR names a directory (env/test sets it; the workflow sets it for the local testbed,
`<cache>/cds`, and trains there once per runner build and Kafka distribution: workloads/rules.smk, systems_cds_train;
the other profiles start their clusters and runners exactly as before), and only for JVMs on this machine (the local placement; a host of an inventory has
its own copies of the jars, which an archive made here does not describe). An archive belongs to one java binary, one
class path (each jar's path, size and modification time: what the JVM checks before it maps the archive) and one main
class (a node's role: a broker loads other classes than the format tool); its file name holds a digest of all three, so
a rebuilt runner jar or another distribution simply has no archive yet and starts as before. A class path with a
directory or an empty entry (Pulsar's bin/pulsar puts conf/ first; Pravega's patch/) cannot be archived by the JVM and
gets nothing.

The archives are made once, by `python -m systems.cds train` (a Kafka cluster started and stopped, and a few seconds of
the runner against it, with STREAMBENCH_JVM_CDS_TRAIN set: each JVM writes its archive when it exits), which renames
one finished archive per digest into place; runner/bin/omb-run computes its own digest the same way in shell.
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CDS_ENV = "STREAMBENCH_JVM_CDS_DIR"
TRAIN_ENV = "STREAMBENCH_JVM_CDS_TRAIN"
PART = ".part"  # an archive a training JVM writes at its exit: `<digest name>.<node>.part`
LAUNCH = ".launch"  # beside it: the java binary and the class path it was written for, one per line
ROOT = Path(__file__).resolve().parents[1]


def directory() -> Path | None:
    """The archives' directory (STREAMBENCH_JVM_CDS_DIR), or None: no archive is used or made."""
    d = os.environ.get(CDS_ENV, "").strip()
    return Path(d) if d else None


def _class_path(classpath: str) -> list[Path] | None:
    """The files of a class path as the java launcher expands it (`dir/*`: the directory's jars), or None when an
    entry is one the JVM refuses to archive (an empty entry, a directory)."""
    out: list[Path] = []
    for e in classpath.split(":"):
        if not e:
            return None
        if e.endswith("/*"):
            d = Path(e[:-2])
            if d.is_dir():
                out += sorted(p for p in d.iterdir() if p.suffix.lower() == ".jar" and p.is_file())
            continue
        p = Path(e)
        if p.is_dir():
            return None
        if p.is_file():
            out.append(p)
    return out


def archive_name(java: str, classpath: str, main: str) -> str | None:
    """`<main's simple name>-<digest>`: the java binary, every class-path file's path, size and mtime, the main class."""
    files = _class_path(classpath)
    jv = shutil.which(java) or java
    if files is None or not files or not Path(jv).exists():
        return None
    h = hashlib.sha256()
    for p in [Path(jv).resolve(), *files]:
        st = p.stat()
        h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    h.update(main.encode())
    return f"{main.rsplit('.', 1)[-1]}-{h.hexdigest()[:20]}"


def options(cmd: list[str], node: str) -> list[str]:
    """The CDS options for one JVM command line `[java, ..., -cp, CP, main, ...]` started on this machine: map its
    archive when there is one; in training, write one at exit; else nothing."""
    d = directory()
    if d is None:
        return []
    try:
        i = cmd.index("-cp")
        cp, main = cmd[i + 1], cmd[i + 2]
    except (ValueError, IndexError):
        return []
    name = archive_name(cmd[0], cp, main)
    if name is None:
        return []
    archive = d / f"{name}.jsa"
    if archive.is_file():
        return [f"-XX:SharedArchiveFile={archive}"]
    if os.environ.get(TRAIN_ENV):
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{name}{LAUNCH}").write_text(f"{cmd[0]}\n{cp}\n")  # what promote() checks the archive against
        return [f"-XX:ArchiveClassesAtExit={d / f'{name}.{node}{PART}'}"]
    return []


def usable(archive: Path, java: str, classpath: str) -> bool:
    """The JVM maps the archive for this class path (-Xshare:on: it exits non-zero when it cannot, where the default
    would quietly start without it): a part cut short by a SIGKILL, or one the JVM declined to write whole, is not."""
    try:
        r = subprocess.run([java, "-Xshare:on", f"-XX:SharedArchiveFile={archive}", "-cp", classpath, "-version"],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def promote(d: Path) -> list[Path]:
    """After every training JVM has exited: per archive name, the largest part that the JVM maps (`usable`; the JVM
    that loaded the most) becomes `<name>.jsa` (a rename: a reader sees the whole file or none), the other parts are
    removed. Returns the archives made."""
    parts: dict[str, list[Path]] = {}
    for p in sorted(d.glob(f"*{PART}")):
        name = p.name[: -len(PART)].rsplit(".", 1)[0]
        parts.setdefault(name, []).append(p)
    made = []
    for name, ps in parts.items():
        launch = d / f"{name}{LAUNCH}"
        target = d / f"{name}.jsa"
        lines = launch.read_text().splitlines() if launch.is_file() else []
        if len(lines) == 2 and not target.exists():
            for p in sorted(ps, key=lambda p: p.stat().st_size, reverse=True):
                if usable(p, lines[0], lines[1]):
                    os.replace(p, target)
                    made.append(target)
                    break
        for p in ps:
            p.unlink(missing_ok=True)
        launch.unlink(missing_ok=True)
    return made


# a few seconds of the runner on the training cluster: its Kafka driver, one topic, producers and consumers
TRAIN_WORKLOAD = """name: cds training
topics: 1
partitionsPerTopic: 2
keyDistributor: NO_KEY
messageSize: 1024
useRandomizedPayloads: true
randomBytesRatio: 0.5
randomizedPayloadPoolSize: 10
subscriptionsPerTopic: 1
producersPerTopic: 1
consumerPerSubscription: 1
producerRate: 200
consumerBacklogSizeGB: 0
testDurationMinutes: 1
warmupDurationMinutes: 0
x-streambench:
  testDurationSeconds: 3
  warmupDurationSeconds: 1
"""


def runner_command(work: Path, cluster_json: Path) -> list[str]:
    """The runner's few seconds on a Kafka cluster (TRAIN_WORKLOAD, runner/testdata's 3-node Kafka driver), its
    workload, result and log files in `work`: what the training runs, and what systems/bench/cds_start.py times."""
    wl = work / "workload.yaml"
    wl.write_text(TRAIN_WORKLOAD)
    return [str(ROOT / "runner/bin/omb-run"), "--workload", str(wl), "--driver",
            str(ROOT / "runner/testdata/kafka-3node.yaml"), "--output", str(work / "result.json"), "--log",
            str(work / "runner.log"), "--cluster", str(cluster_json)]


TRAIN_STOP_SECONDS = 300  # a training JVM's time from SIGTERM to its exit, its archive written
TRAIN_RUN_SECONDS = 300  # the runner's few seconds of traffic, its start and its archive at exit


def training_config(cfg: dict) -> dict:
    """The training cluster's configuration: cfg with two changes for a cluster that only makes archives and is thrown
    away.
    - Its brokers skip controlled shutdown. A KRaft broker's controlled shutdown needs a controller quorum, and all
      three nodes get SIGTERM together: a broker whose request came after two of the three controllers had exited
      waited Kafka's 5-minute shutdown timeout (a quiet training once: kafka-2 killed at 300 s, its archive lost).
      Without it each broker still closes its logs cleanly; only the leadership hand-over is skipped, which a
      cluster that stops whole does not need. (The setting goes in through config kafka.storage, the only broker
      settings beside the level's that a plan takes.)
    - Its down waits TRAIN_STOP_SECONDS before SIGKILL: each JVM writes its archive after its SIGTERM, before it
      exits, seconds of CPU per broker at nice 19 beside env/test's unit pass, where the default 20 s was once too
      short for all three (no Kafka archive made)."""
    out = copy.deepcopy(cfg)
    out["kafka"]["storage"] = {**(out["kafka"].get("storage") or {}), "controlled.shutdown.enable": False}
    out["stop_timeout_seconds"] = max(out["stop_timeout_seconds"], TRAIN_STOP_SECONDS)
    return out


def train(log=print) -> list[Path]:
    """Start a Kafka cluster at L1 on this machine, run the runner against it for a few seconds, stop both, each JVM
    writing its archive at exit; then put one archive per name in place. Archives already there are kept."""
    from . import cluster as scluster
    from .util import load_config
    d = directory()
    if d is None:
        raise SystemExit(f"systems.cds: {CDS_ENV} is not set")
    d.mkdir(parents=True, exist_ok=True)
    for p in [*d.glob(f"*{PART}"), *d.glob(f"*{LAUNCH}")]:  # an interrupted training's leftovers
        p.unlink()
    os.environ[TRAIN_ENV] = "1"
    # the training JVMs verify their classes: an archive of verified classes is mapped whether or not a later JVM runs
    # with env/test's -XX:-BytecodeVerificationRemote (the JVM refuses the other way round), and then skips verifying
    # them either way
    from .plan import JVM_EXTRA_ENV, jvm_extra_opts
    os.environ[JVM_EXTRA_ENV] = shlex.join(o for o in jvm_extra_opts() if o != "-XX:-BytecodeVerificationRemote")
    cfg = training_config(load_config())
    with tempfile.TemporaryDirectory(prefix="cds-train-") as tmp:
        rundir = Path(tmp) / "kafka"
        try:
            scluster.up("kafka", "L1", rundir, cfg=cfg, log=lambda m: None)
            try:
                r = subprocess.run(runner_command(Path(tmp), rundir / "cluster.json"), cwd=ROOT, capture_output=True,
                                   text=True, timeout=TRAIN_RUN_SECONDS)
                if r.returncode != 0:
                    log(f"systems.cds: the training run of the runner failed (exit {r.returncode}); "
                        "its archive is not made")
            except subprocess.TimeoutExpired:  # killed (the script execs java): the brokers' archives are still made
                log(f"systems.cds: the training run of the runner did not end within {TRAIN_RUN_SECONDS} s; "
                    "its archive is not made")
        finally:
            # a node that still needed SIGKILL is said, as it explains a missing archive
            for node in scluster.down(rundir, cfg, log=lambda m: None)["killed"]:
                log(f"systems.cds: {node} still ran {cfg['stop_timeout_seconds']:.0f} s after SIGTERM and was killed; "
                    "it wrote no archive")
    made = promote(d)
    for p in made:
        log(f"systems.cds: {p.name} ({p.stat().st_size / 1e6:.1f} MB)")
    return made


EXPECTED = ("Kafka", "StorageTool", "Main")  # the archives a training makes: broker, format tool, runner


def main(argv: list[str] | None = None) -> int:
    from .util import SystemsError
    ap = argparse.ArgumentParser(prog="python -m systems.cds", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("train", help=f"make the archives under ${CDS_ENV}")
    ap.parse_args(argv)
    if subprocess.run(["java", "-Xshare:on", "-version"], capture_output=True).returncode != 0:
        print("systems.cds: this JDK maps no base CDS archive (java -Xshare:on -version fails); no archive is made, "
              "every JVM starts as without them")
        return 0
    try:
        made = train()
    except SystemsError as e:
        print(f"systems.cds: error: {e}", file=sys.stderr)
        return 1
    missing = [m for m in EXPECTED if not any(p.name.startswith(f"{m}-") for p in made)]
    print(f"systems.cds: {len(made)} archive(s) made in {directory()}")
    if missing:
        print(f"systems.cds: error: no archive made for {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
