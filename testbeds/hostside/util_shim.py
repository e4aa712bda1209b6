"""sbhost.util on a remote host: the two names systems/proc.py imports from systems/util.py, standard library
only (systems/util.py itself needs PyYAML, which a bare host lacks)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


class SystemsError(RuntimeError):
    """A one-line, user-facing error."""


def atomic_write_text(path: Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
