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
    # 345 cells of Tables 2-2 … 2-16 + 53 study-000 rows of studies.csv not already in those tables + 8 prose claims
    assert cl.height == 406
    prose = cl.filter(cl["claim_id"].str.starts_with("P"))
    assert prose.height == 8 and prose.filter(prose["ambiguous"] != "").height == 4
    assert cl["claim_id"].n_unique() == cl.height
    t22 = cl.filter(cl["section"].str.starts_with("§000.6 Table 2-2"))
    assert t22.height == 20 and t22["verdict"].str.starts_with("matches").sum() == 20
    # the [ambig] items stay visible
    amb = cl.filter(cl["ambiguous"] != "")
    assert amb.filter(amb["section"].str.contains("Table 2-15")).height == 5
    assert amb.filter(amb["claim_id"].str.contains("max_tput_100part_2p2c:kafka:L1")).height == 1
    assert cl.filter(cl["verdict"] == "no raw data").height == 5  # dd ×2, fsync ×2, Kafka 2000 partitions 4p


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
