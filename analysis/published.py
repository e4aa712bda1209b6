"""Fetch a study's published raw results by pinned URL (or from a local mirror), checked against the manifest.

python -m analysis.published --manifest analysis/published/streamnative-2020.tsv --out data/published/streamnative-2020
                             (--mirror DIR | --url-base URL)

Each file's size and git blob SHA-1 must match the manifest. Files are staged in a temporary directory next to
--out and the directory is renamed into place only when every file checked out; a bad file leaves nothing behind
and the error names it.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import os
import shutil
import sys
import tempfile
import urllib.request
from pathlib import Path

from . import InputError


def read_manifest(path) -> dict:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    need = {"local_path", "repo", "commit", "source_path", "blob_sha1", "bytes"}
    if not rows or not need <= set(rows[0]):
        raise InputError(path, "header", f"manifest needs columns {sorted(need)}")
    return {r["local_path"]: r for r in rows}


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _get(row, mirror: Path | None, url_base: str | None) -> tuple[bytes, str]:
    if mirror is not None:
        # a mirror keeps either the repository's layout (source_path) or the manifest's (local_path)
        src = mirror / row["source_path"]
        if not src.exists() and (mirror / row["local_path"]).exists():
            src = mirror / row["local_path"]
        try:
            return src.read_bytes(), str(src)
        except OSError as e:
            raise InputError(src, "(file)", f"cannot read from mirror: {e.strerror}") from None
    url = url_base + row["source_path"]
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.read(), url
    except OSError as e:
        raise InputError(url, "(download)", str(e)) from None


def fetch(manifest_path: Path, out: Path, mirror: Path | None = None, url_base: str | None = None) -> int:
    if (mirror is None) == (url_base is None):
        raise ValueError("give exactly one of mirror and url_base")
    rows = read_manifest(manifest_path)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        for local, row in sorted(rows.items()):
            data, where = _get(row, Path(mirror) if mirror is not None else None, url_base)
            if len(data) != int(row["bytes"]):
                raise InputError(where, "bytes", f"size {len(data)} != manifest {row['bytes']}")
            sha = git_blob_sha1(data)
            if sha != row["blob_sha1"]:
                raise InputError(where, "blob_sha1", f"git blob SHA-1 {sha} != manifest {row['blob_sha1']}")
            dst = stage / local
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(data)
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.replace(out, old / "x")
            os.replace(stage, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(stage, out)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
    return len(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--manifest", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--mirror", type=Path, help="a local copy of the files; used when the directory exists")
    ap.add_argument("--url-base", help="the pinned download location; used when no mirror directory exists")
    a = ap.parse_args(argv)
    if a.mirror is None and a.url_base is None:
        ap.error("give --mirror, --url-base or both")
    mirror = a.mirror if a.mirror is not None and a.mirror.is_dir() else None
    url_base = None if mirror is not None else a.url_base
    if mirror is None and url_base is None:
        print(f"error: {a.mirror}: mirror directory not found and no --url-base to download from", file=sys.stderr)
        return 2
    print(f"source: {'mirror ' + str(mirror) if mirror else 'download from ' + url_base}"
          + (f" (mirror {a.mirror} not found)" if a.mirror is not None and mirror is None else ""))
    try:
        n = fetch(a.manifest, a.out, mirror, url_base)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{n} files checked into {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
