"""Byte-identical reruns: the published-only part of the DAG, twice, in two fresh copies; compare every output.

    python -m env.rerun [--mirror DIR] [--confluent-mirror DIR] [--keep DIR]

Each copy holds the repository's files (tracked and untracked, not ignored: `git ls-files`) and nothing it
made before; Snakemake runs there with `--profile published` (no probe, no cluster) every
analysis rule and the paper: the tidy tables, every figure (SVG, PNG, PDF, JSON), every table (CSV, MD),
paper/_variables.yml and paper/_build/paper.{html,pdf}. Then the sha256 of every output file is compared
and the first file that differs is named. Exit 0 when both runs made the same files with the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# what the published-only DAG writes (relative to the copy); logs and Snakemake's state are not outputs
OUTPUTS = ["data/derived", "paper/figures", "paper/tables", "paper/_variables.yml", "paper/_build"]


class RerunError(Exception):
    pass


# the published files each study needs: config key under `published`, and where this checkout downloads them
MIRRORS = {"mirror": "data/published/streamnative-2020", "confluent_mirror": "data/published/confluent-2020"}


def default_mirrors() -> dict[str, Path | None]:
    """Where the published files are, per `published` key: the configured mirror, else this checkout's download."""
    sys.path.insert(0, str(ROOT))
    from env import configcheck
    checked = configcheck.check(("env/config.yaml", configcheck.load_yaml(configcheck.BASE_CONFIG)), None)
    found: dict[str, Path | None] = {}
    for key, download in MIRRORS.items():
        found[key] = None
        for candidate in (checked["published"].get(key), download):
            if candidate and (ROOT / candidate).is_dir():
                found[key] = (ROOT / candidate).resolve()
                break
    return found


def source_files(root: Path = ROOT) -> list[str]:
    r = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                       capture_output=True, check=True)
    return sorted({f for f in r.stdout.decode().split("\0") if f and ((root / f).is_file() or (root / f).is_symlink())})


def make_copy(dest: Path, files: list[str]) -> None:
    for f in files:
        target = dest / f
        target.parent.mkdir(parents=True, exist_ok=True)
        src = ROOT / f
        if src.is_symlink():
            os.symlink(os.readlink(src), target)
        else:
            shutil.copy2(src, target)


def run_dag(copy: Path, mirrors: dict[str, Path], log: Path) -> None:
    conf = copy / ".rerun-config.yaml"
    conf.write_text("published:\n" + "".join(f"  {key}: {json.dumps(str(path))}\n" for key, path in mirrors.items()))
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{copy}:{copy / 'hw-probes'}"
    env["XDG_CONFIG_DIRS"] = f"{copy / 'env' / 'xdg'}:{env.get('XDG_CONFIG_DIRS', '/etc/xdg')}"
    env["STREAMBENCH_ROOT"] = str(copy)
    rules = subprocess.run(["snakemake", "--profile", "env/profiles/published", "--configfile", str(conf),
                            "--list-rules"], cwd=copy, env=env, capture_output=True, text=True)
    if rules.returncode != 0:
        raise RerunError(f"snakemake --list-rules failed in {copy}: {(rules.stderr.strip().splitlines() or [''])[-1]}")
    targets = sorted(r for r in rules.stdout.split() if r.startswith("analysis_") or r == "paper")
    with open(log, "w") as lf:
        r = subprocess.run(["snakemake", "--profile", "env/profiles/published", "--configfile", str(conf),
                            "--cores", "2", *targets], cwd=copy, env=env, stdout=lf, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-20:]
        raise RerunError(f"the published-only DAG failed in {copy} (log {log}):\n" + "\n".join(tail))


def digests(copy: Path) -> dict[str, str]:
    out = {}
    for rel in OUTPUTS:
        p = copy / rel
        files = [p] if p.is_file() else sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else []
        for f in files:
            out[f.relative_to(copy).as_posix()] = hashlib.sha256(f.read_bytes()).hexdigest()
    return dict(sorted(out.items()))


def compare(a: dict[str, str], b: dict[str, str]) -> str | None:
    """The first difference between two runs' digests, in path order, or None."""
    for path in sorted(set(a) | set(b)):
        if path not in b:
            return f"{path}: made by the first run only"
        if path not in a:
            return f"{path}: made by the second run only"
        if a[path] != b[path]:
            return f"{path}: differs between the two runs (sha256 {a[path][:12]} vs {b[path][:12]})"
    return None


def rerun(mirrors: dict[str, Path], work: Path) -> dict[str, str]:
    files = source_files()
    runs = []
    for name in ("run-1", "run-2"):
        copy = work / name
        make_copy(copy, files)
        run_dag(copy, mirrors, work / f"{name}.log")
        runs.append(digests(copy))
    if not runs[0]:
        raise RerunError("the first run made no output files")
    diff = compare(*runs)
    if diff:
        raise RerunError(diff)
    return runs[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m env.rerun", description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", type=Path, default=None, help="study 000's published files (default: the config's)")
    ap.add_argument("--confluent-mirror", type=Path, default=None,
                    help="the Confluent 2020 files study 000 answers (default: the config's)")
    ap.add_argument("--keep", type=Path, default=None, help="keep both copies under this directory")
    a = ap.parse_args(argv)
    mirrors = default_mirrors()
    for key, given in (("mirror", a.mirror), ("confluent_mirror", a.confluent_mirror)):
        mirrors[key] = given.resolve() if given else mirrors[key]
        if mirrors[key] is None:
            flag = "--" + key.replace("_", "-")
            print(f"env.rerun: error: no copy of the published files of published.{key}; pass {flag} DIR", file=sys.stderr)
            return 2
    work = a.keep or Path(tempfile.mkdtemp(prefix="streambench-rerun-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        out = rerun(mirrors, work)
        print(f"identical: {len(out)} files in two runs", file=sys.stderr)
        return 0
    except RerunError as e:
        print(f"env.rerun: error: {e}", file=sys.stderr)
        return 1
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
