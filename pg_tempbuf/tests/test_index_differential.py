"""Differential proof of the Temp Index Scan: parallel result == serial result.

Each generated case builds the temporary table `t` with btree indexes of every kind the scan
reads (unique-ish, multi-column, DESC NULLS FIRST, on an expression, partial, one on a column
with many duplicates, which deduplicates into posting lists), runs a random MVCC history on it
(mvcc_history.py: committed, aborted and half-rolled-back transactions, updates that move rows
in the indexes, HOT updates, deletions, flushes, evictions, VACUUM, TRUNCATE, out-of-line values)
with reads through the indexes in between that mark dead entries in the leader, leaves a
transaction open with a live subtransaction, and runs index shapes twice: with parallel plans
forced and index scans favoured (sequential scans disabled on PostgreSQL 18; before it, where a
disabled path only costs more, random_page_cost = 0.1), and with pg_tempbuf.parallel_scan = off
(core's serial index scans).  Both must return the same rows, or raise the same error.

Shapes: the inner side of a nested loop rescanned with each outer row's key (equality, a range
after an equality prefix, `= ANY(array)` with duplicates and NULLs, IS NULL, a cross-type key),
semi and anti joins, a merge join reading the index in order (forward, and backward for
ORDER BY ... DESC), ORDER BY ... LIMIT over a join,
out-of-line values fetched through the index scan; index-only reads (Temp Index Only Scan)
of a range and of a nested loop's inner side; and scans whose one range the
participants share (Parallel Temp Index Scan): a range, an ordered read under Gather Merge on
an ascending and on a DESC NULLS FIRST index and over `= ANY(array)`, a grouped read; and
bitmap heap scans (Temp Bitmap Heap Scan, index scans off and bitmap scans on in both runs): an
OR of two indexed columns, an AND of two ranges, a nested loop's inner side, and an OR whose one
bitmap the participants share (Parallel Temp Bitmap Heap Scan).  Half of the queries
run without the leader's participation, so that workers do all of the parallel part.

Each run counts the queries whose plan had a Temp Index (or Bitmap Heap) Scan under a Gather
that launched workers, those where a worker returned rows from it, those with a shared range,
those reading the index only, those reading backward and those reading through a bitmap, and
requires all but the backward ones (required on PostgreSQL 18 only).

PGTB_INDEX_EXAMPLES sets the number of cases (default: a fast subset for `make test`).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psycopg
from hypothesis import given
from hypothesis import strategies as st
from mvcc_history import history_step, open_transaction, replay_history, run, statement
from pglab.cluster import Cluster

from conftest import FORCE_PARALLEL, create_perm_table, differential_settings

EXAMPLES = int(os.environ.get("PGTB_INDEX_EXAMPLES", "20"))

INDEXES = [
    "CREATE INDEX t_id ON t (id)",
    "CREATE INDEX t_a_id ON t (a, id)",
    "CREATE INDEX t_a_desc ON t (a DESC NULLS FIRST, n)",
    "CREATE INDEX t_lower_s ON t (lower(s))",
    "CREATE INDEX t_n_small ON t (n) WHERE a < 25",
    "CREATE INDEX t_a ON t (a)",
]

# Reads through t's indexes in the leader, between history steps: they mark the entries of
# dead rows dead (LP_DEAD), which a later parallel scan then meets.
INDEX_READS = [
    "SELECT count(*) FROM t WHERE id > 0",
    "SELECT count(*) FROM t WHERE a >= 0",
    "SELECT count(*) FROM t WHERE lower(s) > ''",
]

# (template, row order significant, join methods left on)
SHAPES: dict[str, tuple[str, bool, tuple[str, ...]]] = {
    "nl_eq": ("SELECT perm.b, t.id, t.a, t.n FROM perm JOIN t ON t.id = perm.b WHERE perm.a < {k}",
              False, ("nestloop",)),
    "nl_prefix_range": ("SELECT perm.b, t.id FROM perm JOIN t ON t.a = perm.a AND t.id BETWEEN perm.b - {k} * 20 "
                        "AND perm.b + {k}", False, ("nestloop",)),
    "nl_prefix_gt": ("SELECT count(*), sum(t.id), max(t.s) FROM perm JOIN t ON t.a = perm.a AND t.id > {k} * 9",
                     False, ("nestloop",)),
    "nl_any": ("SELECT perm.b, t.id FROM perm JOIN t ON t.id = ANY (ARRAY[perm.b, perm.b + {k}, perm.b, NULL]) "
               "WHERE perm.b % 3 = 0", False, ("nestloop",)),
    "nl_const_any": ("SELECT perm.b, t.a, t.id FROM perm JOIN t ON t.a = ANY ('{{{k}, 3, 3, 41}}') "
                     "AND t.id = perm.b", False, ("nestloop",)),
    "nl_is_null": ("SELECT perm.b, t.id FROM perm JOIN t ON t.a IS NULL AND t.id = perm.b", False, ("nestloop",)),
    "nl_desc": ("SELECT perm.b, t.id, t.n FROM perm JOIN t ON t.a = perm.a AND t.n < perm.b * 1.5 "
                "WHERE perm.b < {k} * 30", False, ("nestloop",)),
    "nl_expr": ("SELECT perm.b, t.id FROM perm JOIN t ON lower(t.s) = md5((perm.b + {k})::text)",
                False, ("nestloop",)),
    "nl_partial": ("SELECT perm.b, t.id FROM perm JOIN t ON t.n = perm.b * 1.5 AND t.a < 25", False, ("nestloop",)),
    "nl_cross_type": ("SELECT perm.b, t.id FROM perm JOIN t ON t.id = perm.b::int2 WHERE perm.b < 30000",
                      False, ("nestloop",)),
    "semi": ("SELECT count(*), sum(perm.b) FROM perm WHERE EXISTS (SELECT 1 FROM t WHERE t.id = perm.b + {k})",
             False, ("nestloop",)),
    "anti": ("SELECT count(*), sum(perm.b) FROM perm WHERE NOT EXISTS "
             "(SELECT 1 FROM t WHERE t.a = perm.a AND t.id < {k} * 10)", False, ("nestloop",)),
    "merge": ("SELECT perm.b, t.id, t.s FROM perm JOIN t ON t.id = perm.b AND t.id < {k} * 40", False, ("mergejoin",)),
    "limit": ("SELECT t.id, perm.b FROM perm JOIN t ON t.id = perm.b ORDER BY t.id, perm.b LIMIT {k}",
              True, ("nestloop", "mergejoin")),
    # Backward: a merge join reading the index in descending order.
    "limit_desc": ("SELECT t.id, perm.b FROM perm JOIN t ON t.id = perm.b AND t.id > {k} "
                   "ORDER BY t.id DESC, perm.b DESC LIMIT {k} * 3", True, ("mergejoin",)),
    "toast": ("SELECT count(*), sum(length(t.w)), max(md5(t.w)) FROM perm JOIN t ON t.id = perm.b",
              False, ("nestloop",)),
    # One range shared by the participants.
    "shared_range": ("SELECT count(*), sum(t.id), max(t.s), sum(length(t.w)) FROM t "
                     "WHERE t.id BETWEEN {k} AND {k} * 60", False, ()),
    "shared_ordered": ("SELECT t.a, t.id, t.n FROM t WHERE t.a > {k} - 20 ORDER BY t.a, t.id", True, ()),
    "shared_desc": ("SELECT t.a, t.n FROM t WHERE t.a <= {k} ORDER BY t.a DESC NULLS FIRST, t.n", True, ()),
    "shared_group": ("SELECT t.a, count(*), sum(t.id) FROM t WHERE t.a >= {k} % 7 GROUP BY t.a", False, ()),
    # = ANY: each element's range shared in turn, rows in order under Gather Merge.
    "shared_any": ("SELECT t.a, t.id, t.n FROM t WHERE t.a = ANY ('{{{k}, NULL, "
                   + ", ".join(str(i) for i in range(0, 50, 2)) + "}}') ORDER BY t.a, t.id", True, ()),
    # Index only: the columns of t_a_id, the heap fetched where the visibility map (set by the
    # history's VACUUMs, cleared by its writes) does not say all visible.
    "ios_range": ("SELECT t.a, t.id FROM t WHERE t.a BETWEEN {k} - 12 AND {k} ORDER BY t.a, t.id", True, ()),
    "ios_nl": ("SELECT perm.b, t.a, t.id FROM perm JOIN t ON t.a = perm.a AND t.id < perm.b + {k} "
               "WHERE perm.b < {k} * 40", False, ("nestloop",)),
    # Bitmap heap scans (Temp Bitmap Heap Scan), index scans off: an OR of two indexed columns,
    # an AND of two ranges, a nested loop's inner side through one index.
    "bm_or": ("SELECT perm.b, t.id, t.a, t.s FROM perm JOIN t ON t.a = perm.a OR t.id = perm.b + {k} "
              "WHERE perm.b % 7 = 0", False, ("nestloop",)),
    "bm_and": ("SELECT perm.b, t.id, t.n FROM perm JOIN t ON t.id BETWEEN perm.b AND perm.b + {k} * 20 "
               "AND lower(t.s) BETWEEN md5(perm.b::text) AND 'c' WHERE perm.b < {k} * 30", False, ("nestloop",)),
    "bm_join": ("SELECT perm.b, t.id, t.n, length(t.w) FROM perm JOIN t ON t.a = perm.a AND t.n < perm.b * 2 "
                "WHERE perm.b < {k} * 30", False, ("nestloop",)),
    # The partial form: one bitmap shared by the participants, its heap pages divided among them.
    "bm_shared": ("SELECT count(*), sum(t.id), max(t.s), sum(length(t.w)) FROM t "
                  "WHERE t.a < {k} % 9 OR t.id < {k} * 20", False, ()),
}
# Shapes read through bitmaps: bitmap scans allowed, index scans not.
BITMAP_SHAPES = {"bm_or", "bm_and", "bm_join", "bm_shared"}
JOIN_SETTINGS = {"nestloop": "enable_nestloop", "mergejoin": "enable_mergejoin", "hashjoin": "enable_hashjoin"}


@dataclass
class ShapeQuery:
    shape: str
    sql: str
    ordered: bool
    join_methods: tuple[str, ...]
    leader_participates: bool  # off: workers do all of the parallel part


@st.composite
def shape_query(draw: st.DrawFn, shapes: list[str] | None = None) -> ShapeQuery:
    shape = draw(st.sampled_from(shapes or sorted(SHAPES)))
    template, ordered, methods = SHAPES[shape]
    return ShapeQuery(shape, template.format(k=draw(st.integers(1, 40))), ordered, methods, draw(st.booleans()))


@st.composite
def index_step(draw: st.DrawFn) -> list[str]:
    """A history step, or a read through an index in the leader."""
    if draw(st.integers(0, 3)) == 0:
        return ["SET enable_seqscan = off", "SET enable_bitmapscan = off", draw(st.sampled_from(INDEX_READS)),
                "RESET enable_seqscan", "RESET enable_bitmapscan"]
    return draw(history_step(True))


@dataclass
class Case:
    temp_buffers: int
    history: list[list[str]]
    open_tx: list[str]
    open_subtx: list[str]
    rollback_open_subtx: bool
    queries: list[ShapeQuery] = field(default_factory=list)


@st.composite
def case(draw: st.DrawFn) -> Case:
    return Case(
        temp_buffers=draw(st.sampled_from([100, 1024, 16384])),
        history=draw(st.lists(index_step(), min_size=1, max_size=6)),
        open_tx=draw(st.lists(statement(True), max_size=3)),
        open_subtx=draw(st.lists(statement(True), max_size=3)),
        rollback_open_subtx=draw(st.booleans()),
        # One bitmap shape in every case: they are 4 shapes of 25.
        queries=draw(st.lists(shape_query(), min_size=3, max_size=8))
        + [draw(shape_query(sorted(BITMAP_SHAPES)))],
    )


def index_scans_in_workers(conn: psycopg.Connection[Any], sql: str) -> tuple[bool, bool, bool, bool, bool, bool]:
    """(a Temp Index (Only) or Bitmap Heap Scan under a Gather that launched workers, a worker
    returned rows from one, one of them was parallel aware, one was index only, one read
    backward, one was a bitmap scan), from EXPLAIN ANALYZE VERBOSE; the savepoint q is restored
    when the query fails."""
    try:
        row = conn.execute(f"EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) {sql}").fetchone()
    except psycopg.Error:
        conn.execute("ROLLBACK TO SAVEPOINT q")
        return False, False, False, False, False, False
    assert row is not None
    under = False
    in_worker = False
    shared = False
    index_only = False
    backward = False
    bitmap = False
    pending: list[tuple[dict[str, Any], bool]] = [(row[0][0]["Plan"], False)]
    while pending:
        node, launched = pending.pop()
        launched = launched or node.get("Workers Launched", 0) > 0
        provider = str(node.get("Custom Plan Provider", ""))
        if (provider.startswith("Temp Index") or provider == "Temp Bitmap Heap Scan") and launched:
            under = True
            in_worker = in_worker or any(w.get("Actual Rows", 0) > 0 for w in node.get("Workers", []))
            shared = shared or node.get("Parallel Aware", False)
            index_only = index_only or provider == "Temp Index Only Scan"
            backward = backward or node.get("Scan Direction") == "Backward"
            bitmap = bitmap or provider == "Temp Bitmap Heap Scan"
        pending.extend((child, launched) for child in node.get("Plans", []))
    return under, in_worker, shared, index_only, backward, bitmap


def test_index_scans_parallel_equals_serial(preloaded_cluster: Cluster) -> None:
    create_perm_table(preloaded_cluster)

    with preloaded_cluster.connect() as admin:
        row = admin.execute("SELECT current_setting('server_version_num')::int >= 180000").fetchone()
        assert row is not None
        disabled_nodes = bool(row[0])

    ran = Counter[str]()
    under_gather = Counter[str]()
    in_workers = Counter[str]()
    shared_ranges = Counter[str]()
    index_only_scans = Counter[str]()
    backward_scans = Counter[str]()
    bitmap_scans = Counter[str]()

    def compare(conn: psycopg.Connection[Any], q: ShapeQuery, c: Case) -> None:
        for name, value in FORCE_PARALLEL.items():
            conn.execute(f"SET {name} = {value}")
        if q.shape in BITMAP_SHAPES:
            conn.execute("SET enable_indexscan = off")
        else:
            conn.execute("SET enable_bitmapscan = off")
        conn.execute("SET min_parallel_index_scan_size = 0")
        if disabled_nodes or not q.join_methods:
            conn.execute("SET enable_seqscan = off")
        else:
            # Before PostgreSQL 18 a disabled path costs disable_cost more, which drowns the
            # difference between a serial and a parallel plan over a join: make index probes
            # cheap, and workers' whole reads of t (full Temp Seq Scans) dear, instead.  A
            # query of t alone only chooses between index scans once sequential ones are off.
            conn.execute("SET random_page_cost = 0.1")
            conn.execute("SET pg_tempbuf.read_page_cost = 1000")
        conn.execute(f"SET parallel_leader_participation = {'on' if q.leader_participates else 'off'}")
        disabled = [setting for method, setting in JOIN_SETTINGS.items() if method not in q.join_methods]
        for name in disabled:
            conn.execute(f"SET {name} = off")
        conn.execute("SET pg_tempbuf.parallel_scan = on")
        ran[q.shape] += 1
        under, in_worker, shared, index_only, backward, bitmap = index_scans_in_workers(conn, q.sql)
        index_only_scans[q.shape] += index_only
        backward_scans[q.shape] += backward
        bitmap_scans[q.shape] += bitmap
        under_gather[q.shape] += under
        in_workers[q.shape] += in_worker
        shared_ranges[q.shape] += shared
        ours = run(conn, q.sql, q.ordered)
        if ours[0] == "error":
            conn.execute("ROLLBACK TO SAVEPOINT q")
        conn.execute("SET pg_tempbuf.parallel_scan = off")
        stock = run(conn, q.sql, q.ordered)
        if stock[0] == "error":
            conn.execute("ROLLBACK TO SAVEPOINT q")
        for name in [*disabled, "enable_seqscan", "enable_bitmapscan", "enable_indexscan", "min_parallel_index_scan_size",
                     "random_page_cost",
                     "pg_tempbuf.read_page_cost", "parallel_leader_participation"]:
            conn.execute(f"RESET {name}")
        assert ours == stock, f"mismatch for {q.sql!r} ({q.shape})\ncase: {c}"

    @differential_settings(EXAMPLES)
    @given(case())
    def check(c: Case) -> None:
        with preloaded_cluster.connect(options=f"-c temp_buffers={c.temp_buffers}") as conn:
            conn.execute("CREATE TEMP TABLE t (id bigserial, a int, n numeric, s text, w text)")
            for sql in INDEXES:
                conn.execute(sql)
            replay_history(conn, c.history)
            conn.execute("ANALYZE t")
            open_transaction(conn, c.open_tx, c.open_subtx, c.rollback_open_subtx)
            for q in c.queries:
                compare(conn, q, c)
            conn.execute("ROLLBACK")

    check()
    print("index differential: queries with a Temp Index (or Bitmap Heap) Scan under a Gather that "
          "launched workers / with rows returned by a worker / with a shared range / index only / "
          "backward / bitmap / run:")
    for shape in sorted(ran):
        print(f"  {shape}: {under_gather[shape]} / {in_workers[shape]} / {shared_ranges[shape]} / "
              f"{index_only_scans[shape]} / {backward_scans[shape]} / {bitmap_scans[shape]} / {ran[shape]}")
    print(f"  total: {sum(under_gather.values())} / {sum(in_workers.values())} / "
          f"{sum(shared_ranges.values())} / {sum(index_only_scans.values())} / "
          f"{sum(backward_scans.values())} / {sum(bitmap_scans.values())} / {sum(ran.values())}")

    assert sum(ran.values()) > 0
    assert sum(in_workers.values()) > 0, "no worker ever returned rows from a Temp Index Scan"
    assert sum(shared_ranges.values()) > 0, "no Temp Index Scan ever shared its range"
    assert sum(index_only_scans.values()) > 0, "no Temp Index Only Scan ran under Gather"
    assert sum(bitmap_scans.values()) > 0, "no Temp Bitmap Heap Scan ran under Gather"
    # Before 18 a merge join over index scans, costed without disabling, rarely beats the serial
    # plan on these small tables.
    optional = {"anti", "limit"} | (set() if disabled_nodes else {"merge", "limit_desc", "shared_any"})
    if disabled_nodes and ran["limit_desc"] >= 12:
        assert sum(backward_scans.values()) > 0, "no backward Temp Index Scan ran under Gather"
    for shape, count in ran.items():
        # Some shapes go parallel in a quarter of their cases only (before 18): judge on a dozen.
        if count >= 12 and shape not in optional:
            assert under_gather[shape] > 0, f"{shape}: no Temp Index Scan under Gather in {count} queries"
            if shape in BITMAP_SHAPES:
                assert bitmap_scans[shape] > 0, f"{shape}: no Temp Bitmap Heap Scan under Gather in {count} queries"
            if shape == "bm_shared":
                assert shared_ranges[shape] > 0, f"{shape}: no Parallel Temp Bitmap Heap Scan in {count} queries"
