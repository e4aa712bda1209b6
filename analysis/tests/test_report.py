import csv

import polars as pl
import pytest
import yaml

from analysis import faults, findings, ingest, report, study001, study002, study003, study004
from analysis.tests.fixtures import streambench, write
from analysis.tests.paths import MANIFEST, REFERENCE, REPO, STUDY_TABLES
from analysis.tests.test_faults import fault_doc, write as write_fault

NOT = "local: not measured at this scale; aws: not measured at this scale"


def _latency(publish_ms: float, system: str, *, target=None, achieved=None, discovery=None, partitions=None) -> dict:
    """A runner result whose every publish sample is publish_ms (so its percentiles are publish_ms)."""
    d = streambench(publish_us=[int(publish_ms * 1000)] * 200, system=system)
    d["x-streambench"]["producerRate"] = {"target": target, "achieved": achieved}
    if discovery is not None:
        d["x-streambench"]["rateDiscovery"] = discovery
    if partitions is not None:
        d["partitions"] = partitions
    return d


def _fanout(consumers: int, connected: int, seconds: float, p99_s: float) -> dict:
    return {"x-streambench": {
        "fanOut": {"consumers": consumers, "connected": connected, "neverConnected": consumers - connected,
                   "connectionTimeSeconds": seconds, "perConsumer": {"connected": [1000] * connected}},
        "endToEndLatencyMicros": {"count": 10 * connected, "p50": p99_s * 5e5, "p99": p99_s * 1e6},
        "audit": {"lost": 0}}}


def write_study_raw(raw, testbed="local", s002_ms=(4.0, 8.0)):
    """Runs of studies 001-004 and fault runs, each a value the findings' text shows."""
    tb = raw / testbed
    # study 001: the one-partition maxima (rate search) of Pravega (flush) and Kafka (no flush, 128 KB / 1 ms)
    for system, level_dir, eps in (("pravega", "L1+stock", 30000.0), ("kafka", "L2+stock+batch-128k-1ms", 20000.0)):
        write(tb / system / level_dir / "1-topic-1-partition-100b-1p-1c-keyed-max" / "rep-1.json",
              _latency(3.0, system, achieved=eps))
    # study 002: Kafka with flush (L1) on one partition, two repetitions; Pulsar with flush once
    for rep, ms in enumerate(s002_ms, 1):
        write(tb / "kafka" / "L1+stock" / "1-topic-1-partition-100b-1p-1c-50k" / f"rep-{rep}.json",
              _latency(ms, "kafka", target=1000.0, achieved=999.0, partitions=1))
    write(tb / "pulsar" / "L1+stock" / "1-topic-1-partition-100b-1p-1c-50k" / "rep-1.json",
          _latency(3.0, "pulsar", target=1000.0, achieved=999.0, partitions=1))
    # study 003: Pulsar at 100 and 1 000 consumers (the study's 20 000 and 100 000)
    write(tb / "pulsar" / "L1+stock" / "1-topic-1-partition-10kb-1p-1c-20ksub-1" / "rep-1.json", _fanout(100, 100, 2.0, 0.01))
    write(tb / "pulsar" / "L1+stock" / "1-topic-1-partition-10kb-1p-1c-100ksub-1" / "rep-1.json",
          _fanout(1000, 1000, 41.5, 0.25))
    # study 004: one-partition maxima, Pulsar without journal at the rate search's ceiling; publish p99 at a fixed rate
    for system, level_dir, msgps, ceiling in (("pulsar", "L2-bypass+stock", 10240.0, True), ("kafka", "L2+stock", 5120.0, False)):
        write(tb / system / level_dir / "1-topic-1-partition-1kb-4p-1c-max" / "rep-1.json",
              _latency(2.0, system, achieved=msgps, partitions=1,
                       discovery={"settledRate": msgps, "ceilingReached": ceiling, "steps": []}))
        write(tb / system / level_dir / "1-topic-100-partitions-1kb-4p-4c-500k" / "rep-1.json",
              _latency(12.0 if system == "kafka" else 6.0, system, target=5000.0, achieved=4999.0, partitions=16))
    # faults: Kafka L1 power loss loses nothing in 3 runs; Pulsar L4-bypass power loss loses in 2 of 3
    for rep, lost in enumerate((100, 0, 2500), 1):
        write_fault(raw, "kafka", "L1", "power-loss", rep, fault_doc("power-loss", 0, seed=rep), testbed=testbed)
        write_fault(raw, "pulsar", "L4-bypass", "power-loss", rep, fault_doc("power-loss", lost, seed=rep), testbed=testbed)


def write_study_tables(raw, tables, derived):
    """The study modules' runs tables (their own table code, as their rules run it) and the fault runs."""
    assert study001.main(["--raw", str(raw), "--reference", str(REFERENCE), "--tables", str(tables), "--id", "tables"]) == 0
    for module in (study002, study004):
        assert module.main(["--raw", str(raw), "--reference", str(REFERENCE), "--tables", str(tables)]) == 0
    ours, pub = study003.runs(raw), study003.published(REFERENCE)
    report.write_table(tables, "study003-fanout", study003.TABLE_COLS, ours + pub, study003.MD_COLS)
    derived.mkdir(parents=True, exist_ok=True)
    faults.read_runs(raw).write_parquet(derived / "faults.parquet")


def run_report(tmp, derived, tables, *extra):
    return report.main(["--derived", str(derived), "--reference", str(REFERENCE), "--study-tables", str(STUDY_TABLES),
                        "--tables", str(tables), "--variables", str(tmp / "_variables.yml"), "--testbed", "local",
                        "--coverage", str(REPO / "analysis" / "coverage"), *extra])


@pytest.fixture(scope="module")
def built(tmp_path_factory, mirror):
    tmp = tmp_path_factory.mktemp("rep")
    raw = tmp / "raw"
    for rep, scale in ((1, 1), (2, 2), (3, 3)):
        write(raw / f"local/pulsar/L1/1-topic-100-partitions-1kb-2p-2c-200k/rep-{rep}.json",
              streambench(publish_us=[v * scale for v in range(1000, 101000, 1000)], system="pulsar", version="4.0.1"))
    ingest.write_atomic(ingest.build(mirror, MANIFEST, raw), tmp / "derived")
    write_study_raw(tmp / "study-raw")
    write_study_tables(tmp / "study-raw", tmp / "tables", tmp / "derived")
    assert run_report(tmp, tmp / "derived", tmp / "tables", "--findings-tables", str(tmp / "tables")) == 0
    return tmp


def test_every_table_id_written(built):
    names = {p.name for p in (built / "tables").iterdir()}
    for tid in report.TABLE_IDS:
        assert f"{tid}.csv" in names and f"{tid}.md" in names
    assert not any(n.endswith(".tmp") for n in names)


def test_latency_table_has_published_and_local_rows(built):
    rows = list(csv.DictReader(open(built / "tables" / "latency-publish-1sub-sync.csv")))
    pub = {r["series"]: r for r in rows if r["testbed"] == "aws i3en.2xlarge (study 000)"}
    assert float(pub["kafka-ack-all"]["p99_ms"]) == pytest.approx(58.83) and pub["kafka-ack-all"]["study_p99_ms"] == "58.83"
    loc = [r for r in rows if r["testbed"] == "local"]
    assert len(loc) == 1 and loc[0]["series"] == "pulsar-ack-2" and loc[0]["runs"] == "3"
    # median of the three runs' p99 (99, 198, 297 ms, HdrHistogram bucket tops) and a bootstrap CI around it
    assert float(loc[0]["p99_ms"]) == pytest.approx(198.0, rel=2e-3)
    assert float(loc[0]["p99_ci_low_ms"]) <= float(loc[0]["p99_ms"]) <= float(loc[0]["p99_ci_high_ms"])
    # corrected latency = publish + 1 ms in the fixture: p99 of the three runs 100, 199, 298 ms -> median 199
    assert float(loc[0]["p99_corrected_ms"]) == pytest.approx(199.0, rel=2e-3)
    assert pub["kafka-ack-all"]["p99_corrected_ms"] == ""  # OMB 2020 files have no corrected latency


def test_variables(built):
    v = yaml.safe_load(open(built / "_variables.yml"))
    assert v["published"]["files"] == 124 and v["published"]["distinct_files"] == 100
    assert v["claims"]["total"] == v["claims"]["matched"] + v["claims"]["differ"] + v["claims"]["no_data"]
    assert v["local"]["runs"] == 3 and v["versions"]["pulsar"] == "4.0.1" and v["versions"]["kafka"] == "n/a"
    assert v["testbed"]["cpu"] == "n/a"
    assert v["derived"]["e2e_p99_1sub_sync_kafka_ack_all"] == 64.62
    # the title and abstract's numbers, read from data/reference/studies.csv
    with open(REFERENCE, newline="") as f:
        ref = list(csv.DictReader(f))
    assert v["studies"] == {"count": 5, "ids": "000–004", "others": 4, "numbers": len(ref), "systems_count": 3,
                            "systems": "Kafka, Pulsar and Pravega"}


def test_study_facts_count_what_the_reference_holds_and_name_a_bad_field(tmp_path):
    ref = tmp_path / "studies.csv"
    ref.write_text("study,experiment,system,config,metric,value,unit,source\n"
                   "001,x,pravega-0.8.0,c,m,1,ms,s\n001,y,kafka-2.6.0,c,m,2,ms,s\n003,z,pulsar-2.10,c,m,3,s,s\n")
    assert report.study_facts(ref) == {"count": 2, "ids": "001–003", "others": 1, "numbers": 3, "systems_count": 3,
                                       "systems": "Kafka, Pulsar and Pravega"}
    ref.write_text("study,experiment,system,config,metric,value,unit,source\n003,z,kafka,c,m,3,s,s\n")
    assert report.study_facts(ref)["systems"] == "Kafka"
    ref.write_text("study,experiment,system,config,metric,value,unit,source\n003,z,,c,m,3,s,s\n")
    with pytest.raises(report.InputError, match="system") as e:
        report.study_facts(ref)
    assert str(ref) in str(e.value) and "line 2" in str(e.value)


def test_claims_md_lists_ambiguities(built):
    md = (built / "tables" / "claims.md").read_text()
    assert "studies.md [ambig]" in md and "no raw data" in md
    # one published file per cell: n = 1 (issue 33), a narrow column of its own width
    lines = md.splitlines()
    assert lines[0] == "| " + " | ".join(report.MD_COLUMNS["claims"]) + " |"
    assert [len(d) for d in lines[1].strip("|").split("|")] == [3 * w for w in report.MD_WIDTHS["claims"]]
    n_col = report.MD_COLUMNS["claims"].index("n")
    cells = [line.strip("|").split(" | ")[n_col].strip() for line in lines[2:]]
    assert set(cells) == {"1", ""} and cells.count("") == 5  # the 5 rows without raw data have no n


def test_mixed_rows_of_the_study_say_which_catch_up_file_stands_in(built):
    rows = list(csv.DictReader(open(built / "tables" / "mixed.csv")))
    pub = [r for r in rows if r["testbed"] == "aws i3en.2xlarge (study 000)"]
    assert len(pub) == 8
    for r in pub:  # sync levels: the catch-up file in catchup_read/sync/; async: catchup_read/nosync/ (journal kept)
        folder = "catchup_read/sync/" if r["local_durability"] == "sync" else "catchup_read/nosync/"
        assert r["source"] == f"proxy: catch-up run in {folder} (no mixed files published)", r
    assert "proxy: catch-up run in catchup_read/nosync/" in (built / "tables" / "mixed.md").read_text()
    cl = [r for r in csv.DictReader(open(built / "tables" / "claims.csv")) if r["experiment"] == "E000-MIX"]
    assert len(cl) == 8 and all(r["note"].startswith("proxy, not a mixed run: publish p99 of the catch-up file in catchup_read/")
                                for r in cl), [r["note"] for r in cl]
    assert "proxy, not a mixed run" in (built / "tables" / "claims.md").read_text()


def test_local_100_partition_run_is_also_the_sweep_point(built):
    rows = list(csv.DictReader(open(built / "tables" / "partition-sweep.csv")))
    loc = [r for r in rows if r["testbed"] == "local"]
    assert {(r["metric"], r["partitions"], r["system"], r["runs"]) for r in loc} == {
        ("publish", "100", "pulsar", "3"), ("e2e", "100", "pulsar", "3")}


VAR_RE = r"\{\{<\s*var\s+([A-Za-z0-9_.-]+)\s*>\}\}"


def paper_sources():
    """The files the paper's text lives in: paper.md (front matter, include lines) and every section."""
    paper = REFERENCE.parents[2] / "paper"
    return [paper / "paper.md", *sorted((paper / "sections").glob("*.qmd"))]


def missing_variables(variables: dict, sources) -> tuple[set, list]:
    """(keys the sources use, those of them `variables` lacks or holds as a mapping/list, not a value)."""
    import re
    used = set()
    for src in sources:
        used |= set(re.findall(VAR_RE, src.read_text()))
    missing = []
    for key in sorted(used):
        node = variables
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is None or isinstance(node, (dict, list)):
            missing.append(key)
    return used, missing


def test_every_variable_the_paper_uses_exists(built):
    v = yaml.safe_load(open(built / "_variables.yml"))
    sources = paper_sources()
    assert len(sources) > 1, "no section files under paper/sections"
    used, missing = missing_variables(v, sources)
    assert used, "paper/paper.md and paper/sections/*.qmd use no {{< var >}} key: the scan found nothing"
    assert not missing, f"paper/sections/*.qmd use keys _variables.yml lacks: {missing}"


def test_variable_scan_reports_a_key_the_report_does_not_write(tmp_path):
    sec = tmp_path / "s.qmd"
    sec.write_text("We ran {{< var local.runs >}} runs and {{<var local.nonexistent >}} more; "
                   "{{< var derived.x_y >}} {{< var derived >}}.\n")
    used, missing = missing_variables({"local": {"runs": 3}, "derived": {"x_y": "n/a"}}, [sec])
    assert used == {"local.runs", "local.nonexistent", "derived.x_y", "derived"}
    assert missing == ["derived", "local.nonexistent"]


def test_formatting_and_markdown():
    assert [report.fmt(x) for x in (None, 1234.6, 123.45, 12.345, 0.01234, 3, "a")] == [
        "", "1235", "123.5", "12.35", "0.0123", "3", "a"]
    md = report.to_md(["a", "b"], [{"a": 1.5, "b": "x|y"}, {"a": None, "b": "z"}])
    assert md == "| a | b |\n|---|---|\n| 1.50 | x/y |\n|  | z |\n"
    assert report.to_csv(["a", "b"], [{"a": 1.5, "b": None}]) == "a,b\n1.5,\n"


def test_cell_median_and_ci():
    med, lo, hi, n = report.cell([3.0, 1.0, 2.0, None])
    assert (med, n) == (2.0, 3) and 1.0 <= lo <= med <= hi <= 3.0
    assert report.cell([5.0]) == (5.0, None, None, 1)


# ---------------------------------------------------------------- the findings' numbers (analysis.findings)

def test_findings_state_each_headline_as_measured_with_median_range_and_runs(built):
    f = yaml.safe_load(open(built / "_variables.yml"))["findings"]
    aws = "; aws: not measured at this scale"
    # study 000 from the derived runs: the three Pulsar L1 runs' e2e p99 (198, 396, 594 ms), no Kafka run, no E000-MT1
    assert f["s000"]["e2e_p99_measured"] == ("local: Kafka not run and Pulsar 396 ms (median of 3 runs, range 198–594), "
                                             "ran with 100 partitions" + aws)
    assert f["s000"]["maxtput_measured"] == NOT
    assert f["s001"] == {"printed": "73 %", "measured": "local: Pravega (flush) 30 000 e/s (1 run), Kafka (no flush) "
                                                        "20 000 e/s (1 run): Pravega +50 % against Kafka" + aws}
    assert f["s002"]["measured"] == ("local: Kafka (flush) 1 p: 6.00 ms (median of 2 runs, range 4.00–8.00) and Pulsar "
                                     "(flush) 1 p: 3.00 ms (1 run), ran with 1 partition at 1 000 msg/s" + aws)
    assert f["s002"]["printed"] == ("Kafka (flush) 1 p: 8.641 ms, 6 p: 13.517 ms, 16 p: 23.404 ms; "
                                    "Pulsar (flush) 1 p: 4.003 ms, 6 p: 3.978 ms, 16 p: 3.977 ms")
    assert f["s003"]["measured"] == ("local: Pulsar at 1 000 consumers (N subscriptions x 1, for the study's 100 000): "
                                     "all connected in 41.5 s (1 run), p99 end to end 0.25 s (1 run)" + aws)
    assert f["s003"]["printed"].startswith("20 000 consumers: p99 0.68 s, connected in 240 s; ")
    assert "100 000 consumers: never all connected (a fit predicts 8 000 s)" in f["s003"]["printed"]
    assert f["s004"]["maxtput_measured"] == (
        "local: Pulsar (no journal) 10.0 MB/s (1 run; at the rate search's ceiling: a lower bound), Pulsar (journal) "
        "not run and Kafka 5.00 MB/s (1 run), Pulsar (no journal) / Kafka at least 2.00x, ran with 1 partition" + aws)
    assert f["s004"]["latency_measured"] == ("local: Pulsar (no journal) 6.00 ms (1 run), Pulsar (journal) not run and "
                                             "Kafka 12.0 ms (1 run), ran with 16 partitions" + aws)
    assert f["s004"]["maxtput_printed"] == "Pulsar (no journal) 700 MB/s, Pulsar (journal) 580 MB/s and Kafka 280 MB/s"
    assert f["faults"]["runs"] == "local: 6 fault runs, 2 of them lost an acknowledged message" + aws
    assert f["faults"]["F1"] == "local: Kafka 0 lost in 3 runs (verdict: not tested) and Pulsar not run" + aws
    assert f["faults"]["F2"] == ("local: Kafka not run and Pulsar 2 600 acknowledged messages lost in 2 of its 3 runs, "
                                 "up to 2 500 in one (verdict: supported)" + aws)
    assert f["faults"]["F3"] == "local: Kafka not run and Pulsar not run" + aws


def test_findings_follow_the_runs_and_name_every_testbed_with_data(tmp_path):
    """Other values in the result files change the text; runs of another testbed (aws, ci) get their own entry."""
    raw, tables, derived = tmp_path / "raw", tmp_path / "tables", tmp_path / "derived"
    write_study_raw(raw, s002_ms=(5.0, 8.0, 7.0))
    write_study_raw(raw, testbed="aws", s002_ms=(20.0,))
    write_study_raw(raw, testbed="ci", s002_ms=(2.0,))
    write_study_tables(raw, tables, derived)
    f = findings.s002(tables, REFERENCE)["measured"]
    assert f == ("local: Kafka (flush) 1 p: 7.00 ms (median of 3 runs, range 5.00–8.00) and Pulsar (flush) 1 p: 3.00 ms "
                 "(1 run), ran with 1 partition at 1 000 msg/s; aws: Kafka (flush) 1 p: 20.0 ms (1 run) and Pulsar "
                 "(flush) 1 p: 3.00 ms (1 run), ran with 1 partition at 1 000 msg/s; ci: Kafka (flush) 1 p: 2.00 ms "
                 "(1 run) and Pulsar (flush) 1 p: 3.00 ms (1 run), ran with 1 partition at 1 000 msg/s")
    assert findings.s_faults(derived)["runs"] == "; ".join(
        f"{tb}: 6 fault runs, 2 of them lost an acknowledged message" for tb in ("local", "aws", "ci"))
    # a run judged suspect is counted with its testbed, and the text says so
    p = raw / "local" / "kafka" / "L1+stock" / "1-topic-1-partition-100b-1p-1c-50k" / "rep-3.json"
    d = _latency(7.0, "kafka", target=1000.0, achieved=999.0, partitions=1)
    d["x-streambench"]["testbedHost"] = {"validity": {"status": "suspect", "reasons": ["load"]}}
    write(p, d)
    write_study_tables(raw, tables, derived)
    assert "Kafka (flush) 1 p: 7.00 ms (median of 3 runs, range 5.00–8.00; 1 suspect)" in findings.s002(tables, REFERENCE)["measured"]


def test_findings_without_runs_say_not_measured_at_this_scale(tmp_path, built):
    """The ci-like case: no study run and no fault run at all; each sentence still reads, the printed numbers stay."""
    raw, tables, derived = tmp_path / "raw", tmp_path / "tables", tmp_path / "derived"
    raw.mkdir()
    write_study_tables(raw, tables, derived)
    for name in ("runs", "windows", "stats", "quantiles", "probes"):
        (derived / f"{name}.parquet").symlink_to(built / "derived" / f"{name}.parquet")
    assert run_report(tmp_path, derived, tables, "--findings-tables", str(tables)) == 0
    f = yaml.safe_load(open(tmp_path / "_variables.yml"))["findings"]
    measured = {f"{s}.{k}": v for s, d in f.items() for k, v in d.items() if "printed" not in k}
    assert measured.pop("s000.e2e_p99_measured").startswith("local: Kafka not run and Pulsar 396 ms")
    assert measured == {k: NOT for k in measured} and len(measured) == 12  # 6 study sentences; the fault runs, F1, F2, F3, F3h, F4
    assert f["s001"]["printed"] == "73 %" and f["s004"]["latency_printed"].startswith("Pulsar (no journal) 1.58 ms")


def test_findings_printed_numbers_come_from_the_reference(tmp_path):
    ref = tmp_path / "studies.csv"
    ref.write_text(REFERENCE.read_text().replace("001,durability_100B_1part,pravega-vs-kafka,pravega-flush/kafka-noflush,"
                                                 "max_tput_ratio,1.73,", "001,durability_100B_1part,pravega-vs-kafka,"
                                                 "pravega-flush/kafka-noflush,max_tput_ratio,1.5,")
                   .replace("004,max_tput_1part_4p1c,kafka-3.0.0,default,publish_tput,280,",
                            "004,max_tput_1part_4p1c,kafka-3.0.0,default,publish_tput,290,"))
    raw, tables = tmp_path / "raw", tmp_path / "tables"
    raw.mkdir()
    write_study_tables(raw, tables, tmp_path / "derived")
    assert findings.s001(tables, ref)["printed"] == "50 %"
    assert findings.s004(tables, ref)["maxtput_printed"].endswith("and Kafka 290 MB/s")


def test_findings_study_000_from_the_derived_runs(built):
    runs = pl.read_parquet(built / "derived" / "runs.parquet")
    stats = pl.read_parquet(built / "derived" / "stats.parquet")
    # the same three runs relabelled as aws runs, one of them judged suspect
    aws = runs.filter(pl.col("source") == "local").with_columns(
        pl.lit("aws").alias("testbed"),
        pl.when(pl.col("repetition") == 1).then(pl.lit("aws (suspect)")).otherwise(pl.lit("aws")).alias("testbed_label"))
    f = findings.s000(aws, stats)
    assert f["e2e_p99_measured"] == ("local: not measured at this scale; aws: Kafka not run and Pulsar 396 ms (median "
                                     "of 3 runs, range 198–594; 1 suspect), ran with 100 partitions")
    # a level other than L1 is not this finding's
    assert findings.s000(aws.with_columns(pl.lit("L2").alias("level")), stats)["e2e_p99_measured"] == NOT


def test_findings_name_a_missing_table_or_column(tmp_path, built, capsys):
    tables = tmp_path / "tables"
    tables.mkdir()
    for name in findings.TABLES:
        (tables / name).write_text((built / "tables" / name).read_text())
    (tables / "study003-fanout.csv").unlink()
    assert run_report(tmp_path, built / "derived", tables, "--findings-tables", str(tables)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "study003-fanout.csv" in err[0] and "missing" in err[0]
    assert not (tmp_path / "_variables.yml").exists()
    (tables / "study003-fanout.csv").write_text((built / "tables" / "study003-fanout.csv").read_text())
    rows = (tables / "study002-runs.csv").read_text().replace("publish_p99_ms", "publish_p99", 1)
    (tables / "study002-runs.csv").write_text(rows)
    with pytest.raises(report.InputError, match="publish_p99_ms") as e:
        findings.s002(tables, REFERENCE)
    assert "study002-runs.csv" in str(e.value)


def test_findings_numbers_and_intervals():
    assert [findings.num(x) for x in (123456.7, 123.4, 12.34, 1.234, 0.01234)] == ["123 457", "123", "12.3", "1.23", "0.0123"]
    assert findings.summary([(2.0, False), (None, False), (1.0, True), (4.0, False)], "ms") == (
        2.0, "2.00 ms (median of 3 runs, range 1.00–4.00; 1 suspect)")
    assert findings.summary([(0.25, True)], "s", "a note") == (0.25, "0.25 s (1 run, suspect; a note)")
    assert findings.summary([(None, False)], "s") == (None, None)
    assert findings.per_scale({"ci": "x", "local": "y"}) == "local: y; aws: not measured at this scale; ci: x"
