"""Differential proof for the query shapes around temporary tables: parallel == serial.

Each generated case builds a temporary table `t` with a random MVCC history (the one the
single-table suite generates, mvcc_history.py), a second temporary table `u`, a temporary
partitioned table `tp` and the permanent table `perm`, leaves a transaction open with a live
subtransaction, and runs queries of many shapes twice: with parallel plans forced and with
pg_tempbuf.parallel_scan = off.  Both must return the same rows, or raise the same error.

Shapes: joins of a temporary with a permanent table and of two temporary tables (hash, merge,
nested loop; inner and outer sides), a self-join, IN / EXISTS / NOT EXISTS / NOT IN, scalar
subqueries (correlated and not), CTEs read twice (materialized and not), UNION ALL of two
reads, partitioned temporary tables with plan-time and run-time pruning, aggregates, ORDER BY
with LIMIT, and out-of-line values compressed with pglz or lz4 (where the server has it) read
by the query.

Each run also counts, per shape, the queries whose forced plan had a scan of ours under Gather
with workers planned, and requires every shape that ran often enough to have had one.

PGTB_SHAPES_EXAMPLES sets the number of cases (default: a fast subset for `make test`).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psycopg
from hypothesis import given
from hypothesis import strategies as st
from mvcc_history import (
    create_leader_probes,
    history_step,
    open_transaction,
    predicate,
    replay_history,
    run,
    statement,
)
from pglab.cluster import Cluster

from conftest import FORCE_PARALLEL, create_perm_table, differential_settings, count_flush_facts, temp_scan_nodes

EXAMPLES = int(os.environ.get("PGTB_SHAPES_EXAMPLES", "25"))

# Join method forced for a query: the other two are disabled.
JOIN_METHODS = {
    "hash": ("enable_mergejoin", "enable_nestloop"),
    "merge": ("enable_hashjoin", "enable_nestloop"),
    "nestloop": ("enable_hashjoin", "enable_mergejoin"),
    "any": (),
}

# Shape families: (template, ordered).  {p} is a predicate on t, {k} a small integer,
# {mat} a CTE materialization keyword, {tp} a predicate on tp that prunes partitions.
SHAPES: dict[str, tuple[str, bool]] = {
    "temp_x_perm": ("SELECT count(*), sum(perm.b), max(t.s) FROM t JOIN perm ON t.a = perm.a WHERE {p}", False),
    "perm_x_temp": ("SELECT perm.b, t.n FROM perm JOIN t ON perm.a = t.a AND perm.b < {k} * 10", False),
    "temp_x_temp": ("SELECT count(*), sum(u.b), max(u.c) FROM t JOIN u ON t.a = u.a WHERE {p}", False),
    "left_join": ("SELECT perm.a, count(u.b) FROM perm LEFT JOIN u ON u.a = perm.a GROUP BY perm.a", False),
    "self_join": ("SELECT count(*), sum(t2.a), max(t1.s) FROM t t1 JOIN t t2 ON t1.id = t2.id + {k}", False),
    "in": ("SELECT count(*), sum(perm.b) FROM perm WHERE perm.a IN (SELECT a FROM t WHERE {p})", False),
    "exists": ("SELECT count(*) FROM perm WHERE EXISTS (SELECT 1 FROM t WHERE t.a = perm.a AND {p})", False),
    "not_exists": ("SELECT count(*) FROM perm WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.a = perm.a)", False),
    "not_in": ("SELECT count(*) FROM perm WHERE perm.a NOT IN (SELECT a FROM t WHERE {p})", False),
    "scalar": ("SELECT count(*) FROM perm WHERE perm.b > (SELECT avg(a) * {k} FROM t)", False),
    "correlated": ("SELECT perm.a, (SELECT count(*) FROM u WHERE u.a = perm.a) FROM perm WHERE perm.b < {k}", False),
    "cte_twice": (
        ("WITH c AS {mat} (SELECT a, s FROM t WHERE {p}) "
         "SELECT count(*), max(c1.s) FROM c c1 JOIN c c2 ON c1.a = c2.a AND c1.s < c2.s"),
        False,
    ),
    "cte_and_subquery": (
        ("WITH c AS (SELECT a, n FROM t) "
         "SELECT count(*), sum(c.n) FROM perm JOIN c USING (a) WHERE perm.b > (SELECT min(a) FROM u)"),
        False,
    ),
    "union_all": ("SELECT count(*), sum(a) FROM (SELECT a FROM t UNION ALL SELECT a FROM t WHERE {p}) s", False),
    "partitioned": ("SELECT count(*), sum(v), max(s) FROM tp WHERE {tp}", False),
    "partition_join": ("SELECT count(*), sum(tp.v) FROM perm JOIN tp ON tp.k = perm.a WHERE perm.b < {k} * 20", False),
    "aggregate": ("SELECT t.a % 5, count(*), sum(perm.b) FROM t JOIN perm USING (a) GROUP BY 1", False),
    "limit": ("SELECT t.id, perm.b FROM t JOIN perm USING (a) ORDER BY t.id, perm.b LIMIT {k}", True),
    "toast": ("SELECT count(*), sum(length(t.w)), max(md5(t.w)), max(substr(t.w, 90, 20)) FROM t JOIN u USING (a)", False),
    # The leader reads t itself, per row above Gather, while workers read it.
    "leader_probe_index": (
        ("SELECT count(*), sum(pg_temp.probe_index(t.id + {k})), max(u.c) "
         "FROM t JOIN u ON t.a = u.a AND u.b < {k} * 5 WHERE {p}"),
        False,
    ),
    "leader_probe_seq": (
        "SELECT perm.b, pg_temp.probe_seq(perm.a) FROM perm WHERE perm.b < {k} * 3 AND perm.a IN (SELECT a FROM t WHERE {p})",
        False,
    ),
    "leader_probe_toast": (
        "SELECT count(*), sum(pg_temp.probe_wide(t.id)), max(md5(t.w)) FROM t WHERE t.id % {k} = 0",
        False,
    ),
    "toast_inner": ("SELECT count(*), max(md5(t.w)) FROM perm JOIN t ON t.a = perm.a WHERE t.id % {k} = 0", False),
}

# Run-time pruning: a generic plan of a prepared statement with a parameter.
PRUNED_GENERIC = "SELECT count(*), sum(v) FROM tp WHERE k >= $1"

TP_PREDICATES = ["k < 20", "k >= 20 AND k < 40", "k = {k}", "k > 45", "v % 3 = 0", "TRUE"]


@dataclass
class ShapeQuery:
    shape: str
    sql: str
    ordered: bool
    join_method: str


@st.composite
def shape_query(draw: st.DrawFn) -> ShapeQuery:
    shape = draw(st.sampled_from(sorted(SHAPES)))
    template, ordered = SHAPES[shape]
    k = draw(st.integers(1, 40))
    sql = template.format(
        p=draw(predicate()),
        k=k,
        mat=draw(st.sampled_from(["MATERIALIZED", "NOT MATERIALIZED", ""])),
        tp=draw(st.sampled_from(TP_PREDICATES)).format(k=k),
    )
    return ShapeQuery(shape, sql, ordered, draw(st.sampled_from(sorted(JOIN_METHODS))))


@dataclass
class Case:
    temp_buffers: int
    compression: str
    partitioning: str
    default_partition: bool
    indexed: bool  # t has an index on id, which probe_index and probe_wide read
    history: list[list[str]]
    open_tx: list[str]
    open_subtx: list[str]
    rollback_open_subtx: bool
    u_rows: int
    tp_rows: int
    tp_open_delete: int
    queries: list[ShapeQuery] = field(default_factory=list)
    pruned_param: int = 0
    sync_start: bool = False  # the leader waits for workers: they then read even a small table


def case_strategy(compressions: list[str]) -> st.SearchStrategy[Case]:
    @st.composite
    def case(draw: st.DrawFn) -> Case:
        return Case(
            temp_buffers=draw(st.sampled_from([100, 1024, 16384])),
            compression=draw(st.sampled_from(compressions)),
            partitioning=draw(st.sampled_from(["range", "list", "hash"])),
            default_partition=draw(st.booleans()),
            indexed=draw(st.booleans()),
            history=draw(st.lists(history_step(True), min_size=1, max_size=5)),
            open_tx=draw(st.lists(statement(True), max_size=3)),
            open_subtx=draw(st.lists(statement(True), max_size=3)),
            rollback_open_subtx=draw(st.booleans()),
            u_rows=draw(st.integers(0, 200)),
            tp_rows=draw(st.integers(0, 3000)),
            tp_open_delete=draw(st.integers(0, 10)),  # 10: deletes nothing
            queries=draw(st.lists(shape_query(), min_size=2, max_size=7)),
            pruned_param=draw(st.integers(0, 60)),
            sync_start=draw(st.booleans()),
        )

    return case()


def partition_ddl(c: Case) -> list[str]:
    if c.partitioning == "hash":
        parts = [f"CREATE TEMP TABLE tp{i} PARTITION OF tp FOR VALUES WITH (MODULUS 3, REMAINDER {i})"
                 for i in range(3)]
        return ["CREATE TEMP TABLE tp (k int, v int, s text) PARTITION BY HASH (k)", *parts]
    if c.partitioning == "list":
        parts = [
            "CREATE TEMP TABLE tp0 PARTITION OF tp FOR VALUES IN (" + ", ".join(map(str, range(20))) + ")",
            "CREATE TEMP TABLE tp1 PARTITION OF tp FOR VALUES IN (" + ", ".join(map(str, range(20, 40))) + ")",
        ]
    else:
        parts = [
            "CREATE TEMP TABLE tp0 PARTITION OF tp FOR VALUES FROM (0) TO (20)",
            "CREATE TEMP TABLE tp1 PARTITION OF tp FOR VALUES FROM (20) TO (40)",
        ]
    last = ("CREATE TEMP TABLE tp2 PARTITION OF tp DEFAULT" if c.default_partition
            else (f"CREATE TEMP TABLE tp2 PARTITION OF tp FOR VALUES IN ({', '.join(map(str, range(40, 60)))})"
                  if c.partitioning == "list"
                  else "CREATE TEMP TABLE tp2 PARTITION OF tp FOR VALUES FROM (40) TO (60)"))
    return [f"CREATE TEMP TABLE tp (k int, v int, s text) PARTITION BY {c.partitioning.upper()} (k)", *parts, last]


def setup_tables(conn: psycopg.Connection[Any], c: Case) -> None:
    conn.execute("CREATE TEMP TABLE t (id bigserial, a int, n numeric, s text, w text)")
    conn.execute(f"ALTER TABLE t ALTER COLUMN w SET COMPRESSION {c.compression}")
    conn.execute(
        "CREATE TEMP TABLE u AS SELECT CASE WHEN g % 17 = 0 THEN NULL ELSE g % 50 END AS a, g AS b, "
        f"md5(g::text) AS c FROM generate_series(1, {c.u_rows}) g"
    )
    for sql in partition_ddl(c):
        conn.execute(sql)
    conn.execute(f"INSERT INTO tp SELECT g % 60, g, md5(g::text) FROM generate_series(1, {c.tp_rows}) g")
    conn.execute("ANALYZE u")
    conn.execute("ANALYZE tp")


def our_scan_under_gather(conn: psycopg.Connection[Any], sql: str) -> bool:
    """Did the plan put a scan of ours below a Gather that plans workers?"""
    try:
        plan = conn.execute(f"EXPLAIN (COSTS OFF, FORMAT JSON) {sql}").fetchone()
    except psycopg.Error:
        conn.execute("ROLLBACK TO SAVEPOINT q")
        return False
    assert plan is not None
    tree = plan[0] if not isinstance(plan[0], str) else json.loads(plan[0])

    def walk(node: dict[str, Any], under_gather: bool) -> bool:
        gather = node.get("Node Type") in ("Gather", "Gather Merge") and node.get("Workers Planned", 0) > 0
        if under_gather and node.get("Custom Plan Provider") == "Temp Seq Scan":
            return True
        return any(walk(child, under_gather or gather) for child in node.get("Plans", []))

    return walk(tree[0]["Plan"], False)


def server_compressions(cluster: Cluster) -> list[str]:
    with cluster.connect() as conn:
        try:
            conn.execute("SET default_toast_compression = lz4")
        except psycopg.Error:
            print("shapes differential: this server has no lz4; pglz only")
            return ["pglz"]
    return ["pglz", "lz4"]


def test_shapes_parallel_equals_serial(preloaded_cluster: Cluster) -> None:
    create_perm_table(preloaded_cluster)

    ran = Counter[str]()
    parallel = Counter[str]()
    flushes = Counter[str]()

    def compare(conn: psycopg.Connection[Any], shape: str, sql: str, ordered: bool,
                disabled: tuple[str, ...], c: Case, stock_sql: str | None = None) -> None:
        for name, value in FORCE_PARALLEL.items():
            conn.execute(f"SET {name} = {value}")
        for name in disabled:
            conn.execute(f"SET {name} = off")
        conn.execute("SET pg_tempbuf.parallel_scan = on")
        ran[shape] += 1
        if our_scan_under_gather(conn, sql):
            parallel[shape] += 1
            count_flush_facts(flushes, temp_scan_nodes(conn, sql))
        ours = run(conn, sql, ordered)
        if ours[0] == "error":
            conn.execute("ROLLBACK TO SAVEPOINT q")
        conn.execute("SET pg_tempbuf.parallel_scan = off")
        stock = run(conn, stock_sql or sql, ordered)
        if stock[0] == "error":
            conn.execute("ROLLBACK TO SAVEPOINT q")
        for name in disabled:
            conn.execute(f"RESET {name}")
        assert ours == stock, f"mismatch for {sql!r} ({shape})\ncase: {c}"

    @differential_settings(EXAMPLES)
    @given(case_strategy(server_compressions(preloaded_cluster)))
    def check(c: Case) -> None:
        with preloaded_cluster.connect(options=f"-c temp_buffers={c.temp_buffers}") as conn:
            conn.execute(f"SET pg_tempbuf.debug_sync_start = {'on' if c.sync_start else 'off'}")
            setup_tables(conn, c)
            create_leader_probes(conn, c.indexed)
            replay_history(conn, c.history)
            conn.execute("ANALYZE t")
            open_transaction(conn, c.open_tx, c.open_subtx, c.rollback_open_subtx,
                             f"DELETE FROM tp WHERE v % 10 = {c.tp_open_delete}")
            for q in c.queries:
                compare(conn, q.shape, q.sql, q.ordered, JOIN_METHODS[q.join_method], c)
            # Run-time pruning in a generic plan.  A prepared statement keeps its plan
            # across SET, so each setting gets its own statement, planned under it.
            conn.execute("SET plan_cache_mode = force_generic_plan")
            conn.execute(f"PREPARE pruned_on(int) AS {PRUNED_GENERIC}")
            conn.execute(f"PREPARE pruned_off(int) AS {PRUNED_GENERIC}")
            compare(conn, "pruned_generic", f"EXECUTE pruned_on({c.pruned_param})", False, (), c,
                    stock_sql=f"EXECUTE pruned_off({c.pruned_param})")
            conn.execute("ROLLBACK")

    check()
    print("shapes differential, queries with a scan of ours under Gather / queries run:")
    for shape in sorted(ran):
        print(f"  {shape}: {parallel[shape]}/{ran[shape]}")
    print(f"  total: {sum(parallel.values())}/{sum(ran.values())}")
    for fact, count in sorted(flushes.items()):
        print(f"  {fact}: {count}")

    # The suite proves something only if parallel plans really ran, in every shape that
    # could have one.  Correlated subqueries stay in the leader, as for permanent tables.
    assert sum(ran.values()) > 0
    assert flushes["workers read pages written by this scan, upfront"] > 0, flushes
    for shape, count in ran.items():
        if shape != "correlated" and count >= 4:
            assert parallel[shape] > 0, f"{shape}: no parallel plan with a scan of ours in {count} queries"
