"""Workers reading the pages the leader holds in its pool of local buffers (a memfd, Linux).

Where workers may map the leader's pool (shared_pool.c), a scan's workers read the table's
resident pages there, in place or copied: the leader writes nothing and the table stays dirty.
A partial scan lists the pages in the query's DSM; a node with no shared state finds them in
the pool's directory.  Where the pool cannot serve, the tests say so and skip;
test_pool_permissions.py has systems that deny the old process_vm_readv and restrict ptrace.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
import pytest

from conftest import force_parallel, leader_pool_unavailable, temp_scan_nodes, worker_counts

QUERY = "SELECT count(*), sum(x), max(s) FROM t WHERE s LIKE '%a%'"


pytestmark = pytest.mark.skipif(leader_pool_unavailable() is not None,
                                reason=str(leader_pool_unavailable()))


def dirty_pages(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pg_local_buffers WHERE relfilenode = pg_relation_filenode('t') "
        "AND relforknumber = 0 AND isdirty").fetchone()
    assert row is not None
    return int(row[0])


def serial_result(conn: psycopg.Connection[Any]) -> list[Any]:
    conn.execute("SET pg_tempbuf.parallel_scan = off")
    rows = conn.execute(QUERY).fetchall()
    conn.execute("SET pg_tempbuf.parallel_scan = on")
    return rows


def new_dirty_table(conn: psycopg.Connection[Any], rows: int = 40000) -> None:
    conn.execute("DROP TABLE IF EXISTS t")
    conn.execute("CREATE TEMP TABLE t AS SELECT g AS x, md5(g::text) AS s FROM generate_series(1, %s) g",
                 (rows,))
    conn.execute("ANALYZE t")


def test_workers_copy_dirty_pages_and_nothing_is_written(preloaded_cluster: Any) -> None:
    with preloaded_cluster.connect(options="-c temp_buffers=64MB") as conn:
        force_parallel(conn)
        conn.execute("SET pg_tempbuf.debug_sync_start = on")
        new_dirty_table(conn)
        dirty = dirty_pages(conn)
        assert dirty > 100
        (node,) = temp_scan_nodes(conn, QUERY)
        assert node["Flush Mode"] == "interleaved"  # a partial aggregate drains the scan
        assert node["Pages Flushed"] == 0
        assert node["Page Source"] == "leader's pool, file"
        assert worker_counts(node, "Pages From Leader's Pool") > 0, node
        assert dirty_pages(conn) == dirty  # the table is as it was
        parallel = conn.execute(QUERY).fetchall()
        assert parallel == serial_result(conn)


def test_pages_not_in_the_leaders_buffers_come_from_the_file(preloaded_cluster: Any) -> None:
    """temp_buffers far below the table: most pages were written out as the table grew."""
    with preloaded_cluster.connect(options="-c temp_buffers=800kB") as conn:
        force_parallel(conn)
        conn.execute("SET pg_tempbuf.debug_sync_start = on")
        new_dirty_table(conn, rows=60000)
        (node,) = temp_scan_nodes(conn, QUERY)
        pages = sum(int(n) for n in re.findall(r"=(\d+)", node["Pages Read"]))
        copied = worker_counts(node, "Pages From Leader's Pool")
        from_buffers = node["Pages From Local Buffers"]
        assert copied + from_buffers <= 100  # at most the 100 buffers of the pool
        assert pages > copied + from_buffers  # the rest came from the file
        assert conn.execute(QUERY).fetchall() == serial_result(conn)


def test_shared_pool_off_makes_the_leader_write(preloaded_cluster: Any) -> None:
    with preloaded_cluster.connect(options="-c temp_buffers=64MB") as conn:
        force_parallel(conn)
        conn.execute("SET pg_tempbuf.debug_sync_start = on")
        conn.execute("SET pg_tempbuf.shared_pool = off")
        new_dirty_table(conn)
        (node,) = temp_scan_nodes(conn, QUERY)
        assert "Pages From Leader's Pool" not in node
        assert node["Page Source"] == "file (pg_tempbuf.shared_pool is off)"
        assert node["Pages Flushed"] > 0
        assert conn.execute(QUERY).fetchall() == serial_result(conn)


# -- a partial Temp Index Scan (issue 30, case 4) ----------------------------------------------

INDEX_QUERY = "SELECT count(*), sum(v), max(s) FROM f WHERE id BETWEEN 20001 AND 170000"


def temp_index_scan_under_gather(conn: psycopg.Connection[Any], sql: str,
                                 provider: str = "Temp Index Scan") -> dict[str, Any]:
    """Our provider's node of one EXPLAIN ANALYZE of sql, with its Gather's Workers Launched."""
    row = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}").fetchone()
    assert row is not None
    found: list[dict[str, Any]] = []

    def walk(node: dict[str, Any], launched: int | None) -> None:
        if node.get("Node Type", "").startswith("Gather"):
            launched = node.get("Workers Launched", 0)
        if node.get("Custom Plan Provider") == provider and launched is not None:
            found.append({**node, "Workers Launched": launched})
        for child in node.get("Plans", []):
            walk(child, launched)

    walk(row[0][0]["Plan"], None)
    assert len(found) == 1, row[0]
    return found[0]


def both_ways(conn: psycopg.Connection[Any], query: str) -> tuple[Any, Any]:
    """query's rows with parallel_scan on, and with it off (the serial plan)."""
    conn.execute("SET pg_tempbuf.parallel_scan = off")
    serial = conn.execute(query).fetchall()
    conn.execute("SET pg_tempbuf.parallel_scan = on")
    return conn.execute(query).fetchall(), serial


def new_fresh_table(conn: psycopg.Connection[Any], rows: int, *indexes: str) -> None:
    """f (id, v, s) just loaded: its primary key and the indexes on columns `indexes` built
    first, every page dirty in the pool."""
    conn.execute("CREATE TEMP TABLE f (id int PRIMARY KEY, v int, s text)")
    for column in indexes:
        conn.execute(f"CREATE INDEX ON f ({column})")
    conn.execute("INSERT INTO f SELECT g, g %% 1000, md5(g::text) FROM generate_series(1, %s) g", (rows,))
    conn.execute("ANALYZE f")


@pytest.mark.parametrize("pool", ["256MB", "4MB"], ids=["resident", "evicting"])
def test_fresh_indexed_table_first_index_query_writes_nothing(preloaded_cluster: Any, pool: str) -> None:
    """A table just loaded and indexed, every page dirty: its first index range query runs as a
    partial Temp Index Scan whose workers copy the pages the leader holds and read the others
    (written by evictions) from the file; nothing is flushed, the rows are the serial plan's,
    also after an UPDATE leaves new row versions in dirty pages only the leader holds."""
    with preloaded_cluster.connect(options=f"-c temp_buffers={pool}") as conn:
        force_parallel(conn)
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET enable_bitmapscan = off")
        new_fresh_table(conn, 200000)
        node = temp_index_scan_under_gather(conn, INDEX_QUERY)
        assert node["Parallel Aware"] and node["Workers Launched"] > 0, node
        assert node["Pages Flushed"] == 0, node
        assert worker_counts(node, "Index Entries") > 0, node
        parallel, serial = both_ways(conn, INDEX_QUERY)
        assert parallel == serial
        conn.execute("UPDATE f SET v = v + 1, s = 'x' || s WHERE id % 7 = 0")
        node = temp_index_scan_under_gather(conn, INDEX_QUERY)
        assert node["Pages Flushed"] == 0 and node["Workers Launched"] > 0, node
        parallel, serial = both_ways(conn, INDEX_QUERY)
        assert parallel == serial


def test_fresh_million_row_table_first_range_query_at_default_costs(preloaded_cluster: Any) -> None:
    """The issue's case at default costs: a 1M-row table just loaded and indexed, seq scans off,
    a 600,000-row range.  Its pages in local buffers come off core's undivided price of a
    partial index path, so the planner runs the range in workers, as core does for an UNLOGGED
    copy of the table, and nothing is flushed; the rows are the serial plan's."""
    query = "SELECT count(*), sum(v), max(s) FROM f WHERE id BETWEEN 100000 AND 700000"
    with preloaded_cluster.connect(options="-c temp_buffers=512MB") as conn:
        conn.execute("SET max_parallel_workers_per_gather = 2")
        conn.execute("SET enable_seqscan = off")
        new_fresh_table(conn, 1000000)
        node = temp_index_scan_under_gather(conn, query)
        assert node["Parallel Aware"] and node["Workers Launched"] > 0, node
        assert node["Pages Flushed"] == 0, node
        parallel, serial = both_ways(conn, query)
        assert parallel == serial


# -- a partial Temp Bitmap Heap Scan ------------------------------------------------------------

BITMAP_QUERY = "SELECT count(*), sum(v), max(s) FROM f WHERE id < 120000 OR v < 40"


@pytest.mark.parametrize("pool", ["256MB", "4MB"], ids=["resident", "evicting"])
def test_fresh_indexed_table_first_bitmap_query_writes_nothing(preloaded_cluster: Any, pool: str) -> None:
    """A table just loaded with two indexes, every page dirty: a BitmapOr over both runs as a
    partial Temp Bitmap Heap Scan whose workers copy the table's and the indexes' pages the
    leader holds (one builds the bitmap from both indexes) and read the others from the file;
    nothing is flushed, the rows are the serial plan's, also after an UPDATE leaves new row
    versions in dirty pages only the leader holds.  The leader does not take part: a leader
    that builds the bitmap may read every block before its workers start."""
    with preloaded_cluster.connect(options=f"-c temp_buffers={pool}") as conn:
        force_parallel(conn)
        conn.execute("SET parallel_leader_participation = off")
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET enable_indexscan = off")
        new_fresh_table(conn, 200000, "v")
        for _ in range(2):
            node = temp_index_scan_under_gather(conn, BITMAP_QUERY, "Temp Bitmap Heap Scan")
            assert node["Parallel Aware"] and node["Workers Launched"] > 0, node
            assert node["Pages Flushed"] == 0, node
            assert worker_counts(node, "Index Entries") > 0, node
            assert worker_counts(node, "Exact Heap Blocks") > 0, node
            parallel, serial = both_ways(conn, BITMAP_QUERY)
            assert parallel == serial
            conn.execute("UPDATE f SET v = v + 1, s = 'x' || s WHERE id % 7 = 0")


# -- code in the leader reading the table, at default costs (the shared pool's issue) -----------

MILLION = 1_000_000
FUNCTION_QUERY = ("SELECT count(*), sum(v), sum(pg_temp.v_of(id / 7 + 1)) FILTER (WHERE id % 50 = 0) "
                  "FROM f WHERE id BETWEEN 50000 AND 250000")
BITMAP_OR_QUERY = "SELECT count(*), sum(id), max(s) FROM f WHERE a < 150 OR b < 150"


def free_parallelism(conn: psycopg.Connection[Any]) -> None:
    """Default pg_tempbuf costs; only Gather's own costs made free, as the issue's cases set."""
    conn.execute("SET parallel_setup_cost = 0")
    conn.execute("SET parallel_tuple_cost = 0")
    conn.execute("SET max_parallel_workers_per_gather = 2")


@pytest.mark.parametrize("pool", ["512MB", "8MB"], ids=["resident", "evicting"])
def test_index_range_under_a_function_reading_the_table(preloaded_cluster: Any, pool: str) -> None:
    """An index range read while a PL/pgSQL function above Gather reads the same table by its
    index: a partial Temp Index Scan under Gather, workers launched, its rows the serial plan's
    ten times out of ten.  Workers copy the leader's pages out of its pool, each page twice and
    compared, since the function may prune one meanwhile."""
    with preloaded_cluster.connect(options=f"-c temp_buffers={pool}") as conn:
        free_parallelism(conn)
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET enable_bitmapscan = off")
        new_fresh_table(conn, MILLION)
        conn.execute("CREATE FUNCTION pg_temp.v_of(k int) RETURNS int LANGUAGE plpgsql STABLE "
                     "PARALLEL RESTRICTED AS 'BEGIN RETURN (SELECT v FROM f WHERE id = k); END'")
        node = temp_index_scan_under_gather(conn, FUNCTION_QUERY)
        assert node["Parallel Aware"] and node["Workers Launched"] > 0, node
        assert worker_counts(node, "Index Entries") > 0, node
        exact = [both_ways(conn, FUNCTION_QUERY) for _ in range(10)]
        assert all(parallel == serial for parallel, serial in exact), exact


@pytest.mark.parametrize("pool", ["512MB", "8MB"], ids=["resident", "evicting"])
def test_bitmap_or_on_a_million_rows(preloaded_cluster: Any, pool: str) -> None:
    """`a < 150 OR b < 150` over two indexes of a 1M-row table: a partial Temp Bitmap Heap Scan
    under Gather, workers launched, its rows the serial plan's ten times out of ten."""
    with preloaded_cluster.connect(options=f"-c temp_buffers={pool}") as conn:
        free_parallelism(conn)
        conn.execute("SET enable_indexscan = off")
        conn.execute("CREATE TEMP TABLE f (id int PRIMARY KEY, a int, b int, s text)")
        conn.execute("INSERT INTO f SELECT g, (g::bigint * 7919 %% 100003)::int, (g::bigint * 104729 %% 99991)::int, "
                     "md5(g::text) FROM generate_series(1, %s) g", (MILLION,))
        conn.execute("CREATE INDEX ON f (a)")
        conn.execute("CREATE INDEX ON f (b)")
        conn.execute("ANALYZE f")
        node = temp_index_scan_under_gather(conn, BITMAP_OR_QUERY, "Temp Bitmap Heap Scan")
        assert node["Parallel Aware"] and node["Workers Launched"] > 0, node
        exact = [both_ways(conn, BITMAP_OR_QUERY) for _ in range(10)]
        assert all(parallel == serial for parallel, serial in exact), exact


# -- scans with no shared state of their own: the pool found by the worker ------------------------

@pytest.fixture
def big_permanent(preloaded_cluster: Any) -> Any:
    with preloaded_cluster.connect() as admin:
        admin.execute("DROP TABLE IF EXISTS pool_big")
        admin.execute("CREATE TABLE pool_big AS SELECT g AS id, g % 1000 AS k FROM generate_series(1, 100000) g")
        admin.execute("ANALYZE pool_big")
    yield
    with preloaded_cluster.connect() as admin:
        admin.execute("DROP TABLE pool_big")


def test_full_scan_workers_read_the_pool(preloaded_cluster: Any, big_permanent: Any) -> None:
    """A full Temp Seq Scan, the inner side of a hash join under Gather, of a table just written
    and then updated: every worker copies the pages the leader holds out of its pool (it finds
    the pool itself: a full scan has no shared state), so nothing is written and the table stays
    dirty; the rows are the serial plan's."""
    query = "SELECT count(*), sum(s.w), max(s.note) FROM pool_big b JOIN stage s USING (k)"
    with preloaded_cluster.connect(options="-c temp_buffers=64MB") as conn:
        force_parallel(conn)
        conn.execute("SET enable_parallel_hash = off")
        conn.execute("CREATE TEMP TABLE stage AS SELECT g AS k, g * 3 AS w, md5(g::text) AS note "
                     "FROM generate_series(1, 1000, 2) g")
        conn.execute("ANALYZE stage")
        conn.execute("UPDATE stage SET w = w + 1 WHERE k % 3 = 0")
        node = temp_index_scan_under_gather(conn, query, "Temp Seq Scan")
        assert node["Scan Mode"] == "full" and node["Workers Launched"] > 0, node
        assert node["Pages Flushed"] == 0, node
        row = conn.execute("SELECT count(*) FROM pg_local_buffers WHERE isdirty AND "
                           "relfilenode = pg_relation_filenode('stage')").fetchone()
        assert row is not None and row[0] > 0
        parallel, serial = both_ways(conn, query)
        assert parallel == serial


def test_nested_loop_index_scan_workers_read_the_pool(preloaded_cluster: Any, big_permanent: Any) -> None:
    """A Temp Index Scan on the inner side of a nested loop under Gather, of a table just
    written: its workers copy the index's and the table's pages out of the leader's pool,
    nothing is written; the rows are the serial plan's."""
    query = "SELECT count(*), sum(f.v), max(f.s) FROM pool_big b JOIN f ON f.id = b.id * 3 WHERE b.k < 50"
    with preloaded_cluster.connect(options="-c temp_buffers=64MB") as conn:
        force_parallel(conn)
        conn.execute("SET enable_hashjoin = off")
        conn.execute("SET enable_mergejoin = off")
        conn.execute("SET enable_bitmapscan = off")
        new_fresh_table(conn, 200000)
        node = temp_index_scan_under_gather(conn, query)
        assert not node["Parallel Aware"] and node["Workers Launched"] > 0, node
        assert node["Pages Flushed"] == 0, node
        parallel, serial = both_ways(conn, query)
        assert parallel == serial


def zero_files(cluster: Any, conn: psycopg.Connection[Any], *relations: str) -> None:
    """Overwrite the relations' files with zeros, in place: a page the pool holds clean is then
    right nowhere but there (a worker that read the file would see empty pages, or no btree)."""
    for relation in relations:
        row = conn.execute("SELECT pg_relation_filepath(%s)", (relation,)).fetchone()
        assert row is not None
        path = cluster.data_dir / row[0]
        size = path.stat().st_size
        assert size > 0, path
        with open(path, "r+b") as f:
            f.write(bytes(size))


CLEAN_TABLE_READS = {
    "index": ("SELECT count(*), sum(c.v), max(c.s) FROM pool_big b JOIN clean c ON c.id = b.id * 3 "
              "WHERE b.k < 50", "Temp Index Scan",
              ("enable_hashjoin = off", "enable_mergejoin = off", "enable_bitmapscan = off")),
    "bitmap": ("SELECT count(*), sum(c.v), max(c.s) FROM pool_big b JOIN clean c ON c.id = b.id * 3 "
               "WHERE b.k < 50", "Temp Bitmap Heap Scan",
               ("enable_hashjoin = off", "enable_mergejoin = off", "enable_indexscan = off")),
    # A left join: without a parallel hash, clean can only be the hash's inner side (read whole
    # by every worker); an inner join's order turned on ANALYZE's random sample of either table.
    "full": ("SELECT count(*), sum(c.v), max(c.s) FROM pool_big b LEFT JOIN clean c ON c.v = b.k",
             "Temp Seq Scan", ("enable_parallel_hash = off",)),
}


@pytest.mark.parametrize("shape", sorted(CLEAN_TABLE_READS))
def test_clean_table_workers_find_every_page_in_the_pool(preloaded_cluster: Any, big_permanent: Any,
                                                        shape: str) -> None:
    """A table written out whole (clean, every page still in the pool), read under Gather by a
    node with no shared state of its own: its workers find each page the pool holds in the
    pool's directory and read none of them from the file.  To prove it, the table's and its
    index's files are overwritten with zeros after the flush; the rows are still the serial
    plan's, in the first query and the next (the directory then unchanged), and after an
    UPDATE has moved rows to new pages and dirtied others (the directory then rewritten)."""
    query, provider, settings = CLEAN_TABLE_READS[shape]
    with preloaded_cluster.connect(options="-c temp_buffers=64MB") as conn:
        force_parallel(conn)
        for setting in settings:
            conn.execute(f"SET {setting}")
        conn.execute("CREATE TEMP TABLE clean (id int PRIMARY KEY, v int, s text)")
        conn.execute("INSERT INTO clean SELECT g, g % 1000, md5(g::text) FROM generate_series(1, 60000) g")
        conn.execute("ANALYZE clean")
        conn.execute("SELECT pg_flush_local_buffers()")
        serial = both_ways(conn, query)[1]
        zero_files(preloaded_cluster, conn, "clean", "clean_pkey")
        for step in ("first", "next", "updated"):
            if step == "updated":
                conn.execute("UPDATE clean SET v = v + 1, s = s || 'x' WHERE id % 7 = 0")
                serial = both_ways(conn, query)[1]
                zero_files(preloaded_cluster, conn, "clean", "clean_pkey")
            node = temp_index_scan_under_gather(conn, query, provider)
            assert not node["Parallel Aware"] and node["Workers Launched"] > 0, (step, node)
            assert node["Pages Flushed"] == 0, (step, node)
            assert conn.execute(query).fetchall() == serial, step
