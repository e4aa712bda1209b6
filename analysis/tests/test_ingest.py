import json

import polars as pl
import pytest

from analysis import InputError, ingest
from analysis.tests.fixtures import omb_2020, streambench, write


def test_published_tables(published_tables):
    t = published_tables
    assert t["runs"].height == 124 and t["runs"]["blob_sha1"].n_unique() == 100
    assert set(t["runs"]["source"]) == {"published"}
    assert t["stats"].height == 248  # publish + e2e per file
    assert t["windows"].height == t["runs"]["n_windows"].sum()
    lat = t["runs"].filter(pl.col("experiment") == "E000-LAT1")
    assert set(lat["n_windows"]) == {18}  # 3-min latency runs
    # the free-text workload name is kept but never used; conflicts are listed
    byp = t["runs"].filter(pl.col("path").str.contains("data_nosync/pulsar-100-partitions-1kb-batched-1ms-1mb-ack-1-bypass"))
    assert byp["producers_per_topic"][0] == 2 and "producers 4" in byp["workload_name_conflicts"][0]


def test_local_runs_and_probes(tmp_path):
    raw = tmp_path / "raw"
    # two repetitions, publish latencies 1..100 ms and 2..200 ms
    write(raw / "local/kafka/L1/1-topic-100-partitions-1kb-2p-2c-200k/rep-1.json", streambench())
    write(raw / "local/kafka/L1/1-topic-100-partitions-1kb-2p-2c-200k/rep-2.json",
          streambench(publish_us=list(range(2000, 202000, 2000))))
    write(raw / "local/probes/host-a/fio-fsync.json",
          {"probe": "fio-fsync", "host": "host-a", "dir": "/d", "device": "nvme0", "result":
           {"latencyUs": {"p50": 100, "p99": 2500, "p99.9": 4000, "max": 9000, "mean": 150}, "iops": 5000}})
    t = ingest.build(None, None, raw)
    runs = t["runs"]
    assert runs.height == 2 and set(runs["source"]) == {"local"} and set(runs["version"]) == {"3.9.0"}
    assert set(runs["experiment"]) == {"E000-LAT1"} and set(runs["level"]) == {"L1"}
    s = t["stats"].filter(pl.col("metric") == "publish").sort("run_id")
    assert set(s["method"]) == {"merged-histogram"}
    # p50 of 1..100 ms is 50 ms (bucket top 50.015), of 2..200 ms is 100 ms (100.031)
    assert s["p50_ms"].to_list() == pytest.approx([50.015, 100.031], abs=1e-6)
    pr = t["probes"].filter(pl.col("key") == "latencyUs.p99")
    assert pr["value"].to_list() == [2500.0] and pr["testbed"].to_list() == ["local"]


def test_local_run_level_disagreeing_with_path(tmp_path):
    raw = tmp_path / "raw"
    p = write(raw / "local/pulsar/L2/w-1/rep-1.json", streambench(system="pulsar", level="L1"))
    with pytest.raises(InputError) as e:
        ingest.build(None, None, raw)
    assert str(p) in str(e.value) and "x-streambench.cluster.level" in str(e.value)


def test_bad_local_file_named_and_nothing_written(tmp_path, capsys):
    raw = tmp_path / "raw"
    d = omb_2020(); d["publishRate"] = d["publishRate"][:1]
    p = write(raw / "local/kafka/L3/w-1/rep-1.json", d)
    out = tmp_path / "derived"
    rc = ingest.main(["--raw", str(raw), "--out", str(out)])
    assert rc == 2 and not out.exists()
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(p) in err and "'consumeRate'" in err


def test_write_atomic(tmp_path, published_tables):
    ingest.write_atomic(published_tables, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{k}.parquet" for k in published_tables)
    assert pl.read_parquet(tmp_path / "runs.parquet").height == 124


def test_real_runner_output(tmp_path):
    """The runner's own files: merged histograms reproduce the runner's aggregated OMB numbers exactly."""
    from analysis import omb, stats
    from analysis.tests.paths import REPO
    data = REPO / "analysis" / "tests" / "data"
    for name in ("runner-mixed-m1.json", "runner-part-p1.json"):
        r = omb.load(data / name)
        assert r["generation"] == "streambench"
        for metric in ("publish", "e2e"):
            s = stats.stats_from_hist(r["histograms"][metric])
            assert s["p50_ms"] == pytest.approx(r["agg"][(metric, "50pct")], abs=1e-9)
            assert s["p99_ms"] == pytest.approx(r["agg"][(metric, "99pct")], abs=1e-9)
            assert s["max_ms"] == pytest.approx(r["agg"][(metric, "Max")], abs=1e-9)
            assert s["avg_ms"] == pytest.approx(r["agg"][(metric, "Avg")], rel=1e-9)
    raw = tmp_path / "raw"
    dst = raw / "local/kafka/L1/1-topic-100-partitions-1kb-2p-2c-200k-mixed/rep-1.json"
    dst.parent.mkdir(parents=True)
    dst.write_bytes((data / "runner-mixed-m1.json").read_bytes())
    t = ingest.build(None, None, raw)
    run = t["runs"].row(0, named=True)
    assert (run["experiment"], run["partitions"], run["effective_partitions"]) == ("E000-MIX", 100, 10)
    assert run["mixed_publish_p99_ms"] > 0 and run["n_windows"] >= 1
    assert set(t["stats"]["metric"]) == {"publish", "e2e", "publish_delay", "publish_corrected", "e2e_corrected"}


def test_suspect_runs_are_marked_or_excluded_and_listed(tmp_path):
    """workloads.run's verdict (x-streambench.testbedHost.validity) decides how a run enters the tables."""
    import json
    from analysis.tests.paths import REPO
    data = REPO / "analysis" / "tests" / "data"
    raw = tmp_path / "raw"
    for rep, status in ((1, "ok"), (2, "suspect")):
        doc = json.loads((data / "runner-mixed-m1.json").read_text())
        doc["x-streambench"]["testbedHost"] = {"validity": {"status": status, "reasons": ["the host ran other work"]
                                                                           if status == "suspect" else []}}
        dst = raw / f"local/kafka/L1/1-topic-100-partitions-1kb-2p-2c-200k-mixed/rep-{rep}.json"
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(json.dumps(doc))
    for mode, n_rows in (("mark", 2), ("exclude", 1)):
        out = tmp_path / f"derived-{mode}"
        assert ingest.main(["--raw", str(raw), "--out", str(out), "--suspect", mode]) == 0
        import polars as pl
        runs = pl.read_parquet(out / "runs.parquet").sort("repetition")
        assert runs.height == n_rows
        assert runs["validity"].to_list()[0] == "ok" and runs["testbed_label"].to_list()[0] == "local"
        if mode == "mark":
            assert runs["testbed_label"].to_list()[1] == "local (suspect)"
            assert runs["validity_reasons"].to_list()[1] == "the host ran other work"
        v = json.loads((out / "validity.json").read_text())
        assert (v["mode"], v["suspect"], v["excluded"]) == (mode, 1, 1 if mode == "exclude" else 0)
        assert v["runs"][0]["path"].endswith("rep-2.json")


@pytest.mark.parametrize("fault", __import__("analysis.labels", fromlist=["x"]).KNOWN_FAULTS)
def test_a_fault_runs_verdict_beside_the_benchmarks_is_left_to_the_fault_study(tmp_path, fault):
    """A lab's `faults` target leaves fault verdicts (no OMB fields) under data/raw; `all` ingests that folder next:
    every fault the plan runs must be recognised, not read as an OMB result (partition-minority and slow-link-leader
    were not, and stopped the ingest on 'publishRate')."""
    raw = tmp_path / "raw"
    write(raw / "lab/kafka/L1/1-topic-100-partitions-1kb-2p-2c-200k/rep-1.json", streambench())
    write(raw / f"lab/kafka/L1+stock/1-topic-8-partitions-1kb-1p-1c-2k--{fault}/rep-1.json",
          {"workload": "1-topic-8-partitions-1kb-1p-1c-2k", "driver": "kafka-L1-stock",
           "x-streambench": {"fault": {"type": fault}, "lostAcknowledged": 0}})
    runs = ingest.build(None, None, raw)["runs"]
    assert runs.height == 1 and runs["path"].str.contains(fault).sum() == 0
