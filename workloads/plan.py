"""Expand workloads/experiments.yaml into the runs of one scale profile.

A run is (system, level, tuning[+variant], workload[--rate-R], repetition). Its result lives at
data/raw/<testbed>/<system>/<level-dir>/<workload-id>/rep-<n>.json, where <level-dir> is the level for the
default tuning and <level>+<tuning> otherwise. Everything that names something defined elsewhere (workload
files, systems, levels, tunings, variants, experiments of a scale) is checked here, so a typo fails when the
Snakemake DAG is built, with the name and the file.
"""
from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import yaml

HERE = Path(__file__).resolve().parent
EXPERIMENTS = HERE / "experiments.yaml"
SCHEMA = HERE / "experiments.schema.yaml"
OMB_DIR = HERE / "omb"


# faults a run may name (workloads/faultrun.py) -> the systems that have what they strike
FAULTS = {
    # the leader: the Kafka node leading most partitions, the Pulsar broker owning the bundle, Pravega's segment store
    "kill-leader": ("kafka", "pulsar", "pravega"),  # kill -9 the leader
    "kill-bookie": ("pulsar", "pravega"),          # kill -9 one bookie (chosen by the run's seed)
    "kill-one": ("kafka", "pulsar", "pravega"),    # kill -9 one node other than the leader (chosen by the run's seed)
    "crash-all": ("kafka", "pulsar", "pravega"),   # kill -9 every server process at once
    "power-loss": ("kafka", "pulsar", "pravega"),  # kill -9 every server, drop every unsynced write (faultfs), restart
    # the leader's host cut off from every other server host (nftables on that host), its clients still reaching it;
    # healed after downSeconds. Needs hosts of their own (an inventory): on this machine every node shares one network
    "partition-leader": ("kafka", "pulsar", "pravega"),
    "pause-leader": ("kafka", "pulsar", "pravega"),  # SIGSTOP of the leader for downSeconds, then SIGCONT (a long stall)
    # the leader's host cut off from every other host, its clients included (the clients on the majority's side);
    # only its ssh server's port stays open (the fault hook's control channel)
    "partition-minority": ("kafka", "pulsar", "pravega"),
    # the leader's host and the clients on one side, every other server on the other: each other server drops
    # packets to and from the leader's host, the client hosts and the controller (the fault cycle's own client), but
    # its ssh server's port. A leader that keeps its clients and loses its peers (Jepsen's and Vanlightly's acks=1 case)
    "partition-majority": ("kafka", "pulsar", "pravega"),
    # a token bucket (tc tbf, slow_link_kbit) on the egress of the leader's host: a slow link, not a cut one
    "slow-link-leader": ("kafka", "pulsar", "pravega"),
}
# faults that hold their targets apart instead of killing them: nothing restarts, the hold ends at downSeconds.
# The value is how the fault hook holds them (systems/faulthook.py)
HOLD_FAULTS = {"partition-leader": "partition", "pause-leader": "pause", "partition-minority": "isolate-all",
               "partition-majority": "partition",
               "slow-link-leader": "throttle"}
# faults a single machine cannot run: the nodes must have network addresses of their own (and a firewall or a
# token bucket on this machine's own interfaces would strike more than the cluster)
NEEDS_HOSTS = ("partition-leader", "partition-minority", "partition-majority", "slow-link-leader")
# the token bucket of slow-link-leader unless the experiment sets slow_link_kbit: 8 Mbit/s, below the replication
# and acknowledgement traffic of the fault workloads' 2 000 msg/s of 1 KB (16 Mbit/s leaving the leader per follower)
SLOW_LINK_KBIT = 8000


class PlanError(ValueError):
    """A problem in experiments.yaml (or what it names); the message names the file and the field."""


@dataclass(frozen=True)
class Catalog:
    """What systems/durability.yaml defines: systems, their levels, and the tuning profiles."""

    levels: dict[str, tuple[str, ...]]  # system -> levels it supports
    tunings: tuple[str, ...]

    @property
    def systems(self) -> tuple[str, ...]:
        return tuple(self.levels)


@dataclass(frozen=True)
class Run:
    system: str
    level: str
    tuning: str
    variant: str | None
    base_workload: str
    rate: int | None
    rep: int
    experiments: tuple[str, ...] = field(compare=False, default=())
    default_tuning: str = field(compare=False, default="tuned")
    fault: str | None = None  # a fault run (workloads/faultrun.py): kill-leader, kill-bookie, ...

    @property
    def workload_id(self) -> str:
        wid = self.base_workload if self.rate is None else f"{self.base_workload}--rate-{self.rate}"
        return wid if self.fault is None else f"{wid}--{self.fault}"

    @property
    def tuning_label(self) -> str:
        return self.tuning if self.variant is None else f"{self.tuning}+{self.variant}"

    @property
    def level_dir(self) -> str:
        if self.variant is None and self.tuning == self.default_tuning:
            return self.level
        return f"{self.level}+{self.tuning_label}"

    @property
    def cluster_key(self) -> str:
        """Runs with the same key share one running cluster (client variants do not need a restart). Fault runs have
        clusters of their own (started with `--faults`), shared by the fault runs of one level: one for the process
        faults, one on faultfs mounts for power-loss; each run is a cycle on its own topic (workloads/faultrun.py)."""
        base = f"{self.system}-{self.level}-{self.tuning}"
        if self.fault is None:
            return base
        return f"{base}-faults" + ("-faultfs" if self.fault == "power-loss" else "")

    @property
    def key(self) -> str:
        """<system>/<level-dir>/<workload-id>/rep-<n>: the run's place under data/raw/<testbed>/."""
        return f"{self.system}/{self.level_dir}/{self.workload_id}/rep-{self.rep}"

    def relpath(self, testbed: str) -> str:
        return f"{testbed}/{self.key}"


def _names(value) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def rates_of(exp: dict, workload: str) -> list[int]:
    """An experiment's producerRate sweep for one of its workloads: the `rates` list, or the workload's entry of
    a {workload: list} mapping (sweeps of different message sizes); [] when it has none."""
    rates = exp.get("rates") or []
    return list(rates.get(workload) or []) if isinstance(rates, dict) else list(rates)


def per_system(value, system: str) -> list:
    """An experiment's `levels` or `variants` for one system: the list itself, or the system's entry of a
    {system: list} mapping (a system the mapping leaves out gets nothing)."""
    if isinstance(value, dict):
        return _names(value.get(system) or [])
    return _names(value)


def load(path: Path = EXPERIMENTS) -> dict:
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise PlanError(f"{path}: file not found") from None
    except yaml.YAMLError as exc:
        raise PlanError(f"{path}: not valid YAML: {exc}".replace("\n", " ")) from None
    schema = yaml.safe_load(SCHEMA.read_text())
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        raise PlanError(f"{path}: {where}: {err.message}")
    return doc


def check(doc: dict, catalog: Catalog, path: Path = EXPERIMENTS, omb_dir: Path = OMB_DIR) -> None:
    """Cross-check every name the experiments use against what defines it."""
    defaults = doc["defaults"]
    variants = doc.get("driver_variants", {})
    for key in ("systems", "tuning"):
        if key in defaults:
            _check_names(path, f"defaults.{key}", _names(defaults[key]),
                         catalog.systems if key == "systems" else catalog.tunings, key)
    for exp_id, exp in doc["experiments"].items():
        where = f"experiments.{exp_id}"
        for wl in exp["workloads"]:
            if not (omb_dir / f"{wl}.yaml").is_file():
                raise PlanError(f"{path}: {where}.workloads: unknown workload '{wl}' (no {omb_dir.name}/{wl}.yaml)")
        systems = _names(exp.get("systems", defaults.get("systems", list(catalog.systems))))
        _check_fanout_layouts(path, where, exp["workloads"], systems, omb_dir)
        _check_names(path, f"{where}.systems", systems, catalog.systems, "system")
        if isinstance(exp.get("rates"), dict):
            _check_names(path, f"{where}.rates", list(exp["rates"]), exp["workloads"], "workload (not in this experiment's workloads)")
        for key in ("levels", "variants"):
            if isinstance(exp.get(key), dict):
                # a per-system mapping names only the experiment's systems
                _check_names(path, f"{where}.{key}", list(exp[key]), systems, "system (not in this experiment's systems)")
        if isinstance(exp["levels"], dict):
            for system in systems:
                _check_names(path, f"{where}.levels.{system}", per_system(exp["levels"], system),
                             catalog.levels[system], f"level of {system}")
        else:
            _check_names(path, f"{where}.levels", _names(exp["levels"]), _levels_union(catalog, systems), "level")
        _check_names(path, f"{where}.tuning", _names(exp.get("tuning", defaults.get("tuning", []))), catalog.tunings, "tuning")
        for system in (systems if isinstance(exp.get("variants"), dict) else [None]):
            field_ = f"{where}.variants" + (f".{system}" if system else "")
            _check_names(path, field_, per_system(exp.get("variants", []), system) if system else exp.get("variants", []),
                         tuple(variants), "driver variant")
    for exp_id, exp in doc["experiments"].items():
        if "faults" in exp:
            systems = _names(exp.get("systems", defaults.get("systems", list(catalog.systems))))
            _check_faults(path, f"experiments.{exp_id}", exp, systems)
    for scale_name, scale in doc["scales"].items():
        _check_scale_faults(doc, catalog, scale_name, scale, path)
        if scale["experiments"] != "all":
            _check_names(path, f"scales.{scale_name}.experiments", scale["experiments"], tuple(doc["experiments"]), "experiment")
        if "levels" in scale:
            _check_names(path, f"scales.{scale_name}.levels", scale["levels"], _levels_union(catalog, catalog.systems), "level")
        for wl in scale.get("skip_workloads", []):
            if not (omb_dir / f"{wl}.yaml").is_file():
                raise PlanError(f"{path}: scales.{scale_name}.skip_workloads: unknown workload '{wl}' (no {omb_dir.name}/{wl}.yaml)")
        for exp_id, points in (scale.get("sweeps") or {}).items():
            where = f"scales.{scale_name}.sweeps.{exp_id}"
            if exp_id not in doc["experiments"]:
                raise PlanError(f"{path}: {where}: unknown experiment '{exp_id}'")
            exp = doc["experiments"][exp_id]
            own = sorted({r for wl in exp["workloads"] for r in rates_of(exp, wl)})
            if not own:
                raise PlanError(f"{path}: {where}: experiments.{exp_id} has no rates to choose from")
            for r in points:
                if r not in own:
                    raise PlanError(f"{path}: {where}: rate {r} is not one of experiments.{exp_id}.rates ({own})")


def _check_faults(path, where, exp, systems) -> None:
    for f in exp["faults"]:
        if f not in FAULTS:
            raise PlanError(f"{path}: {where}.faults: unknown fault '{f}' (known: {', '.join(FAULTS)})")
        if not any(s in FAULTS[f] for s in systems):
            raise PlanError(f"{path}: {where}.faults: {', '.join(systems)} does not support fault '{f}' "
                            f"(only {', '.join(FAULTS[f])})")
    for i, c in enumerate(exp.get("fault_cells", [])):
        for f in c["faults"]:
            if f not in exp["faults"]:
                raise PlanError(f"{path}: {where}.fault_cells.{i}.faults: '{f}' is not in {where}.faults")
        for sy in c.get("systems", []):
            if sy not in systems:
                raise PlanError(f"{path}: {where}.fault_cells.{i}.systems: '{sy}' is not a system of {where}")
        for lv in c["levels"]:
            if lv not in _names(exp["levels"]):
                raise PlanError(f"{path}: {where}.fault_cells.{i}.levels: '{lv}' is not in {where}.levels")


def fault_timing(doc: dict, scale_name: str, exp_id: str) -> dict:
    """testSeconds, strikeAtSeconds [lo, hi], downSeconds, restartDeadlineSeconds, rate, repetitions and the clusters'
    jvmExtraOpts of a fault experiment's runs in a scale (the experiment's strike_at_seconds / down_seconds / test_seconds beat the scale's)."""
    sc = doc["scales"][scale_name].get("faults") or {}
    exp = doc["experiments"][exp_id]
    return {"testSeconds": exp.get("test_seconds", sc.get("testSeconds")),
            "strikeAtSeconds": list(exp.get("strike_at_seconds", sc.get("strikeAtSeconds", []))),
            "downSeconds": exp.get("down_seconds", sc.get("downSeconds")),
            "restartDeadlineSeconds": sc.get("restartDeadlineSeconds", 120),
            "rate": sc.get("rate"), "repetitions": sc.get("repetitions"),
            "jvmExtraOpts": list(sc.get("jvmExtraOpts", [])),
            "slowLinkKbit": int(exp.get("slow_link_kbit", SLOW_LINK_KBIT))}


def _check_scale_faults(doc, catalog, scale_name, scale, path) -> None:
    """A scale that runs fault experiments needs their timing, inside the measured phase (0, testSeconds)."""
    chosen = list(doc["experiments"]) if scale["experiments"] == "all" else scale["experiments"]
    fault_exps = [e for e in doc["experiments"] if "faults" in doc["experiments"][e]]
    where = f"scales.{scale_name}.faults"
    sc = scale.get("faults")
    if sc is None:
        if any(e in chosen for e in fault_exps):
            raise PlanError(f"{path}: {where}: missing (the scale runs fault experiments: "
                            f"{', '.join(e for e in fault_exps if e in chosen)})")
        return
    for exp_id in fault_exps:  # any fault experiment may be named on the command line, so check all
        t = fault_timing(doc, scale_name, exp_id)
        field_ = (f"experiments.{exp_id}.strike_at_seconds" if "strike_at_seconds" in doc["experiments"][exp_id]
                  else f"{where}.strikeAtSeconds")
        lo, hi = t["strikeAtSeconds"]
        if lo > hi:
            raise PlanError(f"{path}: {field_}: [{lo}, {hi}] is not a window (the first bound is above the second)")
        if lo <= 0 or hi + t["downSeconds"] >= t["testSeconds"]:
            tfield = (f"experiments.{exp_id}.test_seconds" if "test_seconds" in doc["experiments"][exp_id]
                      else f"{where}.testSeconds")
            raise PlanError(f"{path}: {field_}: the fault at {lo}-{hi} s (down {t['downSeconds']} s) is outside the "
                            f"measured phase of {tfield} = {t['testSeconds']} s (it must strike after 0 s "
                            f"and the node be back before the end)")
    for i, e in enumerate(sc.get("expect", [])):
        _check_names(path, f"{where}.expect.{i}.system", _names(e["system"]), catalog.systems, "system")
        for system in _names(e["system"]):
            _check_names(path, f"{where}.expect.{i}.level", _names(e["level"]), catalog.levels[system], "level")
        _check_names(path, f"{where}.expect.{i}.fault", _names(e["fault"]), tuple(FAULTS), "fault")


def expectation(doc: dict, scale_name: str, run: Run) -> str | None:
    """'zero' or 'some' lost acknowledged messages, if the scale expects something of this fault run."""
    for e in (doc["scales"][scale_name].get("faults") or {}).get("expect", []):  # the first that names the run
        if run.system in _names(e["system"]) and run.level in _names(e["level"]) and run.fault in _names(e["fault"]):
            return e["lost"]
    return None


def strike_plan(run: Run, seed: int, timing: dict, nodes: list[str] | None = None) -> dict:
    """The fixed, seeded draw of a fault run: when it strikes (in the timing's window, 0.1-s steps) and, given the
    candidate nodes, which one (kill-one, kill-bookie). The same run key and seed give the same draw."""
    import zlib

    run_seed = zlib.crc32(f"{seed}:{run.key}".encode())
    rng = random.Random(run_seed)
    lo, hi = timing["strikeAtSeconds"]
    out = {"seed": run_seed, "strikeAtSeconds": round(lo + rng.random() * (hi - lo), 1)}
    if nodes:
        out["target"] = sorted(nodes)[rng.randrange(len(nodes))]
    return out


def _check_fanout_layouts(path, where, workloads, systems, omb_dir) -> None:
    from workloads import fanout

    for wl in workloads:
        doc = yaml.safe_load((omb_dir / f"{wl}.yaml").read_text()) or {}
        for system in systems:
            try:
                fanout.check_layout(system, doc, f"{path}: {where}.systems: {system} with {omb_dir.name}/{wl}.yaml")
            except fanout.FanOutError as exc:
                raise PlanError(str(exc)) from None


def _levels_union(catalog: Catalog, systems) -> tuple[str, ...]:
    out: list[str] = []
    for s in systems:
        out += [lv for lv in catalog.levels.get(s, ()) if lv not in out]
    return tuple(out)


def _check_names(path, where, names, allowed, kind) -> None:
    for n in names:
        if n not in allowed:
            raise PlanError(f"{path}: {where}: unknown {kind} '{n}' (known: {', '.join(allowed)})")


def select(runs: list[Run], systems=None, levels=None, faults=None, keep_plain: bool = True) -> list[Run]:
    """The config's filters (workloads.systems, .levels, .faults; null or empty: no filter), as every planner applies
    them (the DAG's runs, the faults target's grid, the aws fleets' estimate): a fault filter keeps the runs without
    a fault unless keep_plain is False (the faults target's grid holds only fault runs)."""
    return [r for r in runs if (not systems or r.system in systems) and (not levels or r.level in levels)
            and (not faults or r.fault in faults or (keep_plain and r.fault is None))]


def expand(doc: dict, catalog: Catalog, scale_name: str, path: Path = EXPERIMENTS,
           only: list[str] | None = None, repetitions: int | None = None) -> list[Run]:
    """All runs of a scale profile (optionally only some of its experiments, optionally another number of
    repetitions than the scale's), deduplicated, stable order."""
    if repetitions is not None and (isinstance(repetitions, bool) or not isinstance(repetitions, int) or repetitions < 1):
        raise PlanError(f"config workloads.repetitions: {repetitions!r} is not a whole number >= 1")
    if scale_name not in doc["scales"]:
        raise PlanError(f"{path}: scales: unknown scale '{scale_name}' (known: {', '.join(doc['scales'])})")
    scale = doc["scales"][scale_name]
    defaults = doc["defaults"]
    default_tuning = _names(defaults.get("tuning", catalog.tunings[:1]))[0]
    chosen = list(doc["experiments"]) if scale["experiments"] == "all" else scale["experiments"]
    if only is not None:
        # any experiment of the file, scaled by this scale's rules: a scale's own list is its default, not a limit
        for exp_id in only:
            if exp_id not in doc["experiments"]:
                raise PlanError(f"config workloads.experiments: unknown experiment '{exp_id}' in {path} "
                                f"(known: {', '.join(doc['experiments'])})")
        chosen = [e for e in doc["experiments"] if e in only]
    runs: dict[tuple, Run] = {}
    for exp_id in chosen:
        exp = doc["experiments"][exp_id]
        systems = _names(exp.get("systems", defaults.get("systems", list(catalog.systems))))
        tunings = _names(exp.get("tuning", defaults.get("tuning", default_tuning)))
        reps = repetitions or scale.get("repetitions", exp.get("repetitions", defaults.get("repetitions", 1)))
        faults = exp.get("faults") or [None]
        if exp.get("faults"):  # fault runs: the experiment's or the scale's fault repetitions, not its benchmark ones
            reps = repetitions or exp.get("fault_repetitions") or (scale.get("faults") or {}).get("repetitions") or \
                exp.get("repetitions", defaults.get("repetitions", 1))
        keep = (scale.get("sweeps") or {}).get(exp_id)  # this scale's points of the sweep (None: all of them)
        for system in systems:
            variants = per_system(exp.get("variants") or [], system) or [None]
            levels = [lv for lv in per_system(exp["levels"], system) if lv in scale.get("levels", [lv])]
            for level in levels:
                if level not in catalog.levels[system]:
                    continue  # e.g. a Pulsar-only journal-bypass level in an experiment run on both systems
                for fault in faults:
                    if fault is not None and system not in FAULTS[fault]:
                        continue  # e.g. kill-bookie in an experiment run on both systems
                    if fault is not None and "fault_cells" in exp and not any(
                            fault in c["faults"] and level in c["levels"] and system in c.get("systems", [system])
                            for c in exp["fault_cells"]):
                        continue
                    for tuning in tunings:
                        for variant in variants:
                            for wl in exp["workloads"]:
                                if wl in scale.get("skip_workloads", []):
                                    continue
                                rates = [r for r in rates_of(exp, wl) if keep is None or r in keep]
                                if rates_of(exp, wl) and not rates:
                                    continue  # none of this workload's sweep points is one this scale runs
                                for rate in rates or [None]:
                                    for rep in range(1, reps + 1):
                                        run = Run(system, level, tuning, variant, wl, rate, rep, (exp_id,),
                                                  default_tuning, fault)
                                        key = run.key
                                        if key in runs:
                                            old = runs[key]
                                            run = Run(system, level, tuning, variant, wl, rate, rep,
                                                      tuple(sorted(set(old.experiments) | {exp_id})), default_tuning,
                                                      fault)
                                        runs[key] = run
    out = sorted(runs.values(), key=lambda r: r.key)
    _check_fanout(out, doc, scale_name, path)
    return out


def _check_fanout(runs: list[Run], doc: dict, scale_name: str, path: Path) -> None:
    """Fan-out runs (study 003): a layout the system lacks, or more consumers than the open-file limit allows,
    fail here, when the DAG is built, before any cluster starts."""
    from workloads import fanout, scale as _scale  # scale imports this module

    sc = doc["scales"][scale_name]
    seen: set[tuple[str, str]] = set()
    for r in runs:
        if (r.system, r.base_workload) in seen:
            continue
        seen.add((r.system, r.base_workload))
        src = OMB_DIR / f"{r.base_workload}.yaml"
        wl = yaml.safe_load(src.read_text())
        if not fanout.is_fanout(wl):
            continue
        scaled, _ = _scale.scale_workload(wl, sc, r.rate)
        try:
            fanout.check_run(r.system, scaled, sc, f"{src} (scaled for '{scale_name}', {r.system})", f"{path}: scales.{scale_name}")
        except fanout.FanOutError as exc:
            raise PlanError(str(exc)) from None


@functools.lru_cache(maxsize=None)
def workload_rate(base_workload: str) -> float:
    """The OMB workload file's producerRate (0: a maximum-rate search)."""
    doc = yaml.safe_load((OMB_DIR / f"{base_workload}.yaml").read_text()) or {}
    return float(doc.get("producerRate") or 0)


def is_max_rate(r: Run) -> bool:
    """A run that searches its maximum rate (OMB's producerRate 0, no sweep rate, no fault)."""
    return r.fault is None and not r.rate and workload_rate(r.base_workload) == 0


def priorities(runs: list[Run], seed: int) -> dict[str, int]:
    """Snakemake priorities that keep the runs of one cluster together and shuffle them inside it.

    Clusters run one after another (in a seeded random order too); inside a cluster the run order is a
    seeded permutation, so no workload always runs first on a fresh cluster, except that the max-rate runs come
    after the cluster's other runs (in their own seeded order): a fresh cluster's brokers spend their first minutes
    compiling their hot paths, and a maximum found then is up to 4x below the same cell's on the warm cluster
    (docs/measurements.yaml maxrate-jit-warmup); the other runs are their warm-up.
    """
    rng = random.Random(seed)
    clusters = sorted({r.cluster_key for r in runs})
    rng.shuffle(clusters)
    out: dict[str, int] = {}
    for rank, key in enumerate(clusters):
        members = [r for r in runs if r.cluster_key == key]
        rng.shuffle(members)
        members.sort(key=is_max_rate)  # stable: the shuffled order within either group
        base = (len(clusters) - rank) * 10_000
        for i, r in enumerate(members):
            out[r.key] = base + (len(members) - i)
    return out
