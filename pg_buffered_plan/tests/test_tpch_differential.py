"""Differential test: the 22 TPC-H queries and edge queries over TPC-H data
return exactly the stock rows with pg_buffered_plan on, at several batch
sizes and both placements, on PostgreSQL $PG_CONFIG (scale factor 0.01,
generated with tpchgen-cli).

The test starts its own throwaway cluster with the library preloaded, so it
needs only an installed pg_buffered_plan (make -C pg_buffered_plan install).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg")

HERE = Path(__file__).resolve().parent
TPCH = HERE.parent / "tpch"
SCALE = os.environ.get("BP_TPCH_SCALE", "0.01")
TABLES = ["region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]

# (placement, batch_size); batch 0 is the stock plan.
SETTINGS = [("scans", 1), ("scans", 7), ("scans", 64), ("scans", 2048),
            ("all", 1), ("all", 7), ("all", 64), ("all", 2048)]

# Edge queries over TPC-H data: the seed's count, early stops, rescans.
EDGE_QUERIES = {
    "seed_count": "SELECT count(1) FROM lineitem",
    "limit_small": "SELECT l_orderkey, l_linenumber FROM lineitem LIMIT 3",
    "limit_offset_filter": (
        "SELECT l_orderkey, l_linenumber, l_quantity FROM lineitem "
        "WHERE l_quantity > 45 LIMIT 50 OFFSET 1000"),
    "no_rows": "SELECT * FROM lineitem WHERE l_quantity < 0",
    "all_columns": "SELECT * FROM orders WHERE o_orderkey % 97 = 0",
    "system_columns": "SELECT ctid, o_orderkey FROM orders WHERE o_orderkey % 101 = 0",
    "lateral_limit": (
        "SELECT n_name, x.* FROM nation, LATERAL (SELECT s_suppkey, s_acctbal FROM supplier "
        "WHERE s_nationkey = n_nationkey ORDER BY s_acctbal DESC LIMIT 2) x"),
    "correlated_scalar": (
        "SELECT r_name, (SELECT count(*) FROM nation WHERE n_regionkey = r_regionkey) FROM region"),
    "exists_semijoin": (
        "SELECT c_custkey FROM customer WHERE EXISTS (SELECT 1 FROM orders "
        "WHERE o_custkey = c_custkey AND o_totalprice > 400000) ORDER BY 1"),
    "window": (
        "SELECT o_custkey, o_orderkey, rank() OVER (PARTITION BY o_custkey ORDER BY o_totalprice DESC) "
        "FROM orders WHERE o_custkey < 50"),
    "union_distinct": (
        "SELECT s_nationkey FROM supplier UNION SELECT c_nationkey FROM customer ORDER BY 1"),
    "recursive_limit": (
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r LIMIT 500"),
}

# Forced join methods exercise rescans (nested loop) and merge joins.
FORCED = {
    "nestloop": {"enable_hashjoin": "off", "enable_mergejoin": "off"},
    "mergejoin": {"enable_hashjoin": "off", "enable_nestloop": "off"},
}
FORCED_QUERIES = ["q03", "q05", "q10", "q12", "q14", "lateral_limit", "exists_semijoin"]

PARALLEL = {"max_parallel_workers_per_gather": "2", "parallel_setup_cost": "0",
            "parallel_tuple_cost": "0", "min_parallel_table_scan_size": "0"}
PARALLEL_QUERIES = ["q01", "q03", "q05", "q06", "q12", "q14", "q18", "q19", "seed_count"]


def _queries() -> dict[str, str]:
    queries = {p.stem: p.read_text() for p in sorted((TPCH / "queries").glob("q*.sql"))}
    assert len(queries) == 22, "the 22 TPC-H queries ship in pg_buffered_plan/tpch/queries"
    queries.update(EDGE_QUERIES)
    return queries


QUERIES = _queries()


def _pg_config() -> str:
    found = os.environ.get("PG_CONFIG") or shutil.which("pg_config")
    if not found:
        pytest.fail("set PG_CONFIG to the pg_config of the server to test")
    return found


def _tpchgen() -> str:
    for candidate in (shutil.which("tpchgen-cli"), str(Path(sys.executable).parent / "tpchgen-cli")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail("tpchgen-cli not found: pip install tpchgen-cli (PyPI) into this environment")


def _as_postgres(cmd: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root.
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def bp_cluster() -> Iterator[dict[str, Any]]:
    pg_config = _pg_config()
    bindir = Path(subprocess.check_output([pg_config, "--bindir"], text=True).strip())
    pkglibdir = Path(subprocess.check_output([pg_config, "--pkglibdir"], text=True).strip())
    if not (pkglibdir / "pg_buffered_plan.so").exists():
        pytest.fail(f"pg_buffered_plan is not installed in {pkglibdir}: "
                    f"make -C pg_buffered_plan PG_CONFIG={pg_config} install")
    work = Path(tempfile.mkdtemp(prefix="bp_tpch_"))
    work.chmod(0o777)
    data = work / "data"
    port = _free_port()
    subprocess.run(_as_postgres([str(bindir / "initdb"), "-D", str(data), "-A", "trust",
                                 "-U", "postgres", "--no-sync"]),
                   check=True, capture_output=True)
    with open(data / "postgresql.conf", "a") as conf:
        conf.write(f"port = {port}\nunix_socket_directories = '{work}'\nlisten_addresses = ''\n"
                   "shared_preload_libraries = 'pg_buffered_plan'\nfsync = off\n"
                   "jit = off\nmax_parallel_workers_per_gather = 0\n")
    subprocess.run(_as_postgres([str(bindir / "pg_ctl"), "-D", str(data), "-l",
                                 str(work / "log"), "-w", "start"]), check=True, capture_output=True)
    try:
        conninfo = f"host={work} port={port} user=postgres dbname=postgres"
        _load_tpch(conninfo, work / "csv")
        yield {"conninfo": conninfo}
    finally:
        subprocess.run(_as_postgres([str(bindir / "pg_ctl"), "-D", str(data), "-w", "stop",
                                     "-m", "immediate"]), capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def _load_tpch(conninfo: str, csv_dir: Path) -> None:
    csv_dir.mkdir()
    subprocess.run([_tpchgen(), "csv", "-s", SCALE, "-o", str(csv_dir)], check=True,
                   capture_output=True)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute((TPCH / "schema.sql").read_text())
        for table in TABLES:
            with conn.cursor().copy(f"COPY {table} FROM STDIN (FORMAT csv, HEADER true)") as copy:
                copy.write((csv_dir / f"{table}.csv").read_bytes())
        conn.execute((TPCH / "keys.sql").read_text())


@pytest.fixture(scope="module")
def conn(bp_cluster: dict[str, Any]) -> Iterator[Any]:
    # Never prepared implicitly: a prepared statement would keep one plan across the
    # settings compared below.
    with psycopg.connect(bp_cluster["conninfo"], autocommit=True, prepare_threshold=None) as c:
        yield c


def _configure(conn: Any, gucs: dict[str, str]) -> None:
    conn.execute("RESET ALL")
    for name, value in gucs.items():
        conn.execute("SELECT set_config(%s, %s, false)", (name, value))


def _run(conn: Any, sql: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql).fetchall()


def _plan(conn: Any, sql: str) -> str:
    return "\n".join(r[0] for r in conn.execute("EXPLAIN (COSTS OFF) " + sql).fetchall())


def _differential(conn: Any, name: str, base: dict[str, str], ordered: bool) -> None:
    sql = QUERIES[name]
    _configure(conn, {**base, "pg_buffered_plan.batch_size": "0"})
    stock_plan = _plan(conn, sql)
    assert "Custom Scan" not in stock_plan, "batch_size = 0 must give the stock plan"
    stock = _run(conn, sql)
    seq_scans = len(re.findall(r"\bSeq Scan on", stock_plan))
    other_nodes = 1 + stock_plan.count("->") - seq_scans
    for placement, batch in SETTINGS:
        _configure(conn, {**base, "pg_buffered_plan.placement": placement,
                          "pg_buffered_plan.batch_size": str(batch)})
        plan = _plan(conn, sql)
        # Same plan shape: every stock Seq Scan became a BatchedSeqScan.
        assert plan.count("BatchedSeqScan") == seq_scans, plan
        assert "  Seq Scan on" not in plan and not plan.startswith("Seq Scan"), plan
        if placement == "all" and other_nodes > 0:
            assert "Custom Scan (Buffered)" in plan, plan
        got = _run(conn, sql)
        if ordered:
            assert got == stock, f"{name}: rows differ at {placement}/{batch}"
        else:
            assert sorted(map(repr, got)) == sorted(map(repr, stock)), \
                f"{name}: rows differ at {placement}/{batch}"


@pytest.mark.parametrize("name", list(QUERIES))
def test_serial_plans_return_stock_rows_in_stock_order(conn: Any, name: str) -> None:
    _differential(conn, name, {}, ordered=True)


@pytest.mark.parametrize("join", list(FORCED))
@pytest.mark.parametrize("name", FORCED_QUERIES)
def test_forced_join_methods(conn: Any, name: str, join: str) -> None:
    _differential(conn, name, FORCED[join], ordered=True)


@pytest.mark.parametrize("name", PARALLEL_QUERIES)
def test_parallel_plans_return_stock_rows(conn: Any, name: str) -> None:
    _configure(conn, {**PARALLEL, "pg_buffered_plan.batch_size": "2048"})
    plan = _plan(conn, QUERIES[name])
    assert "Parallel Custom Scan (BatchedSeqScan)" in plan, plan
    # Workers hand rows to Gather in any order: compare as multisets.
    _differential(conn, name, PARALLEL, ordered=False)


def test_q1_uses_batched_scan_and_sums_are_exact(conn: Any) -> None:
    _configure(conn, {"pg_buffered_plan.batch_size": "2048"})
    plan = _plan(conn, QUERIES["q01"])
    assert "Custom Scan (BatchedSeqScan) on lineitem" in plan, plan
    rows = _run(conn, QUERIES["q01"])
    assert [r[:2] for r in rows] == [("A", "F"), ("N", "F"), ("N", "O"), ("R", "F")]
    assert all(isinstance(r[2], Decimal) for r in rows)
    # Q1 counts every line item shipped by 1998-09-02.
    _configure(conn, {})
    expected = _run(conn, "SELECT count(*) FROM lineitem WHERE l_shipdate <= date '1998-09-02'")[0][0]
    assert sum(r[9] for r in rows) == expected
