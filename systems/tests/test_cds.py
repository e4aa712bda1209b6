"""env/test's class-data sharing archives (systems/cds.py): which JVMs get which option, how the archives are named and
put in place. The JVM's own side (an archive written at exit, mapped at start) is exercised by systems/cds.py's
training in env/test and measured by systems/bench/cds_start.py."""
from __future__ import annotations

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
