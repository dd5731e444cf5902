"""The random MVCC histories and predicates the differential suites share.

A history is a list of steps over the temporary table `t (id bigserial, a int, n numeric,
s text, w text)`: statements in committed, aborted and half-rolled-back transactions
(savepoints), flushes and evictions of local buffers, VACUUM, TRUNCATE.  With `wide`, some rows
get out-of-line values in `w`: incompressible ones (stored uncompressed) and compressible ones
(stored compressed, with the column's compression method).
"""

from __future__ import annotations

from typing import Any

import psycopg
from hypothesis import strategies as st

# Out-of-line values: hex md5s do not compress at all; each md5 twice compresses to
# about half, still above the toast threshold, so it is stored compressed out of line.
WIDE_VALUE = "(SELECT string_agg(md5(g::text || i::text), '') FROM generate_series(1, 200) i)"
WIDE_COMPRESSIBLE = "(SELECT string_agg(repeat(md5(g::text || i::text), 2), '') FROM generate_series(1, 150) i)"

PREDICATES = st.sampled_from(
    [
        "TRUE",
        "t.a > {k}",
        "t.a IS NULL",
        "t.s LIKE '%{h}%'",
        "t.id % {m} = {r}",
        "t.n < {k}",
        "t.s IS NOT NULL AND t.a < {k}",
    ]
)


@st.composite
def predicate(draw: st.DrawFn) -> str:
    template = draw(PREDICATES)
    return template.format(
        k=draw(st.integers(-5, 60)),
        h=draw(st.sampled_from(["a", "ab", "0", "ff", "e1"])),
        m=(m := draw(st.integers(2, 7))),
        r=draw(st.integers(0, m - 1)),
    )


@st.composite
def insert(draw: st.DrawFn, wide: bool) -> str:
    rows = draw(st.integers(0, 300))
    seed = draw(st.integers(0, 10_000))
    null_every = draw(st.integers(3, 20))
    wide_expr = (
        f"CASE WHEN g % 80 = 0 THEN {WIDE_COMPRESSIBLE} WHEN g % 40 = 0 THEN {WIDE_VALUE} ELSE 'w' || g END"
        if wide
        else "'w' || g"
    )
    return (
        "INSERT INTO t (a, n, s, w) SELECT "
        f"CASE WHEN g % {null_every} = 0 THEN NULL ELSE (g * 7 + {seed}) % 50 END, "
        f"(g + {seed}) * 1.5, "
        f"CASE WHEN g % {null_every + 1} = 0 THEN NULL ELSE md5((g + {seed})::text) END, "
        f"{wide_expr} FROM generate_series(1, {rows}) g"
    )


@st.composite
def statement(draw: st.DrawFn, wide: bool) -> str:
    kind = draw(st.sampled_from(["insert", "insert", "update_a", "update_s", "delete", "copy"]))
    m = draw(st.integers(2, 9))
    r = draw(st.integers(0, m - 1))
    if kind == "insert":
        return draw(insert(wide))
    if kind == "update_a":
        return f"UPDATE t SET a = a + 1 WHERE id % {m} = {r}"
    if kind == "update_s":
        return f"UPDATE t SET s = s || 'u', n = n + 1 WHERE a % {m} = {r}"
    if kind == "delete":
        return f"DELETE FROM t WHERE id % {m} = {r}"
    return f"INSERT INTO t (a, n, s, w) SELECT a, n, s, w FROM t WHERE id % {m} = {r}"


@st.composite
def history_step(draw: st.DrawFn, wide: bool) -> list[str]:
    stmts = st.lists(statement(wide), min_size=1, max_size=3)
    kind = draw(
        st.sampled_from(["commit", "abort", "savepoint", "flush", "evict", "vacuum", "truncate", "autocommit"])
    )
    if kind == "commit":
        return ["BEGIN", *draw(stmts), "COMMIT"]
    if kind == "abort":
        return ["BEGIN", *draw(stmts), "ROLLBACK"]
    if kind == "savepoint":
        end = draw(st.sampled_from(["ROLLBACK TO SAVEPOINT s", "RELEASE SAVEPOINT s"]))
        return ["BEGIN", *draw(stmts), "SAVEPOINT s", *draw(stmts), end, *draw(stmts), "COMMIT"]
    if kind == "flush":
        return ["SELECT pg_flush_local_buffers()"]
    if kind == "evict":
        return ["SELECT pg_evict_local_buffers()"]
    if kind == "vacuum":
        return ["VACUUM t"]
    if kind == "truncate":
        return ["BEGIN", "TRUNCATE t", *draw(stmts), "COMMIT"]
    return draw(stmts)


# Functions that read `t` again in the leader, once per row above Gather, while workers read
# it: PARALLEL RESTRICTED, as PostgreSQL's documentation asks of functions that touch
# temporary tables.  Neither is inlined (a SQL function with FROM never is, PL/pgSQL never
# is), so the planner cannot see their reads.  Their scans prune pages, set hint bits and
# mark index entries dead in the leader; probe_index reads through t's index when the case
# has one (the SET makes sure of it), probe_seq always scans the heap, probe_wide detoasts.  Both live in the
# session's temporary schema, beside the table they read.
LEADER_PROBES = [
    "CREATE FUNCTION pg_temp.probe_index(i bigint) RETURNS bigint LANGUAGE sql STABLE PARALLEL RESTRICTED "
    "SET enable_seqscan = off AS 'SELECT count(*) FROM t WHERE id = i'",
    "CREATE FUNCTION pg_temp.probe_seq(i int) RETURNS bigint LANGUAGE plpgsql STABLE PARALLEL RESTRICTED "
    "AS 'BEGIN RETURN (SELECT count(*) FROM t WHERE a = i); END'",
    "CREATE FUNCTION pg_temp.probe_wide(i bigint) RETURNS bigint LANGUAGE sql STABLE PARALLEL RESTRICTED "
    "AS 'SELECT sum(length(w)) FROM t WHERE id = i'",
]


def create_leader_probes(conn: psycopg.Connection[Any], indexed: bool) -> None:
    if indexed:
        conn.execute("CREATE INDEX t_id ON t (id)")
    for sql in LEADER_PROBES:
        conn.execute(sql)


Outcome = tuple[str, Any]


def run(conn: psycopg.Connection[Any], sql: str, ordered: bool) -> Outcome:
    try:
        rows = conn.execute(sql).fetchall()
    except psycopg.Error as exc:
        return ("error", exc.sqlstate)
    return ("rows", rows if ordered else sorted(rows, key=repr))


def replay_history(conn: psycopg.Connection[Any], history: list[list[str]]) -> None:
    for step in history:
        for sql in step:
            conn.execute(sql)


def open_transaction(conn: psycopg.Connection[Any], open_tx: list[str], open_subtx: list[str],
                     rollback_open_subtx: bool, *also: str) -> None:
    """Leave a transaction open with its own changes (and `also`) and a live subtransaction
    whose changes may have been partly rolled back; then a savepoint `q` that a failing
    query rolls back to."""
    conn.execute("BEGIN")
    for sql in [*open_tx, *also]:
        conn.execute(sql)
    conn.execute("SAVEPOINT open_s")
    for sql in open_subtx:
        conn.execute(sql)
    if rollback_open_subtx:
        conn.execute("ROLLBACK TO SAVEPOINT open_s")
        for sql in open_subtx[:1]:
            conn.execute(sql)
    conn.execute("SAVEPOINT q")
