"""Options of `pglab temp-shapes`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

NAME = "temp-shapes"

DEFAULT_REPETITIONS = 5
QUICK_REPETITIONS = 2
DEFAULT_WORKERS = 2
DEFAULT_TEMP_BUFFERS = "64MB"
DEFAULT_SCALE = 1.0  # TPC-H scale factor
QUICK_SCALE = 0.01
# TPC-H queries that join the dimension tables (nation, region, supplier, part).
DEFAULT_TPCH_QUERIES = ("q02", "q05", "q08", "q09", "q11", "q16", "q20")


@dataclass(frozen=True)
class Sizes:
    """Table sizes of the shapes (rows)."""

    big_rows: int  # the permanent table of the join and semi-join shapes
    keys_rows: int  # the small staged-keys temp table
    facts_rows: int  # the temp table read several times (self-join, CTE, subquery), and the indexed one
    parts_rows: int  # the partitioned temp table, over `partitions` partitions
    partitions: int
    docs_rows: int  # the TOAST shape's table
    docs_toasted: int  # rows of it holding an out-of-line value
    doc_bytes: int  # size of each out-of-line value
    small_rows: int = 2_000  # the small indexed table of the self-join (issue 30)


# The reporter's sizes (issue 9): 3M x 5,000 join, 400k rows with 20k values of 4.8 KB.
DEFAULT_SIZES = Sizes(big_rows=3_000_000, keys_rows=5_000, facts_rows=1_000_000, parts_rows=2_000_000,
                      partitions=4, docs_rows=400_000, docs_toasted=20_000, doc_bytes=4_800)
QUICK_SIZES = Sizes(big_rows=60_000, keys_rows=500, facts_rows=20_000, parts_rows=40_000,
                    partitions=4, docs_rows=8_000, docs_toasted=400, doc_bytes=4_800)


@dataclass(frozen=True)
class TempShapesOptions:
    sizes: Sizes
    repetitions: int
    workers: int  # max_parallel_workers_per_gather of the measuring session
    temp_buffers: str
    scale: float  # TPC-H scale factor
    tpch_queries: tuple[str, ...]  # empty: no TPC-H part
    shapes: tuple[str, ...]  # shape names to run, in order
    out_dir: Path | None  # None: results/temp-shapes-pg<major>
    # Every TPC-H table temporary (keys.sql's keys), against the same data as UNLOGGED tables, in a session of
    # its own with tpch_temp_buffers; False: the dimension tables temporary, against all permanent.
    tpch_all_temp: bool = False
    tpch_temp_buffers: str | None = None  # None: pglab.tpch_tables.temp_buffers_for(scale)
    # The throwaway server's shared_buffers: None for equal memory, 'server' for its own (pglab.equal_memory).
    shared_buffers: str | None = None
    pg_config: Path | None = None
    dsn: str | None = None
    quick: bool = False
