"""Options of `pglab regret`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

NAME = "regret"

DEFAULT_SCALE = 0.5  # TPC-H scale factor (the SF 0.5)
QUICK_SCALE = 0.01  # the lab's quick TPC-H scale (temp-shapes, overhead)
DEFAULT_LOADS = 3
QUICK_LOADS = 2
DEFAULT_REPETITIONS = 3  # timed runs per TPC-H query and configuration, per load
QUICK_REPETITIONS = 1
DEFAULT_SHAPE_REPETITIONS = 5  # as `pglab temp-shapes`
QUICK_SHAPE_REPETITIONS = 1
DEFAULT_ROUNDS = 5  # interleaved on/off rounds of each session loop
QUICK_ROUNDS = 2
DEFAULT_ITERATIONS = 10_000  # EXECUTEd statements per loop call
QUICK_ITERATIONS = 200
DEFAULT_WORKERS = 2  # max_parallel_workers_per_gather
DEFAULT_SESSION_TEMP_BUFFERS = "512MB"  # a tuned session's temp_buffers


@dataclass(frozen=True)
class SessionSizes:
    """Table sizes of the many-statement sessions (rows)."""

    big_rows: int  # the indexed temp table of the lookups and the big-small join
    small_rows: int  # the first small temp table (s1)
    smaller_rows: int  # the second small temp table (s2)
    permanent_rows: int  # the indexed permanent table joined to a small temp table


DEFAULT_SESSION_SIZES = SessionSizes(big_rows=500_000, small_rows=100, smaller_rows=50, permanent_rows=1_000_000)
QUICK_SESSION_SIZES = SessionSizes(big_rows=20_000, small_rows=100, smaller_rows=50, permanent_rows=20_000)


@dataclass(frozen=True)
class RegretOptions:
    scale: float  # TPC-H scale factor
    loads: int  # TPC-H loads (drop, reload, ANALYZE)
    repetitions: int  # timed runs per TPC-H query and configuration, per load
    shape_repetitions: int  # timed runs per shape and configuration
    rounds: int  # interleaved on/off rounds per session loop
    iterations: int  # EXECUTEd statements per loop call
    session_sizes: SessionSizes
    session_temp_buffers: str
    workers: int
    tpch_queries: tuple[str, ...]  # empty: no TPC-H part
    sessions: tuple[str, ...]  # session workload names; empty: no sessions part
    shapes: tuple[str, ...]  # temp-shapes shape names; empty: no shapes part
    out_dir: Path | None  # None: results/regret-pg<major>
    tpch_temp_buffers: str | None = None  # None: pglab.tpch_tables.temp_buffers_for(scale)
    # The throwaway server's shared_buffers.  None: the TPC-H temp_buffers, so that the UNLOGGED
    # copy is held in memory as the temporary tables are; 'server': the server's own (pglab.equal_memory).
    shared_buffers: str | None = None
    baseline: Path | None = None  # results.json of an earlier run, whose TPC-H geomeans are "today's"
    pg_config: Path | None = None
    dsn: str | None = None
    quick: bool = False
