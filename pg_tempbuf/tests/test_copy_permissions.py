"""Where the system decides whether workers may copy out of the leader's memory.

* A seccomp filter that answers process_vm_readv with EPERM (shims/deny_vm_readv.c, preloaded
  into the postmaster, so every worker inherits it): the scan reads the file instead, exact and
  without an error, and EXPLAIN ANALYZE's Page Source gives the denial.
* Yama (shims/fake_yama.c, for a kernel without Yama or at scope 0: the server reads the scope
  from $FAKE_YAMA_SCOPE, and prctl(PR_SET_PTRACER) is logged instead of made).  At scope 1 the
  leader declares the postmaster its ptracer before workers start and withdraws it once they
  are done: at the end of the scan, or when its transaction or subtransaction aborts.  At scope 2
  it offers no copies and says why.  What the shim cannot show is Yama then letting the workers
  in: that needs a kernel with Yama at scope 1, where test_leader_copies.py runs for real.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from conftest import build_shim, force_parallel, leader_copies_unavailable, start_preloaded, temp_scan_nodes, yama_scope
from pglab.cluster import Cluster

LIKE_QUERY = "SELECT count(*) FROM t WHERE s LIKE '%ab%'"
DENIED_ROWS = 200_000  # the case has 2M rows: the same path, a slower test


def worker_counts(node: dict[str, Any], field: str) -> int:
    return sum(int(n) for n in re.findall(r"worker \d+=(\d+)", node.get(field, "")))


def shim_or_skip(name: str) -> Path:
    shim = build_shim(name)
    if isinstance(shim, str):
        pytest.skip(shim)
    return shim


def new_table(conn: psycopg.Connection[Any], rows: int) -> None:
    conn.execute("DROP TABLE IF EXISTS t")
    conn.execute("CREATE TEMP TABLE t AS SELECT g id, md5(g::text) s FROM generate_series(1, %s) g", (rows,))


def serial(conn: psycopg.Connection[Any], query: str) -> list[Any]:
    conn.execute("SET pg_tempbuf.parallel_scan = off")
    rows = conn.execute(query).fetchall()
    conn.execute("SET pg_tempbuf.parallel_scan = on")
    return rows


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


# -- a system that denies the call ------------------------------------------------------


@pytest.fixture(scope="module")
def denied_cluster(pg_config_path: str) -> Iterator[Cluster]:
    if leader_copies_unavailable() is not None:
        pytest.skip(f"copies are off here anyway: {leader_copies_unavailable()}")
    shim = shim_or_skip("deny_vm_readv")
    cluster = start_preloaded(pg_config_path, server_env={"LD_PRELOAD": str(shim)})
    yield cluster
    cluster.cleanup()


def test_the_shim_denies_process_vm_readv(denied_cluster: Cluster) -> None:
    """The shim checked the call on the postmaster's own memory before the server started."""
    assert re.search(r"deny_vm_readv: pid \d+: process_vm_readv denied: Operation not permitted",
                     denied_cluster.server_log())


def test_denied_copies_fall_back_to_the_file(denied_cluster: Cluster) -> None:
    with denied_cluster.connect(options="-c temp_buffers=512MB") as conn:
        force_parallel(conn)
        conn.execute("SET pg_tempbuf.debug_sync_start = on")

        # The fresh table's first query: exact, no error.
        new_table(conn, DENIED_ROWS)
        first = conn.execute(LIKE_QUERY).fetchall()
        assert first == serial(conn, LIKE_QUERY)

        # The same on another fresh table, under EXPLAIN ANALYZE.
        new_table(conn, DENIED_ROWS)
        gather = gather_node(conn, LIKE_QUERY)
        assert gather["Workers Launched"] > 0
        (scan,) = [n for n in iter_nodes(gather) if n.get("Custom Plan Provider") == "Temp Seq Scan"]
        assert scan["Page Source"] == "file (leader copy denied: Operation not permitted)"
        assert "Pages Copied From Leader" not in scan
        assert worker_counts(scan, "Pages Read") > 0, scan  # workers read, from the file
        assert scan["Pages Flushed"] > 0  # which the leader wrote for them
    assert " ERROR: " not in denied_cluster.server_log()


def denied_partial_scan(conn: psycopg.Connection[Any], query: str, provider: str, stock_off: str,
                        indexes: tuple[str, ...]) -> dict[str, Any]:
    """Our partial scan (provider) of a table just loaded and indexed, under a system that denies
    copies, with stock_off's scans off: workers launched, nothing flushed, the serial rows."""
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
    assert scan["Parallel Aware"] and scan["Pages Flushed"] == 0, scan
    assert conn.execute(query).fetchall() == serial(conn, query)
    return scan


def test_denied_copies_keep_index_scan_workers_out(denied_cluster: Cluster) -> None:
    """A partial Temp Index Scan flushes nothing when workers may copy; a worker the system
    refuses then takes no part of the range (it would read pages the leader never wrote), and
    the leader covers it: exact, nothing flushed, no worker index entries."""
    query = "SELECT count(*), sum(id), max(s) FROM t WHERE id BETWEEN 1000 AND 150000"
    with denied_cluster.connect(options="-c temp_buffers=512MB") as conn:
        scan = denied_partial_scan(conn, query, "Temp Index Scan", "enable_bitmapscan", ("id",))
        assert worker_counts(scan, "Index Entries") == 0, scan
    assert " ERROR: " not in denied_cluster.server_log()


def test_denied_copies_keep_bitmap_scan_workers_out(denied_cluster: Cluster) -> None:
    """As the Temp Index Scan: a partial Temp Bitmap Heap Scan that workers may copy for writes
    nothing; a worker the system refuses takes no part (no bitmap built, no heap block read by
    it), and the leader reads every block: exact, nothing flushed."""
    query = "SELECT count(*), sum(id), max(s) FROM t WHERE id < 20000 OR s < '01'"
    with denied_cluster.connect(options="-c temp_buffers=512MB") as conn:
        scan = denied_partial_scan(conn, query, "Temp Bitmap Heap Scan", "enable_indexscan", ("id", "s"))
        assert worker_counts(scan, "Exact Heap Blocks") == 0, scan
        assert worker_counts(scan, "Index Entries") == 0, scan
    assert " ERROR: " not in denied_cluster.server_log()


def iter_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from iter_nodes(child)


# -- Yama -----------------------------------------------------------------------------


def fake_yama_cluster(pg_config_path: str, scope: int) -> Cluster:
    if (yama_scope() or 0) != 0:
        pytest.skip(f"the kernel's Yama is at scope {yama_scope()}: the shim's prctl would hide it")
    if leader_copies_unavailable() is not None:
        pytest.skip(str(leader_copies_unavailable()))
    shim = shim_or_skip("fake_yama")
    return start_preloaded(pg_config_path, server_env={"LD_PRELOAD": str(shim), "FAKE_YAMA_SCOPE": str(scope)})


@pytest.fixture(scope="module")
def yama1_cluster(pg_config_path: str) -> Iterator[Cluster]:
    cluster = fake_yama_cluster(pg_config_path, 1)
    yield cluster
    cluster.cleanup()


class PtracerLog:
    """The PR_SET_PTRACER calls one backend made, as the shim logged them."""

    def __init__(self, cluster: Cluster, conn: psycopg.Connection[Any]) -> None:
        self.cluster = cluster
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        self.pid = row[0]
        self.postmaster = int((cluster.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        self.seen = len(self.calls_so_far())

    def calls_so_far(self) -> list[str]:
        found = re.findall(rf"fake_yama: pid {self.pid} PR_SET_PTRACER (-?\d+)", self.cluster.server_log())
        return ["postmaster" if int(arg) == self.postmaster else arg for arg in found]

    def new(self) -> list[str]:
        """Calls since the last look."""
        calls = self.calls_so_far()
        fresh, self.seen = calls[self.seen:], len(calls)
        return fresh


def dirty_session(cluster: Cluster) -> psycopg.Connection[Any]:
    conn = cluster.connect(options="-c temp_buffers=64MB")
    force_parallel(conn)
    conn.execute("SET pg_tempbuf.debug_sync_start = on")
    new_table(conn, 40_000)
    return conn


def test_scope_1_declares_the_postmaster_ptracer_while_workers_copy(yama1_cluster: Cluster) -> None:
    with dirty_session(yama1_cluster) as conn:
        log = PtracerLog(yama1_cluster, conn)
        (scan,) = temp_scan_nodes(conn, LIKE_QUERY)
        assert scan["Page Source"] == "leader copies, file"
        assert worker_counts(scan, "Pages Copied From Leader") > 0, scan
        assert log.new() == ["postmaster", "0"]

        assert conn.execute(LIKE_QUERY).fetchall() == serial(conn, LIKE_QUERY)
        assert log.new() == ["postmaster", "0"]  # the serial run declares nothing

        conn.execute("SET pg_tempbuf.copy_from_leader = off")
        (scan,) = temp_scan_nodes(conn, LIKE_QUERY)
        assert scan["Page Source"] == "file (pg_tempbuf.copy_from_leader is off)"
        assert log.new() == []


def test_scope_1_withdraws_the_ptracer_when_the_scan_fails(yama1_cluster: Cluster) -> None:
    failing = "SELECT count(*) FROM t WHERE 1 / (id - 30000) > -5"
    with dirty_session(yama1_cluster) as conn:
        log = PtracerLog(yama1_cluster, conn)
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute(failing)
        assert log.new() == ["postmaster", "0"]

        # In a subtransaction: withdrawn when it aborts, not at the commit.
        conn.execute("BEGIN")
        conn.execute("SAVEPOINT s")
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute(failing)
        conn.execute("ROLLBACK TO SAVEPOINT s")
        assert log.new() == ["postmaster", "0"]
        assert conn.execute(LIKE_QUERY).fetchall() == serial(conn, LIKE_QUERY)
        assert log.new() == ["postmaster", "0"]
        conn.execute("COMMIT")
        assert log.new() == []


def test_scope_1_one_declaration_for_scans_running_together(yama1_cluster: Cluster) -> None:
    """Two InitPlans, each a Gather over a scan that copies: both scans hold the declaration
    until the statement ends, and the last one out withdraws it."""
    with dirty_session(yama1_cluster) as conn:
        conn.execute("CREATE TEMP TABLE u AS SELECT g id, md5(g::text) s FROM generate_series(1, 40000) g")
        log = PtracerLog(yama1_cluster, conn)
        query = ("SELECT (SELECT count(*) FROM t WHERE s LIKE '%ab%'),"
                 " (SELECT count(*) FROM u WHERE s LIKE '%cd%')")
        scans = temp_scan_nodes(conn, query)
        assert len(scans) == 2, scans
        for scan in scans:
            assert scan["Page Source"] == "leader copies, file"
            assert worker_counts(scan, "Pages Copied From Leader") > 0, scan
        assert log.new() == ["postmaster", "0"]


def test_scope_2_offers_no_copies(pg_config_path: str) -> None:
    cluster = fake_yama_cluster(pg_config_path, 2)
    try:
        with dirty_session(cluster) as conn:
            log = PtracerLog(cluster, conn)
            (scan,) = temp_scan_nodes(conn, LIKE_QUERY)
            assert scan["Page Source"] == "file (Yama ptrace_scope is 2)"
            assert scan["Pages Flushed"] > 0
            assert conn.execute(LIKE_QUERY).fetchall() == serial(conn, LIKE_QUERY)
            assert log.new() == []
    finally:
        cluster.cleanup()
