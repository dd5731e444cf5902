"""Out-of-line values in parallel workers: every participant fetches them privately.

Each test builds a temporary table whose toast relation holds data, runs a query
that reads the toasted columns with parallel plans forced, checks that workers
were launched and that the scan fetched the out-of-line values itself (EXPLAIN
ANALYZE's "Toast Values Fetched"), and compares the rows with the serial plan
(pg_tempbuf.parallel_scan = off) in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from conftest import force_parallel

# 8 kB pages: the payload of one toast chunk.
TOAST_MAX_CHUNK_SIZE = 1996

# Distinct hex digits, each md5 written twice: pglz and lz4 halve it, so the
# compressed value is still far above the toast threshold and goes out of line.
HALF_COMPRESSIBLE = "(SELECT string_agg(repeat(md5({seed}::text || i::text), 2), '') FROM generate_series(1, {n}) i)"

RESULT_QUERY = (
    "SELECT count(*), count(v), sum(length(v)), md5(string_agg(md5(v), ',' ORDER BY id)) FROM tv"
)


@pytest.fixture
def conn(session: psycopg.Connection[Any]) -> Iterator[psycopg.Connection[Any]]:
    force_parallel(session)
    yield session


def scan_node(plan: dict[str, Any]) -> dict[str, Any]:
    if plan.get("Custom Plan Provider") == "Temp Seq Scan":
        return plan
    for child in plan.get("Plans", []):
        found = scan_node(child)
        if found:
            return found
    return {}


def gather_node(plan: dict[str, Any]) -> dict[str, Any]:
    if plan["Node Type"] in ("Gather", "Gather Merge"):
        return plan
    for child in plan.get("Plans", []):
        found = gather_node(child)
        if found:
            return found
    return {}


def counts(text: str) -> dict[str, int]:
    """'leader=3 worker 0=5' -> {'leader': 3, 'worker 0': 5}"""
    result = {}
    for part in text.replace("worker ", "worker_").split():
        name, value = part.split("=")
        result[name.replace("_", " ")] = int(value)
    return result


def parallel_vs_serial(conn: psycopg.Connection[Any], query: str) -> tuple[list[Any], dict[str, int]]:
    """Run query parallel (checked) and serial; return the rows and the toast fetches.

    The checked run leaves the scan to the workers, which would otherwise find
    a small table read by the leader before they start.
    """
    conn.execute("SET parallel_leader_participation = off")
    try:
        explain = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {query}").fetchone()
    finally:
        conn.execute("RESET parallel_leader_participation")
    assert explain is not None
    plan = (explain[0] if isinstance(explain[0], list) else json.loads(explain[0]))[0]["Plan"]
    gather = gather_node(plan)
    scan = scan_node(plan)
    assert gather and scan, plan
    assert gather["Workers Launched"] > 0, gather
    assert "Leader Only" not in scan, scan
    fetched = counts(scan.get("Toast Values Fetched", "leader=0"))
    assert fetched["leader"] == 0, fetched

    parallel = conn.execute(query).fetchall()
    conn.execute("SET pg_tempbuf.parallel_scan = off")
    try:
        assert "Parallel" not in "".join(r[0] for r in conn.execute(f"EXPLAIN (COSTS OFF) {query}"))
        serial = conn.execute(query).fetchall()
    finally:
        conn.execute("SET pg_tempbuf.parallel_scan = on")
    assert parallel == serial
    return parallel, fetched


def lz4_available(conn: psycopg.Connection[Any]) -> bool:
    try:
        conn.execute("SET default_toast_compression = lz4")
    except psycopg.errors.Error:
        return False
    conn.execute("RESET default_toast_compression")
    return True


def external_count(conn: psycopg.Connection[Any]) -> int:
    """Out-of-line values that tv's visible rows point at: the toast relation's visible values."""
    row = conn.execute(
        "SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = 'tv'::regclass"
    ).fetchone()
    assert row is not None
    count = conn.execute(f"SELECT count(DISTINCT chunk_id) FROM {row[0]}").fetchone()
    assert count is not None
    return int(count[0])


@pytest.mark.parametrize("kind", ["pglz", "lz4", "external", "mixed"])
def test_compression_kinds(conn: psycopg.Connection[Any], kind: str) -> None:
    if kind in ("lz4", "mixed") and not lz4_available(conn):
        pytest.skip("server built without lz4: the lz4 case cannot be made")
    conn.execute("CREATE TEMP TABLE tv (id int, v text)")
    if kind == "external":
        conn.execute("ALTER TABLE tv ALTER COLUMN v SET STORAGE EXTERNAL")
    else:
        conn.execute(f"ALTER TABLE tv ALTER COLUMN v SET COMPRESSION {'pglz' if kind == 'mixed' else kind}")
    value = HALF_COMPRESSIBLE.format(seed="g", n="100 + g % 50")
    conn.execute(f"INSERT INTO tv SELECT g, CASE WHEN g % 3 = 0 THEN {value} END FROM generate_series(1, 600) g")
    if kind == "mixed":
        conn.execute("ALTER TABLE tv ALTER COLUMN v SET COMPRESSION lz4")
        conn.execute(f"INSERT INTO tv SELECT g, {value} FROM generate_series(601, 700) g")
    conn.execute("INSERT INTO tv SELECT g, 'short' FROM generate_series(701, 3000) g")
    conn.execute("ANALYZE tv")

    methods = {
        row[0]
        for row in conn.execute("SELECT DISTINCT pg_column_compression(v) FROM tv WHERE length(v) > 5000")
    }
    expected = {"external": {None}, "pglz": {"pglz"}, "lz4": {"lz4"}, "mixed": {"pglz", "lz4"}}[kind]
    assert methods == expected
    n_external = external_count(conn)
    assert n_external == (300 if kind == "mixed" else 200)

    rows, fetched = parallel_vs_serial(conn, RESULT_QUERY)
    assert rows[0][1] == 2300 + (300 if kind == "mixed" else 200)
    assert sum(fetched.values()) == n_external


def test_chunk_boundaries(conn: psycopg.Connection[Any]) -> None:
    conn.execute("CREATE TEMP TABLE tv (id int, v text, w text)")
    conn.execute("ALTER TABLE tv ALTER COLUMN v SET STORAGE EXTERNAL")
    conn.execute("ALTER TABLE tv ALTER COLUMN w SET STORAGE EXTERNAL")
    lengths = [
        n * TOAST_MAX_CHUNK_SIZE + d for n in (1, 2, 3, 7, 40) for d in (-1, 0, 1) if n * TOAST_MAX_CHUNK_SIZE + d > 2100
    ]
    for i, length in enumerate(lengths):
        conn.execute(
            "INSERT INTO tv SELECT %s * 100 + g, repeat(chr(65 + g %% 26), %s), "
            "CASE WHEN g %% 2 = 0 THEN repeat('w', %s) END FROM generate_series(1, 20) g",
            (i, length, length + 3),
        )
    conn.execute("INSERT INTO tv SELECT g, NULL, NULL FROM generate_series(10000, 13000) g")
    conn.execute("ANALYZE tv")
    # Values ending one byte short of, exactly on and one byte past a chunk.
    assert external_count(conn) == 30 * len(lengths)

    rows, fetched = parallel_vs_serial(
        conn,
        "SELECT length(v), count(*), count(w), md5(string_agg(v || coalesce(w, ''), ',' ORDER BY id)) "
        "FROM tv GROUP BY 1 ORDER BY 1",
    )
    assert [r[0] for r in rows[:-1]] == sorted(lengths)
    assert sum(fetched.values()) == 30 * len(lengths)


def test_transactions(conn: psycopg.Connection[Any]) -> None:
    """Values replaced or deleted in committed, aborted and open (sub)transactions."""
    def value(salt: int, column: str = "id") -> str:
        return HALF_COMPRESSIBLE.format(seed=f"({column} + {salt})", n="60")

    conn.execute("CREATE TEMP TABLE tv (id int, v text)")
    conn.execute(f"INSERT INTO tv SELECT g, {value(0, 'g')} FROM generate_series(1, 300) g")
    conn.execute("INSERT INTO tv SELECT g, 'short' FROM generate_series(301, 4000) g")
    conn.execute("ANALYZE tv")
    conn.execute(f"UPDATE tv SET v = {value(1)} WHERE id % 5 = 0")
    with conn.transaction(force_rollback=True):
        conn.execute(f"UPDATE tv SET v = {value(2)} WHERE id % 7 = 0")
        conn.execute("DELETE FROM tv WHERE id % 11 = 0")
    conn.execute("DELETE FROM tv WHERE id % 13 = 0")

    conn.execute("BEGIN")
    try:
        conn.execute(f"UPDATE tv SET v = {value(3)} WHERE id % 17 = 0")
        conn.execute("SAVEPOINT a")
        conn.execute(f"UPDATE tv SET v = {value(4)} WHERE id % 19 = 0")
        conn.execute("DELETE FROM tv WHERE id % 23 = 0")
        conn.execute("ROLLBACK TO SAVEPOINT a")
        conn.execute("SAVEPOINT b")
        conn.execute(f"UPDATE tv SET v = {value(5)} WHERE id % 29 = 0")
        conn.execute("DELETE FROM tv WHERE id % 31 = 0")
        conn.execute("RELEASE SAVEPOINT b")
        conn.execute("SAVEPOINT c")
        conn.execute(f"UPDATE tv SET v = {value(6)} WHERE id % 37 = 0")
        # Still inside the open subtransaction c.
        rows, fetched = parallel_vs_serial(conn, RESULT_QUERY)
        expected = conn.execute(
            "SELECT count(*) FROM generate_series(1, 4000) g WHERE g % 13 <> 0 AND g % 31 <> 0"
        ).fetchone()
        assert expected is not None
        assert rows[0][0] == expected[0]
        live = [g for g in range(1, 4001) if g % 13 and g % 31]
        with_value = [g for g in live if g <= 300 or any(g % m == 0 for m in (5, 17, 29, 37))]
        assert sum(fetched.values()) == external_count(conn) == len(with_value)
    finally:
        conn.execute("ROLLBACK")


def test_multilevel_index_with_deleted_pages(conn: psycopg.Connection[Any]) -> None:
    # pageinspect only checks the index's shape; pgserver's PostgreSQL 16 ships no contrib
    # modules, and there the same steps still run the parallel read.
    inspect = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pageinspect'").fetchone()
    if inspect:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
    conn.execute("CREATE TEMP TABLE tv (id int, v text)")
    conn.execute("ALTER TABLE tv ALTER COLUMN v SET STORAGE EXTERNAL")
    conn.execute("INSERT INTO tv SELECT g, repeat(md5(g::text), 200) FROM generate_series(1, 3000) g")
    conn.execute("INSERT INTO tv SELECT g, 'short' FROM generate_series(3001, 8000) g")
    # Empty whole leaves of the toast index in the middle, then let VACUUM delete them.
    conn.execute("DELETE FROM tv WHERE id BETWEEN 500 AND 2000")
    conn.execute("VACUUM tv")
    row = conn.execute(
        "SELECT i.indexrelid::regclass::text FROM pg_class c JOIN pg_index i ON i.indrelid = c.reltoastrelid "
        "WHERE c.oid = 'tv'::regclass"
    ).fetchone()
    assert row is not None
    index = row[0]
    if inspect:
        meta = conn.execute("SELECT level, fastlevel FROM bt_metap(%s)", (index,)).fetchone()
        assert meta is not None and meta[0] >= 1, meta
        stats = conn.execute(
            "SELECT count(*) FILTER (WHERE s.btpo_flags & 4 <> 0), count(*) FILTER (WHERE s.type = 'l') "
            "FROM generate_series(1, pg_relation_size(%s::regclass) / 8192 - 1) b, "
            "LATERAL bt_page_stats(%s, b::int) s",
            (index, index),
        ).fetchone()
        assert stats is not None
        deleted, leaves = stats
        assert deleted > 0, "VACUUM left no deleted page in the toast index"
        assert leaves > 1

    rows, fetched = parallel_vs_serial(conn, RESULT_QUERY)
    assert rows[0][1] == 8000 - 1501
    assert sum(fetched.values()) == 3000 - 1501
