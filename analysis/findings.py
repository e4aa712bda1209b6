"""The numbers of the paper's findings (paper/sections/findings.qmd): each study's headline as the study printed it,
and as this project's testbeds measured it, with the median and range over repetitions.

Called by analysis.report (`--findings-tables paper/tables`), which writes the result as the `findings.*` keys of
paper/_variables.yml. Inputs: the runs tables the study modules write (paper/tables/study001-runs.csv,
study002-runs.csv, study003-fanout.csv, study004-runs.csv: one row per run of every testbed), the fault runs
analysis.faults writes (data/derived/faults.parquet), the derived runs and stats of analysis.ingest (study 000) and
the studies' printed numbers (data/reference/studies.csv, read by each study module's own `published`).

Every "measured" text names the scales `local` and `aws` and then any other testbed with data (ci, hosts, lab), each
as `<testbed>: <numbers>` or `<testbed>: not measured at this scale`. A number over several runs reads
"12.3 ms (median of 3 runs, range 11.0–14.1)", over one run "12.3 ms (1 run)"; runs judged suspect
(workloads.run) are counted with their testbed and the text says how many there were.
"""
from __future__ import annotations

import csv
import statistics
from pathlib import Path

import polars as pl

from . import InputError, faults, study002, study003, study004

SCALES = ("local", "aws")  # always named in a measured text; other testbeds only when they have data
NOT_MEASURED = "not measured at this scale"
SUSPECT = " (suspect)"
SYSTEM_NAME = {"kafka": "Kafka", "pulsar": "Pulsar", "pravega": "Pravega"}

# the columns each study table must have for its finding (file name -> columns)
TABLES = {
    "study001-runs.csv": ["testbed", "system", "level", "variant", "partitions", "message_bytes", "keys", "sweep_point",
                          "publish_eps"],
    "study002-runs.csv": ["testbed", "system", "mode", "partitions", "ran_with_partitions", "offered_msgps",
                          "publish_p99_ms"],
    "study003-fanout.csv": ["source", "testbed", "system", "layout", "study_consumers", "consumers",
                            "connection_time_s", "never_connected", "e2e_p99_s"],
    "study004-runs.csv": ["testbed", "experiment", "configuration", "ran_with_partitions", "achieved_mibps",
                          "ceiling_reached", "publish_p99_ms"],
}
FAULT_RUNS = "faults.parquet"


# ---------------------------------------------------------------- reading

def read_table(tables: Path, name: str) -> list[dict]:
    """One study table's rows (strings, '' for an empty cell); a missing file or column is one error naming it."""
    p = Path(tables) / name
    if not p.is_file():
        raise InputError(p, "(file)", "missing; the study module's rule writes it (analysis/*.smk)")
    with open(p, newline="") as fh:
        r = csv.DictReader(fh)
        missing = [c for c in TABLES[name] if c not in (r.fieldnames or [])]
        if missing:
            raise InputError(p, missing[0], "column missing")
        rows = list(r)
    return rows


def number(row: dict, col: str, where: str) -> float | None:
    v = row.get(col, "")
    if v in ("", None):
        return None
    try:
        return float(v)
    except ValueError:
        raise InputError(where, col, f"{v!r} is not a number") from None


# ---------------------------------------------------------------- text

def num(v: float, like: float | None = None) -> str:
    """12345.6 -> '12 346', 123.45 -> '123', 12.345 -> '12.3', 1.2345 -> '1.23', 0.01234 -> '0.0123'; with `like`,
    the decimals `like` would get (a range's ends written as its median is)."""
    a = abs(v if like is None else like)
    if a >= 1000:
        return f"{v:,.0f}".replace(",", " ")
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    if like is not None and a > 0:
        import math
        return f"{v:.{max(2 - math.floor(math.log10(a)), 0)}f}"
    return f"{v:.3g}"


def base_testbed(testbed: str) -> str:
    return testbed.removesuffix(SUSPECT)


def summary(values: list[tuple[float | None, bool]], unit: str, note: str = "") -> tuple[float | None, str]:
    """(median, text) of one quantity over its runs, each (value or None, suspect). The text is the median and the
    range over the runs with a value, or the one run's value, and `note` in its parentheses; None when no run has a
    value."""
    vals = sorted(v for v, _ in values if v is not None)
    if not vals:
        return None, None
    suspect = sum(1 for v, s in values if s and v is not None)
    med = statistics.median(vals)
    u = f" {unit}" if unit else ""
    tail = "".join(f"; {x}" for x in (f"{suspect} suspect" if suspect and len(vals) > 1 else "", note) if x)
    if len(vals) == 1:
        return med, f"{num(med)}{u} (1 run{', suspect' if suspect else ''}{tail})"
    return med, f"{num(med)}{u} (median of {len(vals)} runs, range {num(vals[0], med)}–{num(vals[-1], med)}{tail})"


def measured(names: list, value_of, unit: str, note_of=lambda name: "") -> dict:
    """{name: (median, text)} for each name: `value_of(name)` gives its runs as [(value, suspect)], `note_of(name)` a
    note for the parentheses; a name without runs reads 'not run', one whose runs lack the value 'no value in its n
    run(s)'."""
    out = {}
    for name in names:
        runs = value_of(name)
        med, text = summary(runs, unit, note_of(name))
        if not runs:
            text = "not run"
        elif med is None:
            text = f"no value in its {len(runs)} run{'s' if len(runs) > 1 else ''}"
        out[name] = (med, text)
    return out


def join(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1] if parts else ""


def per_scale(texts: dict[str, str]) -> str:
    """'local: …; aws: not measured at this scale[; ci: …]' from {testbed: text of its data} (texts use no ';')."""
    order = list(SCALES) + sorted(t for t in texts if t not in SCALES)
    return "; ".join(f"{tb}: {texts.get(tb) or NOT_MEASURED}" for tb in order)


def by_testbed(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(base_testbed(r["testbed"]), []).append(r)
    return out


def _pairs(rows: list[dict], col: str, where: str) -> list[tuple[float | None, bool]]:
    return [(number(r, col, where), r["testbed"].endswith(SUSPECT)) for r in rows]


def ran_with(partitions, rates=()) -> str:
    """', ran with 16 partitions[ at 1 000 msg/s]' (the sizes the runs had), '' when none is known."""
    ps = sorted({int(float(p)) for p in partitions if p not in (None, "")})
    if not ps:
        return ""
    rs = sorted({float(r) for r in rates if r not in (None, "")})
    return (f", ran with {join([str(p) for p in ps])} partition{'s' if ps != [1] else ''}"
            + (f" at {join([num(r) for r in rs])} msg/s" if rs else ""))


def ratio_text(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else ""


# ---------------------------------------------------------------- study 000 (derived runs and stats)

def _s000_runs(runs: pl.DataFrame) -> pl.DataFrame:
    return runs.filter((pl.col("source") == "local") & (pl.col("level") == "L1"))


def _s000_text(df: pl.DataFrame, col: str, unit: str) -> dict[str, str]:
    """{testbed: 'Kafka … (n runs) and Pulsar …, ran with N partitions'} of one column of `df` (one row per run)."""
    out = {}
    for tb in sorted(set(df["testbed"].to_list())):
        mine = df.filter(pl.col("testbed") == tb)

        def value_of(s, mine=mine):
            g = mine.filter(pl.col("system") == s)
            return list(zip(g[col].to_list(), [str(x).endswith(SUSPECT) for x in g["testbed_label"].to_list()]))

        m = measured(["kafka", "pulsar"], value_of, unit)
        parts = [f"{SYSTEM_NAME['kafka']} {m['kafka'][1]}", f"{SYSTEM_NAME['pulsar']} {m['pulsar'][1]}"]
        out[tb] = join(parts) + ran_with(mine["effective_partitions"].to_list())
    return out


def s000(runs: pl.DataFrame, stats: pl.DataFrame) -> dict:
    """This testbed's Level-1 maximum throughput (E000-MT1: 100 partitions, 2 producers as the study names it) and
    p99 end-to-end latency with one subscription (E000-LAT1, 100 partitions as the study names it)."""
    loc = _s000_runs(runs)
    mt = loc.filter((pl.col("experiment") == "E000-MT1") & (pl.col("producers_per_topic") == 2)).unique("path")
    lat = loc.filter(pl.col("experiment").is_in(["E000-LAT1", "E000-LAT3"]) & (pl.col("subscriptions") == 1)
                     & (pl.col("partitions") == 100)).unique("path")
    lat = lat.join(stats.filter(pl.col("metric") == "e2e").select("run_id", "p99_ms"), on="run_id", how="left")
    return {"maxtput_measured": per_scale(_s000_text(mt, "publish_mean_mibps", "MiB/s")),
            "e2e_p99_measured": per_scale(_s000_text(lat, "p99_ms", "ms"))}


# ---------------------------------------------------------------- study 001

S001_SERIES = {"Pravega (flush)": ("pravega", "L1", ""), "Kafka (no flush)": ("kafka", "L2", "batch-128k-1ms")}


def s001(tables: Path, reference: Path) -> dict:
    """The one-partition maxima of 100 B events (the rate search's `max` runs) of Pravega (flush) and Kafka (no
    flush, 128 KB / 1 ms): the study printed Pravega's 73 % above Kafka's (DUR-1)."""
    name = "study001-runs.csv"
    where = str(Path(tables) / name)
    rows = [r for r in read_table(tables, name) if r["sweep_point"] == "max" and r["partitions"] == "1"
            and r["message_bytes"] == "100" and r["keys"] == "keyed"]
    texts = {}
    for tb, mine in by_testbed(rows).items():
        def value_of(label, mine=mine):
            return _pairs([r for r in mine if (r["system"], r["level"], r["variant"]) == S001_SERIES[label]],
                          "publish_eps", where)
        m = measured(list(S001_SERIES), value_of, "e/s")
        (p, pt), (k, kt) = m["Pravega (flush)"], m["Kafka (no flush)"]
        gap = f": Pravega {(p / k - 1) * 100:+.0f} % against Kafka" if p and k else ""
        texts[tb] = f"Pravega (flush) {pt}, Kafka (no flush) {kt}{gap}"
    ratio = None
    with open(reference, newline="") as fh:
        for r in csv.DictReader(fh):
            if (r["study"], r["experiment"], r["metric"]) == ("001", "durability_100B_1part", "max_tput_ratio"):
                ratio = float(r["value"])
    return {"printed": f"{(ratio - 1) * 100:.0f} %" if ratio else "n/a", "measured": per_scale(texts)}


# ---------------------------------------------------------------- study 002

def s002(tables: Path, reference: Path) -> dict:
    """Publish p99 with flush (fsync before the acknowledgement, level L1) against partitions, per system: the study's
    main claim is that Kafka's rises and Pulsar's falls as partitions increase."""
    name = "study002-runs.csv"
    where = str(Path(tables) / name)
    rows = [r for r in read_table(tables, name) if r["mode"] == "flush"]
    texts = {}
    for tb, mine in by_testbed(rows).items():
        parts = []
        for system in ("kafka", "pulsar"):
            at = [r for r in mine if r["system"] == system]
            counts = sorted({int(r["partitions"]) for r in at})
            if not counts:
                parts.append(f"{SYSTEM_NAME[system]} (flush) not run")
                continue
            m = measured(counts, lambda n, at=at: _pairs([r for r in at if int(r["partitions"]) == n],
                                                         "publish_p99_ms", where), "ms")
            parts.append(f"{SYSTEM_NAME[system]} (flush) " + ", ".join(f"{n} p: {m[n][1]}" for n in counts))
        texts[tb] = join(parts) + ran_with([r["ran_with_partitions"] for r in mine],
                                           [number(r, "offered_msgps", where) for r in mine])
    pub = [p for p in study002.published(reference) if p["mode"] == "flush" and p["metric"] == "publish_p99"]
    printed = []
    for system in ("kafka", "pulsar"):
        pts = sorted((p["partitions"], p["value"]) for p in pub if p["system"] == system)
        if pts:
            printed.append(f"{SYSTEM_NAME[system]} (flush) " + ", ".join(f"{n} p: {v:g} ms" for n, v in pts))
    return {"printed": "; ".join(printed) or "n/a", "measured": per_scale(texts)}


# ---------------------------------------------------------------- study 003

def _consumers(n: float) -> str:
    return f"{n:,.0f}".replace(",", " ")


def s003(tables: Path, reference: Path) -> dict:
    """Connection time and p99 end to end at the largest consumer count each system ran (the study's own layout, one
    Shared subscription, first among runs of that count); the study's baseline points as printed."""
    name = "study003-fanout.csv"
    where = str(Path(tables) / name)
    rows = [r for r in read_table(tables, name) if r["source"] == "this testbed"]
    texts = {}
    for tb, mine in by_testbed(rows).items():
        parts = []
        for system in sorted({r["system"] for r in mine}, key=lambda s: (s != "pulsar", s)):
            at = [r for r in mine if r["system"] == system]
            top = max(int(r["consumers"]) for r in at)
            at = [r for r in at if int(r["consumers"]) == top]
            layout = min({r["layout"] for r in at}, key=lambda lay: (lay != "1 shared x N", lay))
            at = [r for r in at if r["layout"] == layout]
            never = sorted(int(number(r, "never_connected", where) or 0) for r in at)
            _, conn = summary(_pairs(at, "connection_time_s", where), "s")
            _, p99 = summary(_pairs(at, "e2e_p99_s", where), "s")
            study_n = int(at[0]["study_consumers"])
            head = (f"{SYSTEM_NAME.get(system, system)} at {_consumers(top)} consumers ({layout}, for the study's "
                    f"{_consumers(study_n)})")
            got = ([f"all connected in {conn}" if conn else "all connected"] if not any(never) else
                   [f"{max(never)} never connected" + (f" (median {statistics.median(never):g})" if len(never) > 1 else "")
                    + (f", the others in {conn}" if conn else "")])
            got.append(f"p99 end to end {p99}" if p99 else "no end-to-end latency recorded")
            parts.append(f"{head}: " + ", ".join(got))
        texts[tb] = join(parts)
    printed = []
    for pt in study003.published(reference):
        bits = []
        if pt.get("e2e_p99_s") is not None:
            lower = pt["bound"].get("e2e_p99_s") == "lower bound"
            bits.append(f"p99 {'above ' if lower else ''}{pt['e2e_p99_s']:g} s")
        if pt.get("connection_time_s") is not None:
            if str(pt["bound"].get("connection_time_s", "")).startswith("extrapolated"):
                bits.append(f"never all connected (a fit predicts {_consumers(pt['connection_time_s'])} s)")
            else:
                bits.append(f"connected in {_consumers(pt['connection_time_s'])} s")
        printed.append(f"{_consumers(pt['study_consumers'])} consumers: " + ", ".join(bits))
    return {"printed": "; ".join(printed) or "n/a", "measured": per_scale(texts)}


# ---------------------------------------------------------------- study 004

S004_CONFIGS = {study004.NO_JOURNAL: "Pulsar (no journal)", study004.JOURNAL: "Pulsar (journal)",
                study004.KAFKA: "Kafka"}


def _s004_texts(rows: list[dict], experiment: str, col: str, unit: str, where: str, ratio: bool) -> dict[str, str]:
    """{testbed: text}: per configuration the median and range of `col`; with `ratio`, Pulsar (no journal) / Kafka
    of the medians (a maximum at the rate search's ceiling is a lower bound, and so is the ratio it makes)."""
    texts = {}
    for tb, mine in by_testbed([r for r in rows if r["experiment"] == experiment]).items():
        def runs_of(cfg, mine=mine):
            return [r for r in mine if r["configuration"] == cfg]

        capped = {cfg for cfg in S004_CONFIGS if any(r["ceiling_reached"] == "True" for r in runs_of(cfg))}
        m = measured(list(S004_CONFIGS), lambda cfg: _pairs(runs_of(cfg), col, where), unit,
                     lambda cfg: "at the rate search's ceiling: a lower bound" if cfg in capped else "")
        parts = [f"{label} {m[cfg][1]}" for cfg, label in S004_CONFIGS.items()]
        r = ratio_text(m[study004.NO_JOURNAL][0], m[study004.KAFKA][0]) if ratio else ""
        if r:
            a, b = study004.NO_JOURNAL in capped, study004.KAFKA in capped
            r = ("both at the ceiling, their ratio unknown" if a and b else
                 f"Pulsar (no journal) / Kafka {'at least ' if a else 'at most ' if b else ''}{r}")
        texts[tb] = join(parts) + (f", {r}" if r else "") + ran_with([x["ran_with_partitions"] for x in mine])
    return texts


def s004(tables: Path, reference: Path) -> dict:
    """The one-partition maximum throughput (E004-T1C1, the '2.5x' headline) and the publish p99 at the fixed rate
    (E004-T2) of Pulsar without and with its journal and of Kafka."""
    name = "study004-runs.csv"
    where = str(Path(tables) / name)
    rows = read_table(tables, name)
    pub = study004.published(reference)

    def printed(experiment, metric, unit):
        vals = [(label, study004.printed(pub, experiment, cfg, metric)) for cfg, label in S004_CONFIGS.items()]
        vals = [f"{label} {v:g} {unit}" for label, v in vals if v is not None]
        return join(vals) or "n/a"

    return {"maxtput_printed": printed("max_tput_1part_4p1c", "publish_tput", "MB/s"),
            "maxtput_measured": per_scale(_s004_texts(rows, "E004-T1C1", "achieved_mibps", "MB/s", where, True)),
            "latency_printed": printed("lat_500MBps_100part", "publish_p99", "ms"),
            "latency_measured": per_scale(_s004_texts(rows, "E004-T2", "publish_p99_ms", "ms", where, False))}


# ---------------------------------------------------------------- the fault study

def fault_claims(runs: pl.DataFrame, testbed: str) -> dict[str, str]:
    """{claim id: 'Kafka …; Pulsar …'} on one testbed: per system the runs of the claim's cells, how many lost an
    acknowledged message, how many it lost in all and at most in one run, and analysis.faults' verdict."""
    cl = faults.cells(runs, testbed)
    verdicts = {(c["claim_id"], c["system"]): c for c in faults.claims(cl)}
    out = {}
    for cid, _, sel, _ in faults.CLAIMS:
        parts = []
        for system in sorted({c["system"] for c in cl}):
            row = verdicts.get((cid, system))
            if row is None:
                continue
            run = [c for c in cl if c["system"] == system and c["status"] == "run" and sel(c)]
            name = SYSTEM_NAME.get(system, system)
            if not row["runs"]:
                parts.append(f"{name} not run")
                continue
            worst = max(c["lost_max"] for c in run)
            lost = (f"{num(row['lost_total'])} acknowledged messages lost in {row['runs_with_loss']} of its "
                    f"{row['runs']} runs, up to {num(worst)} in one" if row["runs_with_loss"] else
                    f"0 lost in {row['runs']} runs")
            parts.append(f"{name} {lost} (verdict: {row['verdict']})")
        out[cid] = join(parts) or "no cell of this claim"
    return out


def s_faults(derived: Path) -> dict:
    """Fault runs per testbed and the three claims (analysis.faults.CLAIMS) per system, on every testbed with fault
    runs (data/derived/faults.parquet, written by analysis.faults)."""
    p = Path(derived) / FAULT_RUNS
    if not p.is_file():
        raise InputError(p, "(file)", "missing; rule analysis_faults writes it")
    runs = pl.read_parquet(p)
    missing = [c for c in ("testbed", "system", "level", "fault", "lost", "suspect") if c not in runs.columns]
    if missing:
        raise InputError(p, missing[0], "column missing")
    count, per_claim = {}, {cid: {} for cid, *_ in faults.CLAIMS}
    for tb in sorted(set(runs["testbed"].to_list())):
        mine = runs.filter(pl.col("testbed") == tb)
        lossy = int((mine["lost"] > 0).sum())
        sus = int(mine["suspect"].sum())
        count[tb] = (f"{mine.height} fault run{'s' if mine.height > 1 else ''}, {lossy} of them lost an acknowledged "
                     "message" + (f" ({sus} suspect)" if sus else ""))
        for cid, text in fault_claims(runs, tb).items():
            per_claim[cid][tb] = text
    return {"runs": per_scale(count), **{cid: per_scale(t) for cid, t in per_claim.items()}}


# ---------------------------------------------------------------- all of them

def variables(runs: pl.DataFrame, stats: pl.DataFrame, tables: Path, derived: Path, reference: Path) -> dict:
    """The `findings.*` keys of paper/_variables.yml."""
    return {"s000": s000(runs, stats), "s001": s001(tables, reference), "s002": s002(tables, reference),
            "s003": s003(tables, reference), "s004": s004(tables, reference), "faults": s_faults(derived)}
