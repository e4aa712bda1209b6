"""Small hand-made OMB result files for tests (pure data; values chosen so results are computable by hand)."""
from __future__ import annotations

import copy
import json

from analysis import hdr, omb

PCTS = omb.PCTS


def omb_2020(n=3, publish=(1.0, 2.0, 4.0), e2e=(2.0, 3.0, 5.0)):
    """A 2020-schema result: n windows; publish latency map 50% -> 2 ms, 90% -> 3 ms, 99% -> 4 ms, 100% -> 4 ms."""
    d = {"workload": "1 topic / 100 partitions / 2 producer / 2 consumer / 1Kb / 200K Rate", "driver": "Kafka",
         "publishRate": [1000.0, 2000.0, 3000.0][:n], "consumeRate": [1000.0, 2000.0, 3000.0][:n],
         "backlog": [0, 0, 0][:n]}
    for p in PCTS:
        d[f"publishLatency{p}"] = [publish[i % len(publish)] for i in range(n)]
    for p in PCTS:
        d[f"aggregatedPublishLatency{p}"] = {"Avg": 2.5, "Max": 4.0}.get(p, 3.0)
    d["aggregatedPublishLatencyQuantiles"] = {"0.0": 1.0, "50.0": 2.0, "90.0": 3.0, "99.0": 4.0, "100.0": 4.0}
    for p in PCTS:
        d[f"endToEndLatency{p}"] = [e2e[i % len(e2e)] for i in range(n)]
    d["aggregatedEndToEndLatencyQuantiles"] = {"0.0": 2.0, "50.0": 3.0, "90.0": 4.0, "99.0": 5.0, "99.9": 5.0, "100.0": 6.0}
    for p in PCTS:
        d[f"aggregatedEndToEndLatency{p}"] = {"Avg": 3.5, "Max": 6.0}.get(p, 4.0)
    return d


def omb_current(n=3):
    d = omb_2020(n)
    d.update(messageSize=1024, topics=1, partitions=100, producersPerTopic=2, consumersPerTopic=2,
             publishErrorRate=[0.0] * n)
    for p in PCTS:
        d[f"publishDelayLatency{p}"] = [1500] * n  # µs
        d[f"aggregatedPublishDelayLatency{p}"] = 1500
    d["aggregatedPublishDelayLatencyQuantiles"] = {"50.0": 1000, "100.0": 2000}
    return d


def histogram_us(values):
    h = hdr.Histogram(1, 3_600_000_000, 3)
    for v in values:
        h.record(v)
    return h


def streambench(n=3, publish_us=None, e2e_us=None, level="L1", system="kafka", version="3.9.0"):
    """Current schema + x-streambench with whole-run histograms (µs)."""
    d = omb_current(n)
    publish_us = publish_us if publish_us is not None else list(range(1000, 101000, 1000))  # 1..100 ms
    e2e_us = e2e_us if e2e_us is not None else [2 * v for v in publish_us]
    d["x-streambench"] = {
        "formatVersion": 1, "runner": {"name": "omb-runner", "version": "0.1.0"},
        "workload": {"subscriptionsPerTopic": 1, "producerRate": 200000, "consumerBacklogSizeGB": 0},
        "cluster": {"system": system, "version": version, "level": level, "tuning": "stock"},
        "histograms": {"encoding": "HdrHistogram-V2-compressed-base64", "unit": "us", "significantDigits": 3,
                       "publish": hdr.encode(histogram_us(publish_us)), "endToEnd": hdr.encode(histogram_us(e2e_us)),
                       "publishCorrected": hdr.encode(histogram_us([v + 1000 for v in publish_us]))},
        "audit": {"sent": 10, "acked": 10, "sendErrors": 0, "lost": 0, "duplicated": 0, "outOfOrder": 0},
    }
    return d


def write(path, d):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(d))
    return path


def copy_of(d):
    return copy.deepcopy(d)
