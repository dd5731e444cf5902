"""What needs two sessions, or a server started with pg_tempbuf preloaded."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg import errors

from conftest import force_parallel, plan_text
from pglab.cluster import Cluster

RELATION_FUNCTIONS = [
    "pg_read_temp_relation(%s::regclass)",
    "pg_temp_buffers_dirty(%s::regclass)",
    "pg_evict_local_buffers(%s::regclass)",
    "pg_temp_flush_cost(%s::regclass)",
]


def temp_table_of_other_session(owner: psycopg.Connection[Any]) -> str:
    owner.execute("CREATE TEMP TABLE private_t AS SELECT g AS x FROM generate_series(1, 5000) g")
    schema = owner.execute("SELECT pg_my_temp_schema()::regnamespace::text").fetchone()
    assert schema is not None
    return f"{schema[0]}.private_t"


@pytest.mark.parametrize("call", RELATION_FUNCTIONS)
def test_other_sessions_temp_table_is_refused(preloaded_cluster: Cluster, call: str) -> None:
    with preloaded_cluster.connect() as owner, preloaded_cluster.connect() as other:
        name = temp_table_of_other_session(owner)
        with pytest.raises(errors.FeatureNotSupported) as excinfo:
            other.execute(f"SELECT {call}", (name,))
        assert excinfo.value.sqlstate == "0A000"
        assert '"private_t"' in str(excinfo.value)
        # The owner's data is untouched and still dirty in its buffers.
        assert owner.execute("SELECT count(*) FROM private_t").fetchone() == (5000,)
        dirty = owner.execute("SELECT pg_dirtied_local_buffers()").fetchone()
        assert dirty is not None and dirty[0] > 0


def test_other_sessions_temp_table_scan_errors_like_stock(preloaded_cluster: Cluster) -> None:
    """The planner hook must not turn core's error into a parallel scan of foreign buffers."""
    with preloaded_cluster.connect() as owner, preloaded_cluster.connect() as other:
        name = temp_table_of_other_session(owner)
        force_parallel(other)
        for switch in ("on", "off"):
            other.execute(f"SET pg_tempbuf.parallel_scan = {switch}")
            with pytest.raises(errors.FeatureNotSupported, match="temporary tables of other sessions"):
                other.execute(f"SELECT count(*) FROM {name}")


def test_local_buffers_are_per_session(preloaded_cluster: Cluster) -> None:
    with preloaded_cluster.connect() as owner, preloaded_cluster.connect() as other:
        temp_table_of_other_session(owner)
        assert other.execute(
            "SELECT pg_allocated_local_buffers(), pg_dirtied_local_buffers(), count(*) "
            "FROM pg_local_buffers"
        ).fetchone() == (0, 0, 0)
        dirty = owner.execute("SELECT pg_dirtied_local_buffers()").fetchone()
        assert dirty is not None and dirty[0] > 0


def test_preloaded_library_offers_parallel_plans_without_load(session: psycopg.Connection[Any]) -> None:
    force_parallel(session)
    session.execute("CREATE TEMP TABLE t AS SELECT g AS x FROM generate_series(1, 10000) g")
    session.execute("ANALYZE t")
    plan = plan_text(session, "SELECT count(*) FROM t")
    assert "Parallel Custom Scan (Temp Seq Scan) on t" in plan
    session.execute("SET pg_tempbuf.parallel_scan = off")
    assert "Temp Seq Scan" not in plan_text(session, "SELECT count(*) FROM t")


QUERIES_FOR_STOCK_COMPARISON = [
    "SELECT count(*) FROM t",
    "SELECT x % 7, count(*) FROM t GROUP BY 1 ORDER BY 1",
    "SELECT * FROM t WHERE x < 100 ORDER BY x",
    "SELECT count(*) FROM t JOIN u USING (x)",
    "SELECT count(*) FROM t WHERE x IN (SELECT x FROM u)",
]


def test_switch_off_gives_exactly_stock_plans(pg_cluster: Cluster) -> None:
    """Plans with pg_tempbuf loaded and parallel_scan off equal plans without the library."""
    with pg_cluster.connect() as conn:
        force_parallel(conn)
        conn.execute("CREATE TEMP TABLE t AS SELECT g AS x FROM generate_series(1, 20000) g")
        conn.execute("CREATE TEMP TABLE u AS SELECT g AS x FROM generate_series(1, 500) g")
        conn.execute("ANALYZE t; ANALYZE u")
        loaded = conn.execute(
            "SELECT count(*) FROM pg_settings WHERE name = 'pg_tempbuf.parallel_scan'"
        ).fetchone()
        assert loaded == (0,), "this session must start without the library"
        stock = [plan_text(conn, q, "VERBOSE") for q in QUERIES_FOR_STOCK_COMPARISON]
        conn.execute("LOAD 'pg_tempbuf'")
        assert any(
            "Temp Seq Scan" in plan_text(conn, q) for q in QUERIES_FOR_STOCK_COMPARISON
        ), "with the switch on, LOAD must offer the parallel scan"
        conn.execute("SET pg_tempbuf.parallel_scan = off")
        assert [plan_text(conn, q, "VERBOSE") for q in QUERIES_FOR_STOCK_COMPARISON] == stock
