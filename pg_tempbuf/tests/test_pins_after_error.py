"""A statement that fails while its Temp Seq Scan holds the leader's pins leaves no pin behind.

A partial Temp Seq Scan pins every page of the table it lists for its workers, from before they
start until the scan ends.  From 17 the pins are one entry of the resource owner (page_guard.c),
so an error must let them go through that entry: at the end of the transaction, and at the
rollback of a savepoint inside it.  A page still pinned afterwards shows as an ERROR of
pg_evict_local_buffers(), which refuses to drop a pinned page, and as a warning at commit.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from conftest import force_parallel
from pglab.cluster import Cluster

ROWS = 60_000
# Whichever participant meets row 45,000 divides by zero, after the leader pinned the pages.
FAILING = f"SELECT count(*) FROM tp WHERE 1 / (id - {ROWS * 3 // 4}) >= 0"


def prepared(cluster: Cluster) -> tuple[psycopg.Connection[Any], list[str]]:
    conn = cluster.connect()
    warnings: list[str] = []
    conn.add_notice_handler(
        lambda diag: warnings.append(f"{diag.severity}: {diag.message_primary}")
        if diag.severity_nonlocalized == "WARNING" else None)
    conn.execute("SET temp_buffers = '64MB'")
    conn.execute(f"CREATE TEMP TABLE tp AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, {ROWS}) g")
    conn.execute("ANALYZE tp")
    force_parallel(conn)
    plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM tp "
                                                      f"WHERE v LIKE '%ab%'"))
    assert "Workers Launched: 2" in plan and "Pages Pinned: 0" not in plan, plan
    return conn, warnings


def test_failed_statement_releases_the_pins(preloaded_cluster: Cluster) -> None:
    conn, warnings = prepared(preloaded_cluster)
    with conn:
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute(FAILING)
        assert conn.execute("SELECT pg_evict_local_buffers('tp')").fetchone() is not None
        assert conn.execute("SELECT count(*) FROM tp").fetchone() == (ROWS,)
        assert warnings == []


def test_rolled_back_savepoint_releases_the_pins(preloaded_cluster: Cluster) -> None:
    conn, warnings = prepared(preloaded_cluster)
    with conn:
        conn.autocommit = False
        conn.execute("SAVEPOINT before_scan")
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute(FAILING)
        conn.execute("ROLLBACK TO SAVEPOINT before_scan")
        # Still in the transaction that failed the scan: its pins are gone already.
        assert conn.execute("SELECT pg_evict_local_buffers('tp')").fetchone() is not None
        assert conn.execute("SELECT count(*) FROM tp WHERE v LIKE '%ab%'").fetchone() is not None
        conn.commit()
        assert warnings == []
