"""The planner's census of the local buffer pool says what a walk of every buffer says.

The planner prices a Temp Seq Scan from a census of the pool that it keeps until the pool may
have changed, and that walks only the buffers the session may have used (localbuf_access.c).
After each step of a random session (inserts, updates, deletes, hash and btree indexes, DROP,
TRUNCATE, VACUUM, flushes, evictions, reads back), the scan's flush estimate must count the
table's dirty main-fork pages and the pool's pages exactly as `pg_local_buffers` (a walk of
every buffer) does, in a pool that fits the tables and in one they overflow.  The one exception
is a table whose flush will not walk the pool: flushed whole since any page last became dirty
(localbuf_access.c's clean forks).  Then the walk is priced at nothing, and the walk of every
buffer must find none of its pages dirty.

PGTB_CENSUS_EXAMPLES sets the number of sessions.
"""

from __future__ import annotations

import os
from typing import Any

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FORCE_PARALLEL
from pglab.cluster import Cluster

EXAMPLES = int(os.environ.get("PGTB_CENSUS_EXAMPLES", "25"))
TABLES = ("c1", "c2")


@st.composite
def step(draw: st.DrawFn) -> str:
    t = draw(st.sampled_from(TABLES))
    rows = draw(st.integers(1, 4000))
    m = draw(st.integers(2, 7))
    return draw(st.sampled_from([
        f"INSERT INTO {t} SELECT g, md5(g::text) FROM generate_series(1, {rows}) g",
        f"UPDATE {t} SET b = b || 'x' WHERE a % {m} = 0",
        f"DELETE FROM {t} WHERE a % {m} = 1",
        f"CREATE INDEX ON {t} USING hash (a)",
        f"CREATE INDEX ON {t} (b)",
        f"DROP TABLE {t}; CREATE TEMP TABLE {t} (a int, b text)",
        f"TRUNCATE {t}",
        f"VACUUM {t}",
        f"SELECT pg_evict_local_buffers('{t}')",
        "SELECT pg_evict_local_buffers()",
        "SELECT pg_flush_local_buffers()",
        f"SELECT count(*) FROM {t} WHERE b LIKE '%ab%'",
    ]))


def walked(conn: psycopg.Connection[Any], table: str) -> tuple[int, int]:
    """(dirty main-fork pages of table, pages in the pool), from a walk of every buffer."""
    row = conn.execute(
        "SELECT count(*) FILTER (WHERE relfilenode = pg_relation_filenode(%s) AND relforknumber = 0 "
        "AND isdirty), pg_allocated_local_buffers() FROM pg_local_buffers", (table,)
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def priced(conn: psycopg.Connection[Any], table: str) -> tuple[int, int] | None:
    """(dirty pages, pages in the pool) as the planner's census priced a scan of table.

    With write_page_cost 0 and buffer_scan_cost 1 the flush estimate's cost is the pool's pages.
    None when the plan has no scan of ours (an empty table's scan stays stock)."""
    plan = conn.execute(f"EXPLAIN (FORMAT JSON) SELECT count(*) FROM {table}").fetchone()
    assert plan is not None
    pending = [plan[0][0]["Plan"]]
    while pending:
        node = pending.pop()
        if node.get("Custom Plan Provider") == "Temp Seq Scan":
            return int(node["Flush Estimate Pages"]), round(float(node["Flush Estimate Cost"]))
        pending.extend(node.get("Plans", []))
    return None


def test_census_matches_a_walk(preloaded_cluster: Cluster) -> None:
    compared = 0
    known_clean = 0

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=os.environ.get("PGTB_DIFF_RANDOM") is None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from(["1MB", "64MB"]), st.lists(step(), min_size=1, max_size=25))
    def check(temp_buffers: str, steps: list[str]) -> None:
        nonlocal compared, known_clean
        with preloaded_cluster.connect(options=f"-c temp_buffers={temp_buffers}") as conn:
            for name, value in FORCE_PARALLEL.items():
                conn.execute(f"SET {name} = {value}")
            conn.execute("SET pg_tempbuf.buffer_scan_cost = 1")
            for name in ("enable_indexscan", "enable_indexonlyscan", "enable_bitmapscan"):
                conn.execute(f"SET {name} = off")
            for t in TABLES:
                conn.execute(f"CREATE TEMP TABLE {t} (a int, b text)")
            for sql in steps:
                conn.execute(sql)
                for t in TABLES:
                    census = priced(conn, t)
                    if census is None:
                        continue
                    dirty, pool = walked(conn, t)
                    if census == (0, 0) and pool > 0:
                        assert dirty == 0, f"known clean with {dirty} dirty pages after {sql!r} in {steps}"
                        known_clean += 1
                    else:
                        assert census == (dirty, pool), f"after {sql!r} in {steps}"
                    compared += 1

    check()
    assert compared > EXAMPLES, compared
    assert known_clean > 0, "no table was ever known clean"
