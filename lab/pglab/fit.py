"""Straight-line fits of time against size."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class LineFit:
    """y = intercept + slope * x by ordinary least squares."""

    slope: float
    intercept: float
    r_squared: float
    slope_stderr: float
    n_points: int

    def predict(self, x: float) -> float:
        return self.intercept + self.slope * x


class FitError(ValueError):
    """The points cannot determine a line (fewer than two distinct x)."""


def fit_line(x: Sequence[float], y: Sequence[float]) -> LineFit:
    """Least-squares line with intercept through (x, y)."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    if xs.shape != ys.shape:
        raise FitError(f"x and y differ in length ({xs.size} vs {ys.size})")
    if np.unique(xs).size < 2:
        raise FitError("need at least two distinct sizes to fit a line")
    result = stats.linregress(xs, ys)
    # With exactly two points the fit is exact and linregress reports stderr 0.
    return LineFit(
        slope=float(result.slope),
        intercept=float(result.intercept),
        r_squared=float(result.rvalue) ** 2,
        slope_stderr=float(result.stderr),
        n_points=int(xs.size),
    )
