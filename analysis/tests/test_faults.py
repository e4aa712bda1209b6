"""analysis.faults: fault runs read from data/raw, the grid with medians and ranges, the claims' verdicts, figure."""
import csv
import json

import pytest

from analysis import InputError, faults
from analysis.tests.test_figures import _overlapping_words

RATE, TRAFFIC_S = 2000, 25  # a local fault run: 20-30 s of traffic at a rate this 2-core box holds


def fault_doc(fault: str, lost: int, seed: int, *, acknowledged: int = RATE * TRAFFIC_S, targets=("kafka-1",),
              suspect: bool = False, **over) -> dict:
    """A result file as a fault run writes it: OMB keys cut to a few, x-streambench with audit and fault verdict."""
    f = {"type": fault, "strikeAtSeconds": 10.0 + seed % 5, "downSeconds": 8.0, "seed": seed, "targets": list(targets),
         "acknowledged": acknowledged, "lost": lost, "duplicated": 3 if fault == "crash-all" else 0,
         "reordered": 0, "unacknowledgedPresent": 17 if fault in ("crash-all", "power-loss") else 0,
         "publishErrors": 120 + seed, "unavailableMs": 4200.0 + seed, "recoveryMs": 9100.0 + 10 * seed,
         "read": acknowledged - lost + 17, **over}
    x = {"formatVersion": 1, "audit": {"sent": acknowledged + 200, "acked": acknowledged, "sendErrors": 120 + seed,
                                       "lost": lost, "duplicated": f["duplicated"], "outOfOrder": 0},
         "fault": f}
    if suspect:
        x["testbedHost"] = {"validity": {"status": "suspect", "reasons": ["CPU steal 12 %"]}}
    return {"workload": f"fault {fault}", "driver": "x", "messageSize": 1024, "publishRate": [RATE] * 2,
            "x-streambench": x}


def write(raw, system, level, fault, rep, doc, testbed="local"):
    p = raw / testbed / system / f"{level}+stock" / f"1-topic-8-partitions-1kb-1p-1c-2k--{fault}" / f"rep-{rep}.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(doc))
    return p


# lost per repetition where the levels predict a loss (the Pulsar standalone probe lost 3.0 % and 13.4 % with
# journal bypass after kill -9); every other cell loses nothing
LOSSES = {
    ("pulsar", "L4-bypass", "crash-all"): [1500, 6700, 0],
    ("pulsar", "L2-bypass", "crash-all"): [0, 2210, 0],
    ("pulsar", "L4", "power-loss"): [310, 0, 95],
    ("kafka", "L2", "power-loss"): [4000, 3900, 4100],
    ("kafka", "L4", "power-loss"): [5100, 0, 4800],
}


@pytest.fixture
def raw(tmp_path):
    """A partial local grid: every L1 and L2/L4 cell of both systems, 3 repetitions; kafka L3 and the ack-1
    kill-leader cells not run; a suspect run; another study's (non-fault) run, a probe and a ci run."""
    raw = tmp_path / "raw"
    for system, levels in faults.SYSTEM_LEVELS.items():
        for level in levels:
            if level == "L3":
                continue
            for fault in faults.FAULTS:
                if fault == "kill-bookie" and system == "kafka":
                    continue
                if fault == "kill-leader" and level.startswith("L4"):
                    continue
                for rep in (1, 2, 3):
                    lost = LOSSES.get((system, level, fault), [0, 0, 0])[rep - 1]
                    tg = ["kafka-0", "kafka-1", "kafka-2"] if fault in ("crash-all", "power-loss") else ["kafka-1"]
                    write(raw, system, level, fault, rep, fault_doc(fault, lost, seed=100 * rep + len(level),
                                                                    targets=tg, clusterCycle=rep, suspect=(system, level, fault, rep) ==
                                                                    ("pulsar", "L1", "kill-one", 3)))
    other = raw / "local" / "kafka" / "L1+stock" / "1-topic-100-partitions-1kb-2p-2c-200k" / "rep-1.json"
    other.parent.mkdir(parents=True)
    other.write_text(json.dumps({"workload": "x", "x-streambench": {"audit": {"lost": 0}}}))
    probe = raw / "local" / "probes" / "host" / "rep-1.json"
    probe.parent.mkdir(parents=True)
    probe.write_text("{}")
    write(raw, "kafka", "L1", "kill-leader", 1, fault_doc("kill-leader", 9, seed=5), testbed="ci")
    return raw


def test_runs_one_row_per_fault_file_labelled_from_its_path(raw):
    runs = faults.read_runs(raw)
    n_local = 3 * (3 * 5 + 2 * 4 + 2 * 4 + 3)  # pulsar L1, L2, L2-bypass: 5 faults, L4s: 4; kafka L1, L2: 4, L4: 3
    assert len(runs) == n_local + 1 and set(runs["testbed"]) == {"local", "ci"}
    r = runs.filter((runs["system"] == "kafka") & (runs["level"] == "L2") & (runs["fault"] == "power-loss")
                    & (runs["repetition"] == 2)).row(0, named=True)
    assert r["lost"] == 3900 and r["acknowledged"] == 50000 and r["lost_fraction"] == pytest.approx(0.078)
    assert (r["ack"], r["local"], r["tuning"]) == ("ack-2", "async", "stock")
    assert r["targets"] == "kafka-0 kafka-1 kafka-2" and r["file"].endswith("rep-2.json")
    assert r["cluster_cycle"] == 2
    assert runs.filter(runs["testbed"] == "ci")["cluster_cycle"].to_list() == [None]  # written before clusters were shared
    byp = runs.filter(runs["level"] == "L4-bypass")
    assert set(byp["local"]) == {"async (journal bypass)"} and set(byp["ack"]) == {"ack-1"}
    assert runs["suspect"].sum() == 1
    assert len(faults.read_runs(raw, suspect="exclude")) == n_local


def test_cells_give_median_and_range_over_repetitions_and_name_missing_cells(raw):
    cl = {(c["system"], c["level"], c["fault"]): c for c in faults.cells(faults.read_runs(raw), "local")}
    assert len(cl) == 4 * 5 + 6 * 5  # every system x level x fault, kill-bookie on kafka included (as n/a)
    c = cl[("pulsar", "L4-bypass", "crash-all")]
    assert (c["runs"], c["lost_median"], c["lost_min"], c["lost_max"], c["runs_with_loss"]) == (3, 1500, 0, 6700, 2)
    assert c["lost_total"] == 8200 and c["lost_fraction_median"] == pytest.approx(0.03)
    assert cl[("kafka", "L3", "power-loss")]["status"] == "not run"
    assert cl[("kafka", "L4", "kill-leader")]["status"] == "not run"
    assert cl[("kafka", "L1", "kill-bookie")]["status"] == "n/a"
    assert faults.cell_text(c) == "1500 (0–6700), n=3"
    assert faults.cell_text(cl[("kafka", "L1", "kill-bookie")]) == "n/a"
    # the ci run is another testbed's: it is not in the local grid, and the ci grid has only it
    assert cl[("kafka", "L1", "kill-leader")]["lost_max"] == 0
    ci = [c for c in faults.cells(faults.read_runs(raw), "ci") if c["status"] == "run"]
    assert [(c["system"], c["level"], c["fault"], c["lost_median"]) for c in ci] == [("kafka", "L1", "kill-leader", 9)]


def _verdicts(raw, testbed="local"):
    cr = faults.claims(faults.cells(faults.read_runs(raw), testbed))
    return {(r["claim_id"], r["system"]): r for r in cr}


def test_claims_on_a_partial_grid(raw):
    v = _verdicts(raw)
    # F1: pulsar's L1 cells are all run and lose nothing; kafka's kill-bookie is n/a, not missing
    assert v[("F1", "pulsar")]["verdict"] == "supported" and v[("F1", "pulsar")]["runs"] == 15
    assert v[("F1", "kafka")]["verdict"] == "supported" and v[("F1", "kafka")]["cells"] == 4
    # F2: one observed loss supports "can lose"; the counts are those of every async-local power-loss cell
    f2 = v[("F2", "kafka")]
    assert f2["verdict"] == "supported" and f2["runs_with_loss"] == 5 and f2["lost_total"] == 4000 + 3900 + 4100 + 9900
    assert "L2 power-loss: 3 of 3 runs, up to 4100" in f2["evidence"]
    # n runs and the lost counts' median [min–max] over them (L2: 4000, 3900, 4100; L4: 5100, 0, 4800)
    assert (f2["n"], f2["interval"]) == (6, "4050 [0–5100]")
    assert (v[("F1", "pulsar")]["n"], v[("F1", "pulsar")]["interval"]) == (15, "0 [0–0]")
    assert v[("F2", "pulsar")]["verdict"] == "supported" and "L4 power-loss: 2 of 3 runs" in v[("F2", "pulsar")]["evidence"]
    # F3: no ack-1 kill-leader cell was run on this partial grid
    assert v[("F3", "kafka")]["verdict"] == "not tested" and v[("F3", "pulsar")]["verdict"] == "not tested"
    assert v[("F3", "kafka")]["evidence"] == "none of the 2 cells run"


def test_claim_not_observed_is_not_refuted_and_a_loss_refutes_l1(raw):
    for level in ("L4", "L4-bypass"):
        for rep in (1, 2, 3):
            write(raw, "pulsar", level, "kill-leader", rep, fault_doc("kill-leader", 0, seed=rep))
    write(raw, "pulsar", "L3", "kill-leader", 1, fault_doc("kill-leader", 0, seed=9))
    write(raw, "kafka", "L1", "power-loss", 2, fault_doc("power-loss", 12, seed=2))  # replaces a 0
    v = _verdicts(raw)
    f3 = v[("F3", "pulsar")]
    assert f3["verdict"] == "not observed in 7 runs" and f3["runs_with_loss"] == 0
    assert f3["evidence"] == "0 lost in 7 runs of 3 cells"
    f1 = v[("F1", "kafka")]
    assert f1["verdict"] == "refuted" and f1["lost_total"] == 12
    assert f1["evidence"] == "lost in L1 power-loss: 1 of 3 runs, up to 12"


def test_claims_not_tested_when_l1_cells_are_missing(raw):
    for p in (raw / "local" / "pulsar" / "L1+stock").glob("*power-loss/rep-*.json"):
        p.unlink()
    f1 = _verdicts(raw)[("F1", "pulsar")]
    assert f1["verdict"] == "not tested" and f1["cells_run"] == 4
    assert f1["evidence"] == "0 lost in 12 runs of 4 cells; 1 not run: L1 power-loss"


def test_no_fault_runs_at_all_gives_not_tested_everywhere(tmp_path):
    runs = faults.read_runs(tmp_path / "absent")
    assert runs.is_empty() and runs.columns == faults.RUN_COLS
    cl = faults.cells(runs, "ci")
    assert {c["status"] for c in cl} == {"not run", "n/a"}
    assert {r["verdict"] for r in faults.claims(cl)} == {"not tested"}


@pytest.mark.parametrize("field,value,problem", [
    ("lost", -1, "not a non-negative integer"),
    ("lost", 60000, "more than were acknowledged"),
    ("acknowledged", "50000", "not a non-negative integer"),
    ("type", "reboot", "is not one of"),
    ("type", "kill-bookie", "does not exist for kafka"),
    ("strikeAtSeconds", float("nan"), "not a non-negative finite number"),
    ("recoveryMs", -5.0, "not a non-negative finite number"),
    ("targets", [], "not a non-empty list"),
    ("seed", 1.5, "not an integer"),
    ("read", None, "missing"),
    ("clusterCycle", 0, "not a positive integer"),
])
def test_a_corrupt_fault_object_names_file_and_field(tmp_path, capsys, field, value, problem):
    doc = fault_doc("kill-leader", 0, seed=1)
    if problem == "missing":
        del doc["x-streambench"]["fault"][field]
    else:
        doc["x-streambench"]["fault"][field] = value
    p = write(tmp_path / "raw", "kafka", "L2", "kill-leader", 1, doc)
    with pytest.raises(InputError, match=problem) as e:
        faults.read_runs(tmp_path / "raw")
    assert e.value.path == str(p) and e.value.field == f"x-streambench.fault.{field}"
    assert faults.main(["--raw", str(tmp_path / "raw"), "--testbed", "local", "--tables", str(tmp_path / "t"),
                        "--figures", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(p) in err and f"x-streambench.fault.{field}" in err
    assert not (tmp_path / "t").exists()  # nothing written


def test_a_fault_runs_file_without_its_fault_object_names_file_and_field(tmp_path):
    doc = fault_doc("crash-all", 0, seed=1)
    del doc["x-streambench"]["fault"]
    p = write(tmp_path, "pulsar", "L4-bypass", "crash-all", 2, doc)
    with pytest.raises(InputError, match="x-streambench.fault': missing in a fault run") as e:
        faults.read_runs(tmp_path)
    assert e.value.path == str(p)


def test_a_fault_object_that_is_not_an_object_and_a_bad_level_dir(tmp_path):
    doc = fault_doc("kill-leader", 0, seed=1)
    doc["x-streambench"]["fault"] = "kill-leader"
    write(tmp_path / "a", "kafka", "L2", "kill-leader", 1, doc)
    with pytest.raises(InputError, match="x-streambench.fault': not an object"):
        faults.read_runs(tmp_path / "a")
    p = write(tmp_path / "b", "kafka", "L2-bypass", "kill-leader", 1, fault_doc("kill-leader", 0, seed=1))
    with pytest.raises(InputError, match="L2-bypass exists only for Pulsar") as e:
        faults.read_runs(tmp_path / "b")
    assert e.value.path == str(p)


def test_tables_and_figure(raw, tmp_path):
    tables, figs, derived = tmp_path / "tables", tmp_path / "figures", tmp_path / "derived"
    assert faults.main(["--raw", str(raw), "--testbed", "local", "--tables", str(tables), "--figures", str(figs),
                        "--derived", str(derived), "--png-scale", "1"]) == 0
    with open(tables / "faults.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 50 and rows[0].keys() >= {"lost_median", "lost_min", "lost_max", "runs", "status"}
    md = (tables / "faults.md").read_text().splitlines()
    assert md[0] == "| system | level | ack | local | kill-leader | kill-bookie | kill-one | crash-all | power-loss |"
    assert len(md) == 2 + 10
    assert "| pulsar | L4-bypass | ack-1 | async (journal bypass) | not run | 0 (0–0), n=3 | 0 (0–0), n=3 | " \
           "1500 (0–6700), n=3 | 0 (0–0), n=3 |" in md
    assert "| kafka | L1 | ack-2 | sync | 0 (0–0), n=3 | n/a |" in md[2]
    claims_md = (tables / "faults-claims.md").read_text()
    assert claims_md.count("\n") == 2 + 6 and "not tested" in claims_md and "supported" in claims_md
    assert claims_md.splitlines()[0] == ("| claim_id | claim | system | n | runs_with_loss | lost_total | interval | "
                                         "verdict | evidence |")
    assert "| kafka | 6 | 5 | 21900 | 4050 [0–5100] | supported |" in claims_md
    with open(tables / "faults-runs.csv", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == len(faults.read_runs(raw))
    import polars as pl
    assert pl.read_parquet(derived / "faults.parquet").shape[0] == len(faults.read_runs(raw))
    meta = json.loads((figs / "faults-lost.json").read_text())
    assert meta["id"] == "faults-lost" and "102 fault runs" in meta["caption"] and len(meta["alt"]) > 40
    svg = (figs / "faults-lost.svg").read_text()
    for word in ("power-loss", "kill-bookie", "L4-bypass", "not run", "n/a", "kafka", "pulsar"):
        assert word in svg, word
    assert 'opacity="0"' not in svg
    assert _overlapping_words(figs / "faults-lost.pdf") == []
    # no fault run at all (the ci profile before any fault run): every output still written, claims not tested
    assert faults.main(["--raw", str(tmp_path / "none"), "--testbed", "ci", "--tables", str(tmp_path / "t2"),
                        "--figures", str(tmp_path / "f2"), "--png-scale", "1"]) == 0
    assert (tmp_path / "f2" / "faults-lost.svg").stat().st_size > 0
    with open(tmp_path / "t2" / "faults-claims.csv", newline="") as fh:
        assert {r["verdict"] for r in csv.DictReader(fh)} == {"not tested"}
    # no testbed with hosts ran a hold fault: the hosts table says so in its one row
    hosts_md = (tables / "faults-hosts.md").read_text().splitlines()
    assert len(hosts_md) == 3 and "no testbed with hosts of its own has run them" in hosts_md[2]


def test_the_hold_faults_of_testbeds_with_hosts_are_tabled_beside_this_testbeds_grid(raw, tmp_path):
    for rep, lost in enumerate([16414, 0, 3], 1):
        write(raw, "kafka", "L4", "partition-majority", rep, fault_doc("partition-majority", lost, seed=rep), testbed="lab")
    write(raw, "kafka", "L1", "partition-majority", 1, fault_doc("partition-majority", 0, seed=9), testbed="lab")
    write(raw, "pulsar", "L1", "pause-leader", 1, fault_doc("pause-leader", 0, seed=8), testbed="lab")
    write(raw, "kafka", "L1", "pause-leader", 1, fault_doc("pause-leader", 0, seed=7), testbed="hosts")
    tables = tmp_path / "tables"
    out = faults.build(raw, "local", tables, tmp_path / "figures", png_scale=1)
    md = (tables / "faults-hosts.md").read_text().splitlines()
    assert md[0] == "| testbed | system | level | ack | partition-majority | pause-leader |"
    assert md[2:] == ["| hosts | kafka | L1 | ack-2 | not run | 0 (0–0), n=1 |",
                      "| lab | kafka | L1 | ack-2 | 0 (0–0), n=1 | not run |",
                      "| lab | kafka | L4 | ack-1 | 3 (0–16414), n=3 | not run |",
                      "| lab | pulsar | L1 | ack-2 | not run | 0 (0–0), n=1 |"]
    with open(tables / "faults-hosts.csv", newline="") as fh:
        assert list(csv.DictReader(fh))[2]["partition-majority"] == "3 (0–16414), n=3"
    # this testbed's own grid and claims are its own runs only
    assert all(c["testbed"] == "local" for c in out["cells"]) and len(out["hosts"]) == 4


def test_the_fault_rule_builds_the_study_alone(raw, tmp_path):
    """The fault study's outputs (what `snakemake faults` asks for besides the runs) come from analysis_faults alone,
    whose inputs are the result files on disk (a dry run: the build itself is test_tables_and_figure's)."""
    import os
    import subprocess
    import sys

    import yaml

    from analysis.tests.paths import REPO
    wd = tmp_path / "wd"
    (wd / "data").mkdir(parents=True)
    (wd / "data" / "raw").symlink_to(raw)
    (wd / "analysis").symlink_to(REPO / "analysis")
    (wd / "config.yaml").write_text(yaml.safe_dump({
        "testbed": "local", "published": {"mirror": str(tmp_path / "absent"), "url_base": "https://example.invalid/"},
        "analysis": {"png_scale": 1.0}}))
    (wd / "Snakefile").write_text('configfile: "config.yaml"\nALL_TARGETS = []\ninclude: "analysis/rules.smk"\n')
    env = dict(os.environ, PYTHONPATH=str(REPO), PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    r = subprocess.run([sys.executable, "-m", "snakemake", "--nolock", "-n", "-p", "-c1", "paper/tables/faults-claims.md",
                        "paper/figures/faults-lost.svg"], cwd=wd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout + r.stderr
    stats = out.split("Job stats:")[1].split("\n\n")[0].splitlines()[3:]  # job / count / ----, then one line per rule
    jobs = dict(line.split()[:2] for line in stats if line.strip())
    assert jobs == {"analysis_faults": "1", "total": "1"}, jobs
    shell = out[out.index("python -m analysis.faults"):].splitlines()[0]
    assert "--raw data/raw --testbed local" in shell and "--derived data/derived" in shell
    inputs = out[out.index("rule analysis_faults"):].split("input:")[1].splitlines()[0]
    assert "local/kafka/L1+stock/1-topic-8-partitions-1kb-1p-1c-2k--power-loss/rep-3.json" in inputs


def test_a_verdict_from_one_run_says_so(tmp_path):
    raw = tmp_path / "raw"
    write(raw, "kafka", "L2", "power-loss", 1, fault_doc("power-loss", 40, seed=1))
    write(raw, "kafka", "L4", "kill-leader", 1, fault_doc("kill-leader", 0, seed=2))
    v = _verdicts(raw)
    assert v[("F2", "kafka")]["verdict"] == "supported (1 run)" and v[("F2", "kafka")]["interval"] == "40"
    assert v[("F3", "kafka")]["verdict"] == "not observed in 1 runs" and v[("F3", "kafka")]["n"] == 1
    assert v[("F1", "kafka")]["verdict"] == "not tested" and v[("F1", "kafka")]["interval"] is None


def _timeline(doc, lost_at=(), errors_at=(), hold=True):
    """Give a fault_doc a timeline as workloads/faultrun.py writes it: 30 s at 2 000 msg/s from t0 = 1 000 000 s."""
    t0 = 1_000_000.0
    x = doc["x-streambench"]
    x["measurementStartTime"] = "1970-01-12T13:46:40+00:00"  # t0
    x["fault"].update(leaderBefore="kafka-2", leaderAfter="kafka-1")
    per = [{"s": s, "sent": RATE, "acked": 0 if 8 <= s < 12 else RATE, "errors": 50 if s in errors_at else 0,
            "lost": 900 if s in lost_at else 0} for s in range(30)]
    ev = [{"event": "ready"}, {"event": "struck", "t": t0 + 5.2, "targets": ["kafka-2"]},
          {"event": "healed", "t": t0 + 25.2} if hold else {"event": "restarted", "t": t0 + 8.2, "nodes": ["kafka-2"]},
          {"event": "back", "t": t0 + 25.3}, {"event": "exited"}]
    x["faultTimeline"] = {"events": ev, "slowMs": 1000, "unflushedAtEnd": 0, "perSecond": per}
    return doc


def test_the_timeline_draws_the_run_of_each_fault_that_lost_most_with_its_schedule_and_leaders(tmp_path):
    raw = tmp_path / "raw"
    write(raw, "kafka", "L4", "partition-leader", 1, _timeline(fault_doc("partition-leader", 900, seed=1), (6,)))
    write(raw, "kafka", "L4", "partition-leader", 2,
          _timeline(fault_doc("partition-leader", 1800, seed=2), (6, 7), errors_at=(9,)))
    write(raw, "kafka", "L1", "partition-leader", 1, _timeline(fault_doc("partition-leader", 0, seed=3)))
    write(raw, "kafka", "L4", "kill-leader", 1, _timeline(fault_doc("kill-leader", 0, seed=4), hold=False))
    write(raw, "kafka", "L4", "crash-all", 1, fault_doc("crash-all", 7, seed=5))  # older result: no timeline
    runs = faults.read_runs(raw)
    assert runs.filter(runs["fault"] == "kill-leader")["leader_after"].to_list() == ["kafka-1"]
    chosen = faults.timeline_runs(runs, "local")
    assert [(r["fault"], r["repetition"], r["lost"]) for r in chosen] == [("kill-leader", 1, 0),
                                                                         ("partition-leader", 2, 1800)]
    # a hold's heal and the cluster serving again 0.1 s later share one rule (two labels there would overlap)
    assert {e["event"]: e["t_s"] for e in chosen[1]["events"]} == {"strike": 5.2, "heal, serving": 25.2}
    assert {e["event"] for e in chosen[0]["events"]} == {"strike", "restart", "serving"}
    figs = tmp_path / "figs"
    assert faults.main(["--raw", str(raw), "--testbed", "local", "--tables", str(tmp_path / "t"), "--figures",
                        str(figs), "--png-scale", "1"]) == 0
    svg = (figs / "faults-timeline.svg").read_text()
    for word in ("partition-leader: kafka L4, repetition 2, 1800 lost", "leader kafka-2 before, kafka-1 after", "strike", "heal",
                 "restart", "serving", "publish errors /s", "lost (by send second)"):
        assert word in svg, word
    assert "crash-all" not in svg  # its one run has no timeline
    # the grid's table grows the hold faults' columns, and its separator row with them
    head, sep = (tmp_path / "t" / "faults.md").read_text().splitlines()[:2]
    assert head.endswith("| partition-leader |") and head.count("|") == sep.count("|") == 11  # 10 columns
    assert _overlapping_words(figs / "faults-timeline.pdf") == []
    assert "second by second" in json.loads((figs / "faults-timeline.json").read_text())["caption"]
    # another testbed, none with a timeline: the figure says so
    assert faults.main(["--raw", str(raw), "--testbed", "lab", "--tables", str(tmp_path / "t2"), "--figures",
                        str(tmp_path / "f2"), "--png-scale", "1"]) == 0
    assert "no fault run with a timeline" in (tmp_path / "f2" / "faults-timeline.svg").read_text()


def test_a_malformed_timeline_names_the_file_and_the_field(tmp_path):
    doc = _timeline(fault_doc("partition-leader", 0, seed=1))
    doc["x-streambench"]["faultTimeline"]["perSecond"][3]["acked"] = -1
    p = write(tmp_path, "kafka", "L1", "partition-leader", 1, doc)
    with pytest.raises(InputError, match=r"perSecond\[3\].acked': not a count: -1") as e:
        faults.timeline_runs(faults.read_runs(tmp_path), "local")
    assert e.value.path == str(p)


def test_another_testbeds_hold_faults_are_no_cells_of_this_testbeds_grid(raw, tmp_path):
    """A tree that ran the lab's hold faults and a local grid: the local L1 rows are not "not run" partitions, so
    F1 is judged on the local kill faults alone (it was "not tested" before)."""
    for f in ("kill-leader", "kill-one", "crash-all", "power-loss"):
        write(raw, "kafka", "L1", f, 1, fault_doc(f, 0, seed=3))
    write(raw, "kafka", "L1", "partition-leader", 1, fault_doc("partition-leader", 0, seed=4), testbed="lab")
    out = faults.build(raw, "local", tmp_path / "tables", tmp_path / "figures", png_scale=1)
    assert not {c["fault"] for c in out["cells"]} & set(faults.HOLD_FAULTS)
    f1 = next(c for c in out["claims"] if c["claim_id"] == "F1" and c["system"] == "kafka")
    assert f1["verdict"] == "supported", f1
