"""Options of `pglab index-build`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

NAME = "index-build"
EXTENSION = "pg_tempbuf"  # the extension measured, whose version and library the results name

DEFAULT_ROWS = (100_000, 1_000_000, 5_000_000)
QUICK_ROWS = (20_000, 200_000)
KEYS = ("int", "text")  # int: g (in order), text: md5(g::text) (in random order)
DEFAULT_REPETITIONS = 5  # rounds; each builds the index once in every mode, the order rotating
QUICK_REPETITIONS = 2
DEFAULT_WORKERS = 2  # max_parallel_maintenance_workers
DEFAULT_MAINTENANCE_WORK_MEM = "64MB"  # core's rule: 32MB a participant, so 1 worker at 64MB
DEFAULT_TEMP_BUFFERS = ("1GB",)  # holds a 10M-row table (about 650 MiB): the load stays in the leader's buffers
GOAL_VS_UNLOGGED = 1.10  # the goal line: ours within 10% of the UNLOGGED copy's parallel build (reported only)
SAMPLE_INTERVAL_S = 0.010  # the workers' RssAnon, read from /proc/<pid>/status this often during each build


@dataclass(frozen=True)
class IndexBuildOptions:
    rows: tuple[int, ...]  # table sizes, ascending
    keys: tuple[str, ...]  # of KEYS, in the given order
    repetitions: int
    workers: int  # max_parallel_maintenance_workers (not of the UNLOGGED serial mode)
    maintenance_work_mem: str
    temp_buffers: tuple[str, ...]  # pool sizes, ascending: each (rows, key) case runs at each, a session per size
    out_dir: Path | None  # None: results/index-build-pg<major>
    unlogged_serial: bool = True  # also time the UNLOGGED copy's serial build (max_parallel_maintenance_workers = 0)
    table_parallel_workers: int | None = None  # the tables' parallel_workers storage parameter; None: not set
    pg_config: Path | None = None
    dsn: str | None = None
    checksums: bool | None = None  # the throwaway cluster's data checksums; None: initdb's default
    # The throwaway server's shared_buffers: None for equal memory (the UNLOGGED copy's build may keep in
    # shared_buffers what the temporary table keeps in temp_buffers), 'server' for its own (pglab.equal_memory).
    shared_buffers: str | None = None
    quick: bool = False
    worker_memory: bool = True  # sample the parallel workers' RssAnon during every build
