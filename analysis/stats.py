"""Statistics: percentiles from quantile maps / merged histograms, medians and seeded bootstrap CIs.

Never averages per-window percentiles: run-level percentiles come from the aggregated distribution of the run
(OMB's aggregated quantile map, or this project's merged HdrHistogram); across repetitions we report the median
of the run-level values with a bootstrap confidence interval.
"""
from __future__ import annotations

import math
import random

STAT_PCTS = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p99_9": 99.9}
MIB = 1024 * 1024
GIB = 1024 ** 3


def pct_from_map(items, p: float) -> float:
    """Value at percentile p of a sorted [(percentile, value)] map: the first entry whose key is >= p.

    OMB writes the map by HdrHistogram percentile iteration (valueIteratedTo); study 000's tables read it this way.
    """
    if not items:
        raise ValueError("empty quantile map")
    for k, v in items:
        if k >= p - 1e-9:
            return v
    return items[-1][1]


def stats_from_map(items, avg: float) -> dict:
    out = {"avg_ms": avg}
    for name, p in STAT_PCTS.items():
        out[f"{name}_ms"] = pct_from_map(items, p)
    out["max_ms"] = items[-1][1]
    return out


def stats_from_hist(h, scale: float = 1e-3) -> dict:
    """Run statistics from a (merged) HdrHistogram recorded in µs; returned in ms."""
    out = {"avg_ms": h.mean() * scale}
    for name, p in STAT_PCTS.items():
        out[f"{name}_ms"] = h.value_at_percentile(p) * scale
    out["max_ms"] = h.max() * scale
    return out


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


# settings of the bootstrap (config analysis.bootstrap_resamples / bootstrap_seed / ci_level)
BOOTSTRAP = {"n_boot": 2000, "seed": 20201, "level": 0.95}


def bootstrap_ci(xs, level: float | None = None, n_boot: int | None = None, seed: int | None = None) -> tuple:
    """Percentile bootstrap CI of the median; deterministic for a given seed. (None, None) below 2 values."""
    level = BOOTSTRAP["level"] if level is None else level
    n_boot = BOOTSTRAP["n_boot"] if n_boot is None else n_boot
    seed = BOOTSTRAP["seed"] if seed is None else seed
    xs = [x for x in xs if x is not None]
    if len(xs) < 2:
        return (None, None)
    rng = random.Random(seed)
    meds = sorted(median([rng.choice(xs) for _ in xs]) for _ in range(n_boot))
    lo_i = int(math.floor((1 - level) / 2 * (n_boot - 1)))
    hi_i = int(math.ceil((1 + level) / 2 * (n_boot - 1)))
    return (meds[lo_i], meds[hi_i])


def mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


def drain_rate(backlog, consume, threshold=0.01):
    """Mean consume rate from the window of the largest backlog until the backlog is below threshold × peak.

    Returns (mean msg/s, number of windows) or (None, 0) when the backlog never drains.
    """
    if not backlog or max(backlog) <= 0:
        return (None, 0)
    peak = max(backlog)
    i0 = backlog.index(peak)
    for j in range(i0 + 1, len(backlog)):
        if backlog[j] <= threshold * peak:
            w = consume[i0 + 1:j + 1]
            return (sum(w) / len(w), len(w))
    return (None, 0)
