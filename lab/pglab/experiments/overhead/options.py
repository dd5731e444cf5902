"""Options of the overhead experiment."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

NAME = "overhead"
LIBRARY = "pg_tempbuf"

DEFAULT_SCALE = 10  # the pgbench scale
QUICK_SCALE = 1
# Counted queries per backend: the per-query figure is (run of WARMUP + QUERIES) - (run of WARMUP), / QUERIES.
DEFAULT_WARMUP = 100
DEFAULT_QUERIES = 1000
QUICK_WARMUP = 20
QUICK_QUERIES = 200
DEFAULT_COUNT_ROUNDS = 2  # rounds of (without, with) postmasters, the order alternating
QUICK_COUNT_ROUNDS = 1
DEFAULT_DURATION_S = 8  # the 8 s runs
QUICK_DURATION_S = 2
DEFAULT_PAIRS = 4  # per order: ABAB.. (4 pairs = 8 runs) and BABA.. (8 runs)
QUICK_PAIRS = 1
DEFAULT_CLIENTS = 1
RANDOM_SEED = 20261123  # pgbench --random-seed: the same aids in every counted run
INSTRUCTION_LIMIT = 1.01  # the acceptance bound on the instruction ratio

# Sessions that have temporary tables (issue 20): planning a point query on an indexed temp table at
# several temp_buffers, and the 22 TPC-H queries over temp tables vs an UNLOGGED copy.
DEFAULT_POINT_ROWS = 2_000_000
QUICK_POINT_ROWS = 100_000
DEFAULT_POINT_TEMP_BUFFERS = ("8MB", "512MB", "4GB")
DEFAULT_PLANNINGS = 200  # EXPLAINs per configuration (on/off alternating each repetition), steady and cold each
QUICK_PLANNINGS = 40
DEFAULT_COUNTED_PLANNINGS = 20  # EXPLAINs per configuration and phase in the callgrind backend
QUICK_COUNTED_PLANNINGS = 5
POINT_KEY = 4242
DEFAULT_TPCH_SCALE = 0.5
QUICK_TPCH_SCALE = 0.01
DEFAULT_TPCH_PLANNINGS = 5  # EXPLAINs per query and configuration (median)
QUICK_TPCH_PLANNINGS = 3
TPCH_WORKERS = 2  # max_parallel_workers_per_gather of the TPC-H planning session
TPCH_UNLOGGED_SCHEMA = "tpch_unlogged"
TPCH_PLANNING_LIMIT = 1.5  # issue 20: sum of planning times, temp with pg_tempbuf on / UNLOGGED copy


@dataclass(frozen=True)
class OverheadOptions:
    scale: int
    warmup_queries: int
    queries: int
    count_rounds: int
    duration_s: int
    pairs: int
    clients: int
    callgrind: bool
    tps: bool
    out_dir: Path | None  # None: results/overhead-pg<major>
    temp_sessions: bool = True
    point_rows: int = DEFAULT_POINT_ROWS
    point_temp_buffers: tuple[str, ...] = DEFAULT_POINT_TEMP_BUFFERS
    plannings: int = DEFAULT_PLANNINGS
    counted_plannings: int = DEFAULT_COUNTED_PLANNINGS
    tpch_scale: float = DEFAULT_TPCH_SCALE
    tpch_plannings: int = DEFAULT_TPCH_PLANNINGS
    tpch_temp_buffers: str | None = None  # None: tpch_tables.temp_buffers_for(tpch_scale)
    pg_config: Path | None = None
    dsn: str | None = None
    quick: bool = False
