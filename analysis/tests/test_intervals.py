"""analysis.intervals: a cell's repetitions as an interval, and every verdict a comparison over intervals can reach."""
import math

import pytest

from analysis import intervals as iv
from analysis.intervals import DIFFERS, HOLDS, NOT_SEPARABLE


def test_of_summarises_repetitions():
    c = iv.of([3.0, 1.0, None, 2.0])
    assert (c.n, c.median, c.lo, c.hi, c.judged) == (3, 2.0, 1.0, 3.0, (1.0, 3.0))
    assert c.ci_lo is None  # below 5 repetitions: judged on the range
    assert iv.of([4.0, 1.0, 2.0, 3.0]).median == 2.5
    assert iv.of([]) is None and iv.of([None]) is None
    one = iv.of([7.5])
    assert (one.n, one.judged, one.text(".1f")) == (1, (7.5, 7.5), "7.5")
    with pytest.raises(ValueError, match="finite"):
        iv.of([1.0, math.nan])


def test_order_statistic_interval_of_the_median():
    # n = 5 … 8: no k > 1 reaches 95 %, the interval is the range (at n = 5 with coverage 1 - 2/32)
    five = iv.of([5, 1, 4, 2, 3])
    assert (five.ci_lo, five.ci_hi) == (1, 5) and five.ci_coverage == pytest.approx(0.9375)
    assert five.text(".0f") == "3 [1–5]"  # the CI equals the range: not printed twice
    # n = 9: [x(2), x(8)], coverage 1 - 2 * 10/512
    nine = iv.of(range(1, 10))
    assert (nine.ci_lo, nine.ci_hi) == (2, 8) and nine.ci_coverage == pytest.approx(1 - 20 / 512)
    assert nine.judged == (2, 8) and nine.text(".0f") == "5 [1–9, CI 2–8]"
    # n = 20: the largest k with coverage >= 95 % is 6 (P(B(20, .5) <= 5) = 0.0207; <= 6: 0.0577)
    lo, hi, cov = iv.order_statistic_ci(list(range(1, 21)))
    assert (lo, hi) == (6, 15) and cov >= 0.95
    with pytest.raises(ValueError):
        iv.order_statistic_ci([1.0])


def test_text_forms():
    assert iv.of([1.0, 2.0, 3.0]).text(".1f", "ms") == "2.0 [1.0–3.0] ms"
    assert iv.range_text(2.1, 1.9, 2.3, ".2f", "x") == "2.10x [1.90–2.30]"
    assert iv.range_text(2.1, 1.9, 2.3, ".2f", "x", n=1) == "2.10x"
    assert iv.of([1.0]).text(".1f", "ms") == "1.0 ms"
    assert iv.range_text(0.5, -0.2, 1.0, ".1f") == "0.5 [-0.2 to 1.0]"  # no dash beside a minus
    assert iv.of([1000.0, 3000.0]).text(lambda v: f"{v:,.0f}") == "2,000 [1,000–3,000]"
    assert iv.span(1.0, math.inf, ".1f") == "1.0–∞"


def test_judge_every_verdict_and_the_edges():
    r = iv.above(10.0)
    assert iv.judge((10.0, 12.0), r) == HOLDS  # a closed edge belongs to the region
    assert iv.judge((8.0, 9.99), r) == DIFFERS
    assert iv.judge((9.0, 11.0), r) == NOT_SEPARABLE
    strict = iv.above(10.0, strict=True)
    assert iv.judge((10.0, 12.0), strict) == NOT_SEPARABLE  # 10 itself is outside an open edge
    assert iv.judge((9.0, 10.0), strict) == DIFFERS
    assert iv.judge((10.0, 10.0), strict) == DIFFERS
    b = iv.between(1.0, 2.0)
    assert iv.judge((0.5, 3.0), b) == NOT_SEPARABLE  # both ends outside, the region inside the interval
    assert iv.judge((2.0, 3.0), b) == NOT_SEPARABLE and iv.judge((2.01, 3.0), b) == DIFFERS
    with pytest.raises(ValueError, match="above its high end"):
        iv.judge((2.0, 1.0), b)


def test_direction_over_ranges():
    a, b = iv.of([10.0, 11.0, 12.0]), iv.of([7.0, 8.0, 9.0])
    assert iv.greater(a, b) == HOLDS and iv.less(a, b) == DIFFERS and iv.less(b, a) == HOLDS
    overlapping = iv.of([8.5, 10.0, 11.0])
    assert iv.greater(overlapping, b) == NOT_SEPARABLE and iv.less(overlapping, b) == NOT_SEPARABLE
    touching = iv.of([9.0, 10.0])  # min equals B's max: A > B is contradicted by that pair
    assert iv.greater(touching, b) == NOT_SEPARABLE
    assert iv.greater(iv.of([5.0]), iv.of([5.0])) == DIFFERS  # equal single values: not greater


def test_ratio_and_bounds():
    a, b = iv.of([20.0, 22.0, 24.0]), iv.of([9.0, 10.0])
    assert iv.ratio(a, b) == (20.0 / 10.0, 24.0 / 9.0)
    assert iv.ratio_at_least(a, b, 2.0) == HOLDS
    assert iv.ratio_at_least(a, b, 2.7) == DIFFERS
    assert iv.ratio_at_least(a, b, 2.5) == NOT_SEPARABLE
    assert iv.ratio_at_most(b, a, 0.5) == HOLDS
    assert iv.ratio_within(a, b, 2.2, 0.25) == HOLDS and iv.ratio_within(a, b, 4.0, 0.1) == DIFFERS
    assert iv.ratio(a, iv.of([0.0, 1.0]))[1] == math.inf
    assert iv.at_most(a, 24.0) == HOLDS and iv.at_most(a, 24.0, strict=True) == NOT_SEPARABLE
    assert iv.at_most(a, 19.0) == DIFFERS and iv.at_least(a, 19.0) == HOLDS
    assert iv.at_least(a, 21.0) == NOT_SEPARABLE and iv.at_least(a, 25.0) == DIFFERS
    assert iv.within(a, 22.0, 0.10) == HOLDS and iv.within(a, 22.0, 0.05) == NOT_SEPARABLE
    assert iv.within(a, 40.0, 0.10) == DIFFERS
    # n >= 5: judged on the median's interval, not the range
    nine = iv.of([1, 10, 10, 10, 10, 10, 10, 10, 30])
    assert nine.judged == (10, 10) and iv.at_most(nine, 20) == HOLDS and iv.at_most(iv.of([10, 30]), 20) == NOT_SEPARABLE


def test_combine_and_mark():
    assert iv.combine([HOLDS, HOLDS]) == HOLDS
    assert iv.combine([HOLDS, NOT_SEPARABLE]) == NOT_SEPARABLE
    assert iv.combine([NOT_SEPARABLE, DIFFERS, HOLDS]) == DIFFERS
    with pytest.raises(ValueError):
        iv.combine([])
    with pytest.raises(ValueError, match="not a verdict"):
        iv.combine(["maybe"])
    assert iv.mark("holds", 1) == "holds (1 run)" and iv.mark("holds (1 run)", 1) == "holds (1 run)"
    assert iv.mark("holds", 3) == "holds"
    assert iv.smallest_n(iv.of([1.0, 2.0]), None, iv.of([3.0])) == 1
    assert iv.not_separable("ranges overlap") == "not separable at this scale: ranges overlap"
    assert iv.of([1.0, 2.0]).scaled(2.0).values == (2.0, 4.0)
