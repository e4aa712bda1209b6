"""Run dd and fio in a scratch folder of a data directory and read their results.

The parse_* functions are pure (they take a tool's captured output) so tests can check them against
captured outputs; the run_* functions run the real tools and return one probe document each.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from datetime import datetime, timezone

from hwprobe import ProbeError, sysinfo

# "67108864 bytes (67 MB, 64 MiB) copied, 0.0708048 s, 948 MB/s" (GNU coreutils, LC_ALL=C)
_DD_LINE = re.compile(r"^(\d+) bytes\b.*\bcopied, ([0-9.]+(?:e[-+]?\d+)?) s\b", re.MULTILINE)


def parse_dd(stderr: str, source: str = "dd") -> dict:
    """Bytes, seconds and MB/s (10^6 bytes per second) from dd's summary line on stderr."""
    m = _DD_LINE.search(stderr)
    if not m:
        raise ProbeError(f"{source}: no 'N bytes ... copied, T s' summary line in dd's output")
    nbytes, seconds = int(m.group(1)), float(m.group(2))
    if nbytes <= 0 or seconds <= 0:
        raise ProbeError(f"{source}: dd copied {nbytes} bytes in {seconds} s; cannot compute a rate")
    return {"writeMBps": round(nbytes / seconds / 1e6, 3), "bytes": nbytes, "seconds": seconds}


def _field(doc, path: str, source: str):
    cur = doc
    for part in path.split("."):
        key = int(part) if isinstance(cur, list) and part.isdigit() else part
        try:
            cur = cur[key]
        except (KeyError, IndexError, TypeError):
            raise ProbeError(f"{source}: fio JSON has no field '{path}'") from None
    return cur


def load_fio_json(text: str, source: str = "fio") -> dict:
    """fio's --output-format=json document; fio may print notes before the opening brace."""
    start = text.find("{")
    if start < 0:
        raise ProbeError(f"{source}: fio printed no JSON document")
    try:
        doc = json.loads(text[start:])
    except json.JSONDecodeError as e:
        raise ProbeError(f"{source}: fio output is not valid JSON ({e.msg} at char {e.pos + start})") from None
    err = _field(doc, "jobs.0.error", source)
    if err:
        raise ProbeError(f"{source}: fio job reports error {err} (field 'jobs.0.error')")
    return doc


def parse_fio_seq(doc: dict, source: str = "fio") -> dict:
    """Sequential-write throughput in MB/s (10^6 bytes/s) from the first job's write section."""
    bw = _field(doc, "jobs.0.write.bw_bytes", source)
    io_bytes = _field(doc, "jobs.0.write.io_bytes", source)
    runtime_ms = _field(doc, "jobs.0.write.runtime", source)
    if not io_bytes or not bw:
        raise ProbeError(f"{source}: fio wrote nothing (field 'jobs.0.write.io_bytes' = {io_bytes})")
    return {"writeMBps": round(bw / 1e6, 3), "bytes": io_bytes, "seconds": runtime_ms / 1000}


_PCTS = {"p50": "50.000000", "p99": "99.000000", "p99.9": "99.900000"}


def parse_fio_fsync(doc: dict, source: str = "fio") -> dict:
    """fdatasync latency percentiles (µs) from the job's "sync" section, and write+sync IOPS."""
    lat = _field(doc, "jobs.0.sync.lat_ns", source)
    n = _field(lat, "N", source + " jobs.0.sync.lat_ns")
    if not n:
        raise ProbeError(f"{source}: fio recorded no fdatasync calls (field 'jobs.0.sync.lat_ns.N' = {n})")
    pct = _field(lat, "percentile", source + " jobs.0.sync.lat_ns")
    out = {}
    for name, key in _PCTS.items():
        if key not in pct:
            raise ProbeError(f"{source}: fio JSON has no field 'jobs.0.sync.lat_ns.percentile.{key}'")
        out[name] = round(pct[key] / 1000, 3)
    out["max"] = round(_field(lat, "max", source) / 1000, 3)
    out["mean"] = round(_field(lat, "mean", source) / 1000, 3)
    return {"latencyUs": out, "iops": round(_field(doc, "jobs.0.write.iops", source), 3), "syncs": n}


# ---------------------------------------------------------------- running the tools

def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def check_dir(directory: str, create: bool = False, need_mb: float = 0) -> str:
    """The directory as an absolute path, or a ProbeError saying why a probe cannot write there."""
    path = os.path.abspath(directory)
    if not os.path.exists(path):
        if not create:
            raise ProbeError(f"data directory {path} does not exist (pass --create to make it)")
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as e:
            raise ProbeError(f"cannot create data directory {path}: {e.strerror}") from None
    if not os.path.isdir(path):
        raise ProbeError(f"data directory {path} is not a directory")
    try:
        fd, probe_file = tempfile.mkstemp(prefix=".hwprobe-check-", dir=path)
        os.close(fd)
        os.unlink(probe_file)
    except OSError as e:
        raise ProbeError(f"data directory {path} is not writable: {e.strerror}") from None
    if need_mb:
        st = os.statvfs(path)
        free_mb = st.f_bavail * st.f_frsize / 1e6
        if free_mb < need_mb * 1.1:
            raise ProbeError(f"data directory {path} has {free_mb:.0f} MB free; the probe needs {need_mb:.0f} MB")
    return path


@contextmanager
def scratch(directory: str):
    """A fresh sub-folder for the probe's test files, removed afterwards whatever happens."""
    path = tempfile.mkdtemp(prefix=".hwprobe-", dir=directory)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _tool(name: str) -> str:
    exe = shutil.which(name)
    if not exe:
        raise ProbeError(f"{name} not found on PATH (install it: env/apt-packages.txt lists it)")
    return exe


def _run(cmd: list[str], timeout_s: float, what: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, LC_ALL="C", LANG="C")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        raise ProbeError(f"{what} did not finish within {timeout_s:.0f} s") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["no output"])[-1]
        raise ProbeError(f"{what} failed (exit {proc.returncode}): {last}")
    return proc


def tool_version(name: str) -> str | None:
    proc = subprocess.run([_tool(name), "--version"], capture_output=True, text=True,
                          env=dict(os.environ, LC_ALL="C"))
    first = (proc.stdout or proc.stderr).strip().splitlines()
    return first[0].strip() if first else None


def envelope(probe: str, host: str, directory: str | None, params: dict, result: dict,
             tool: dict, started: str) -> dict:
    facts = sysinfo.dir_facts(directory) if directory else {}
    return {
        "probe": probe,
        "host": host,
        "dir": directory,
        "device": facts.get("device"),
        "filesystem": facts.get("filesystem"),
        "mountPoint": facts.get("mountPoint"),
        "deviceModel": facts.get("deviceModel"),
        "params": params,
        "result": result,
        "tool": tool,
        "startedAt": started,
        "endedAt": now_iso(),
    }


def probe_host(host: str, directory: str | None) -> dict:
    started = now_iso()
    return envelope("host", host, directory, {}, sysinfo.host_facts(),
                    {"name": "python", "version": platform.python_version()}, started)


def probe_dd(host: str, directory: str, size_mb: int, bs_kb: int, fdatasync: bool,
             timeout_s: float) -> dict:
    exe = _tool("dd")
    if size_mb <= 0 or bs_kb <= 0 or (size_mb * 1024) % bs_kb:
        raise ProbeError(f"dd: size_mb ({size_mb}) must be a positive multiple of bs_kb ({bs_kb}) / 1024")
    count = size_mb * 1024 // bs_kb
    flag = "conv=fdatasync" if fdatasync else "oflag=direct"
    started = now_iso()
    with scratch(directory) as work:
        cmd = [exe, "if=/dev/zero", f"of={os.path.join(work, 'dd.test')}", f"bs={bs_kb}K",
               f"count={count}", flag]
        proc = _run(cmd, timeout_s, "dd")
    result = parse_dd(proc.stderr)
    params = {"sizeMB": size_mb, "bsKB": bs_kb, "flag": flag,
              "command": f"dd if=/dev/zero of=<scratch>/dd.test bs={bs_kb}K count={count} {flag}"}
    return envelope("dd-fdatasync" if fdatasync else "dd", host, directory, params, result,
                    {"name": "dd", "version": tool_version("dd")}, started)


def _fio(args: list[str], timeout_s: float) -> dict:
    exe = _tool("fio")
    proc = _run([exe, *args, "--output-format=json"], timeout_s, "fio")
    return load_fio_json(proc.stdout)


def probe_fio_seq(host: str, directory: str, size_mb: int, bs: str, runtime_s: int,
                  timeout_s: float) -> dict:
    started = now_iso()
    params = {"rw": "write", "bs": bs, "sizeMB": size_mb, "runtimeS": runtime_s, "direct": 1,
              "ioengine": "psync", "endFsync": 1}
    with scratch(directory) as work:
        doc = _fio(["--name=seqwrite", f"--directory={work}", "--rw=write", f"--bs={bs}",
                    f"--size={size_mb}m", "--direct=1", "--ioengine=psync", "--end_fsync=1",
                    f"--runtime={runtime_s}", "--unlink=1"], timeout_s)
    result = parse_fio_seq(doc)
    return envelope("fio-seqwrite", host, directory, params, result,
                    {"name": "fio", "version": doc.get("fio version")}, started)


def probe_fio_fsync(host: str, directory: str, size_mb: int, bs: str, runtime_s: int,
                    timeout_s: float) -> dict:
    started = now_iso()
    params = {"rw": "write", "bs": bs, "sizeMB": size_mb, "runtimeS": runtime_s, "fdatasync": 1,
              "ioengine": "sync", "direct": 0}
    with scratch(directory) as work:
        doc = _fio(["--name=fsync", f"--directory={work}", "--rw=write", f"--bs={bs}",
                    f"--size={size_mb}m", "--fdatasync=1", "--ioengine=sync", "--direct=0",
                    f"--runtime={runtime_s}", "--unlink=1"], timeout_s)
    result = parse_fio_fsync(doc)
    return envelope("fio-fsync", host, directory, params, result,
                    {"name": "fio", "version": doc.get("fio version")}, started)


def write_json_atomic(path: str, doc: dict) -> None:
    """Write next to the target, fsync, then rename: a reader never sees half a file."""
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=2, sort_keys=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
