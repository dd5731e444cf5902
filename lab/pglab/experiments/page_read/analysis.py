"""What a page-read run measured: EXPLAIN's per-worker reads parsed, per-mode summaries, ratios."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from pglab import stats
from pglab.experiments.page_read.options import PageReadOptions

TEMP_SEQ_SCAN = "Temp Seq Scan"  # pg_tempbuf's Custom Plan Provider
GATHER_NODES = ("Gather", "Gather Merge")


class Mode(StrEnum):
    IN_PLACE = "in_place"  # temp table, pg_tempbuf.shared_pool = on: the leader's pool, read where it lies
    FILE = "file"  # temp table, pg_tempbuf.shared_pool = off: flushed, workers read the file
    SHARED_HIT = "shared_hit"  # UNLOGGED copy in shared_buffers, stock Parallel Seq Scan


MODES = (Mode.IN_PLACE, Mode.FILE, Mode.SHARED_HIT)
LABELS = {Mode.IN_PLACE: "in place", Mode.FILE: "file", Mode.SHARED_HIT: "shared hit"}
WHAT = {
    Mode.IN_PLACE: "temp table just loaded, pg_tempbuf.shared_pool = on: workers read the leader's pages in its pool",
    Mode.FILE: "temp table, pg_tempbuf.shared_pool = off, flushed before timing: workers read the table's file",
    Mode.SHARED_HIT: "UNLOGGED copy prewarmed into shared_buffers: stock Parallel Seq Scan, shared buffer hits",
}
# The ratios the report gives, numerator / denominator, both measured in the same run.
RATIOS = ((Mode.IN_PLACE, Mode.SHARED_HIT), (Mode.FILE, Mode.SHARED_HIT), (Mode.FILE, Mode.IN_PLACE))

_PARTICIPANT = re.compile(r"(leader|worker \d+)=(\d+)")


class PlanError(ValueError):
    """The EXPLAIN output does not hold the scan the mode needs (no Gather, serial, another node)."""


def parse_participants(text: str | None) -> dict[str, int]:
    """'leader=0 worker 0=1520 worker 1=2480' -> {'leader': 0, 'worker 0': 1520, 'worker 1': 2480}."""
    if not text:
        return {}
    return {name: int(value) for name, value in _PARTICIPANT.findall(str(text))}


def worker_counts(text: str | None) -> dict[int, int]:
    """The workers' part of a per-participant field: {worker number: count}."""
    return {int(name.split()[1]): value for name, value in parse_participants(text).items()
            if name.startswith("worker ")}


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []) or []:
        yield from _nodes(child)


@dataclass(frozen=True)
class WorkerRead:
    worker: int  # EXPLAIN's Worker Number
    pages: int
    ms: float  # the worker's time in the scan node (actual total time x loops)

    @property
    def us_per_page(self) -> float:
        return 1000.0 * self.ms / self.pages if self.pages else math.nan


@dataclass(frozen=True)
class ScanRead:
    """One EXPLAIN (ANALYZE, VERBOSE, BUFFERS, FORMAT JSON) of the count: its scan node, per worker."""

    node: str  # "Temp Seq Scan" or "Seq Scan"
    parallel_aware: bool
    workers_planned: int
    workers_launched: int
    workers: tuple[WorkerRead, ...]
    leader_pages: int  # pages the leader read itself (0 with parallel_leader_participation = off)
    execution_ms: float
    pages_flushed: int | None = None  # Temp Seq Scan only
    flush_ms: float | None = None
    pages_from_pool: int | None = None  # workers' pages read in the leader's pool (Pages From Leader's Pool)
    page_source: str | None = None
    shared_hit: int = 0  # the scan node's shared buffer hits, all participants
    shared_read: int = 0

    @property
    def worker_pages(self) -> int:
        return sum(w.pages for w in self.workers)

    @property
    def worker_ms(self) -> float:
        """Time in the scan of the workers that read pages (one that found none left is left out)."""
        return sum(w.ms for w in self.workers if w.pages)

    @property
    def us_per_page(self) -> float:
        """The workers' time in the scan over the pages they read (workers that read none left out)."""
        pages = self.worker_pages
        return 1000.0 * self.worker_ms / pages if pages else math.nan


def scan_read(explain: Any) -> ScanRead:
    """The count's scan under its Gather, from EXPLAIN (ANALYZE, VERBOSE, BUFFERS, FORMAT JSON)."""
    top = explain[0] if isinstance(explain, list) else explain
    nodes = list(_nodes(top["Plan"]))
    gathers = [n for n in nodes if n.get("Node Type") in GATHER_NODES]
    scans = [n for n in nodes if n.get("Custom Plan Provider") == TEMP_SEQ_SCAN or n.get("Node Type") == "Seq Scan"]
    if len(scans) != 1:
        raise PlanError(f"expected one Seq Scan or Temp Seq Scan, found {len(scans)}")
    scan = scans[0]
    temp = scan.get("Custom Plan Provider") == TEMP_SEQ_SCAN
    entries = {int(w["Worker Number"]): w for w in scan.get("Workers", []) or [] if "Worker Number" in w}
    if temp:
        pages = worker_counts(scan.get("Pages Read"))
        leader_pages = parse_participants(scan.get("Pages Read")).get("leader", 0)
    else:
        pages = {n: int(w.get("Shared Hit Blocks", 0)) + int(w.get("Shared Read Blocks", 0))
                 for n, w in entries.items()}
        total = int(scan.get("Shared Hit Blocks", 0)) + int(scan.get("Shared Read Blocks", 0))
        leader_pages = total - sum(pages.values())
    untimed = sorted(n for n, count in pages.items() if count and n not in entries)
    if untimed:
        raise PlanError(f"no per-worker time for worker {untimed[0]} (EXPLAIN without VERBOSE?)")
    workers = tuple(
        WorkerRead(n, pages.get(n, 0),
                   float(entries[n].get("Actual Total Time", 0.0)) * int(entries[n].get("Actual Loops", 1)))
        for n in sorted(entries))
    pool = worker_counts(scan.get("Pages From Leader's Pool"))
    return ScanRead(
        node=TEMP_SEQ_SCAN if temp else "Seq Scan",
        parallel_aware=bool(scan.get("Parallel Aware")),
        workers_planned=sum(int(g.get("Workers Planned", 0)) for g in gathers),
        workers_launched=sum(int(g.get("Workers Launched", 0)) for g in gathers),
        workers=workers,
        leader_pages=leader_pages,
        execution_ms=float(top.get("Execution Time", math.nan)),
        pages_flushed=int(scan["Pages Flushed"]) if temp and "Pages Flushed" in scan else None,
        flush_ms=float(scan["Flush Time"]) if temp and "Flush Time" in scan else None,
        pages_from_pool=sum(pool.values()) if temp and "Pages From Leader's Pool" in scan else (0 if temp else None),
        page_source=str(scan["Page Source"]) if "Page Source" in scan else None,
        shared_hit=int(scan.get("Shared Hit Blocks", 0)),
        shared_read=int(scan.get("Shared Read Blocks", 0)),
    )


def check_plan(read: ScanRead, mode: Mode) -> None:
    """The plan the mode needs: a Gather over a parallel-aware scan of the right kind, workers launched."""
    expected = "Seq Scan" if mode is Mode.SHARED_HIT else TEMP_SEQ_SCAN
    if read.node != expected or not read.parallel_aware or read.workers_planned == 0:
        raise PlanError(f"{LABELS[mode]}: expected a Gather over a Parallel {expected}, got "
                        f"{'a parallel' if read.parallel_aware else 'a serial'} {read.node} "
                        f"({read.workers_planned} workers planned)")
    if read.workers_launched == 0:
        raise PlanError(f"{LABELS[mode]}: no worker launched (max_worker_processes, max_parallel_workers?)")


@dataclass(frozen=True)
class Sample:
    """One timed round's figures for one mode: the plain query's wall time, then its EXPLAIN."""

    mode: str
    repetition: int
    wall_ms: float
    read: ScanRead


@dataclass(frozen=True)
class Spread:
    median: float
    low: float  # min
    high: float  # max
    ci_low: float  # distribution-free 95% CI of the median (nan for small samples)
    ci_high: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        data = [v for v in values if not math.isnan(v)]
        if not data:
            return cls(math.nan, math.nan, math.nan, math.nan, math.nan, 0)
        summary = stats.summarize(data)
        return cls(summary.median, min(data), max(data), summary.ci_low, summary.ci_high, summary.n)


@dataclass(frozen=True)
class ModeSummary:
    mode: Mode
    us_per_page: Spread  # workers' µs per page, over the rounds
    wall_ms: Spread  # the plain query's wall time
    explain_ms: Spread  # EXPLAIN ANALYZE's Execution Time
    worker_pages: int  # pages the workers read per run (median)
    workers_launched: int  # fewest launched in any round
    workers_planned: int
    pages_flushed: int  # most pages any timed run of ours flushed (0 for the stock scan)
    pages_from_pool: int  # fewest pages workers read in the leader's pool in a timed run (in place)
    page_source: str
    shared_read: int  # most shared reads (not hits) of any timed run (shared hit: should be 0)


def _median_int(values: Sequence[int]) -> int:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0


def summarize(samples: Sequence[Sample], mode: Mode) -> ModeSummary | None:
    mine = [s for s in samples if s.mode == str(mode)]
    if not mine:
        return None
    reads = [s.read for s in mine]
    return ModeSummary(
        mode=mode,
        us_per_page=Spread.of([r.us_per_page for r in reads]),
        wall_ms=Spread.of([s.wall_ms for s in mine]),
        explain_ms=Spread.of([r.execution_ms for r in reads]),
        worker_pages=_median_int([r.worker_pages for r in reads]),
        workers_launched=min(r.workers_launched for r in reads),
        workers_planned=max(r.workers_planned for r in reads),
        pages_flushed=max(r.pages_flushed or 0 for r in reads),
        pages_from_pool=min(r.pages_from_pool or 0 for r in reads),
        page_source=", ".join(dict.fromkeys(r.page_source or "shared buffers" for r in reads)),
        shared_read=max(r.shared_read for r in reads),
    )


def summaries(samples: Sequence[Sample]) -> dict[Mode, ModeSummary]:
    found = {mode: summarize(samples, mode) for mode in MODES}
    return {mode: s for mode, s in found.items() if s is not None}


@dataclass(frozen=True)
class Ratio:
    """numerator / denominator: of the medians, and per round (the two modes of one round paired)."""

    numerator: Mode
    denominator: Mode
    us_per_page: float  # median(numerator) / median(denominator)
    wall: float
    paired_us_per_page: Spread  # over the rounds: numerator's / denominator's of the same round
    paired_wall: Spread
    differ_p: float  # Mann-Whitney p that the µs-per-page samples come from one distribution

    @property
    def label(self) -> str:
        return f"{LABELS[self.numerator]} / {LABELS[self.denominator]}"


def _paired(samples: Sequence[Sample], a: Mode, b: Mode, value: str) -> list[float]:
    by_round: dict[int, dict[str, float]] = {}
    for s in samples:
        by_round.setdefault(s.repetition, {})[s.mode] = s.wall_ms if value == "wall" else s.read.us_per_page
    return [r[str(a)] / r[str(b)] for r in by_round.values()
            if str(a) in r and str(b) in r and r[str(b)] and not math.isnan(r[str(a)] / r[str(b)])]


def ratios(samples: Sequence[Sample]) -> list[Ratio]:
    found = summaries(samples)
    out = []
    for a, b in RATIOS:
        if a not in found or b not in found:
            continue
        sa, sb = found[a], found[b]
        out.append(Ratio(
            numerator=a, denominator=b,
            us_per_page=_div(sa.us_per_page.median, sb.us_per_page.median),
            wall=_div(sa.wall_ms.median, sb.wall_ms.median),
            paired_us_per_page=Spread.of(_paired(samples, a, b, "us")),
            paired_wall=Spread.of(_paired(samples, a, b, "wall")),
            differ_p=stats.differ_p([s.read.us_per_page for s in samples if s.mode == str(a)],
                                    [s.read.us_per_page for s in samples if s.mode == str(b)]),
        ))
    return out


def _div(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


@dataclass(frozen=True)
class Preparation:
    """What each mode did before its timed rounds: the explicit flush, and its first (untimed) query."""

    mode: str
    flushed_before: int | None  # pg_flush_local_buffers()'s count (file mode), None where not called
    flush_before_ms: float | None
    first: ScanRead


@dataclass
class PageReadRun:
    options: PageReadOptions
    out_dir: Path = Path(".")
    samples: list[Sample] = field(default_factory=list)
    preparations: list[Preparation] = field(default_factory=list)
    table: dict[str, Any] = field(default_factory=dict)  # pages, rows, bytes per relation, rows per page
    session_settings: list[str] = field(default_factory=list)  # the SETs every measuring session ran
    prewarm: str = ""  # how the UNLOGGED copy got into shared_buffers
    server: dict[str, Any] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    command: str = ""
    started: str = ""
    finished: str = ""
    wall_s: float = 0.0
    status: str = "running"
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def version_num(self) -> int:
        return int(self.server.get("version_num") or 0)
