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
    pg_config: Path | None = None
    dsn: str | None = None
    quick: bool = False
