"""Statistics of tournaments: means with Student-t 95% intervals over deals (the deal is the sample; a rate's
interval is clipped to [0, 1]), and paired differences. See docs/guides/evaluation.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


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
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in samples) / (n - 1))
    from scipy import stats  # the eval extra: tournaments run without it, their intervals need it

    hw = float(stats.t.ppf(0.5 + level / 2.0, n - 1)) * sd / math.sqrt(n)
    if bounds is not None:
        # near a bound the t interval shrinks with the spread (to 0 when every deal is at it), a certainty n
        # deals cannot give: a cut interval reaches at least the Clopper-Pearson limit of 0 in n (a deal is at
        # least one trial) from that bound
        floor = 1.0 - ((1.0 - level) / 2.0) ** (1.0 / n)
        lo, hi = bounds
        if mean - hw <= lo:
            hw = max(hw, lo + floor * (hi - lo) - mean)
        if mean + hw >= hi:
            hw = max(hw, mean - (hi - floor * (hi - lo)))
    return Estimate(mean, hw, n, sd, bounds)


def paired_difference(a: dict[int, float], b: dict[int, float], level: float = 0.95) -> Estimate:
    """Mean of ``a[d] - b[d]`` over the deals ``d`` both have, with its interval (per-deal pairing)."""
    return mean_ci([a[d] - b[d] for d in sorted(set(a) & set(b))], level)
