"""Running `pglab regret`: one session per part, the configurations interleaved in it.

The TPC-H and shapes parts reuse temp-shapes' code as is: its session settings, its loaders
(`load_tpch_all_temp`: every table temporary and UNLOGGED from the same CSV files, keys.sql's
keys, VACUUM (FREEZE, ANALYZE)), and its measurement (`measure`: an untimed run per configuration
for the result digest, interleaved timed runs with the pool flushed before each, the order rotating,
then EXPLAIN ANALYZE once each).  The session loops are this experiment's own (sessions.py).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import psycopg
from rich.console import Console
from rich.progress import Progress, TaskID

from pglab import equal_memory as em
from pglab import tpch_tables
from pglab.cliargs import default_out_dir, prepare_out_dir
from pglab.errors import LabError
from pglab.experiments.buffered_plan.tpch import generate
from pglab.experiments.regret import analysis as an
from pglab.experiments.regret import options as opt
from pglab.experiments.regret import sessions as ss
from pglab.experiments.regret.analysis import RegretRun
from pglab.experiments.regret.options import NAME, RegretOptions
from pglab.experiments.temp_shapes import analysis as shapes_an
from pglab.experiments.temp_shapes import options as shapes_opt
from pglab.experiments.temp_shapes import runner as shapes_runner
from pglab.experiments.temp_shapes import workload as wl
from pglab.experiments.temp_shapes.analysis import TempShapesRun
from pglab.experiments.temp_shapes.options import TempShapesOptions
from pglab.machine import machine_info
from pglab.progress import lab_progress
from pglab.report_section import command_line, utc_timestamp
from pglab.runlog import recorded_run, status_writer
from pglab.server import TargetServer, open_target, server_facts

Conn = psycopg.Connection[Any]
EXTENSION = shapes_runner.EXTENSION
SESSION_CONFIGS = (an.ON, an.OFF)


def shapes_run(options: RegretOptions, repetitions: int, tpch: bool) -> TempShapesRun:
    """A temp-shapes run object for temp-shapes' measuring functions (they read its options and flush_sql)."""
    return TempShapesRun(options=TempShapesOptions(
        sizes=shapes_opt.QUICK_SIZES if options.quick else shapes_opt.DEFAULT_SIZES,
        repetitions=repetitions, workers=options.workers, temp_buffers=shapes_opt.DEFAULT_TEMP_BUFFERS,
        scale=options.scale, tpch_queries=options.tpch_queries if tpch else (),
        shapes=() if tpch else options.shapes, out_dir=None, tpch_all_temp=tpch, quick=options.quick))


# -- TPC-H, every table temporary, loaded `loads` times ---------------------------------------


def drop_tpch(conn: Conn) -> None:
    """The temporary and UNLOGGED TPC-H tables of the last load, so the next load starts afresh."""
    conn.execute("DROP TABLE IF EXISTS " + ", ".join(f"pg_temp.{t}" for t in tpch_tables.TABLES) + " CASCADE")
    conn.execute(f"DROP SCHEMA IF EXISTS {wl.SCHEMA} CASCADE")
    conn.execute(f"CREATE SCHEMA {wl.SCHEMA}")


def run_tpch(conn: Conn, run: RegretRun, ts: TempShapesRun, progress: Progress, task: TaskID) -> None:
    options = run.options
    progress.update(task, description=f"TPC-H: generating SF {options.scale:g}")
    csv_dir = generate(options.scale, run.out_dir)
    shapes_runner.session_setup(conn, ts)

    def prepare(config: wl.Config) -> None:
        conn.execute(wl.search_path(config))
        conn.execute(wl.switch(config))

    for number in range(1, options.loads + 1):
        progress.update(task, description=f"TPC-H: load {number}/{options.loads}")
        load = an.TpchLoad(number)
        started = time.monotonic()
        if number > 1:
            drop_tpch(conn)
        shapes_runner.load_tpch_all_temp(conn, ts, csv_dir)
        load.seconds = round(time.monotonic() - started, 3)
        run.loads.append(load)
        for name in options.tpch_queries:
            progress.update(task, description=f"TPC-H: load {number}/{options.loads}, {name}")
            sql = tpch_tables.query_text(name)
            title = sql.splitlines()[0].lstrip("- ").strip() if sql.startswith("--") else name
            measured = shapes_an.Measured(an.TPCH_PART, name, title,
                                          {str(c): sql for c in wl.TPCH_ALL_TEMP_CONFIGS})
            shapes_runner.measure(conn, ts, measured, prepare, progress, task)
            load.measured.append(measured)
    run.table_sizes.update(ts.table_sizes)
    run.notes += [n for n in dict.fromkeys(ts.notes) if n not in run.notes]


# -- many-statement sessions -------------------------------------------------------------------


def call(conn: Conn, sql: str) -> int:
    row = conn.execute(sql).fetchone()
    assert row is not None
    return int(row[0] or 0)


def run_sessions(conn: Conn, run: RegretRun, ts: TempShapesRun, progress: Progress, task: TaskID) -> None:
    options = run.options
    progress.update(task, description="sessions: building tables")
    shapes_runner.session_settings(conn, ts)
    conn.execute(f"DROP SCHEMA IF EXISTS {ss.SCHEMA} CASCADE")
    conn.execute(f"CREATE SCHEMA {ss.SCHEMA}")
    conn.execute(f"SET search_path = {ss.SCHEMA}")  # pg_temp is searched first implicitly
    for sql in ss.setup(options.session_sizes):
        conn.execute(sql)
    run.table_sizes.update(shapes_runner.relation_bytes(conn, ["pg_temp.big", "pg_temp.s1", "pg_temp.s2",
                                                               f"{ss.SCHEMA}.perm"]))
    wanted = set(options.sessions)
    for loop in (lp for lp in ss.loops(options.session_sizes) if lp.name in wanted):
        progress.update(task, description=f"sessions: {loop.name}")
        measured = an.SessionLoop(loop.name, loop.title, loop.call(options.iterations),
                                  f"format('{loop.statement}', {loop.arguments})")
        for config in SESSION_CONFIGS:  # untimed: warms caches, and the result to compare
            conn.execute(ss.switch(config == an.ON))
            measured.results[config] = call(conn, measured.call)
        for round_ in range(options.rounds):
            shift = round_ % len(SESSION_CONFIGS)
            for config in SESSION_CONFIGS[shift:] + SESSION_CONFIGS[:shift]:
                conn.execute(ss.switch(config == an.ON))
                start = time.perf_counter()
                call(conn, measured.call)
                ms = (time.perf_counter() - start) * 1000.0
                measured.timings.append(an.LoopTiming(loop.name, config, round_, ms, options.iterations))
                progress.advance(task)
        run.loops.append(measured)
    conn.execute(f"DROP SCHEMA IF EXISTS {ss.SCHEMA} CASCADE")


# -- the temp-shapes suite ---------------------------------------------------------------------


def run_shapes(conn: Conn, run: RegretRun, ts: TempShapesRun, progress: Progress, task: TaskID) -> None:
    progress.update(task, description="shapes: building tables")
    shapes_runner.session_setup(conn, ts)
    shapes = wl.shapes_named(run.options.shapes)
    shapes_runner.build_shapes(conn, ts, shapes)
    shapes_runner.run_shapes(conn, ts, shapes, progress, task)
    run.shapes = list(ts.measured)
    run.table_sizes.update(ts.table_sizes)
    conn.execute(f"DROP SCHEMA IF EXISTS {wl.SCHEMA} CASCADE")


def _timed(run: RegretRun, part: str, started: float) -> None:
    run.part_seconds[part] = round(time.monotonic() - started, 3)


def run_parts(target: TargetServer, run: RegretRun, progress: Progress) -> None:
    options = run.options
    per_item = 3  # the EXPLAIN ANALYZE of each configuration, besides the timed runs
    if options.sessions:
        task = progress.add_task("sessions", total=len(options.sessions) * options.rounds * len(SESSION_CONFIGS))
        started = time.monotonic()
        ts = shapes_run(options, options.shape_repetitions, tpch=False)
        with target.connect(options=f"-c temp_buffers={options.session_temp_buffers}") as conn:
            run_sessions(conn, run, ts, progress, task)
        _timed(run, an.SESSIONS_PART, started)
    if options.shapes:
        ts = shapes_run(options, options.shape_repetitions, tpch=False)
        task = progress.add_task("shapes", total=len(options.shapes) * (per_item + 3 * options.shape_repetitions))
        started = time.monotonic()
        with target.connect(options=f"-c temp_buffers={ts.options.temp_buffers}") as conn:
            try:
                run_shapes(conn, run, ts, progress, task)
            finally:
                _drop_quietly(conn, wl.SCHEMA)
        run.server["shapes_temp_buffers"] = ts.options.temp_buffers
        _timed(run, an.SHAPES_PART, started)
    if options.tpch_queries:
        ts = shapes_run(options, options.repetitions, tpch=True)
        ts = replace(ts, options=replace(ts.options, tpch_temp_buffers=run.tpch_temp_buffers))
        task = progress.add_task("TPC-H", total=options.loads * len(options.tpch_queries)
                                 * (per_item + 3 * options.repetitions))
        started = time.monotonic()
        # temp_buffers is fixed at a session's first temporary table: set at connection time.
        with target.connect(options=f"-c temp_buffers={run.tpch_temp_buffers}") as conn:
            try:
                run_tpch(conn, run, ts, progress, task)
            finally:
                _drop_quietly(conn, wl.SCHEMA)
        _timed(run, an.TPCH_PART, started)


def _drop_quietly(conn: Conn, schema: str) -> None:
    try:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    except psycopg.Error:
        pass


def run_regret(options: RegretOptions, console: Console) -> RegretRun:
    from pglab.experiments.regret.report import write_raw  # writes what exists, also on failure

    run = RegretRun(options=options, machine=machine_info(), command=command_line(), started=utc_timestamp())
    run.tpch_temp_buffers = options.tpch_temp_buffers or tpch_tables.temp_buffers_for(options.scale)
    run.baseline = an.read_baseline(options.baseline) if options.baseline is not None else None
    copy_temp_buffers = ((run.tpch_temp_buffers,) if options.tpch_queries else ()) + \
        ((shapes_opt.DEFAULT_TEMP_BUFFERS,) if options.shapes else ())
    settings = em.server_settings(dict(shapes_runner.SERVER_SETTINGS), options.shared_buffers, copy_temp_buffers,
                                  options.dsn)
    with open_target(options.pg_config, options.dsn, None, require_extension=EXTENSION,
                     settings=settings) as target:
        with target.connect() as conn:
            run.server = server_facts(conn, ("max_parallel_workers", "max_worker_processes", "shared_buffers",
                                             "shared_preload_libraries"))
        run.server["target"] = target.description
        run.server["session_temp_buffers"] = options.session_temp_buffers
        run.server["tpch_temp_buffers"] = run.tpch_temp_buffers
        run.server["max_parallel_workers_per_gather"] = options.workers
        out = options.out_dir or default_out_dir(NAME, run.version_num // 10000)
        run.out_dir = prepare_out_dir(out, options.out_dir is None)
        with recorded_run(run, status_writer(run, write_raw)), lab_progress(console) as progress:
            run_parts(target, run, progress)
    if not (run.loads or run.loops or run.shapes):
        raise LabError("nothing measured")
    return run
