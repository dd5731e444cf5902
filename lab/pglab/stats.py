"""Summary statistics of repeated timings."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

CI_LEVEL = 0.95


@dataclass(frozen=True)
class Summary:
    """Median, spread and a distribution-free confidence interval of the median."""

    n: int
    median: float
    mean: float
    std: float  # sample standard deviation (ddof=1); nan for n < 2
    cv: float  # std / mean; nan when undefined
    ci_low: float  # order-statistic CI of the median; nan when n is too small
    ci_high: float
    ci_level: float = CI_LEVEL

    @property
    def has_ci(self) -> bool:
        return not (math.isnan(self.ci_low) or math.isnan(self.ci_high))


def median_ci(values: Sequence[float] | ArrayLike, level: float = CI_LEVEL) -> tuple[float, float]:
    """Distribution-free CI of the median from order statistics (binomial, via scipy's
    quantile_test).  Needs n >= 6 for 95%; smaller samples give (nan, nan)."""
    data = np.asarray(values, dtype=float)
    if data.size < 2:
        return math.nan, math.nan
    result = stats.quantile_test(data, q=float(np.median(data)), p=0.5)
    interval = result.confidence_interval(confidence_level=level)
    return float(interval.low), float(interval.high)


def summarize(values: Sequence[float], level: float = CI_LEVEL) -> Summary:
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("no values to summarize")
    mean = float(np.mean(data))
    std = float(np.std(data, ddof=1)) if data.size > 1 else math.nan
    cv = std / mean if data.size > 1 and mean != 0 else math.nan
    low, high = median_ci(data, level)
    return Summary(
        n=int(data.size),
        median=float(np.median(data)),
        mean=mean,
        std=std,
        cv=cv,
        ci_low=low,
        ci_high=high,
        ci_level=level,
    )


def differ_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann-Whitney U p-value that samples a and b come from one distribution of times:
    small when one is reliably faster, large when the noise hides which.  nan if either is empty."""
    if len(a) == 0 or len(b) == 0:
        return math.nan
    return float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)


def smallest_differ_p(n_a: int, n_b: int) -> float:
    """The smallest p-value differ_p can give for samples of these sizes (every value of one below
    every value of the other): with two runs a side it is 1/3, so no difference is ever found."""
    return min(1.0, 2 / math.comb(n_a + n_b, n_a))
