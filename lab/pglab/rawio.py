"""The filesystem's own sequential write/read speed, without PostgreSQL.

This is the physical limit a flush of N temp buffers could reach: N 8 KiB pwrite() calls over
a file that already has N zero blocks (PostgreSQL extends a temp table's file block by block
while filling it, so its flush overwrites existing blocks), no fsync; then N pread() calls.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def can_drop_page_cache() -> bool:
    return os.geteuid() == 0 and os.access(DROP_CACHES, os.W_OK)


def drop_page_cache() -> None:
    """Write back dirty pages, then drop the clean page cache (needs root)."""
    os.sync()
    DROP_CACHES.write_text("1\n")


@dataclass(frozen=True)
class RawIoTimes:
    write_ms: float
    read_ms: float  # right after the write: pages in the OS page cache
    read_cold_ms: float | None  # after dropping the page cache; None when not measured


def _elapsed_ms(start_ns: int) -> float:
    return (time.perf_counter_ns() - start_ns) / 1e6


def measure_raw_io(directory: Path, nblocks: int, block_size: int, cold_read: bool) -> RawIoTimes:
    path = directory / f"pglab-raw-io-{os.getpid()}.tmp"
    payload = os.urandom(block_size)
    zeros = bytes(block_size)
    sink = bytearray(block_size)
    fd = os.open(path, os.O_CREAT | os.O_TRUNC | os.O_RDWR | os.O_CLOEXEC, 0o600)
    try:
        for block in range(nblocks):
            os.pwrite(fd, zeros, block * block_size)

        start = time.perf_counter_ns()
        for block in range(nblocks):
            os.pwrite(fd, payload, block * block_size)
        write_ms = _elapsed_ms(start)

        start = time.perf_counter_ns()
        for block in range(nblocks):
            os.preadv(fd, [sink], block * block_size)
        read_ms = _elapsed_ms(start)

        read_cold_ms = None
        if cold_read:
            drop_page_cache()
            start = time.perf_counter_ns()
            for block in range(nblocks):
                os.preadv(fd, [sink], block * block_size)
            read_cold_ms = _elapsed_ms(start)
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    return RawIoTimes(write_ms, read_ms, read_cold_ms)
