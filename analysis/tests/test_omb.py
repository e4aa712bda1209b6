import json

import pytest

from analysis import InputError, omb
from analysis.tests.fixtures import omb_2020, omb_current, streambench, write


def test_2020_schema(tmp_path):
    r = omb.load(write(tmp_path / "a.json", omb_2020()))
    assert r["generation"] == "omb-2020" and r["n_windows"] == 3
    assert r["quantiles"]["publish"] == [(0.0, 1.0), (50.0, 2.0), (90.0, 3.0), (99.0, 4.0), (100.0, 4.0)]
    assert r["agg"][("publish", "Avg")] == 2.5


def test_current_schema_publish_delay_in_ms(tmp_path):
    r = omb.load(write(tmp_path / "a.json", omb_current()))
    assert r["generation"] == "omb-current"
    assert r["windows"]["publishDelayLatency99pct"] == [1.5, 1.5, 1.5]  # 1500 µs
    assert r["quantiles"]["publish_delay"] == [(50.0, 1.0), (100.0, 2.0)]


def test_streambench_histograms_decoded(tmp_path):
    r = omb.load(write(tmp_path / "a.json", streambench()))
    assert r["generation"] == "streambench"
    h = r["histograms"]["publish"]
    # 50 ms = 50000 µs lies in a bucket of width 32 (32768..65535), 49984..50015: HdrHistogram reports its top
    assert h.total == 100 and h.value_at_percentile(50) == 50015


def _bad(tmp_path, d, name="bad.json"):
    p = tmp_path / name
    p.write_text(d if isinstance(d, str) else json.dumps(d))
    with pytest.raises(InputError) as e:
        omb.load(p)
    assert str(p) in str(e.value)
    return str(e.value)


def test_truncated_json(tmp_path):
    text = json.dumps(omb_2020())
    assert "truncated or invalid JSON" in _bad(tmp_path, text[: len(text) // 2])


def test_missing_key(tmp_path):
    d = omb_2020(); del d["aggregatedEndToEndLatency99pct"]
    assert "aggregatedEndToEndLatency99pct" in _bad(tmp_path, d)


def test_partial_current_schema(tmp_path):
    d = omb_current(); del d["publishDelayLatency99pct"]
    assert "'publishDelayLatency99pct': missing key" in _bad(tmp_path, d)


def test_negative_latency(tmp_path):
    d = omb_2020(); d["publishLatency99pct"][1] = -3.0
    assert "'publishLatency99pct': negative value" in _bad(tmp_path, d)


def test_unequal_windows(tmp_path):
    d = omb_2020(); d["endToEndLatencyMax"] = d["endToEndLatencyMax"][:2]
    assert "'endToEndLatencyMax': has 2 windows" in _bad(tmp_path, d)


def test_microseconds_in_ms_field(tmp_path):
    d = omb_2020()
    d["aggregatedPublishLatencyMax"] = 4000.0  # µs written where ms belong; per-window max is 4 ms
    assert "'aggregatedPublishLatencyMax'" in _bad(tmp_path, d) and "unit mismatch" in _bad(tmp_path, d)
    d = omb_2020(); d["publishLatencyMax"] = [9e10, 1.0, 1.0]
    assert "µs-scale" in _bad(tmp_path, d)


def test_quantile_map_must_not_decrease(tmp_path):
    d = omb_2020(); d["aggregatedPublishLatencyQuantiles"]["99.0"] = 1.5
    assert "values decrease" in _bad(tmp_path, d)


def test_bad_histogram(tmp_path):
    d = streambench(); d["x-streambench"]["histograms"]["publish"] = "AAAA"
    assert "x-streambench.histograms.publish" in _bad(tmp_path, d)
    d = streambench(); d["x-streambench"]["histograms"]["unit"] = "ms"
    assert "x-streambench.histograms.unit" in _bad(tmp_path, d)


def test_all_published_files_load(mirror):
    files = sorted((mirror / "results").rglob("*.json"))
    assert len(files) == 124
    gens = {omb.load(f)["generation"] for f in files}
    assert gens == {"omb-2020"}


def test_run_without_samples_has_no_statistics(tmp_path):
    from analysis import ingest
    d = omb_current(n=0)
    for k, v in list(d.items()):
        if isinstance(v, list):
            d[k] = []
    d["aggregatedEndToEndLatencyQuantiles"] = {}
    raw = tmp_path / "raw"
    write(raw / "local/kafka/L2/1-topic-100-partitions-1kb-2p-2c-200k/rep-1.json", d)
    t = ingest.build(None, None, raw)
    assert t["runs"]["n_windows"].to_list() == [0] and t["windows"].height == 0
    assert t["stats"]["metric"].to_list() == ["publish", "publish_delay"]  # no e2e samples -> no e2e row
