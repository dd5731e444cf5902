"""The shapes as data: tables (temp and UNLOGGED variants), queries, configurations, TPC-H.

Every table a shape reads exists twice in the same schema: `tmp_<name>` as a temporary table
and `unl_<name>` as an UNLOGGED permanent table with the same rows.  A shape's query names
its tables `{p}<name>`; `{p}` is `tmp_` for the off/on configurations and `unl_` for the
UNLOGGED one.  The big table of the join shapes is permanent in all three.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pglab.experiments.temp_shapes.options import Sizes

SCHEMA = "pglab_ts"  # everything permanent the run creates; dropped at the end
TEMP_PREFIX = "tmp_"
UNLOGGED_PREFIX = "unl_"


class Config(StrEnum):
    OFF = "off"  # temp tables, pg_tempbuf.parallel_scan = off: exactly the stock plans
    ON = "on"  # temp tables, pg_tempbuf.parallel_scan = on
    UNLOGGED = "unlogged"  # the same rows in UNLOGGED permanent tables, stock parallel query
    PERMANENT = "permanent"  # TPC-H: every table permanent (the dimension tables too)


SHAPE_CONFIGS = (Config.OFF, Config.ON, Config.UNLOGGED)
TPCH_CONFIGS = (Config.OFF, Config.ON, Config.PERMANENT)
TPCH_ALL_TEMP_CONFIGS = (Config.OFF, Config.ON, Config.UNLOGGED)  # --tpch-all-temp


@dataclass(frozen=True)
class Shape:
    name: str
    title: str
    tables: tuple[str, ...]  # base names of the temp/UNLOGGED tables the query reads
    query: str  # `{p}` stands for the table prefix
    acceptance_vs_unlogged: bool = False  # issue 9: must reach >= 0.9x the UNLOGGED copy's speed
    # Planner settings of the shape ("enable_seqscan = off"), in every configuration.
    settings: tuple[str, ...] = ()
    # The tables are created anew before every run and not flushed: the first query after a load.
    fresh: bool = False

    def sql(self, config: Config, sizes: Sizes) -> str:
        """The query for config; `{n}` stands for the facts tables' row count (ranges scale with it)."""
        return self.query.format(p=UNLOGGED_PREFIX if config is Config.UNLOGGED else TEMP_PREFIX,
                                 n=sizes.facts_rows)


SHAPES: tuple[Shape, ...] = (
    Shape("join_staged_keys", "big permanent table JOIN small temp table (staged keys)", ("keys",),
          "SELECT k.grp, count(*), sum(b.amount) FROM big b JOIN {p}keys k ON k.key = b.key GROUP BY k.grp",
          acceptance_vs_unlogged=True),
    Shape("semi_join", "permanent table WHERE key IN (SELECT key FROM temp)", ("keys",),
          "SELECT count(*), sum(amount) FROM big WHERE key IN (SELECT key FROM {p}keys)"),
    Shape("self_join", "a temp table joined to itself", ("facts",),
          "SELECT count(*), sum(a.v - b.v) FROM {p}facts a JOIN {p}facts b ON b.id = a.id + 1"),
    Shape("cte", "a CTE and the main query reading one temp table", ("facts",),
          "WITH g AS (SELECT grp, avg(v) AS mean FROM {p}facts GROUP BY grp) "
          "SELECT count(*), sum(f.v) FROM {p}facts f JOIN g ON g.grp = f.grp WHERE f.v > g.mean"),
    Shape("subquery", "a scalar subquery and the main query reading one temp table", ("facts",),
          "SELECT count(*), sum(v) FROM {p}facts WHERE v > (SELECT avg(v) FROM {p}facts)"),
    Shape("partitioned", "a partitioned temp table (PARTITION BY RANGE)", ("parts",),
          "SELECT grp % 10 AS g, count(*), sum(v), sum(length(note)) FROM {p}parts "
          "WHERE note LIKE '%a%' GROUP BY 1"),
    Shape("toast_aggregate", "an aggregate reading out-of-line TOASTed text", ("docs",),
          "SELECT grp % 10 AS g, count(*), count(doc), sum(length(doc)), "
          "count(*) FILTER (WHERE doc LIKE '%abc%') FROM {p}docs GROUP BY 1",
          acceptance_vs_unlogged=True),
    # Issue 22: an indexed temp table read through its index inside the parallel part.
    Shape("index_join", "big permanent table JOIN indexed temp table on its primary key",
          ("indexed",),
          "SELECT count(*), sum(i.v) FROM big b JOIN {p}indexed i ON i.id = b.key WHERE b.amount = 7.5",
          acceptance_vs_unlogged=True),
    Shape("index_range_join", "a join reading the indexed temp side by a key and a range (contrib/tempscan's)",
          ("indexed",),
          "SELECT count(*), sum(b.amount) FROM big b JOIN {p}indexed i ON i.grp = b.key % 1000 AND i.id < 5000 "
          "WHERE b.amount < 10"),
    Shape("bitmap_or_join", "a join reading the indexed temp side through a BitmapOr of two of its indexes",
          ("indexed",),
          "SELECT count(*), sum(i.v) FROM big b JOIN {p}indexed i ON i.id = b.key * 7 OR i.v = b.key "
          "WHERE b.amount = 7.5 AND b.id < 1000000"),
    # Issue 30: index scans where a parallel plan can use them.
    Shape("small_index_self_join", "a small indexed temp table joined to itself with a filter (a peer suite's)",
          ("small",),
          "SELECT count(*), sum(b.v) FROM {p}small a JOIN {p}small b ON b.id = a.id + 1 WHERE a.v < 500"),
    Shape("index_under_function", "an index range read while a PL/pgSQL function above Gather reads the table "
          "by its index", ("indexed",),
          "SELECT count(*), sum(v), sum({p}indexed_v_of(id / 7 + 1)) FILTER (WHERE id % 50 = 0) "
          "FROM {p}indexed WHERE id BETWEEN {n} / 20 AND {n} / 4",
          settings=("enable_seqscan = off", "enable_bitmapscan = off")),
    Shape("bitmap_or", "a bitmap heap scan of a BitmapOr over two indexes of one table (index scans off)",
          ("indexed",),
          "SELECT count(*), sum(v), max(note) FROM {p}indexed WHERE id < {n} / 600 OR v < 150",
          settings=("enable_indexscan = off",)),
    Shape("fresh_index_range", "the first index range query on a table just loaded and indexed (seq scans off)",
          ("fresh",),
          "SELECT count(*), sum(v), max(note) FROM {p}fresh WHERE id BETWEEN {n} / 10 AND {n} * 7 / 10",
          settings=("enable_seqscan = off",), fresh=True),
)
SHAPE_NAMES = tuple(s.name for s in SHAPES)


def shapes_named(names: tuple[str, ...]) -> tuple[Shape, ...]:
    by_name = {s.name: s for s in SHAPES}
    return tuple(by_name[n] for n in names)


def permanent_setup(sizes: Sizes) -> list[str]:
    """The permanent table of the join shapes (no index: the join reads all of it)."""
    return [
        "CREATE TABLE big (id int NOT NULL, key int NOT NULL, amount numeric(12,2) NOT NULL, pad text)",
        f"INSERT INTO big SELECT g, g % 100000, (g % 1000) / 10.0, md5(g::text) "
        f"FROM generate_series(1, {sizes.big_rows}) g",
    ]


def table_setup(name: str, config: Config, sizes: Sizes) -> list[str]:
    """CREATE and fill one shape table as a temp table (OFF/ON) or an UNLOGGED one."""
    unlogged = config is Config.UNLOGGED
    kind = "UNLOGGED" if unlogged else "TEMP"
    t = (UNLOGGED_PREFIX if unlogged else TEMP_PREFIX) + name
    if name == "keys":
        return [f"CREATE {kind} TABLE {t} (key int NOT NULL, grp int NOT NULL)",
                f"INSERT INTO {t} SELECT g * 20, g % 50 FROM generate_series(1, {sizes.keys_rows}) g"]
    if name == "facts":
        return [f"CREATE {kind} TABLE {t} (id int NOT NULL, grp int NOT NULL, v int NOT NULL, note text)",
                f"INSERT INTO {t} SELECT g, g % 1000, (g::bigint * 7919 % 10007)::int, md5(g::text) "
                f"FROM generate_series(1, {sizes.facts_rows}) g"]
    if name == "indexed":
        return [f"CREATE {kind} TABLE {t} (id int PRIMARY KEY, grp int NOT NULL, v int NOT NULL, note text)",
                f"INSERT INTO {t} SELECT g, g % 1000, (g::bigint * 7919 % 10007)::int, md5(g::text) "
                f"FROM generate_series(1, {sizes.facts_rows}) g",
                f"CREATE INDEX ON {t} (grp, id)",
                f"CREATE INDEX ON {t} (v)",
                # PARALLEL RESTRICTED, as the docs ask of a function reading a temp table: it runs
                # above the Gather, in the leader, while the workers read the same table.
                f"CREATE FUNCTION {t}_v_of(k int) RETURNS int LANGUAGE plpgsql STABLE PARALLEL RESTRICTED "
                f"AS 'BEGIN RETURN (SELECT v FROM {t} WHERE id = k); END'"]
    if name == "small":
        return [f"CREATE {kind} TABLE {t} (id int PRIMARY KEY, grp int NOT NULL, v int NOT NULL)",
                f"INSERT INTO {t} SELECT g, g % 10, g % 1000 FROM generate_series(1, {sizes.small_rows}) g",
                f"CREATE INDEX ON {t} (v)"]
    if name == "fresh":
        # Not vacuumed: every page as the load left it, dirty in the pool.
        return [f"DROP TABLE IF EXISTS {t}",
                f"CREATE {kind} TABLE {t} (id int PRIMARY KEY, v int NOT NULL, note text)",
                f"INSERT INTO {t} SELECT g, g % 1000, md5(g::text) FROM generate_series(1, {sizes.facts_rows}) g",
                f"ANALYZE {t}"]
    if name == "parts":
        # A partitioned table has no storage: UNLOGGED applies to its partitions (PostgreSQL 18
        # refuses UNLOGGED on the parent); a temporary parent needs temporary partitions.
        parent_kind = "" if unlogged else "TEMP"
        statements = [f"CREATE {parent_kind} TABLE {t} (id int NOT NULL, grp int NOT NULL, v int NOT NULL, "
                      "note text) PARTITION BY RANGE (id)"]
        step = -(-sizes.parts_rows // sizes.partitions)
        for i in range(sizes.partitions):
            high = "MAXVALUE" if i == sizes.partitions - 1 else str(1 + (i + 1) * step)
            low = "MINVALUE" if i == 0 else str(1 + i * step)
            statements.append(f"CREATE {kind} TABLE {t}_{i} PARTITION OF {t} FOR VALUES FROM ({low}) TO ({high})")
        statements.append(f"INSERT INTO {t} SELECT g, g % 997, (g::bigint * 7919 % 10007)::int, md5(g::text) "
                          f"FROM generate_series(1, {sizes.parts_rows}) g")
        return statements
    if name == "docs":
        every = max(1, sizes.docs_rows // sizes.docs_toasted)
        md5s = max(1, sizes.doc_bytes // 32)
        # STORAGE EXTERNAL: out of line and uncompressed, so every value is a TOAST fetch.
        return [f"CREATE {kind} TABLE {t} (id int NOT NULL, grp int NOT NULL, v int NOT NULL, doc text)",
                f"ALTER TABLE {t} ALTER COLUMN doc SET STORAGE EXTERNAL",
                f"INSERT INTO {t} SELECT g, g % 100, g % 1000, CASE WHEN g % {every} = 0 THEN "
                f"(SELECT string_agg(md5(g::text || ':' || i), '') FROM generate_series(1, {md5s}) i) END "
                f"FROM generate_series(1, {sizes.docs_rows}) g"]
    raise ValueError(f"unknown shape table {name!r}")


def table_names(name: str, config: Config, sizes: Sizes) -> list[str]:
    """The relations holding rows (partitions, not the partitioned parent): for VACUUM."""
    t = (UNLOGGED_PREFIX if config is Config.UNLOGGED else TEMP_PREFIX) + name
    if name == "parts":
        return [f"{t}_{i}" for i in range(sizes.partitions)]
    return [t]


# -- TPC-H -----------------------------------------------------------------------------------

# Loaded as temporary tables too (same names: pg_temp comes first in the search path).
TPCH_TEMP_TABLES = ("region", "nation", "supplier", "part")


def tpch_temp_setup() -> list[str]:
    """Temporary copies of the dimension tables, with their primary keys (LIKE ... INCLUDING ALL),
    shadowing the permanent ones."""
    statements = []
    for table in TPCH_TEMP_TABLES:
        statements += [f"CREATE TEMP TABLE {table} (LIKE {SCHEMA}.{table} INCLUDING ALL)",
                       f"INSERT INTO pg_temp.{table} SELECT * FROM {SCHEMA}.{table}",
                       f"VACUUM ANALYZE pg_temp.{table}"]
    return statements


def search_path(config: Config) -> str:
    """Temp tables first (the default, pg_temp implicitly first) or after the permanent (or UNLOGGED) schema."""
    if config in (Config.PERMANENT, Config.UNLOGGED):
        return f"SET search_path = {SCHEMA}, pg_temp"
    return f"SET search_path = pg_temp, {SCHEMA}"


def switch(config: Config) -> str:
    return f"SET pg_tempbuf.parallel_scan = {'off' if config is Config.OFF else 'on'}"
