"""Running `pglab temp-shapes`: one session per server builds the data, then times every shape
and TPC-H query in its configurations, interleaved, and records plans and result digests."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from rich.console import Console
from rich.progress import Progress, TaskID

from pglab import equal_memory as em
from pglab import tpch_tables
from pglab.cliargs import default_out_dir, prepare_out_dir
from pglab.errors import LabError
from pglab.experiments.buffered_plan.tpch import generate, tpch_dir
from pglab.experiments.temp_shapes import analysis as an
from pglab.experiments.temp_shapes import workload as wl
from pglab.experiments.temp_shapes.analysis import TempShapesRun
from pglab.experiments.temp_shapes.options import NAME, TempShapesOptions
from pglab.machine import machine_info
from pglab.progress import lab_progress
from pglab.report_section import command_line, utc_timestamp
from pglab.runlog import recorded_run, status_writer
from pglab.server import open_target, server_facts

EXTENSION = "pg_tempbuf"
SERVER_SETTINGS = {
    "shared_preload_libraries": EXTENSION,
    "max_worker_processes": "8",
    "max_parallel_workers": "8",
    "max_wal_size": "4GB",
    "checkpoint_timeout": "30min",
}

Conn = psycopg.Connection[Any]




def session_setup(conn: Conn, run: TempShapesRun) -> None:
    session_settings(conn, run)
    conn.execute(f"DROP SCHEMA IF EXISTS {wl.SCHEMA} CASCADE")
    conn.execute(f"CREATE SCHEMA {wl.SCHEMA}")
    # New permanent tables go there (pg_temp, searched first, only when named first explicitly).
    conn.execute(f"SET search_path = {wl.SCHEMA}")


def session_settings(conn: Conn, run: TempShapesRun) -> None:
    options = run.options
    conn.execute("SET client_min_messages = warning")
    conn.execute(f"CREATE EXTENSION IF NOT EXISTS {EXTENSION}")
    conn.execute(f"LOAD '{EXTENSION}'")  # no-op when preloaded; makes --dsn servers work too
    row = conn.execute("SELECT quote_ident(extnamespace::regnamespace::text) FROM pg_extension "
                       "WHERE extname = %s", (EXTENSION,)).fetchone()
    assert row is not None
    run.flush_sql = f"SELECT {row[0]}.pg_flush_local_buffers()"
    conn.execute("SET jit = off")
    conn.execute(f"SET max_parallel_workers_per_gather = {options.workers}")


def fetch(conn: Conn, sql: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql).fetchall()


def measure(conn: Conn, run: TempShapesRun, measured: an.Measured, prepare: Callable[[wl.Config], None],
            progress: Progress, task: TaskID, flush: bool = True) -> None:
    """Untimed run per configuration (result digest), `repetitions` interleaved timed rounds
    (each round starts at another configuration), then EXPLAIN (ANALYZE, FORMAT JSON) once each.
    flush: the pool flushed before each timed run and the EXPLAIN (False: as prepare left it)."""
    configs = [wl.Config(c) for c in measured.sql]
    for config in configs:
        prepare(config)
        rows = fetch(conn, measured.sql[config])
        measured.results[config] = an.ResultCheck(measured.part, measured.item, config, an.digest(rows), len(rows))
    for repetition in range(run.options.repetitions):
        shift = repetition % len(configs)
        for config in configs[shift:] + configs[:shift]:
            prepare(config)
            if flush:
                conn.execute(run.flush_sql)  # the tables flushed, as the issue measured
            start = time.perf_counter()
            fetch(conn, measured.sql[config])
            ms = (time.perf_counter() - start) * 1000.0
            measured.timings.append(an.Timing(measured.part, measured.item, config, repetition, ms))
            progress.advance(task)
    for config in configs:
        prepare(config)
        if flush:
            conn.execute(run.flush_sql)
        row = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + measured.sql[config]).fetchone()
        assert row is not None
        measured.plans[config] = an.plan_shape(row[0])
        progress.advance(task)


def relation_bytes(conn: Conn, relations: list[str]) -> dict[str, int]:
    sizes = {}
    for relation in relations:
        row = conn.execute("SELECT pg_total_relation_size(%s::regclass)", (relation,)).fetchone()
        sizes[relation] = int(row[0]) if row and row[0] is not None else 0
    return sizes


def build_shapes(conn: Conn, run: TempShapesRun, shapes: tuple[wl.Shape, ...]) -> None:
    sizes = run.options.sizes
    for sql in wl.permanent_setup(sizes):
        conn.execute(sql)
    conn.execute(f"VACUUM ANALYZE {wl.SCHEMA}.big")
    measured_relations = [f"{wl.SCHEMA}.big"]
    copies: list[str] = []
    for name in dict.fromkeys(t for s in shapes for t in s.tables):
        for config in (wl.Config.ON, wl.Config.UNLOGGED):
            for sql in wl.table_setup(name, config, sizes):
                conn.execute(sql)
            relations = wl.table_names(name, config, sizes)
            for relation in relations:
                # Hint bits and the visibility map set before timing, then the pages written:
                # every configuration starts from the same clean table.
                conn.execute(f"VACUUM ANALYZE {relation}")
            if name == "parts":
                conn.execute(f"ANALYZE {(wl.UNLOGGED_PREFIX if config is wl.Config.UNLOGGED else wl.TEMP_PREFIX)}parts")
            measured_relations += relations
            copies += relations if config is wl.Config.UNLOGGED else []
    conn.execute(run.flush_sql)
    em.warm_copy(conn, copies, run.notes)
    run.table_sizes.update(relation_bytes(conn, measured_relations))


def run_shapes(conn: Conn, run: TempShapesRun, shapes: tuple[wl.Shape, ...], progress: Progress,
               task: TaskID) -> None:
    sizes = run.options.sizes
    for shape in shapes:
        def prepare(config: wl.Config, shape: wl.Shape = shape) -> None:
            conn.execute(wl.switch(config))
            if shape.fresh:
                for name in shape.tables:
                    for sql in wl.table_setup(name, config, sizes):
                        conn.execute(sql)

        progress.update(task, description=f"shapes: {shape.name}")
        measured = an.Measured(an.SHAPES_PART, shape.name, shape.title,
                               {str(c): shape.sql(c, sizes) for c in wl.SHAPE_CONFIGS})
        for setting in shape.settings:
            conn.execute(f"SET {setting}")
        try:
            measure(conn, run, measured, prepare, progress, task, flush=not shape.fresh)
        finally:
            for setting in shape.settings:
                conn.execute(f"RESET {setting.split('=')[0].strip()}")
        run.measured.append(measured)


def load_tpch(conn: Conn, run: TempShapesRun, csv_dir: Path) -> None:
    """tpchgen-cli CSVs into permanent tables of the run's schema (the buffered-plan experiment's
    schema and keys, pglab.tpch_tables), then temporary copies of the dimension tables."""
    permanent = tpch_tables.load(conn, csv_dir, tpch_tables.Kind.PERMANENT, wl.SCHEMA)
    conn.execute(f"SET search_path = {wl.SCHEMA}")
    for sql in wl.tpch_temp_setup():
        conn.execute(sql)
    conn.execute(run.flush_sql)
    run.table_sizes.update(relation_bytes(conn, permanent + [f"pg_temp.{t}" for t in wl.TPCH_TEMP_TABLES]))


def load_tpch_all_temp(conn: Conn, run: TempShapesRun, csv_dir: Path) -> None:
    """Every table twice from the same CSVs: UNLOGGED in the run's schema and temporary, each with keys.sql's
    keys and indexes, frozen and analyzed; then the pool flushed (clean pages, as before every timed run)."""
    unlogged = tpch_tables.load(conn, csv_dir, tpch_tables.Kind.UNLOGGED, wl.SCHEMA)
    temp = tpch_tables.load(conn, csv_dir, tpch_tables.Kind.TEMP)
    conn.execute(run.flush_sql)
    em.warm_copy(conn, unlogged, run.notes, temp_tables=temp)
    sizes = relation_bytes(conn, unlogged + temp)
    run.table_sizes.update(sizes)
    temp_bytes = sum(sizes[t] for t in temp)
    row = conn.execute("SELECT current_setting('temp_buffers')::text, "
                       "pg_size_bytes(current_setting('temp_buffers'))").fetchone()
    assert row is not None
    if temp_bytes > int(row[1]):
        run.notes.append(f"the temporary TPC-H tables ({temp_bytes / 2**20:,.0f} MiB with indexes) do not fit "
                         f"temp_buffers = {row[0]}: pages are evicted and read back (--tpch-temp-buffers)")


def run_tpch(conn: Conn, run: TempShapesRun, progress: Progress, task: TaskID) -> None:
    queries_dir = tpch_dir() / "queries"
    configs = wl.TPCH_ALL_TEMP_CONFIGS if run.options.tpch_all_temp else wl.TPCH_CONFIGS

    def prepare(config: wl.Config) -> None:
        conn.execute(wl.search_path(config))
        conn.execute(wl.switch(config))

    for name in run.options.tpch_queries:
        progress.update(task, description=f"TPC-H: {name}")
        path = queries_dir / f"{name}.sql"
        sql = path.read_text().strip().rstrip(";")
        title = sql.splitlines()[0].lstrip("- ").strip() if sql.startswith("--") else name
        measured = an.Measured(an.TPCH_PART, name, title, {str(c): sql for c in configs})
        measure(conn, run, measured, prepare, progress, task)
        run.measured.append(measured)


def run_temp_shapes(options: TempShapesOptions, console: Console) -> TempShapesRun:
    from pglab.experiments.temp_shapes.report import write_raw  # writes what exists, also on failure

    run = TempShapesRun(options=options, machine=machine_info(), command=command_line(),
                        started=utc_timestamp())
    shapes = wl.shapes_named(options.shapes)
    per_item = options.repetitions * 3 + 3
    copy_temp_buffers = (options.temp_buffers,) + ((options.tpch_temp_buffers or
                                                   tpch_tables.temp_buffers_for(options.scale),)
                                                  if options.tpch_all_temp and options.tpch_queries else ())
    settings = em.server_settings(dict(SERVER_SETTINGS), options.shared_buffers, copy_temp_buffers, options.dsn)
    with open_target(options.pg_config, options.dsn, None, require_extension=EXTENSION,
                     settings=settings) as target:
        conn = target.connect(options=f"-c temp_buffers={options.temp_buffers}")
        with conn:
            run.server = server_facts(conn, ("max_parallel_workers", "max_worker_processes", "shared_buffers",
                                             "shared_preload_libraries"))
            run.server["target"] = target.description
            run.server["temp_buffers"] = options.temp_buffers
            if options.tpch_all_temp and options.tpch_queries:
                run.tpch_temp_buffers = options.tpch_temp_buffers or tpch_tables.temp_buffers_for(options.scale)
                run.server["tpch_temp_buffers"] = run.tpch_temp_buffers
            out = options.out_dir or default_out_dir(NAME, run.version_num // 10000)
            run.out_dir = prepare_out_dir(out, options.out_dir is None)
            with recorded_run(run, status_writer(run, write_raw)), lab_progress(console) as progress:
                session_setup(conn, run)
                try:
                    if shapes:
                        task = progress.add_task("shapes: loading", total=len(shapes) * per_item)
                        build_shapes(conn, run, shapes)
                        run_shapes(conn, run, shapes, progress, task)
                    if options.tpch_queries:
                        tpch_task = progress.add_task(f"TPC-H: generating SF {options.scale:g}",
                                                      total=len(options.tpch_queries) * per_item)
                        csv_dir = generate(options.scale, run.out_dir)
                        progress.update(tpch_task, description=f"TPC-H: loading SF {options.scale:g}")
                        if options.tpch_all_temp:
                            # A session of its own: temp_buffers holding every table, set before its first
                            # temporary table.
                            with target.connect(options=f"-c temp_buffers={run.tpch_temp_buffers}") as tpch_conn:
                                session_settings(tpch_conn, run)
                                load_tpch_all_temp(tpch_conn, run, csv_dir)
                                run_tpch(tpch_conn, run, progress, tpch_task)
                        else:
                            load_tpch(conn, run, csv_dir)
                            run_tpch(conn, run, progress, tpch_task)
                finally:
                    try:
                        conn.execute(f"DROP SCHEMA IF EXISTS {wl.SCHEMA} CASCADE")
                    except psycopg.Error:
                        pass
    if not run.measured:
        raise LabError("nothing measured (no shapes and no TPC-H queries)")
    return run
