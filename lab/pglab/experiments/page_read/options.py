"""Options of `pglab page-read`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

NAME = "page-read"
EXTENSION = "pg_tempbuf"  # the extension measured, whose version and library the results name

# One row per page (FILLFACTOR and PAD_BYTES below), so pages = rows.
DEFAULT_PAGES = 32_768  # 256 MiB
QUICK_PAGES = 8_192  # 64 MiB
DEFAULT_REPETITIONS = 61  # timed rounds; each round times every mode once, the order rotating
QUICK_REPETITIONS = 7
DEFAULT_WORKERS = 2  # max_parallel_workers_per_gather and the tables' parallel_workers
DEFAULT_TEMP_BUFFERS = "512MB"  # holds the temporary table: every page stays in the leader's pool
DEFAULT_SHARED_BUFFERS = "1GB"  # the throwaway cluster's: holds the UNLOGGED copy
FILLFACTOR = 10
PAD_BYTES = 500  # a 532-byte row: with fillfactor 10 a page takes one

# The serial part: the leader's own scan of a temporary table, its local buffers in the shared pool or in
# core's private memory (pg_tempbuf.parallel_scan = off, no workers).
DEFAULT_SERIAL_ROWS = 1_500_000  # (id int, md5 text): about 100 MiB
QUICK_SERIAL_ROWS = 200_000
DEFAULT_SERIAL_REPETITIONS = 61  # timed rounds, each timing both sessions once, the order alternating
QUICK_SERIAL_REPETITIONS = 21
DEFAULT_SERIAL_TEMP_BUFFERS = "512MB"  # holds the serial table: every page a local hit
QUICK_SERIAL_TEMP_BUFFERS = "64MB"
SERIAL_ACCEPTANCE = 1.02  # "a serial scan with pg_tempbuf.parallel_scan = off is not slower (<= 2%)"


@dataclass(frozen=True)
class PageReadOptions:
    pages: int  # table size in pages (= rows)
    repetitions: int
    workers: int
    temp_buffers: str
    shared_buffers: str | None  # the throwaway cluster's; None with --dsn (the server's own)
    out_dir: Path | None  # None: results/page-read-pg<major>
    pg_config: Path | None = None
    dsn: str | None = None
    checksums: bool | None = None  # the throwaway cluster's data checksums; None: initdb's default
    quick: bool = False
    serial: bool = True  # also time the leader's serial scan, pool vs private (--no-serial: skip it)
    serial_rows: int = DEFAULT_SERIAL_ROWS
    serial_repetitions: int = DEFAULT_SERIAL_REPETITIONS
    serial_temp_buffers: str = DEFAULT_SERIAL_TEMP_BUFFERS
