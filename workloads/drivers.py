"""OMB driver files generated from systems/durability.yaml (never written by hand).

`python -m workloads.drivers --write` regenerates workloads/drivers/<system>-<level>-<tuning>[-<variant>].yaml
for every (system, level, tuning) durability.yaml defines and every variant experiments.yaml uses;
`--check` fails when a committed file differs from what would be generated (a test runs it). The files are
plain OMB driver YAML, so they also run in OMB itself; endpoints are loopback defaults that the runner
replaces with the ones in the run's cluster.json.
"""
from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import yaml

from systems import durability as dur
from workloads import plan

DRIVERS_DIR = plan.HERE / "drivers"
DRIVER_CLASS = {
    "kafka": "io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver",
    "pulsar": "io.openmessaging.benchmark.driver.pulsar.PulsarBenchmarkDriver",
    "pravega": "io.openmessaging.benchmark.driver.pravega.PravegaBenchmarkDriver",
}


def catalog(d: dur.Durability | None = None) -> plan.Catalog:
    d = d or dur.load()
    # only the systems with an OMB driver here (Pravega's levels exist in durability.yaml before its driver does)
    return plan.Catalog(levels={s: tuple(d.levels_for(s)) for s in dur.SYSTEMS if s in DRIVER_CLASS},
                        tunings=tuple(d.tuning))


def _props_block(props: dict) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


def _str(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def driver_doc(system: str, level: str, tuning: str, variant: str | None = None, experiments: dict | None = None,
               d: dur.Durability | None = None) -> dict:
    cs = dur.client_settings(system, level, tuning, d)
    patch = {}
    if variant is not None:
        variants = (experiments or plan.load()).get("driver_variants", {})
        if variant not in variants:
            raise plan.PlanError(f"{plan.EXPERIMENTS}: driver_variants: unknown driver variant '{variant}'")
        patch = variants[variant].get(system) or {}
    label = f"{system}-{level}-{tuning}" + (f"-{variant}" if variant else "")
    if system == "kafka":
        producer = {**cs["producerConfig"], **{k: _str(v) for k, v in patch.get("producerConfig", {}).items()}}
        consumer = {**cs["consumerConfig"], **{k: _str(v) for k, v in patch.get("consumerConfig", {}).items()}}
        topic = {**cs["topicConfig"], **{k: _str(v) for k, v in patch.get("topicConfig", {}).items()}}
        return {
            "name": label,
            "driverClass": DRIVER_CLASS[system],
            "replicationFactor": cs["replicationFactor"],
            "topicConfig": _props_block(topic),
            "commonConfig": _props_block({"bootstrap.servers": "127.0.0.1:9092"}),
            "producerConfig": _props_block(producer),
            "consumerConfig": _props_block(consumer),
        }
    if system == "pravega":
        # OMB's driver-pravega fields only (the runner rejects any other); the level's BookKeeper quorums are the
        # segment store's, not the client's, so they go into the file's header comment (render), not its fields
        return {
            "name": label,
            "driverClass": DRIVER_CLASS[system],
            "client": {"controllerURI": "tcp://127.0.0.1:9090", "scopeName": "streambench"},
            "writer": {"enableConnectionPooling": False, **cs.get("writer", {}), **patch.get("writer", {})},
            "includeTimestampInEvent": True,
            "enableTransaction": False,
            "enableStreamAutoScaling": False,  # one segment per partition, as the other systems' partitions
            "createScope": True,
            "deleteStreams": True,
            **{k: v for k, v in patch.items() if k != "writer"},
        }
    client = {
        "serviceUrl": "pulsar://127.0.0.1:6650",
        "httpUrl": "http://127.0.0.1:8080",
        "ioThreads": 8,
        "connectionsPerBroker": 8,
        "namespacePrefix": "benchmark/ns",  # no clusterName: the runner asks the broker which cluster it serves
        "topicType": "persistent",
        "persistence": copy.deepcopy(cs["client"]["persistence"]),
    }
    client.update(patch.get("client", {}))
    return {
        "name": label,
        "driverClass": DRIVER_CLASS[system],
        "client": client,
        "producer": {**cs["producer"], **patch.get("producer", {})},
        "consumer": {**cs["consumer"], **patch.get("consumer", {})},
    }


class _Literal(str):
    pass


def _literal_repr(dumper, value):
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")


yaml.SafeDumper.add_representer(_Literal, _literal_repr)


def render(system: str, level: str, tuning: str, variant: str | None = None, experiments: dict | None = None,
           d: dur.Durability | None = None) -> str:
    doc = driver_doc(system, level, tuning, variant, experiments, d)
    doc = {k: (_Literal(v) if isinstance(v, str) and "\n" in v else v) for k, v in doc.items()}
    head = (f"# OMB driver: {system} at durability level {level}, tuning '{tuning}'"
            + (f", client variant '{variant}'" if variant else "") + ".\n"
            "# Generated by `python -m workloads.drivers --write` from systems/durability.yaml"
            + (" and workloads/experiments.yaml" if variant else "") + "; do not edit.\n")
    if system == "pravega":
        b = dur.client_settings(system, level, tuning, d)["bookkeeper"]
        head += (f"# The segment store writes with BookKeeper ensemble {b['ensembleSize']} / write quorum {b['writeQuorumSize']}"
                 f" / ack quorum {b['ackQuorumSize']} (set by the launcher; a Pravega client cannot choose them).\n")
    return head + yaml.safe_dump(doc, sort_keys=False)


def wanted(experiments: dict | None = None, d: dur.Durability | None = None) -> dict[str, str]:
    """file name -> content for every driver the project defines."""
    d = d or dur.load()
    experiments = experiments or plan.load()
    out: dict[str, str] = {}
    for system in (s for s in dur.SYSTEMS if s in DRIVER_CLASS):
        for level in d.levels_for(system):
            for tuning in d.tuning:
                out[f"{system}-{level}-{tuning}.yaml"] = render(system, level, tuning, None, experiments, d)
    cat = catalog(d)
    for scale_name in experiments["scales"]:
        for r in plan.expand(experiments, cat, scale_name):
            if r.variant:
                out[f"{r.system}-{r.level}-{r.tuning}-{r.variant}.yaml"] = render(r.system, r.level, r.tuning, r.variant, experiments, d)
    return dict(sorted(out.items()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workloads.drivers", description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true")
    g.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    try:
        files = wanted()
    except (dur.DurabilityError, plan.PlanError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    existing = {p.name for p in DRIVERS_DIR.glob("*.yaml")}
    if a.write:
        DRIVERS_DIR.mkdir(exist_ok=True)
        for name in existing - set(files):
            (DRIVERS_DIR / name).unlink()
        for name, text in files.items():
            (DRIVERS_DIR / name).write_text(text)
        print(f"wrote {len(files)} driver files to {DRIVERS_DIR}")
        return 0
    stale = sorted(n for n, t in files.items() if not (DRIVERS_DIR / n).is_file() or (DRIVERS_DIR / n).read_text() != t)
    extra = sorted(existing - set(files))
    if stale or extra:
        print(f"error: {DRIVERS_DIR}: out of date with systems/durability.yaml (stale: {', '.join(stale) or '-'}; "
              f"not generated: {', '.join(extra) or '-'}); run `python -m workloads.drivers --write`", file=sys.stderr)
        return 1
    print(f"{len(files)} driver files up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
