"""The overhead experiment's measurements and what they add up to (result and summary types)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from pglab.experiments.overhead.options import INSTRUCTION_LIMIT, OverheadOptions


class Config(StrEnum):
    """How the counted backend has pg_tempbuf: not at all, by session_preload_libraries, by shared_preload."""

    NONE = "none"
    SESSION = "session"
    SHARED = "shared"


@dataclass
class CountPoint:
    """Instructions per query of one configuration in one round: (long run - short run) / extra queries."""

    round: int
    config: str
    shared_preload_libraries: str
    role: str
    queries: int  # the extra queries of the long run over the short one
    query_function: str  # exec_simple_query (or its address in a stripped binary): the caller of pg_plan_queries
    query_ir: float  # per query, inclusive in exec_simple_query: parse, plan, execute, send
    plan_ir: float  # pg_plan_queries
    execute_ir: float  # PortalRun
    backend_ir: float  # everything in PostgresMain: the above plus reading the query, idle-time work
    hook_ir: float  # pg_tempbuf's hooks: tb_planner minus standard_planner, tb_set_rel_pathlist, ...
    library_calls: int  # calls of pg_tempbuf's planner hook in the long run (0 when not loaded)


@dataclass
class TpsPoint:
    """One pgbench -S run of the A/B series."""

    index: int
    order: str  # "AB" (ABAB.., without first) or "BA"
    config: str
    role: str
    duration_s: int
    tps: float
    transactions: int
    latency_ms: float | None


@dataclass
class OverheadResult:
    options: OverheadOptions
    out_dir: Path | None = None
    counts: list[CountPoint] = field(default_factory=list)
    tps: list[TpsPoint] = field(default_factory=list)
    # pg_tempbuf's functions in the first round's shared-preload backend, per query: name -> (self, inclusive)
    library_functions: dict[str, tuple[float, float]] = field(default_factory=dict)
    # Functions outside pg_tempbuf that its functions call, per query: "caller -> callee" -> Ir
    library_callees: dict[str, float] = field(default_factory=dict)
    temp: TempSessionsResult = field(default_factory=lambda: TempSessionsResult())
    server: dict[str, Any] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    valgrind: str = ""
    pgbench: str = ""
    count_note: str = ""
    notes: list[str] = field(default_factory=list)
    command: str = ""
    started: str = ""
    finished: str = ""
    wall_s: float = 0.0

    @property
    def version_num(self) -> int:
        return int(self.server.get("version_num") or 0)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator and not math.isnan(denominator) else math.nan


METRICS = ("query_ir", "plan_ir", "execute_ir", "backend_ir", "hook_ir")


@dataclass(frozen=True)
class CountSummary:
    config: str
    rounds: int
    median: dict[str, float]  # metric -> median per query over rounds
    spread: dict[str, float]  # metric -> (max - min) / median over rounds
    ratio: dict[str, float]  # metric -> median / the none configuration's median (not for hook_ir)


def count_summaries(counts: list[CountPoint]) -> list[CountSummary]:
    by_config: dict[str, list[CountPoint]] = {}
    for point in counts:
        by_config.setdefault(point.config, []).append(point)
    base = by_config.get(Config.NONE.value, [])
    base_median = {m: _median([getattr(p, m) for p in base]) for m in METRICS}
    summaries = []
    for config in Config:
        points = by_config.get(config.value)
        if not points:
            continue
        median = {m: _median([getattr(p, m) for p in points]) for m in METRICS}
        spread = {m: _ratio(max(getattr(p, m) for p in points) - min(getattr(p, m) for p in points), median[m])
                  for m in METRICS}
        ratio = {m: _ratio(median[m], base_median[m]) for m in METRICS if m != "hook_ir"}
        summaries.append(CountSummary(config.value, len(points), median, spread, ratio))
    return summaries


def instruction_ratio(counts: list[CountPoint], config: Config = Config.SHARED) -> float:
    """The headline: instructions per query (exec_simple_query) with the library / without; nan if unmeasured."""
    for summary in count_summaries(counts):
        if summary.config == config.value:
            return summary.ratio.get("query_ir", math.nan)
    return math.nan


def within_limit(ratio: float) -> bool | None:
    return None if math.isnan(ratio) else ratio <= INSTRUCTION_LIMIT


@dataclass(frozen=True)
class TpsSummary:
    """Medians of the A/B series: all runs, each order alone, and the paired (same-pair) ratios."""

    without: float
    with_library: float
    ratio: float
    ratio_by_order: dict[str, float]
    paired_ratios: list[float]
    runs: int


def tps_summary(points: list[TpsPoint]) -> TpsSummary | None:
    if not points:
        return None
    def med(config: str, order: str | None = None) -> float:
        return _median([p.tps for p in points if p.config == config and (order is None or p.order == order)])
    without, loaded = med(Config.NONE.value), med(Config.SESSION.value)
    orders = sorted({p.order for p in points})
    by_order = {o: _ratio(med(Config.SESSION.value, o), med(Config.NONE.value, o)) for o in orders}
    paired: list[float] = []
    for order in orders:
        run = sorted((p for p in points if p.order == order), key=lambda p: p.index)
        for first, second in zip(run[0::2], run[1::2], strict=False):
            a, b = (first, second) if first.config == Config.NONE.value else (second, first)
            paired.append(_ratio(b.tps, a.tps))
    return TpsSummary(without, loaded, _ratio(loaded, without), by_order, paired, len(points))


# -- sessions that have temporary tables (issue 20) --------------------------------------------

POINT_PART = "point"
STEADY = "steady"  # the census of the local buffer pool is current: planning reuses it
COLD = "cold"  # the first planning after the pool changed (an UPDATE dirtied a page): one census
ON = "on"
OFF = "off"
UNLOGGED = "unlogged"
TPCH_CONFIGS = (UNLOGGED, OFF, ON)


@dataclass
class PlanningPoint:
    """One EXPLAIN (SUMMARY) of the point query in a session with temp_buffers."""

    temp_buffers: str
    phase: str  # STEADY or COLD
    config: str  # pg_tempbuf.parallel_scan: ON or OFF
    repetition: int
    planning_ms: float


@dataclass
class PlanningCount:
    """Instructions per planning of the point query (callgrind, one backend per temp_buffers): the inclusive
    cost of the EXPLAIN's calls of pg_plan_query in one phase / the plannings of that phase."""

    temp_buffers: str
    phase: str
    config: str
    plannings: int
    planning_ir: float
    census_calls: int  # take_census calls in the phase (0: none; = plannings: one per planning)


@dataclass
class TpchPlanningPoint:
    """One EXPLAIN (SUMMARY) of a TPC-H query in one configuration."""

    query: str
    config: str  # UNLOGGED (stock planner, pg_tempbuf off), or temp tables with parallel_scan OFF / ON
    repetition: int
    planning_ms: float


@dataclass
class TempSessionsResult:
    points: list[PlanningPoint] = field(default_factory=list)
    counts: list[PlanningCount] = field(default_factory=list)
    tpch: list[TpchPlanningPoint] = field(default_factory=list)
    tpch_bytes: dict[str, int] = field(default_factory=dict)  # "temp" / "unlogged" -> bytes with indexes
    tpch_temp_buffers: str = ""
    point_table_bytes: int = 0
    count_note: str = ""
    notes: list[str] = field(default_factory=list)


def alternate(configs: tuple[str, ...], repetition: int) -> tuple[str, ...]:
    """Each repetition starts at the next configuration: (a, b), (b, a), ... ; (a, b, c), (b, c, a), ..."""
    shift = repetition % len(configs)
    return configs[shift:] + configs[:shift]


@dataclass(frozen=True)
class PointSummary:
    temp_buffers: str
    phase: str
    plannings: int  # per configuration
    median_on_ms: float
    median_off_ms: float
    ratio: float  # on / off
    on_ir: float | None  # callgrind instructions per planning, when counted
    off_ir: float | None
    ir_ratio: float | None


def point_summaries(points: list[PlanningPoint], counts: list[PlanningCount]) -> list[PointSummary]:
    """Per temp_buffers (in run order) and phase (steady, then cold): medians on / off and their ratio."""
    keys = list(dict.fromkeys((p.temp_buffers, p.phase) for p in points))
    keys += [k for k in dict.fromkeys((c.temp_buffers, c.phase) for c in counts) if k not in keys]
    order = {STEADY: 0, COLD: 1}
    buffers = list(dict.fromkeys(k[0] for k in keys))
    keys.sort(key=lambda k: (buffers.index(k[0]), order.get(k[1], 2)))
    summaries = []
    for temp_buffers, phase in keys:
        def med(config: str, tb: str = temp_buffers, ph: str = phase) -> float:
            return _median([p.planning_ms for p in points if (p.temp_buffers, p.phase, p.config) == (tb, ph, config)])

        def ir(config: str, tb: str = temp_buffers, ph: str = phase) -> float | None:
            values = [c.planning_ir for c in counts if (c.temp_buffers, c.phase, c.config) == (tb, ph, config)]
            return _median(values) if values else None

        on, off = med(ON), med(OFF)
        on_ir, off_ir = ir(ON), ir(OFF)
        summaries.append(PointSummary(
            temp_buffers=temp_buffers, phase=phase,
            plannings=sum(1 for p in points if (p.temp_buffers, p.phase, p.config) == (temp_buffers, phase, ON)),
            median_on_ms=on, median_off_ms=off, ratio=_ratio(on, off), on_ir=on_ir, off_ir=off_ir,
            ir_ratio=_ratio(on_ir, off_ir) if on_ir is not None and off_ir is not None else None))
    return summaries


@dataclass(frozen=True)
class TpchPlanningSummary:
    queries: tuple[str, ...]
    median_ms: dict[str, dict[str, float]]  # query -> config -> median planning ms
    sum_ms: dict[str, float]  # config -> sum over the queries of the medians
    on_vs_unlogged: float
    on_vs_off: float
    off_vs_unlogged: float

    @property
    def within_limit(self) -> bool | None:
        from pglab.experiments.overhead.options import TPCH_PLANNING_LIMIT

        return None if math.isnan(self.on_vs_unlogged) else self.on_vs_unlogged <= TPCH_PLANNING_LIMIT


def tpch_planning_summary(points: list[TpchPlanningPoint]) -> TpchPlanningSummary | None:
    """Median planning time per query and configuration, their sums over the queries, and the ratios of the
    sums; only queries measured in every configuration count in the sums."""
    if not points:
        return None
    queries = tuple(sorted({p.query for p in points}))
    configs = [c for c in TPCH_CONFIGS if any(p.config == c for p in points)]
    median = {q: {c: _median([p.planning_ms for p in points if p.query == q and p.config == c]) for c in configs}
              for q in queries}
    complete = [q for q in queries if all(not math.isnan(median[q][c]) for c in configs)]
    sums = {c: sum(median[q][c] for q in complete) for c in configs}
    return TpchPlanningSummary(
        queries=queries, median_ms=median, sum_ms=sums,
        on_vs_unlogged=_ratio(sums.get(ON, math.nan), sums.get(UNLOGGED, math.nan)),
        on_vs_off=_ratio(sums.get(ON, math.nan), sums.get(OFF, math.nan)),
        off_vs_unlogged=_ratio(sums.get(OFF, math.nan), sums.get(UNLOGGED, math.nan)))


def explain_planning_ms(explain: Any) -> float:
    """'Planning Time' of an EXPLAIN (SUMMARY, FORMAT JSON) result: [{"Plan": ..., "Planning Time": ms}]."""
    top = explain[0] if isinstance(explain, list) else explain
    if "Planning Time" not in top:
        raise ValueError("EXPLAIN output without 'Planning Time' (was SUMMARY on?)")
    return float(top["Planning Time"])
