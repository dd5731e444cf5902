"""Summary statistics: median, CV, order-statistic CI of the median."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pglab.stats import differ_p, median_ci, smallest_differ_p, summarize

timings = st.lists(st.floats(min_value=1e-3, max_value=1e4, allow_nan=False), min_size=1, max_size=60)


def test_basic_summary() -> None:
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0, 2.5])
    assert s.n == 6
    assert s.median == 2.75
    assert s.mean == pytest.approx(112.5 / 6)
    assert s.cv == pytest.approx(np.std([1, 2, 3, 4, 100, 2.5], ddof=1) / (112.5 / 6))


def test_ci_needs_six_values_for_95_percent() -> None:
    assert math.isnan(median_ci([1.0, 2.0, 3.0, 4.0, 5.0])[0])
    assert median_ci([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) == (1.0, 6.0)  # coverage 1 - 2/64


def test_single_value() -> None:
    s = summarize([3.0])
    assert s.median == 3.0 and math.isnan(s.cv) and not s.has_ci


def test_empty_is_an_error() -> None:
    with pytest.raises(ValueError):
        summarize([])


@given(timings)
def test_ci_brackets_the_median_with_observed_values(values: list[float]) -> None:
    s = summarize(values)
    if s.has_ci:
        assert s.ci_low <= s.median <= s.ci_high
        assert s.ci_low in values and s.ci_high in values
    else:
        assert len(values) < 6


@given(timings, st.floats(min_value=0.5, max_value=100))
def test_scaling_scales_median_and_keeps_cv(values: list[float], factor: float) -> None:
    a, b = summarize(values), summarize([v * factor for v in values])
    assert b.median == pytest.approx(a.median * factor, rel=1e-9)
    if len(values) > 1 and not math.isnan(a.cv):
        assert b.cv == pytest.approx(a.cv, rel=1e-6, abs=1e-12)


def test_differ_p_separates_disjoint_samples_and_not_overlapping_ones() -> None:
    fast = [10.0, 10.5, 11.0, 10.2, 10.8, 10.1, 10.9]
    slow = [20.0, 21.0, 19.5, 20.5, 22.0, 19.8, 20.2]
    assert differ_p(fast, slow) < 0.01
    mixed = [10.3, 20.1, 10.7, 19.9, 10.4, 20.3, 15.0]
    assert differ_p(fast + slow, mixed) > 0.5
    assert math.isnan(differ_p([], slow))


def test_smallest_differ_p_is_what_the_test_gives_for_disjoint_samples() -> None:
    assert smallest_differ_p(2, 2) == pytest.approx(1 / 3)
    assert differ_p([1.0, 2.0], [3.0, 4.0]) == pytest.approx(smallest_differ_p(2, 2))
    assert differ_p([1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]) == pytest.approx(smallest_differ_p(3, 4))
    assert smallest_differ_p(7, 14) < 1e-4
