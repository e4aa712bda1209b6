import pytest

from analysis import claims
from analysis.tests.paths import REFERENCE, STUDY_TABLES


@pytest.mark.parametrize("printed, derived, approx, verdict", [
    ("4.73", 4.737, False, "matches within rounding"),      # truncated by the study
    ("5.86", 5.869, False, "matches within rounding"),      # also truncated
    ("19.7", 19.70, False, "matches within rounding"),
    ("164.20", 164.204, False, "matches within rounding"),
    ("6.23", 6.053, False, "differs by -2.8%"),
    ("300", 293.7, True, "matches within 5% (approximate number)"),
    ("605", 293.7, True, "differs by -51.5%"),
    ("300", 293.7, False, "differs by -2.1%"),
    ("1", None, True, "no raw data"),
])
def test_verdict(printed, derived, approx, verdict):
    assert claims.verdict(printed, derived, approx)[0] == verdict


# (table, series, stat) -> the number study 000 printed (Tables 2-2 and 2-3, §000.6)
PRINTED = {
    ("2-2", "pulsar", 1, "p99"): 4.73, ("2-2", "pulsar", 2, "p99"): 10.37, ("2-2", "kafka", 1, "p99"): 11.37,
    ("2-2", "kafka", 2, "p99"): 58.83, ("2-2", "kafka", 2, "p90"): 19.7, ("2-2", "kafka", 2, "avg"): 9.84,
    ("2-2", "pulsar", 2, "p99.9"): 32.74, ("2-3", "pulsar", 1, "p99"): 5.86, ("2-3", "kafka", 2, "p99"): 64.62,
    ("2-3", "kafka", 1, "p90"): 9.08, ("2-3", "pulsar", 2, "p99.9"): 33.90,
}


def test_rederive_tables_2_2_and_2_3_from_published_files(published_tables):
    dv = claims.Deriver(published_tables["runs"], published_tables["stats"])
    for (table, system, ack, stat), printed in PRINTED.items():
        metric = "publish" if table == "2-2" else "e2e"
        value, files = dv.latency(metric, stat, experiment="E000-LAT1", system=system, ack=ack, partitions=100,
                                  local_durability="sync", subscriptions=1)
        assert len(files) == 1
        v, _ = claims.verdict(f"{printed}", value, approx=False)
        assert v == "matches within rounding", (table, system, ack, stat, value, printed)


def test_claims_table_counts_and_flags(published_tables):
    cl = claims.derive(published_tables["runs"], published_tables["stats"], REFERENCE, STUDY_TABLES)
    # 345 cells of Tables 2-2 … 2-16 + 53 study-000 rows of studies.csv not already in those tables + 15 prose claims
    # (8 of studies.md, 7 of the report's sentences it does not transcribe)
    assert cl.height == 413
    prose = cl.filter(cl["claim_id"].str.starts_with("P"))
    assert prose.height == 15 and prose.filter(prose["ambiguous"] != "").height == 4
    assert cl["claim_id"].n_unique() == cl.height
    t22 = cl.filter(cl["section"].str.starts_with("§000.6 Table 2-2"))
    assert t22.height == 20 and t22["verdict"].str.starts_with("matches").sum() == 20
    # the [ambig] items stay visible
    amb = cl.filter(cl["ambiguous"] != "")
    assert amb.filter(amb["section"].str.contains("Table 2-15")).height == 5
    assert amb.filter(amb["claim_id"].str.contains("max_tput_100part_2p2c:kafka:L1")).height == 1
    assert cl.filter(cl["verdict"] == "no raw data").height == 5  # dd ×2, fsync ×2, Kafka 2000 partitions 4p
    # one published file per cell: every row with data shows n = 1 (issue 33), none without
    assert cl.filter(cl["verdict"] != "no raw data")["n"].to_list() == [1] * 408
    assert cl.filter(cl["verdict"] == "no raw data")["n"].null_count() == 5


def test_summary_table_of_the_e2e_p99_rows(published_tables):
    """Table 1-2 repeats the 100-partition e2e p99 of Tables 2-3/2-5 (1 subscription) and 2-8/2-10 (10
    subscriptions); Table 1-3 is the partition sweep, which no Table 2-x cell row may be labelled with."""
    cl = claims.derive(published_tables["runs"], published_tables["stats"], REFERENCE, STUDY_TABLES)
    cells = cl.filter(cl["claim_id"].str.starts_with("T"))
    for table in ("2-3", "2-5", "2-8", "2-10"):
        rows = cells.filter(cells["section"].str.starts_with(f"§000.6 Table {table} ") & (cells["metric"] == "e2e_p99"))
        assert rows.height == 4, table
        assert set(rows["section"].to_list()) == {f"§000.6 Table {table} (also Table 1-2)"}, table
    assert cells.filter(cells["section"].str.contains("Table 1-3")).height == 0
    also = cells.filter(cells["section"].str.contains("also Table"))
    assert also.height == 16 and set(also["metric"].to_list()) == {"e2e_p99"}


# ---------------------------------------------------------------- the report's prose ratios and bound (issue 32)

NEW_PROSE = ["P9", "P10", "P11", "P12", "P13", "P14", "P15"]


def _prose_frames(values: dict):
    """Published-run and stats frames from {(experiment, system, local, ack, partitions, subscriptions): {metric: p99}},
    one run (one file) per key, as analysis.ingest writes them (the columns claims.Deriver reads)."""
    import polars as pl
    runs, stats = [], []
    for i, ((exp, system, local, ack, parts, subs), ms) in enumerate(sorted(values.items())):
        rid = f"run{i}"
        runs.append({"source": "published", "experiment": exp, "system": system, "local_durability": local, "ack": ack,
                     "partitions": parts, "subscriptions": subs, "blob_sha1": f"{i:040x}", "run_id": rid,
                     "path": f"results/{exp}/{system}-{local}-{ack}-{parts}-{subs}.json"})
        stats += [{"run_id": rid, "metric": m, "avg_ms": v, "p50_ms": v, "p90_ms": v, "p99_ms": v, "p99_9_ms": v}
                  for m, v in ms.items()]
    schema = {"source": pl.Utf8, "experiment": pl.Utf8, "system": pl.Utf8, "local_durability": pl.Utf8,
              "ack": pl.Int64, "partitions": pl.Int64, "subscriptions": pl.Int64, "blob_sha1": pl.Utf8,
              "run_id": pl.Utf8, "path": pl.Utf8}
    sschema = {"run_id": pl.Utf8, "metric": pl.Utf8, **{c: pl.Float64 for c in ("avg_ms", "p50_ms", "p90_ms", "p99_ms",
                                                                                   "p99_9_ms")}}
    return pl.DataFrame(runs, schema=schema), pl.DataFrame(stats, schema=sschema)


def _exp(parts, subs):
    return "E000-LAT2" if subs == 10 else "E000-LAT3" if parts != 100 else "E000-LAT1"


def satisfying_values() -> dict:
    """Every new prose claim holds: Pulsar p99 4 ms publish / 6 ms end to end everywhere; Kafka 3x at 100 partitions
    and 1 subscription, and the printed ratios where the report states one."""
    v = {}
    for parts, subs in ((100, 1), (100, 10), (5000, 1), (10000, 1)):
        for local, ack in claims.LEVELS:
            v[(_exp(parts, subs), "pulsar", local, ack, parts, subs)] = {"publish": 4.0, "e2e": 6.0}
            v[(_exp(parts, subs), "kafka", local, ack, parts, subs)] = {"publish": 12.0, "e2e": 18.0}
    v[("E000-LAT2", "kafka", "sync", 2, 100, 10)]["publish"] = 160 * 4.0     # P10
    v[("E000-LAT2", "kafka", "async", 2, 100, 10)]["publish"] = 270 * 4.0    # P11
    v[("E000-LAT2", "kafka", "async", 2, 100, 10)]["e2e"] = 187 * 6.0        # P12
    v[("E000-LAT3", "kafka", "async", 2, 10000, 1)]["publish"] = 202 * 12.0  # P13: over Kafka's own 100 partitions
    v[("E000-LAT3", "kafka", "async", 2, 10000, 1)]["e2e"] = 32362 * 6.0     # P14
    return v


def _new_rows(values):
    runs, stats = _prose_frames(values)
    rows = claims.report_prose_claims(claims.Deriver(runs, stats))
    return {r["claim_id"].split(":")[0]: r for r in rows}


def test_report_prose_rows_hold_on_values_that_satisfy_them():
    rows = _new_rows(satisfying_values())
    assert list(rows) == NEW_PROSE
    assert rows["P9"]["verdict"] == "matches (all 8 ratios within 2–5x)" and rows["P9"]["derived"] == pytest.approx(3.0)
    for cid, printed in (("P10", 160), ("P11", 270), ("P12", 187), ("P13", 202), ("P14", 32362)):
        assert rows[cid]["verdict"] == "matches within rounding", cid
        assert rows[cid]["derived"] == pytest.approx(printed) and rows[cid]["printed"] == printed
        assert "e750749" in rows[cid]["derivation"] and rows[cid]["section"].startswith("report p. ")
    assert rows["P15"]["verdict"] == "matches (all 16 cells within 5–15 ms)"
    assert rows["P15"]["files"].count(".json") == 16  # one Pulsar file per cell of Tables 1-2 and 1-3


def test_report_prose_rows_differ_on_values_that_do_not():
    v = satisfying_values()
    v[("E000-LAT1", "kafka", "async", 1, 100, 1)]["publish"] = 3.0        # Kafka faster: 0.75x
    v[("E000-LAT2", "kafka", "sync", 2, 100, 10)]["publish"] = 100 * 4.0
    v[("E000-LAT2", "kafka", "async", 2, 100, 10)]["publish"] = 100 * 4.0
    v[("E000-LAT2", "kafka", "async", 2, 100, 10)]["e2e"] = 100 * 6.0
    v[("E000-LAT3", "kafka", "async", 2, 10000, 1)]["publish"] = 10 * 12.0
    v[("E000-LAT3", "kafka", "async", 2, 10000, 1)]["e2e"] = 1000 * 6.0
    v[("E000-LAT3", "pulsar", "sync", 2, 10000, 1)]["e2e"] = 20.0
    v[("E000-LAT2", "pulsar", "async", 1, 100, 10)]["e2e"] = 4.5
    rows = _new_rows(v)
    assert rows["P9"]["verdict"] == "differs: 1 of 8 ratios outside 2–5x (publish async ack-1)"
    assert rows["P9"]["derived"] == pytest.approx(0.75) and rows["P9"]["printed"] == 2
    for cid in ("P10", "P11", "P12", "P13", "P14"):
        assert rows[cid]["verdict"].startswith("differs by -"), (cid, rows[cid]["verdict"])
    assert rows["P15"]["verdict"] == "differs: 2 of 16 cells outside 5–15 ms (100p/10sub async ack-1, 10000p/1sub sync ack-2)"
    assert rows["P15"]["derived"] == 20.0 and rows["P15"]["printed"] == 15


def test_report_prose_rows_without_files_have_no_raw_data():
    rows = _new_rows({})
    assert list(rows) == NEW_PROSE
    assert {r["verdict"] for r in rows.values()} == {"no raw data"}
    assert all(r["derived"] is None and r["files"] == "" for r in rows.values())


def test_within_times_rounds_or_truncates_to_whole_times():
    assert claims.within_times(5.67, 2, 5) and claims.within_times(1.9, 2, 5) and claims.within_times(2.4, 2, 5)
    assert not claims.within_times(1.3, 2, 5) and not claims.within_times(6.0, 2, 5) and not claims.within_times(0.73, 2, 5)


def test_report_prose_rows_on_the_published_files(published_tables):
    """The sentences' ratios re-derived from the 124 files: 160x, 270x, 187x and 202x match; '2-5x' holds for 6 of
    its 8 level/metric pairs (async ack-1 is 0.73x publish, 1.30x end to end); 32362x is 26751x on the same level's
    files; and one Pulsar e2e p99 of Tables 1-2/1-3 (15.78 ms, sync ack-2, 10000 partitions) exceeds 15 ms."""
    cl = claims.derive(published_tables["runs"], published_tables["stats"], REFERENCE, STUDY_TABLES)
    rows = {r["claim_id"].split(":")[0]: r for r in cl.to_dicts() if r["claim_id"].split(":")[0] in NEW_PROSE}
    assert rows["P9"]["verdict"] == "differs: 2 of 8 ratios outside 2–5x (publish async ack-1, e2e async ack-1)"
    for cid in ("P10", "P11", "P12", "P13"):
        assert rows[cid]["verdict"] == "matches within rounding", cid
    assert rows["P14"]["verdict"] == "differs by -17.3%" and round(rows["P14"]["derived"]) == 26751
    assert rows["P15"]["verdict"].startswith("differs: 1 of 16 cells") and rows["P15"]["derived"] == pytest.approx(15.78)


@pytest.mark.parametrize("printed, approx, tol", [("4.73", False, None), ("300", True, 5.0), ("0.68", True, 10.0),
                                                  ("240", True, 10.0), ("1", True, 10.0), ("19.7", False, None)])
def test_verdict_region_is_where_verdict_matches(printed, approx, tol):
    """claims.verdict_region: the values verdict() calls a match, as one region, so that an interval of repetitions
    can be judged against it (analysis.study003)."""
    from analysis import intervals
    region = claims.verdict_region(printed, approx, tol)
    p = float(printed)
    for k in range(-400, 401):
        x = p * (1 + k / 1000) + 1e-12 * k  # ±40 % in 0.1 % steps, never on an exact rounding half
        matches = claims.verdict(printed, x, approx, tol)[0].startswith("matches")
        assert region.contains(x) == matches, (printed, x)
    lo, hi = region.lo, region.hi
    assert intervals.judge((lo, hi - 1e-9), region) == intervals.HOLDS
    assert intervals.judge((lo - 1.0, lo - 1e-9), region) == intervals.DIFFERS
    assert intervals.judge((lo - 1.0, hi), region) == intervals.NOT_SEPARABLE
