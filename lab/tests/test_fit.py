"""Line fits recover known per-block slopes, and the model turns slopes into costs."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pglab.experiments.flush_cost import options as opt
from pglab.experiments.flush_cost.analysis import build_model, round_significant
from pglab.experiments.flush_cost.records import PhaseRecord
from pglab.fit import FitError, fit_line

SIZES = [128, 256, 512, 1024, 2048, 4096]


@settings(max_examples=200)
@given(
    slope=st.floats(min_value=1e-6, max_value=10),
    intercept=st.floats(min_value=-5, max_value=5),
    sizes=st.lists(st.integers(min_value=1, max_value=2**20), min_size=2, max_size=12, unique=True),
)
def test_fit_recovers_exact_line(slope: float, intercept: float, sizes: list[int]) -> None:
    fit = fit_line(sizes, [intercept + slope * n for n in sizes])
    assert fit.slope == pytest.approx(slope, rel=1e-6, abs=1e-9)
    assert fit.intercept == pytest.approx(intercept, rel=1e-6, abs=1e-6 * max(1.0, slope * max(sizes)))
    assert fit.n_points == len(sizes)


@settings(max_examples=100)
@given(
    slope=st.floats(min_value=1e-4, max_value=1),
    noise=st.lists(st.floats(min_value=-0.01, max_value=0.01), min_size=len(SIZES), max_size=len(SIZES)),
)
def test_fit_recovers_slope_under_small_noise(slope: float, noise: list[float]) -> None:
    # Relative noise of at most 1% on every point moves the slope by at most a few percent.
    ys = [slope * n * (1 + e) for n, e in zip(SIZES, noise, strict=True)]
    fit = fit_line(SIZES, ys)
    assert fit.slope == pytest.approx(slope, rel=0.05)
    assert fit.r_squared > 0.99


def test_one_size_cannot_be_fitted() -> None:
    with pytest.raises(FitError):
        fit_line([128, 128], [1.0, 2.0])


def _synthetic_records(slopes: dict[str, float], allocated_per_block: float = 1.02) -> list[PhaseRecord]:
    records = []
    for n in SIZES:
        for iteration in (1, 2, 3):
            for phase, slope in slopes.items():
                records.append(PhaseRecord(
                    size=n, iteration=iteration, phase=phase, ms=0.01 + slope * n,
                    allocated_local_buffers=round(n * allocated_per_block),
                ))
    return records


@given(
    read=st.floats(min_value=1e-4, max_value=1e-1),
    write_ratio=st.floats(min_value=0.5, max_value=3),
    scan_ratio=st.floats(min_value=1e-4, max_value=0.1),
    random_ratio=st.floats(min_value=1, max_value=2),
)
def test_model_turns_slopes_into_cost_parameters(
    read: float, write_ratio: float, scan_ratio: float, random_ratio: float
) -> None:
    allocated_per_block = 1.02
    slopes = {
        opt.READ_SEQ: read,
        opt.WRITE_SEQ: read * write_ratio,
        # dry_write is fitted per allocated buffer, so its per-block slope includes that factor.
        opt.DRY_WRITE: read * scan_ratio * allocated_per_block,
        opt.WRITE_RANDOM: read * write_ratio * random_ratio,
        opt.RAW_WRITE: read * write_ratio / 2,
    }
    model = build_model(_synthetic_records(slopes, allocated_per_block), block_size=8192)
    assert model.write_page_cost == pytest.approx(write_ratio, rel=1e-3)
    assert model.buffer_scan_cost == pytest.approx(scan_ratio, rel=1e-2)
    assert model.random_write_penalty == pytest.approx(random_ratio, rel=1e-3)
    flush_mb_s = 8192 / (read * write_ratio / 1000) / 1e6
    assert model.throughput_mb_s["flush"] == pytest.approx(flush_mb_s, rel=1e-3)
    assert model.throughput_mb_s["flush_to_raw_write_ratio"] == pytest.approx(0.5, rel=1e-3)
    assert set(model.recommended) == {"pg_tempbuf.write_page_cost", "pg_tempbuf.buffer_scan_cost"}


def test_non_positive_cost_is_not_recommended() -> None:
    slopes = {opt.READ_SEQ: 0.003, opt.WRITE_SEQ: 0.004, opt.DRY_WRITE: -1e-7}
    model = build_model(_synthetic_records(slopes), block_size=8192)
    assert "pg_tempbuf.buffer_scan_cost" not in model.recommended
    assert "pg_tempbuf.buffer_scan_cost" in model.not_recommended
    assert model.recommended["pg_tempbuf.write_page_cost"] == round_significant(0.004 / 0.003)


def test_single_size_gives_no_parameters() -> None:
    records = [r for r in _synthetic_records({opt.READ_SEQ: 0.003, opt.WRITE_SEQ: 0.004}) if r.size == 128]
    model = build_model(records, block_size=8192)
    assert model.write_page_cost is None and model.recommended == {}


@pytest.mark.parametrize(("value", "expected"), [(1.23456, 1.23), (0.0012345, 0.00123), (123456.0, 123000.0)])
def test_round_significant(value: float, expected: float) -> None:
    assert round_significant(value) == pytest.approx(expected)
