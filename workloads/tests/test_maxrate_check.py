"""workloads.maxrate_check: a weaker level may not report less than half the max rate of a stronger one, unless
its result says why."""
import json
from pathlib import Path

from systems import durability as dur
from workloads import maxrate_check as mc

ROOT = Path(__file__).resolve().parents[2]
LEVELS = dur.load(ROOT / "systems/durability.yaml").levels


def put(root: Path, system: str, level: str, rate: float, rep: int = 1, suspect: bool = False, target=None):
    p = root / system / level / "1-topic-100-partitions-1kb-2p-2c-max" / f"rep-{rep}.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    val = {"status": "suspect", "reasons": ["the host ran other work"]} if suspect else {"status": "ok", "reasons": []}
    p.write_text(json.dumps({"x-streambench": {"producerRate": {"target": target, "achieved": rate},
                                               "testbedHost": {"validity": val}}}))


def test_the_order_is_partial():
    assert mc.weaker(LEVELS["L4"], LEVELS["L1"]) and mc.weaker(LEVELS["L2"], LEVELS["L1"])
    assert mc.weaker(LEVELS["L4-bypass"], LEVELS["L4"]) and mc.weaker(LEVELS["L2-bypass"], LEVELS["L2"])
    assert not mc.weaker(LEVELS["L2"], LEVELS["L3"]) and not mc.weaker(LEVELS["L3"], LEVELS["L2"])
    assert not mc.weaker(LEVELS["L1"], LEVELS["L4"]) and not mc.weaker(LEVELS["L1"], LEVELS["L1"])


def test_an_unexplained_collapse_fails_and_names_both_files(tmp_path, capsys):
    # issue 11's observation: kafka L1 at 1 920 msg/s against 58 162 at L4 is fine (L1 is stronger);
    # pulsar L4 at 1 931 against L1 at 36 221 is not
    put(tmp_path, "kafka", "L1", 1920)
    put(tmp_path, "kafka", "L4", 58162)
    put(tmp_path, "pulsar", "L1", 36221)
    put(tmp_path, "pulsar", "L4", 1931)
    put(tmp_path, "pulsar", "L4", 999, rep=2, target=4000)  # a fixed-rate run is not compared
    assert mc.main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "pulsar/1-topic-100-partitions-1kb-2p-2c-max: L4 (weaker) settled at 1931 msg/s" in out
    assert "kafka" not in out.split("\n")[0]
    assert "1 unexplained" in out


def test_a_suspect_weaker_run_is_explained_and_repetitions_use_the_median(tmp_path):
    put(tmp_path, "pulsar", "L1", 36000)
    put(tmp_path, "pulsar", "L4", 1931, suspect=True)
    assert mc.main([str(tmp_path)]) == 0
    put(tmp_path, "kafka", "L1", 30000)
    for rep, rate in ((1, 10000), (2, 40000), (3, 41000)):  # one bad repetition does not decide
        put(tmp_path, "kafka", "L2", rate, rep=rep)
    runs = mc.load_runs(tmp_path)
    bad, pairs = mc.check(runs, LEVELS)
    assert bad == [] and pairs == 2


def test_spread_over_repetitions(tmp_path, capsys):
    for rep, rate in ((1, 10000), (2, 12000), (3, 11000)):
        put(tmp_path, "kafka", "L2", rate, rep=rep)
    for rep, rate in ((1, 20000), (2, 20000), (3, 30000)):
        put(tmp_path, "pulsar", "L2", rate, rep=rep, suspect=rep == 3)
    put(tmp_path, "pulsar", "L3", 5000)  # one repetition: no spread
    cells = mc.spread(mc.load_runs(tmp_path))
    assert [c["cell"].split("/")[0] for c in cells] == ["pulsar", "kafka"]  # widest first
    assert cells[0]["spread"] == 0.5 and cells[0]["suspect"] == 1 and cells[0]["median"] == 20000
    assert abs(cells[1]["spread"] - 2000 / 11000) < 1e-9 and cells[1]["rates"] == [10000, 12000, 11000]
    assert mc.main([str(tmp_path), "--spread"]) == 0
    out = capsys.readouterr().out
    assert "of 2 cells (6 runs): median 34%, widest 50% (pulsar/L2/" in out
    # without the suspect repetition pulsar/L2 is 20000 / 20000: no spread
    assert "spread without suspect runs over repetitions, (max - min) / median, of 2 cells (5 runs): median 9%" in out
    assert "0 cells within 10 %, 1 within 25 %, 2 within 50 %" in out
    assert "pulsar/L2/1-topic-100-partitions-1kb-2p-2c-max: 20000 / 20000 / 30000 msg/s, median 20000, spread 50%, 1 suspect" in out
