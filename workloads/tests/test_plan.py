"""experiments.yaml: schema, cross-checks, expansion, ordering, scaling (pure logic)."""
from pathlib import Path

import pytest
import yaml

from workloads import drivers, plan, scale
from workloads.tests.planfix import CATALOG, doc_with


def test_shipped_file_is_valid_and_every_name_resolves():
    doc = plan.load()
    plan.check(doc, CATALOG)
    for name in doc["scales"]:
        assert plan.expand(doc, CATALOG, name)


def test_every_workload_file_is_used_by_some_experiment():
    doc = plan.load()
    used = {w for e in doc["experiments"].values() for w in e["workloads"]}
    files = {p.stem for p in plan.OMB_DIR.glob("*.yaml")}
    assert files - used == set()


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["experiments"]["E000-LAT1"]["workloads"].append("no-such-shape"), "experiments.E000-LAT1.workloads: unknown workload 'no-such-shape'"),
        (lambda d: d["experiments"]["E000-LAT1"].__setitem__("systems", ["kafak"]), "experiments.E000-LAT1.systems: unknown system 'kafak'"),
        (lambda d: d["experiments"]["E000-LAT1"].__setitem__("levels", ["L9"]), "experiments.E000-LAT1.levels: unknown level 'L9'"),
        (lambda d: d["experiments"]["E000-LAT1"].__setitem__("tuning", "fast"), "experiments.E000-LAT1.tuning: unknown tuning 'fast'"),
        (lambda d: d["experiments"]["E000-LAT1"].__setitem__("variants", ["huge"]), "experiments.E000-LAT1.variants: unknown driver variant 'huge'"),
        (lambda d: d["scales"]["ci"].__setitem__("experiments", ["E999-X"]), "scales.ci.experiments: unknown experiment 'E999-X'"),
    ],
)
def test_unknown_names_fail_with_name_and_file(tmp_path, mutate, message):
    p = doc_with(tmp_path, mutate)
    with pytest.raises(plan.PlanError) as exc:
        plan.check(plan.load(p), CATALOG, p)
    assert str(p) in str(exc.value) and message in str(exc.value)


@pytest.mark.parametrize(
    "mutate, where",
    [
        (lambda d: d["experiments"]["E000-LAT1"].__setitem__("repetitons", 2), "experiments.E000-LAT1"),
        (lambda d: d["scales"]["local"].__setitem__("rate_factor", "fast"), "scales.local.rate_factor"),
        (lambda d: d["experiments"].__setitem__("lat1", d["experiments"]["E000-LAT1"]), "experiments"),
    ],
)
def test_schema_errors_name_file_and_field(tmp_path, mutate, where):
    p = doc_with(tmp_path, mutate)
    with pytest.raises(plan.PlanError) as exc:
        plan.load(p)
    assert str(exc.value).startswith(f"{p}: {where}")


def test_expand_dedups_shared_runs_and_skips_levels_a_system_lacks():
    doc = plan.load()
    runs = plan.expand(doc, CATALOG, "aws")
    keys = [r.key for r in runs]
    assert len(keys) == len(set(keys))
    shared = [r for r in runs if r.key == "kafka/L1/1-topic-100-partitions-1kb-2p-2c-200k/rep-1"]
    assert shared and set(shared[0].experiments) == {"E000-LAT1", "E000-LAT3"}
    assert not [r for r in runs if r.system == "kafka" and "bypass" in r.level]
    assert [r for r in runs if r.system == "pulsar" and r.level == "L2-bypass"]


def test_ci_scale_is_the_small_subset():
    all_runs = plan.expand(plan.load(), CATALOG, "ci")
    runs = [r for r in all_runs if r.fault is None]
    assert {r.system for r in runs} == {"kafka", "pulsar"}
    assert {r.level for r in runs} == {"L1", "L4"}
    assert len({r.base_workload for r in runs}) == 2
    assert all(r.rep == 1 for r in runs)
    # and one fault cell per system (issue 15), Kafka L1 power-loss and Pulsar L4-bypass crash-all, twice each: the
    # second run is the second cycle on the cluster the first one left
    assert sorted((r.system, r.level, r.fault, r.rep) for r in all_runs if r.fault) == [
        ("kafka", "L1", "power-loss", 1), ("kafka", "L1", "power-loss", 2),
        ("pulsar", "L4-bypass", "crash-all", 1), ("pulsar", "L4-bypass", "crash-all", 2)]


def test_local_scale_covers_every_study_000_test_at_its_levels():
    doc = plan.load()
    runs = plan.expand(doc, CATALOG, "local")
    # the fault study (issue 15): its claim cells E000-FAULTCLAIM here, the whole grid E000-FAULT is the `faults`
    # target, E000-FAULTCI is the ci's
    s000 = {e for e, x in doc["experiments"].items() if x["study"] == "000" and "faults" not in x}
    # the lab's own check (Pravega's cells on study 000's workloads, issue 29) is no test of the study
    s000 -= set(doc["scales"]["lab"]["experiments"]) - set(doc["scales"]["aws"]["experiments"])
    assert s000 and "E000-LABPRAVEGA" not in s000
    assert "E000-FAULTCLAIM" in doc["scales"]["local"]["experiments"]
    assert not {"E000-FAULT", "E000-FAULTCI"} & set(doc["scales"]["local"]["experiments"])
    claim_runs = [r for r in runs if r.fault]
    assert len(claim_runs) == 60 and {r.rep for r in claim_runs} == {1, 2, 3}
    # both systems at every level of theirs
    for system in ("kafka", "pulsar"):
        assert {r.level for r in claim_runs if r.system == system} == set(CATALOG.levels[system]), system
    named = set(doc["scales"]["local"]["experiments"])
    # every study-000 test, and exactly the experiments the scale names (studies 002 and 004 in part,
    # study 003's fan-out ladder: E003-BASE on both systems; E003-SHARED is Pulsar-only and left to aws)
    assert s000 <= named
    assert {e for r in runs for e in r.experiments} == named
    for exp_id in named:
        exp = doc["experiments"][exp_id]
        for system in exp.get("systems", doc["defaults"]["systems"]):
            levels = set(plan.per_system(exp["levels"], system)) & set(CATALOG.levels[system])
            assert {r.level for r in runs if exp_id in r.experiments and r.system == system} == levels, (exp_id, system)
    # study 000 loses no workload here (only sweep points that scale onto a neighbour are skipped)
    skipped = set(doc["scales"]["local"].get("skip_workloads", []))
    for exp_id in s000:
        ran = {r.base_workload for r in runs if exp_id in r.experiments}
        assert ran | skipped >= set(doc["experiments"][exp_id]["workloads"]), exp_id


def test_config_experiments_may_name_any_experiment_of_the_file():
    doc = plan.load()
    runs = plan.expand(doc, CATALOG, "local", only=["E002-LAT"])
    assert runs and {e for r in runs for e in r.experiments} == {"E002-LAT"}
    assert {r.tuning for r in runs} == {"stock"}
    with pytest.raises(plan.PlanError, match="unknown experiment 'E999-X'"):
        plan.expand(doc, CATALOG, "local", only=["E999-X"])


def test_the_configs_filters_keep_plain_runs_unless_the_grid_is_fault_runs_only():
    doc = plan.load()
    runs = plan.expand(doc, CATALOG, "local", only=["E000-MT1", "E000-FAULTCLAIM"])
    plain = [r for r in runs if r.fault is None]
    assert plain and len(plain) < len(runs)
    assert plan.select(runs) == runs
    kills = plan.select(runs, faults=["kill-leader"])
    assert {r.fault for r in kills} == {None, "kill-leader"} and [r for r in kills if r.fault is None] == plain
    assert {r.fault for r in plan.select(runs, faults=["kill-leader"], keep_plain=False)} == {"kill-leader"}
    some = plan.select(runs, systems=["kafka"], levels=["L1"], faults=["power-loss"])
    assert some and all(r.system == "kafka" and r.level == "L1" and r.fault in (None, "power-loss") for r in some)


def test_config_repetitions_replace_the_scales_and_keep_repetition_one():
    doc = plan.load()
    one = plan.expand(doc, CATALOG, "local", only=["E000-MT1"])
    three = plan.expand(doc, CATALOG, "local", only=["E000-MT1"], repetitions=3)
    assert {r.rep for r in one} == {1} and {r.rep for r in three} == {1, 2, 3}
    assert len(three) == 3 * len(one)
    # the runs already there (rep-1) keep their keys, so raising the count only adds runs
    assert {r.key for r in one} <= {r.key for r in three}
    for bad in (0, -1, True, "3"):
        with pytest.raises(plan.PlanError, match="config workloads.repetitions"):
            plan.expand(doc, CATALOG, "local", only=["E000-MT1"], repetitions=bad)


def test_level_dir_encodes_non_default_tuning_and_variants():
    r = plan.Run("kafka", "L1", "tuned", None, "w", None, 1)
    assert r.key == "kafka/L1/w/rep-1"
    r = plan.Run("kafka", "L1", "stock", "batch-1m-10ms", "w", 5000, 2)
    assert r.key == "kafka/L1+stock+batch-1m-10ms/w--rate-5000/rep-2"
    assert r.cluster_key == "kafka-L1-stock"


def test_priorities_group_clusters_and_are_seeded():
    runs = plan.expand(plan.load(), CATALOG, "local")
    p1, p2 = plan.priorities(runs, 7), plan.priorities(runs, 7)
    assert p1 == p2 and plan.priorities(runs, 8) != p1
    # every run of the first cluster outranks every run of any later cluster
    by_cluster = {}
    for r in runs:
        by_cluster.setdefault(r.cluster_key, []).append(p1[r.key])
    ranges = sorted((min(v), max(v)) for v in by_cluster.values())
    for (lo1, hi1), (lo2, hi2) in zip(ranges, ranges[1:]):
        assert hi1 < lo2


def test_a_clusters_max_rate_runs_come_after_its_other_runs():
    """A fresh cluster's first minutes measure brokers still compiling (maxrate-jit-warmup): on each cluster the
    max-rate runs rank below every other run of that cluster, and stay shuffled among themselves."""
    runs = plan.expand(plan.load(), CATALOG, "local")
    p = plan.priorities(runs, 7)
    mixed = 0
    for key in {r.cluster_key for r in runs}:
        members = [r for r in runs if r.cluster_key == key]
        maxed = [p[r.key] for r in members if plan.is_max_rate(r)]
        others = [p[r.key] for r in members if not plan.is_max_rate(r)]
        if maxed and others:
            mixed += 1
            assert max(maxed) < min(others), key
    assert mixed >= 10  # the local scale's clusters that hold both kinds
    maxed = [r for r in runs if plan.is_max_rate(r)]
    assert maxed and all(r.fault is None and not r.rate for r in maxed)
    assert not plan.is_max_rate(plan.Run("kafka", "L1", "stock", None, "1-topic-1-partition-1kb-1p-1c-max", 2000, 1))
    # the order inside each group still depends on the seed
    q = plan.priorities(runs, 8)
    assert [r.key for r in sorted(maxed, key=lambda r: -p[r.key])] != [r.key for r in sorted(maxed, key=lambda r: -q[r.key])]


def test_scale_local_rewrites_without_touching_the_file():
    src = plan.OMB_DIR / "1-topic-10000-partitions-1kb-2p-2c-200k.yaml"
    before = src.read_text()
    sc = plan.load()["scales"]["local"]
    wl, changes = scale.scale_workload(yaml.safe_load(before), sc)
    assert src.read_text() == before
    assert wl["producerRate"] == min(sc["max_rate"], round(200000 * sc["rate_factor"]))
    assert wl["partitionsPerTopic"] == sc["partition_map"][10000]
    assert wl["x-streambench"]["testDurationSeconds"] == sc["test_seconds"]
    assert any(c.startswith("partitionsPerTopic: 10000 -> ") for c in changes)


def test_scale_rate_sweep_floor_cap_and_discovery():
    sc = {"rate_factor": 0.02, "min_rate": 100, "max_rate": 5000, "discovery": {"initialRate": 2000, "stepSeconds": 3, "maxSteps": 6}}
    base = {"producerRate": 10000, "partitionsPerTopic": 16}
    assert scale.scale_workload(base, sc, 1000)[0]["producerRate"] == 100       # 20 -> floor
    assert scale.scale_workload(base, sc, 100000)[0]["producerRate"] == 2000
    assert scale.scale_workload(base, sc, 900000)[0]["producerRate"] == 5000    # cap
    wl, _ = scale.scale_workload({"producerRate": 0}, sc)
    assert wl["producerRate"] == 0 and wl["x-streambench"]["rateDiscovery"]["maxSteps"] == 6


def test_scale_backlog_and_mixed():
    sc = {"backlog_gb": 0.05}
    wl, _ = scale.scale_workload({"consumerBacklogSizeGB": 512}, sc)
    assert wl["x-streambench"]["consumerBacklogSizeBytes"] == int(0.05 * 2**30)
    mixed = yaml.safe_load((plan.OMB_DIR / "1-topic-100-partitions-1kb-2p-2c-200k-mixed.yaml").read_text())
    wl, _ = scale.scale_workload(mixed, sc)
    assert wl["x-streambench"]["catchUpStartBacklogGB"] == 0.05 and wl["consumerBacklogSizeGB"] == 0
    # with a rate and a short measured phase, the catch-up must start inside the phase (by a third of it)
    local = plan.load()["scales"]["local"]
    wl, changes = scale.scale_workload(mixed, local)
    start_bytes = wl["x-streambench"]["catchUpStartBacklogGB"] * 2**30
    written_by = start_bytes / (wl["producerRate"] * wl["messageSize"])
    assert written_by <= local["warmup_seconds"] + local["test_seconds"] / 3 + 1e-3
    assert any(c.startswith("x-streambench.catchUpStartBacklogGB") for c in changes)


def test_aws_scale_is_identity_except_sweep_point():
    wl = yaml.safe_load((plan.OMB_DIR / "1-topic-100-partitions-1kb-2p-2c-200k.yaml").read_text())
    out, changes = scale.scale_workload(wl, plan.load()["scales"]["aws"])
    assert out == wl and changes == []
    out, changes = scale.scale_workload(wl, plan.load()["scales"]["aws"], 50000)
    assert out["producerRate"] == 50000 and changes == ["producerRate: 200000 -> 50000"]


# ---- study 001: per-system levels and variants, per-workload rate sweeps, a scale's sweep points


def test_study_001_runs_the_studys_levels_and_batching_per_system():
    doc = plan.load()
    runs = [r for r in plan.expand(doc, CATALOG, "aws") if any(e.startswith("E001") for e in r.experiments)]
    batch = [r for r in runs if "E001-BATCH" in r.experiments]
    # Kafka "no flush" (L2) with 128 KB / 1 ms and 1 MB / 10 ms; Pulsar (always flushing, L1) batch / no batch
    assert {(r.level, r.variant) for r in batch if r.system == "kafka"} == {("L2", "batch-128k-1ms"), ("L2", "batch-1m-10ms")}
    assert {(r.level, r.variant) for r in batch if r.system == "pulsar"} == {("L1", "batch-128k-1ms"), ("L1", "no-batch")}
    dur = [r for r in runs if "E001-DUR" in r.experiments and r.system == "kafka"]
    assert {r.level for r in dur} == {"L1", "L2"} and {r.variant for r in dur} == {"batch-128k-1ms"}
    assert {r.tuning for r in runs} == {"stock"}
    # the sweep of each message size: 100 B up to 1.5 M e/s, 10 KB up to 40 K e/s (400 MB/s)
    for r in runs:
        if r.base_workload.endswith("-max"):  # the 1-partition maximum (rate discovery), once per system
            assert r.rate is None and r.experiments == ("E001-TAIL",), r.key
            continue
        assert r.rate is not None, r.key
        assert (r.rate <= 40_000) if "-10kb-" in r.base_workload else (r.rate >= 1000), r.key
    assert max(r.rate or 0 for r in runs if "-100b-" in r.base_workload) == 1_500_000
    assert max(r.rate for r in runs if "-10kb-" in r.base_workload) == 40_000


def test_study_001_local_scale_is_a_reduced_sweep_on_one_partition():
    doc = plan.load()
    runs = [r for r in plan.expand(doc, CATALOG, "local") if any(e.startswith("E001") for e in r.experiments)]
    assert runs and all("-1-partition-" in r.base_workload for r in runs)
    assert {r.tuning for r in runs} == {"stock"}  # shares the stock clusters of studies 002 and 004
    # every curve has two points, the variants and the NO_KEY check one
    curves: dict = {}
    for r in runs:
        curves.setdefault((r.system, r.level, r.variant, r.base_workload), set()).add(r.rate)
    assert curves[("kafka", "L2", "batch-128k-1ms", "1-topic-1-partition-100b-1p-1c-keyed-10k")] == {10000, 200000}
    assert curves[("kafka", "L2", "batch-1m-10ms", "1-topic-1-partition-100b-1p-1c-keyed-10k")] == {200000}
    assert {r.system for r in runs if r.base_workload.endswith("-max")} == {r.system for r in runs}
    # the budget: at most 20 runs (about 45 s each as measured, within the ~15 min study 001 may take here)
    assert len(runs) <= 20
    # every run's driver file exists (generated by workloads.drivers)
    for r in runs:
        name = f"{r.system}-{r.level}-{r.tuning}" + (f"-{r.variant}" if r.variant else "") + ".yaml"
        assert (plan.HERE / "drivers" / name).is_file(), name
    # the scaled rates: 200 and 4 000 e/s of 100 B, 800 e/s of 10 KB
    wl = yaml.safe_load((plan.OMB_DIR / "1-topic-1-partition-100b-1p-1c-keyed-10k.yaml").read_text())
    sc = doc["scales"]["local"]
    assert [scale.scale_workload(wl, sc, r)[0]["producerRate"] for r in (10000, 200000)] == [200, 4000]


def test_per_system_levels_and_variants():
    doc = {"defaults": {"tuning": "stock"}, "scales": {"s": {"description": "d", "experiments": "all"}},
           "driver_variants": {"v1": {"description": "d"}, "v2": {"description": "d"}},
           "experiments": {"E001-X": {"study": "001", "title": "t", "workloads": ["1-topic-1-partition-100b-1p-1c-keyed-10k"],
                                      "systems": ["kafka", "pulsar"], "levels": {"kafka": ["L2"], "pulsar": "L1"},
                                      "variants": {"kafka": ["v1", "v2"]}}}}
    plan.check(doc, CATALOG)
    runs = plan.expand(doc, CATALOG, "s")
    assert sorted((r.system, r.level, r.variant) for r in runs) == [
        ("kafka", "L2", "v1"), ("kafka", "L2", "v2"), ("pulsar", "L1", None)]


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["experiments"]["E001-BATCH"].__setitem__("levels", {"kafka": ["L9"]}), "experiments.E001-BATCH.levels.kafka: unknown level of kafka 'L9'"),
        (lambda d: d["experiments"]["E001-BATCH"].__setitem__("levels", {"kafak": ["L1"]}), "experiments.E001-BATCH.levels: unknown system (not in this experiment's systems) 'kafak'"),
        (lambda d: d["experiments"]["E001-BATCH"].__setitem__("levels", {"pulsar": ["L2-bypass"], "kafka": ["L2-bypass"]}), "experiments.E001-BATCH.levels.kafka: unknown level of kafka 'L2-bypass'"),
        (lambda d: d["experiments"]["E001-BATCH"].__setitem__("variants", {"kafka": ["huge"]}), "experiments.E001-BATCH.variants.kafka: unknown driver variant 'huge'"),
        (lambda d: d["experiments"]["E001-DUR"].__setitem__("rates", {"no-such-shape": [1]}), "experiments.E001-DUR.rates: unknown workload (not in this experiment's workloads) 'no-such-shape'"),
        (lambda d: d["scales"]["local"]["sweeps"].__setitem__("E001-DUR", [12345]), "scales.local.sweeps.E001-DUR: rate 12345 is not one of"),
        (lambda d: d["scales"]["local"]["sweeps"].__setitem__("E999-X", [1000]), "scales.local.sweeps.E999-X: unknown experiment 'E999-X'"),
        (lambda d: d["scales"]["local"]["sweeps"].__setitem__("E000-MT1", [1000]), "scales.local.sweeps.E000-MT1: experiments.E000-MT1 has no rates"),
    ],
)
def test_study_001_shapes_fail_with_name_and_file(tmp_path, mutate, message):
    p = doc_with(tmp_path, mutate)
    with pytest.raises(plan.PlanError) as exc:
        plan.check(plan.load(p), CATALOG, p)
    assert str(p) in str(exc.value) and message in str(exc.value)


def test_study_001_local_scale_runs_pravega_flush_and_no_flush_with_generated_drivers():
    doc = plan.load()
    cat = drivers.catalog()
    runs = [r for r in plan.expand(doc, cat, "local") if r.system == "pravega"]
    assert {r.level for r in runs} == {"L1", "L2"} and {r.variant for r in runs} == {None}
    assert {r.tuning for r in runs} == {"stock"}
    assert {e for r in runs for e in r.experiments} == {"E001-ING", "E001-DUR", "E001-BATCH", "E001-LARGE",
                                                        "E001-TAIL", "E001-KEYS"}
    assert len(runs) == 7
    for r in runs:
        assert (plan.HERE / "drivers" / f"pravega-{r.level}-stock.yaml").is_file(), r.key
