"""Loader and validator of systems/durability.yaml, and the settings each (system, level, tuning) implies.

Public API (documented in systems/README.md):
    load(path=None) -> Durability
    Durability.levels_for(system) -> list of level names
    client_settings(system, level, tuning="stock", durability=None) -> dict   (what an OMB driver file needs)
    server_settings(system, level, tuning="stock", durability=None) -> dict   (what the launcher configures)

Every problem raises DurabilityError with a one-line message "<file>: <field path>: <what is wrong>".
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DEFAULT_PATH = Path(__file__).resolve().parent / "durability.yaml"
SYSTEMS = ("kafka", "pulsar", "pravega")
TUNINGS_REQUIRED = ("stock", "tuned")
REPLICATION_MODES = ("sync", "async")
LOCAL_MODES = ("sync", "async", "async-bypass")
KAFKA_NODES = 3
PULSAR_BOOKIES = 3
PRAVEGA_BOOKIES = 3

_LEVEL_KEYS = {"replication", "local", "description", "kafka", "pulsar", "pravega"}
_KAFKA_LEVEL = {
    "replicationFactor": None,
    "broker": {"min.insync.replicas", "log.flush.interval.messages", "log.flush.interval.ms"},
    "topic": {"min.insync.replicas", "flush.messages", "flush.ms"},
    "producer": {"acks"},
}
_PULSAR_LEVEL = {
    "persistence": {"ensemble", "writeQuorum", "ackQuorum"},
    "bookie": {"journalWriteData", "journalSyncData", "journalMaxGroupWaitMSec",
               "journalPageCacheFlushIntervalMSec"},
}
# Pravega: the segment store's BookKeeper log (bookkeeper.ensemble.size / write.quorum.size / ack.quorum.size) and
# the bookies' journal, the same keys as Pulsar's bookies
_PRAVEGA_LEVEL = {
    "bookkeeper": {"ensemble", "writeQuorum", "ackQuorum"},
    "bookie": _PULSAR_LEVEL["bookie"],
}
_PRAVEGA_TUNING_SECTIONS = ("segmentstore", "writer")
_PULSAR_TUNING = {
    "broker": {"managedLedgerNewEntriesCheckDelayInMillis", "bookkeeperNumberOfChannelsPerBookie",
               "managedLedgerMaxEntriesPerLedger", "managedLedgerMinLedgerRolloverTimeMinutes",
               "maxUnackedMessagesPerConsumer", "dispatcherMaxReadBatchSize"},
    "producer": {"batchingEnabled", "batchingMaxPublishDelayMs", "batchingMaxBytes", "batchingMaxMessages",
                 "batchingPartitionSwitchFrequencyByPublishDelay", "blockIfQueueFull", "pendingQueueSize",
                 "maxPendingMessagesAcrossPartitions"},
    "consumer": {"receiverQueueSize", "maxTotalReceiverQueueSizeAcrossPartitions"},
}
_KAFKA_TUNING_SECTIONS = ("broker", "producer", "consumer")
_KAFKA_KEY_RE = re.compile(r"^[a-z][a-z0-9]*(\.[a-z0-9]+)*$")
# keys that belong to the level, never to a tuning profile
_KAFKA_LEVEL_OWNED = {"acks", "min.insync.replicas", "flush.messages", "flush.ms",
                      "log.flush.interval.messages", "log.flush.interval.ms", "default.replication.factor"}


class DurabilityError(ValueError):
    """A durability file or a lookup in it is invalid; the message names the file and the field."""


@dataclass(frozen=True)
class Durability:
    path: Path
    levels: dict[str, dict[str, Any]]
    tuning: dict[str, dict[str, Any]]

    def levels_for(self, system: str) -> list[str]:
        _check_system(system, self.path)
        return [name for name, lv in self.levels.items() if lv.get(system) is not None]

    def level(self, system: str, level: str) -> dict[str, Any]:
        _check_system(system, self.path)
        if level not in self.levels:
            raise DurabilityError(f"{self.path}: levels: unknown level {level!r} "
                                  f"(defined: {', '.join(self.levels)})")
        spec = self.levels[level].get(system)
        if spec is None:
            raise DurabilityError(f"{self.path}: levels.{level}.{system}: level {level} is not defined for "
                                  f"{system} (it has no such mode)")
        return spec

    def profile(self, system: str, tuning: str) -> dict[str, Any]:
        _check_system(system, self.path)
        if tuning not in self.tuning:
            raise DurabilityError(f"{self.path}: tuning: unknown tuning profile {tuning!r} "
                                  f"(defined: {', '.join(self.tuning)})")
        return self.tuning[tuning][system]


def _check_system(system: str, path: Path) -> None:
    if system not in SYSTEMS:
        raise DurabilityError(f"{path}: unknown system {system!r} (known: {', '.join(SYSTEMS)})")


class _V:
    """Collects the file name for error messages."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, field: str, msg: str) -> None:
        raise DurabilityError(f"{self.path}: {field}: {msg}")

    def mapping(self, value: Any, field: str, allowed: set[str] | None = None,
                required: set[str] | None = None) -> dict:
        if not isinstance(value, dict):
            self.fail(field or "(top level)", f"must be a mapping, got {type(value).__name__}")
        for k in value:
            if not isinstance(k, str):
                self.fail(field, f"key {k!r} is not a string")
            if allowed is not None and k not in allowed:
                self.fail(f"{field}.{k}" if field else k, f"unknown key (allowed: {', '.join(sorted(allowed))})")
        for k in sorted(required or ()):
            if k not in value:
                self.fail(f"{field}.{k}" if field else k, "missing")
        return value

    def integer(self, value: Any, field: str, minimum: int = 0) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(field, f"must be an integer, got {value!r}")
        if value < minimum:
            self.fail(field, f"must be >= {minimum}, got {value}")
        return value

    def boolean(self, value: Any, field: str) -> bool:
        if not isinstance(value, bool):
            self.fail(field, f"must be true or false, got {value!r}")
        return value

    def scalar(self, value: Any, field: str) -> None:
        if not isinstance(value, (str, int, float, bool)):
            self.fail(field, f"must be a string, number or boolean, got {type(value).__name__}")


def _validate_kafka_level(v: _V, name: str, lv: dict, spec: Any) -> None:
    f = f"levels.{name}.kafka"
    v.mapping(spec, f, set(_KAFKA_LEVEL), set(_KAFKA_LEVEL))
    for section, keys in _KAFKA_LEVEL.items():
        if keys is None:
            continue
        v.mapping(spec[section], f"{f}.{section}", keys, keys)
        for k, val in spec[section].items():
            v.scalar(val, f"{f}.{section}.{k}")
    rf = v.integer(spec["replicationFactor"], f"{f}.replicationFactor", 1)
    if rf > KAFKA_NODES:
        v.fail(f"{f}.replicationFactor", f"{rf} exceeds the {KAFKA_NODES} Kafka nodes")
    for section in ("broker", "topic"):
        isr = v.integer(spec[section]["min.insync.replicas"], f"{f}.{section}.min.insync.replicas", 1)
        if isr > rf:
            v.fail(f"{f}.{section}.min.insync.replicas", f"{isr} exceeds replicationFactor {rf}")
    acks = str(spec["producer"]["acks"])
    if acks not in ("all", "-1", "1", "0"):
        v.fail(f"{f}.producer.acks", f"must be all, -1, 1 or 0, got {acks!r}")
    if lv["replication"] == "sync":
        if acks not in ("all", "-1"):
            v.fail(f"{f}.producer.acks", f"acks={acks} contradicts replication: sync (needs acks=all)")
        if spec["topic"]["min.insync.replicas"] < 2:
            v.fail(f"{f}.topic.min.insync.replicas", "sync replication needs min.insync.replicas >= 2")
    elif acks in ("all", "-1"):
        v.fail(f"{f}.producer.acks", f"acks={acks} contradicts replication: async (needs acks=1)")
    elif acks == "0":
        v.fail(f"{f}.producer.acks", "acks=0 is not a durability level of study 000 (needs acks=1)")
    fm = v.integer(spec["topic"]["flush.messages"], f"{f}.topic.flush.messages", 1)
    fms = v.integer(spec["topic"]["flush.ms"], f"{f}.topic.flush.ms", 0)
    bm = v.integer(spec["broker"]["log.flush.interval.messages"], f"{f}.broker.log.flush.interval.messages", 1)
    bms = v.integer(spec["broker"]["log.flush.interval.ms"], f"{f}.broker.log.flush.interval.ms", 0)
    if lv["local"] == "sync":
        if fm != 1:
            v.fail(f"{f}.topic.flush.messages", f"flush.messages={fm} contradicts local: sync (needs 1)")
    elif lv["local"] == "async":
        if fm == 1:
            v.fail(f"{f}.topic.flush.messages",
                   "flush.messages=1 (fsync per message) contradicts local: async (needs > 1)")
        if fms == 0:
            v.fail(f"{f}.topic.flush.ms", "flush.ms=0 contradicts local: async (needs > 0)")
    if (bm, bms) != (fm, fms):
        v.fail(f"{f}.broker.log.flush.interval.messages",
               f"broker flush defaults ({bm}/{bms}) differ from the topic's flush.messages/flush.ms ({fm}/{fms})")


def _validate_bk_level(v: _V, name: str, lv: dict, spec: Any, system: str, quorum: str, bookies: int) -> None:
    """Pulsar's and Pravega's levels: E/W/A of the ledgers (section `quorum`) and the bookies' journal."""
    f = f"levels.{name}.{system}"
    keys = {"persistence": _PULSAR_LEVEL["persistence"], "bookie": _PULSAR_LEVEL["bookie"]} if system == "pulsar" \
        else _PRAVEGA_LEVEL
    v.mapping(spec, f, set(keys), set(keys))
    p = v.mapping(spec[quorum], f"{f}.{quorum}", keys[quorum], keys[quorum])
    e = v.integer(p["ensemble"], f"{f}.{quorum}.ensemble", 1)
    w = v.integer(p["writeQuorum"], f"{f}.{quorum}.writeQuorum", 1)
    a = v.integer(p["ackQuorum"], f"{f}.{quorum}.ackQuorum", 1)
    if a > w:
        v.fail(f"{f}.{quorum}.ackQuorum", f"ackQuorum {a} exceeds writeQuorum {w}")
    if w > e:
        v.fail(f"{f}.{quorum}.writeQuorum", f"writeQuorum {w} exceeds ensemble {e}")
    if e > bookies:
        v.fail(f"{f}.{quorum}.ensemble", f"ensemble {e} exceeds the {bookies} bookies")
    if lv["replication"] == "sync" and a < w // 2 + 1:
        v.fail(f"{f}.{quorum}.ackQuorum",
               f"ackQuorum {a} contradicts replication: sync (needs >= writeQuorum/2+1 = {w // 2 + 1})")
    if lv["replication"] == "async" and a != 1:
        v.fail(f"{f}.{quorum}.ackQuorum", f"ackQuorum {a} contradicts replication: async (needs 1)")
    b = v.mapping(spec["bookie"], f"{f}.bookie", keys["bookie"], keys["bookie"])
    wd = v.boolean(b["journalWriteData"], f"{f}.bookie.journalWriteData")
    sd = v.boolean(b["journalSyncData"], f"{f}.bookie.journalSyncData")
    v.integer(b["journalMaxGroupWaitMSec"], f"{f}.bookie.journalMaxGroupWaitMSec", 0)
    v.integer(b["journalPageCacheFlushIntervalMSec"], f"{f}.bookie.journalPageCacheFlushIntervalMSec", 0)
    if not wd and sd:
        v.fail(f"{f}.bookie.journalSyncData",
               "journalSyncData=true contradicts journalWriteData=false (no journal to sync)")
    want = {"sync": (True, True), "async": (True, False), "async-bypass": (False, False)}[lv["local"]]
    if (wd, sd) != want:
        v.fail(f"{f}.bookie.journalSyncData" if wd == want[0] else f"{f}.bookie.journalWriteData",
               f"journalWriteData={str(wd).lower()}, journalSyncData={str(sd).lower()} contradicts "
               f"local: {lv['local']} (needs {str(want[0]).lower()}, {str(want[1]).lower()})")


def _validate_pulsar_level(v: _V, name: str, lv: dict, spec: Any) -> None:
    _validate_bk_level(v, name, lv, spec, "pulsar", "persistence", PULSAR_BOOKIES)


def _validate_pravega_level(v: _V, name: str, lv: dict, spec: Any) -> None:
    _validate_bk_level(v, name, lv, spec, "pravega", "bookkeeper", PRAVEGA_BOOKIES)


def _validate_tuning(v: _V, name: str, prof: Any) -> None:
    f = f"tuning.{name}"
    v.mapping(prof, f, {"description", "kafka", "pulsar", "pravega"}, {"kafka", "pulsar", "pravega"})
    k = v.mapping(prof["kafka"], f"{f}.kafka", set(_KAFKA_TUNING_SECTIONS), set(_KAFKA_TUNING_SECTIONS))
    for section in _KAFKA_TUNING_SECTIONS:
        for key, val in v.mapping(k[section], f"{f}.kafka.{section}").items():
            if not _KAFKA_KEY_RE.match(key):
                v.fail(f"{f}.kafka.{section}.{key}", "not a Kafka configuration key")
            if key in _KAFKA_LEVEL_OWNED:
                v.fail(f"{f}.kafka.{section}.{key}", "belongs to the durability level, not to a tuning profile")
            v.scalar(val, f"{f}.kafka.{section}.{key}")
    p = v.mapping(prof["pulsar"], f"{f}.pulsar", set(_PULSAR_TUNING), set(_PULSAR_TUNING))
    for section, keys in _PULSAR_TUNING.items():
        for key, val in v.mapping(p[section], f"{f}.pulsar.{section}", keys).items():
            v.scalar(val, f"{f}.pulsar.{section}.{key}")
    q = v.mapping(prof["pravega"], f"{f}.pravega", set(_PRAVEGA_TUNING_SECTIONS), set(_PRAVEGA_TUNING_SECTIONS))
    for section in _PRAVEGA_TUNING_SECTIONS:
        for key, val in v.mapping(q[section], f"{f}.pravega.{section}").items():
            if key.startswith("bookkeeper.") or key.startswith("bookie."):
                v.fail(f"{f}.pravega.{section}.{key}", "belongs to the durability level, not to a tuning profile")
            v.scalar(val, f"{f}.pravega.{section}.{key}")


def validate(doc: Any, path: Path) -> Durability:
    v = _V(path)
    v.mapping(doc, "", {"schemaVersion", "levels", "tuning"}, {"schemaVersion", "levels", "tuning"})
    if doc["schemaVersion"] != 1:
        v.fail("schemaVersion", f"unsupported version {doc['schemaVersion']!r} (this loader reads 1)")
    levels = v.mapping(doc["levels"], "levels")
    if not levels:
        v.fail("levels", "no levels defined")
    for name, lv in levels.items():
        if not re.match(r"^L[1-4](-[a-z]+)?$", name):
            v.fail(f"levels.{name}", "level names are L1..L4 with an optional -variant suffix")
        v.mapping(lv, f"levels.{name}", _LEVEL_KEYS, {"replication", "local", "kafka", "pulsar"})
        if lv["replication"] not in REPLICATION_MODES:
            v.fail(f"levels.{name}.replication", f"must be one of {', '.join(REPLICATION_MODES)}")
        if lv["local"] not in LOCAL_MODES:
            v.fail(f"levels.{name}.local", f"must be one of {', '.join(LOCAL_MODES)}")
        base = {("sync", "sync"): "L1", ("sync", "async"): "L2", ("async", "sync"): "L3",
                ("async", "async"): "L4"}[(lv["replication"], "sync" if lv["local"] == "sync" else "async")]
        if name.split("-")[0] != base:
            v.fail(f"levels.{name}", f"replication {lv['replication']} + local {lv['local']} is level {base} "
                                     f"in study 000, not {name.split('-')[0]}")
        if lv["local"] == "async-bypass":
            if lv["kafka"] is not None:
                v.fail(f"levels.{name}.kafka", "Kafka has no journal to bypass: must be null")
        else:
            _validate_kafka_level(v, name, lv, lv["kafka"])
        if lv["pulsar"] is None:
            v.fail(f"levels.{name}.pulsar", "every level must define Pulsar's settings")
        _validate_pulsar_level(v, name, lv, lv["pulsar"])
        if "pravega" not in lv:
            v.fail(f"levels.{name}.pravega", "missing (null if Pravega has no such level)")
        if lv["pravega"] is not None:
            if lv["local"] == "async-bypass":
                v.fail(f"levels.{name}.pravega", "Pravega's segment store needs the bookies' journal (its durable "
                                                 "log is BookKeeper): must be null")
            _validate_pravega_level(v, name, lv, lv["pravega"])
    tuning = v.mapping(doc["tuning"], "tuning")
    for req in TUNINGS_REQUIRED:
        if req not in tuning:
            v.fail(f"tuning.{req}", "missing (both stock and tuned profiles are required)")
    for name, prof in tuning.items():
        _validate_tuning(v, name, prof)
    return Durability(path=path, levels=levels, tuning=tuning)


def load(path: str | Path | None = None) -> Durability:
    """Read and validate a durability file (default: systems/durability.yaml)."""
    p = Path(path) if path is not None else DEFAULT_PATH
    try:
        text = p.read_text()
    except OSError as e:
        raise DurabilityError(f"{p}: cannot read: {e.strerror}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise DurabilityError(f"{p}: not valid YAML: {str(e).splitlines()[0]}") from None
    return validate(doc, p)


def _props(d: dict) -> dict[str, str]:
    """Kafka properties as strings (booleans lower-case)."""
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in d.items()}


def client_settings(system: str, level: str, tuning: str = "stock",
                    durability: Durability | None = None) -> dict[str, Any]:
    """Everything an OMB driver file for (system, level, tuning) needs, in OMB's field names.

    kafka:  replicationFactor, topicConfig, producerConfig, consumerConfig (string-valued properties)
    pulsar: client.persistence {ensembleSize, writeQuorum, ackQuorum, deduplicationEnabled},
            producer {...}, consumer {...}
    pravega: bookkeeper {ensembleSize, writeQuorumSize, ackQuorumSize} (the segment store's, for provenance: a
            Pravega client cannot choose them), writer {...}
    Both also carry system, level, tuning, replication, local (for provenance).
    """
    d = durability or load()
    lv = d.level(system, level)
    prof = d.profile(system, tuning)
    out: dict[str, Any] = {"system": system, "level": level, "tuning": tuning,
                           "replication": d.levels[level]["replication"], "local": d.levels[level]["local"]}
    if system == "kafka":
        out.update({
            "replicationFactor": lv["replicationFactor"],
            "topicConfig": _props(lv["topic"]),
            "producerConfig": _props({**prof["producer"], **lv["producer"]}),
            "consumerConfig": _props(prof["consumer"]),
        })
    elif system == "pravega":
        b = lv["bookkeeper"]
        out.update({
            "bookkeeper": {"ensembleSize": b["ensemble"], "writeQuorumSize": b["writeQuorum"],
                           "ackQuorumSize": b["ackQuorum"]},
            "writer": dict(prof["writer"]),
        })
    else:
        p = lv["persistence"]
        out.update({
            "client": {"persistence": {"ensembleSize": p["ensemble"], "writeQuorum": p["writeQuorum"],
                                       "ackQuorum": p["ackQuorum"], "deduplicationEnabled": False}},
            "producer": dict(prof["producer"]),
            "consumer": dict(prof["consumer"]),
        })
    return out


def server_settings(system: str, level: str, tuning: str = "stock",
                    durability: Durability | None = None) -> dict[str, Any]:
    """Settings the launcher writes into the servers' configuration files for (system, level, tuning).

    kafka:  {"broker": {...}, "topic": {...}, "replicationFactor": n}
    pulsar: {"broker": {...}, "bookie": {...}, "persistence": {ensemble, writeQuorum, ackQuorum}}
    pravega: {"segmentstore": {bookkeeper.*.size ...}, "bookie": {...}, "bookkeeper": {ensemble, writeQuorum, ackQuorum}}
    """
    d = durability or load()
    lv = d.level(system, level)
    prof = d.profile(system, tuning)
    if system == "kafka":
        return {"broker": {**prof["broker"], **lv["broker"],
                           "default.replication.factor": lv["replicationFactor"]},
                "topic": dict(lv["topic"]), "replicationFactor": lv["replicationFactor"]}
    if system == "pravega":
        b = lv["bookkeeper"]
        return {"segmentstore": {**prof["segmentstore"], "bookkeeper.ensemble.size": b["ensemble"],
                                 "bookkeeper.write.quorum.size": b["writeQuorum"],
                                 "bookkeeper.ack.quorum.size": b["ackQuorum"]},
                "bookie": dict(lv["bookie"]), "bookkeeper": dict(b)}
    p = lv["persistence"]
    return {"broker": {**prof["broker"], "managedLedgerDefaultEnsembleSize": p["ensemble"],
                       "managedLedgerDefaultWriteQuorum": p["writeQuorum"],
                       "managedLedgerDefaultAckQuorum": p["ackQuorum"]},
            "bookie": dict(lv["bookie"]), "persistence": dict(p)}
