"""The CLI: error cases (one clear line, no output file) and one real tiny dd + fio run."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hwprobe import cli

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args, env=None):
    e = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'hw-probes'}")
    if env:
        e.update(env)
    return subprocess.run([sys.executable, "-m", "hwprobe", *args], capture_output=True, text=True, env=e)


def test_missing_fio_is_named(tmp_path):
    out = tmp_path / "p.json"
    p = run_cli("fio-fsync", "--dir", str(tmp_path), "--out", str(out), env={"PATH": str(tmp_path / "empty")})
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        "hwprobe fio-fsync: error: fio not found on PATH (install it: env/apt-packages.txt lists it)"]
    assert not out.exists()


def test_unwritable_directory_is_named(tmp_path, capsys):
    out = tmp_path / "p.json"
    # root ignores permission bits, so use a directory nobody can create files in: /proc's
    rc = cli.main(["dd", "--dir", "/proc/1", "--out", str(out), "--size-mb", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and "data directory /proc/1 is not writable" in err and len(err.splitlines()) == 1
    assert not out.exists()


@pytest.mark.skip_in_ci_ok("CI runs as root, and root writes to a chmod 500 directory; /proc/1 above covers it")
@pytest.mark.skipif(os.geteuid() == 0, reason="root can write to a chmod 500 directory")
def test_readonly_directory_is_named(tmp_path, capsys):  # pragma: no cover - runs for non-root users
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    assert cli.main(["fio-seq", "--dir", str(d), "--out", str(tmp_path / "p.json")]) == 2
    assert f"data directory {d} is not writable" in capsys.readouterr().err


def test_missing_directory_and_file_as_directory(tmp_path, capsys):
    assert cli.main(["dd", "--dir", str(tmp_path / "nope"), "--out", str(tmp_path / "p.json")]) == 2
    assert f"data directory {tmp_path / 'nope'} does not exist" in capsys.readouterr().err
    f = tmp_path / "file"
    f.write_text("x")
    assert cli.main(["fio-fsync", "--dir", str(f), "--out", str(tmp_path / "p.json")]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert not (tmp_path / "p.json").exists()


def test_dd_size_not_multiple_of_block(tmp_path, capsys):
    assert cli.main(["dd", "--dir", str(tmp_path), "--out", str(tmp_path / "p.json"),
                     "--size-mb", "1", "--bs-kb", "3000"]) == 2
    assert "multiple of bs_kb" in capsys.readouterr().err


def test_host_facts(tmp_path):
    out = tmp_path / "host.json"
    assert cli.main(["host", "--dir", str(tmp_path), "--host", "node-1", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["probe"] == "host" and doc["host"] == "node-1"
    assert set(doc["result"]) == {"cpuModel", "cores", "memBytes", "kernel", "os"}
    assert doc["result"]["cores"] == os.cpu_count() and doc["result"]["memBytes"] > 2**28
    assert doc["filesystem"] and doc["device"]


@pytest.mark.integration
def test_real_tiny_dd_and_fio(tmp_path):
    data = tmp_path / "data"
    outdir = tmp_path / "probes"
    runs = {
        "dd.json": ["dd", "--size-mb", "4", "--create"],
        "dd-fdatasync.json": ["dd", "--fdatasync", "--size-mb", "4"],
        "fio-seqwrite.json": ["fio-seq", "--size-mb", "8", "--runtime-s", "5"],
        "fio-fsync.json": ["fio-fsync", "--size-mb", "1", "--runtime-s", "5"],
    }
    for name, args in runs.items():
        p = run_cli(*args, "--dir", str(data), "--out", str(outdir / name), "--host", "t")
        assert p.returncode == 0, p.stderr
    docs = {n: json.loads((outdir / n).read_text()) for n in runs}
    assert [d["probe"] for d in docs.values()] == ["dd", "dd-fdatasync", "fio-seqwrite", "fio-fsync"]
    for d in docs.values():
        assert d["dir"] == str(data) and d["filesystem"] and d["startedAt"] <= d["endedAt"]
        assert d["tool"]["version"]
    for n in ("dd.json", "dd-fdatasync.json", "fio-seqwrite.json"):
        assert 1 < docs[n]["result"]["writeMBps"] < 100_000
    assert docs["dd.json"]["params"]["flag"] == "oflag=direct"
    assert docs["dd-fdatasync.json"]["params"]["flag"] == "conv=fdatasync"
    lat = docs["fio-fsync.json"]["result"]["latencyUs"]
    # fio's percentiles are histogram-bucket values (about 1.6 % wide), so p99.9 may sit just above the exact max
    assert 0 < lat["p50"] <= lat["p99"] <= lat["p99.9"] <= lat["max"] * 1.02
    # 1 MB / 4 KiB = 256 writes, each followed by fdatasync; fio 3.33 counts 255 sync latencies
    assert docs["fio-fsync.json"]["result"]["syncs"] in (255, 256)
    assert list(data.iterdir()) == []  # test files and scratch folders are gone
    assert sorted(p.name for p in outdir.iterdir()) == sorted(runs)  # no temp files left beside the outputs
