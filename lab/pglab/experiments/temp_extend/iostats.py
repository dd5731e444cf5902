"""Counting a session's temporary-relation I/O with what the server offers.

- PostgreSQL 18+: pg_stat_get_backend_io(pid), this backend only, with bytes and times.
- PostgreSQL 16, 17: pg_stat_io, all client backends together (op_bytes per operation);
  on a throwaway cluster that is only us.
- PostgreSQL 15 and older: no I/O statistics view; pg_stat_statements' local_blks_* of the
  statement (when preloaded) and the file's size are what the server tells.

Times are zero unless track_io_timing is on.  Both views are cumulative and a backend
publishes its counts lazily (at most once a second while busy), so a snapshot forces the
flush first: pg_stat_force_next_flush() in one statement, the read in the next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

BACKEND_IO = "pg_stat_get_backend_io"
STAT_IO = "pg_stat_io"

# Operations on temporary relations we report, and the columns they come from.
COUNTS = ("reads", "writes", "extends", "hits", "evictions")
TIMES = ("read_time", "write_time", "extend_time")
BYTES = ("read_bytes", "write_bytes", "extend_bytes")


def io_source(version_num: int) -> str | None:
    if version_num >= 180000:
        return BACKEND_IO
    if version_num >= 160000:
        return STAT_IO
    return None


@dataclass(frozen=True)
class IoSnapshot:
    values: dict[str, float]

    def minus(self, before: IoSnapshot) -> dict[str, float]:
        return {k: v - before.values.get(k, 0.0) for k, v in self.values.items()}


def snapshot(conn: psycopg.Connection[Any], source: str) -> IoSnapshot:
    """Cumulative temp-relation I/O of this backend (18+) or of all client backends (16, 17)."""
    conn.execute("SELECT pg_stat_force_next_flush()")
    if source == BACKEND_IO:
        columns = [*COUNTS, *TIMES, *BYTES]
        query = (
            "SELECT " + ", ".join(f"coalesce(sum({c}), 0)::float8" for c in columns)
            + " FROM pg_stat_get_backend_io(pg_backend_pid()) WHERE object = 'temp relation'"
        )
    else:
        columns = [*COUNTS, *TIMES, *BYTES]
        # 16 and 17 give op_bytes (the size of one operation) instead of byte counts.
        byte_columns = [f"coalesce(sum({op} * op_bytes), 0)::float8" for op in ("reads", "writes", "extends")]
        query = (
            "SELECT " + ", ".join(f"coalesce(sum({c}), 0)::float8" for c in [*COUNTS, *TIMES])
            + ", " + ", ".join(byte_columns)
            + " FROM pg_stat_io WHERE object = 'temp relation' AND backend_type = 'client backend'"
        )
    row = conn.execute(query).fetchone()
    assert row is not None
    return IoSnapshot({c: float(v) for c, v in zip(columns, row, strict=True)})


PGSS_COUNTERS = ("calls", "local_blks_dirtied", "local_blks_written", "total_exec_time")
PGSS_WRITE_TIME = "local_blk_write_time"  # PostgreSQL 17+


@dataclass(frozen=True)
class StatementStats:
    """pg_stat_statements rows of statements that start with `prefix` (summed)."""

    available: bool
    why_not: str = ""
    has_write_time: bool = False

    def read(self, conn: psycopg.Connection[Any], prefix: str) -> dict[str, float]:
        columns = [*PGSS_COUNTERS, *([PGSS_WRITE_TIME] if self.has_write_time else [])]
        query = (
            "SELECT " + ", ".join(f"coalesce(sum({c}), 0)::float8" for c in columns)
            + " FROM pg_stat_statements WHERE query LIKE %s"
        )
        row = conn.execute(query, (prefix + "%",)).fetchone()
        assert row is not None
        return {c: float(v) for c, v in zip(columns, row, strict=True)}


def statement_stats(conn: psycopg.Connection[Any], may_create: bool) -> StatementStats:
    """pg_stat_statements if the server preloads it (created in the database when allowed)."""
    preload = conn.execute("SELECT current_setting('shared_preload_libraries')").fetchone()
    if preload is None or "pg_stat_statements" not in str(preload[0]):
        return StatementStats(False, "pg_stat_statements is not in shared_preload_libraries")
    installed = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'").fetchone()
    if not installed:
        if not may_create:
            return StatementStats(False, "extension pg_stat_statements is not created in this database")
        try:
            conn.execute("CREATE EXTENSION pg_stat_statements")
        except psycopg.Error as exc:
            return StatementStats(False, f"CREATE EXTENSION pg_stat_statements failed: {exc}".splitlines()[0])
    has_time = conn.execute(
        "SELECT 1 FROM pg_attribute WHERE attrelid = 'pg_stat_statements'::regclass AND attname = %s",
        (PGSS_WRITE_TIME,),
    ).fetchone()
    return StatementStats(True, has_write_time=has_time is not None)
