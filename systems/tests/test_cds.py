"""env/test's class-data sharing archives (systems/cds.py): which JVMs get which option, how the archives are named and
put in place. The JVM's own side (an archive written at exit, mapped at start) is exercised by systems/cds.py's
training in env/test and measured by systems/bench/cds_start.py."""
from __future__ import annotations

import copy
import os
import subprocess
from pathlib import Path

import pytest

from systems import cds
from systems import durability as dur
from systems import plan as splan
from systems.util import load_config, resolve

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def dist(tmp_path):
    """A distribution of two jars, as the java launcher expands `libs/*`."""
    libs = tmp_path / "dist" / "libs"
    libs.mkdir(parents=True)
    for n in ("a.jar", "b.jar"):
        (libs / n).write_bytes(b"PK" + n.encode())
    (libs / "README").write_text("not a jar")
    return tmp_path / "dist"


def cmd(dist: Path, main: str = "kafka.Kafka") -> list[str]:
    return ["java", "-Xmx256m", "-cp", f"{dist}/libs/*", main, "server.properties"]


def test_no_directory_no_option(dist, monkeypatch):
    monkeypatch.delenv(cds.CDS_ENV, raising=False)
    monkeypatch.setenv(cds.TRAIN_ENV, "1")
    assert cds.options(cmd(dist), "kafka-1") == []


def test_training_writes_at_exit_then_the_promoted_archive_is_mapped(dist, tmp_path, monkeypatch):
    d = tmp_path / "cds"
    monkeypatch.setenv(cds.CDS_ENV, str(d))
    monkeypatch.delenv(cds.TRAIN_ENV, raising=False)
    assert cds.options(cmd(dist), "kafka-1") == [], "neither an archive nor training: nothing"
    monkeypatch.setenv(cds.TRAIN_ENV, "1")
    opts = [cds.options(cmd(dist), f"kafka-{i}") for i in (1, 2)]
    name = cds.archive_name("java", f"{dist}/libs/*", "kafka.Kafka")
    assert name and name.startswith("Kafka-")
    assert opts == [[f"-XX:ArchiveClassesAtExit={d}/{name}.kafka-{i}.part"] for i in (1, 2)]
    assert (d / f"{name}.launch").read_text() == f"java\n{dist}/libs/*\n"
    # the JVMs exit: each wrote its part; the larger one that the JVM maps becomes the archive, the rest goes
    (d / f"{name}.kafka-1.part").write_bytes(b"x" * 10)
    (d / f"{name}.kafka-2.part").write_bytes(b"x" * 20)
    checked = []
    monkeypatch.setattr(cds, "usable", lambda p, java, cp: checked.append((p.name, java, cp)) or p.name.endswith("-1.part"))
    assert cds.promote(d) == [d / f"{name}.jsa"]
    assert checked == [(f"{name}.kafka-2.part", "java", f"{dist}/libs/*"), (f"{name}.kafka-1.part", "java", f"{dist}/libs/*")]
    assert sorted(p.name for p in d.iterdir()) == [f"{name}.jsa"]
    assert (d / f"{name}.jsa").read_bytes() == b"x" * 10, "the larger part was not usable: the one the JVM maps won"
    assert cds.options(cmd(dist), "kafka-3") == [f"-XX:SharedArchiveFile={d}/{name}.jsa"]


def test_no_usable_part_makes_no_archive(dist, tmp_path, monkeypatch):
    d = tmp_path / "cds"
    monkeypatch.setenv(cds.CDS_ENV, str(d))
    monkeypatch.setenv(cds.TRAIN_ENV, "1")
    cds.options(cmd(dist), "kafka-1")
    name = cds.archive_name("java", f"{dist}/libs/*", "kafka.Kafka")
    (d / f"{name}.kafka-1.part").write_bytes(b"")
    monkeypatch.setattr(cds, "usable", lambda p, java, cp: False)
    assert cds.promote(d) == [] and list(d.iterdir()) == []


def test_the_name_follows_the_jars_and_the_main_class(dist, tmp_path):
    cp = f"{dist}/libs/*"
    a = cds.archive_name("java", cp, "kafka.Kafka")
    assert a == cds.archive_name("java", cp, "kafka.Kafka")
    assert a != cds.archive_name("java", cp, "kafka.tools.StorageTool")
    jar = dist / "libs" / "b.jar"
    jar.write_bytes(b"PK rebuilt")  # another size: another archive (the JVM would refuse the old one)
    assert cds.archive_name("java", cp, "kafka.Kafka") != a
    os.utime(jar, ns=(1, 1))
    b = cds.archive_name("java", cp, "kafka.Kafka")
    os.utime(jar, ns=(2, 2))
    assert cds.archive_name("java", cp, "kafka.Kafka") != b, "another mtime: another archive"


def test_a_class_path_the_jvm_cannot_archive_gets_nothing(dist, tmp_path, monkeypatch):
    monkeypatch.setenv(cds.CDS_ENV, str(tmp_path / "cds"))
    monkeypatch.setenv(cds.TRAIN_ENV, "1")
    conf = dist / "conf"
    conf.mkdir()
    (conf / "log4j2.yaml").write_text("")
    assert cds.archive_name("java", f"{conf}:{dist}/libs/*", "M") is None  # a directory (Pulsar's conf/)
    assert cds.archive_name("java", f"{dist}/libs/*::", "M") is None  # an empty entry (the working directory)
    assert cds.options(["java", "-cp", f"{conf}:{dist}/libs/*", "M"], "n") == []
    assert cds.options(["java", "-version"], "n") == [], "no class path, no archive"


def test_only_the_local_placement_gets_archives(dist, tmp_path, monkeypatch):
    cfg = load_config()
    durability = dur.load(resolve(cfg["durability_file"]))
    d = tmp_path / "cds"
    monkeypatch.setenv(cds.CDS_ENV, str(d))
    monkeypatch.setenv(cds.TRAIN_ENV, "1")
    local = splan.build("kafka", "L1", "stock", splan.local_placement(tmp_path / "run", dist, "java"), cfg, durability)
    cmds = [n.cmd for n in local.nodes] + [o.cmd for st in local.stages for o in st.once]
    assert len(cmds) == 6  # three nodes, three format tools
    assert all(sum(a.startswith("-XX:ArchiveClassesAtExit=") for a in c) == 1 for c in cmds), cmds
    assert cmds[0][1].startswith("-XX:ArchiveClassesAtExit="), "right after java"
    hosts = [splan.Host(f"server-{i}", f"10.9.0.{i}", "/srv/run", str(dist), "java") for i in (1, 2, 3)]
    remote = splan.build("kafka", "L1", "stock", splan.Placement(hosts, splan.fixed_ports), cfg, durability)
    assert not any("ArchiveClasses" in a or "SharedArchive" in a for n in remote.nodes for a in n.cmd)
    monkeypatch.delenv(cds.CDS_ENV)
    plain = splan.build("kafka", "L1", "stock", splan.local_placement(tmp_path / "run2", dist, "java"), cfg, durability)
    assert not any("Archive" in a for n in plain.nodes for a in n.cmd), "unset: users' command lines, unchanged"


def test_the_runner_script_names_its_archive_and_trains_only_when_asked(tmp_path):
    """runner/bin/omb-run's own digest: a training run writes `<name>.launch` beside the part it asks for; with an
    archive there it maps it. Checked through the script's command line (`bash -x`), without starting a JVM."""
    if not (ROOT / "runner/target/omb-runner.jar").exists() or not (ROOT / "runner/target/lib").is_dir():
        pytest.fail("runner not built: run `mvn -q -f runner/pom.xml package` first")
    d = tmp_path / "cds"
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "java").write_text("#!/bin/sh\necho \"$@\"\n")  # prints the command line it was given
    (fake / "java").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", cds.CDS_ENV: str(d), cds.TRAIN_ENV: "1"}
    env.pop("JAVA_HOME", None)
    env.pop("OMB_RUN_JAVA_OPTS", None)
    out = subprocess.run([str(ROOT / "runner/bin/omb-run"), "--help"], env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    launch = list(d.glob("*.launch"))
    assert len(launch) == 1 and launch[0].name.startswith("Main-")
    name = launch[0].name[: -len(".launch")]
    assert f"-XX:ArchiveClassesAtExit={d}/{name}.runner-" in out
    (d / f"{name}.jsa").write_bytes(b"archive")
    del env[cds.TRAIN_ENV]
    out = subprocess.run([str(ROOT / "runner/bin/omb-run"), "--help"], env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert f"-XX:SharedArchiveFile={d}/{name}.jsa" in out and "ArchiveClassesAtExit" not in out
    env.pop(cds.CDS_ENV)
    out = subprocess.run([str(ROOT / "runner/bin/omb-run"), "--help"], env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert "Archive" not in out


def test_training_gives_its_jvms_time_to_write_their_archives_and_says_a_sigkill(tmp_path, monkeypatch):
    """The brokers write their archives between SIGTERM and exit, at nice 19 beside env/test's unit pass: the cluster's
    default 20 s before SIGKILL once cut all three short (CI of 578ca19: no Kafka archive). The training's down waits
    TRAIN_STOP_SECONDS, and a SIGKILL it still needed is a line of the training's output."""
    from systems import cluster as scluster
    monkeypatch.setenv(cds.CDS_ENV, str(tmp_path / "cds"))
    monkeypatch.delenv(cds.TRAIN_ENV, raising=False)
    seen = {}
    monkeypatch.setattr(scluster, "up", lambda system, level, rundir, cfg=None, log=None: seen.update(
        up=(system, level), shutdown=cfg["kafka"]["storage"]["controlled.shutdown.enable"]))

    def down(rundir, cfg=None, log=print):
        seen["stop"] = cfg["stop_timeout_seconds"]
        log("down: unmounted 0 faultfs mount(s)")
        return {"stopped": ["kafka-1", "kafka-2", "kafka-3"], "killed": ["kafka-2"]}
    monkeypatch.setattr(scluster, "down", down)
    monkeypatch.setattr(cds.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "", ""))
    lines = []
    assert cds.train(log=lines.append) == []
    assert seen == {"up": ("kafka", "L1"), "shutdown": False, "stop": cds.TRAIN_STOP_SECONDS}
    assert cds.TRAIN_STOP_SECONDS > load_config()["stop_timeout_seconds"]
    assert lines == [f"systems.cds: kafka-2 still ran {cds.TRAIN_STOP_SECONDS} s after SIGTERM and was killed; "
                     "it wrote no archive"]


def test_a_training_run_of_the_runner_past_its_time_is_one_line_and_the_brokers_archives_are_still_made(
        tmp_path, monkeypatch):
    """Seen at nice 19 beside two busy loops: the runner's training run passed its 300 s; the training then raised
    before it promoted the brokers' parts. Now one line, then down and promote as always."""
    from systems import cluster as scluster
    d = tmp_path / "cds"
    monkeypatch.setenv(cds.CDS_ENV, str(d))
    monkeypatch.delenv(cds.TRAIN_ENV, raising=False)
    monkeypatch.setattr(scluster, "up", lambda *a, **k: None)
    stopped = []
    monkeypatch.setattr(scluster, "down", lambda rundir, cfg=None, log=print: stopped.append(rundir) or {"killed": []})

    def run(cmd, **k):
        raise subprocess.TimeoutExpired(cmd, k["timeout"])
    monkeypatch.setattr(cds.subprocess, "run", run)
    monkeypatch.setattr(cds, "promote", lambda d: [d / "Kafka-x.jsa"])
    lines = []
    (d / "Kafka-x.jsa").parent.mkdir(parents=True, exist_ok=True)
    (d / "Kafka-x.jsa").write_bytes(b"x")
    assert cds.train(log=lines.append) == [d / "Kafka-x.jsa"]
    assert len(stopped) == 1
    assert lines[0] == f"systems.cds: the training run of the runner did not end within {cds.TRAIN_RUN_SECONDS} s; its archive is not made"


def test_the_training_cluster_skips_controlled_shutdown_and_waits_for_its_archives(dist, tmp_path):
    """A quiet training once lost kafka-2's archive: its controlled shutdown waited for a controller quorum that had
    exited, Kafka's 5 minutes. The training's brokers skip it (their logs still close cleanly); the setting reaches
    each node's server.properties through the plan, beside the level's and the storage settings, and the user's
    configuration is not changed."""
    cfg = load_config()
    before = copy.deepcopy(cfg)
    tcfg = cds.training_config(cfg)
    assert cfg == before
    assert tcfg["stop_timeout_seconds"] == cds.TRAIN_STOP_SECONDS
    assert tcfg["kafka"]["storage"] == {**cfg["kafka"]["storage"], "controlled.shutdown.enable": False}
    durability = dur.load(resolve(cfg["durability_file"]))
    pl = splan.build("kafka", "L1", "stock", splan.local_placement(tmp_path / "run", dist, "java"), tcfg, durability)
    confs = [text for _, path, text in pl.files if path.endswith("server.properties")]
    assert len(confs) == 3
    assert all("controlled.shutdown.enable=false\n" in text for text in confs)
    plain = splan.build("kafka", "L1", "stock", splan.local_placement(tmp_path / "run2", dist, "java"), cfg, durability)
    assert not any("controlled.shutdown" in text for _, path, text in plain.files)
