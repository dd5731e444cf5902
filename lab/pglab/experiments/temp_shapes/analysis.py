"""Result and summary types of `pglab temp-shapes`: plan shapes, medians, speedups, ratios."""

from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pglab.experiments.temp_shapes.options import TempShapesOptions
from pglab.experiments.temp_shapes.workload import Config
from pglab.runlog import RecordedRun

SHAPES_PART = "shapes"
TPCH_PART = "tpch"
# pg_tempbuf's scan nodes (Custom Plan Provider in EXPLAIN).
TEMP_SCAN_PROVIDERS = ("Temp Seq Scan", "Temp Index Scan", "Temp Index Only Scan", "Temp Bitmap Heap Scan")
GATHER_NODES = ("Gather", "Gather Merge")
# Issue 9's acceptance thresholds.
MIN_SPEEDUP_VS_OFF = 0.9
MIN_RATIO_VS_UNLOGGED = 0.9


def digest(rows: Sequence[tuple[Any, ...]]) -> str:
    """Order-independent digest of a result set (the rows' text forms, sorted)."""
    return hashlib.sha256("\n".join(sorted(repr(r) for r in rows)).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Timing:
    part: str  # "shapes" or "tpch"
    item: str  # shape name or TPC-H query
    config: str
    repetition: int
    ms: float


@dataclass(frozen=True)
class PlanShape:
    """What EXPLAIN (ANALYZE, FORMAT JSON) says about the plan the planner chose."""

    gather: bool  # a Gather or Gather Merge node
    gathers: int  # how many (an InitPlan or SubPlan can have its own)
    workers_planned: int
    workers_launched: int
    temp_scans: int  # pg_tempbuf's Custom Scan nodes (Temp Seq Scan, Temp Index Scan, ...)
    parallel_temp_scans: int  # those of them parallel aware (partial)
    leader_only: bool  # a temp scan that ran in the leader alone (EXPLAIN's "Leader Only")
    scans: tuple[str, ...]  # "Parallel Seq Scan on big", "Custom Scan (Temp Seq Scan) on tmp_keys", ...
    outline: str  # the node tree in one line
    execution_ms: float
    total_cost: float = math.nan  # the planner's estimate for the whole plan
    pages_flushed: int = 0  # local pages our scans wrote before reading (EXPLAIN's Pages Flushed)

    @property
    def parallel(self) -> bool:
        return self.gather and self.workers_launched > 0

    @property
    def label(self) -> str:
        if not self.gather:
            return "serial"
        gathers = f"{self.gathers} Gathers" if self.gathers > 1 else "Gather"
        return f"{gathers} ({self.workers_launched}/{self.workers_planned} workers)" + \
            (", leader only" if self.leader_only else "")


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []) or []:
        yield from _nodes(child)


def node_label(node: dict[str, Any]) -> str:
    kind = str(node.get("Node Type", "?"))
    if kind == "Custom Scan":
        kind = f"Custom Scan ({node.get('Custom Plan Provider', '?')})"
    if node.get("Parallel Aware") and not kind.startswith("Parallel "):
        kind = "Parallel " + kind
    mode = node.get("Partial Mode")
    if kind == "Aggregate" and mode and mode != "Simple":
        kind = f"{mode} Aggregate"
    relation = node.get("Relation Name") or node.get("CTE Name") or node.get("Subplan Name")
    return f"{kind} on {relation}" if relation and "Scan" in kind else kind


def _outline(node: dict[str, Any]) -> str:
    label = node_label(node)
    if node.get("Node Type") in GATHER_NODES:
        label += f"[{node.get('Workers Launched', 0)}/{node.get('Workers Planned', 0)}]"
    children = node.get("Plans", []) or []
    if not children:
        return label
    return label + " (" + ", ".join(_outline(c) for c in children) + ")"


def plan_shape(explain: Any) -> PlanShape:
    """The shape of an EXPLAIN (ANALYZE, FORMAT JSON) result: [{"Plan": {...}, ...}]."""
    top = explain[0] if isinstance(explain, list) else explain
    root = top["Plan"]
    nodes = list(_nodes(root))
    temp = [n for n in nodes if n.get("Custom Plan Provider") in TEMP_SCAN_PROVIDERS]
    return PlanShape(
        gather=any(n.get("Node Type") in GATHER_NODES for n in nodes),
        gathers=sum(1 for n in nodes if n.get("Node Type") in GATHER_NODES),
        workers_planned=sum(int(n.get("Workers Planned", 0)) for n in nodes if n.get("Node Type") in GATHER_NODES),
        workers_launched=sum(int(n.get("Workers Launched", 0)) for n in nodes
                             if n.get("Node Type") in GATHER_NODES),
        temp_scans=len(temp),
        parallel_temp_scans=sum(1 for n in temp if n.get("Parallel Aware")),
        leader_only=any("Leader Only" in n for n in temp),
        scans=tuple(node_label(n) for n in nodes if "Scan" in str(n.get("Node Type", ""))),
        outline=_outline(root),
        execution_ms=float(top.get("Execution Time", 0.0)),
        total_cost=float(root.get("Total Cost", math.nan)),
        pages_flushed=sum(int(n.get("Pages Flushed", 0)) for n in temp),
    )


@dataclass(frozen=True)
class PlanRecord:
    part: str
    item: str
    config: str
    shape: PlanShape
    explain: Any  # the raw JSON plan


@dataclass(frozen=True)
class ResultCheck:
    part: str
    item: str
    config: str
    digest: str
    rows: int


@dataclass
class Measured:
    """Everything measured for one shape or TPC-H query."""

    part: str
    item: str
    title: str
    sql: dict[str, str]  # config -> the query text it ran
    timings: list[Timing] = field(default_factory=list)
    plans: dict[str, PlanShape] = field(default_factory=dict)
    results: dict[str, ResultCheck] = field(default_factory=dict)


@dataclass(frozen=True)
class ItemSummary:
    part: str
    item: str
    title: str
    configs: tuple[str, ...]
    reference: str  # "unlogged" (shapes) or "permanent" (TPC-H)
    median_ms: dict[str, float]
    plans: dict[str, PlanShape]
    results_equal: bool
    mismatches: tuple[str, ...]  # configs whose rows differ from off's
    acceptance_vs_reference: bool  # must reach MIN_RATIO_VS_UNLOGGED

    @property
    def speedup_on(self) -> float:
        """median(off) / median(on): > 1 when pg_tempbuf makes it faster."""
        return _ratio(self.median_ms.get(str(Config.OFF)), self.median_ms.get(str(Config.ON)))

    @property
    def speedup_reference(self) -> float:
        """median(off) / median(the permanent or UNLOGGED copy)."""
        return _ratio(self.median_ms.get(str(Config.OFF)), self.median_ms.get(self.reference))

    @property
    def ratio_to_reference(self) -> float:
        """median(reference) / median(on): the speed of on as a share of the copy's (1 = as fast)."""
        return _ratio(self.median_ms.get(self.reference), self.median_ms.get(str(Config.ON)))

    @property
    def on_plan_is_off_plan(self) -> bool:
        """pg_tempbuf on chose exactly the stock plan: their time ratio is run-to-run noise."""
        off, on = self.plans.get(str(Config.OFF)), self.plans.get(str(Config.ON))
        return off is not None and on is not None and off.outline == on.outline

    def acceptance(self) -> list[str]:
        """Issue 9's checks that failed (empty: all passed)."""
        failed = []
        on = self.plans.get(str(Config.ON))
        if on is None or not on.gather:
            failed.append("on: no Gather")
        elif on.workers_launched == 0:
            failed.append("on: no worker launched")
        if not self.results_equal:
            failed.append("rows differ: " + ", ".join(self.mismatches))
        if self.speedup_on < MIN_SPEEDUP_VS_OFF:
            failed.append(f"speedup {self.speedup_on:.2f}x < {MIN_SPEEDUP_VS_OFF}")
        if self.acceptance_vs_reference and self.ratio_to_reference < MIN_RATIO_VS_UNLOGGED:
            failed.append(f"{self.ratio_to_reference:.2f}x of {self.reference} < {MIN_RATIO_VS_UNLOGGED}")
        return failed


def _ratio(numerator: float | None, denominator: float | None) -> float:
    if numerator is None or not denominator:
        return float("nan")
    return numerator / denominator


def summarize(measured: Measured, reference: str, acceptance_vs_reference: bool) -> ItemSummary:
    configs = tuple(measured.sql)
    median = {c: statistics.median([t.ms for t in measured.timings if t.config == c])
              for c in configs if any(t.config == c for t in measured.timings)}
    expected = measured.results.get(str(Config.OFF))
    mismatches = tuple(c for c, r in measured.results.items()
                       if expected is None or r.digest != expected.digest)
    return ItemSummary(
        part=measured.part, item=measured.item, title=measured.title, configs=configs, reference=reference,
        median_ms=median, plans=dict(measured.plans), results_equal=not mismatches and expected is not None,
        mismatches=mismatches, acceptance_vs_reference=acceptance_vs_reference,
    )


@dataclass
class TempShapesRun(RecordedRun):
    options: TempShapesOptions
    out_dir: Path = Path(".")
    measured: list[Measured] = field(default_factory=list)
    table_sizes: dict[str, int] = field(default_factory=dict)  # relation -> bytes
    flush_sql: str = "SELECT pg_flush_local_buffers()"  # schema-qualified by session_setup
    tpch_temp_buffers: str = ""  # temp_buffers of the --tpch-all-temp session
    notes: list[str] = field(default_factory=list)
