"""Kafka's verification has two transports (issue 30, blocker 1): confluent-kafka's admin client in this process, and
the distribution's Java admin client run as a source file on a server host (systems/kafka/check/
KafkaVerifySnapshot.java, over ssh from testbeds/cluster.py when the controller has no route to the brokers). On the
shared Kafka L1 cluster both must answer the same snapshot, and one comparison judges it."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from systems import durability as dur
from systems import kafka
from systems.util import SystemsError

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / "systems" / "kafka" / "check" / "KafkaVerifySnapshot.java"


def _expected(level: str):
    ss = dur.server_settings("kafka", level)
    return kafka.expected_broker(ss["broker"]), {k: str(v) for k, v in ss["topic"].items()}, ss["replicationFactor"]


def _java() -> str:
    return os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"


def java_snapshot(doc: dict, create: bool, timeout: int = 60, bootstrap: str | None = None) -> subprocess.CompletedProcess:
    exp_b, exp_t, rf = _expected(doc["level"])
    cmd = [_java(), "-Xmx256m", "-Dlog4j2.level=off", "-cp", f"{doc['distribution']}/libs/*", str(CHECK),
           bootstrap or doc["kafka"]["bootstrapServers"], str(kafka.NODES), kafka.VERIFY_TOPIC, str(rf),
           "true" if create else "false", str(timeout), ",".join(sorted(exp_b)), ",".join(sorted(exp_t)),
           *(f"{k}={v}" for k, v in exp_t.items())]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 120)


@pytest.mark.integration
@pytest.mark.cluster("kafka", "L1")
def test_the_java_snapshot_from_a_host_equals_the_one_taken_here(shared_cluster):
    doc = shared_cluster.doc
    exp_b, exp_t, rf = _expected(doc["level"])
    here = kafka.snapshot(doc["kafka"]["bootstrapServers"], sorted(exp_b), sorted(exp_t), exp_t, rf, True, 60)
    r = java_snapshot(doc, create=True)
    assert r.returncode == 0, r.stderr[-3000:]
    line = [x for x in r.stdout.splitlines() if x.startswith("SNAPSHOT ")]
    assert len(line) == 1, r.stdout[-2000:]
    there = json.loads(line[0][len("SNAPSHOT "):])
    assert there == here
    eff = kafka.compare(there, exp_b, exp_t, doc["level"])
    assert eff["topic"]["replicationFactor"] == 3 and eff["topic"]["config"]["flush.messages"] == "1"
    # the same snapshot judged against another level's settings names every difference in one line
    exp_b4, exp_t4, _ = _expected("L4")
    with pytest.raises(SystemsError) as e:
        kafka.compare(there, exp_b4, exp_t4, "L4")
    assert str(e.value).startswith("kafka: effective settings differ from level L4: ") and "flush.messages=1" in str(e.value)


@pytest.mark.integration
@pytest.mark.cluster("kafka", "L1")
def test_brokers_that_do_not_answer_are_one_line_within_the_deadline(shared_cluster):
    r = java_snapshot(shared_cluster.doc, create=False, timeout=5, bootstrap="127.0.0.1:1")
    assert r.returncode == 3, (r.returncode, r.stderr[-2000:])
    assert r.stderr.strip().splitlines()[-1].startswith("kafka: cluster not ready at 127.0.0.1:1: "), r.stderr[-2000:]
