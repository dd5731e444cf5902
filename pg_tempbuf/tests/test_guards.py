"""Forced races: each test makes one change the leader can make to a page happen in the
middle of a worker's read of it (pg_tempbuf.debug_hazard), and checks that the scan's guard
keeps the answer exact.  Each runs again with the guards off
(pg_tempbuf.debug_unprotected), where the same schedule must give a wrong answer: that is
what shows the test can fail.

The hazards, and the guard each one meets (see page_guard.c):
- the leader prunes a page a worker reads in place in its pool (Temp Seq Scan): the pin on
  every listed buffer;
- the leader prunes a heap page a worker of an index scan copies out of its pool, under a
  function above Gather: each copy compared with a second one;
- the leader prunes and writes back a page a worker reads from the file, while a function
  above Gather may read the table: every page it could prune kept for the leader (no pin is
  taken under such code); for an index scan, whose workers need whichever heap page the index
  names, each read of the file compared with a second one (where no checksum would catch it);
- a buffer a worker reads in place holds another page for a while (evicted and read again):
  the pin;
- the leader stalls between the two reads of the start/refuse handshake while workers
  cannot map its pool: the order of those reads;
- a buffer a worker reads in place goes to another block between its look at the
  descriptor and its read of the tuples (evict_during_batch, named for the copies of old):
  the pin; for an index scan's worker that peeks at an unpinned heap page, the descriptor
  read again after it copied the row;
- the list of the leader's pages has less room than the pages it would list (a table grown
  since the segment was sized, which a read-only statement cannot do): no copies at all;
- a portal is bound, the table changes, then the portal runs: the full scan flushes when
  the executor runs;
- (19) the leader prunes the rows of rolled-back subtransactions, which 19 lets a reader do on a
  page an INSERT filled: the same guards, the page seen as prunable by its versions.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from conftest import force_parallel, leader_pool_unavailable, plan_text, start_preloaded
from pglab.cluster import Cluster
from wire import WireError, WireSession

ROWS = 20000
# Code of the user's in the leader: a function above Gather that could read h.
LEADER_FUNCTION = """CREATE FUNCTION pg_temp.one(i int) RETURNS int LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
  AS 'BEGIN RETURN 1; END';
"""
# Every row once, its pad column updated in two of three rows: pages full of dead versions,
# which heap_page_prune_opt() prunes as soon as it looks at them.
SETUP = f"""
CREATE TEMP TABLE h (id int, pad text) WITH (fillfactor = 100);
INSERT INTO h SELECT g, repeat('x', 40) FROM generate_series(1, {ROWS}) g;
UPDATE h SET pad = repeat('y', 40) WHERE id % 3 <> 0;
""" + LEADER_FUNCTION
COUNT = "SELECT count(*), sum(id) FROM h"
EXACT_COUNT = [(ROWS, ROWS * (ROWS + 1) // 2)]
# The same, with a function above Gather: code in the leader that could read h.
COUNT_WITH_LEADER_CODE = "SELECT count(*), sum(id), sum(pg_temp.one(id)) FROM h"
EXACT_WITH_LEADER_CODE = [(ROWS, ROWS * (ROWS + 1) // 2, ROWS)]


@pytest.fixture(scope="module")
def no_checksum_cluster(pg_config_path: str) -> Iterator[Cluster]:
    """File reads are checked by page checksums where the cluster has them: a torn read is
    then read again, and the race never reaches a query.  Without them only the guards keep
    a worker's file read whole."""
    cluster = start_preloaded(pg_config_path, checksums=False)
    yield cluster
    cluster.cleanup()


def run_hazard(
    conn: psycopg.Connection[Any], hazard: str, protected: bool, query: str, settings: dict[str, str],
    more_setup: str = "", setup: str = SETUP,
) -> tuple[list[tuple[Any, ...]] | str, list[str]]:
    """The query's rows (or its error) and the notices of the forced race."""
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    force_parallel(conn)
    conn.execute("SET pg_tempbuf.debug_sync_start = on")
    for name, value in settings.items():
        conn.execute(f"SET {name} = {value}")
    conn.execute(setup + more_setup)
    conn.execute(f"SET pg_tempbuf.debug_unprotected = {'off' if protected else 'on'}")
    conn.execute(f"SET pg_tempbuf.debug_hazard = {hazard}")
    try:
        rows: list[tuple[Any, ...]] | str = [tuple(int(v) for v in r) for r in conn.execute(query).fetchall()]
    except psycopg.Error as e:
        rows = f"error: {e}"
    conn.execute("RESET pg_tempbuf.debug_hazard")
    conn.execute("RESET pg_tempbuf.debug_unprotected")
    return rows, [n for n in notices if "debug_hazard" in n]


def check(rows: object, exact: object, met: list[str], protected: bool, must_meet: bool) -> None:
    print(f"{'guarded' if protected else 'unguarded'}: {rows} (serial: {exact})")
    if protected:
        assert rows == exact
        if must_meet:
            assert met, "the worker never paused in the middle of a page: the race was not run"
    else:
        assert met, "the worker never paused in the middle of a page: the race was not run"
        assert rows != exact, "with the guards off, the forced race should have given a wrong answer"


needs_copies = pytest.mark.skipif(leader_pool_unavailable() is not None,
                                  reason=f"{leader_pool_unavailable()}")


@needs_copies
@pytest.mark.parametrize("hazard", ["prune_during_copy", "refill_during_copy"])
@pytest.mark.parametrize("protected", [True, False], ids=["guarded", "unguarded"])
def test_change_during_copy(preloaded_cluster: Cluster, hazard: str, protected: bool) -> None:
    """The leader prunes the page a worker is copying, or its buffer is evicted and refilled
    with the same block."""
    with preloaded_cluster.connect(options="-c temp_buffers=64MB") as conn:
        rows, met = run_hazard(conn, hazard, protected, COUNT, {})
    check(rows, EXACT_COUNT, met, protected, must_meet=True)


@needs_copies
@pytest.mark.parametrize("protected", [True, False], ids=["guarded", "unguarded"])
def test_refill_during_copy_under_leader_code(preloaded_cluster: Cluster, protected: bool) -> None:
    """Under a function above Gather the scan pins no page (page_guard.c): workers copy the
    pages the leader holds dirty, and the leader gives a buffer to another page and back in
    the middle of a copy (A, B, A: both looks at the descriptor see A).  Guarded, each copy is
    made twice and compared (page_source.c); unguarded, the torn copy gives a wrong answer."""
    with preloaded_cluster.connect(options="-c temp_buffers=64MB") as conn:
        rows, met = run_hazard(conn, "refill_during_copy", protected, COUNT_WITH_LEADER_CODE, {})
    check(rows, EXACT_WITH_LEADER_CODE, met, protected, must_meet=True)


@pytest.mark.parametrize("pool", ["64MB", "800kB"], ids=["resident", "evicting"])
@pytest.mark.parametrize("protected", [True, False], ids=["guarded", "unguarded"])
def test_prune_during_read(no_checksum_cluster: Cluster, protected: bool, pool: str) -> None:
    """Under code of the user's in the leader no page is pinned (the code may need every
    buffer: page_guard.c), so a page the leader could prune, resident or not, is the leader's
    alone, and no guarded worker read meets one; unguarded, workers read them and the prune
    tears a read."""
    with no_checksum_cluster.connect(options=f"-c temp_buffers={pool}") as conn:
        rows, met = run_hazard(conn, "prune_during_read", protected, COUNT_WITH_LEADER_CODE,
                               {"pg_tempbuf.shared_pool": "off"})
    check(rows, EXACT_WITH_LEADER_CODE, met, protected, must_meet=False)


# The same rows through h's index: a partial Temp Index Scan under Gather, the function above it.
# The pool flushed after the build, as the build itself did while its workers read the file: the
# races below meet a worker peeking at clean, unpinned pages.
INDEX_SETUP = "CREATE INDEX h_id ON h (id); ANALYZE h; SELECT pg_flush_local_buffers();"
INDEX_COUNT_WITH_LEADER_CODE = (f"SELECT count(*), sum(id), sum(pg_temp.one(id)) FROM h "
                                f"WHERE id BETWEEN 1 AND {ROWS}")
INDEX_SCAN_ONLY = {"enable_seqscan": "off", "enable_bitmapscan": "off", "enable_indexonlyscan": "off",
                   "pg_tempbuf.shared_pool": "off"}
INDEX_SCAN_FROM_POOL = {**INDEX_SCAN_ONLY, "pg_tempbuf.shared_pool": "on"}


def check_index_scan_hazard(cluster: Cluster, hazard: str, protected: bool, settings: dict[str, str],
                            setup: str = SETUP) -> None:
    """The hazard forced on the index count (temp_buffers=64MB, settings set): planned as a partial
    Temp Index Scan on h, and checked as check() does, the race met."""
    with cluster.connect(options="-c temp_buffers=64MB") as conn:
        rows, met = run_hazard(conn, hazard, protected, INDEX_COUNT_WITH_LEADER_CODE, settings,
                               more_setup=INDEX_SETUP, setup=setup)
        plan = plan_text(conn, INDEX_COUNT_WITH_LEADER_CODE)
    assert "Parallel Custom Scan (Temp Index Scan) on h" in plan, plan
    check(rows, EXACT_WITH_LEADER_CODE, met, protected, must_meet=True)


@pytest.mark.parametrize("protected", [True, False], ids=["guarded", "unguarded"])
def test_prune_during_index_scan_read(no_checksum_cluster: Cluster, protected: bool) -> None:
    """A worker of a Temp Index Scan reads a heap page from the file while a function above
    Gather could prune it: the leader prunes it and writes it back in the middle of the read.
    Guarded, the worker's second read differs and it reads again."""
    check_index_scan_hazard(no_checksum_cluster, "prune_during_read", protected, INDEX_SCAN_ONLY)


@needs_copies
@pytest.mark.parametrize("protected", [True, False], ids=["guarded", "unguarded"])
def test_prune_during_index_scan_copy(preloaded_cluster: Cluster, protected: bool) -> None:
    """A worker of a Temp Index Scan copies a heap page out of the leader's pool while a
    function above Gather could prune it: the leader prunes it in the middle of the copy.
    Guarded, the worker's second copy differs and it copies again (checksums or not: a page
    in the pool has none to verify)."""
    check_index_scan_hazard(preloaded_cluster, "prune_during_copy", protected, INDEX_SCAN_FROM_POOL)


# PostgreSQL 19 sets pd_prune_xid on every page an INSERT fills, so a reader prunes the versions of
# a rolled-back subtransaction as soon as it looks at a full page; before 19 only VACUUM, or a prune
# for a delete or an update, removes them.  h again, its rows the same, each page holding live
# versions between those of rolled-back subtransactions (one after every two rows, so that a prune
# moves live versions in both halves of the page) instead of updated ones.
ABORTED_SETUP = f"""
CREATE TEMP TABLE h (id int, pad text) WITH (fillfactor = 100);
DO $$ BEGIN
  FOR pair IN 0..{ROWS // 2 - 1} LOOP
    INSERT INTO h SELECT g, repeat('x', 40) FROM generate_series(pair * 2 + 1, pair * 2 + 2) g;
    BEGIN
      INSERT INTO h VALUES (-pair, repeat('z', 40));
      RAISE EXCEPTION 'rolled back';
    EXCEPTION WHEN raise_exception THEN NULL;
    END;
  END LOOP;
END $$;
""" + LEADER_FUNCTION


def inserts_set_prune_xid(cluster: Cluster) -> bool:
    return cluster.version_num >= 190000


@needs_copies
@pytest.mark.parametrize("scan", ["index_read", "index_copy", "seq_read"])
@pytest.mark.parametrize("protected", [True, False], ids=["guarded", "unguarded"])
def test_prune_of_rolled_back_rows(no_checksum_cluster: Cluster, preloaded_cluster: Cluster, protected: bool,
                                   scan: str) -> None:
    """19's new way to prune: the leader, running code above Gather, prunes the rows of rolled-back
    subtransactions (and defragments the page) in the middle of a worker's read of it from the file,
    or of its copy out of the pool.  The guard sees the page as prunable by its versions (an
    inserter that aborted), not by pd_prune_xid alone: guarded exact, unguarded wrong."""
    cluster = preloaded_cluster if scan == "index_copy" else no_checksum_cluster
    if not inserts_set_prune_xid(cluster):
        pytest.skip("before PostgreSQL 19 an INSERT leaves pd_prune_xid clear: no reader prunes these rows, "
                    "so there is no race to force")
    if scan == "seq_read":
        with cluster.connect(options="-c temp_buffers=64MB") as conn:
            rows, met = run_hazard(conn, "prune_during_read", protected, COUNT_WITH_LEADER_CODE,
                                   {"pg_tempbuf.shared_pool": "off"}, setup=ABORTED_SETUP)
        check(rows, EXACT_WITH_LEADER_CODE, met, protected, must_meet=False)
        return
    hazard, settings = (("prune_during_read", INDEX_SCAN_ONLY) if scan == "index_read"
                        else ("prune_during_copy", INDEX_SCAN_FROM_POOL))
    # Its index holds one entry a row (no updates): below min_parallel_index_scan_size.
    check_index_scan_hazard(cluster, hazard, protected, {**settings, "min_parallel_index_scan_size": "0"},
                            setup=ABORTED_SETUP)


# The count through h's index with no code above Gather: workers peek at the heap pages in the
# leader's pool instead of copying them.
INDEX_COUNT = f"SELECT count(*), sum(id) FROM h WHERE id BETWEEN 1 AND {ROWS}"


@needs_copies
@pytest.mark.parametrize("peek", ["in_place", "read"])
@pytest.mark.parametrize("protected", [True, False], ids=["guarded", "unguarded"])
def test_evict_during_index_peek(preloaded_cluster: Cluster, protected: bool, peek: str) -> None:
    """A worker of a Temp Index Scan peeks at an unpinned heap page in the leader's pool, and
    its buffer goes to another block between the worker's look at the descriptor and its copy
    of the row (the leader pins no listed page under this hazard), the row read in the mapping
    or with pread() of the memfd.  Guarded, the descriptor read after the copy shows the change
    and the worker reads the page again; unguarded, it counts the other block's row."""
    with preloaded_cluster.connect(options="-c temp_buffers=64MB") as conn:
        rows, met = run_hazard(conn, "evict_during_batch", protected, INDEX_COUNT,
                               {**INDEX_SCAN_FROM_POOL, "pg_tempbuf.debug_peek": peek},
                               more_setup=INDEX_SETUP)
        plan = plan_text(conn, INDEX_COUNT)
    assert "Parallel Custom Scan (Temp Index Scan) on h" in plan, plan
    check(rows, EXACT_COUNT, met, protected, must_meet=True)


@needs_copies
@pytest.mark.parametrize("protected", [True, False], ids=["guarded", "unguarded"])
def test_handshake_stall(preloaded_cluster: Cluster, protected: bool) -> None:
    """A fresh table, never written: a worker that cannot copy reads zeros unless the leader
    learns of it and writes the pages."""
    with preloaded_cluster.connect(options="-c temp_buffers=64MB") as conn:
        force_parallel(conn)
        # Not debug_sync_start: the leader must ask before the workers have started.
        conn.execute(f"CREATE TEMP TABLE fresh AS SELECT g AS id FROM generate_series(1, {ROWS}) g")
        conn.execute(f"SET pg_tempbuf.debug_unprotected = {'off' if protected else 'on'}")
        conn.execute("SET pg_tempbuf.debug_hazard = handshake_stall")
        rows = conn.execute("SELECT count(*), sum(id) FROM fresh").fetchall()
    exact = [(ROWS, ROWS * (ROWS + 1) // 2)]
    print(f"{'guarded' if protected else 'unguarded'}: {rows} (serial: {exact})")
    if protected:
        assert rows == exact
    else:
        assert rows != exact, "with the guards off, the stalled handshake should have lost rows"


BATCH_ROWS = 400_000  # 1,770 pages: chunks of 9 blocks, so that workers copy batches
BATCH_QUERY = "SELECT count(*), sum(id) FROM batched"
BATCH_EXACT = [(BATCH_ROWS, BATCH_ROWS * (BATCH_ROWS + 1) // 2)]


def run_on_fresh_table(conn: psycopg.Connection[Any], hazard: str, protected: bool) -> tuple[Any, list[str]]:
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    force_parallel(conn)
    conn.execute("SET pg_tempbuf.debug_sync_start = on")
    conn.execute(f"CREATE TEMP TABLE batched AS SELECT g AS id FROM generate_series(1, {BATCH_ROWS}) g")
    conn.execute(f"SET pg_tempbuf.debug_unprotected = {'off' if protected else 'on'}")
    conn.execute(f"SET pg_tempbuf.debug_hazard = {hazard}")
    row = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {BATCH_QUERY}").fetchone()
    assert row is not None
    rows = [tuple(int(v) for v in r) for r in conn.execute(BATCH_QUERY).fetchall()]
    conn.execute("RESET pg_tempbuf.debug_hazard")
    conn.execute("RESET pg_tempbuf.debug_unprotected")
    nodes = [row[0][0]["Plan"]]
    while "Custom Plan Provider" not in nodes[-1]:
        nodes.append(nodes[-1]["Plans"][0])
    return (rows, nodes[-1]), [n for n in notices if "debug_hazard" in n]


@needs_copies
@pytest.mark.parametrize("protected", [True, False], ids=["guarded", "unguarded"])
def test_evict_during_batch(preloaded_cluster: Cluster, protected: bool) -> None:
    """A worker found the page in the leader's pool, and its buffer goes to another block
    before it reads the tuples: the pin refuses that; unguarded, the worker reads the other
    block's rows."""
    with preloaded_cluster.connect(options="-c temp_buffers=64MB") as conn:
        (rows, scan), met = run_on_fresh_table(conn, "evict_during_batch", protected)
    assert met, "no worker paused in the middle of a page: the race was not run"
    assert scan["Page Source"] == "leader's pool, file"
    check(rows, BATCH_EXACT, met, protected, must_meet=True)


@needs_copies
def test_list_overflow(preloaded_cluster: Cluster) -> None:
    with preloaded_cluster.connect(options="-c temp_buffers=64MB") as conn:
        (rows, scan), _ = run_on_fresh_table(conn, "list_overflow", True)
    assert scan["Page Source"] == "file (the table outgrew the shared list of the leader's pages)"
    assert scan["Pages Flushed"] > 0 and "Pages From Leader's Pool" not in scan
    assert rows == BATCH_EXACT


@pytest.mark.parametrize("protected", [True, False], ids=["guarded", "unguarded"])
@pytest.mark.parametrize("pool", ["off", "on"], ids=["file", "pool"])
def test_bound_portal_runs_after_a_change(preloaded_cluster: Cluster, protected: bool, pool: str) -> None:
    """A full scan (the inner side of a hash join under Gather) whose portal is bound, then
    the table changes, then the portal runs: its workers must read the table as it is when
    they start.  Reading files, the leader writes it then, and nothing is left dirty for an
    eviction to write while they read; reading the leader's pool, they copy the pages as
    they are then, and nothing is written."""
    with preloaded_cluster.connect() as admin:
        admin.execute("DROP TABLE IF EXISTS guard_big")
        admin.execute("CREATE TABLE guard_big AS SELECT g AS id, g % 1000 AS k FROM generate_series(1, 100000) g")
        admin.execute("ANALYZE guard_big")
    query = "SELECT count(*), sum(s.w) FROM guard_big b JOIN stage s USING (k)"
    with WireSession(preloaded_cluster.socket_dir, preloaded_cluster.port, "postgres", "postgres") as wire:
        wire.simple(
            f"SET pg_tempbuf.shared_pool = {pool};"
            "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;"
            "SET pg_tempbuf.write_page_cost = 0; SET pg_tempbuf.buffer_scan_cost = 0;"
            "SET pg_tempbuf.read_page_cost = 0; SET pg_tempbuf.parallel_margin = 0;"
            "SET enable_parallel_hash = off;"
            f"SET pg_tempbuf.debug_unprotected = {'off' if protected else 'on'};"
            "CREATE TEMP TABLE stage AS SELECT g AS k, g * 3 AS w FROM generate_series(1, 400, 2) g;"
            "ANALYZE stage;"
        )
        plan = "\n".join(r[0] or "" for r in wire.simple(f"EXPLAIN (COSTS OFF) {query}").rows)
        assert "Custom Scan (Temp Seq Scan) on stage" in plan and "Gather" in plan, plan
        assert "Parallel Custom Scan (Temp Seq Scan) on stage" not in plan, plan
        try:
            rows = wire.bind_change_execute(query, "UPDATE stage SET w = w + 1").rows
        except WireError as e:
            rows = [[str(e)]]
        dirty_left = wire.simple(
            "SELECT count(*) FROM pg_local_buffers WHERE relfilenode = pg_relation_filenode('stage')"
            " AND relforknumber = 0 AND isdirty"
        ).rows
        serial = wire.simple(
            f"BEGIN; SET LOCAL pg_tempbuf.parallel_scan = off; {query}; ROLLBACK"
        ).rows
    # The portal's snapshot is older than the update: it sees the old values.
    count, updated_sum = (int(v or 0) for v in serial[0])
    print(f"{'guarded' if protected else 'unguarded'}: {rows}, dirty pages left when the portal ran: "
          f"{dirty_left} (serial: {serial})")
    if pool == "on":
        assert rows == [[str(count), str(updated_sum - count)]]
        assert dirty_left != [["0"]], "workers reading the pool need nothing written"
    elif protected:
        assert rows == [[str(count), str(updated_sum - count)]]
        assert dirty_left == [["0"]], "the table was left dirty while the portal's workers read it"
    else:
        assert dirty_left != [["0"]], "with the guards off the flush happens at bind time"
