"""analysis.study001: study-001 runs read from data/raw, latency-vs-throughput figures, claims with verdicts."""
import csv
import json

import pytest

from analysis import study001
from analysis.tests import fixtures
from analysis.tests.paths import REFERENCE
from analysis.tests.test_figures import _overlapping_words

W1 = "1-topic-1-partition-100b-1p-1c-keyed-10k"
W1N = "1-topic-1-partition-100b-1p-1c-nokey-10k"
W16 = "1-topic-16-partitions-100b-1p-16c-keyed-10k"
L1 = "1-topic-1-partition-10kb-1p-1c-keyed-10k"
L16 = "1-topic-16-partitions-10kb-1p-16c-keyed-10k"


def result(p95_ms: float, offered: float, achieved: float, e2e_ms: float | None = None, consumed: float | None = None,
           suspect: bool = False) -> dict:
    """A runner result whose publish (and end-to-end) latency is p95_ms (e2e_ms) for every sample."""
    d = fixtures.streambench(publish_us=[int(p95_ms * 1000)] * 50, e2e_us=[int((e2e_ms or 2 * p95_ms) * 1000)] * 50)
    d["consumeRate"] = [consumed if consumed is not None else achieved] * len(d["consumeRate"])
    d["x-streambench"]["producerRate"] = {"target": offered, "achieved": achieved}
    if suspect:
        d["x-streambench"]["testbedHost"] = {"validity": {"status": "suspect", "reasons": ["load"]}}
    return d


def put(raw, system, level_dir, workload, rate, doc, testbed="local"):
    return fixtures.write(raw / testbed / system / level_dir / f"{workload}--rate-{rate}" / "rep-1.json", doc)


@pytest.fixture
def raw(tmp_path):
    """A local sweep of two points (200 and 4 000 e/s offered) where nothing saturates, as the local scale runs it,
    plus runs study 001 does not read (another study's workload, a tuned run)."""
    raw = tmp_path / "raw"
    for rate, off in ((10000, 200), (200000, 4000)):
        put(raw, "pravega", "L1+stock", W1, rate, result(3.0 + off / 4000, off, off, e2e_ms=5.0))
        put(raw, "pravega", "L1+stock", W1N, rate, result(3.0, off, off, e2e_ms=5.2))
        put(raw, "pravega", "L2+stock", W1, rate, result(2.5 + off / 4000, off, off))
        put(raw, "kafka", "L2+stock+batch-128k-1ms", W1, rate, result(2.0 + off / 4000, off, off, e2e_ms=30.0))
        put(raw, "kafka", "L2+stock+batch-128k-1ms", W1N, rate, result(2.0, off, off, e2e_ms=10.0))
        put(raw, "kafka", "L1+stock+batch-128k-1ms", W1, rate, result(6.0, off, off))
        put(raw, "pulsar", "L1+stock+batch-128k-1ms", W1, rate, result(5.0, off, off, e2e_ms=14.0))
        put(raw, "pulsar", "L1+stock+batch-128k-1ms", W1N, rate, result(5.0, off, off, e2e_ms=13.0))
    for rate, off in ((10000, 200), (40000, 800)):
        put(raw, "pravega", "L1+stock", L1, rate, result(4.0, off, off))
        put(raw, "kafka", "L2+stock+batch-128k-1ms", L1, rate, result(3.0, off, off))
    put(raw, "kafka", "L2+stock+batch-1m-10ms", W1, 200000, result(12.0, 4000, 4000))
    put(raw, "pulsar", "L1+stock+no-batch", W1, 200000, result(4.0, 4000, 4000, suspect=True))
    fixtures.write(raw / "local" / "kafka" / "L1" / f"{W1}--rate-10000" / "rep-1.json", result(1.0, 200, 200))
    fixtures.write(raw / "local" / "kafka" / "L1+stock" / "1-topic-1-partition-100b-1p-1c-50k" / "rep-1.json", {})
    return raw


def by_id(cl):
    return {c["id"]: c for c in cl}


def test_runs_read_study_001_files_with_their_configuration(raw):
    rows = study001.runs(raw)
    assert len(rows) == 2 * 8 + 2 * 2 + 2  # the tuned run and study 002's workload are not read
    r = next(r for r in rows if r["system"] == "kafka" and r["variant"] == "batch-1m-10ms")
    assert (r["level"], r["partitions"], r["message_bytes"], r["keys"], r["study_rate"]) == ("L2", 1, 100, "keyed", 200000)
    assert r["publish_p95_ms"] == pytest.approx(12.0, rel=0.01) and r["publish_eps"] == 4000
    big = next(r for r in rows if r["message_bytes"] == 10_000 and r["study_rate"] == 40000 and r["system"] == "pravega")
    assert big["publish_mbps"] == pytest.approx(8.0)
    assert next(r for r in rows if r["variant"] == "no-batch")["testbed"] == "local (suspect)"
    assert not [r for r in study001.runs(raw, suspect="exclude") if r["variant"] == "no-batch"]


def test_claims_judge_what_the_sweep_can_show_and_say_what_it_cannot(raw):
    cl = by_id(study001.claims(study001.runs(raw), study001.published(REFERENCE)))
    assert cl["ING-1"]["verdict"] == "holds (1 run)" and "max 4.0 ms" in cl["ING-1"]["this_testbed"]
    # no point saturated: the maxima are not testable here, and the verdict says so instead of comparing
    for cid in ("ING-2", "ING-4", "DUR-1", "BATCH-1", "TAIL-2", "KEYS-2"):
        assert cl[cid]["verdict"].startswith("not testable at this scale"), cid
    # no run of a configuration: "not tested", and the caveat says why
    for cid in ("ING-3", "DUR-2a", "DUR-4", "BATCH-2", "TAIL-4", "LARGE-16-pulsar", "LARGE-1-pulsar"):
        assert cl[cid]["verdict"] == "not tested (no runs)", cid
        assert cl[cid]["caveat"].startswith("no study-001 run"), cid
    assert cl["DUR-3"]["verdict"].startswith("holds")  # Kafka (no flush) below Pravega (flush) at both rates
    assert cl["DUR-5"]["verdict"] == "holds (1 run)"  # no flush helps 11-14 %
    assert cl["BATCH-3"]["verdict"] == "holds (1 run)"  # Pravega 3.05 / 4 ms under Pulsar's 5 ms
    assert cl["TAIL-1"]["verdict"] == "holds (1 run)"  # Pulsar e2e p95 14 ms
    assert cl["KEYS-1-kafka"]["verdict"] == "holds (1 run)" and cl["KEYS-1-pulsar"]["verdict"] == "does not hold here (1 run)"
    assert cl["KEYS-3"]["verdict"] == "holds (1 run)"  # Pravega keyed / NO_KEY 0.96
    assert "local: one machine" in cl["ING-1"]["caveat"]
    # every finding of studies.md §001.4 that the testbed can run has a row (HIST and SCALE are not run)
    assert {c["experiment"] for c in cl.values()} == {"E001-ING", "E001-DUR", "E001-BATCH", "E001-LARGE",
                                                      "E001-TAIL", "E001-KEYS"}


def test_claims_fail_when_the_data_contradict_them(tmp_path):
    raw = tmp_path / "raw"
    # a saturated sweep: Pravega keeps 600K of 1M e/s, Kafka 500K; Pravega's p95 reaches 25 ms
    for rate, pv, kf in ((100000, 100000, 100000), (1000000, 600000, 500000)):
        put(raw, "pravega", "L1+stock", W1, rate, result(25.0 if rate == 1000000 else 3.0, rate, pv))
        put(raw, "kafka", "L2+stock+batch-128k-1ms", W1, rate, result(2.0, rate, kf))
    cl = by_id(study001.claims(study001.runs(raw), study001.published(REFERENCE)))
    assert cl["ING-1"]["verdict"] == "does not hold here (1 run)"
    assert cl["ING-2"]["verdict"] == "differs by -40% (1 run)"  # 600K against the study's ~1M
    assert cl["DUR-1"]["verdict"] == "direction holds, size does not (+20%, printed +73%) (1 run)"
    assert "+20%" in cl["DUR-1"]["this_testbed"]
    # and one that holds: +80 % when both saturate
    put(raw, "kafka", "L2+stock+batch-128k-1ms", W1, 1000000, result(2.0, 1000000, 333000))
    cl = by_id(study001.claims(study001.runs(raw), study001.published(REFERENCE)))
    assert cl["DUR-1"]["verdict"] == "holds (1 run)"
    # Kafka ahead: neither the size nor the direction
    put(raw, "kafka", "L2+stock+batch-128k-1ms", W1, 1000000, result(2.0, 1000000, 700000))
    cl = by_id(study001.claims(study001.runs(raw), study001.published(REFERENCE)))
    assert cl["DUR-1"]["verdict"] == "does not hold here (1 run)"


def test_a_max_run_makes_the_maxima_testable(raw):
    """The local scale's -max runs (rate discovery, no offered rate) are the curves' right ends: the maximum is
    known even though no sweep point saturated."""
    for system, level_dir, eps in (("pravega", "L1+stock", 9000.0), ("kafka", "L2+stock+batch-128k-1ms", 6000.0),
                                   ("pulsar", "L1+stock+batch-128k-1ms", 8000.0)):
        d = result(8.0, 0, eps, consumed=eps)
        d["x-streambench"]["producerRate"]["target"] = None
        fixtures.write(raw / "local" / system / level_dir / "1-topic-1-partition-100b-1p-1c-keyed-max" / "rep-1.json", d)
    rows = study001.runs(raw)
    assert {r["sweep_point"] for r in rows if r["system"] == "pravega"} >= {"max", "10000", "200000"}
    cl = by_id(study001.claims(rows, study001.published(REFERENCE)))
    assert cl["ING-2"]["verdict"] == "differs by -99% (1 run)" and cl["ING-2"]["this_testbed"] == "9,000 e/s"
    assert cl["DUR-1"]["verdict"] == "direction holds, size does not (+50%, printed +73%) (1 run)"
    assert cl["TAIL-3"]["verdict"] == "direction holds, size does not (+33%, printed +56%) (1 run)"
    assert cl["ING-1"]["verdict"] == "holds (1 run)"  # 8 ms at the maximum is still single-digit
    # the max point is the last of its curve in the figure
    pts = [p for p in study001.points(rows, "study001-tail") if p["series"] == "Pravega (flush)"]
    assert [p["x"] for p in pts] == [200, 4000, 9000]


def test_no_runs_gives_not_tested_rows_and_empty_figures(tmp_path):
    (tmp_path / "raw").mkdir()
    assert study001.main(["--raw", str(tmp_path / "raw"), "--reference", str(REFERENCE), "--tables",
                          str(tmp_path / "t"), "--figures", str(tmp_path / "f"), "--id", "tables"]) == 0
    with open(tmp_path / "t" / "study001-claims.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    # the highlights that need 16 partitions say so (the local scale runs 1); every other row is not tested
    need = {r["id"] for r in rows if r["verdict"].startswith("needs aws scale: no 16-partition")
            or r["verdict"].startswith("needs aws scale: no 10 KB run at 16 partitions")}
    assert need == {"LARGE-16-highlight", "TAIL-6"}
    assert rows and {r["verdict"] for r in rows if r["id"] not in need} == {"not tested (no runs)"}
    assert (tmp_path / "t" / "study001-runs.md").read_text().count("\n") == 2  # header only


def test_points_follow_the_studys_axes(raw):
    rows = study001.runs(raw)
    pts = study001.points(rows, "study001-dur")
    assert {p["series"] for p in pts} == {"Pravega (flush)", "Pravega (no flush)", "Kafka (flush, 128 KB / 1 ms)",
                                          "Kafka (no flush, 128 KB / 1 ms)"}
    assert {p["default"] for p in pts if p["series"].startswith("Pravega (no")} == {False}
    large = study001.points(rows, "study001-large")
    assert large and all(p["mbps"] and p["x"] in (2.0, 8.0) for p in large)  # MB/s for 10 KB
    keys = study001.points(rows, "study001-keys")
    assert "Kafka (no flush, 128 KB / 1 ms), NO_KEY" in {p["series"] for p in keys}
    tail = study001.points(rows, "study001-tail")
    ys = [p["y"] for p in tail if p["system"] == "pulsar"]
    assert len(ys) == 2 and ys == pytest.approx([14.0, 14.0], rel=0.01)  # end to end


def test_figures_render_with_captions_and_print_no_word_over_another(raw, tmp_path):
    out = tmp_path / "fig"
    assert study001.main(["--raw", str(raw), "--reference", str(REFERENCE), "--figures", str(out), "--id", "all",
                          "--tables", str(tmp_path / "t"), "--png-scale", "1"]) == 0
    for fid in study001.FIGURE_IDS:
        meta = json.loads((out / f"{fid}.json").read_text())
        assert meta["caption"] and meta["alt"], fid
        assert (out / f"{fid}.svg").stat().st_size > 1000, fid
    assert _overlapping_words(out / "study001-large.pdf") == []
    assert _overlapping_words(out / "study001-dur.pdf") == []
    # the study's published maxima are drawn where the figure has them
    assert "study 001 (published" in (out / "study001-large.svg").read_text()


def test_unknown_figure_id_is_one_error_line(tmp_path, capsys):
    assert study001.main(["--raw", str(tmp_path), "--reference", str(REFERENCE), "--id", "study001-nope"]) == 2
    assert "--id: unknown figure 'study001-nope'" in capsys.readouterr().err


def test_maxima_in_one_search_bracket_are_not_separable(raw):
    """Two -max runs whose rate searches settled in overlapping brackets ([256 000, 512 000) both: the local scale's
    step budget ended there) cannot tell which system is faster, whatever their achieved rates say."""
    def mx(eps, settled, rejected):
        d = result(8.0, 0, eps, consumed=eps)
        d["x-streambench"]["producerRate"]["target"] = None
        d["x-streambench"]["rateDiscovery"] = {"settledRate": settled, "steps": [
            {"targetRate": settled, "pass": True}] + ([{"targetRate": rejected, "pass": False}] if rejected else [])}
        return d
    wl = "1-topic-1-partition-100b-1p-1c-keyed-max"
    fixtures.write(raw / "local" / "pravega" / "L1+stock" / wl / "rep-1.json", mx(256_100.0, 256_000.0, 512_000.0))
    fixtures.write(raw / "local" / "kafka" / "L2+stock+batch-128k-1ms" / wl / "rep-1.json", mx(255_900.0, 256_000.0, 512_000.0))
    cl = by_id(study001.claims(study001.runs(raw), study001.published(REFERENCE)))
    assert cl["DUR-1"]["verdict"] == "not separable at this scale: both maxima lie in one bracket of the rate search (1 run)"
    assert "[256,000, 512,000)" in cl["DUR-1"]["this_testbed"]
    # brackets apart: Pravega settled a step above Kafka's rejected rate, so the direction is measured
    fixtures.write(raw / "local" / "kafka" / "L2+stock+batch-128k-1ms" / wl / "rep-1.json", mx(128_000.0, 128_000.0, 256_000.0))
    cl = by_id(study001.claims(study001.runs(raw), study001.published(REFERENCE)))
    assert cl["DUR-1"]["verdict"] == "holds (1 run)"  # 256 100 / 128 000 = 2.0, above the printed 1.73
    # a step that failed once and passed on its retry rejects nothing; a measured phase that did not hold does
    d = mx(100_000.0, 81_920.0, 256_000.0)
    rd = d["x-streambench"]["rateDiscovery"]
    rd["steps"] += [{"targetRate": 128_000.0, "pass": False}, {"targetRate": 128_000.0, "pass": True}]
    rd["rejectedMeasurements"] = [{"targetRate": 102_400.0}]
    fixtures.write(raw / "local" / "kafka" / "L2+stock+batch-128k-1ms" / wl / "rep-1.json", d)
    row = next(r for r in study001.runs(raw) if r["system"] == "kafka" and r["sweep_point"] == "max")
    assert row["search_bracket"] == (81_920.0, 102_400.0)


def test_the_papers_table_of_runs_has_narrow_columns_that_wrap(raw, tmp_path):
    """Table 21 printed 'batch-128k-1ms' over its neighbour: the paper's table names a run's configuration by its
    series label (words a cell can wrap), puts the workload in one cell and gives pandoc relative widths."""
    assert study001.main(["--raw", str(raw), "--reference", str(REFERENCE), "--tables", str(tmp_path), "--id", "tables"]) == 0
    lines = (tmp_path / "study001-runs.md").read_text().splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == [h for h, _, _ in study001.MD_RUN_COLUMNS] and len(header) == 13
    assert [len(d) for d in lines[1].strip("|").split("|")] == [3 * w for _, _, w in study001.MD_RUN_COLUMNS]
    body = "\n".join(lines[2:])
    assert "batch-128k-1ms" not in body and "Kafka (flush, 128 KB / 1 ms)" in body and "Pulsar (no batch)" in body
    assert "16 partitions, 100 B, keyed" in body or "1 partition, 100 B, keyed" in body
    assert len(lines) - 2 == len(study001.runs(raw))
    # the CSV keeps every column, the variant among them
    with open(tmp_path / "study001-runs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == study001.RUN_COLS and "batch-128k-1ms" in {r["variant"] for r in rows}


# ---------------------------------------------------------------- the highlights' sentences (issue 32)

HIGHLIGHTS = ("DUR-6-noflush", "DUR-6-flush", "BATCH-4", "LARGE-16-highlight", "TAIL-5", "TAIL-6")


def highlight_sweep(raw, kafka_noflush=500_000, kafka_flush=400_000, pravega_reads=900_000, nobatch_p95=3.0,
                    nobatch_max=200_000, pulsar16_reads=200_000, pulsar_mbps=250, kafka_p95_10kb=900.0):
    """Sweeps that saturate (the top point offered 1.5 M e/s of 100 B or 40 000 e/s of 10 KB): Pravega (flush) writes
    1 M e/s; the arguments set what the highlights compare. A system's top point is saturated when it achieved less
    than 90 % of the offered rate (reads: consumed)."""
    top = 1_500_000

    def sweep(system, level_dir, workload, low_p95, top_eps, top_p95, reads=None):
        put(raw, system, level_dir, workload, 100000, result(low_p95, 100_000, 100_000))
        put(raw, system, level_dir, workload, top, result(top_p95, top, top_eps, consumed=reads or top_eps))

    sweep("pravega", "L1+stock", W1, 4.0, 1_000_000, 9.0, reads=pravega_reads)
    sweep("kafka", "L2+stock+batch-128k-1ms", W1, 2.0, kafka_noflush, 30.0)
    sweep("kafka", "L1+stock+batch-128k-1ms", W1, 8.0, kafka_flush, 60.0)
    sweep("pulsar", "L1+stock+batch-128k-1ms", W1, 5.0, 800_000, 20.0, reads=720_000)
    sweep("pulsar", "L1+stock+no-batch", W1, nobatch_p95, nobatch_max, 400.0)
    sweep("pulsar", "L1+stock+batch-128k-1ms", W16, 5.0, 300_000, 20.0, reads=pulsar16_reads)
    for system, level_dir, mbps, p95 in (("pravega", "L1+stock", 360, 8.0), ("pulsar", "L1+stock+batch-128k-1ms",
                                                                           pulsar_mbps, 30.0),
                                         ("kafka", "L2+stock+batch-128k-1ms", 330, kafka_p95_10kb)):
        put(raw, system, level_dir, L16, 40000, result(p95, 50_000, mbps * 100))  # 10 KB events: MB/s x 100 = e/s
    return raw


def test_highlight_rows_hold_where_the_sweep_shows_them(tmp_path):
    rows = study001.runs(highlight_sweep(tmp_path / "raw"))
    cl = by_id(study001.claims(rows, study001.published(REFERENCE)))
    for cid in HIGHLIGHTS:
        assert cl[cid]["verdict"] == "holds (1 run)", (cid, cl[cid])
    assert cl["DUR-6-noflush"]["this_testbed"] == "500,000 vs 1,000,000 e/s (-50%)"
    assert cl["TAIL-5"]["this_testbed"] == "900,000 vs 500,000 e/s (+80%)"
    assert cl["TAIL-6"]["this_testbed"] == "720,000 vs 200,000 e/s (+260%)"
    # the latency half compares only rates both kept up with (the overloaded no-batch point is left out)
    assert cl["BATCH-4"]["this_testbed"].startswith("p95 no batch vs batch: 3.0 vs 5.0 ms; max batch 800,000")
    assert cl["LARGE-16-highlight"]["printed"] == "+40%, ~+6%, > 800 ms"  # from the study's 350 / 250 / 330 MB/s
    assert "Kafka max p95 900 ms" in cl["LARGE-16-highlight"]["this_testbed"]


def test_highlight_rows_do_not_hold_where_the_sweep_contradicts_them(tmp_path):
    raw = highlight_sweep(tmp_path / "raw", kafka_noflush=700_000, kafka_flush=1_100_000,
                          nobatch_p95=6.0, nobatch_max=900_000, pulsar16_reads=400_000, pulsar_mbps=300,
                          kafka_p95_10kb=300.0)
    cl = by_id(study001.claims(study001.runs(raw), study001.published(REFERENCE)))
    assert cl["DUR-6-noflush"]["verdict"] == "direction holds, size does not (-30%, printed -40% or less) (1 run)"
    assert cl["DUR-6-flush"]["verdict"] == "does not hold here (1 run)"  # Kafka (flush) above Pravega
    assert cl["TAIL-5"]["verdict"] == "direction holds, size does not (+29%, printed roughly +80%) (1 run)"
    assert cl["TAIL-6"]["verdict"] == "direction holds, size does not (+80%, printed 3.6x) (1 run)"
    assert cl["BATCH-4"]["verdict"] == "does not hold here (latency half does not hold, throughput half does not hold) (1 run)"
    assert cl["LARGE-16-highlight"]["verdict"] == "does not hold here (Pravega over Pulsar, Kafka p95) (1 run)"


def test_highlight_rows_without_runs_say_what_they_need(tmp_path, raw):
    """The local scale's sweep (two unsaturated points, 1 partition): the 16-partition highlights need the aws scale,
    the 1-partition ones cannot show a maximum; with no run at all they are not tested."""
    cl = by_id(study001.claims(study001.runs(raw), study001.published(REFERENCE)))
    assert cl["TAIL-6"]["verdict"] == ("needs aws scale: no 16-partition Pulsar tail run on this testbed (the local "
                                       "scale runs 1 partition / segment)")
    assert cl["LARGE-16-highlight"]["verdict"].startswith("needs aws scale: no 10 KB run at 16 partitions of Pravega, "
                                                          "Pulsar, Kafka on this testbed")
    for cid in ("DUR-6-noflush", "DUR-6-flush", "TAIL-5"):
        assert cl[cid]["verdict"] == "not testable at this scale: the sweep did not saturate both systems", cid
    assert cl["BATCH-4"]["verdict"] == ("latency half holds; throughput half not testable at this scale: the sweep "
                                        "did not saturate Pulsar (no batch) (1 run)")
    none = by_id(study001.claims([], study001.published(REFERENCE)))
    assert none["TAIL-6"]["verdict"].startswith("needs aws scale") and none["LARGE-16-highlight"]["verdict"].startswith(
        "needs aws scale")
    for cid in ("DUR-6-noflush", "DUR-6-flush", "BATCH-4", "TAIL-5"):
        assert none[cid]["verdict"] == "not tested (no runs)", cid


# ---------------------------------------------------------------- repetitions: verdicts over intervals (issue 33)

def max_reps(raw, system, level_dir, eps_per_rep, p95=8.0):
    """-max runs (rate discovery) of one configuration, one per repetition, each settling at its rate."""
    for rep, eps in enumerate(eps_per_rep, start=1):
        d = result(p95, 0, eps, consumed=eps)
        d["x-streambench"]["producerRate"]["target"] = None
        fixtures.write(raw / "local" / system / level_dir / "1-topic-1-partition-100b-1p-1c-keyed-max" / f"rep-{rep}.json", d)


def test_three_repetitions_whose_ranges_overlap_are_not_separable(tmp_path):
    raw = tmp_path / "raw"
    # Pravega 9 000-10 000, Kafka 5 000-6 000 e/s: the ratio lies between 1.5x and 2.0x, around the printed 1.73x
    max_reps(raw, "pravega", "L1+stock", [9000.0, 9500.0, 10000.0])
    max_reps(raw, "kafka", "L2+stock+batch-128k-1ms", [5000.0, 5500.0, 6000.0])
    # Pravega's write p95 at one rate in three runs: 9, 9.5 and 11 ms, across the single-digit bound
    for rep, p95 in enumerate((9.0, 9.5, 11.0), start=1):
        fixtures.write(raw / "local" / "pravega" / "L1+stock" / f"{W1}--rate-10000" / f"rep-{rep}.json",
                       result(p95, 200, 200))
    cl = by_id(study001.claims(study001.runs(raw), study001.published(REFERENCE)))
    d = cl["DUR-1"]
    assert d["verdict"] == "not separable at this scale: the ratio lies between 1.50x and 2.00x (printed +73%)"
    assert (d["n"], d["interval"]) == (3, "1.73x [1.50–2.00]")
    assert d["this_testbed"] == "9,500 vs 5,500 e/s (+73%)"
    i = cl["ING-1"]
    assert i["verdict"] == "not separable at this scale: the runs' p95 straddle 10 ms" and i["n"] == 3
    assert i["interval"] == "9.5 [9.0–11.0] ms at 200 e/s, 100 B, 1 seg."  # the point that decides
    md = study001.claims_md(list(cl.values())).splitlines()
    assert md[0] == "| " + " | ".join(h for h, _, _ in study001.MD_CLAIM_COLUMNS) + " |"
    assert "| n | interval |" in md[0] and any("| 3 | 1.73x [1.50–2.00] | not separable at this scale" in x for x in md)


def test_three_repetitions_with_separated_ranges_hold_or_do_not(tmp_path):
    raw = tmp_path / "raw"
    max_reps(raw, "pravega", "L1+stock", [9000.0, 9500.0, 10000.0])
    max_reps(raw, "kafka", "L2+stock+batch-128k-1ms", [4000.0, 4200.0, 4500.0])  # ratio 2.0x-2.5x
    cl = by_id(study001.claims(study001.runs(raw), study001.published(REFERENCE)))
    assert cl["DUR-1"]["verdict"] == "holds" and cl["DUR-1"]["interval"] == "2.26x [2.00–2.50]"
    raw2 = tmp_path / "raw2"
    max_reps(raw2, "pravega", "L1+stock", [9000.0, 9500.0, 10000.0])
    max_reps(raw2, "kafka", "L2+stock+batch-128k-1ms", [10500.0, 11000.0, 12000.0])  # Kafka ahead in every pairing
    cl = by_id(study001.claims(study001.runs(raw2), study001.published(REFERENCE)))
    assert cl["DUR-1"]["verdict"] == "does not hold here" and cl["DUR-1"]["n"] == 3
    # a size the ranges miss while the direction holds in every pairing (ratio 1.13x-1.43x)
    raw3 = tmp_path / "raw3"
    max_reps(raw3, "pravega", "L1+stock", [9000.0, 9500.0, 10000.0])
    max_reps(raw3, "kafka", "L2+stock+batch-128k-1ms", [7000.0, 7500.0, 8000.0])
    cl = by_id(study001.claims(study001.runs(raw3), study001.published(REFERENCE)))
    assert cl["DUR-1"]["verdict"] == "direction holds, size does not (+27%, printed +73%)"


def test_latency_at_every_common_rate_over_repetitions(tmp_path):
    raw = tmp_path / "raw"
    # BATCH-3 at 10 000 e/s: Pravega 3-4 ms, Pulsar 5-6 ms apart (holds); then Pulsar 3.5-6 ms (overlap)
    for rep, (pv, pu) in enumerate(((3.0, 5.0), (3.5, 5.5), (4.0, 6.0)), start=1):
        fixtures.write(raw / "local" / "pravega" / "L1+stock" / f"{W1}--rate-10000" / f"rep-{rep}.json", result(pv, 200, 200))
        fixtures.write(raw / "local" / "pulsar" / "L1+stock+batch-128k-1ms" / f"{W1}--rate-10000" / f"rep-{rep}.json",
                       result(pu, 200, 200))
    b3 = by_id(study001.claims(study001.runs(raw), study001.published(REFERENCE)))["BATCH-3"]
    assert b3["verdict"] == "holds" and b3["n"] == 3
    fixtures.write(raw / "local" / "pulsar" / "L1+stock+batch-128k-1ms" / f"{W1}--rate-10000" / "rep-1.json",
                   result(3.5, 200, 200))
    b3 = by_id(study001.claims(study001.runs(raw), study001.published(REFERENCE)))["BATCH-3"]
    assert b3["verdict"] == "not separable at this scale: the runs' ranges overlap at 10,000 e/s"
