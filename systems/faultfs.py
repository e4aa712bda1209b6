"""faultfs: a FUSE pass-through layer that emulates power loss (LazyFS's model, Ramos et al., VLDB 2024).

Writes to a file stay in the daemon's own cache until the file is fsync'ed/fdatasync'ed (or was opened with
O_SYNC/O_DSYNC); `drop` discards every cached write, exactly what a power loss does to data that never reached
the disk. The backing directory always holds the durable state. See systems/README.md ("faultfs") for the
semantics of truncate, rename, unlink and create, and for the CLI:

    python -m systems.faultfs mount BACKING MOUNTPOINT [--log FILE]   # starts a daemon, returns when mounted
    python -m systems.faultfs serve BACKING MOUNTPOINT                # the daemon itself (foreground)
    python -m systems.faultfs drop MOUNTPOINT...                      # discard unsynced writes (JSON per mount)
    python -m systems.faultfs checkpoint MOUNTPOINT...                # make every cached write durable
    python -m systems.faultfs stats MOUNTPOINT...
    python -m systems.faultfs unmount MOUNTPOINT... [--discard]
    python -m systems.faultfs sweep                                   # remove dead faultfs mounts
    python -m systems.faultfs list                                    # faultfs mounts of this host (JSON)
    python -m systems.faultfs checkpoint-run RUNDIR                   # checkpoint / unmount every mount of a run:
    python -m systems.faultfs unmount-run RUNDIR [--discard]          # under RUNDIR, or listed in its faultfs-mounts.json

On an inventory's host the same file is sbhost.faultfs (<workDir>/lib, mfusepy in <workDir>/lib/py), run as the
login user: its daemons mount through fusermount3 and serve that user's nodes.

Kernel caching: the mount uses FUSE's default write-through mode (no writeback_cache), so every write(2)
reaches the daemon before the syscall returns; dirty pages of shared mmaps reach it on msync, munmap or the
process's exit. No direct_io, because direct_io forbids shared writable mmaps (Kafka's index files) with the
libfuse of Debian 12. Page-cache pages of a file are invalidated when it is opened (no keep_cache) and
attributes are never cached (attr_timeout=0), so after `drop` a reopened file shows the durable content.
"""
from __future__ import annotations

import argparse
import errno
import hashlib
import json
import os
import socket
import stat as _stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

PAGE = 1 << 14
FSTYPE = "fuse.faultfs"
_REPO = Path(__file__).resolve().parent.parent  # the repository here; <workDir>/lib on a host (sbhost.faultfs)
_MODULE = f"{__package__ or 'systems'}.faultfs"  # systems.faultfs here, sbhost.faultfs on a host


class FaultfsError(RuntimeError):
    """A faultfs failure with a one-line message."""


# ---------------------------------------------------------------- registry of daemons (for drop, sweep)
def state_dir() -> Path:
    """Where daemons register themselves (record + control socket); FAULTFS_STATE_DIR overrides."""
    d = Path(os.environ.get("FAULTFS_STATE_DIR") or f"/tmp/faultfs-state-{os.getuid()}")
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    return d


def _key(mountpoint: str | Path) -> str:
    return hashlib.sha1(str(Path(mountpoint).resolve()).encode()).hexdigest()[:16]


def _record_path(mountpoint) -> Path:
    return state_dir() / f"{_key(mountpoint)}.json"


def _socket_path(mountpoint) -> Path:
    return state_dir() / f"{_key(mountpoint)}.sock"


def _start_time(pid: int) -> int | None:
    try:
        s = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = s[s.rindex(")") + 2:].split()
    return None if rest[0] == "Z" else int(rest[19])


def _records() -> list[dict[str, Any]]:
    out = []
    for f in sorted(state_dir().glob("*.json")):
        try:
            out.append(json.loads(f.read_text()))
        except (OSError, ValueError):
            continue
    return out


def _alive(rec: dict[str, Any]) -> bool:
    return _start_time(int(rec["pid"])) == rec.get("startTime")


def _unescape(s: str) -> str:
    return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def mounts() -> list[dict[str, str]]:
    """faultfs mounts of this mount namespace: [{mountpoint, source}] from /proc/self/mountinfo."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        f, r = left.split(), right.split()
        if r and r[0] == FSTYPE:
            out.append({"mountpoint": _unescape(f[4]), "source": _unescape(r[1]) if len(r) > 1 else ""})
    return out


def is_mounted(mountpoint) -> bool:
    mp = str(Path(mountpoint).resolve())
    return any(m["mountpoint"] == mp for m in mounts())


# ---------------------------------------------------------------- the file system (runs in the daemon)
class _Dirty:
    """Unsynced state of one backing inode: its logical size, the size below which the backing file's bytes
    are still valid (`floor`: lowered by truncates), and full copies of the pages written since the last sync."""

    __slots__ = ("size", "floor", "pages", "fd")

    def __init__(self, fd: int):
        self.fd = os.dup(fd)  # held while the inode has unsynced state: sync and writeback need no path
        self.size = self.floor = os.fstat(fd).st_size
        self.pages: dict[int, bytearray] = {}


def _make_ops():
    import mfusepy as fuse

    class FaultFS(fuse.Operations):
        use_ns = True
        flag_nullpath_ok = True
        flag_nopath = False

        def __init__(self, backing: str):
            self.root = os.path.realpath(backing)
            self._mu = threading.RLock()
            self.dirty: dict[int, _Dirty] = {}
            self.fhs: dict[int, tuple[int, int]] = {}  # fh (= backing fd) -> (inode, open flags)
            self.dropped = {"drops": 0, "files": 0, "bytes": 0}
            self.synced = {"fsyncs": 0, "bytes": 0}
            # memory bound: past max_pages cached pages, the files dirty the longest are written back (as the
            # kernel's writeback would), counted in stats()["writtenBack"]
            self.npages = 0
            self.max_pages = int(float(os.environ.get("FAULTFS_MAX_DIRTY_MB") or 2048) * (1 << 20)) // PAGE
            self.written_back = {"files": 0, "bytes": 0}

        # --- helpers
        def _p(self, path: str) -> str:
            return self.root + path if path != "/" else self.root

        def _ino_of_fd(self, fd: int) -> int:
            return os.fstat(fd).st_ino

        def _get(self, ino: int, fd: int) -> _Dirty:
            d = self.dirty.get(ino)
            if d is None:
                d = self.dirty[ino] = _Dirty(fd)
            return d

        def _forget(self, ino: int) -> None:
            d = self.dirty.pop(ino, None)
            if d is not None:
                self.npages -= len(d.pages)
                os.close(d.fd)

        def _page(self, d: _Dirty, i: int, fd: int) -> bytearray:
            pg = d.pages.get(i)
            if pg is None:
                pg = bytearray(PAGE)
                lo = i * PAGE
                n = min(PAGE, d.floor - lo, d.size - lo)
                if n > 0:
                    b = os.pread(fd, n, lo)
                    pg[:len(b)] = b
                d.pages[i] = pg
                self.npages += 1
            return pg

        def _write(self, ino: int, fd: int, data: bytes, offset: int) -> None:
            d = self._get(ino, fd)
            mv = memoryview(data)
            pos, end = offset, offset + len(data)
            while pos < end:
                i, o = divmod(pos, PAGE)
                n = min(PAGE - o, end - pos)
                pg = self._page(d, i, fd)
                pg[o:o + n] = mv[pos - offset:pos - offset + n]
                pos += n
            d.size = max(d.size, end)

        def _truncate(self, ino: int, fd: int, length: int) -> None:
            d = self._get(ino, fd)
            if length < d.size:
                last = length // PAGE
                for i in [i for i in d.pages if i > last or (i == last and length % PAGE == 0)]:
                    del d.pages[i]
                    self.npages -= 1
                if length % PAGE and last in d.pages:
                    pg = d.pages[last]
                    pg[length % PAGE:] = bytes(PAGE - length % PAGE)
                d.floor = min(d.floor, length)  # backing bytes from here on are gone (read as zeros)
            d.size = length

        def _sync(self, ino: int, fd: int, datasync: bool) -> None:
            d = self.dirty.get(ino)
            if d is not None:
                bsize = os.fstat(fd).st_size
                if d.floor < bsize:
                    os.ftruncate(fd, d.floor)
                n = 0
                for i in sorted(d.pages):
                    lo = i * PAGE
                    if lo >= d.size:
                        continue
                    chunk = memoryview(d.pages[i])[:min(PAGE, d.size - lo)]
                    os.pwrite(fd, chunk, lo)
                    n += len(chunk)
                if os.fstat(fd).st_size != d.size:
                    os.ftruncate(fd, d.size)
                self.synced["bytes"] += n
            (os.fdatasync if datasync else os.fsync)(fd)
            self.synced["fsyncs"] += 1
            if d is not None:
                self._forget(ino)  # after the fsync: fd may be d.fd

        def _with_fd(self, path, fh, fn):
            """fn(fd) on the handle's backing fd, or on a temporary one opened from path."""
            if fh is not None and fh in self.fhs:
                return fn(fh)
            fd = os.open(self._p(path), os.O_RDWR)
            try:
                return fn(fd)
            finally:
                os.close(fd)

        # --- control (called from the control thread)
        def drop(self) -> dict[str, int]:
            with self._mu:
                files = len(self.dirty)
                nbytes = sum(len(d.pages) * PAGE for d in self.dirty.values())
                for ino in list(self.dirty):
                    self._forget(ino)
                self.dropped["drops"] += 1
                self.dropped["files"] += files
                self.dropped["bytes"] += nbytes
            return {"files": files, "pageBytes": nbytes}

        def stats(self) -> dict[str, Any]:
            with self._mu:
                return {"dirtyFiles": len(self.dirty),
                        "dirtyPageBytes": sum(len(d.pages) * PAGE for d in self.dirty.values()),
                        "openHandles": len(self.fhs), "dropped": dict(self.dropped), "synced": dict(self.synced),
                        "writtenBack": dict(self.written_back)}

        def writeback(self) -> dict[str, int]:
            """Write every cached page to the backing files and fsync them (a clean shutdown; LazyFS's
            cache-checkpoint, plus the fsync)."""
            with self._mu:
                files = len(self.dirty)
                for ino, d in list(self.dirty.items()):
                    self._sync(ino, d.fd, False)
            return {"files": files}

        # --- file system operations
        def getattr(self, path, fh=None):
            with self._mu:
                st = os.fstat(fh) if fh is not None and fh in self.fhs else os.lstat(self._p(path))
                size = st.st_size
                d = self.dirty.get(st.st_ino) if _stat.S_ISREG(st.st_mode) else None
                if d is not None:
                    size = d.size
            return {"st_mode": st.st_mode, "st_ino": st.st_ino, "st_nlink": st.st_nlink, "st_uid": st.st_uid,
                    "st_gid": st.st_gid, "st_size": size, "st_atime": st.st_atime_ns, "st_mtime": st.st_mtime_ns,
                    "st_ctime": st.st_ctime_ns, "st_blocks": max(st.st_blocks, (size + 511) // 512),
                    "st_blksize": st.st_blksize, "st_rdev": st.st_rdev}

        def access(self, path, amode):
            if not os.access(self._p(path), amode):
                raise fuse.FuseOSError(errno.EACCES)
            return 0

        def readdir(self, path, fh):
            # (name, {st_mode, st_ino}, 0): with use_ino the kernel skips entries whose inode number is 0
            p = self._p(path)
            st = os.lstat(p)
            out = [(".", {"st_mode": _stat.S_IFDIR, "st_ino": st.st_ino}, 0),
                   ("..", {"st_mode": _stat.S_IFDIR, "st_ino": 1}, 0)]
            with os.scandir(p) as it:
                for e in it:
                    mode = (_stat.S_IFDIR if e.is_dir(follow_symlinks=False) else
                            _stat.S_IFLNK if e.is_symlink() else
                            _stat.S_IFREG if e.is_file(follow_symlinks=False) else 0)
                    out.append((e.name, {"st_mode": mode, "st_ino": e.inode()}, 0))
            return out

        def readlink(self, path):
            return os.readlink(self._p(path))

        def mknod(self, path, mode, dev):
            os.mknod(self._p(path), mode, dev)
            return 0

        def mkdir(self, path, mode):
            os.mkdir(self._p(path), mode)
            return 0

        def rmdir(self, path):
            os.rmdir(self._p(path))
            return 0

        def symlink(self, target, source):
            os.symlink(source, self._p(target))
            return 0

        def link(self, target, source):
            os.link(self._p(source), self._p(target))
            return 0

        def _forget_if_last_link(self, p: str) -> int | None:
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                return None
            if _stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and \
                    not any(i == st.st_ino for i, _ in self.fhs.values()):
                return st.st_ino
            return None

        def unlink(self, path):
            with self._mu:
                p = self._p(path)
                ino = self._forget_if_last_link(p)
                os.unlink(p)
                if ino is not None:
                    self._forget(ino)
            return 0

        def rename(self, old, new, flags=0):
            with self._mu:
                if flags:
                    raise fuse.FuseOSError(errno.EINVAL)
                ino = self._forget_if_last_link(self._p(new))
                os.rename(self._p(old), self._p(new))
                if ino is not None:
                    self._forget(ino)
            return 0

        def chmod(self, path, mode):
            os.chmod(self._p(path), mode)
            return 0

        def chown(self, path, uid, gid):
            os.lchown(self._p(path), uid, gid)
            return 0

        def utimens(self, path, times=None):
            if times is None:
                os.utime(self._p(path), follow_symlinks=False)
            else:
                os.utime(self._p(path), ns=tuple(int(t) for t in times), follow_symlinks=False)
            return 0

        def statfs(self, path):
            sv = os.statvfs(self._p(path))
            return {k: getattr(sv, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                                "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

        def _open(self, path, flags, mode=None):
            # the backing fd is always read-write (pages are read back for partial writes); O_TRUNC and O_APPEND
            # are the layer's business (a truncate is cached; the kernel sends appends at their offset)
            bflags = os.O_RDWR | (flags & (os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW))
            p = self._p(path)
            fd = os.open(p, bflags, mode) if mode is not None else os.open(p, bflags)
            with self._mu:
                ino = self._ino_of_fd(fd)
                self.fhs[fd] = (ino, flags)
                if flags & os.O_TRUNC:
                    self._truncate(ino, fd, 0)
            return fd

        def open(self, path, flags):
            return self._open(path, flags)

        def create(self, path, mode, flags):
            return self._open(path, flags | os.O_CREAT, mode)

        def read(self, path, size, offset, fh):
            with self._mu:
                ino = self.fhs[fh][0]
                d = self.dirty.get(ino)
                if d is None:
                    return os.pread(fh, size, offset)
                end = min(offset + size, d.size)
                if end <= offset:
                    return b""
                out = bytearray(end - offset)
                lim = min(end, d.floor)
                if lim > offset:
                    b = os.pread(fh, lim - offset, offset)
                    out[:len(b)] = b
                for i in range(offset // PAGE, (end - 1) // PAGE + 1):
                    pg = d.pages.get(i)
                    if pg is None:
                        continue
                    lo, hi = max(offset, i * PAGE), min(end, (i + 1) * PAGE)
                    out[lo - offset:hi - offset] = pg[lo - i * PAGE:hi - i * PAGE]
                return bytes(out)

        def write(self, path, data, offset, fh):
            with self._mu:
                ino, flags = self.fhs[fh]
                self._write(ino, fh, data, offset)
                if self.npages > self.max_pages:
                    for vino, d in list(self.dirty.items()):
                        if self.npages <= self.max_pages * 3 // 4:
                            break
                        self.written_back["files"] += 1
                        self.written_back["bytes"] += len(d.pages) * PAGE
                        self._sync(vino, d.fd, True)
                if flags & (os.O_SYNC | os.O_DSYNC):
                    self._sync(ino, fh, not (flags & os.O_SYNC == os.O_SYNC))
            return len(data)

        def truncate(self, path, length, fh=None):
            with self._mu:
                def f(fd):
                    self._truncate(self._ino_of_fd(fd), fd, length)
                self._with_fd(path, fh, f)
            return 0

        def flush(self, path, fh):
            return 0

        def release(self, path, fh):
            with self._mu:
                ino, _ = self.fhs.pop(fh, (None, 0))
                try:
                    if ino is not None and os.fstat(fh).st_nlink == 0 and \
                            not any(i == ino for i, _ in self.fhs.values()):
                        self._forget(ino)  # unlinked and closed: gone for good
                finally:
                    os.close(fh)
            return 0

        def fsync(self, path, datasync, fh):
            with self._mu:
                self._with_fd(path, fh, lambda fd: self._sync(self._ino_of_fd(fd), fd, bool(datasync)))
            return 0

        def opendir(self, path):
            return os.open(self._p(path), os.O_RDONLY | os.O_DIRECTORY)

        def releasedir(self, path, fh):
            os.close(fh)
            return 0

        def fsyncdir(self, path, datasync, fh):
            os.fsync(fh)
            return 0

        def destroy(self, path):
            if not os.environ.get("FAULTFS_DISCARD_ON_EXIT"):
                self.writeback()

    return fuse, FaultFS


def _control_loop(sock: socket.socket, ops) -> None:
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        with conn:
            try:
                cmd = conn.makefile("r").readline().strip()
                if cmd == "drop":
                    reply = {"ok": True, **ops.drop()}
                elif cmd == "checkpoint":
                    reply = {"ok": True, **ops.writeback()}
                elif cmd == "stats":
                    reply = {"ok": True, **ops.stats()}
                elif cmd == "ping":
                    reply = {"ok": True}
                else:
                    reply = {"ok": False, "error": f"unknown command {cmd!r}"}
            except Exception as e:  # report to the client, keep serving
                reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
            try:
                conn.sendall((json.dumps(reply) + "\n").encode())
            except OSError:
                pass


def serve(backing: str | Path, mountpoint: str | Path) -> int:
    """Run the daemon in the foreground until the file system is unmounted (or SIGTERM/SIGINT/SIGHUP)."""
    backing, mountpoint = Path(backing).resolve(), Path(mountpoint).resolve()
    if not backing.is_dir():
        raise FaultfsError(f"{backing}: backing directory does not exist")
    if not mountpoint.is_dir():
        raise FaultfsError(f"{mountpoint}: mount point does not exist")
    fuse, FaultFS = _make_ops()

    class _FUSE(fuse.FUSE):
        def truncate_fuse_3(self, path, length, fip):  # mfusepy drops the file handle of an ftruncate
            fh = fip.contents.fh if fip else None
            return self.operations.truncate(None if path is None else path.decode(self.encoding, self.errors),
                                            length, fh)
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # a backing fd per open file and dirty inode
    except (ValueError, OSError):
        pass
    ops = FaultFS(str(backing))
    sp = _socket_path(mountpoint)
    sp.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(sp))
    sock.listen(16)
    threading.Thread(target=_control_loop, args=(sock, ops), daemon=True, name="faultfs-control").start()
    rec = {"pid": os.getpid(), "startTime": _start_time(os.getpid()), "mountpoint": str(mountpoint),
           "backing": str(backing), "socket": str(sp)}
    rp = _record_path(mountpoint)
    rp.write_text(json.dumps(rec))
    try:
        _FUSE(ops, str(mountpoint), foreground=True, fsname=f"faultfs:{backing}", subtype="faultfs",
                  # root's mounts serve the nodes of other users too; a login user's (an inventory's host, through
                  # fusermount3) serve its own nodes, and allow_other would need user_allow_other in /etc/fuse.conf
                  allow_other=os.geteuid() == 0, attr_timeout=0.0, entry_timeout=1.0, negative_timeout=0.0,
                  hard_remove=True, use_ino=True)
    finally:
        sock.close()
        sp.unlink(missing_ok=True)
        try:
            if json.loads(rp.read_text()).get("pid") == os.getpid():
                rp.unlink()
        except (OSError, ValueError):
            pass
    return 0


# ---------------------------------------------------------------- client side
def _request(mountpoint, cmd: str, timeout: float = 30.0) -> dict[str, Any]:
    mp = Path(mountpoint).resolve()
    sp = _socket_path(mp)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(str(sp))
        s.sendall((cmd + "\n").encode())
        reply = s.makefile("r").readline()
    except OSError as e:
        raise FaultfsError(f"{mp}: no faultfs daemon answers on {sp} ({e.strerror or e})") from None
    finally:
        s.close()
    try:
        doc = json.loads(reply)
    except ValueError:
        raise FaultfsError(f"{mp}: garbled reply from the faultfs daemon: {reply!r}") from None
    if not doc.get("ok"):
        raise FaultfsError(f"{mp}: faultfs daemon: {doc.get('error')}")
    doc.pop("ok", None)
    return doc


def mount(backing: str | Path, mountpoint: str | Path, log: str | Path | None = None,
          timeout: float = 15.0) -> dict[str, Any]:
    """Start a daemon that mounts backing at mountpoint (both directories are created); return when the mount
    answers. Returns the daemon's record {pid, mountpoint, backing, socket, startTime}."""
    backing, mountpoint = Path(backing).resolve(), Path(mountpoint).resolve()
    backing.mkdir(parents=True, exist_ok=True)
    mountpoint.mkdir(parents=True, exist_ok=True)
    if is_mounted(mountpoint):
        raise FaultfsError(f"{mountpoint}: already a faultfs mount")
    env = dict(os.environ)
    # on a host the FUSE binding (mfusepy) is among the libraries prepare unpacked into <workDir>/lib/py
    extra = [str(_REPO / "py")] if (_REPO / "py").is_dir() else []
    env["PYTHONPATH"] = os.pathsep.join([str(_REPO), *extra] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if log:
        Path(log).parent.mkdir(parents=True, exist_ok=True)
    out = open(log, "ab") if log else subprocess.DEVNULL
    try:
        p = subprocess.Popen([sys.executable, "-m", _MODULE, "serve", str(backing), str(mountpoint)],
                             cwd="/", env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True)
    finally:
        if log:
            out.close()
    deadline = time.monotonic() + timeout
    while True:
        rc = p.poll()
        if rc is not None:
            tail = ""
            if log:
                try:
                    tail = ": " + " | ".join(Path(log).read_text(errors="replace").strip().splitlines()[-5:])
                except OSError:
                    pass
            raise FaultfsError(f"{mountpoint}: faultfs daemon exited with status {rc} before mounting{tail}")
        if is_mounted(mountpoint):
            try:
                _request(mountpoint, "ping", timeout=2)
                rec = json.loads(_record_path(mountpoint).read_text())
                # the daemon is not our child to wait for: let it be reaped by nobody's business
                threading.Thread(target=p.wait, daemon=True).start()
                return rec
            except (FaultfsError, OSError, ValueError):
                pass
        if time.monotonic() > deadline:
            p.kill()
            raise FaultfsError(f"{mountpoint}: faultfs did not mount within {timeout:.0f} s")
        time.sleep(0.05)


def drop(mountpoint) -> dict[str, Any]:
    """Discard every write to mountpoint that no fsync/fdatasync made durable. Returns {files, pageBytes}."""
    return _request(mountpoint, "drop")


def checkpoint(mountpoint) -> dict[str, Any]:
    """Make every cached write to mountpoint durable, as if each file had been fsync'ed. Returns {files}."""
    return _request(mountpoint, "checkpoint")


def stats(mountpoint) -> dict[str, Any]:
    return _request(mountpoint, "stats")


def _fusermount_u(mountpoint: str, lazy: bool = False) -> subprocess.CompletedProcess:
    for tool in ("fusermount3", "fusermount"):
        try:
            return subprocess.run([tool, "-u"] + (["-z"] if lazy else []) + [mountpoint],
                                  capture_output=True, text=True)
        except FileNotFoundError:
            continue
    return subprocess.run(["umount"] + (["-l"] if lazy else []) + [mountpoint], capture_output=True, text=True)


def unmount(mountpoint, discard: bool = False, timeout: float = 15.0) -> None:
    """Unmount and wait for the daemon to exit. Unsynced writes are written back (a clean shutdown) unless
    discard; a busy mount is detached lazily (it disappears once the last user closes it)."""
    mp = str(Path(mountpoint).resolve())
    if not is_mounted(mp):
        return
    rec = None
    try:
        rec = json.loads(_record_path(mp).read_text())
    except (OSError, ValueError):
        pass
    if discard:
        try:
            drop(mp)
        except FaultfsError:
            pass
    r = _fusermount_u(mp)
    if r.returncode != 0 and is_mounted(mp):
        r = _fusermount_u(mp, lazy=True)
        if r.returncode != 0 and is_mounted(mp):
            raise FaultfsError(f"{mp}: unmount failed: {(r.stderr or r.stdout).strip()}")
    deadline = time.monotonic() + timeout
    while rec and _alive(rec) and time.monotonic() < deadline:
        time.sleep(0.05)
    if rec and _alive(rec):
        os.kill(int(rec["pid"]), 9)


def _stat_enotconn(mp: str, timeout: float = 5.0) -> bool:
    """True when stat(mp) fails with ENOTCONN or ECONNABORTED (a mount whose daemon is gone; the kernel answers
    either). A hung stat counts as alive."""
    res: list[bool] = []

    def probe():
        try:
            os.stat(mp)
            res.append(False)
        except OSError as e:
            res.append(e.errno in (errno.ENOTCONN, errno.ECONNABORTED))
    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout)
    return bool(res and res[0])


def sweep(log=None) -> list[str]:
    """Detach faultfs mounts left behind by killed daemons: only fuse.faultfs mounts that answer ENOTCONN (or
    ECONNABORTED) and
    that no live daemon's record names. Also deletes the records of dead daemons. Returns the mount points."""
    recs = _records()
    live = {r["mountpoint"] for r in recs if _alive(r)}
    for r in recs:
        if not _alive(r):
            _record_path(r["mountpoint"]).unlink(missing_ok=True)
            Path(r.get("socket", "")).unlink(missing_ok=True) if r.get("socket") else None
    removed = []
    for m in mounts():
        mp = m["mountpoint"]
        if mp in live or not _stat_enotconn(mp):
            continue
        r = _fusermount_u(mp, lazy=True)
        if r.returncode == 0 or not is_mounted(mp):
            removed.append(mp)
            if log:
                log(f"faultfs: swept dead mount {mp}")
        elif log:
            log(f"faultfs: could not detach dead mount {mp}: {(r.stderr or r.stdout).strip()}")
    return removed


def mounts_under(path) -> list[str]:
    """faultfs mount points at or below path (deepest first)."""
    root = str(Path(path).resolve())
    mps = [m["mountpoint"] for m in mounts() if m["mountpoint"] == root or m["mountpoint"].startswith(root + "/")]
    return sorted(set(mps), key=lambda s: (-s.count("/"), s))


RUN_MOUNTS = "faultfs-mounts.json"  # in a run directory: the run's mounts that lie outside it (a host's data disks)


def record_mount(rundir, mountpoint) -> None:
    """Add mountpoint to the run's list (testbeds/hostside/sbnode.py: a host's data directories are on its data
    disks, not under the run directory)."""
    f = Path(rundir) / RUN_MOUNTS
    try:
        have = json.loads(f.read_text())
    except (OSError, ValueError):
        have = []
    mp = str(Path(mountpoint).resolve())
    if mp not in have:
        tmp = f.with_name(f".{f.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(have + [mp]))
        os.replace(tmp, f)


def mounts_of(rundir) -> list[str]:
    """The run's faultfs mounts that are mounted: those under rundir and those its list names (deepest first)."""
    try:
        listed = set(json.loads((Path(rundir) / RUN_MOUNTS).read_text()))
    except (OSError, ValueError):
        listed = set()
    live = {m["mountpoint"] for m in mounts()}
    return sorted(set(mounts_under(rundir)) | (listed & live), key=lambda s: (-s.count("/"), s))


def users(mountpoint, writers_only: bool = False) -> list[int]:
    """Pids of processes that have a file under mountpoint open or mapped (their cwd does not count). writers_only:
    only those that can change what is there: a file open for writing, or a shared writable mapping (a reader, e.g.
    a `du` or a disk sampler walking the tree, holds directory and file descriptors open read-only)."""
    mp = str(Path(mountpoint).resolve())
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            hit = False
            for fd in os.listdir(f"/proc/{d}/fd"):
                try:
                    t = os.readlink(f"/proc/{d}/fd/{fd}")
                except OSError:
                    continue
                if (t == mp or t.startswith(mp + "/")) and (not writers_only or _fd_writes(d, fd)):
                    hit = True
                    break
            if not hit:
                with open(f"/proc/{d}/maps") as f:
                    hit = any((mp + "/") in line and (not writers_only or line.split()[1][1:4:2] == "ws")
                              for line in f)
        except OSError:
            continue
        if hit:
            out.append(int(d))
    return out


def _fd_writes(pid: str, fd: str) -> bool:
    """The descriptor was opened for writing (O_WRONLY or O_RDWR in its flags, /proc/PID/fdinfo/FD)."""
    try:
        for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
            if line.startswith("flags:"):
                return int(line.split()[1], 8) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)
    except (OSError, ValueError, IndexError):
        return True  # unreadable: count it, the safe side
    return True


def drop_all(rundir, nodes: list[str] | None = None, require_idle: bool = True) -> dict[str, dict[str, Any]]:
    """drop() the faultfs mounts of a run: every mount under rundir, or only those of the given nodes (from
    cluster.json["faultfs"]): a power loss of the whole cluster or of some nodes. Call it after the nodes' processes
    were killed (kill -9) and before restarting them; with require_idle (default) it refuses, naming the pids,
    while a process still has a file on those mounts open for writing or mapped shared and writable (a reader does
    not hold the drop: a `du` or disk sampler walking the tree once made a power-loss run fail, "pids 26064").
    Returns {mountpoint: {files, pageBytes}}."""
    rundir = Path(rundir)
    if nodes is None:
        mps = mounts_of(rundir)
    else:
        try:
            table = json.loads((rundir / "cluster.json").read_text()).get("faultfs") or {}
        except (OSError, ValueError) as e:
            raise FaultfsError(f"{rundir / 'cluster.json'}: cannot read the faultfs mounts ({e})") from None
        unknown = [n for n in nodes if n not in table]
        if unknown:
            raise FaultfsError(f"{rundir / 'cluster.json'}: faultfs: no mounts for node(s) {', '.join(unknown)} "
                               f"(nodes with mounts: {', '.join(table) or 'none'})")
        mps = [mp for n in nodes for mp in table[n]]
    if not mps:
        raise FaultfsError(f"{rundir}: no faultfs mounts (was the cluster started with --faultfs?)")
    if require_idle:
        busy = {mp: users(mp, writers_only=True) for mp in mps}
        busy = {mp: pids for mp, pids in busy.items() if pids}
        if busy:
            raise FaultfsError(f"{rundir}: refusing to drop while processes use the mounts for writing (kill them "
                               "first): "
                               + "; ".join(f"{mp}: pids {', '.join(map(str, p))}" for mp, p in busy.items()))
    return {mp: drop(mp) for mp in mps}


def checkpoint_all(rundir) -> dict[str, dict[str, Any]]:
    """checkpoint() every faultfs mount under rundir. Returns {mountpoint: result}."""
    return {mp: checkpoint(mp) for mp in mounts_of(rundir)}


def unmount_all(rundir, discard: bool = True) -> list[str]:
    """Unmount every faultfs mount of the run (mounts_of); returns the mount points."""
    mps = mounts_of(rundir)
    for mp in mps:
        unmount(mp, discard=discard)
    return mps


# ---------------------------------------------------------------- CLI
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m systems.faultfs",
                                 description="FUSE layer that keeps unsynced writes in memory and drops them "
                                             "on command (power-loss emulation)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("mount", help="start a daemon mounting BACKING at MOUNTPOINT; returns once mounted")
    p.add_argument("backing")
    p.add_argument("mountpoint")
    p.add_argument("--log", help="daemon output (default: discarded)")
    p = sub.add_parser("serve", help="the daemon, in the foreground")
    p.add_argument("backing")
    p.add_argument("mountpoint")
    for name, hlp in (("drop", "discard every write not made durable by fsync/fdatasync"),
                      ("checkpoint", "make every cached write durable (as if every file were fsync'ed)"),
                      ("stats", "cache state of the daemon (JSON)"),
                      ("unmount", "unmount (unsynced writes are written back unless --discard)")):
        p = sub.add_parser(name, help=hlp)
        p.add_argument("mountpoint", nargs="+")
        if name == "unmount":
            p.add_argument("--discard", action="store_true", help="drop unsynced writes instead")
    for name, hlp in (("checkpoint-run", "checkpoint every mount of the run in RUNDIR (JSON)"),
                      ("unmount-run", "unmount every mount of the run in RUNDIR (--discard: drop unsynced writes)")):
        p = sub.add_parser(name, help=hlp)
        p.add_argument("rundir")
        if name == "unmount-run":
            p.add_argument("--discard", action="store_true")
    sub.add_parser("sweep", help="detach faultfs mounts whose daemon is dead (ENOTCONN)")
    sub.add_parser("list", help="faultfs mounts of this host and their daemons (JSON)")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "serve":
            return serve(a.backing, a.mountpoint)
        if a.cmd == "mount":
            rec = mount(a.backing, a.mountpoint, log=a.log)
            print(json.dumps(rec))
        elif a.cmd in ("drop", "checkpoint", "stats"):
            fn = {"drop": drop, "checkpoint": checkpoint, "stats": stats}[a.cmd]
            for mp in a.mountpoint:
                print(json.dumps({"mountpoint": str(Path(mp).resolve()), **fn(mp)}))
        elif a.cmd == "unmount":
            for mp in a.mountpoint:
                unmount(mp, discard=a.discard)
        elif a.cmd == "checkpoint-run":
            print(json.dumps(checkpoint_all(a.rundir)))
        elif a.cmd == "unmount-run":
            print(json.dumps(unmount_all(a.rundir, discard=a.discard)))
        elif a.cmd == "sweep":
            for mp in sweep():
                print(mp)
        elif a.cmd == "list":
            live = {r["mountpoint"]: r for r in _records() if _alive(r)}
            print(json.dumps([{**m, "daemonPid": live.get(m["mountpoint"], {}).get("pid")} for m in mounts()],
                             indent=1))
        return 0
    except FaultfsError as e:
        print(f"faultfs: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
