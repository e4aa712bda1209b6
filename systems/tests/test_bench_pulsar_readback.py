"""systems/bench/pulsar_readback.py's verdict is its exit code. The cluster, the client and the clock are replaced:
each read advances a fake clock by the seconds the case gives it, and returns what the case says it read; what is
tested is the judging (the ratio of the medians against --max-ratio, every message read once) and its exit code."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(monkeypatch):
    spec = importlib.util.spec_from_file_location("pulsar_readback", ROOT / "systems" / "bench" / "pulsar_readback.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    monkeypatch.setattr(m.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "", ""))
    monkeypatch.setattr(m, "load_cluster", lambda rundir: {})
    return m


def run(bench, monkeypatch, capsys, sequential_s, parallel_s, parallel_reads=None, acked=True):
    n = 100
    clock = [0.0]

    class FakeTime:
        @staticmethod
        def monotonic():
            return clock[0]

        @staticmethod
        def time():
            return 0.0

    class Sender:
        def send(self, topic, i, size, audit):
            audit.ack(i, acked or i > 0)

        def flush(self, seconds):
            return 0

    class Client:
        def __init__(self, cluster, driver, log):
            pass

        def create_topic(self, topic, partitions):
            pass

        def producer(self, topic):
            return Sender()

        def topic(self, name):
            return name

        def _read_partition(self, t, deadline, out, stop):
            clock[0] += sequential_s / bench.PARTITIONS
            p = int(t.rsplit("-", 1)[1])
            out.extend(i for i in range(n) if i % bench.PARTITIONS == p)

        def read_back(self, topic, partitions, deadline):
            clock[0] += parallel_s
            return list(range(n)) if parallel_reads is None else parallel_reads

        def close(self):
            pass

    monkeypatch.setattr(bench, "time", FakeTime)
    monkeypatch.setattr(bench.fc, "PulsarClient", Client)
    monkeypatch.setattr(sys, "argv", ["pulsar_readback.py", "--messages", str(n), "--rounds", "2"])
    rc = bench.main()
    return rc, capsys.readouterr().out


def test_side_by_side_within_the_criterion_passes(bench, monkeypatch, capsys):
    rc, out = run(bench, monkeypatch, capsys, 2.0, 1.0)
    assert rc == 0 and "PASS medians of 4: one after the other 2.00 s, side by side 1.00 s: 0.50x" in out


def test_a_ratio_above_the_criterion_fails(bench, monkeypatch, capsys):
    rc, out = run(bench, monkeypatch, capsys, 2.0, 1.6)
    assert rc == 1 and "FAIL medians of 4" in out and "0.80x (criterion <= 0.75x" in out


@pytest.mark.parametrize("reads", [list(range(99)), list(range(100)) + [7]], ids=["missed", "repeated"])
def test_a_read_that_misses_or_repeats_a_message_fails_however_fast(bench, monkeypatch, capsys, reads):
    rc, out = run(bench, monkeypatch, capsys, 2.0, 0.1, parallel_reads=reads)
    assert rc == 1 and "NOT every message once" in out and "FAIL" in out


def test_messages_not_all_acknowledged_fail_before_any_read(bench, monkeypatch, capsys):
    rc, out = run(bench, monkeypatch, capsys, 2.0, 1.0, acked=False)
    assert rc == 1 and "FAIL not every message was acknowledged" in out and "read in" not in out
