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
