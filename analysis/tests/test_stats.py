import pytest

from analysis import stats

MAP = [(0.0, 1.0), (50.0, 2.0), (90.0, 3.0), (99.0, 4.0), (99.9, 7.0), (100.0, 9.0)]


def test_pct_from_map_first_key_at_or_above():
    assert stats.pct_from_map(MAP, 50) == 2.0
    assert stats.pct_from_map(MAP, 60) == 3.0
    assert stats.pct_from_map(MAP, 99.9) == 7.0
    assert stats.stats_from_map(MAP, 2.5) == {"avg_ms": 2.5, "p50_ms": 2.0, "p90_ms": 3.0, "p99_ms": 4.0,
                                              "p99_9_ms": 7.0, "max_ms": 9.0}


def test_median():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 2, 3]) == 2.5
    assert stats.median([]) is None


def test_bootstrap_is_seeded_and_brackets_the_median():
    xs = [10.0, 11.0, 12.0, 13.0, 30.0]
    a = stats.bootstrap_ci(xs, seed=1)
    assert a == stats.bootstrap_ci(xs, seed=1)
    assert a[0] <= stats.median(xs) <= a[1]
    assert a[0] >= 10.0 and a[1] <= 30.0
    assert stats.bootstrap_ci([5.0]) == (None, None)


def test_drain_rate():
    backlog = [100, 200, 300, 150, 2, 0]
    consume = [0, 0, 0, 350, 348, 10]
    assert stats.drain_rate(backlog, consume) == (pytest.approx((350 + 348) / 2), 2)
    assert stats.drain_rate([1, 2, 3], [0, 0, 0]) == (None, 0)
