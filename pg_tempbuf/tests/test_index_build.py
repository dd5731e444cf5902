"""CREATE INDEX and REINDEX of btrees on temporary tables with parallel workers (index_build.c).

Core asks for no worker when the table is temporary; pg_tempbuf asks for as many as core would
for a permanent table of that size, and core's parallel build does the rest.  These tests check
that workers really run (trace_sort names each participant's sort), that the rule is core's,
and that the index is the one the serial build makes: page for page (pageinspect), checked by
amcheck's bt_index_check(heapallindexed), and read back through an index-only scan against a
sequential scan, over generated MVCC histories built in the transaction that wrote the rows.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import differential_settings
from mvcc_history import history_step, open_transaction, replay_history, statement
from pglab.cluster import Cluster

EXAMPLES = 25
# Participants of a parallel sort name themselves in trace_sort's lines: "worker 0", "worker 1"
# (the leader's merge is "worker -1").  A serial build's sort has no such line.
PARTICIPANT = re.compile(r"(?:performsort|external sort) of worker (\d+)")


def has_extension(conn: psycopg.Connection[Any], name: str) -> bool:
    row = conn.execute("SELECT count(*) FROM pg_available_extensions WHERE name = %s", (name,)).fetchone()
    if row is None or row[0] == 0:
        return False
    conn.execute(f"CREATE EXTENSION IF NOT EXISTS {name}")
    return True


@dataclass
class Build:
    participants: int
    requested: int | None
    error: str | None = None
    detail: str | None = None
    notices: list[str] | None = None


def build(conn: psycopg.Connection[Any], sql: str) -> Build:
    """Run a CREATE INDEX or REINDEX with trace_sort on, and report how many sort participants
    it had and how many workers pg_tempbuf asked for (None: it asked for none)."""
    notices: list[str] = []

    def keep(d: psycopg.errors.Diagnostic) -> None:
        notices.append(d.message_primary or "")

    conn.add_notice_handler(keep)
    conn.execute("SET trace_sort = on")
    conn.execute("SET client_min_messages = debug1")
    error = detail = None
    try:
        conn.execute(sql)
    except psycopg.Error as exc:
        error, detail = exc.sqlstate, exc.diag.message_detail or exc.diag.message_primary
    finally:
        conn.remove_notice_handler(keep)
    if error is None:
        conn.execute("RESET trace_sort")
        conn.execute("RESET client_min_messages")
    participants = {int(m.group(1)) for n in notices if (m := PARTICIPANT.search(n))}
    requested = None
    for n in notices:
        if (m := re.search(r"on temporary table \"\w+\" with request for (\d+) parallel workers", n)):
            requested = int(m.group(1))
    return Build(len(participants), requested, error, detail, notices)


def page_digests(conn: psycopg.Connection[Any], index: str) -> list[str]:
    rows = conn.execute(
        f"SELECT md5(get_raw_page('{index}', b::int)) FROM generate_series(0, "
        f"pg_relation_size('{index}') / current_setting('block_size')::int - 1) b").fetchall()
    return [r[0] for r in rows]


def read_through(conn: psycopg.Connection[Any], index: str, columns: str, where: str, order: str) -> list[Any]:
    """The rows the index returns (an index-only scan where it can), forced onto it."""
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET enable_bitmapscan = off")
    conn.execute("SET pg_tempbuf.parallel_scan = off")
    query = f"SELECT {columns} FROM t WHERE {where} ORDER BY {order}"
    plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {query}").fetchall())
    rows = sorted(conn.execute(query).fetchall(), key=repr)
    for name in ("enable_seqscan", "enable_bitmapscan", "pg_tempbuf.parallel_scan"):
        conn.execute(f"RESET {name}")
    assert re.search(rf"Index (Only )?Scan using {index} on t", plan), plan
    return rows


def seq_rows(conn: psycopg.Connection[Any], columns: str, where: str) -> list[Any]:
    conn.execute("SET enable_indexscan = off")
    conn.execute("SET enable_indexonlyscan = off")
    conn.execute("SET enable_bitmapscan = off")
    rows = sorted(conn.execute(f"SELECT {columns} FROM t WHERE {where}").fetchall(), key=repr)
    for name in ("enable_indexscan", "enable_indexonlyscan", "enable_bitmapscan"):
        conn.execute(f"RESET {name}")
    return rows


# (definition, the columns it covers, the rows it indexes, their order) over mvcc_history's t:
# the ORDER BY makes the planner consider the index for the whole table.
INDEXES = [
    ("(a)", "a", "TRUE", "a"),
    ("(s)", "s", "TRUE", "s"),
    ("(a, n)", "a, n", "TRUE", "a, n"),
    ("(n DESC NULLS FIRST)", "n", "TRUE", "n DESC NULLS FIRST"),
    ("(id) INCLUDE (s)", "id, s", "TRUE", "id"),
    ("(a) WHERE s IS NOT NULL", "a", "s IS NOT NULL", "a"),
    ("(lower(s))", "lower(s)", "TRUE", "lower(s)"),
    ("(a, id)", "a, id", "TRUE", "a, id"),
]


@dataclass
class Case:
    temp_buffers: int
    history: list[list[str]]
    open_tx: list[str]
    open_subtx: list[str]
    rollback_open_subtx: bool


@st.composite
def case(draw: st.DrawFn) -> Case:
    return Case(
        temp_buffers=draw(st.sampled_from([100, 1024, 16384])),
        history=draw(st.lists(history_step(False), min_size=1, max_size=6)),
        open_tx=draw(st.lists(statement(False), max_size=3)),
        open_subtx=draw(st.lists(statement(False), max_size=3)),
        rollback_open_subtx=draw(st.booleans()),
    )


def test_parallel_build_equals_serial(preloaded_cluster: Cluster) -> None:
    """Generated histories (committed, aborted and half-rolled-back transactions, updates,
    deletes, flushes, evictions, VACUUM, TRUNCATE), then, in a transaction with its own rows and
    a subtransaction's: the index built with workers is the serial build's, page for page."""
    ran = Counter[str]()
    with_workers = Counter[str]()
    read_back = Counter[str]()

    def compare(conn: psycopg.Connection[Any], c: Case, definition: str, columns: str, where: str, order: str,
                pageinspect: bool, amcheck: bool) -> None:
        ours = build(conn, f"CREATE INDEX i_par ON t {definition}")
        assert ours.error is None, ours
        conn.execute("SET pg_tempbuf.parallel_index_build = off")
        stock = build(conn, f"CREATE INDEX i_ser ON t {definition}")
        conn.execute("RESET pg_tempbuf.parallel_index_build")
        assert stock.error is None and stock.participants == 0 and stock.requested is None, stock
        assert ours.requested == 2, ours

        ran[definition] += 1
        with_workers[definition] += ours.participants >= 2
        if pageinspect:
            assert page_digests(conn, "i_par") == page_digests(conn, "i_ser"), f"{definition}, case: {c}"
        if amcheck:
            conn.execute("SELECT bt_index_check('i_par', true)")
        # A broken HOT chain marks the index unusable by the transaction that built it
        # (pg_index.indcheckxmin): both builds must see it alike.
        checkxmin = conn.execute("SELECT indexrelid::regclass::text, indcheckxmin FROM pg_index "
                                 "WHERE indrelid = 't'::regclass ORDER BY 1").fetchall()
        assert checkxmin[0][1] == checkxmin[1][1], checkxmin
        conn.execute("DROP INDEX i_ser")
        if not checkxmin[0][1]:
            read_back[definition] += 1
            expected = seq_rows(conn, columns, where)
            assert read_through(conn, "i_par", columns, where, order) == expected, f"{definition}, case: {c}"
        conn.execute("DROP INDEX i_par")

    @differential_settings(EXAMPLES)
    @given(case())
    def check(c: Case) -> None:
        with preloaded_cluster.connect(options=f"-c temp_buffers={c.temp_buffers}") as conn:
            pageinspect = has_extension(conn, "pageinspect")
            amcheck = has_extension(conn, "amcheck")
            # The table's parallel_workers option asks for workers on a table of any size.
            conn.execute("CREATE TEMP TABLE t (id bigserial, a int, n numeric, s text, w text) "
                         "WITH (parallel_workers = 2)")
            conn.execute("SET max_parallel_maintenance_workers = 2")
            replay_history(conn, c.history)
            open_transaction(conn, c.open_tx, c.open_subtx, c.rollback_open_subtx)
            for definition, columns, where, order in INDEXES:
                compare(conn, c, definition, columns, where, order, pageinspect, amcheck)
            conn.execute("ROLLBACK")

    check()
    print("parallel builds with a worker launched / read back through the index / run:")
    for definition in sorted(ran):
        print(f"  {definition}: {with_workers[definition]} / {read_back[definition]} / {ran[definition]}")
    assert sum(with_workers.values()) >= sum(ran.values()) * 3 // 4, "workers rarely launched"
    assert sum(read_back.values()) >= sum(ran.values()) // 2, "the indexes were rarely usable"


def big_table(rows: int) -> str:
    """A table just written: ids, a permutation of them (7919 is prime to rows), md5 strings."""
    return (f"CREATE TEMP TABLE t AS SELECT g AS id, (g::bigint * 7919) % {rows} AS a, md5(g::text) AS s "
            f"FROM generate_series(1, {rows}) g")


BIG_TABLE = big_table(300_000)


def test_default_settings_use_workers(preloaded_cluster: Cluster) -> None:
    """Default settings plus max_parallel_maintenance_workers = 2, on a table just written and
    a few rows deleted: core's rule gives one worker at the default 64MB of
    maintenance_work_mem; it launches, and the index is the serial one."""
    with preloaded_cluster.connect() as conn:
        conn.execute("SET max_parallel_maintenance_workers = 2")
        conn.execute(BIG_TABLE)
        conn.execute("DELETE FROM t WHERE id % 11 = 0")
        ours = build(conn, "CREATE INDEX i_par ON t (s)")
        assert ours.requested == 1 and ours.participants == 2, ours
        conn.execute("SET pg_tempbuf.parallel_index_build = off")
        stock = build(conn, "CREATE INDEX i_ser ON t (s)")
        assert stock.requested is None and stock.participants == 0, stock
        if has_extension(conn, "pageinspect"):
            assert page_digests(conn, "i_par") == page_digests(conn, "i_ser")
        conn.execute("SET maintenance_work_mem = '128MB'")
        conn.execute("RESET pg_tempbuf.parallel_index_build")
        again = build(conn, "REINDEX INDEX i_par")
        assert again.requested is not None and again.participants == again.requested + 1, again
        if has_extension(conn, "amcheck"):
            conn.execute("SELECT bt_index_check('i_par', true)")


def test_core_rule(preloaded_cluster: Cluster) -> None:
    """Where core's rule says one process pays best, the build stays serial: a small table,
    too little maintenance_work_mem, parallel_workers = 0, a parallel-unsafe expression, no
    maintenance workers; and with pg_tempbuf.parallel_index_build off."""
    with preloaded_cluster.connect() as conn:
        conn.execute("SET max_parallel_maintenance_workers = 2")
        conn.execute(BIG_TABLE)
        conn.execute("CREATE TEMP TABLE small AS SELECT g AS a FROM generate_series(1, 1000) g")
        conn.execute("CREATE FUNCTION pg_temp.unsafe(i int) RETURNS int LANGUAGE sql IMMUTABLE "
                     "PARALLEL UNSAFE AS 'SELECT i + 1'")
        assert build(conn, "CREATE INDEX ON small (a)").requested is None
        conn.execute("SET maintenance_work_mem = '32MB'")
        assert build(conn, "CREATE INDEX ON t (a)").requested is None
        conn.execute("RESET maintenance_work_mem")
        assert build(conn, "CREATE INDEX ON t (pg_temp.unsafe(a))").requested is None
        conn.execute("SET max_parallel_maintenance_workers = 0")
        assert build(conn, "CREATE INDEX ON t (id)").requested is None
        conn.execute("SET max_parallel_maintenance_workers = 2")
        conn.execute("SET pg_tempbuf.parallel_index_build = off")
        assert build(conn, "CREATE INDEX ON t (id)").requested is None
        conn.execute("RESET pg_tempbuf.parallel_index_build")
        conn.execute("ALTER TABLE t SET (parallel_workers = 0)")
        assert build(conn, "CREATE INDEX ON t (id)").requested is None
        conn.execute("ALTER TABLE small SET (parallel_workers = 1)")
        assert build(conn, "CREATE INDEX ON small ((a * 2))").requested == 1


def test_toast_keeps_the_build_serial_only_where_workers_would_read_it(preloaded_cluster: Cluster) -> None:
    """Out-of-line values: an index that reads the TOASTed column is built serially (its
    workers would read TOAST pages that another participant may write back); one on another
    column still gets workers."""
    with preloaded_cluster.connect() as conn:
        conn.execute("SET max_parallel_maintenance_workers = 2")
        conn.execute("CREATE TEMP TABLE t (id int, w text) WITH (parallel_workers = 2)")
        conn.execute("INSERT INTO t SELECT g, CASE WHEN g % 100 = 0 THEN (SELECT string_agg(md5(g::text || i::text), '') "
                     "FROM generate_series(1, 200) i) ELSE 'w' || g END FROM generate_series(1, 20000) g")
        row = conn.execute("SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE oid = 't'::regclass").fetchone()
        assert row is not None and row[0] > 0
        serial = build(conn, "CREATE INDEX ON t (left(w, 12))")
        assert serial.requested is None
        assert any(re.search(r'on temporary table "t" serially: its workers would read TOAST pages', n)
                   for n in serial.notices or []), serial.notices
        assert build(conn, "CREATE INDEX ON t (id)").requested == 2


def test_unique_violation(preloaded_cluster: Cluster) -> None:
    """A duplicate key in a unique build with workers fails with core's error, the key named."""
    with preloaded_cluster.connect() as conn:
        conn.execute("SET max_parallel_maintenance_workers = 2")
        conn.execute(BIG_TABLE)
        conn.execute("UPDATE t SET a = 4242 WHERE id IN (1000, 250000)")
        ours = build(conn, "CREATE UNIQUE INDEX u ON t (a)")
        conn.execute("SET pg_tempbuf.parallel_index_build = off")
        stock = build(conn, "CREATE UNIQUE INDEX u ON t (a)")
    assert ours.requested == 1
    assert ours.error == stock.error == "23505", (ours, stock)
    assert ours.detail == stock.detail == "Key (a)=(4242) is duplicated.", (ours, stock)


def test_cancel_leaves_no_index(preloaded_cluster: Cluster) -> None:
    """A build cancelled while its workers sort leaves no index and the table as it was; the
    next build succeeds."""
    with preloaded_cluster.connect() as conn:
        conn.execute("SET max_parallel_maintenance_workers = 2")
        conn.execute("SET maintenance_work_mem = '128MB'")
        conn.execute(big_table(1_200_000))
        before = conn.execute("SELECT count(*), sum(hashtext(s)) FROM t").fetchone()
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        pid = row[0]

        def cancel_soon() -> None:
            with preloaded_cluster.connect() as admin:
                for _ in range(200):
                    time.sleep(0.02)
                    running = admin.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE leader_pid = %s", (pid,)).fetchone()
                    if running and running[0] > 0:
                        break
                admin.execute("SELECT pg_cancel_backend(%s)", (pid,))

        canceller = threading.Thread(target=cancel_soon)
        canceller.start()
        cancelled = build(conn, "CREATE INDEX i ON t (s)")
        canceller.join()
        assert cancelled.error == "57014", cancelled
        assert conn.execute("SELECT count(*) FROM pg_class WHERE relname = 'i'").fetchone() == (0,)
        assert conn.execute("SELECT count(*), sum(hashtext(s)) FROM t").fetchone() == before
        done = build(conn, "CREATE INDEX i ON t (s)")
        assert done.error is None and done.requested is not None, done
        assert done.participants == done.requested + 1, done
        if has_extension(conn, "amcheck"):
            conn.execute("SELECT bt_index_check('i', true)")


def check_against_serial_build(conn: psycopg.Connection[Any], definition: str) -> None:
    """i_par, built with workers on t, is what core's serial build makes of the same table: i_ser,
    page for page (pageinspect), and amcheck's bt_index_check(heapallindexed) passes on i_par."""
    conn.execute("SET pg_tempbuf.parallel_index_build = off")
    build(conn, f"CREATE INDEX i_ser ON t {definition}")
    if has_extension(conn, "pageinspect"):
        assert page_digests(conn, "i_par") == page_digests(conn, "i_ser")
    if has_extension(conn, "amcheck"):
        conn.execute("SELECT bt_index_check('i_par', true)")


DIRTY_PAGES = ("SELECT count(*) FILTER (WHERE isdirty) FROM pg_local_buffers "
               "WHERE relfilenode = pg_relation_filenode('t')")


def test_a_table_just_written_into_a_large_pool_builds_with_workers_that_read_the_pool(
        preloaded_cluster: Cluster) -> None:
    """A table just written into a pool that holds it, every page dirty: workers copy their share
    out of the leader's pool (build_scan.c), and the leader writes none of it, yet the index is
    the serial build's, page for page."""
    with preloaded_cluster.connect(options="-c temp_buffers=256MB") as conn:
        conn.execute("SET max_parallel_maintenance_workers = 2")
        conn.execute(BIG_TABLE)
        dirty = conn.execute(DIRTY_PAGES).fetchone()[0]
        assert dirty > 1000, dirty
        if os.environ.get("PGTB_SERVER_SHIM") == "deny_proc_fd":
            # Workers may not map the pool: the fallback, as with pg_tempbuf.shared_pool = off.
            assert build(conn, "CREATE INDEX i_par ON t (s)").requested is None
            return
        ours = build(conn, "CREATE INDEX i_par ON t (s)")
        assert ours.requested == 1 and ours.participants == 2, ours
        assert conn.execute(DIRTY_PAGES).fetchone()[0] == dirty  # nothing written
        check_against_serial_build(conn, "(s)")


def test_where_workers_cannot_map_the_pool_a_mostly_dirty_table_builds_serially(
        preloaded_cluster: Cluster) -> None:
    """Without the pool to read (pg_tempbuf.shared_pool = off, as where the system refuses it),
    the leader writes what workers read, and writing a whole table first costs more than a worker
    saves (index_build.c, too_much_to_write()): a table just written stays serial; once its pages
    are written, the same build gets its worker, which reads the file through its ring."""
    with preloaded_cluster.connect(options="-c temp_buffers=256MB") as conn:
        conn.execute("SET max_parallel_maintenance_workers = 2")
        conn.execute("SET pg_tempbuf.shared_pool = off")
        conn.execute(BIG_TABLE)
        assert build(conn, "CREATE INDEX ON t (s)").requested is None
        conn.execute("SELECT pg_flush_local_buffers()")
        ours = build(conn, "CREATE INDEX i_par ON t (s)")
        assert ours.requested == 1 and ours.participants == 2, ours
        if has_extension(conn, "amcheck"):
            conn.execute("SELECT bt_index_check('i_par', true)")


def test_workers_refused_the_pool_leave_their_share_to_the_others(preloaded_cluster: Cluster) -> None:
    """Where a worker cannot map the leader's pool although the leader's probe could (forced with
    pg_tempbuf.debug_hazard = handshake_stall), it takes no block and the leader scans them all:
    no error, nothing written, and the index is the serial build's."""
    with preloaded_cluster.connect(options="-c temp_buffers=256MB") as conn:
        conn.execute("SET max_parallel_maintenance_workers = 2")
        conn.execute(BIG_TABLE)
        dirty = conn.execute(DIRTY_PAGES).fetchone()[0]
        conn.execute("SET pg_tempbuf.debug_hazard = handshake_stall")
        if os.environ.get("PGTB_SERVER_SHIM") == "deny_proc_fd":
            assert build(conn, "CREATE INDEX i_par ON t (s)").requested is None
            return
        refused = build(conn, "CREATE INDEX i_par ON t (s)")
        conn.execute("RESET pg_tempbuf.debug_hazard")
        assert refused.error is None and refused.requested == 1 and refused.participants == 2, refused
        assert any("could not map the leader's local buffers, and reads no page" in n
                   for n in refused.notices or []), refused.notices
        assert conn.execute(DIRTY_PAGES).fetchone()[0] == dirty
        check_against_serial_build(conn, "(s)")
