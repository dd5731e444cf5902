"""`pglab overhead`, sessions that have temporary tables (issue 20): what pg_tempbuf costs planning there.

Point query: one session per temp_buffers builds an indexed temp table and plans `SELECT * FROM it
WHERE id = K` with EXPLAIN (SUMMARY) many times, pg_tempbuf.parallel_scan on and off alternating
each repetition: steady (the census of the local buffer pool is current) and cold (an UPDATE that
dirties a clean page before each planning, so the planning walks the pool once).  Under callgrind,
one backend per temp_buffers does the same phases and dumps its counts between them
(--dump-before=pg_sleep, `SELECT pg_sleep(0)` as the marker): instructions per planning are the
inclusive cost of EXPLAIN's calls of pg_plan_query in one phase / its plannings.

TPC-H: one session loads the same tpchgen-cli data as UNLOGGED tables in their own schema and as
temporary tables (pglab.tpch_tables), then plans each of the 22 queries with EXPLAIN (SUMMARY) in
three configurations, the order rotating: the UNLOGGED tables (stock planner: parallel_scan off),
the temp tables with parallel_scan off, and on.  No statement is prepared; every EXPLAIN plans anew.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import psycopg
from rich.progress import Progress, TaskID

from pglab import tpch_tables
from pglab.cluster import Cluster
from pglab.errors import LabError
from pglab.experiments.buffered_plan.tpch import generate
from pglab.experiments.overhead import callgrind
from pglab.experiments.overhead import options as opt
from pglab.experiments.overhead.analysis import (
    COLD,
    OFF,
    ON,
    STEADY,
    TPCH_CONFIGS,
    UNLOGGED,
    OverheadResult,
    PlanningCount,
    PlanningPoint,
    TpchPlanningPoint,
    alternate,
    explain_planning_ms,
)
from pglab.experiments.overhead.postmaster import postmaster_under_callgrind
from pglab.server import TargetServer

Conn = psycopg.Connection[Any]
LIBRARY = opt.LIBRARY
POINT_TABLE = "pglab_point"
POINT_QUERY = f"SELECT * FROM {POINT_TABLE} WHERE id = {opt.POINT_KEY}"
EXPLAIN = "EXPLAIN (SUMMARY, FORMAT JSON) "
MARKER = "SELECT pg_sleep(0)"  # callgrind dumps before entering pg_sleep
DUMP_OPTION = "--dump-before=pg_sleep"
EXPLAIN_CALLERS = ("standard_ExplainOneQuery", "ExplainOneQuery")  # 18 / 15: who calls pg_plan_query
PROFILE_WAIT_S = 120
POINT_CONFIGS = (ON, OFF)


def cold_keys(rows: int, count: int) -> list[int]:
    """`count` keys of the point table far enough apart to sit on different pages (about 115 rows fit one),
    so each UPDATE dirties a page that was clean: the pool changed and the next planning takes a census."""
    stride = max(1, rows // (count + 1))
    return [1 + (i * stride) % rows for i in range(count)]


def point_setup(conn: Conn, rows: int) -> int:
    """The indexed temp table of the point query, analyzed, its plans warm in both configurations; its bytes."""
    conn.execute("SET client_min_messages = warning")
    conn.execute(f"LOAD '{LIBRARY}'")
    conn.execute(f"CREATE TEMP TABLE {POINT_TABLE} AS SELECT g AS id, md5(g::text) AS s "
                 f"FROM generate_series(1, {rows}) g")
    conn.execute(f"CREATE INDEX ON {POINT_TABLE} (id)")
    conn.execute(f"VACUUM ANALYZE {POINT_TABLE}")
    for config in POINT_CONFIGS:
        switch(conn, config)
        for _ in range(3):
            conn.execute(POINT_QUERY).fetchall()  # the pages it reads resident, catalog caches warm
    for config in POINT_CONFIGS:
        switch(conn, config)
        for _ in range(2):
            conn.execute(EXPLAIN + POINT_QUERY).fetchone()
    row = conn.execute("SELECT pg_total_relation_size(%s::regclass)", (POINT_TABLE,)).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def switch(conn: Conn, config: str) -> None:
    conn.execute(f"SET {LIBRARY}.parallel_scan = {'on' if config == ON else 'off'}")


def planning_ms(conn: Conn, query: str) -> float:
    row = conn.execute(EXPLAIN + query).fetchone()
    assert row is not None
    return explain_planning_ms(row[0])


# -- timed ------------------------------------------------------------------------------------


def run_timed(result: OverheadResult, target: TargetServer, progress: Progress, task: TaskID) -> None:
    """Point-query planning times per temp_buffers, then the TPC-H planning sums."""
    options = result.options
    temp = result.temp
    for temp_buffers in options.point_temp_buffers:
        progress.update(task, description=f"temp sessions: point query, temp_buffers {temp_buffers}: loading")
        with target.connect(options=f"-c temp_buffers={temp_buffers}") as conn:
            temp.point_table_bytes = point_setup(conn, options.point_rows)
            progress.update(task, description=f"temp sessions: point query, temp_buffers {temp_buffers}")
            for repetition in range(options.plannings):
                for config in alternate(POINT_CONFIGS, repetition):
                    switch(conn, config)
                    temp.points.append(PlanningPoint(temp_buffers, STEADY, config, repetition,
                                                     planning_ms(conn, POINT_QUERY)))
                progress.advance(task)
            keys = iter(cold_keys(options.point_rows, 2 * options.plannings))
            for repetition in range(options.plannings):
                for config in alternate(POINT_CONFIGS, repetition):
                    switch(conn, config)
                    conn.execute(f"UPDATE {POINT_TABLE} SET s = s WHERE id = {next(keys)}")
                    temp.points.append(PlanningPoint(temp_buffers, COLD, config, repetition,
                                                     planning_ms(conn, POINT_QUERY)))
                progress.advance(task)
    run_tpch(result, target, progress, task)


def run_tpch(result: OverheadResult, target: TargetServer, progress: Progress, task: TaskID) -> None:
    options = result.options
    temp = result.temp
    assert result.out_dir is not None
    temp.tpch_temp_buffers = options.tpch_temp_buffers or tpch_tables.temp_buffers_for(options.tpch_scale)
    schema = opt.TPCH_UNLOGGED_SCHEMA
    progress.update(task, description=f"temp sessions: TPC-H SF {options.tpch_scale:g}: generating")
    csv_dir = generate(options.tpch_scale, result.out_dir)
    with target.connect(options=f"-c temp_buffers={temp.tpch_temp_buffers} "
                                f"-c max_parallel_workers_per_gather={opt.TPCH_WORKERS}") as conn:
        conn.execute("SET client_min_messages = warning")
        conn.execute(f"LOAD '{LIBRARY}'")
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        try:
            progress.update(task, description=f"temp sessions: TPC-H SF {options.tpch_scale:g}: loading UNLOGGED")
            unlogged = tpch_tables.load(conn, csv_dir, tpch_tables.Kind.UNLOGGED, schema)
            progress.update(task, description=f"temp sessions: TPC-H SF {options.tpch_scale:g}: loading temp")
            temp_tables = tpch_tables.load(conn, csv_dir, tpch_tables.Kind.TEMP)
            temp.tpch_bytes = {UNLOGGED: tpch_tables.total_bytes(conn, unlogged),
                               "temp": tpch_tables.total_bytes(conn, temp_tables)}
            row = conn.execute("SELECT pg_size_bytes(current_setting('temp_buffers'))").fetchone()
            if row and temp.tpch_bytes["temp"] > int(row[0]):
                temp.notes.append(f"the temporary TPC-H tables ({temp.tpch_bytes['temp'] / 2**20:,.0f} MiB with "
                                  f"indexes) do not fit temp_buffers = {temp.tpch_temp_buffers} (--tpch-temp-buffers)")
            queries = {q: tpch_tables.query_text(q) for q in tpch_tables.QUERIES}

            def prepare(config: str) -> None:
                kind = tpch_tables.Kind.UNLOGGED if config == UNLOGGED else tpch_tables.Kind.TEMP
                conn.execute(tpch_tables.search_path(kind, schema))
                switch(conn, config)

            progress.update(task, description="temp sessions: TPC-H planning")
            for config in TPCH_CONFIGS:  # catalog caches and the census warm
                prepare(config)
                for sql in queries.values():
                    conn.execute(EXPLAIN + sql).fetchone()
            for repetition in range(options.tpch_plannings):
                for index, (name, sql) in enumerate(queries.items()):
                    for config in alternate(TPCH_CONFIGS, repetition + index):
                        prepare(config)
                        temp.tpch.append(TpchPlanningPoint(name, config, repetition, planning_ms(conn, sql)))
                progress.advance(task)
        finally:
            try:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            except psycopg.Error:
                pass


def timed_steps(result: OverheadResult) -> int:
    o = result.options
    return len(o.point_temp_buffers) * 2 * o.plannings + o.tpch_plannings


# -- instructions -----------------------------------------------------------------------------


def explain_planning_ir(profile: callgrind.Profile, plannings: int) -> float:
    """Instructions per planning: the inclusive cost of EXPLAIN's calls of pg_plan_query / plannings."""
    callers = profile.callers("pg_plan_query")
    named = [c for c in callers if callgrind.base_name(c) in EXPLAIN_CALLERS]
    if not named:  # a stripped binary names the caller by address: the one with exactly our plannings
        named = [c for c, calls in callers.items() if calls == plannings and c != "pg_plan_queries"]
    if len(named) != 1 or callers[named[0]] != plannings:
        raise LabError(f"callgrind: expected one EXPLAIN caller of pg_plan_query with {plannings} calls, "
                       f"found {callers}")
    return profile.arc_cost(named[0], "pg_plan_query") / plannings


def counting_note(valgrind: str) -> str:
    return (f"{valgrind} --tool=callgrind --toggle-collect=PostgresMain {DUMP_OPTION}; one backend per "
            "temp_buffers, counts dumped between phases; per planning = inclusive Ir of EXPLAIN's calls of "
            "pg_plan_query / plannings of the phase")


def run_counted(result: OverheadResult, cluster: Cluster, progress: Progress, task: TaskID) -> None:
    """Instructions per point-query planning, per temp_buffers, phase and configuration."""
    options = result.options
    assert result.out_dir is not None
    profiles_dir = result.out_dir / "callgrind"
    profiles_dir.mkdir(exist_ok=True)
    n = options.counted_plannings
    with postmaster_under_callgrind(cluster, "", (DUMP_OPTION,)) as dump_dir:
        for temp_buffers in options.point_temp_buffers:
            progress.update(task, description=f"callgrind: point query planning, temp_buffers {temp_buffers}")
            with cluster.connect(options=f"-c temp_buffers={temp_buffers}") as conn:
                row = conn.execute("SELECT pg_backend_pid()").fetchone()
                assert row is not None
                pid = int(row[0])
                point_setup(conn, options.point_rows)
                part = _dump(conn, dump_dir, pid, 0)  # setup and warm-up: not counted
                keys = iter(cold_keys(options.point_rows, 2 * n))
                for phase in (STEADY, COLD):
                    for config in POINT_CONFIGS:
                        switch(conn, config)
                        for _ in range(n):
                            if phase == COLD:
                                conn.execute(f"UPDATE {POINT_TABLE} SET s = s WHERE id = {next(keys)}")
                            conn.execute(EXPLAIN + POINT_QUERY).fetchone()
                        part = _dump(conn, dump_dir, pid, part)
                        path = dump_dir / f"callgrind.out.{pid}.{part}"
                        profile = callgrind.parse(path)
                        shutil.copyfile(path, profiles_dir / f"point-{temp_buffers}-{phase}-{config}.out")
                        result.temp.counts.append(PlanningCount(
                            temp_buffers=temp_buffers, phase=phase, config=config, plannings=n,
                            planning_ir=explain_planning_ir(profile, n),
                            census_calls=profile.calls_to("take_census")))
            progress.advance(task)


def _dump(conn: Conn, dump_dir: Path, pid: int, part: int) -> int:
    """Run the marker; wait for callgrind's next dump of the backend; its part number."""
    conn.execute(MARKER)
    path = dump_dir / f"callgrind.out.{pid}.{part + 1}"
    deadline = time.monotonic() + PROFILE_WAIT_S
    while time.monotonic() < deadline:
        if callgrind.is_complete(path):
            return part + 1
        time.sleep(0.1)
    raise LabError(f"callgrind wrote no dump {path.name} within {PROFILE_WAIT_S} s")
