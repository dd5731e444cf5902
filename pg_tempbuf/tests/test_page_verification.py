"""A page that fails verification is an error, never wrong rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import errors

from conftest import force_parallel, start_preloaded
from pglab.cluster import Cluster

BLCKSZ = 8192
PD_LOWER_OFFSET = 12  # PageHeaderData: pd_lsn (8), pd_checksum (2), pd_flags (2), pd_lower


def table_file(cluster: Cluster, conn: psycopg.Connection[Any], table: str) -> Path:
    row = conn.execute("SELECT pg_relation_filepath(%s)", (table,)).fetchone()
    assert row is not None
    return cluster.data_dir / row[0]


def overwrite(path: Path, block: int, offset: int, data: bytes) -> None:
    with path.open("r+b") as f:
        f.seek(block * BLCKSZ + offset)
        f.write(data)


def clean_table(conn: psycopg.Connection[Any]) -> tuple[Any, ...]:
    """A temp table whose pages are clean in local buffers and equal on disk.

    The leader copies pages it holds from its buffers, and workers may copy them from the
    leader's memory: the leader stays out of the scan and workers read the file, so every page
    comes through the check under test.
    """
    conn.execute("SET parallel_leader_participation = off")
    conn.execute("SET pg_tempbuf.shared_pool = off")
    conn.execute("CREATE TEMP TABLE t AS SELECT g AS x, md5(g::text) AS s FROM generate_series(1, 20000) g")
    conn.execute("ANALYZE t")
    conn.execute("SELECT pg_flush_local_buffers()")
    conn.execute("SELECT pg_read_temp_relation('t')")
    row = conn.execute("SELECT count(*), sum(x) FROM t").fetchone()
    assert row is not None
    return tuple(row)


@pytest.fixture(scope="module")
def checksum_cluster(pg_config_path: str) -> Iterator[Cluster]:
    cluster = start_preloaded(pg_config_path, checksums=True)
    yield cluster
    cluster.cleanup()


def test_insane_page_header_is_an_error(preloaded_cluster: Cluster) -> None:
    with preloaded_cluster.connect() as conn:
        force_parallel(conn)
        expected = clean_table(conn)
        # pd_lower beyond the page: fails the header check with or without checksums.
        overwrite(table_file(preloaded_cluster, conn, "t"), 3, PD_LOWER_OFFSET, b"\xff\xff")
        with pytest.raises(errors.DataCorrupted, match='block 3 of temporary table "t"'):
            conn.execute("SELECT count(*), sum(x) FROM t").fetchone()
        # The serial plan reads the intact page from local buffers.
        conn.execute("SET pg_tempbuf.parallel_scan = off")
        assert tuple(conn.execute("SELECT count(*), sum(x) FROM t").fetchone() or ()) == expected


def test_checksum_failure_is_an_error(checksum_cluster: Cluster) -> None:
    with checksum_cluster.connect() as conn:
        force_parallel(conn)
        assert conn.execute("SHOW data_checksums").fetchone() == ("on",)
        clean_table(conn)
        # Flip tuple bytes near the end of block 5: only the checksum can tell.
        overwrite(table_file(checksum_cluster, conn, "t"), 5, BLCKSZ - 100, b"XXXX")
        with pytest.raises(errors.DataCorrupted, match='block 5 of temporary table "t"'):
            conn.execute("SELECT count(*), sum(x) FROM t").fetchone()


def test_verify_reread_accepts_stable_pages(preloaded_cluster: Cluster) -> None:
    with preloaded_cluster.connect() as conn:
        force_parallel(conn)
        conn.execute("SET pg_tempbuf.verify_reread = on")
        expected = clean_table(conn)
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT count(*), sum(x) FROM t").fetchall())
        assert "Temp Seq Scan" in plan and "Page Rereads" not in plan
        assert tuple(conn.execute("SELECT count(*), sum(x) FROM t").fetchone() or ()) == expected
