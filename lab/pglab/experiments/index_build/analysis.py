"""What an index-build run measured: each build's time, the workers it asked for and launched (its DEBUG1 and
trace_sort lines parsed), its parallel workers' peak anonymous memory, the index checks; per pool size
(temp_buffers), table size, key type and mode the summaries, and the ratios of the same run."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from pglab import stats
from pglab.experiments.index_build.options import GOAL_VS_UNLOGGED, IndexBuildOptions
from pglab.runlog import RecordedRun


class Mode(StrEnum):
    TEMP_SERIAL = "temp_serial"  # temporary table, pg_tempbuf.parallel_index_build = off: core's serial build
    TEMP_PARALLEL = "temp_parallel"  # temporary table, pg_tempbuf.parallel_index_build = on: ours
    UNLOGGED_PARALLEL = "unlogged_parallel"  # UNLOGGED copy, core's parallel build
    UNLOGGED_SERIAL = "unlogged_serial"  # UNLOGGED copy, max_parallel_maintenance_workers = 0


MODES = (Mode.TEMP_SERIAL, Mode.TEMP_PARALLEL, Mode.UNLOGGED_PARALLEL, Mode.UNLOGGED_SERIAL)
LABELS = {
    Mode.TEMP_SERIAL: "temp, off (serial)",
    Mode.TEMP_PARALLEL: "temp, on (ours)",
    Mode.UNLOGGED_PARALLEL: "UNLOGGED, parallel",
    Mode.UNLOGGED_SERIAL: "UNLOGGED, serial",
}
WHAT = {
    Mode.TEMP_SERIAL: "temporary table, pg_tempbuf.parallel_index_build = off: core's serial build, as stock "
                      "PostgreSQL builds every index of a temporary table",
    Mode.TEMP_PARALLEL: "temporary table, pg_tempbuf.parallel_index_build = on: core's parallel build with core's rule "
                        "for the worker count; its workers copy the pages the leader holds out of its pool, the others from "
                        "the file (where they cannot map the pool, the leader first writes the table's dirty pages)",
    Mode.UNLOGGED_PARALLEL: "UNLOGGED table of the same rows, core's own parallel build (what users do instead of a "
                            "temporary table)",
    Mode.UNLOGGED_SERIAL: "the UNLOGGED table with max_parallel_maintenance_workers = 0: core's serial build, for "
                          "reference",
}
PARALLEL_MODES = (Mode.TEMP_PARALLEL, Mode.UNLOGGED_PARALLEL)
TEMP_MODES = (Mode.TEMP_SERIAL, Mode.TEMP_PARALLEL)


def is_temp_mode(mode: Mode) -> bool:
    return mode in TEMP_MODES


# The key types: the indexed column of the table (g AS id, md5(g::text) AS s).
KEY_COLUMNS = {"int": "id", "text": "s"}
KEY_EXPRESSIONS = {"int": "g", "text": "md5(g::text)"}

# The ratios the report gives, numerator's time / denominator's, both measured in the same run.
SPEEDUP = (Mode.TEMP_SERIAL, Mode.TEMP_PARALLEL)  # ours' speedup over the serial build
VS_UNLOGGED = (Mode.TEMP_PARALLEL, Mode.UNLOGGED_PARALLEL)  # ours against the UNLOGGED copy's parallel build
CORE_SPEEDUP = (Mode.UNLOGGED_SERIAL, Mode.UNLOGGED_PARALLEL)  # core's own gain on the UNLOGGED copy
RATIOS = (SPEEDUP, VS_UNLOGGED, CORE_SPEEDUP)
RATIO_LABELS = {
    SPEEDUP: "temp off / on (ours' speedup)",
    VS_UNLOGGED: "temp on (ours) / UNLOGGED parallel",
    CORE_SPEEDUP: "UNLOGGED serial / parallel (core's speedup)",
}

# Core's rule (plan_create_index_workers): each participant needs 32MB of maintenance_work_mem.
PARTICIPANT_MEMORY_KB = 32 * 1024

_REQUEST = re.compile(r"with request for (\d+) parallel workers")
_SERIALLY = re.compile(r"^building index .* serially$")
# pg_tempbuf's line of what the leader wrote before its workers started: DEBUG1 detail "N pages of the table
# written first, ..." (its first version), or DEBUG2 'N pages of temporary table "t" written for the workers to read'.
_WRITTEN = re.compile(r"^(\d+) pages of (?:the table written first|temporary table .* written)")
_PERFORMSORT = re.compile(r"^performsort of worker (-?\d+) starting")


@dataclass(frozen=True)
class BuildTrace:
    """What a build said about its workers: core's (or pg_tempbuf's) DEBUG1 request, trace_sort's participants."""

    workers_requested: int | None  # None: no DEBUG1 line about the build was seen
    sort_participants: int  # distinct "performsort of worker N" with N >= 0: the leader and its workers
    pages_written: int | None  # pg_tempbuf's DEBUG line: the table's dirty pages written first (ours only)

    @property
    def workers_launched(self) -> int:
        """Participants less the leader (it takes part: parallel_leader_participation is on); 0 when serial."""
        return max(self.sort_participants - 1, 0)


def parse_trace(messages: Iterable[tuple[str, str | None]]) -> BuildTrace:
    """(message, detail) of the notices one CREATE INDEX sent (client_min_messages = debug2, trace_sort = on).

    Core says "building index .. serially" or ".. with request for N parallel workers" (DEBUG1); for a temporary
    table core says serially, then pg_tempbuf says how many it asks for (DEBUG1) and what it wrote first.  trace_sort's
    "performsort of worker N starting" comes once per participant of a parallel sort (N >= 0, the leader's own
    share included) and once with N = -1 for the leader's merge or a serial sort."""
    requested: int | None = None
    written: int | None = None
    participants: set[int] = set()
    for message, detail in messages:
        request = _REQUEST.search(message)
        if request:
            requested = int(request.group(1))
        elif _SERIALLY.match(message) and requested is None:
            requested = 0
        for text in (message, detail or ""):
            found = _WRITTEN.match(text)
            if found:
                written = int(found.group(1))
        sort = _PERFORMSORT.match(message)
        if sort and int(sort.group(1)) >= 0:
            participants.add(int(sort.group(1)))
    return BuildTrace(requested, len(participants), written)


def core_rule_workers(pages: int, max_workers: int, maintenance_work_mem_kb: int,
                      table_parallel_workers: int | None, min_scan_pages: int) -> int:
    """The workers core's rule (plan_create_index_workers, compute_parallel_worker) asks for a btree build on a
    permanent table of `pages` pages: the table's parallel_workers if set, else one worker at min_parallel_table_
    scan_size and one more at each tripling; at most max_parallel_maintenance_workers; then fewer until each
    participant has 32MB of maintenance_work_mem (not when parallel_workers is set)."""
    if max_workers == 0:
        return 0
    if table_parallel_workers is not None:
        return min(table_parallel_workers, max_workers)
    if pages < min_scan_pages:
        return 0
    workers, threshold = 1, max(min_scan_pages, 1)
    while pages >= threshold * 3:
        workers += 1
        threshold *= 3
    workers = min(workers, max_workers)
    while workers > 0 and maintenance_work_mem_kb // (workers + 1) < PARTICIPANT_MEMORY_KB:
        workers -= 1
    return workers


@dataclass(frozen=True)
class IndexCheck:
    """count(*) and sum(hashtext(k::text)) through the index (Index Only Scan) and through a Seq Scan."""

    index_count: int
    index_sum: int | None
    seq_count: int
    seq_sum: int | None
    index_node: str  # the plan's scan node of the index read: "Index Only Scan" expected
    seq_node: str

    @property
    def ok(self) -> bool:
        return (self.index_node == "Index Only Scan" and self.seq_node == "Seq Scan"
                and (self.index_count, self.index_sum) == (self.seq_count, self.seq_sum))

    def problem(self, rows: int) -> str | None:
        """Why the check failed, or None."""
        if self.index_node != "Index Only Scan" or self.seq_node != "Seq Scan":
            return f"the check's plans were {self.index_node!r} and {self.seq_node!r}, not an Index Only Scan and a " \
                   "Seq Scan"
        if (self.index_count, self.index_sum) != (self.seq_count, self.seq_sum):
            return f"through the index count {self.index_count:,}, sum {self.index_sum}; through a Seq Scan count " \
                   f"{self.seq_count:,}, sum {self.seq_sum}"
        if self.seq_count != rows:
            return f"count {self.seq_count:,}, expected {rows:,}"
        return None


def scan_node(explain: Any) -> str:
    """The scan node of EXPLAIN (FORMAT JSON) of an aggregate over one relation: its Node Type (a custom scan by
    its provider's name)."""
    top = explain[0] if isinstance(explain, list) else explain
    node: dict[str, Any] = top["Plan"]
    while node.get("Plans"):
        node = node["Plans"][0]
    provider = node.get("Custom Plan Provider")
    return f"Custom Scan ({provider})" if provider else str(node.get("Node Type"))


def rss_anon_kb(status: str) -> int | None:
    """The RssAnon line of /proc/<pid>/status ('RssAnon:\t   12345 kB') in kB; None where it has none."""
    for line in status.splitlines():
        name, _, value = line.partition(":")
        if name == "RssAnon":
            fields = value.split()
            if len(fields) == 2 and fields[1] == "kB" and fields[0].isdigit():
                return int(fields[0])
            return None
    return None


@dataclass(frozen=True)
class WorkerMemory:
    """The parallel workers of one build, sampled while it ran: each worker's highest RssAnon (anonymous resident
    memory: its private allocations, sort memory included; not shared memory such as shared_buffers or the
    leader's pool mapped by the worker)."""

    workers_seen: int  # distinct workers pg_stat_activity showed for the build's session
    peaks_kb: tuple[int, ...]  # the highest RssAnon sampled of each worker whose status could be read, in kB
    samples: int  # times the workers were looked up during the build

    @property
    def peak_kb(self) -> int | None:
        """The largest worker's peak; None where no worker's status was read."""
        return max(self.peaks_kb) if self.peaks_kb else None

    @property
    def peak_mb(self) -> float | None:
        return None if self.peak_kb is None else self.peak_kb / 1024


class PeakTracker:
    """Each worker's highest RssAnon over one build's samples (filled by the sampler's thread, read after it)."""

    def __init__(self) -> None:
        self._peaks: dict[int, int | None] = {}  # pid -> highest kB read (None: seen, its status never read)
        self.samples = 0

    def sample(self, readings: Iterable[tuple[int, int | None]]) -> None:
        """One look: the (pid, RssAnon kB or None where unreadable) of each worker listed."""
        self.samples += 1
        for pid, kb in readings:
            old = self._peaks.get(pid)
            if old is None or (kb is not None and kb > old):
                self._peaks[pid] = kb

    def result(self) -> WorkerMemory:
        return WorkerMemory(workers_seen=len(self._peaks),
                            peaks_kb=tuple(kb for kb in self._peaks.values() if kb is not None),
                            samples=self.samples)


@dataclass(frozen=True)
class Build:
    """One timed CREATE INDEX."""

    temp_buffers: str  # the session's pool size
    rows: int
    key: str
    mode: str
    repetition: int
    position: int  # its place in the round (0: first)
    ms: float  # CREATE INDEX, client wall time
    load_ms: float  # the CREATE TABLE AS before it (not part of ms)
    trace: BuildTrace
    table_pages: int
    index_bytes: int
    check: IndexCheck | None = None  # first round only
    memory: WorkerMemory | None = None  # None: not sampled (/proc not readable, or --no-worker-memory)


@dataclass(frozen=True)
class Spread:
    median: float
    low: float  # min
    high: float  # max
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        data = [v for v in values if not math.isnan(v)]
        if not data:
            return cls(math.nan, math.nan, math.nan, 0)
        return cls(stats.summarize(data).median, min(data), max(data), len(data))


@dataclass(frozen=True)
class ModeSummary:
    temp_buffers: str
    rows: int
    key: str
    mode: Mode
    ms: Spread  # CREATE INDEX, client wall time
    load_ms: float  # median CREATE TABLE AS time before it
    workers_requested: tuple[int, ...]  # the distinct counts the builds asked for (empty: none said)
    workers_launched_min: int
    workers_launched_max: int
    pages_written: int | None  # median pages ours wrote first (None where none said)
    table_pages: int  # median
    index_bytes: int  # median
    checked: int  # builds whose index was checked
    check_failures: int
    # The median over rounds of each build's largest worker peak RssAnon, MiB (kB / 1024); None where no build's
    # worker was read (not sampled, or no worker seen).
    worker_peak_mb: float | None = None
    worker_peak_builds: int = 0  # builds with a worker peak
    workers_seen_max: int | None = None  # the most workers one build was seen with; None: not sampled

    @property
    def requested_label(self) -> str:
        return "/".join(map(str, self.workers_requested)) if self.workers_requested else "?"

    @property
    def launched_label(self) -> str:
        if self.workers_launched_min == self.workers_launched_max:
            return str(self.workers_launched_min)
        return f"{self.workers_launched_min}..{self.workers_launched_max}"


def _median_int(values: Sequence[int]) -> int:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0


Group = tuple[str, int, str]  # (temp_buffers, rows, key)


def groups(builds: Sequence[Build]) -> list[Group]:
    """The (temp_buffers, rows, key) cases measured: per pool size in the order first run, the (rows, key) pairs in
    the order they ran."""
    found = list(dict.fromkeys((b.temp_buffers, b.rows, b.key) for b in builds))
    pools = list(dict.fromkeys(g[0] for g in found))
    return sorted(found, key=lambda g: pools.index(g[0]))


def of_group(builds: Sequence[Build], group: Group) -> list[Build]:
    return [b for b in builds if (b.temp_buffers, b.rows, b.key) == group]


def worker_peak(builds: Sequence[Build]) -> tuple[float | None, int, int | None]:
    """(the median of the builds' worker peaks in MiB, the builds that had one, the most workers a build was seen
    with): None where no build has a peak, and for the count where no build was sampled."""
    sampled = [b.memory for b in builds if b.memory is not None]
    peaks = [m.peak_mb for m in sampled if m.peak_mb is not None]
    return (stats.summarize(peaks).median if peaks else None, len(peaks),
            max(m.workers_seen for m in sampled) if sampled else None)


def modes_of(builds: Sequence[Build]) -> list[Mode]:
    found = {b.mode for b in builds}
    return [m for m in MODES if str(m) in found]


def summarize(builds: Sequence[Build], group: Group, mode: Mode) -> ModeSummary | None:
    mine = [b for b in of_group(builds, group) if b.mode == str(mode)]
    if not mine:
        return None
    launched = [b.trace.workers_launched for b in mine]
    written = [b.trace.pages_written for b in mine if b.trace.pages_written is not None]
    checks = [b.check for b in mine if b.check is not None]
    peak_mb, peak_builds, seen = worker_peak(mine)
    temp_buffers, rows, key = group
    return ModeSummary(
        temp_buffers=temp_buffers, rows=rows, key=key, mode=mode,
        ms=Spread.of([b.ms for b in mine]),
        load_ms=Spread.of([b.load_ms for b in mine]).median,
        workers_requested=tuple(sorted({b.trace.workers_requested for b in mine
                                        if b.trace.workers_requested is not None})),
        workers_launched_min=min(launched), workers_launched_max=max(launched),
        pages_written=_median_int(written) if written else None,
        table_pages=_median_int([b.table_pages for b in mine]),
        index_bytes=_median_int([b.index_bytes for b in mine]),
        checked=len(checks), check_failures=sum(1 for c in checks if not c.ok),
        worker_peak_mb=peak_mb, worker_peak_builds=peak_builds, workers_seen_max=seen,
    )


def summaries(builds: Sequence[Build]) -> list[ModeSummary]:
    """Per (temp_buffers, rows, key) as groups() orders them, per mode in MODES' order."""
    out = []
    for group in groups(builds):
        for mode in MODES:
            found = summarize(builds, group, mode)
            if found is not None:
                out.append(found)
    return out


def div(a: float, b: float) -> float:
    """a / b; nan where either is nan or b is 0."""
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


@dataclass(frozen=True)
class Ratio:
    """numerator's time / denominator's, for one pool size, table size and key type: of the medians, and per
    round."""

    temp_buffers: str
    rows: int
    key: str
    numerator: Mode
    denominator: Mode
    of_medians: float
    paired: Spread  # per round: the two modes' builds of the same round
    differ_p: float  # Mann-Whitney p that the two modes' times come from one distribution

    @property
    def label(self) -> str:
        return RATIO_LABELS.get((self.numerator, self.denominator),
                                f"{LABELS[self.numerator]} / {LABELS[self.denominator]}")


def paired(builds: Sequence[Build], group: Group, a: Mode, b: Mode) -> list[float]:
    """a's time / b's, round by round (rounds that built both), at one pool size."""
    by_round: dict[int, dict[str, float]] = {}
    for x in of_group(builds, group):
        by_round.setdefault(x.repetition, {})[x.mode] = x.ms
    return [r[str(a)] / r[str(b)] for _, r in sorted(by_round.items()) if str(a) in r and str(b) in r and r[str(b)]]


def ratios(builds: Sequence[Build]) -> list[Ratio]:
    out = []
    for group in groups(builds):
        mine = of_group(builds, group)
        for a, b in RATIOS:
            sa, sb = summarize(mine, group, a), summarize(mine, group, b)
            if sa is None or sb is None:
                continue
            temp_buffers, rows, key = group
            out.append(Ratio(
                temp_buffers=temp_buffers, rows=rows, key=key, numerator=a, denominator=b,
                of_medians=div(sa.ms.median, sb.ms.median),
                paired=Spread.of(paired(mine, group, a, b)),
                differ_p=stats.differ_p([x.ms for x in mine if x.mode == str(a)],
                                        [x.ms for x in mine if x.mode == str(b)]),
            ))
    return out


def ratio_of(found: Sequence[Ratio], group: Group, pair: tuple[Mode, Mode]) -> Ratio | None:
    for r in found:
        if (r.temp_buffers, r.rows, r.key, r.numerator, r.denominator) == (*group, *pair):
            return r
    return None


def goal_verdict(ratio: Ratio | None, limit: float = GOAL_VS_UNLOGGED) -> str:
    """Ours / UNLOGGED parallel against the goal line, as measured: both estimates (of the medians, per round)
    within it: "within"; both above: "above"; split: "split"."""
    if ratio is None:
        return ""
    checks = [v <= limit for v in (ratio.of_medians, ratio.paired.median) if not math.isnan(v)]
    if not checks:
        return ""
    if len(set(checks)) > 1:
        return "split"
    return "within" if checks[0] else "above"


@dataclass
class IndexBuildRun(RecordedRun):
    options: IndexBuildOptions
    out_dir: Path = Path(".")
    modes: tuple[Mode, ...] = ()
    builds: list[Build] = field(default_factory=list)
    # Per temp_buffers, per mode: the SETs its session ran.
    session_settings: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    worker_memory_unavailable: str | None = None  # why the workers' memory was not sampled; None: it was
    notes: list[str] = field(default_factory=list)
