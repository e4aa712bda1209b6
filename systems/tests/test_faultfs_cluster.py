"""`up --faultfs`: a Kafka L1 cluster whose log directories are faultfs mounts comes up, verifies, and leaves no
mount behind at `down`, nor after a failed `up`."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from systems import dist, faultfs

try:
    import mfusepy  # noqa: F401
    _mfusepy = True
except (ImportError, OSError):
    _mfusepy = False

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not (_mfusepy and os.path.exists("/dev/fuse") and os.geteuid() == 0),
                                 reason="needs mfusepy, /dev/fuse and root")]
REPO = Path(__file__).resolve().parents[2]


def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "systems", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=timeout)


def _require_kafka():
    try:
        dist.require_dist("kafka")
    except Exception as e:  # noqa: BLE001
        if os.environ.get("CI"):
            pytest.fail(str(e))
        pytest.skip(str(e))


def _daemons(rundir: Path) -> list[str]:
    out = subprocess.run(["pgrep", "-f", f"systems.faultfs serve {rundir}"], capture_output=True, text=True)
    return out.stdout.split()


@pytest.mark.timeout(300)
def test_kafka_l1_on_faultfs(tmp_path):
    _require_kafka()
    # a dead mount left by a killed daemon elsewhere: `up --faultfs` sweeps it
    dead = tmp_path / "dead"
    rec = faultfs.mount(tmp_path / "dead.backing", dead)
    os.kill(rec["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 5
    while faultfs._alive(rec) and time.monotonic() < deadline:
        time.sleep(0.02)
    rundir = tmp_path / "run"
    r = _cli("up", "kafka", "--level", "L1", "--dir", str(rundir), "--faultfs")
    try:
        assert r.returncode == 0, r.stderr[-3000:]
        assert f"swept dead mount {dead}" in r.stderr
        assert not faultfs.is_mounted(dead)
        doc = json.loads((rundir / "cluster.json").read_text())
        assert doc["faultfs"] == {n["name"]: n["dataDirs"] for n in doc["nodes"]}
        for node, mps in doc["faultfs"].items():
            for mp in mps:
                assert faultfs.is_mounted(mp), mp
                # `up` ends with a checkpoint: what format wrote is on the backing disk
                backing = Path(mp).parent / ".faultfs" / Path(mp).name
                assert (backing / "meta.properties").stat().st_size > 0
                assert (backing / "bootstrap.checkpoint").stat().st_size > 0
        assert sorted(faultfs.mounts_under(rundir)) == sorted(mp for mps in doc["faultfs"].values() for mp in mps)
        v = _cli("verify", "--dir", str(rundir))
        assert v.returncode == 0, v.stderr
        assert set(faultfs.drop_all(rundir)) == set(faultfs.mounts_under(rundir))
    finally:
        d = _cli("down", "--dir", str(rundir), timeout=120)
    assert d.returncode == 0, d.stderr
    assert "unmounted 3 faultfs mount(s)" in d.stderr
    assert faultfs.mounts_under(tmp_path) == []
    assert _daemons(rundir) == []


@pytest.mark.timeout(200)
def test_failed_up_leaves_no_mount(tmp_path):
    _require_kafka()
    cfg = tmp_path / "config.yaml"
    cfg.write_text("systems:\n  startup_timeout_seconds: 5\n  drop_caches: false\n")
    rundir = tmp_path / "run"
    r = _cli("--config", str(cfg), "up", "kafka", "--level", "L1", "--dir", str(rundir), "--faultfs")
    assert r.returncode == 2, r.stderr
    assert "unmounted 3 faultfs mount(s)" in r.stderr, r.stderr
    assert faultfs.mounts_under(tmp_path) == []
    assert _daemons(rundir) == []
