"""Options of `pglab parallel-temp`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# Table sizes in rows of (x int, s text): about 68 bytes a row, 120 rows a page,
# so 1M rows are about 65 MB.
DEFAULT_ROWS = (100_000, 500_000, 1_000_000, 2_000_000, 4_000_000)
QUICK_ROWS = (200_000, 1_000_000)
DEFAULT_REPETITIONS = 7
QUICK_REPETITIONS = 3
DEFAULT_TEMP_BUFFERS = "32MB"
DEFAULT_DIRTY_SHARES = (0.0, 0.25, 1.0)
# temp_buffers of the real-session cases (sessions.py): large enough to hold the tables.
DEFAULT_SESSION_TEMP_BUFFERS = "512MB"


def default_workers() -> tuple[int, ...]:
    cores = os.cpu_count() or 1
    return tuple(range(1, max(cores, 1) + 1))


@dataclass(frozen=True)
class ParallelTempOptions:
    rows: tuple[int, ...]
    workers: tuple[int, ...]
    repetitions: int
    temp_buffers: str
    out_dir: Path
    pg_config: Path | None
    dsn: str | None
    checksums: bool | None
    decision: bool
    quick: bool
    sessions: bool = True  # the real-session cases of the decision experiment
    session_temp_buffers: str = DEFAULT_SESSION_TEMP_BUFFERS
    # The throwaway server's shared_buffers: None for equal memory, 'server' for its own (pglab.equal_memory).
    shared_buffers: str | None = None
