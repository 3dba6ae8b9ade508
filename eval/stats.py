"""Statistics of tournaments: means with Student-t 95% intervals over deals, and paired differences.

The deal is the sample (duplicate deals share the cards). A rate's interval is clipped to [0, 1] and, at a
bound, widened to the Clopper-Pearson limit of one trial per deal. No SciPy: the t quantile comes from the
regularized incomplete beta function. See docs/guides/evaluation.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(ln) * _betacf(a, b, x) / a
    return 1.0 - math.exp(ln) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """CDF of Student's t distribution with ``df`` degrees of freedom."""
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """Quantile of Student's t distribution (e.g. ``t_quantile(0.975, 4) = 2.7764...``)."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0, got p={p}, df={df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class Estimate:
    """A mean over ``n`` samples with the half-width of its confidence interval (``nan`` when n < 2)."""

    mean: float
    half_width: float
    n: int
    sd: float
    bounds: tuple[float, float] | None = None
    """The range the quantity cannot leave (a rate: ``(0, 1)``); the interval is clipped to it."""

    @property
    def low(self) -> float:
        """The interval's lower end (cut at the lower bound for a rate)."""
        low = self.mean - self.half_width
        return low if self.bounds is None else max(self.bounds[0], low)

    @property
    def high(self) -> float:
        """The interval's upper end (cut at the upper bound for a rate)."""
        high = self.mean + self.half_width
        return high if self.bounds is None else min(self.bounds[1], high)

    @property
    def clipped(self) -> bool:
        """Was the interval cut at a bound (so that it is not ``mean +- half_width``)?"""
        return not math.isnan(self.half_width) and (
            self.low != self.mean - self.half_width or self.high != self.mean + self.half_width
        )

    def excludes_zero(self) -> bool:
        """Is the interval entirely above or entirely below zero?"""
        return self.n >= 2 and (self.low > 0.0 or self.high < 0.0)

    def text(self, digits: int = 2, scale: float = 1.0) -> str:
        """``"12.34 ± 0.56"`` (times ``scale``, e.g. 100 for percentages); ``"50.0 [0.0, 95.3]"`` when the
        interval was clipped at a bound and so is not symmetric."""
        if self.n == 0:
            return "-"
        m = self.mean * scale
        if math.isnan(self.half_width):
            return f"{m:.{digits}f}"
        if self.clipped:
            return f"{m:.{digits}f} [{self.low * scale:.{digits}f}, {self.high * scale:.{digits}f}]"
        return f"{m:.{digits}f} ± {self.half_width * scale:.{digits}f}"

    def to_dict(self) -> dict[str, float | int | None]:
        """The estimate as JSON-ready numbers: mean, ``ci95`` (the half-width), ``low``, ``high``, ``n``, ``sd``."""
        hw = None if math.isnan(self.half_width) else self.half_width
        return {
            "mean": self.mean,
            "ci95": hw,
            "low": None if hw is None else self.low,
            "high": None if hw is None else self.high,
            "n": self.n,
            "sd": self.sd,
        }


def mean_ci(
    samples: Sequence[float], level: float = 0.95, bounds: tuple[float, float] | None = None
) -> Estimate:
    """Mean of independent samples and the half-width of its two-sided Student-t ``level`` interval;
    with ``bounds`` (e.g. ``(0, 1)`` for a rate) the interval's ``low``/``high`` are clipped to them."""
    n = len(samples)
    if n == 0:
        return Estimate(math.nan, math.nan, 0, math.nan, bounds)
    mean = math.fsum(samples) / n
    if n < 2:
        return Estimate(mean, math.nan, n, math.nan, bounds)
    var = math.fsum((x - mean) ** 2 for x in samples) / (n - 1)
    sd = math.sqrt(var)
    hw = t_quantile(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n)
    if bounds is not None:
        # near a bound the t interval shrinks with the spread: 0 on every deal (random never wins) gave width 0,
        # a certainty n deals cannot give, and one deal off the bound a far narrower interval than none. An
        # interval cut at a bound reaches at least the Clopper-Pearson limit of 0 in n (each deal is at least one
        # trial; more games a deal only narrow it): 1 - ((1 - level) / 2) ** (1 / n) from that bound
        floor = 1.0 - ((1.0 - level) / 2.0) ** (1.0 / n)
        lo, hi = bounds
        if mean - hw <= lo:
            hw = max(hw, lo + floor * (hi - lo) - mean)
        if mean + hw >= hi:
            hw = max(hw, mean - (hi - floor * (hi - lo)))
    return Estimate(mean, hw, n, sd, bounds)


def paired_difference(a: dict[int, float], b: dict[int, float], level: float = 0.95) -> Estimate:
    """Mean of ``a[d] - b[d]`` over the deals ``d`` both have, with its interval (per-deal pairing)."""
    common = sorted(set(a) & set(b))
    return mean_ci([a[d] - b[d] for d in common], level)


def ranks_from_scores(scores: Sequence[float]) -> list[int]:
    """Competition ranks, 1 = best (highest score); equal scores share a rank (1, 1, 3)."""
    return [1 + sum(1 for o in scores if o > s) for s in scores]
