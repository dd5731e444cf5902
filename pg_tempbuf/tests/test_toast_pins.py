"""No pin outlives the node that took it: TOASTed temporary tables read in parallel.

A partial Temp Seq Scan lists the leader's toast pages for its workers and pins them; a
scan that did not give them back left one `resource was not closed` warning (18) or
`buffer refcount leak` (15) per page at the statement's end, and the pool pinned until
then.  Each case reads out-of-line values in parallel in one of the states users meet
(read once serially, just written, mostly evicted by a small pool) through each of our
scans that can fetch them, and fails on any warning the server sends; the rows must be the
serial plan's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from conftest import force_parallel, serial_rows
from pglab.cluster import Cluster

ROWS = 40_000
# Every 20th row gets a value of ~4.8 kB stored out of line, uncompressed.
CREATE = (
    "CREATE TEMP TABLE tt (id int, k int, v text);"
    "ALTER TABLE tt ALTER v SET STORAGE EXTERNAL;"
    f"INSERT INTO tt SELECT g, g % 500, CASE WHEN g % 20 = 0 THEN repeat(md5(g::text), 150) "
    f"ELSE md5(g::text) END FROM generate_series(1, {ROWS}) g;"
)

SHAPES = {
    "partial seq scan": "SELECT count(*), sum(length(v)) FROM tt WHERE v LIKE '%ab%'",
    "full scan, hash inner side":
        "SELECT count(*), sum(length(b.v)) FROM tt a JOIN tt b ON a.id = b.id + 1 WHERE b.v LIKE '%0%'",
    "index scan": "SELECT count(*), sum(length(v)) FROM tt WHERE k BETWEEN 10 AND 200",
    "bitmap scan": "SELECT count(*), sum(length(v)) FROM tt WHERE k IN (0, 20, 40, 60, 80) OR id < 500",
}


@pytest.fixture
def warned(preloaded_cluster: Cluster) -> Iterator[tuple[psycopg.Connection[Any], list[str]]]:
    """A fresh session whose server warnings are collected."""
    with preloaded_cluster.connect() as conn:
        messages: list[str] = []
        conn.add_notice_handler(
            lambda diag: messages.append(f"{diag.severity}: {diag.message_primary}")
            if diag.severity_nonlocalized == "WARNING" else None)
        yield conn, messages


@pytest.mark.parametrize("state", ["read serially", "just written", "evicted"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_toast_reads_release_every_pin(warned: tuple[psycopg.Connection[Any], list[str]],
                                       shape: str, state: str) -> None:
    conn, warnings = warned
    query = SHAPES[shape]
    conn.execute("SET temp_buffers = '1MB'" if state == "evicted" else "SET temp_buffers = '64MB'")
    conn.execute(CREATE)
    if shape in ("index scan", "bitmap scan"):
        conn.execute("CREATE INDEX ON tt (k); CREATE INDEX ON tt (id)")
    conn.execute("ANALYZE tt")
    expected = serial_rows(conn, query)
    if state == "just written":
        conn.execute("UPDATE tt SET v = v || '' WHERE id % 20 = 0")
        expected = serial_rows(conn, query)
        conn.execute("UPDATE tt SET k = k WHERE id % 7 = 0")
    force_parallel(conn)
    plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN (ANALYZE, COSTS OFF) {query}"))
    assert "Workers Launched" in plan, plan
    assert conn.execute(query).fetchall() == expected
    assert warnings == []
