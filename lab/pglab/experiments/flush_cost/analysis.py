"""From measured timings to cost parameters.

Each phase's per-size median time is fitted with a least-squares line against the number of
blocks (the dry flush against the allocated local buffers it scans).  The slopes are per-block
costs in ms; the cost parameters are ratios of slopes, in units of a sequential page read
(seq_page_cost = 1), as in the article:

    write_page_cost  = slope(write_seq) / slope(read_seq)
    buffer_scan_cost = slope(dry_write per allocated buffer) / slope(read_seq)
    read_page_cost   = (slope(scan_private) - slope(scan_resident)) / slope(read_seq)

and, beside it, the same difference for reads through an index (no setting of its own: the
planner prices index scans' private reads with read_page_cost; this shows whether that holds):

    index_read_page_cost = (slope(index_private) - slope(index_resident)) / slope(read_seq)
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pglab.experiments.flush_cost import options as opt
from pglab.experiments.flush_cost.records import PhaseRecord
from pglab.fit import FitError, LineFit, fit_line
from pglab.stats import Summary, summarize

X_BLOCKS = "blocks"
X_ALLOCATED = "allocated local buffers"


def times_by_size(records: Iterable[PhaseRecord], phase: str) -> dict[int, list[float]]:
    times: dict[int, list[float]] = defaultdict(list)
    for r in records:
        if r.phase == phase:
            times[r.size].append(r.ms)
    return dict(sorted(times.items()))


def summaries_by_phase(records: list[PhaseRecord]) -> dict[str, dict[int, Summary]]:
    """phase -> size -> summary of its times, phases in first-seen order."""
    phases = list(dict.fromkeys(r.phase for r in records))
    return {
        phase: {size: summarize(ms) for size, ms in times_by_size(records, phase).items()}
        for phase in phases
    }


def _median_allocated_before(records: list[PhaseRecord], phase: str) -> dict[int, float]:
    allocated: dict[int, list[int]] = defaultdict(list)
    for r in records:
        if r.phase == phase and r.allocated_local_buffers is not None:
            allocated[r.size].append(r.allocated_local_buffers)
    return {size: float(np.median(v)) for size, v in allocated.items()}


@dataclass(frozen=True)
class PhaseFit:
    phase: str
    x: str  # what the slope is per
    fit: LineFit | None
    problem: str | None = None  # why there is no fit

    def as_json(self) -> dict[str, Any]:
        if self.fit is None:
            return {"x": self.x, "fit": None, "problem": self.problem}
        return {
            "x": self.x,
            "slope_ms_per_unit": self.fit.slope,
            "intercept_ms": self.fit.intercept,
            "r_squared": self.fit.r_squared,
            "slope_stderr": self.fit.slope_stderr,
            "n_points": self.fit.n_points,
        }


def fit_phase(records: list[PhaseRecord], phase: str) -> PhaseFit:
    medians = {size: float(np.median(ms)) for size, ms in times_by_size(records, phase).items()}
    x_label = X_BLOCKS
    xs: dict[int, float] = {size: float(size) for size in medians}
    if phase == opt.DRY_WRITE:
        x_label = X_ALLOCATED
        xs = _median_allocated_before(records, phase)
    sizes = [s for s in medians if s in xs]
    if not sizes:
        return PhaseFit(phase, x_label, None, "not measured")
    try:
        fit = fit_line([xs[s] for s in sizes], [medians[s] for s in sizes])
    except FitError as exc:
        return PhaseFit(phase, x_label, None, str(exc))
    return PhaseFit(phase, x_label, fit)


def _slope_ratio(numerator: PhaseFit | None, denominator: PhaseFit | None) -> float | None:
    if numerator is None or denominator is None or numerator.fit is None or denominator.fit is None:
        return None
    if denominator.fit.slope <= 0:
        return None  # a non-positive per-block read cost cannot be a unit
    return numerator.fit.slope / denominator.fit.slope


def _slope_difference_ratio(
    minuend: PhaseFit | None, subtrahend: PhaseFit | None, denominator: PhaseFit | None
) -> float | None:
    """(slope(minuend) - slope(subtrahend)) / slope(denominator)."""
    if minuend is None or subtrahend is None or minuend.fit is None or subtrahend.fit is None:
        return None
    ratio = _slope_ratio(minuend, denominator)
    base = _slope_ratio(subtrahend, denominator)
    return None if ratio is None or base is None else ratio - base


def _per_size_median_ratios(records: list[PhaseRecord], top: str, bottom: str) -> dict[int, float]:
    tops = times_by_size(records, top)
    bottoms = times_by_size(records, bottom)
    ratios = {}
    for size in sorted(tops.keys() & bottoms.keys()):
        denominator = float(np.median(bottoms[size]))
        if denominator > 0:
            ratios[size] = float(np.median(tops[size])) / denominator
    return ratios


def _mb_per_s(fit: PhaseFit | None, block_size: int) -> float | None:
    """Throughput implied by a per-block slope, in MB/s (10^6 bytes)."""
    if fit is None or fit.fit is None or fit.fit.slope <= 0:
        return None
    return block_size / (fit.fit.slope / 1000.0) / 1e6


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b is not None and b > 0 else None


def round_significant(value: float, digits: int = 3) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


@dataclass
class FlushCostModel:
    block_size: int
    fits: dict[str, PhaseFit] = field(default_factory=dict)
    write_page_cost: float | None = None
    buffer_scan_cost: float | None = None
    read_page_cost: float | None = None
    index_read_page_cost: float | None = None  # for comparison with read_page_cost
    random_write_penalty: float | None = None  # slope(write_random) / slope(write_seq)
    random_read_penalty: float | None = None  # slope(read_random) / slope(read_seq)
    write_read_ratio_by_size: dict[int, float] = field(default_factory=dict)
    random_write_penalty_by_size: dict[int, float] = field(default_factory=dict)
    dry_write_share_by_size: dict[int, float] = field(default_factory=dict)  # dry_write / write_seq
    throughput_mb_s: dict[str, float | None] = field(default_factory=dict)

    @property
    def recommended(self) -> dict[str, float]:
        """The cost parameters that came out usable: a cost must be positive, so a parameter
        whose time did not grow with size over the measured range is left out."""
        settings = {}
        for name, value in (
            ("pg_tempbuf.write_page_cost", self.write_page_cost),
            ("pg_tempbuf.buffer_scan_cost", self.buffer_scan_cost),
            ("pg_tempbuf.read_page_cost", self.read_page_cost),
        ):
            if value is not None and math.isfinite(value) and value > 0:
                settings[name] = round_significant(value)
        return settings

    @property
    def not_recommended(self) -> dict[str, str]:
        """Parameters left out of `recommended`, and why."""
        reasons = {}
        for name, value, phase in (
            ("pg_tempbuf.write_page_cost", self.write_page_cost, opt.WRITE_SEQ),
            ("pg_tempbuf.buffer_scan_cost", self.buffer_scan_cost, opt.DRY_WRITE),
            ("pg_tempbuf.read_page_cost", self.read_page_cost, opt.SCAN_PRIVATE),
        ):
            if value is None:
                reasons[name] = f"no usable fit of {phase} and {opt.READ_SEQ} (need two sizes, positive read slope)"
            elif not value > 0:
                reasons[name] = f"measured {value:.3g}: {phase} time does not grow with size here"
        return reasons

    def as_json(self) -> dict[str, Any]:
        return {
            "block_size": self.block_size,
            "fit_method": "ordinary least squares with intercept over per-size medians",
            "fits": {phase: f.as_json() for phase, f in self.fits.items()},
            "write_page_cost": self.write_page_cost,
            "buffer_scan_cost": self.buffer_scan_cost,
            "read_page_cost": self.read_page_cost,
            "index_read_page_cost": self.index_read_page_cost,
            "random_write_penalty": self.random_write_penalty,
            "random_read_penalty": self.random_read_penalty,
            "write_read_ratio_by_size": self.write_read_ratio_by_size,
            "random_write_penalty_by_size": self.random_write_penalty_by_size,
            "dry_write_share_of_write_by_size": self.dry_write_share_by_size,
            "throughput_mb_s": self.throughput_mb_s,
            "recommended_settings": self.recommended,
            "not_recommended": self.not_recommended,
        }


def build_model(records: list[PhaseRecord], block_size: int, cold_reads: bool = False) -> FlushCostModel:
    """cold_reads: PostgreSQL's reads ran after dropping the page cache, so compare them with
    the raw cold read rather than the warm one."""
    measured = list(dict.fromkeys(r.phase for r in records))
    fits = {phase: fit_phase(records, phase) for phase in measured}
    model = FlushCostModel(block_size=block_size, fits=fits)
    model.write_page_cost = _slope_ratio(fits.get(opt.WRITE_SEQ), fits.get(opt.READ_SEQ))
    model.buffer_scan_cost = _slope_ratio(fits.get(opt.DRY_WRITE), fits.get(opt.READ_SEQ))
    model.read_page_cost = _slope_difference_ratio(
        fits.get(opt.SCAN_PRIVATE), fits.get(opt.SCAN_RESIDENT), fits.get(opt.READ_SEQ))
    model.index_read_page_cost = _slope_difference_ratio(
        fits.get(opt.INDEX_PRIVATE), fits.get(opt.INDEX_RESIDENT), fits.get(opt.READ_SEQ))
    model.random_write_penalty = _slope_ratio(fits.get(opt.WRITE_RANDOM), fits.get(opt.WRITE_SEQ))
    model.random_read_penalty = _slope_ratio(fits.get(opt.READ_RANDOM), fits.get(opt.READ_SEQ))
    model.write_read_ratio_by_size = _per_size_median_ratios(records, opt.WRITE_SEQ, opt.READ_SEQ)
    model.random_write_penalty_by_size = _per_size_median_ratios(records, opt.WRITE_RANDOM, opt.WRITE_SEQ)
    model.dry_write_share_by_size = _per_size_median_ratios(records, opt.DRY_WRITE, opt.WRITE_SEQ)
    flush = _mb_per_s(fits.get(opt.WRITE_SEQ), block_size)
    read = _mb_per_s(fits.get(opt.READ_SEQ), block_size)
    raw_write = _mb_per_s(fits.get(opt.RAW_WRITE), block_size)
    raw_read = _mb_per_s(fits.get(opt.RAW_READ), block_size)
    raw_read_cold = _mb_per_s(fits.get(opt.RAW_READ_COLD), block_size)
    model.throughput_mb_s = {
        "flush": flush,
        "read": read,
        "raw_write": raw_write,
        "raw_read": raw_read,
        "raw_read_cold": raw_read_cold,
        "flush_to_raw_write_ratio": _ratio(flush, raw_write),
        "read_to_raw_read_ratio": _ratio(read, raw_read_cold if cold_reads else raw_read),
    }
    return model
