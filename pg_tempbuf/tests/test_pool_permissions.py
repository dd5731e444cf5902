"""Where the system decides whether workers may map the leader's pool of local buffers.

Workers open the leader's memfd through /proc/<pid>/fd/<n> (shared_pool.c), a PTRACE_MODE_READ
check: what a system that refuses process_vm_readv or restricts ptrace still allows.
* A seccomp filter that answers process_vm_readv with EPERM (shims/deny_vm_readv.c, preloaded
  into the postmaster, so every worker inherits it), as Docker's default profile did: a fresh
  table's first query still runs in parallel, workers read the leader's pages in its pool, and
  nothing is written; index and bitmap scans too.
* Yama (shims/fake_yama.c, for a kernel without Yama or at scope 0: the server would read the
  scope from $FAKE_YAMA_SCOPE, and prctl(PR_SET_PTRACER) is logged instead of made): at scope 1
  and 2 the pool serves as everywhere, and the leader declares no ptracer (Yama restricts
  attaching, not reading /proc/<pid>/fd).
* A server that is not dumpable (shims/no_dump.c): then no other process may open its
  /proc/<pid>/fd, workers cannot map the pool, and the scans fall back to the article's
  flush-then-read, exact, and EXPLAIN says why.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from conftest import (build_shim, force_parallel, leader_pool_unavailable, serial_rows, start_preloaded,
                      temp_scan_nodes, worker_counts, yama_scope)
from pglab.cluster import Cluster

LIKE_QUERY = "SELECT count(*) FROM t WHERE s LIKE '%ab%'"
DENIED_ROWS = 200_000  # the case has 2M rows: the same path, a slower test


def shim_or_skip(name: str) -> Path:
    shim = build_shim(name)
    if isinstance(shim, str):
        pytest.skip(shim)
    return shim


def new_table(conn: psycopg.Connection[Any], rows: int) -> None:
    conn.execute("DROP TABLE IF EXISTS t")
    conn.execute("CREATE TEMP TABLE t AS SELECT g id, md5(g::text) s FROM generate_series(1, %s) g", (rows,))


def gather_node(conn: psycopg.Connection[Any], query: str) -> dict[str, Any]:
    row = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {query}").fetchone()
    assert row is not None
    pending = [row[0][0]["Plan"]]
    while pending:
        node = pending.pop()
        if node["Node Type"] == "Gather":
            return node
        pending.extend(node.get("Plans", []))
    raise AssertionError(f"no Gather in {row[0]}")


# -- a system that denies process_vm_readv -----------------------------------------------


def shimmed_cluster(pg_config_path: str, shim_name: str, **env: str) -> Cluster:
    if leader_pool_unavailable() is not None:
        pytest.skip(f"the pool is off here anyway: {leader_pool_unavailable()}")
    shim = shim_or_skip(shim_name)
    return start_preloaded(pg_config_path, server_env={"LD_PRELOAD": str(shim), **env})


@pytest.fixture(scope="module")
def denied_cluster(pg_config_path: str) -> Iterator[Cluster]:
    cluster = shimmed_cluster(pg_config_path, "deny_vm_readv")
    yield cluster
    cluster.cleanup()


def test_the_shim_denies_process_vm_readv(denied_cluster: Cluster) -> None:
    """The shim checked the call on the postmaster's own memory before the server started."""
    assert re.search(r"deny_vm_readv: pid \d+: process_vm_readv denied: Operation not permitted",
                     denied_cluster.server_log())


def seq_scan_in_gather(conn: psycopg.Connection[Any], query: str) -> tuple[dict[str, Any], dict[str, Any]]:
    gather = gather_node(conn, query)
    (scan,) = [n for n in iter_nodes(gather) if n.get("Custom Plan Provider") == "Temp Seq Scan"]
    return gather, scan


def test_fresh_table_first_query_reads_the_pool_under_the_filter(denied_cluster: Cluster) -> None:
    """The issue's case: a fresh table's first query, parallel, nothing written, exact."""
    with denied_cluster.connect(options="-c temp_buffers=512MB") as conn:
        force_parallel(conn)
        conn.execute("SET pg_tempbuf.debug_sync_start = on")
        new_table(conn, DENIED_ROWS)
        gather, scan = seq_scan_in_gather(conn, LIKE_QUERY)
        assert gather["Workers Launched"] > 0
        assert scan["Page Source"] == "leader's pool, file"
        assert scan["Pages Flushed"] == 0
        assert worker_counts(scan, "Pages From Leader's Pool") > 0, scan

        new_table(conn, DENIED_ROWS)
        assert conn.execute(LIKE_QUERY).fetchall() == serial_rows(conn, LIKE_QUERY)
    assert " ERROR: " not in denied_cluster.server_log()


def partial_scan_of_fresh_table(conn: psycopg.Connection[Any], query: str, provider: str,
                                stock_off: str, indexes: tuple[str, ...], flushed: bool = False) -> dict[str, Any]:
    """Our partial scan (provider) of a table just loaded and indexed, with stock_off's scans
    off: workers launched, nothing flushed (or, flushed, the table written), the serial rows."""
    force_parallel(conn)
    conn.execute("SET enable_seqscan = off")
    conn.execute(f"SET {stock_off} = off")
    new_table(conn, DENIED_ROWS)
    for columns in indexes:
        conn.execute(f"CREATE INDEX ON t ({columns})")
    conn.execute("ANALYZE t")
    gather = gather_node(conn, query)
    assert gather["Workers Launched"] > 0
    (scan,) = [n for n in iter_nodes(gather) if n.get("Custom Plan Provider") == provider]
    assert scan["Parallel Aware"] and (scan["Pages Flushed"] > 0) == flushed, scan
    assert conn.execute(query).fetchall() == serial_rows(conn, query)
    return scan


INDEX_QUERY = "SELECT count(*), sum(id), max(s) FROM t WHERE id BETWEEN 1000 AND 150000"
BITMAP_QUERY = "SELECT count(*), sum(id), max(s) FROM t WHERE id < 20000 OR s < '01'"


def test_index_scan_workers_copy_from_the_pool_under_the_filter(denied_cluster: Cluster) -> None:
    """A partial Temp Index Scan's workers take their share of the range, from the pool."""
    with denied_cluster.connect(options="-c temp_buffers=512MB") as conn:
        conn.execute("SET parallel_leader_participation = off")
        scan = partial_scan_of_fresh_table(conn, INDEX_QUERY, "Temp Index Scan", "enable_bitmapscan", ("id",))
        assert worker_counts(scan, "Index Entries") > 0, scan
    assert " ERROR: " not in denied_cluster.server_log()


def test_bitmap_scan_workers_copy_from_the_pool_under_the_filter(denied_cluster: Cluster) -> None:
    """A partial Temp Bitmap Heap Scan's workers build the bitmap and read heap blocks."""
    with denied_cluster.connect(options="-c temp_buffers=512MB") as conn:
        conn.execute("SET parallel_leader_participation = off")
        scan = partial_scan_of_fresh_table(conn, BITMAP_QUERY, "Temp Bitmap Heap Scan", "enable_indexscan",
                                           ("id", "s"))
        assert worker_counts(scan, "Exact Heap Blocks") > 0, scan
    assert " ERROR: " not in denied_cluster.server_log()


def iter_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from iter_nodes(child)


# -- Yama -----------------------------------------------------------------------------


def fake_yama_cluster(pg_config_path: str, scope: int) -> Cluster:
    if (yama_scope() or 0) != 0:
        pytest.skip(f"the kernel's Yama is at scope {yama_scope()}: the shim's prctl would hide it")
    return shimmed_cluster(pg_config_path, "fake_yama", FAKE_YAMA_SCOPE=str(scope))


def ptracer_calls(cluster: Cluster) -> list[str]:
    return re.findall(r"fake_yama: pid \d+ PR_SET_PTRACER (-?\d+)", cluster.server_log())


@pytest.mark.parametrize("scope", [1, 2])
def test_yama_leaves_the_pool_alone(pg_config_path: str, scope: int) -> None:
    """A fresh table's first query runs in parallel from the pool, nothing written, and no
    backend declares a ptracer: reading /proc/<pid>/fd is not attaching."""
    cluster = fake_yama_cluster(pg_config_path, scope)
    try:
        with cluster.connect(options="-c temp_buffers=64MB") as conn:
            force_parallel(conn)
            conn.execute("SET pg_tempbuf.debug_sync_start = on")
            new_table(conn, 40_000)
            (scan,) = temp_scan_nodes(conn, LIKE_QUERY)
            assert scan["Page Source"] == "leader's pool, file"
            assert scan["Pages Flushed"] == 0
            assert worker_counts(scan, "Pages From Leader's Pool") > 0, scan
            assert conn.execute(LIKE_QUERY).fetchall() == serial_rows(conn, LIKE_QUERY)
        assert ptracer_calls(cluster) == []
    finally:
        cluster.cleanup()


# -- a server that is not dumpable: the fallback ------------------------------------------


@pytest.fixture(scope="module")
def undumpable_cluster(pg_config_path: str) -> Iterator[Cluster]:
    cluster = shimmed_cluster(pg_config_path, "no_dump")
    yield cluster
    cluster.cleanup()


def test_the_shim_makes_the_server_undumpable(undumpable_cluster: Cluster) -> None:
    assert re.search(r"no_dump: pid \d+: not dumpable", undumpable_cluster.server_log())


def test_seq_scan_falls_back_to_the_file(undumpable_cluster: Cluster) -> None:
    """Workers cannot open the leader's memfd: the leader writes what they read, exact."""
    with undumpable_cluster.connect(options="-c temp_buffers=512MB") as conn:
        force_parallel(conn)
        conn.execute("SET pg_tempbuf.debug_sync_start = on")
        new_table(conn, DENIED_ROWS)
        first = conn.execute(LIKE_QUERY).fetchall()
        assert first == serial_rows(conn, LIKE_QUERY)

        new_table(conn, DENIED_ROWS)
        gather, scan = seq_scan_in_gather(conn, LIKE_QUERY)
        assert gather["Workers Launched"] > 0
        assert scan["Page Source"] == ("file (the leader is not dumpable: "
                                       "workers may not open its /proc/<pid>/fd)")
        assert "Pages From Leader's Pool" not in scan
        assert worker_counts(scan, "Pages Read") > 0, scan  # workers read, from the file
        assert scan["Pages Flushed"] > 0  # which the leader wrote for them
    assert " ERROR: " not in undumpable_cluster.server_log()


def test_index_and_bitmap_scans_write_for_their_workers_without_the_pool(undumpable_cluster: Cluster) -> None:
    """The leader knows its workers cannot map its pool: a partial index or bitmap scan is
    planned and run as before the pool, the leader writing what workers read from the files;
    exact, with workers taking their share."""
    with undumpable_cluster.connect(options="-c temp_buffers=512MB") as conn:
        conn.execute("SET parallel_leader_participation = off")
        scan = partial_scan_of_fresh_table(conn, INDEX_QUERY, "Temp Index Scan", "enable_bitmapscan", ("id",),
                                           flushed=True)
        assert worker_counts(scan, "Index Entries") > 0, scan
    with undumpable_cluster.connect(options="-c temp_buffers=512MB") as conn:
        conn.execute("SET parallel_leader_participation = off")
        scan = partial_scan_of_fresh_table(conn, BITMAP_QUERY, "Temp Bitmap Heap Scan", "enable_indexscan",
                                           ("id", "s"), flushed=True)
        assert worker_counts(scan, "Exact Heap Blocks") > 0, scan
    assert " ERROR: " not in undumpable_cluster.server_log()
