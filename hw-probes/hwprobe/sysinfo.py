"""Host facts and the device/filesystem behind a directory (Linux /proc and /sys)."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def parse_cpuinfo(text: str) -> str | None:
    """First 'model name' (x86) or 'Model'/'Processor' (arm) value of /proc/cpuinfo."""
    for key in ("model name", "Model", "Processor", "cpu model"):
        for line in text.splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() == key and value.strip():
                return value.strip()
    return None


def parse_meminfo(text: str) -> int | None:
    """MemTotal of /proc/meminfo in bytes."""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                unit = parts[2].lower() if len(parts) > 2 else "b"
                return int(parts[1]) * (1024 if unit == "kb" else 1)
    return None


def parse_os_release(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return None


def _unescape_mount(field: str) -> str:
    # /proc/self/mountinfo escapes space, tab, newline and backslash as octal
    return (field.replace("\\040", " ").replace("\\011", "\t")
            .replace("\\012", "\n").replace("\\134", "\\"))


def parse_mountinfo(text: str, path: str) -> dict:
    """Mount point, filesystem type and source device holding `path` (longest matching mount point)."""
    best = None
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        lf, rf = left.split(), right.split()
        if len(lf) < 5 or len(rf) < 2:
            continue
        mnt = _unescape_mount(lf[4])
        inside = path == mnt or path.startswith(mnt.rstrip("/") + "/")
        if inside and (best is None or len(mnt) >= len(best["mountPoint"])):
            best = {"mountPoint": mnt, "filesystem": rf[0], "device": _unescape_mount(rf[1])}
    return best or {"mountPoint": None, "filesystem": None, "device": None}


def _device_model(device: str | None) -> str | None:
    """Model string from /sys/block for a /dev/<disk> (partitions map to their disk)."""
    if not device or not device.startswith("/dev/"):
        return None
    name = Path(device).name
    sys_class = Path("/sys/class/block") / name
    try:
        real = sys_class.resolve()
    except OSError:
        return None
    for candidate in (real, real.parent):
        model = _read(str(candidate / "device" / "model")).strip()
        if model:
            return model
    return None


def dir_facts(directory: str) -> dict:
    real = os.path.realpath(directory)
    facts = parse_mountinfo(_read("/proc/self/mountinfo"), real)
    facts["deviceModel"] = _device_model(facts["device"])
    return facts


def host_facts() -> dict:
    return {
        "cpuModel": parse_cpuinfo(_read("/proc/cpuinfo")) or platform.processor() or None,
        "cores": os.cpu_count(),
        "memBytes": parse_meminfo(_read("/proc/meminfo")),
        "kernel": platform.release(),
        "os": parse_os_release(_read("/etc/os-release")) or platform.system(),
    }


def hostname() -> str:
    return socket.gethostname()
