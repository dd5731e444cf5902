"""Next to the extensions DBAs already run: hypopg and pg_hint_plan, in both load orders.

Each runs where this server has it installed: Debian packages them (postgresql-15-hypopg on
bookworm; postgresql-17-hypopg and postgresql-17-pg-hint-plan in the trixie root), and the
Makefile and mk/trixie.sh install them, so CI runs this module on 15 (hypopg) and 17 (both).
Every query answers as with pg_tempbuf.parallel_scan = off, with no ERROR:

* hypopg: a hypothetical index exists only as the planner's IndexOptInfo; nothing can open it.
  Our index paths leave it to core's, and the plan walk keeps a scan of it stock.
* pg_hint_plan loaded after pg_tempbuf rebuilds a hinted relation's paths with core's functions
  once we marked the temporary table consider_parallel: the plan check sends any stock scan of
  a temporary table below a Gather back to be planned without parallelism for it.
* pg_hint_plan loaded before pg_tempbuf: our paths carry the disabled marks core's carry, so a
  scan-method hint gets that method.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from conftest import serial_rows
from pglab.cluster import Cluster
from pglab.pgconfig import PgInstall


def installed(pg_config_path: str, extension: str) -> bool:
    share = PgInstall.from_pg_config(pg_config_path).sharedir / "extension" / f"{extension}.control"
    return share.exists()


def start(pg_config_path: str, libraries: str) -> Cluster:
    cluster = Cluster(pg_config_path, settings={
        "shared_preload_libraries": libraries,
        "max_worker_processes": 8, "max_parallel_workers": 8, "max_parallel_workers_per_gather": 2,
    })
    cluster.start()
    return cluster


def plan(conn: psycopg.Connection[Any], query: str) -> str:
    return "\n".join(row[0] for row in conn.execute(f"EXPLAIN (COSTS OFF) {query}"))


def assert_no_error(cluster: Cluster) -> None:
    log = cluster.server_log()
    assert " ERROR: " not in log, log[-3000:]


# -- hypopg -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hypopg_cluster(pg_config_path: str) -> Iterator[Cluster]:
    if not installed(pg_config_path, "hypopg"):
        pytest.skip("hypopg is not installed for this server (Debian packages it for 15 and 17)")
    cluster = start(pg_config_path, "pg_tempbuf")
    yield cluster
    cluster.cleanup()


HYPO_CASES = {
    "the issue's": (
        "CREATE TEMP TABLE big AS SELECT g id, (g * 7) % 1000 k, md5(g::text) s "
        "FROM generate_series(1, 1000000) g; ANALYZE big",
        "CREATE INDEX ON big (k)",
        ["SELECT count(*) FROM big WHERE k = 5",
         "SELECT count(*) FROM big WHERE k = (SELECT min(k) FROM big WHERE id < 10)"]),
    "a partition": (
        "CREATE TEMP TABLE pt (id int, k int) PARTITION BY RANGE (id);"
        "CREATE TEMP TABLE pt1 PARTITION OF pt FOR VALUES FROM (0) TO (300000);"
        "CREATE TEMP TABLE pt2 PARTITION OF pt FOR VALUES FROM (300000) TO (600001);"
        "INSERT INTO pt SELECT g, g % 977 FROM generate_series(1, 600000) g; ANALYZE pt",
        "CREATE INDEX ON pt1 (k)",
        ["SELECT count(*) FROM pt WHERE k = 5", "SELECT count(*) FROM pt1 WHERE k < 3"]),
    "a small table joined to a permanent one": (
        "DROP TABLE IF EXISTS perm_h; CREATE TABLE perm_h AS SELECT g id, g % 100 k FROM generate_series(1, 200000) g;"
        "ANALYZE perm_h; CREATE TEMP TABLE small AS SELECT g id FROM generate_series(1, 2000) g; ANALYZE small",
        "CREATE INDEX ON small (id)",
        ["SELECT count(*) FROM perm_h p JOIN small s ON s.id = p.id WHERE p.k = 3",
         "SELECT count(*) FROM perm_h p WHERE p.id IN (SELECT id FROM small WHERE id < 50)"]),
}


@pytest.mark.parametrize("case", list(HYPO_CASES))
def test_hypothetical_index(hypopg_cluster: Cluster, case: str) -> None:
    setup, index, queries = HYPO_CASES[case]
    with hypopg_cluster.connect() as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS hypopg")
        conn.execute(setup)
        row = conn.execute("SELECT indexname FROM hypopg_create_index(%s)", (index,)).fetchone()
        assert row is not None
        for query in queries:
            ours = plan(conn, query)
            conn.execute("SET pg_tempbuf.parallel_scan = off")
            stock = plan(conn, query)
            conn.execute("RESET pg_tempbuf.parallel_scan")
            # Where the stock plan takes the hypothetical index, so does ours (it stays core's).
            if row[0] in stock:
                assert row[0] in ours, (ours, stock)
            assert conn.execute(query).fetchall() == serial_rows(conn, query)
        conn.execute("SELECT hypopg_reset()")
    assert_no_error(hypopg_cluster)


# -- pg_hint_plan ---------------------------------------------------------------------------

HINT_SETUP = (
    "CREATE TEMP TABLE big AS SELECT g id, (g * 7) % 1000 k, md5(g::text) s FROM generate_series(1, 300000) g;"
    "CREATE INDEX big_k ON big (k); CREATE INDEX big_id ON big (id); ANALYZE big;"
    "CREATE TEMP TABLE small AS SELECT g id FROM generate_series(1, 3000) g; ANALYZE small;"
    "CREATE TEMP TABLE pt (id int, k int) PARTITION BY RANGE (id);"
    "CREATE TEMP TABLE pt1 PARTITION OF pt FOR VALUES FROM (0) TO (150000);"
    "CREATE TEMP TABLE pt2 PARTITION OF pt FOR VALUES FROM (150000) TO (300001);"
    "INSERT INTO pt SELECT g, g % 977 FROM generate_series(1, 300000) g; ANALYZE pt;"
    "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;"
)

HINTED = [
    "/*+ SeqScan(big) */ SELECT count(*) FROM big WHERE s LIKE '%ab%'",
    "/*+ IndexScan(big) */ SELECT count(*), sum(id) FROM big WHERE k < 20",
    "/*+ IndexScan(big big_id) */ SELECT count(*) FROM big WHERE id BETWEEN 1000 AND 90000",
    "/*+ BitmapScan(big) */ SELECT count(*) FROM big WHERE k IN (3, 5, 7) OR id < 100",
    "/*+ IndexOnlyScan(big) */ SELECT count(*) FROM big WHERE k < 50",
    "/*+ NoSeqScan(big) */ SELECT count(*) FROM big WHERE k = 5",
    "/*+ NoIndexScan(big) */ SELECT count(*) FROM big WHERE k = 5",
    "/*+ NoBitmapScan(big) */ SELECT count(*) FROM big WHERE k < 9",
    "/*+ Parallel(big 2 hard) */ SELECT count(*) FROM big WHERE s LIKE '%ab%'",
    "/*+ Parallel(big 0 hard) */ SELECT count(*) FROM big WHERE s LIKE '%ab%'",
    "/*+ Parallel(big 2 soft) */ SELECT count(*) FROM big WHERE s LIKE '%ab%'",
    "/*+ Parallel(pt 0 hard) */ SELECT count(*) FROM pt WHERE k = 3",
    "/*+ Parallel(pt 2 hard) */ SELECT count(*) FROM pt WHERE k = 3",
    "/*+ Leading(small big) NestLoop(small big) */ SELECT count(*) FROM small JOIN big ON big.id = small.id",
    "/*+ HashJoin(small big) */ SELECT count(*) FROM small JOIN big ON big.id = small.id",
    "/*+ MergeJoin(small big) */ SELECT count(*) FROM small JOIN big ON big.id = small.id",
    "/*+ Leading(big small) */ SELECT count(*) FROM big JOIN small USING (id) WHERE big.s LIKE '%a%'",
    "/*+ SeqScan(small) IndexScan(big) */ SELECT count(*) FROM small JOIN big USING (id)",
    "/*+ Rows(big small #10) */ SELECT count(*) FROM big JOIN small USING (id)",
    "/*+ Set(enable_hashjoin off) */ SELECT count(*) FROM big JOIN small USING (id)",
    "/*+ IndexScan(pt) */ SELECT count(*) FROM pt WHERE id < 1000",
]


def hint_cluster(pg_config_path: str, libraries: str) -> Cluster:
    if not installed(pg_config_path, "pg_hint_plan"):
        pytest.skip("pg_hint_plan is not installed for this server (Debian packages it for 17)")
    return start(pg_config_path, libraries)


@pytest.fixture(scope="module", params=["pg_tempbuf,pg_hint_plan", "pg_hint_plan,pg_tempbuf"])
def hinted_cluster(request: pytest.FixtureRequest, pg_config_path: str) -> Iterator[Cluster]:
    cluster = hint_cluster(pg_config_path, request.param)
    yield cluster
    cluster.cleanup()


@pytest.mark.parametrize("query", HINTED)
def test_hinted_queries_answer_as_off(hinted_cluster: Cluster, query: str) -> None:
    with hinted_cluster.connect() as conn:
        conn.execute(HINT_SETUP)
        assert conn.execute(query).fetchall() == serial_rows(conn, query)
    assert_no_error(hinted_cluster)


def test_hints_mean_what_they_say_when_loaded_first(pg_config_path: str) -> None:
    cluster = hint_cluster(pg_config_path, "pg_hint_plan,pg_tempbuf")
    try:
        with cluster.connect() as conn:
            conn.execute(HINT_SETUP)
            no_workers = plan(conn, "/*+ Parallel(big 0 hard) */ SELECT count(*) FROM big WHERE s LIKE '%ab%'")
            assert "Workers Planned" not in no_workers, no_workers
            index = plan(conn, "/*+ IndexScan(big) */ SELECT count(*), sum(id) FROM big WHERE k < 20")
            assert "Index Scan" in index and "on big" in index, index
            assert "Seq Scan" not in index, index
    finally:
        cluster.cleanup()


# -- what monitoring sees -----------------------------------------------------------------


def buffer_blocks(conn: psycopg.Connection[Any], query: str) -> tuple[int, int]:
    """(local hit + read blocks of the whole plan, workers launched) by EXPLAIN (ANALYZE, BUFFERS)."""
    row = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {query}").fetchone()
    assert row is not None
    top = row[0][0]["Plan"]
    launched = 0
    pending = [top]
    while pending:
        node = pending.pop()
        launched += node.get("Workers Launched", 0)
        pending.extend(node.get("Plans", []))
    return top["Local Hit Blocks"] + top["Local Read Blocks"], launched


@pytest.mark.parametrize("pool", ["64MB", "2MB"], ids=["resident", "evicting"])
def test_buffers_count_the_workers_pages(preloaded_cluster: Cluster, pool: str) -> None:
    """A worker's page read in the leader's pool counts as a local hit, one read from the file
    as a local read: EXPLAIN (BUFFERS), auto_explain and pg_stat_statements see the pages of a
    parallel scan as they see those of the serial one (within 10%)."""
    with preloaded_cluster.connect(options=f"-c temp_buffers={pool}") as conn:
        conn.execute("CREATE TEMP TABLE t AS SELECT g id, md5(g::text) s FROM generate_series(1, 300000) g")
        conn.execute("ANALYZE t")
        query = "SELECT count(*) FROM t WHERE s LIKE '%ab%'"
        # A stock read first: it sets what a first reader sets (hint bits; from 19 each page
        # all-visible, reading and writing the VM), which neither measured read should count.
        conn.execute("SET pg_tempbuf.parallel_scan = off")
        conn.execute(query)
        conn.execute("RESET pg_tempbuf.parallel_scan")
        conn.execute("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0")
        ours, launched = buffer_blocks(conn, query)
        conn.execute("SET pg_tempbuf.parallel_scan = off")
        stock, _ = buffer_blocks(conn, query)
    assert launched > 0
    assert abs(ours - stock) <= 0.1 * stock, (ours, stock)


def test_explain_settings_shows_ours(preloaded_cluster: Cluster) -> None:
    with preloaded_cluster.connect() as conn:
        conn.execute("SET pg_tempbuf.parallel_scan = off; SET pg_tempbuf.write_page_cost = 2")
        text = plan(conn, "SELECT 1").replace("\n", " ")
        conn.execute("EXPLAIN (SETTINGS, COSTS OFF) SELECT 1")
        settings = " ".join(r[0] for r in conn.execute("EXPLAIN (SETTINGS, COSTS OFF) SELECT 1"))
    assert "pg_tempbuf.parallel_scan = 'off'" in settings, settings
    assert "pg_tempbuf.write_page_cost = '2'" in settings, settings
    assert "Settings" not in text
