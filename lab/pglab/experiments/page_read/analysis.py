"""What a page-read run measured: EXPLAIN's per-worker reads parsed, per-mode summaries, ratios; and the
serial part's: the leader's own scan with its pool shared or private, the plan and mapping checks, the ratio."""

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
from pglab.runlog import RecordedRun

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
            us_per_page=div(sa.us_per_page.median, sb.us_per_page.median),
            wall=div(sa.wall_ms.median, sb.wall_ms.median),
            paired_us_per_page=Spread.of(_paired(samples, a, b, "us")),
            paired_wall=Spread.of(_paired(samples, a, b, "wall")),
            differ_p=stats.differ_p([s.read.us_per_page for s in samples if s.mode == str(a)],
                                    [s.read.us_per_page for s in samples if s.mode == str(b)]),
        ))
    return out


def div(a: float, b: float) -> float:
    """a / b; nan where either is nan or b is 0."""
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


@dataclass(frozen=True)
class Preparation:
    """What each mode did before its timed rounds: the explicit flush, and its first (untimed) query."""

    mode: str
    flushed_before: int | None  # pg_flush_local_buffers()'s count (file mode), None where not called
    flush_before_ms: float | None
    first: ScanRead


# The serial part: the leader's own scan, pg_tempbuf.parallel_scan = off, no workers; its local buffers in the
# shared pool (a memfd) or in core's private memory.


class Pool(StrEnum):
    SHARED = "pool"  # pg_tempbuf.shared_pool = on: the local buffers moved into the memfd
    PRIVATE = "private"  # pg_tempbuf.shared_pool = off before the first temporary table: core's private memory


POOLS = (Pool.SHARED, Pool.PRIVATE)
POOL_LABELS = {Pool.SHARED: "pool (shared_pool = on)", Pool.PRIVATE: "private (shared_pool = off)"}
MEMFD_NAME = "/memfd:pg_tempbuf local buffers"  # the pool's mapping in /proc/<pid>/maps


def pool_order(repetition: int) -> tuple[Pool, Pool]:
    """Which session goes first in a round: the pool in even rounds, the private one in odd rounds."""
    return POOLS if repetition % 2 == 0 else (POOLS[1], POOLS[0])


@dataclass(frozen=True)
class SerialScan:
    """One EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) of the serial count: its scan node."""

    node: str  # "Seq Scan" expected; "Custom Scan (Temp Seq Scan)" would be pg_tempbuf's
    relation: str | None
    parallel_aware: bool
    gathers: int  # Gather or Gather Merge nodes in the plan (0 expected)
    workers_launched: int
    local_hit: int
    local_read: int
    shared_hit: int  # the scan node's: 0 expected for a temporary table
    shared_read: int
    execution_ms: float


def serial_scan(explain: Any) -> SerialScan:
    """The serial count's scan, from EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)."""
    top = explain[0] if isinstance(explain, list) else explain
    nodes = list(_nodes(top["Plan"]))
    scans = [n for n in nodes if n.get("Node Type") in ("Seq Scan", "Custom Scan")]
    if len(scans) != 1:
        raise PlanError(f"serial scan: expected one Seq Scan, found {len(scans)} scan nodes")
    scan = scans[0]
    provider = scan.get("Custom Plan Provider")
    gathers = [n for n in nodes if n.get("Node Type") in GATHER_NODES]
    return SerialScan(
        node=f"Custom Scan ({provider})" if provider else str(scan["Node Type"]),
        relation=scan.get("Relation Name"),
        parallel_aware=bool(scan.get("Parallel Aware")),
        gathers=len(gathers),
        workers_launched=sum(int(g.get("Workers Launched", 0)) for g in gathers),
        local_hit=int(scan.get("Local Hit Blocks", 0)),
        local_read=int(scan.get("Local Read Blocks", 0)),
        shared_hit=int(scan.get("Shared Hit Blocks", 0)),
        shared_read=int(scan.get("Shared Read Blocks", 0)),
        execution_ms=float(top.get("Execution Time", math.nan)),
    )


def check_serial(scan: SerialScan, pool: Pool) -> None:
    """A plain serial Seq Scan, no Gather, every page a local buffer hit."""
    label = POOL_LABELS[pool]
    if scan.node != "Seq Scan" or scan.parallel_aware or scan.gathers:
        raise PlanError(f"serial scan, {label}: expected a plain serial Seq Scan, got "
                        f"{'a parallel ' if scan.parallel_aware else ''}{scan.node}"
                        f"{f' under {scan.gathers} Gather' if scan.gathers else ''}")
    if scan.local_hit == 0 or scan.local_read or scan.shared_hit or scan.shared_read:
        raise PlanError(f"serial scan, {label}: expected local buffer hits only, got {scan.local_hit} local hits, "
                        f"{scan.local_read} local reads, {scan.shared_hit} shared hits, {scan.shared_read} shared "
                        "reads (temp_buffers too small for the table?)")


@dataclass(frozen=True)
class PoolMapping:
    """Whether the backend maps the pool's memfd, from /proc/<pid>/maps."""

    checked: bool  # False: not readable (the reason in detail)
    mapped: bool | None  # None when not checked
    bytes: int  # the memfd mappings' size
    detail: str  # the mapping lines, or why not checked

    @property
    def label(self) -> str:
        if not self.checked:
            return "not checked"
        return f"yes, {self.bytes / 2**20:,.0f} MiB" if self.mapped else "no"


def pool_mapping(maps: str) -> PoolMapping:
    """The memfd pool's lines of /proc/<pid>/maps ('7f..-7f.. rw-s 0 00:01 12 /memfd:pg_tempbuf local buffers
    (deleted)')."""
    lines = [line.strip() for line in maps.splitlines() if MEMFD_NAME in line]
    size = 0
    for line in lines:
        start, _, end = line.split()[0].partition("-")
        size += int(end, 16) - int(start, 16)
    return PoolMapping(checked=True, mapped=bool(lines), bytes=size, detail="; ".join(lines))


def unchecked_mapping(why: str) -> PoolMapping:
    return PoolMapping(checked=False, mapped=None, bytes=0, detail=why)


def memory_kb(status: str) -> dict[str, int]:
    """The resident-set lines of /proc/<pid>/status in kB: {'VmRSS': .., 'RssAnon': .., 'RssShmem': ..}."""
    out: dict[str, int] = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem") and value.strip().endswith("kB"):
            out[key] = int(value.split()[0])
    return out


@dataclass(frozen=True)
class SerialCheck:
    """One session's checks before its timed rounds: the plan, the mapping and its memory."""

    session: str
    pid: int
    warm_ms: float  # the warm-up read, timed by the client
    scan: SerialScan
    mapping: PoolMapping
    memory_kb: dict[str, int]  # after the checks; {} where /proc/<pid>/status was not read


def mapping_warnings(checks: Sequence[SerialCheck]) -> list[str]:
    """A pool session that does not map the memfd, or a private one that does: the comparison is void."""
    out = []
    for check in checks:
        expected = check.session == str(Pool.SHARED)
        if check.mapping.checked and check.mapping.mapped != expected:
            out.append(f"the {POOL_LABELS[Pool(check.session)]} session's backend (pid {check.pid}) "
                       f"{'does not map' if expected else 'maps'} {MEMFD_NAME!r}")
    return out


@dataclass(frozen=True)
class SerialSample:
    session: str
    repetition: int
    position: int  # 0: first in its round, 1: second
    wall_ms: float  # SELECT count(*), sum(length(s)), timed by the client


def serial_spreads(samples: Sequence[SerialSample]) -> dict[Pool, Spread]:
    out: dict[Pool, Spread] = {}
    for pool in POOLS:
        mine = [s.wall_ms for s in samples if s.session == str(pool)]
        if mine:
            out[pool] = Spread.of(mine)
    return out


def _serial_rounds(samples: Sequence[SerialSample]) -> list[tuple[int, float]]:
    by_round: dict[int, dict[str, float]] = {}
    for s in samples:
        by_round.setdefault(s.repetition, {})[s.session] = s.wall_ms
    pool, private = str(Pool.SHARED), str(Pool.PRIVATE)
    return [(n, r[pool] / r[private]) for n, r in sorted(by_round.items()) if pool in r and private in r and r[private]]


def serial_paired(samples: Sequence[SerialSample]) -> list[float]:
    """pool / private per round, over the rounds that timed both."""
    return [ratio for _, ratio in _serial_rounds(samples)]


def serial_rounds(samples: Sequence[SerialSample]) -> list[int]:
    """The rounds serial_paired's ratios come from."""
    return [n for n, _ in _serial_rounds(samples)]


@dataclass(frozen=True)
class SerialRatio:
    """pool / private of the serial scan's wall time."""

    of_medians: float
    paired: Spread  # per round: the pool's time over the private one's of the same round
    differ_p: float  # Mann-Whitney p that the two sessions' times come from one distribution
    first_second: float  # median time of the round's first query / of its second (an order effect)

    def meets(self, limit: float) -> bool | None:
        """Both estimates within the limit: True; both above: False; split, or nothing measured: None."""
        checks = [v <= limit for v in (self.of_medians, self.paired.median) if not math.isnan(v)]
        if not checks or len(set(checks)) > 1:
            return None
        return checks[0]

    def verdict(self, limit: float) -> str:
        meets = self.meets(limit)
        return {True: "met", False: "not met", None: "undecided"}[meets]


def serial_ratio(samples: Sequence[SerialSample]) -> SerialRatio | None:
    spreads = serial_spreads(samples)
    if len(spreads) < len(POOLS):
        return None
    first = [s.wall_ms for s in samples if s.position == 0]
    second = [s.wall_ms for s in samples if s.position == 1]
    return SerialRatio(
        of_medians=div(spreads[Pool.SHARED].median, spreads[Pool.PRIVATE].median),
        paired=Spread.of(serial_paired(samples)),
        differ_p=stats.differ_p([s.wall_ms for s in samples if s.session == str(Pool.SHARED)],
                                [s.wall_ms for s in samples if s.session == str(Pool.PRIVATE)]),
        first_second=div(Spread.of(first).median, Spread.of(second).median) if first and second else math.nan,
    )


@dataclass
class PageReadRun(RecordedRun):
    options: PageReadOptions
    out_dir: Path = Path(".")
    samples: list[Sample] = field(default_factory=list)
    preparations: list[Preparation] = field(default_factory=list)
    table: dict[str, Any] = field(default_factory=dict)  # pages, rows, bytes per relation, rows per page
    session_settings: list[str] = field(default_factory=list)  # the SETs every measuring session ran
    prewarm: str = ""  # how the UNLOGGED copy got into shared_buffers
    notes: list[str] = field(default_factory=list)
    # The serial part (empty with --no-serial, or when the run stopped before it)
    serial_samples: list[SerialSample] = field(default_factory=list)
    serial_checks: list[SerialCheck] = field(default_factory=list)
    serial_table: dict[str, Any] = field(default_factory=dict)  # rows, bytes, pages per session, the query
    serial_settings: list[str] = field(default_factory=list)  # what both serial sessions set (but the pool)
