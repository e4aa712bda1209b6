"""Shared helpers of the testbeds stage: errors, commands, atomic writes, the controller's network namespace."""
from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from systems.util import atomic_write_json, atomic_write_text, cache_dir, root  # noqa: F401 (re-exported)

ENTERED_ENV = "STREAMBENCH_CONTROLLER_NETNS"


class TestbedError(RuntimeError):
    """A testbed failure with a one-line, user-facing message (naming the host, file and field)."""


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def run(cmd: list[str], *, check: bool = True, input: str | None = None, timeout: float = 120,
        what: str | None = None) -> subprocess.CompletedProcess:
    """Run cmd, capturing its output; on failure raise TestbedError with its last line of stderr."""
    try:
        res = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TestbedError(f"{what or cmd[0]}: no answer within {timeout:.0f} s ({' '.join(cmd)})") from None
    if check and res.returncode != 0:
        msg = (res.stderr.strip() or res.stdout.strip()).splitlines()
        raise TestbedError(f"{what or ' '.join(cmd)}: exit {res.returncode}: {msg[-1] if msg else ''}")
    return res


def netns_inode(name: str | None) -> int | None:
    """Inode of a named network namespace (/run/netns/NAME), or of ours when name is None."""
    try:
        return os.stat(f"/run/netns/{name}" if name else "/proc/self/ns/net").st_ino
    except OSError:
        return None


def in_controller(ns: str | None) -> bool:
    return ns is None or netns_inode(ns) == netns_inode(None)


def reexec_in(ns: str | None) -> None:
    """Re-run this Python command inside the controller's network namespace (`ip netns exec NS`) when an
    inventory names one (the lab) and we are not in it yet. The hosts' addresses exist only there."""
    if in_controller(ns):
        return
    if netns_inode(ns) is None:
        raise TestbedError(f"controller network namespace {ns} does not exist (is the lab up?)")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp("ip", ["ip", "netns", "exec", ns, sys.executable, "-m", _main_module(), *sys.argv[1:]])


def _main_module() -> str:
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return spec.name.removesuffix(".__main__") if spec else "testbeds"


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text())
