"""The many-statement sessions: PL/pgSQL loops of `EXECUTE format(...)` statements over temp tables.

EXECUTE plans its statement anew every time (no plan cache), so a loop of N statements is N
plannings and N executions of small queries: what pg_tempbuf adds to each planning of a query
over temporary tables shows here, if anywhere.  The tables (after /tmp/w/loops.sql of issue 28):
`big`, an indexed temp table (id, grp, pad); `s1` and `s2`, small temp tables of 100 and 50 rows
without indexes; `perm`, an indexed permanent table in the run's schema.  The loop functions live
in that schema too (pg_temp's functions are never found unqualified); their statements name the
temp tables unqualified, pg_temp being first in the search path.
"""

from __future__ import annotations

from dataclasses import dataclass

from pglab.experiments.regret.options import SessionSizes

SCHEMA = "pglab_regret"  # the permanent table and the loop functions; dropped at the end


@dataclass(frozen=True)
class Loop:
    name: str
    title: str
    statement: str  # a format() string; %% for a literal %
    arguments: str  # format()'s arguments, PL/pgSQL expressions of the loop variable i

    def function(self) -> str:
        return f"{SCHEMA}.loop_{self.name}"

    def create(self) -> str:
        """The loop function: n statements, each EXECUTEd (planned anew); returns the sum of their results."""
        return (f"CREATE FUNCTION {self.function()}(n int) RETURNS bigint LANGUAGE plpgsql AS $fn$\n"
                "DECLARE t bigint := 0; c bigint;\n"
                "BEGIN\n"
                "  FOR i IN 1..n LOOP\n"
                f"    EXECUTE format('{self.statement}', {self.arguments}) INTO c;\n"
                "    t := t + coalesce(c, 0);\n"
                "  END LOOP;\n"
                "  RETURN t;\n"
                "END $fn$")

    def call(self, iterations: int) -> str:
        return f"SELECT {self.function()}({iterations})"


def loops(sizes: SessionSizes) -> tuple[Loop, ...]:
    big, small, perm = sizes.big_rows, sizes.small_rows, sizes.permanent_rows
    # The big-small join's range of ~20 ids walks the big table; it wraps before the end.
    span = max(1, big // 40 - 1)
    return (
        Loop("point_lookup", f"point lookup by key on a {big:,}-row indexed temp table",
             "SELECT grp FROM big WHERE id = %s", f"i * 37 % {big} + 1"),
        Loop("big_small_join", f"{big:,}-row indexed temp table (a range of ~20 ids) JOIN temp tables of "
                               f"{small} and {sizes.smaller_rows} rows",
             "SELECT count(*) FROM big b JOIN s1 ON s1.id = b.grp JOIN s2 ON s2.id = s1.id %% 50 + 1 "
             "WHERE b.id BETWEEN %s AND %s",
             f"(i % {span}) * 40, (i % {span}) * 40 + 20"),
        Loop("small_join", f"temp table of {small} rows JOIN temp table of {sizes.smaller_rows} rows",
             "SELECT count(*) FROM s1 JOIN s2 ON s2.id = s1.id %% 50 + 1 WHERE s1.id > %s",
             f"i % {small}"),
        Loop("small_lookup", f"lookup on a {small}-row temp table (no index)",
             "SELECT length(name) FROM s1 WHERE id = %s", f"i % {small} + 1"),
        Loop("temp_permanent_join", f"{sizes.smaller_rows}-row temp table JOIN a {perm:,}-row permanent table "
                                    "by its index",
             f"SELECT count(*) FROM s2 JOIN {SCHEMA}.perm p ON p.id = s2.id * 7 + %s",
             f"i * 101 % {max(1, perm - 7 * sizes.smaller_rows - 1)}"),
    )


LOOP_NAMES = tuple(loop.name for loop in loops(SessionSizes(1, 1, 1, 1)))


def setup(sizes: SessionSizes) -> list[str]:
    """The tables (temp ones after the session's temp_buffers is set), analyzed, and the loop functions."""
    statements = [
        f"CREATE TABLE {SCHEMA}.perm AS SELECT g AS id, g % 1000 AS grp, md5(g::text) AS pad "
        f"FROM generate_series(1, {sizes.permanent_rows}) g",
        f"ALTER TABLE {SCHEMA}.perm ADD PRIMARY KEY (id)",
        f"VACUUM ANALYZE {SCHEMA}.perm",
        "CREATE TEMP TABLE big AS SELECT g AS id, g % 1000 AS grp, md5(g::text) AS pad "
        f"FROM generate_series(1, {sizes.big_rows}) g",
        "CREATE INDEX ON big (id)",
        "CREATE INDEX ON big (grp)",
        f"CREATE TEMP TABLE s1 AS SELECT g AS id, 'n' || g AS name FROM generate_series(1, {sizes.small_rows}) g",
        f"CREATE TEMP TABLE s2 AS SELECT g AS id, g % 10 AS cat FROM generate_series(1, {sizes.smaller_rows}) g",
        "ANALYZE big", "ANALYZE s1", "ANALYZE s2",
    ]
    return statements + [loop.create() for loop in loops(sizes)]


def switch(on: bool) -> str:
    return f"SET pg_tempbuf.parallel_scan = {'on' if on else 'off'}"
