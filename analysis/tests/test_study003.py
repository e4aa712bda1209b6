"""analysis.study003: fan-out runs read from data/raw, the study's points, claims, and figures fit to print."""
import csv
import json
import random

import pytest

from analysis import InputError, study003
from analysis.tests.paths import REFERENCE
from analysis.tests.test_figures import _overlapping_words

LADDER = {20000: 100, 30000: 250, 40000: 500, 100000: 1000}  # workloads/experiments.yaml, scales.local.fanout_map


def fanout_result(consumers: int, connected: int, seed: int, p99_us: float = 900_000.0) -> dict:
    """A result file as the runner writes it for a fan-out workload (runner/RESULT-FORMAT.md, `fanOut`)."""
    rnd = random.Random(seed)
    times = sorted(rnd.uniform(0, 3000 + 40 * consumers) for _ in range(connected))
    conn = [round(t) for t in times] + [-1] * (consumers - connected)
    last = max(times) / 1000 if times else None
    return {"x-streambench": {
        "fanOut": {"consumers": consumers, "connected": connected, "neverConnected": consumers - connected,
                   "connectionTimeSeconds": last,
                   "perConsumer": {"baseEpochMicros": 0, "connectStart": [0] * consumers, "connected": conn,
                                   "firstMessage": [c + 500 if c >= 0 else -1 for c in conn],
                                   "received": [10 if c >= 0 else 0 for c in conn]}},
        "endToEndLatencyMicros": {"count": 10 * connected, "p50": p99_us / 3, "p99": p99_us},
        "audit": {"lost": 0}}}


def write_raw(raw, testbed, system, study_n, doc, layout="1c-{k}ksub", rep=1):
    wl = f"1-topic-1-partition-10kb-1p-{layout.format(k=study_n // 1000)}-1"
    p = raw / testbed / system / "L1+stock" / wl / f"rep-{rep}.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(doc))
    return p


@pytest.fixture
def raw(tmp_path):
    """The local ladder on both systems (Kafka's largest size short of connecting, as measured here) and one aws
    Pulsar run at the study's own 20K consumers; plus a run of another study, which is not read."""
    raw = tmp_path / "raw"
    for k, (study_n, n) in enumerate(LADDER.items()):
        write_raw(raw, "local", "pulsar", study_n, fanout_result(n, n, seed=k, p99_us=400_000 * (k + 1)))
        write_raw(raw, "local", "kafka", study_n, fanout_result(n, n if n < 1000 else 727, seed=10 + k,
                                                                p99_us=700_000 * (k + 1)))
    write_raw(raw, "aws", "pulsar", 20000, fanout_result(20000, 20000, seed=99, p99_us=650_000))
    other = raw / "local" / "kafka" / "L1+stock" / "1-topic-1-partition-1kb-1p-1c-50k" / "rep-1.json"
    other.parent.mkdir(parents=True)
    other.write_text("{}")
    return raw


def test_runs_read_every_fanout_file_with_its_layout_and_size(raw):
    rows = study003.runs(raw)
    assert len(rows) == 9
    kafka_max = next(r for r in rows if r["system"] == "kafka" and r["consumers"] == 1000)
    assert kafka_max["never_connected"] == 273 and len(kafka_max["connected_ms"]) == 727
    assert kafka_max["study_consumers"] == 100000 and kafka_max["layout"] == "N subscriptions x 1"
    assert kafka_max["e2e_p99_s"] == pytest.approx(2.8)


def test_suspect_runs_are_marked_or_left_out_like_every_other_figure(tmp_path):
    doc = fanout_result(100, 100, seed=1)
    doc["x-streambench"]["testbedHost"] = {"validity": {"status": "suspect", "reasons": ["CPU steal 30 %"]}}
    write_raw(tmp_path, "local", "pulsar", 20000, doc)
    write_raw(tmp_path, "local", "kafka", 20000, fanout_result(100, 100, seed=2))
    assert sorted(r["testbed"] for r in study003.runs(tmp_path)) == ["local", "local (suspect)"]
    assert [r["system"] for r in study003.runs(tmp_path, suspect="exclude")] == ["kafka"]


def test_layout_of_names_both_layouts_and_nothing_else():
    assert study003.layout_of("1-topic-1-partition-10kb-1p-1c-40ksub-1") == ("N subscriptions x 1", 40000)
    assert study003.layout_of("1-topic-1-partition-10kb-1p-30kc-shared-1") == ("1 shared x N", 30000)
    assert study003.layout_of("1-topic-1-partition-10kb-1p-1c-50k") is None


def test_a_study_003_run_without_its_fanout_block_names_file_and_field(tmp_path):
    p = write_raw(tmp_path, "local", "pulsar", 20000, {"x-streambench": {}})
    with pytest.raises(InputError, match="x-streambench.fanOut") as e:
        study003.runs(tmp_path)
    assert str(p) in str(e.value)


def test_published_points_and_claims_at_the_same_or_the_nearest_size(raw):
    pub = study003.published(REFERENCE)
    assert [p["consumers"] for p in pub] == [20000, 30000, 40000, 100000]
    p20 = pub[0]
    assert p20["e2e_p99_s"] == 0.68 and p20["connection_time_s"] == 240
    assert pub[2]["bound"] == {"e2e_p99_s": "lower bound"}
    assert pub[3]["bound"]["connection_time_s"].startswith("extrapolated")
    cl = {(c["claim"], c["testbed"]): c for c in study003.claims(pub, study003.runs(raw))}
    # one row per study number and testbed with Pulsar runs: 6 numbers x {aws, local}
    assert len(cl) == 12 and {tb for _, tb in cl} == {"aws", "local"}
    # the aws run at 20K (p99 0.65 s) is compared with the printed 0.68 s at the study's own size
    aws20 = cl[("20K consumers: p99 end to end", "aws")]
    assert aws20["this_testbed"] == pytest.approx(0.65) and aws20["consumers"] == 20000
    assert aws20["judged_at"] == "20 000 consumers (the study's size)" and aws20["verdict"].startswith("matches")
    # the local ladder (100 … 1 000) never reaches 20K: judged at its nearest measured size, 1 000, and says so
    loc20 = cl[("20K consumers: p99 end to end", "local")]
    assert loc20["consumers"] == 1000 and loc20["this_testbed"] == pytest.approx(1.6)
    assert loc20["judged_at"] == "judged at 1 000 consumers, nearest to 20 000 measured on local"
    assert loc20["verdict"] == "differs by +135.3% (1 run)"  # one run: a value, not an interval
    assert loc20["n"] == 1 and loc20["interval"] == "1.6"
    loc30 = cl[("30K consumers: p99 end to end (lower bound)", "local")]
    assert loc30["consumers"] == 1000 and loc30["verdict"] == "holds (1 run)"  # 1.6 s >= the study's "> 1 s"
    loc100 = cl[("100K consumers: connection time (extrapolated (never connected))", "local")]
    assert loc100["judged_at"].startswith("judged at 1 000 consumers, nearest to 100 000")
    assert loc100["verdict"] == "connected here (1 run)"
    assert not any(c["verdict"].startswith("not run") for c in cl.values())


def _run(consumers, layout="N subscriptions x 1", testbed="local", p99=0.5, never=0):
    return {"system": "pulsar", "testbed": testbed, "layout": layout, "consumers": consumers, "study_consumers": 20000,
            "connection_time_s": 10.0, "e2e_p99_s": p99, "never_connected": never, "file": f"{testbed}-{consumers}-{layout}"}


def test_nearest_measured_size_by_ratio_and_the_studys_layout_first():
    runs = [_run(100), _run(250), _run(2000), _run(2000, layout="1 shared x N")]
    assert study003.nearest_run(runs, 20000)["consumers"] == 2000
    assert study003.nearest_run(runs, 20000)["layout"] == "1 shared x N"  # the study's baseline layout
    assert study003.nearest_run(runs, 150)["consumers"] == 100  # 1.5x below beats 1.67x above
    assert study003.nearest_run([_run(100), _run(400)], 200)["consumers"] == 400  # a tie goes to the larger count
    assert study003.nearest_run(runs, 250)["consumers"] == 250
    assert study003.nearest_run([], 250) is None
    assert study003.judged_at(_run(2000), 20000, "local") == "judged at 2 000 consumers, nearest to 20 000 measured on local"


def test_claims_of_a_testbed_judge_its_suspect_runs_under_its_own_name_and_none_without_runs():
    pub = study003.published(REFERENCE)
    rows = study003.claims(pub, [_run(500, testbed="local (suspect)", p99=2.0), _run(100)])
    p30 = [r for r in rows if r["claim"] == "30K consumers: p99 end to end (lower bound)"]
    assert len(p30) == 1 and p30[0]["testbed"] == "local (suspect)" and p30[0]["consumers"] == 500
    assert p30[0]["verdict"] == "holds (1 run)"
    kafka_only = study003.claims(pub, [{**_run(100), "system": "kafka"}])
    assert len(kafka_only) == 6 and {r["verdict"] for r in kafka_only} == {"not run on any testbed here"}


@pytest.mark.slow
def test_tables_and_figures_print_no_word_over_another(raw, tmp_path):
    tables, figs = tmp_path / "tables", tmp_path / "figures"
    assert study003.main(["--raw", str(raw), "--reference", str(REFERENCE), "--tables", str(tables),
                          "--figures", str(figs), "--png-scale", "1"]) == 0
    with open(tables / "study003-fanout.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 9 + 4 and {r["source"] for r in rows} == {"this testbed", study003.STUDY_LABEL}
    assert rows[0]["file"].startswith(str(raw)) and "rep-1.json" not in (tables / "study003-fanout.md").read_text()
    for fid in study003.FIGURE_IDS:
        meta = json.loads((figs / f"{fid}.json").read_text())
        assert meta["id"] == fid and len(meta["caption"]) > 40 and len(meta["alt"]) > 20
        assert 'opacity="0"' not in (figs / f"{fid}.svg").read_text(), fid
        assert _overlapping_words(figs / f"{fid}.pdf") == [], fid
    svg = (figs / "study003-histogram.svg").read_text()
    assert "1000 consumers" in svg and "kafka" in svg and "pulsar" in svg  # both systems at their largest size


@pytest.mark.slow
def test_figures_without_runs_still_render(tmp_path):
    assert study003.main(["--raw", str(tmp_path / "none"), "--reference", str(REFERENCE), "--tables",
                          str(tmp_path / "t"), "--figures", str(tmp_path / "f"), "--png-scale", "1"]) == 0
    for fid in study003.FIGURE_IDS:
        assert _overlapping_words(tmp_path / "f" / f"{fid}.pdf") == [], fid


# ---------------------------------------------------------------- repetitions: verdicts over intervals (issue 33)

def ladder_top(raw, p99s_us, testbed="aws", connected=None):
    """Three (or more) repetitions of Pulsar at the study's 20K consumers, one per p99 (µs)."""
    for rep, p99 in enumerate(p99s_us, start=1):
        c = 20000 if connected is None else connected[rep - 1]
        write_raw(raw, testbed, "pulsar", 20000, fanout_result(20000, c, seed=rep, p99_us=p99), rep=rep)
    return raw


def test_three_repetitions_whose_range_straddles_the_tolerance_are_not_separable(tmp_path):
    # 0.60 / 0.68 / 0.80 s against the printed 0.68 s +/-10 % (0.612-0.748 s): some runs inside, some outside
    raw = ladder_top(tmp_path / "raw", [600_000, 680_000, 800_000])
    cl = {c["claim"]: c for c in study003.claims(study003.published(REFERENCE), study003.runs(raw))}
    r = cl["20K consumers: p99 end to end"]
    assert r["verdict"] == "not separable at this scale: the runs' 0.6–0.8 s straddle the edge of 0.68 s +/-10%"
    assert (r["n"], r["this_testbed"], r["interval"]) == (3, 0.68, "0.68 [0.6–0.8]")


def test_three_repetitions_with_separated_ranges_hold_or_differ(tmp_path):
    raw = ladder_top(tmp_path / "raw", [650_000, 670_000, 700_000])
    cl = {c["claim"]: c for c in study003.claims(study003.published(REFERENCE), study003.runs(raw))}
    assert cl["20K consumers: p99 end to end"]["verdict"] == "matches within 10% (approximate number)"  # every run
    raw = ladder_top(tmp_path / "raw2", [900_000, 1_000_000, 1_100_000])
    cl = {c["claim"]: c for c in study003.claims(study003.published(REFERENCE), study003.runs(raw))}
    assert cl["20K consumers: p99 end to end"]["verdict"] == "differs by +47.1%"
    # the 30K lower bound ("> 1 s", judged at 20 000 here): 0.9-1.1 s straddles it; all above it holds
    assert cl["30K consumers: p99 end to end (lower bound)"]["verdict"].startswith("not separable at this scale")
    raw = ladder_top(tmp_path / "raw3", [1_200_000, 1_300_000, 1_500_000])
    cl = {c["claim"]: c for c in study003.claims(study003.published(REFERENCE), study003.runs(raw))}
    assert cl["30K consumers: p99 end to end (lower bound)"]["verdict"] == "holds"


def test_connected_in_some_repetitions_only_is_not_separable(tmp_path):
    raw = ladder_top(tmp_path / "raw", [650_000] * 3, connected=[20000, 19000, 20000])
    cl = {c["claim"]: c for c in study003.claims(study003.published(REFERENCE), study003.runs(raw))}
    r = cl["100K consumers: connection time (extrapolated (never connected))"]
    assert r["verdict"] == "not separable at this scale: connected in 2 of 3 runs" and r["n"] == 3
    assert r["note"] == "N subscriptions x 1; 1000 never connected"


def test_claims_table_prints_n_and_the_interval(tmp_path):
    raw = ladder_top(tmp_path / "raw", [600_000, 680_000, 800_000])
    tables = tmp_path / "t"
    study003.write_table(tables, "study003-claims", study003.CLAIM_COLS,
                         study003.claims(study003.published(REFERENCE), study003.runs(raw)), study003.MD_CLAIM_COLS)
    md = (tables / "study003-claims.md").read_text().splitlines()
    assert md[0] == "| claim | printed | unit | this_testbed | n | interval | testbed | judged_at | verdict | note |"
    assert any("| 0.68 | 3 | 0.68 [0.6–0.8] | aws |" in line for line in md)
