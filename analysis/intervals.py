"""Intervals over repetitions and verdicts judged on them (issue 33).

A claim judged on this testbed's runs compares the repetitions of one or more cells (a cell: one configuration at
one point, e.g. Kafka L2 at 1 partition and 50 000 msg/s), never a single number:

- `of(values)` summarises a cell: n, median, min, max and, when n >= 5, an order-statistic confidence interval of
  the median (distribution-free and exact, no resampling: the interval [x(k), x(n+1-k)] of the sorted values with
  the largest k whose coverage 1 - 2 P(Binomial(n, 1/2) <= k - 1) is at least LEVEL; at n = 5 … 8 no k > 1
  reaches it and the interval is the range, whose coverage is below LEVEL at n = 5: 93.75 %).
- The interval a cell is judged on (`Interval.judged`) is that confidence interval when n >= 5, else the range
  [min, max] of the repetitions; with n = 1 it is the single value.
- `judge(rng, region)` compares a judged interval with the region of values in which a claim holds:
  HOLDS when the whole interval lies inside it, DIFFERS when the whole interval lies outside it, NOT_SEPARABLE
  ("not separable at this scale") when the interval straddles the region's edge.
- The comparisons claims make are built on it: `greater` (A > B: A's interval against B's; their overlap is not
  separable), `ratio_at_least` (A / B >= k, the ratio's interval from the two intervals: lowest over highest …
  highest over lowest), `at_most` / `at_least` (a value against a bound), `within` (a value within x % of a
  printed one); `combine` joins the verdicts of the cells of a claim that must hold in each (any DIFFERS differs,
  all HOLDS holds, otherwise not separable).
- `mark(verdict, n)` appends "(1 run)" when a cell has one run, so nobody reads its single value as an interval.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import stats

HOLDS = "holds"
DIFFERS = "differs"
NOT_SEPARABLE = "not separable at this scale"
CATEGORIES = (HOLDS, DIFFERS, NOT_SEPARABLE)
LEVEL = 0.95  # coverage of the order-statistic interval of the median (n >= MIN_CI)
MIN_CI = 5  # below this many repetitions a cell is judged on its range
INF = math.inf
ONE_RUN = "(1 run)"


def _binom_cdf_half(n: int, k: int) -> float:
    """P(Binomial(n, 1/2) <= k)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n


def order_statistic_ci(xs: list[float], level: float = LEVEL) -> tuple[float, float, float]:
    """(low, high, coverage) of the distribution-free interval [x(k), x(n+1-k)] for the median of sorted xs: the
    largest k >= 1 whose coverage reaches `level`, else k = 1 (the range) with its own coverage."""
    n = len(xs)
    if n < 2:
        raise ValueError("an order-statistic interval needs at least 2 values")
    best = 1
    for k in range(1, n // 2 + 1):
        if 1 - 2 * _binom_cdf_half(n, k - 1) >= level:
            best = k
        else:
            break
    return xs[best - 1], xs[n - best], 1 - 2 * _binom_cdf_half(n, best - 1)


@dataclass(frozen=True)
class Interval:
    """The repetitions of one cell: n, median, min, max, and (n >= MIN_CI) the median's order-statistic interval."""
    values: tuple
    n: int
    median: float
    lo: float
    hi: float
    ci_lo: float | None = None
    ci_hi: float | None = None
    ci_coverage: float | None = None

    @property
    def judged(self) -> tuple[float, float]:
        """The interval claims are judged on: the median's interval when n >= MIN_CI, else the range."""
        return (self.ci_lo, self.ci_hi) if self.ci_lo is not None else (self.lo, self.hi)

    def scaled(self, k: float) -> "Interval":
        """The same cell in another unit (k > 0), e.g. e/s -> MB/s."""
        if not k > 0:
            raise ValueError(f"scale factor must be positive: {k!r}")
        return of([v * k for v in self.values])

    def text(self, fmt=".3g", unit: str = "") -> str:
        """'median [min–max]' (n >= 2; ', CI lo–hi' added when the median's interval is narrower than the range),
        the single value when n = 1; fmt is a format spec or a function of one number."""
        return range_text(self.median, self.lo, self.hi, fmt, unit, self.n,
                          None if self.ci_lo is None or (self.ci_lo, self.ci_hi) == (self.lo, self.hi)
                          else (self.ci_lo, self.ci_hi))


def _f(v: float, fmt) -> str:
    if callable(fmt):
        return fmt(v)
    if v in (INF, -INF):
        return "∞" if v > 0 else "-∞"
    return format(v, fmt)


def span(lo: float, hi: float, fmt=".3g") -> str:
    """'lo–hi' (an en dash, after which a line may break), 'lo to hi' when lo is negative (no dash beside a minus)."""
    a, b = _f(lo, fmt), _f(hi, fmt)
    return f"{a} to {b}" if lo < 0 else f"{a}–{b}"


def range_text(median: float, lo: float, hi: float, fmt=".3g", unit: str = "", n: int = 2, ci=None) -> str:
    """'median [lo–hi] unit' (n >= 2), 'median unit' (n = 1); the unit 'x' (a ratio) stays on the median:
    '2.10x [1.90–2.30]'; ci: (low, high) added as ', CI low–high'."""
    if n == 1:
        return f"{_f(median, fmt)}{'' if unit in ('', 'x') else ' '}{unit}"
    extra = f", CI {span(*ci, fmt)}" if ci else ""
    if unit == "x":
        return f"{_f(median, fmt)}x [{span(lo, hi, fmt)}{extra}]"
    return f"{_f(median, fmt)} [{span(lo, hi, fmt)}{extra}]" + (f" {unit}" if unit else "")


def of(values) -> Interval | None:
    """The cell's summary; None values are left out; None when no value is left. A non-finite value is an error."""
    xs = sorted(float(v) for v in values if v is not None)
    if not xs:
        return None
    bad = [v for v in xs if not math.isfinite(v)]
    if bad:
        raise ValueError(f"not a finite repetition value: {bad[0]!r}")
    n = len(xs)
    ci = order_statistic_ci(xs) if n >= MIN_CI else (None, None, None)
    return Interval(tuple(xs), n, stats.median(xs), xs[0], xs[-1], *ci)


# ---------------------------------------------------------------- regions and verdicts

@dataclass(frozen=True)
class Region:
    """The values for which a claim holds: an interval from lo to hi, each end open or closed."""
    lo: float = -INF
    hi: float = INF
    lo_open: bool = False
    hi_open: bool = False

    def contains(self, x: float) -> bool:
        above = x > self.lo or (x == self.lo and not self.lo_open)
        below = x < self.hi or (x == self.hi and not self.hi_open)
        return above and below

    def misses(self, lo: float, hi: float) -> bool:
        """Whether [lo, hi] has no point in the region."""
        return (hi < self.lo or (hi == self.lo and self.lo_open)) or (lo > self.hi or (lo == self.hi and self.hi_open))


def above(x: float, strict: bool = False) -> Region:
    return Region(lo=x, lo_open=strict)


def below(x: float, strict: bool = False) -> Region:
    return Region(hi=x, hi_open=strict)


def between(lo: float, hi: float) -> Region:
    return Region(lo=lo, hi=hi)


def judge(rng: tuple[float, float], region: Region) -> str:
    """HOLDS when the interval rng = (lo, hi) lies inside region, DIFFERS when it lies outside, else NOT_SEPARABLE."""
    lo, hi = rng
    if lo > hi:
        raise ValueError(f"an interval's low end {lo!r} is above its high end {hi!r}")
    if region.contains(lo) and region.contains(hi):
        return HOLDS
    if region.misses(lo, hi):
        return DIFFERS
    return NOT_SEPARABLE


def difference(a: Interval, b: Interval) -> tuple[float, float]:
    """The interval of A - B from the judged intervals of A and B."""
    (alo, ahi), (blo, bhi) = a.judged, b.judged
    return alo - bhi, ahi - blo


def ratio(a: Interval, b: Interval) -> tuple[float, float]:
    """The interval of A / B from the judged intervals of A and B (positive values): A's low over B's high to A's
    high over B's low (infinite when B's low is 0)."""
    (alo, ahi), (blo, bhi) = a.judged, b.judged
    if alo < 0 or blo < 0:
        raise ValueError("a ratio's interval needs non-negative values")
    if bhi == 0:
        return INF, INF
    return alo / bhi, (ahi / blo if blo > 0 else INF)


def greater(a: Interval, b: Interval) -> str:
    """A > B: holds when A's whole interval is above B's, differs when it is at or below B's, else (overlap) not
    separable."""
    return judge(difference(a, b), above(0.0, strict=True))


def less(a: Interval, b: Interval) -> str:
    """A < B (greater with the roles swapped)."""
    return greater(b, a)


def ratio_at_least(a: Interval, b: Interval, k: float) -> str:
    """A / B >= k."""
    return judge(ratio(a, b), above(k))


def ratio_at_most(a: Interval, b: Interval, k: float) -> str:
    """A / B <= k."""
    return judge(ratio(a, b), below(k))


def ratio_within(a: Interval, b: Interval, target: float, tol: float) -> str:
    """A / B within +/-tol (a fraction) of target."""
    return judge(ratio(a, b), between(target * (1 - tol), target * (1 + tol)))


def at_most(a: Interval, bound: float, strict: bool = False) -> str:
    """A <= bound (A < bound when strict)."""
    return judge(a.judged, below(bound, strict))


def at_least(a: Interval, bound: float, strict: bool = False) -> str:
    """A >= bound (A > bound when strict)."""
    return judge(a.judged, above(bound, strict))


def within(a: Interval, target: float, tol: float) -> str:
    """A within +/-tol (a fraction) of target."""
    return judge(a.judged, between(target * (1 - tol), target * (1 + tol)))


def combine(verdicts) -> str:
    """A claim that must hold in every cell: DIFFERS if one cell differs, HOLDS if all hold, else NOT_SEPARABLE.
    An empty list is an error (nothing was judged)."""
    vs = list(verdicts)
    if not vs:
        raise ValueError("combine() of no verdicts")
    unknown = [v for v in vs if v not in CATEGORIES]
    if unknown:
        raise ValueError(f"not a verdict: {unknown[0]!r}")
    if DIFFERS in vs:
        return DIFFERS
    return HOLDS if all(v == HOLDS for v in vs) else NOT_SEPARABLE


def smallest_n(*cells) -> int:
    """The fewest repetitions among the cells a claim judged (the `n` column of a claims row)."""
    ns = [c.n for c in cells if c is not None]
    if not ns:
        raise ValueError("smallest_n() of no cells")
    return min(ns)


def mark(verdict: str, n: int | None) -> str:
    """The verdict with '(1 run)' appended when the fewest repetitions of its cells is one."""
    return f"{verdict} {ONE_RUN}" if n == 1 and not verdict.endswith(ONE_RUN) else verdict


def not_separable(why: str) -> str:
    """'not separable at this scale: <why>'."""
    return f"{NOT_SEPARABLE}: {why}"
