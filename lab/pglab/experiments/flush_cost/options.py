"""Options, phase names and the size grid of the flush-cost experiment."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

# The article's grid: buffer pools of 1 MB .. 2 GB (128 .. 262144 blocks), 30 iterations each.
ARTICLE_SIZES: tuple[int, ...] = tuple(2**k for k in range(7, 19))
DEFAULT_ITERATIONS = 30
# A small grid for `make demo`: 4 sizes spanning two decades, and 6 iterations, the fewest
# for which a 95% order-statistic CI of the median exists.
QUICK_SIZES: tuple[int, ...] = (1024, 4096, 16384, 65536)
QUICK_ITERATIONS = 6

# temp_buffers is 110% of the table, the extra 10% for its free space map (as in the article).
POOL_HEADROOM = 1.10
MIN_TEMP_BUFFERS = 100  # PostgreSQL's lower bound for temp_buffers, in blocks
# Share of available memory / free disk a size may need before we drop it.
MEMORY_BUDGET_SHARE = 0.8
DISK_BUDGET_SHARE = 0.9


class EvictMode(StrEnum):
    FUNCTION = "function"  # pg_evict_local_buffers(table)
    DISPLACER = "displacer"  # the article's way: fill the pool with a scratch table, flush, drop it


# Phases, in the order of the article's steps; names match the reference CSVs where they exist.
WRITE_SEQ = "write_seq"
DRY_WRITE = "dry_write"
FLUSH_DISPLACER = "flush_displacer"
READ_SEQ = "read_seq"
DRY_READ = "dry_read"
READ_RANDOM = "read_random"
HIT_CHECK = "hit_check"
MARK_DIRTY = "mark_dirty"
WRITE_RANDOM = "write_random"
# Ours only: the second displacer flush (before the random read) and function evictions.
FLUSH_DISPLACER_FOR_RANDOM = "flush_displacer_for_random"
EVICT_FOR_SEQ = "evict_for_seq"
EVICT_FOR_RANDOM = "evict_for_random"
# Ours only: a count(*) of the resident, clean table, serial (local buffer hits) and by one
# parallel worker alone (private reads of the file): their difference prices read_page_cost.
SCAN_RESIDENT = "scan_resident"
SCAN_PRIVATE = "scan_private"
# Ours only, after step 10: the same pair through a btree index on the table (an Index Scan
# in the leader, a Temp Index Scan in one worker): what a worker's private read of the pages
# an index scan fetches costs, priced with the same read_page_cost.
INDEX_RESIDENT = "index_resident"
INDEX_PRIVATE = "index_private"
# Ours only: the same bytes written/read without PostgreSQL.
RAW_WRITE = "raw_write"
RAW_READ = "raw_read"
RAW_READ_COLD = "raw_read_cold"

REFERENCE_PHASES = (
    WRITE_SEQ, DRY_WRITE, FLUSH_DISPLACER, READ_SEQ, DRY_READ,
    READ_RANDOM, HIT_CHECK, MARK_DIRTY, WRITE_RANDOM,
)
RAW_PHASES = (RAW_WRITE, RAW_READ, RAW_READ_COLD)


def eviction_phases(mode: EvictMode) -> tuple[str, str]:
    """Phase names of steps 3 and 6 (eviction before the sequential and the random read)."""
    if mode is EvictMode.DISPLACER:
        return FLUSH_DISPLACER, FLUSH_DISPLACER_FOR_RANDOM
    return EVICT_FOR_SEQ, EVICT_FOR_RANDOM


def phase_order(mode: EvictMode) -> tuple[str, ...]:
    evict_seq, evict_random = eviction_phases(mode)
    return (
        WRITE_SEQ, DRY_WRITE, evict_seq, READ_SEQ, DRY_READ,
        evict_random, READ_RANDOM, HIT_CHECK, SCAN_RESIDENT, SCAN_PRIVATE, MARK_DIRTY, WRITE_RANDOM,
        INDEX_RESIDENT, INDEX_PRIVATE,
    )


def pool_blocks(size: int) -> int:
    """temp_buffers (in blocks) for a table of `size` blocks."""
    return max(MIN_TEMP_BUFFERS, math.ceil(size * POOL_HEADROOM))


@dataclass(frozen=True)
class FlushCostOptions:
    sizes: tuple[int, ...]
    iterations: int
    out_dir: Path
    evict: EvictMode = EvictMode.FUNCTION
    pg_config: Path | None = None  # throwaway cluster of this installation (when dsn is None)
    dsn: str | None = None  # existing server
    checksums: bool | None = None  # throwaway cluster only; None: initdb's default
    tablespace_dir: Path | None = None
    cold_cache: bool = False
    quick: bool = False


@dataclass(frozen=True)
class SizePlan:
    kept: tuple[int, ...]
    dropped: tuple[tuple[int, str], ...]  # (size, why)


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.2f} GiB"


def plan_sizes(
    sizes: tuple[int, ...],
    block_size: int,
    evict: EvictMode,
    available_memory: int,
    free_disk: int | None,
) -> SizePlan:
    """Drop sizes that would not fit in memory (temp_buffers plus the OS page cache of the
    files) or on the disk holding the temp files; the article saw swapping distort results."""
    kept: list[int] = []
    dropped: list[tuple[int, str]] = []
    for size in sizes:
        pool_bytes = pool_blocks(size) * block_size
        # The pool, the table file's page cache, and in displacer mode the displacer's file.
        files_bytes = size * block_size + (pool_bytes if evict is EvictMode.DISPLACER else 0)
        memory_needed = pool_bytes + files_bytes
        if memory_needed > MEMORY_BUDGET_SHARE * available_memory:
            dropped.append((size, (
                f"needs ~{_gib(memory_needed)} of memory (temp_buffers + page cache of the temp "
                f"files), over {MEMORY_BUDGET_SHARE:.0%} of the {_gib(available_memory)} available"
            )))
        elif free_disk is not None and files_bytes > DISK_BUDGET_SHARE * free_disk:
            dropped.append((size, (
                f"needs ~{_gib(files_bytes)} of disk for temp files, over "
                f"{DISK_BUDGET_SHARE:.0%} of the {_gib(free_disk)} free"
            )))
        else:
            kept.append(size)
    return SizePlan(tuple(kept), tuple(dropped))
