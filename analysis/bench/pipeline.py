"""Benchmark: the 124 published files -> every table, claims, _variables.yml, every figure, and the paper.

    .venv/bin/python analysis/bench/pipeline.py [--runs 3] [--mirror ../shared/published/streamnative-2020] [--cli]

Each run starts from the raw files (a fresh temp directory): checked copy from the mirror, ingest to parquet,
tables + claims + variables, ten figures, then the paper (HTML + PDF, the pandoc + typst path). Prints each
stage's time and the median over runs (wall and CPU). With --cli it also times the Snakemake path once (one
process per rule, as `snakemake -c2` runs them). Criteria, on the medians over runs: files -> tables and figures
<= 30 s (`to_figures` below) and paper render <= 60 s (`paper`), on the 2-core box; each printed with PASS or FAIL,
and the exit code is 0 only when both hold (1 otherwise).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import shutil  # noqa: E402

from analysis import figures, ingest, published, report  # noqa: E402
from paper import render as paper_render  # noqa: E402

PAPER_SOURCES = ["paper.md", "_quarto.yml", "style.css"]
# stage -> the most its median over runs may take (seconds of wall clock)
TARGETS = {"to_figures": 30.0, "paper": 60.0}

MANIFEST = REPO / "analysis" / "published" / "streamnative-2020.tsv"
REFERENCE = REPO / "data" / "reference" / "studies.csv"


def one_run(mirror: Path) -> dict:
    t = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        w0, c0 = time.perf_counter(), time.process_time()
        published.fetch(MANIFEST, tmp / "published", mirror=mirror)
        t["fetch"] = time.perf_counter() - w0
        w = time.perf_counter()
        ingest.write_atomic(ingest.build(tmp / "published", MANIFEST, REPO / "data" / "raw"), tmp / "derived")
        t["ingest"] = time.perf_counter() - w
        w = time.perf_counter()
        pdir = tmp / "paper"
        assert report.main(["--derived", str(tmp / "derived"), "--reference", str(REFERENCE), "--tables",
                            str(pdir / "tables"), "--variables", str(pdir / "_variables.yml")]) == 0
        t["tables"] = time.perf_counter() - w
        w = time.perf_counter()
        d = report.load(tmp / "derived", names=("runs", "windows", "stats", "probes"))
        for fid in figures.FIGURE_IDS:
            figures.render(d, REFERENCE, fid, pdir / "figures")
        t["figures"] = time.perf_counter() - w
        t["to_figures"] = time.perf_counter() - w0
        n = len(list((pdir / "figures").glob("*.svg"))), len(list((pdir / "tables").glob("*.md")))
        assert n == (10, 15), n
        for name in PAPER_SOURCES:
            shutil.copy(REPO / "paper" / name, pdir / name)
        w = time.perf_counter()
        outs = paper_render.render(pdir, renderer="pandoc", durability=REPO / "systems" / "durability.yaml")
        t["paper"] = time.perf_counter() - w
        assert all(p.stat().st_size > 0 for p in outs.values()), outs
        t["total"] = time.perf_counter() - w0
        t["cpu"] = time.process_time() - c0
    return t


def cli_run(mirror: Path) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        wd = Path(tmp)
        (wd / "data" / "reference").mkdir(parents=True)
        (wd / "data" / "reference" / "studies.csv").symlink_to(REFERENCE)
        (wd / "analysis").symlink_to(REPO / "analysis")
        (wd / "config.yaml").write_text(f"published: {{mirror: '{mirror}'}}\nanalysis: {{}}\n")
        (wd / "Snakefile").write_text('configfile: "config.yaml"\nALL_TARGETS = []\ninclude: "analysis/rules.smk"\n'
                                      "rule all:\n    input: ALL_TARGETS\n    default_target: True\n")
        env = dict(os.environ, PYTHONPATH=str(REPO), PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
        w = time.perf_counter()
        subprocess.run([sys.executable, "-m", "snakemake", "--nolock", "-c2", "-q", "all"], cwd=wd, env=env, check=True,
                       capture_output=True)
        return time.perf_counter() - w


def judge(results: list[dict]) -> int:
    """Checks the median of each targeted stage against TARGETS; prints one line each; 0 when all hold, else 1."""
    failed = []
    for stage, limit in TARGETS.items():
        med = statistics.median(r[stage] for r in results)
        ok = med <= limit
        failed += [] if ok else [stage]
        print(f"criterion {stage} median {med:.2f}s <= {limit:.0f}s: {'PASS' if ok else 'FAIL'}")
    print(f"verdict: {'PASS' if not failed else 'FAIL (' + ', '.join(failed) + ')'}")
    return 1 if failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mirror", type=Path, default=REPO / ".." / "shared" / "published" / "streamnative-2020")
    ap.add_argument("--cli", action="store_true", help="also time `snakemake -c2 all` of the analysis rules once")
    a = ap.parse_args()
    mirror = a.mirror.resolve()
    results = []
    for i in range(a.runs):
        t = one_run(mirror)
        results.append(t)
        print(f"run {i + 1}: " + "  ".join(f"{k} {v:.2f}s" for k, v in t.items()), flush=True)
    print("median: " + "  ".join(f"{k} {statistics.median(r[k] for r in results):.2f}s" for k in results[0]))
    if a.cli:
        print(f"snakemake -c2 (analysis targets, 13 jobs): {cli_run(mirror):.2f}s wall")
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (shared machine)")
    return judge(results)


if __name__ == "__main__":
    sys.exit(main())
