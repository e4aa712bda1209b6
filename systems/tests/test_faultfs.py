"""faultfs semantics on real FUSE mounts: what survives `drop` (a power loss) and what does not."""
from __future__ import annotations

import errno
import mmap
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from systems import faultfs

try:
    import mfusepy  # noqa: F401
    _mfusepy = True
except (ImportError, OSError):
    _mfusepy = False

pytestmark = pytest.mark.skipif(
    not (_mfusepy and os.path.exists("/dev/fuse") and os.geteuid() == 0),
    reason="needs mfusepy, /dev/fuse and root")


@pytest.fixture(scope="module")
def fs(tmp_path_factory):
    base = tmp_path_factory.mktemp("faultfs")
    faultfs.mount(base / "backing", base / "mnt", log=base / "daemon.log")
    try:
        yield base / "mnt", base / "backing"
    finally:
        faultfs.unmount(base / "mnt", discard=True)
        assert not faultfs.is_mounted(base / "mnt")


@pytest.fixture
def d(fs, request):
    mnt, backing = fs
    p = mnt / request.node.name
    p.mkdir()
    return p


def write(path: Path, data: bytes, *, sync: str | None = None, flags: int = 0, offset: int | None = None) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o644)
    try:
        if offset is None:
            os.lseek(fd, 0, os.SEEK_END)
            os.write(fd, data)
        else:
            os.pwrite(fd, data, offset)
        if sync == "fsync":
            os.fsync(fd)
        elif sync == "fdatasync":
            os.fdatasync(fd)
    finally:
        os.close(fd)


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def drop(fs) -> dict:
    return faultfs.drop(fs[0])


def test_fsynced_survives_unsynced_is_gone(fs, d):
    write(d / "a", b"durable", sync="fsync")
    write(d / "a", b"+volatile")
    assert (d / "a").read_bytes() == b"durable+volatile"
    assert (fs[1] / d.name / "a").read_bytes() == b"durable"  # the backing file holds the durable state only
    r = drop(fs)
    assert r["files"] >= 1
    assert (d / "a").read_bytes() == b"durable"
    assert (d / "a").stat().st_size == 7


def test_fdatasync_counts(fs, d):
    write(d / "a", b"x" * 5000, sync="fdatasync")
    write(d / "a", b"y" * 100)
    drop(fs)
    assert (d / "a").read_bytes() == b"x" * 5000


def test_append_after_partial_sync(fs, d):
    # across page boundaries: synced prefix, unsynced tail that overwrites part of a synced page
    write(d / "log", b"a" * 20000, sync="fsync")
    write(d / "log", b"b" * 30000)
    write(d / "log", b"c" * 100, offset=19950)  # overwrites synced and unsynced bytes
    assert (d / "log").stat().st_size == 50000
    write(d / "log", b"d" * 10, sync="fsync")  # the fsync makes everything before it durable
    write(d / "log", b"e" * 10)
    drop(fs)
    assert (d / "log").read_bytes() == b"a" * 19950 + b"c" * 100 + b"b" * 29950 + b"d" * 10


def test_o_dsync_writes_are_durable(fs, d):
    write(d / "a", b"sync", flags=os.O_DSYNC)
    drop(fs)
    assert (d / "a").read_bytes() == b"sync"


def test_created_not_fsynced_exists_empty(fs, d):
    # LazyFS: create/mkdir/rename/unlink reach the backing directory at once; only file data is cached
    write(d / "new", b"data")
    (d / "sub").mkdir()
    drop(fs)
    assert (d / "new").exists() and (d / "new").read_bytes() == b""
    assert (d / "sub").is_dir()


def test_created_and_fsynced_dir_not_fsynced_survives(fs, d):
    write(d / "f", b"content", sync="fsync")  # the directory d is never fsynced
    drop(fs)
    assert (d / "f").read_bytes() == b"content"


def test_rename_is_durable_data_follows_the_inode(fs, d):
    write(d / "a.tmp", b"checkpoint", sync="fsync")
    os.rename(d / "a.tmp", d / "a")
    write(d / "b.tmp", b"unsynced")
    os.rename(d / "b.tmp", d / "b")
    write(d / "old", b"old", sync="fsync")
    write(d / "new", b"new!", sync="fsync")
    os.rename(d / "new", d / "old")  # replaces a durable file
    drop(fs)
    assert sorted(p.name for p in d.iterdir()) == ["a", "b", "old"]
    assert (d / "a").read_bytes() == b"checkpoint"
    assert (d / "b").read_bytes() == b""  # the name is durable, the data was not
    assert (d / "old").read_bytes() == b"new!"


def test_unlink_is_durable(fs, d):
    write(d / "gone", b"synced", sync="fsync")
    write(d / "gone", b"more")
    os.unlink(d / "gone")
    write(d / "kept", b"k", sync="fsync")
    drop(fs)
    assert [p.name for p in d.iterdir()] == ["kept"]


def test_truncate_is_cached_until_fsync(fs, d):
    write(d / "t", b"0123456789" * 10, sync="fsync")
    os.truncate(d / "t", 10)
    assert (d / "t").read_bytes() == b"0123456789"
    drop(fs)
    assert (d / "t").read_bytes() == b"0123456789" * 10  # the shrink was not synced
    os.truncate(d / "t", 10)
    os.truncate(d / "t", 30)  # extend: zeros, not the old bytes
    assert (d / "t").read_bytes() == b"0123456789" + bytes(20)
    fsync_path(d / "t")
    drop(fs)
    assert (d / "t").read_bytes() == b"0123456789" + bytes(20)
    assert (fs[1] / d.name / "t").read_bytes() == b"0123456789" + bytes(20)


def test_open_o_trunc_is_cached(fs, d):
    write(d / "t", b"durable", sync="fsync")
    with open(d / "t", "wb") as f:  # O_TRUNC
        f.write(b"rewritten, never synced")
    drop(fs)
    assert (d / "t").read_bytes() == b"durable"


def test_mmap_writes_need_msync(fs, d):
    write(d / "idx", bytes(8192), sync="fsync")
    with open(d / "idx", "r+b") as f:
        m = mmap.mmap(f.fileno(), 8192)
        m[0:4] = b"SYNC"
        m.flush()  # msync: reaches the layer as write + fsync
        m[4096:4100] = b"LOST"
        m.close()  # munmap writes the dirty page back to the layer, unsynced
    assert (d / "idx").read_bytes()[4096:4100] == b"LOST"
    drop(fs)
    data = (d / "idx").read_bytes()
    assert data[0:4] == b"SYNC" and data[4096:4100] == bytes(4)


def test_random_ops_match_a_model(fs, d):
    """Random writes, truncates and fsyncs on one file against an in-memory model of the durable state."""
    rng = random.Random(15)
    path = d / "r"
    cur, durable = bytearray(), bytearray()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        for step in range(400):
            op = rng.random()
            if op < 0.6:
                off = rng.randrange(0, len(cur) + 40000)
                data = rng.randbytes(rng.choice([1, 100, 4096, 20000, 70000]))
                os.pwrite(fd, data, off)
                if off > len(cur):
                    cur.extend(bytes(off - len(cur)))
                cur[off:off + len(data)] = data
            elif op < 0.75:
                n = rng.randrange(0, len(cur) + 30000)
                os.ftruncate(fd, n)
                cur = cur[:n] + bytearray(max(0, n - len(cur)))
            elif op < 0.85:
                os.fsync(fd)
                durable = bytearray(cur)
            elif op < 0.9:
                drop(fs)
                cur = bytearray(durable)
            else:
                off = rng.randrange(0, len(cur) + 10)
                assert os.pread(fd, 50000, off) == bytes(cur[off:off + 50000]), step
            if step % 50 == 0:
                assert os.fstat(fd).st_size == len(cur)
    finally:
        os.close(fd)
    assert path.read_bytes() == bytes(cur)
    drop(fs)
    assert path.read_bytes() == bytes(durable)


def test_stats_and_drop_cli(fs, d):
    drop(fs)
    write(d / "a", b"x")
    r = subprocess.run([sys.executable, "-m", "systems.faultfs", "stats", str(fs[0])], capture_output=True, text=True)
    assert r.returncode == 0 and '"dirtyFiles": 1' in r.stdout, r.stderr
    r = subprocess.run([sys.executable, "-m", "systems.faultfs", "drop", str(d)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("faultfs: error: ") and str(d) in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_unmount_writes_back_and_leaves_nothing(tmp_path):
    mnt, backing = tmp_path / "m", tmp_path / "b"
    rec = faultfs.mount(backing, mnt)
    write(mnt / "a", b"clean shutdown")
    faultfs.unmount(mnt)
    assert not faultfs.is_mounted(mnt) and not faultfs._alive(rec)
    assert (backing / "a").read_bytes() == b"clean shutdown"
    assert not Path(rec["socket"]).exists()
    rec = faultfs.mount(backing, mnt)
    write(mnt / "a", b" discarded")
    faultfs.unmount(mnt, discard=True)
    assert (backing / "a").read_bytes() == b"clean shutdown"
    assert not faultfs.is_mounted(mnt) and not faultfs._alive(rec) and os.listdir(mnt) == []


def test_sweep_removes_a_dead_mount_and_keeps_live_ones(fs, tmp_path):
    mnt = tmp_path / "dead"
    rec = faultfs.mount(tmp_path / "b", mnt)
    os.kill(rec["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 5
    while faultfs._alive(rec) and time.monotonic() < deadline:
        time.sleep(0.02)
    with pytest.raises(OSError) as e:
        os.stat(mnt)
    assert e.value.errno in (errno.ENOTCONN, errno.ECONNABORTED)
    removed = faultfs.sweep()
    assert str(mnt) in removed
    assert not faultfs.is_mounted(mnt)
    assert faultfs.is_mounted(fs[0]) and os.listdir(fs[0]) is not None  # the live mount still answers
    assert str(fs[0]) not in removed
    assert str(mnt) not in faultfs.sweep()


def test_checkpoint_makes_cached_writes_durable(fs, d):
    write(d / "a", b"cached")
    os.truncate(d / "a", 3)
    r = faultfs.checkpoint(fs[0])
    assert r["files"] >= 1
    assert (fs[1] / d.name / "a").read_bytes() == b"cac"
    drop(fs)
    assert (d / "a").read_bytes() == b"cac"


def test_memory_bound_writes_back_the_oldest_files(tmp_path, monkeypatch):
    monkeypatch.setenv("FAULTFS_MAX_DIRTY_MB", "1")
    mnt, backing = tmp_path / "m", tmp_path / "b"
    faultfs.mount(backing, mnt)
    try:
        write(mnt / "old", b"o" * 600_000)
        write(mnt / "new", b"n" * 600_000)  # 1.2 MB cached > 1 MB: "old" goes to the disk
        st = faultfs.stats(mnt)
        assert st["writtenBack"]["files"] == 1 and st["dirtyFiles"] == 1
        faultfs.drop(mnt)
        assert (mnt / "old").read_bytes() == b"o" * 600_000
        assert (mnt / "new").read_bytes() == b""
    finally:
        faultfs.unmount(mnt, discard=True)


def test_users_names_processes_with_open_files(fs, d):
    write(d / "held", b"x", sync="fsync")
    p = subprocess.Popen(["sleep", "30"], stdin=open(d / "held"))
    try:
        deadline = time.monotonic() + 5
        while p.pid not in faultfs.users(fs[0]) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert p.pid in faultfs.users(fs[0])
    finally:
        p.kill()
        p.wait()
    assert p.pid not in faultfs.users(fs[0])


def test_a_reader_of_the_mount_does_not_count_as_a_writer_but_a_writer_does(fs, d):
    """drop_all refuses while a process can still change the mount (require_idle), not while a reader (a disk
    sampler walking the tree) holds a directory or a file open read-only: that reader made a power-loss run fail."""
    write(d / "held", b"x", sync="fsync")
    code = ("import os,sys,time\nfd=os.open(sys.argv[1], os.O_RDONLY)\nd=os.open(sys.argv[2], os.O_RDONLY|os.O_DIRECTORY)\n"
            "m=open(sys.argv[3], sys.argv[4])\nprint('ok', flush=True)\ntime.sleep(30)\n")
    write(d / "f-rb", b"r", sync="fsync")
    procs = {}
    for mode in ("rb", "ab"):
        procs[mode] = subprocess.Popen([sys.executable, "-c", code, str(d / "held"), str(d), str(d / f"f-{mode}"), mode],
                                       stdout=subprocess.PIPE, text=True)
    try:
        for p in procs.values():
            if p.stdout.readline().strip() != "ok":
                raise AssertionError("helper did not start")
        assert procs["rb"].pid in faultfs.users(fs[0]) and procs["ab"].pid in faultfs.users(fs[0])
        writers = faultfs.users(fs[0], writers_only=True)
        assert procs["ab"].pid in writers and procs["rb"].pid not in writers
    finally:
        for p in procs.values():
            p.kill()
            p.wait()
