"""A local-scale paper: the fake paper of conftest.py, with the tables the `local` profile fills written by the
analysis stage's own code from synthetic result files, so the render checks see the columns and the widest
labels a local run puts in them (the ci data has no study-001 or study-003 row).

Tables made here (the other tables keep conftest's one-row stand-ins):
- study001-runs, study001-claims (analysis.study001): a run of every study-001 series the local profile runs,
  every variant label (batch-128k-1ms, batch-1m-10ms, no-batch, none), both message sizes, 1 and 16
  partitions, keyed and NO_KEY, a fixed-rate point and a max-rate point, a suspect run (the longest testbed label);
- study003-fanout, study003-claims (analysis.study003): the local ladder on both systems and both layouts;
- study002-runs, study002-claims (analysis.study002): E002-LAT on one partition, both systems, flush and no flush,
  a suspect run;
- study004-runs, study004-claims (analysis.study004): E004-T1C1 (rate search, one at its ceiling) and E004-T2 in every
  configuration the local profile runs, a suspect run.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from analysis import study001, study002, study003, study004
from analysis.report import write_table
from analysis.tests import fixtures
from analysis.tests.paths import REFERENCE

from .conftest import make_paper

# (system, level directory) of every study-001 series (analysis.study001.LABEL)
STUDY001_SERIES = [("pravega", "L1+stock"), ("pravega", "L2+stock"), ("kafka", "L2+stock+batch-128k-1ms"),
                   ("kafka", "L1+stock+batch-128k-1ms"), ("kafka", "L2+stock+batch-1m-10ms"),
                   ("pulsar", "L1+stock+batch-128k-1ms"), ("pulsar", "L1+stock+no-batch")]
STUDY001_WORKLOADS = ["1-topic-16-partitions-100b-1p-1c-keyed-10k", "1-topic-1-partition-10kb-1p-1c-nokey-max"]
FANOUT_LADDER = {20000: 100, 30000: 250, 40000: 500, 100000: 1000}  # workloads/experiments.yaml, local fanout_map


def _study001_result(n: int, suspect: bool) -> dict:
    """A runner result with wide numbers: six-digit rates, four-digit latencies."""
    d = fixtures.streambench(publish_us=[1_234_567 + 1000 * n] * 20, e2e_us=[2_345_678 + 1000 * n] * 20)
    d["consumeRate"] = [123456.7] * len(d["consumeRate"])
    d["x-streambench"]["producerRate"] = {"target": 1_000_000.0, "achieved": 987_654.3 - n}
    d["x-streambench"]["audit"]["lost"] = 12345
    if suspect:
        d["x-streambench"]["testbedHost"] = {"validity": {"status": "suspect", "reasons": ["load"]}}
    return d


def _fanout_result(consumers: int, connected: int) -> dict:
    times = [round(3000 + 40 * consumers * i / max(connected, 1)) for i in range(connected)]
    conn = times + [-1] * (consumers - connected)
    return {"x-streambench": {
        "fanOut": {"consumers": consumers, "connected": connected, "neverConnected": consumers - connected,
                   "connectionTimeSeconds": max(times) / 1000 if times else None,
                   "perConsumer": {"connected": conn}},
        "endToEndLatencyMicros": {"count": 10 * connected, "p50": 345_678.9, "p99": 1_234_567.8},
        "audit": {"lost": 0}}}


# (system, level directory) of the study-002 and study-004 configurations the local profile runs
STUDY002_LEVELS = [("pulsar", "L1+stock"), ("pulsar", "L2+stock"), ("kafka", "L1+stock"), ("kafka", "L2+stock")]
STUDY004_LEVELS = [("pulsar", "L1+stock"), ("pulsar", "L2+stock"), ("pulsar", "L2-bypass+stock"), ("kafka", "L1+stock"),
                   ("kafka", "L2+stock")]


def _latency_result(n: int, suspect: bool, partitions: int, target: float | None, ceiling: bool = False) -> dict:
    """A runner result with wide numbers: four-digit latencies, 20 000 samples (enough for a P99.99)."""
    d = fixtures.streambench(publish_us=[1_234_567 + 1000 * n] * 19_990 + [9_876_543] * 10,
                             e2e_us=[2_345_678 + 1000 * n] * 200)
    d["partitions"] = partitions
    d["x-streambench"]["producerRate"] = {"target": target, "achieved": 48_828.1 - n}
    if target is None:
        d["x-streambench"]["rateDiscovery"] = {"settledRate": 48_828.1 - n, "ceilingReached": ceiling, "steps": []}
    d["x-streambench"]["audit"]["lost"] = 12345
    if suspect:
        d["x-streambench"]["testbedHost"] = {"validity": {"status": "suspect", "reasons": ["load"]}}
    return d


def write_local_raw(raw: Path) -> None:
    n = 0
    for system, level_dir in STUDY001_SERIES:
        for workload in STUDY001_WORKLOADS:
            rate = "100000" if workload.endswith("-10k") else None
            wid = f"{workload}--rate-{rate}" if rate else workload
            n += 1
            fixtures.write(raw / "local" / system / level_dir / wid / "rep-1.json",
                           _study001_result(n, suspect=(n == 1)))
    for system, level_dir in STUDY002_LEVELS:
        n += 1
        fixtures.write(raw / "local" / system / level_dir / "1-topic-1-partition-100b-1p-1c-50k" / "rep-1.json",
                       _latency_result(n, suspect=(system, level_dir) == ("kafka", "L1+stock"), partitions=1,
                                       target=1000.0))
    for system, level_dir in STUDY004_LEVELS:
        n += 1
        fixtures.write(raw / "local" / system / level_dir / "1-topic-1-partition-1kb-4p-1c-max" / "rep-1.json",
                       _latency_result(n, suspect=False, partitions=1, target=None, ceiling=system == "pulsar"))
        fixtures.write(raw / "local" / system / level_dir / "1-topic-100-partitions-1kb-4p-4c-500k" / "rep-1.json",
                       _latency_result(n, suspect=level_dir.startswith("L2-bypass"), partitions=16, target=5000.0))
    for study_n, consumers in FANOUT_LADDER.items():
        k = study_n // 1000
        for system, layout in (("pulsar", f"1c-{k}ksub"), ("kafka", f"1c-{k}ksub"), ("pulsar", f"{k}kc-shared")):
            if system == "kafka" and layout.endswith("shared"):
                continue
            connected = consumers if system == "pulsar" else int(consumers * 0.727)
            fixtures.write(raw / "local" / system / "L1+stock" / f"1-topic-1-partition-10kb-1p-{layout}-1" / "rep-1.json",
                           _fanout_result(consumers, connected))


def write_local_tables(raw: Path, tables: Path) -> None:
    """The tables, written by the analysis modules' own table code (the same calls as their main())."""
    assert study001.main(["--raw", str(raw), "--reference", str(REFERENCE), "--tables", str(tables), "--id", "tables"]) == 0
    ours, pub = study003.runs(raw), study003.published(REFERENCE)
    rows = sorted(ours, key=lambda r: (r["system"], r["layout"], r["consumers"])) + pub
    write_table(tables, "study003-fanout", study003.TABLE_COLS, rows, study003.MD_COLS)
    write_table(tables, "study003-claims", study003.CLAIM_COLS, study003.claims(pub, ours), study003.MD_CLAIM_COLS)
    for module in (study002, study004):
        assert module.main(["--raw", str(raw), "--reference", str(REFERENCE), "--tables", str(tables)]) == 0


def make_local_paper(dest: Path) -> Path:
    paper = make_paper(dest)
    raw = dest / "raw"
    write_local_raw(raw)
    write_local_tables(raw, paper / "tables")
    variables = yaml.safe_load((paper / "_variables.yml").read_text())
    variables["local"].update(testbed="local", runs=len(list(raw.glob("*/*/*/*/rep-*.json"))))
    (paper / "_variables.yml").write_text(yaml.safe_dump(variables, sort_keys=False))
    return paper


OUTPUTS = ("figures", "tables", "_variables.yml")


def fill(paper: Path, replace: bool = False) -> None:
    """Write the local-scale paper's analysis outputs (figures/, tables/, _variables.yml) into `paper`, a checkout's
    paper/ folder, to render it with Quarto by hand (docs/quarto-by-hand.md). Outputs already there are kept
    unless `replace`: they may be the real ones."""
    import shutil
    import tempfile
    if not paper.is_dir():
        raise FileNotFoundError(f"{paper}: no such folder")
    there = [name for name in OUTPUTS if (paper / name).exists()]
    if there and not replace:
        raise FileExistsError(f"{paper / there[0]}: exists (real analysis outputs?); pass --replace to overwrite")
    with tempfile.TemporaryDirectory(prefix="local-fixture-") as tmp:
        made = make_local_paper(Path(tmp))
        for name in OUTPUTS:
            if (paper / name).is_dir():
                shutil.rmtree(paper / name)
            (shutil.copytree if (made / name).is_dir() else shutil.copy)(made / name, paper / name)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys
    ap = argparse.ArgumentParser(prog="python -m paper.tests.local_fixture", description=fill.__doc__.split("\n")[0])
    ap.add_argument("paper", type=Path, help="the paper/ folder to fill (a clone's, not the one you work in)")
    ap.add_argument("--replace", action="store_true", help="overwrite figures/, tables/ and _variables.yml")
    args = ap.parse_args(argv)
    try:
        fill(args.paper, args.replace)
    except (FileExistsError, FileNotFoundError) as e:
        print(f"local_fixture: error: {e}", file=sys.stderr)
        return 2
    print(f"local-scale fixture outputs written to {args.paper}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
