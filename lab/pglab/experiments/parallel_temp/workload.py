"""The data, the queries, and how each variant puts the table in the state it measures."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import psycopg

# Where a plan could go either way: a CPU-bound aggregate (the acceptance
# query), a selective filter (little work per row, the scan dominates), a bare count.
QUERIES = {
    "cpu_aggregate": "SELECT count(*), sum(x), sum(length(s)) FROM {t} WHERE s LIKE '%ab%'",
    "selective_filter": "SELECT x, s FROM {t} WHERE x % 100000 = 7",
    "count": "SELECT count(*) FROM {t}",
}

# Planner settings that make a parallel plan win whatever its estimate: used to time a
# plan, never to choose one (the decision experiment keeps the defaults for that).
FORCE_PARALLEL = (
    "SET parallel_setup_cost = 0",
    "SET parallel_tuple_cost = 0",
    "SET min_parallel_table_scan_size = 0",
    "SET pg_tempbuf.write_page_cost = 0",
    "SET pg_tempbuf.buffer_scan_cost = 0",
    "SET pg_tempbuf.read_page_cost = 0",
    "SET pg_tempbuf.parallel_margin = 0",
)
DEFAULT_COSTS = (
    "RESET parallel_setup_cost",
    "RESET parallel_tuple_cost",
    "RESET min_parallel_table_scan_size",
    "RESET pg_tempbuf.write_page_cost",
    "RESET pg_tempbuf.buffer_scan_cost",
    "RESET pg_tempbuf.read_page_cost",
    "RESET pg_tempbuf.parallel_margin",
)


class Variant(StrEnum):
    SERIAL = "serial"  # stock plan: pg_tempbuf.parallel_scan = off
    PARALLEL_CLEAN = "parallel_clean"  # our scan, nothing to flush
    PARALLEL_DIRTY = "parallel_dirty"  # our scan, every resident page dirty
    PARALLEL_PART_DIRTY = "parallel_part_dirty"  # our scan, a quarter of the table dirty
    UNLOGGED_PARALLEL = "unlogged_parallel"  # stock Parallel Seq Scan of an UNLOGGED copy


PART_DIRTY_SHARE = 0.25


@dataclass(frozen=True)
class TableShape:
    rows: int
    pages: int
    bytes: int


def create_tables(conn: psycopg.Connection[Any], rows: int) -> TableShape:
    conn.execute("DROP TABLE IF EXISTS bench_t")
    conn.execute("DROP TABLE IF EXISTS bench_u")
    conn.execute(
        "CREATE TEMP TABLE bench_t AS "
        "SELECT g AS x, md5(g::text) AS s FROM generate_series(1, %s) g",
        (rows,),
    )
    conn.execute("CREATE UNLOGGED TABLE bench_u AS SELECT * FROM bench_t")
    conn.execute("ANALYZE bench_t")
    conn.execute("ANALYZE bench_u")
    # Steady state before timing: a first serial scan sets every tuple's hint bits
    # (dirtying, so writing, every page), which would otherwise be charged to whichever
    # variant happens to run first.  The parallel scan reads hints but never sets them.
    conn.execute("SET pg_tempbuf.parallel_scan = off")
    conn.execute("SELECT count(*) FROM bench_t")
    conn.execute("SELECT count(*) FROM bench_u")
    conn.execute("SELECT pg_flush_local_buffers()")
    row = conn.execute(
        "SELECT pg_relation_size('bench_t') / current_setting('block_size')::int, "
        "pg_relation_size('bench_t')"
    ).fetchone()
    assert row is not None
    return TableShape(rows=rows, pages=int(row[0]), bytes=int(row[1]))


def drop_tables(conn: psycopg.Connection[Any]) -> None:
    conn.execute("DROP TABLE IF EXISTS bench_t")
    conn.execute("DROP TABLE IF EXISTS bench_u")


def set_workers(conn: psycopg.Connection[Any], workers: int) -> None:
    """Exactly `workers` workers planned, for our scan and the stock one alike."""
    conn.execute(f"SET max_parallel_workers_per_gather = {workers}")
    conn.execute(f"ALTER TABLE bench_t SET (parallel_workers = {workers})")
    conn.execute(f"ALTER TABLE bench_u SET (parallel_workers = {workers})")


def make_dirty(conn: psycopg.Connection[Any], share: float, pages: int) -> int:
    """Leave `share` of the table's pages dirty in local buffers (as many as fit); returns
    how many are dirty.  Untimed preparation before a measured run."""
    conn.execute("SELECT pg_flush_local_buffers()")
    if share <= 0:
        return 0
    if share < 1:
        # Keep only the first part of the table resident, then dirty what is resident.
        conn.execute("SELECT pg_evict_local_buffers('bench_t')")
        first = max(1, int(pages * share))
        conn.execute(f"SELECT count(*) FROM bench_t WHERE ctid < '({first},0)'::tid")
    else:
        conn.execute("SELECT pg_read_temp_relation('bench_t')")
    row = conn.execute("SELECT pg_temp_buffers_dirty('bench_t')").fetchone()
    assert row is not None
    return int(row[0])


def prepare_variant(conn: psycopg.Connection[Any], variant: Variant, pages: int) -> tuple[str, int]:
    """Settings and table state for one timed run; returns (table to query, dirty pages)."""
    for sql in FORCE_PARALLEL:
        conn.execute(sql)
    if variant is Variant.SERIAL:
        # From clean buffers, like parallel_clean: a table larger than the pool would
        # otherwise make the serial scan write dirty pages as it evicts them.
        conn.execute("SET pg_tempbuf.parallel_scan = off")
        conn.execute("SELECT pg_flush_local_buffers()")
        return "bench_t", 0
    conn.execute("SET pg_tempbuf.parallel_scan = on")
    if variant is Variant.UNLOGGED_PARALLEL:
        return "bench_u", 0
    share = {
        Variant.PARALLEL_CLEAN: 0.0,
        Variant.PARALLEL_DIRTY: 1.0,
        Variant.PARALLEL_PART_DIRTY: PART_DIRTY_SHARE,
    }[variant]
    return "bench_t", make_dirty(conn, share, pages)


def plan_summary(conn: psycopg.Connection[Any], sql: str) -> dict[str, Any]:
    """What EXPLAIN ANALYZE says about one run: our node used, workers launched."""
    lines = [r[0] for r in conn.execute(f"EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) {sql}").fetchall()]
    launched = [int(line.split(":")[1]) for line in lines if "Workers Launched:" in line]
    return {
        "temp_seq_scan": any("Temp Seq Scan" in line for line in lines),
        "parallel_seq_scan": any("Parallel Seq Scan" in line for line in lines),
        "workers_launched": sum(launched),
        "leader_only": any("Leader Only:" in line for line in lines),
    }


def reset_planner_defaults(conn: psycopg.Connection[Any]) -> None:
    """Default costs and worker counts: the planner decides as it would for a user."""
    for sql in DEFAULT_COSTS:
        conn.execute(sql)
    conn.execute("RESET max_parallel_workers_per_gather")
    conn.execute("ALTER TABLE bench_t RESET (parallel_workers)")


def chosen_plan_is_parallel(conn: psycopg.Connection[Any], sql: str) -> bool:
    lines = [r[0] for r in conn.execute(f"EXPLAIN (COSTS OFF) {sql}").fetchall()]
    return any("Temp Seq Scan" in line for line in lines)
