"""Result types of `pglab regret`, the ratios of every item, and their distribution.

The ratio convention is temp-shapes': median(reference) / median(on), > 1 when pg_tempbuf on is
faster, < 1 when it is slower (the regret).  The reference is pg_tempbuf.parallel_scan = off
(the stock plans over the same temp tables) or the UNLOGGED copy of the same rows under stock
parallel query.  The issue's "on/off <= 1.05" (time over time) is a ratio here >= 1/1.05.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pglab.errors import LabError
from pglab.experiments.regret.options import RegretOptions
from pglab.experiments.temp_shapes import analysis as shapes_an
from pglab.runlog import RecordedRun

TPCH_PART = "tpch"
SESSIONS_PART = "sessions"
SHAPES_PART = "shapes"
PARTS = (TPCH_PART, SESSIONS_PART, SHAPES_PART)
OFF = "off"
ON = "on"
UNLOGGED = "unlogged"
REFERENCES = (OFF, UNLOGGED)
# Issue 28's acceptance: TPC-H every query >= 0.9x off and >= 0.9x the UNLOGGED copy in every load;
# loops of EXECUTEd statements on/off <= 1.05 in time, i.e. a ratio off/on >= 1/1.05.
MIN_TPCH_RATIO = 0.9
MAX_SESSION_SLOWDOWN = 1.05
MIN_SESSION_RATIO = 1 / MAX_SESSION_SLOWDOWN
# The distribution counts ratios below these.
THRESHOLDS = (0.9, 0.95)


def ratio(reference_ms: float | None, on_ms: float | None) -> float:
    """median(reference) / median(on); nan when either is missing or on is 0."""
    if reference_ms is None or on_ms is None or on_ms <= 0 or math.isnan(reference_ms) or math.isnan(on_ms):
        return math.nan
    return reference_ms / on_ms


@dataclass(frozen=True)
class Ratio:
    """One item's ratio against one reference: a TPC-H query in one load, a session loop, a shape."""

    part: str
    item: str
    load: int | None  # TPC-H: the load (1..loads); else None
    reference: str  # "off" or "unlogged"
    value: float  # median(reference) / median(on)
    reference_ms: float
    on_ms: float

    @property
    def where(self) -> str:
        return f"{self.part} {self.item}" + (f" (load {self.load})" if self.load is not None else "")


@dataclass(frozen=True)
class Distribution:
    """The distribution of a set of ratios: the worst, low quantiles, the middle, the tail counts."""

    count: int
    worst: float  # the minimum
    p10: float
    median: float
    geomean: float
    below: dict[str, int]  # "0.9" -> how many ratios are below 0.9
    worst_where: str  # the item with the worst ratio

    def as_json(self) -> dict[str, Any]:
        return {"count": self.count, "worst": self.worst, "p10": self.p10, "median": self.median,
                "geomean": self.geomean, "below": dict(self.below), "worst_where": self.worst_where}


def geomean(values: Sequence[float]) -> float:
    finite = [v for v in values if math.isfinite(v) and v > 0]
    return math.exp(statistics.fmean(math.log(v) for v in finite)) if finite else math.nan


def distribution(ratios: Sequence[Ratio]) -> Distribution:
    """The worst ratio (and where), p10 (linear interpolation), median, geometric mean, and how many are
    below each of THRESHOLDS; ratios that are nan (a missing median) are left out."""
    finite = [r for r in ratios if math.isfinite(r.value)]
    values = [r.value for r in finite]
    if not values:
        return Distribution(0, math.nan, math.nan, math.nan, math.nan, {f"{t:g}": 0 for t in THRESHOLDS}, "")
    worst = min(finite, key=lambda r: r.value)
    return Distribution(
        count=len(values), worst=worst.value, p10=float(np.percentile(values, 10)),
        median=float(np.median(values)), geomean=geomean(values),
        below={f"{t:g}": sum(1 for v in values if v < t) for t in THRESHOLDS},
        worst_where=worst.where,
    )


@dataclass(frozen=True)
class LoopTiming:
    """One timed call of a session loop: `iterations` EXECUTEd statements."""

    item: str
    config: str  # "on" or "off"
    round: int
    ms: float
    iterations: int

    @property
    def us_per_statement(self) -> float:
        return self.ms * 1000.0 / self.iterations


@dataclass
class SessionLoop:
    """Everything measured for one session loop."""

    item: str
    title: str
    call: str  # the SQL that was timed
    statement: str = ""  # the format() string of the statement it EXECUTEs
    timings: list[LoopTiming] = field(default_factory=list)
    results: dict[str, int] = field(default_factory=dict)  # config -> the function's result (a checksum)

    def median_ms(self, config: str) -> float:
        values = [t.ms for t in self.timings if t.config == config]
        return statistics.median(values) if values else math.nan

    @property
    def results_equal(self) -> bool:
        return len(set(self.results.values())) == 1 and len(self.results) == 2


@dataclass
class TpchLoad:
    """One load of the temporary TPC-H tables and its 22 (or fewer) queries, as temp-shapes measures them."""

    load: int
    measured: list[shapes_an.Measured] = field(default_factory=list)
    seconds: float = 0.0  # the load's wall time (drop, COPY, keys, VACUUM ANALYZE)


def summaries(measured: Sequence[shapes_an.Measured], acceptance: bool = False) -> list[shapes_an.ItemSummary]:
    """temp-shapes' per-item summary (medians, plans, result digests) against the UNLOGGED copy."""
    return [shapes_an.summarize(m, UNLOGGED, acceptance) for m in measured]


def item_ratios(part: str, items: Sequence[shapes_an.ItemSummary], load: int | None = None) -> list[Ratio]:
    """on vs off and on vs UNLOGGED of each temp-shapes summary."""
    found = []
    for s in items:
        on_ms = s.median_ms.get(ON)
        for reference in REFERENCES:
            reference_ms = s.median_ms.get(reference)
            if reference_ms is None or on_ms is None:
                continue
            found.append(Ratio(part, s.item, load, reference, ratio(reference_ms, on_ms), reference_ms, on_ms))
    return found


def session_ratios(loops: Sequence[SessionLoop]) -> list[Ratio]:
    return [Ratio(SESSIONS_PART, loop.item, None, OFF, ratio(loop.median_ms(OFF), loop.median_ms(ON)),
                  loop.median_ms(OFF), loop.median_ms(ON)) for loop in loops]


@dataclass(frozen=True)
class Baseline:
    """The TPC-H geomeans of an earlier run ("today" in the issue's "geomean not lower than today")."""

    source: str  # the file
    vs_off: float  # geomean over its queries (and loads) of median(off) / median(on)
    vs_unlogged: float
    count: int  # the ratios behind each geomean


def baseline_from(data: Any, source: str) -> Baseline:
    """The geomeans of a `pglab regret` results.json (every load) or a `pglab temp-shapes --tpch-all-temp` one."""
    if not isinstance(data, dict):
        raise LabError(f"--baseline {source}: not a results.json object")
    pairs: list[tuple[float, float]] = []
    if isinstance(data.get("tpch"), list):  # pglab regret
        pairs = [(float(i["vs_off"]), float(i["vs_unlogged"])) for load in data["tpch"] for i in load.get("items", [])
                 if i.get("vs_off") is not None and i.get("vs_unlogged") is not None]
    elif isinstance(data.get("items"), list):  # pglab temp-shapes --tpch-all-temp
        pairs = [(float(i["speedup_on_vs_off"]), float(i["on_vs_reference"])) for i in data["items"]
                 if i.get("part") == TPCH_PART and i.get("reference") == UNLOGGED
                 and i.get("speedup_on_vs_off") is not None and i.get("on_vs_reference") is not None]
    if not pairs:
        raise LabError(f"--baseline {source}: no TPC-H all-temp ratios in it (a results.json of pglab regret or of "
                       "pglab temp-shapes --tpch-all-temp)")
    return Baseline(source, geomean([p[0] for p in pairs]), geomean([p[1] for p in pairs]), len(pairs))


def read_baseline(path: Path) -> Baseline:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LabError(f"--baseline {path}: cannot read: {exc}") from exc
    try:
        return baseline_from(data, str(path))
    except (KeyError, TypeError, ValueError) as exc:
        raise LabError(f"--baseline {path}: unexpected contents ({exc})") from exc


@dataclass
class RegretRun(RecordedRun):
    options: RegretOptions
    out_dir: Path = Path(".")
    loads: list[TpchLoad] = field(default_factory=list)
    loops: list[SessionLoop] = field(default_factory=list)
    shapes: list[shapes_an.Measured] = field(default_factory=list)
    table_sizes: dict[str, int] = field(default_factory=dict)  # relation -> bytes
    part_seconds: dict[str, float] = field(default_factory=dict)
    tpch_temp_buffers: str = ""
    notes: list[str] = field(default_factory=list)
    baseline: Baseline | None = None

    def tpch_summaries(self) -> dict[int, list[shapes_an.ItemSummary]]:
        return {load.load: summaries(load.measured) for load in self.loads}

    def shape_summaries(self) -> list[shapes_an.ItemSummary]:
        return summaries(self.shapes)

    def ratios(self) -> list[Ratio]:
        """Every ratio of the run: TPC-H per load, the session loops, the shapes."""
        found = []
        for load, items in self.tpch_summaries().items():
            found += item_ratios(TPCH_PART, items, load)
        found += session_ratios(self.loops)
        found += item_ratios(SHAPES_PART, self.shape_summaries())
        return found

    def mismatches(self) -> list[str]:
        """Items whose configurations returned different rows (or loop results)."""
        bad = [f"tpch {s.item} (load {load}: {', '.join(s.mismatches) or 'no off result'})"
               for load, items in self.tpch_summaries().items() for s in items if not s.results_equal]
        bad += [f"sessions {loop.item} ({loop.results})" for loop in self.loops if not loop.results_equal]
        bad += [f"shapes {s.item} ({', '.join(s.mismatches) or 'no off result'})"
                for s in self.shape_summaries() if not s.results_equal]
        return bad


# A plan of ours "lost" when off ran faster than on by at least these (ratio off/on below them).
LOSS_THRESHOLDS = (1.0, 0.95, 0.9)


@dataclass(frozen=True)
class Decisions:
    """How often pg_tempbuf on chose another plan than off (TPC-H per load, and the shapes), and how often
    that plan then ran slower than off's: issue 28's "how often a plan of ours was chosen and lost"."""

    items: int  # TPC-H (query, load) pairs and shapes with both plans and times
    chosen: int  # of them, on's plan differs from off's
    lost: dict[str, int]  # "0.95" -> chosen items whose ratio off/on is below 0.95
    worst: float  # the lowest ratio off/on among the chosen
    worst_where: str

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def judged_items(run: RegretRun) -> list[tuple[int | None, shapes_an.ItemSummary]]:
    """The items whose plans and times decisions and the model's error judge: TPC-H per load, then the shapes
    (load None)."""
    pairs: list[tuple[int | None, shapes_an.ItemSummary]] = [
        (load, s) for load, items in run.tpch_summaries().items() for s in items]
    return pairs + [(None, s) for s in run.shape_summaries()]


def decisions(run: RegretRun) -> Decisions:
    return decisions_of(judged_items(run))


def decisions_of(pairs: Sequence[tuple[int | None, shapes_an.ItemSummary]]) -> Decisions:
    """Decisions over (TPC-H load or None for a shape, item summary) pairs."""
    judged = []
    for load, s in pairs:
        on, off = s.plans.get(ON), s.plans.get(OFF)
        value = ratio(s.median_ms.get(OFF), s.median_ms.get(ON))
        if on is None or off is None or not math.isfinite(value):
            continue
        judged.append((load, s, value, on.outline != off.outline))
    chosen = [(load, s, value) for load, s, value, differs in judged if differs]
    worst = min(chosen, key=lambda c: c[2], default=None)
    return Decisions(
        items=len(judged), chosen=len(chosen),
        lost={f"{t:g}": sum(1 for c in chosen if c[2] < t) for t in LOSS_THRESHOLDS},
        worst=worst[2] if worst else math.nan,
        worst_where=(f"{TPCH_PART if worst[0] is not None else SHAPES_PART} {worst[1].item}"
                     + (f" (load {worst[0]})" if worst[0] is not None else "")) if worst else "")


@dataclass(frozen=True)
class ModelError:
    """The cost model's error on the plans of ours that were chosen: for each TPC-H item and shape whose
    plan with pg_tempbuf on differs from off's, the planner's predicted speedup (off's plan cost / on's) beside
    the measured one (off's time / on's), and their quotient measured / predicted (1: the model was right; below
    1: the plan of ours was slower than priced)."""

    count: int
    quotients: list[float]  # measured / predicted, sorted
    p10: float
    median: float
    p90: float
    # chosen plans whose predicted advantage was below these, and of them how many lost (measured < 1)
    near: dict[str, tuple[int, int]]

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


NEAR_MARGINS = (0.05, 0.1, 0.2)


def model_error(run: RegretRun) -> ModelError:
    return model_error_of([s for _, s in judged_items(run)])


def model_error_of(items: Sequence[shapes_an.ItemSummary]) -> ModelError:
    found: list[tuple[float, float]] = []  # (predicted, measured)
    for s in items:
        on, off = s.plans.get(ON), s.plans.get(OFF)
        if on is None or off is None or on.outline == off.outline:
            continue
        predicted = ratio(off.total_cost, on.total_cost)
        measured = ratio(s.median_ms.get(OFF), s.median_ms.get(ON))
        if math.isfinite(predicted) and math.isfinite(measured) and predicted > 0:
            found.append((predicted, measured))
    quotients = sorted(m / p for p, m in found)
    near = {f"{t:g}": (sum(1 for p, _ in found if p < 1 + t), sum(1 for p, m in found if p < 1 + t and m < 1))
            for t in NEAR_MARGINS}
    if not quotients:
        return ModelError(0, [], math.nan, math.nan, math.nan, near)
    return ModelError(len(quotients), quotients, float(np.percentile(quotients, 10)),
                      float(np.median(quotients)), float(np.percentile(quotients, 90)), near)


@dataclass(frozen=True)
class Check:
    """One acceptance line of issue 28 and whether this run meets it."""

    what: str
    passed: bool
    detail: str


def acceptance(run: RegretRun) -> list[Check]:
    checks = []
    if run.loops:
        session = session_ratios(run.loops)
        slow = [r for r in session if not r.value >= MIN_SESSION_RATIO]
        worst = min((r.value for r in session), default=math.nan)
        checks.append(Check(
            f"session loops: on/off time <= {MAX_SESSION_SLOWDOWN} (ratio off/on >= {MIN_SESSION_RATIO:.3f}), "
            f"medians of {run.options.rounds} interleaved rounds",
            not slow,
            f"worst {worst:.3f}" + (": " + ", ".join(f"{r.item} {r.value:.3f}" for r in slow) if slow else "")))
    if run.loads:
        tpch = [r for load, items in run.tpch_summaries().items() for r in item_ratios(TPCH_PART, items, load)]
        for reference in REFERENCES:
            these = [r for r in tpch if r.reference == reference]
            slow = [r for r in these if not r.value >= MIN_TPCH_RATIO]
            worst = min((r.value for r in these), default=math.nan)
            checks.append(Check(
                f"TPC-H, {len(run.loads)} loads x {run.options.repetitions} runs: every query >= {MIN_TPCH_RATIO}x "
                f"{'off' if reference == OFF else 'the UNLOGGED copy'} in every load",
                not slow, f"worst {worst:.3f}" + (": " + ", ".join(f"{r.item}/{r.load} {r.value:.3f}" for r in slow)
                                                    if slow else "")))
        if run.baseline is not None:
            ours_off = geomean([r.value for r in tpch if r.reference == OFF])
            ours_unl = geomean([r.value for r in tpch if r.reference == UNLOGGED])
            b = run.baseline
            checks.append(Check(
                f"TPC-H geomean vs off not lower than the baseline's ({b.source})", ours_off >= b.vs_off,
                f"ours {ours_off:.3f} vs {b.vs_off:.3f} over {b.count} ratios (vs UNLOGGED: ours {ours_unl:.3f}, "
                f"baseline {b.vs_unlogged:.3f})"))
    return checks
