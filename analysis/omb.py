"""Read and validate one OMB result JSON of any schema generation (+ this project's `x-streambench` block).

Units: OMB latencies are ms, publish-delay values µs, rates msg/s, backlog messages. Everything leaving this
module is in ms / msg/s. A bad file raises InputError naming the file and the field.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from . import InputError
from . import hdr

PCTS = ["Avg", "50pct", "75pct", "95pct", "99pct", "999pct", "9999pct", "Max"]
RATE_SERIES = ["publishRate", "consumeRate", "backlog"]
CORE_KEYS = (["workload", "driver"] + RATE_SERIES
             + [f"publishLatency{p}" for p in PCTS] + [f"aggregatedPublishLatency{p}" for p in PCTS]
             + ["aggregatedPublishLatencyQuantiles"]
             + [f"endToEndLatency{p}" for p in PCTS] + ["aggregatedEndToEndLatencyQuantiles"]
             + [f"aggregatedEndToEndLatency{p}" for p in PCTS])
# the 23 keys the 2017-2021 files lack (omb-formats.md §1.6)
CURRENT_EXTRA = (["messageSize", "topics", "partitions", "producersPerTopic", "consumersPerTopic", "publishErrorRate"]
                 + [f"publishDelayLatency{p}" for p in PCTS] + [f"aggregatedPublishDelayLatency{p}" for p in PCTS]
                 + ["aggregatedPublishDelayLatencyQuantiles"])
assert len(CORE_KEYS) == 39 and len(CURRENT_EXTRA) == 23
# a latency above this many ms (one day) can only be a µs value in an ms field
MAX_PLAUSIBLE_MS = 86_400_000.0


def _num(path, key, v, allow_negative=False):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise InputError(path, key, f"not a finite number: {v!r}")
    if v < 0 and not allow_negative:
        raise InputError(path, key, f"negative value {v}")
    return float(v)


def _series(path, d, key, latency):
    v = d[key]
    if not isinstance(v, list):
        raise InputError(path, key, "not an array")
    out = [_num(path, key, x, allow_negative=(key == "backlog")) for x in v]
    if latency and any(x > MAX_PLAUSIBLE_MS for x in out):
        raise InputError(path, key, "value above one day in an ms field (µs-scale data?)")
    return out


def _quantiles(path, d, key, scale=1.0):
    m = d[key]
    if not isinstance(m, dict):
        raise InputError(path, key, "not a quantile map (object)")
    if not m:
        return []  # no samples (e.g. a run whose consumers never received): no statistics for this metric
    items = []
    for k, v in m.items():
        try:
            p = float(k)
        except ValueError:
            raise InputError(path, key, f"percentile key {k!r} is not a number") from None
        if not 0.0 <= p <= 100.0:
            raise InputError(path, key, f"percentile key {k!r} outside 0..100")
        items.append((p, _num(path, key, v) * scale))
    items.sort()
    if not items:
        return items
    for (p0, v0), (p1, v1) in zip(items, items[1:]):
        if v1 < v0:
            raise InputError(path, key, f"values decrease between percentiles {p0} and {p1}")
    if items[-1][1] > MAX_PLAUSIBLE_MS:
        raise InputError(path, key, "value above one day in an ms field (µs-scale data?)")
    return items


def load(path, rel=None) -> dict:
    """Parse and validate; returns a dict with generation, windows (lists), aggregates and quantile lists."""
    path = Path(path)
    name = rel or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(name, "(file)", f"not UTF-8: {e}") from None
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(name, "(json)", f"truncated or invalid JSON at line {e.lineno} col {e.colno}: {e.msg}") from None
    return parse(d, name)


def parse(d, name) -> dict:
    if not isinstance(d, dict):
        raise InputError(name, "(json)", "top level is not an object")
    for k in CORE_KEYS:
        if k not in d:
            raise InputError(name, k, "missing key")
    present = [k for k in CURRENT_EXTRA if k in d]
    if present and len(present) != len(CURRENT_EXTRA):
        missing = next(k for k in CURRENT_EXTRA if k not in d)
        raise InputError(name, missing, "missing key (file has some but not all of the current schema's keys)")
    generation = "omb-current" if present else "omb-2020"
    if "x-streambench" in d:
        generation = "streambench"
    for k in ("workload", "driver"):
        if not isinstance(d[k], str):
            raise InputError(name, k, "not a string")

    windows = {}
    for k in RATE_SERIES:
        windows[k] = _series(name, d, k, latency=False)
    for k in [f"publishLatency{p}" for p in PCTS] + [f"endToEndLatency{p}" for p in PCTS]:
        windows[k] = _series(name, d, k, latency=True)
    if generation != "omb-2020":
        windows["publishErrorRate"] = _series(name, d, "publishErrorRate", latency=False)
        for p in PCTS:
            # µs -> ms
            windows[f"publishDelayLatency{p}"] = [x / 1000.0 for x in _series(name, d, f"publishDelayLatency{p}", False)]
    n = len(windows["publishRate"])
    for k, v in windows.items():
        if len(v) != n:
            raise InputError(name, k, f"has {len(v)} windows but publishRate has {n}")

    agg = {}
    for pre, metric in (("aggregatedPublishLatency", "publish"), ("aggregatedEndToEndLatency", "e2e")):
        for p in PCTS:
            v = _num(name, pre + p, d[pre + p])
            if v > MAX_PLAUSIBLE_MS:
                raise InputError(name, pre + p, "value above one day in an ms field (µs-scale data?)")
            agg[(metric, p)] = v
    if generation != "omb-2020":
        for p in PCTS:
            agg[("publish_delay", p)] = _num(name, "aggregatedPublishDelayLatency" + p,
                                             d["aggregatedPublishDelayLatency" + p]) / 1000.0
    quant = {"publish": _quantiles(name, d, "aggregatedPublishLatencyQuantiles"),
             "e2e": _quantiles(name, d, "aggregatedEndToEndLatencyQuantiles")}
    if generation != "omb-2020":
        quant["publish_delay"] = _quantiles(name, d, "aggregatedPublishDelayLatencyQuantiles", scale=1e-3)

    # unit consistency: the aggregated maximum covers the same samples as the per-window maxima
    # (publish only: published catch-up files hold e2e aggregates that cover far fewer samples than the windows)
    for metric, wkey, akey in (("publish", "publishLatencyMax", "aggregatedPublishLatencyMax"),
                               ("e2e", "endToEndLatencyMax", "aggregatedEndToEndLatencyMax")):
        wmax = max(windows[wkey], default=0.0)
        amax = agg[(metric, "Max")]
        if metric == "publish" and wmax > 0 and amax > 0 and (amax / wmax > 500 or wmax / amax > 500):
            raise InputError(name, akey, f"{amax} vs per-window max {wmax}: unit mismatch (µs vs ms?)")
        qmax = quant[metric][-1][1] if quant[metric] else 0.0
        if qmax > 0 and amax > 0 and (qmax / amax > 500 or amax / qmax > 500):
            raise InputError(name, akey.replace("Max", "Quantiles"), f"max {qmax} vs {akey} {amax}: unit mismatch")

    meta = {k: d[k] for k in ("messageSize", "topics", "partitions", "producersPerTopic", "consumersPerTopic") if k in d}
    out = {"generation": generation, "workload": d["workload"], "driver": d["driver"], "n_windows": n,
           "windows": windows, "agg": agg, "quantiles": quant, "meta": meta, "x": None, "histograms": {}}
    if generation == "streambench":
        out["x"], out["histograms"] = _streambench(name, d["x-streambench"])
    return out


# runner/RESULT-FORMAT.md: x-streambench.histograms.<key> (µs) -> our metric name
HIST_KEYS = {"publish": "publish", "publishCorrected": "publish_corrected", "publishDelay": "publish_delay",
             "endToEnd": "e2e", "endToEndCorrected": "e2e_corrected"}


def _streambench(name, x):
    """Validate the runner's extension block; decode its whole-run histograms (µs) per metric."""
    if not isinstance(x, dict):
        raise InputError(name, "x-streambench", "not an object")
    for k in ("audit", "cluster", "backlog", "mixed", "rateDiscovery", "producerRate", "workload"):
        if x.get(k) is not None and not isinstance(x[k], dict):
            raise InputError(name, f"x-streambench.{k}", "not an object")
    hists = {}
    raw = x.get("histograms") or {}
    if not isinstance(raw, dict):
        raise InputError(name, "x-streambench.histograms", "not an object")
    unit = raw.get("unit", "us")
    if unit != "us":
        raise InputError(name, "x-streambench.histograms.unit", f"expected 'us', got {unit!r}")
    for key, metric in HIST_KEYS.items():
        val = raw.get(key)
        if val is None:
            continue
        blobs = val if isinstance(val, list) else [val]  # a list is merged (e.g. one per process)
        for b in blobs:
            if not isinstance(b, str):
                raise InputError(name, f"x-streambench.histograms.{key}", "not a base64 string")
            try:
                h = hdr.decode(b)
            except (hdr.HdrError, ValueError) as e:
                raise InputError(name, f"x-streambench.histograms.{key}", f"bad histogram: {e}") from None
            hists[metric] = hists[metric].add(h) if metric in hists else h
    audit = x.get("audit") or {}
    for k in ("sent", "acked", "sendErrors", "lost", "duplicated", "outOfOrder"):
        if audit.get(k) is not None and (isinstance(audit[k], bool) or not isinstance(audit[k], (int, float)) or audit[k] < 0):
            raise InputError(name, f"x-streambench.audit.{k}", f"not a non-negative count: {audit[k]!r}")
    return x, hists
