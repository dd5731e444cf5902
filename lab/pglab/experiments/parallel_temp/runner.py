"""Running `pglab parallel-temp`: the benchmark grid and the decision grid."""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pglab import equal_memory as em
from pglab.errors import LabError
from pglab.experiments.parallel_temp.options import DEFAULT_DIRTY_SHARES, ParallelTempOptions
from pglab.experiments.parallel_temp.sessions import SessionResults, run_sessions
from pglab.experiments.parallel_temp.workload import (
    DEFAULT_COSTS,
    FORCE_PARALLEL,
    QUERIES,
    TableShape,
    Variant,
    chosen_plan_is_parallel,
    create_tables,
    drop_tables,
    make_dirty,
    plan_summary,
    prepare_variant,
    reset_planner_defaults,
    set_workers,
)
from pglab.machine import machine_info
from pglab.server import TargetServer, open_target, server_facts

EXTENSION = "pg_tempbuf"


@dataclass
class Timing:
    rows: int
    pages: int
    query: str
    variant: str
    workers: int
    repetition: int
    ms: float
    dirty_pages: int


@dataclass
class PlanCheck:
    rows: int
    query: str
    variant: str
    workers: int
    info: dict[str, Any]


@dataclass
class Decision:
    rows: int
    pages: int
    dirty_share: float
    query: str
    dirty_pages: int
    planner_parallel: bool
    serial_ms: list[float]
    parallel_ms: list[float]


@dataclass
class AcceptanceCheck:
    """The issue's acceptance scenario, run as a user would: default settings."""
    rows: int
    plan: dict[str, Any]  # plan_summary() of a default-settings run
    serial_ms: list[float]  # pg_tempbuf.parallel_scan = off
    default_ms: list[float]  # pg_tempbuf.parallel_scan = on, the planner's plan
    same_rows: bool
    updated_rows: int  # UPDATE of a third of the rows, in an open transaction
    after_update_plan: dict[str, Any]  # parallel forced, inside that transaction
    after_update_same_rows: bool


@dataclass
class ParallelTempRun:
    options: ParallelTempOptions
    timings: list[Timing] = field(default_factory=list)
    plans: list[PlanCheck] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    acceptance: list[AcceptanceCheck] = field(default_factory=list)
    shapes: dict[int, TableShape] = field(default_factory=dict)
    sessions: SessionResults | None = None  # the real-session cases (sessions.py)
    server: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # the memory both sides ran with (pglab.equal_memory)
    machine: dict[str, Any] = field(default_factory=dict)
    started: str = ""
    wall_s: float = 0.0


def digest(rows: list[tuple[Any, ...]]) -> str:
    return hashlib.sha256(repr(sorted(rows, key=repr)).encode()).hexdigest()


def timed(conn: psycopg.Connection[Any], sql: str) -> tuple[float, str]:
    start = time.perf_counter()
    rows = conn.execute(sql).fetchall()
    return (time.perf_counter() - start) * 1000.0, digest(rows)


def session(target: TargetServer, options: ParallelTempOptions) -> psycopg.Connection[Any]:
    conn = target.connect(options=f"-c temp_buffers={options.temp_buffers}")
    conn.execute("SET jit = off")
    conn.execute("SET client_min_messages = warning")
    conn.execute(f"CREATE EXTENSION IF NOT EXISTS {EXTENSION}")
    conn.execute(f"LOAD '{EXTENSION}'")  # no-op when preloaded; makes --dsn servers work too
    return conn


def run_benchmark(conn: psycopg.Connection[Any], run: ParallelTempRun, shape: TableShape,
                  progress: Progress, task: Any) -> None:
    options = run.options
    for name, template in QUERIES.items():
        reference: str | None = None
        for workers in options.workers:
            set_workers(conn, workers)
            for repetition in range(options.repetitions):
                # Variants interleaved, so that drifting machine load hits them alike.
                for variant in Variant:
                    table, dirty = prepare_variant(conn, variant, shape.pages)
                    ms, result = timed(conn, template.format(t=table))
                    if reference is None:
                        reference = result
                    elif result != reference:
                        raise LabError(f"{variant} returned other rows than serial for {name!r} "
                                       f"at {shape.rows} rows: this is a bug, please report it")
                    run.timings.append(Timing(shape.rows, shape.pages, name, str(variant), workers,
                                              repetition, ms, dirty))
                    progress.advance(task)
            for variant in Variant:
                table, _ = prepare_variant(conn, variant, shape.pages)
                run.plans.append(PlanCheck(shape.rows, name, str(variant), workers,
                                           plan_summary(conn, template.format(t=table))))


def run_decisions(conn: psycopg.Connection[Any], run: ParallelTempRun, shape: TableShape,
                  progress: Progress, task: Any) -> None:
    """Both plans timed from the same table state; the planner asked with default costs."""
    reset_planner_defaults(conn)
    for share in DEFAULT_DIRTY_SHARES:
        for name, template in QUERIES.items():
            sql = template.format(t="bench_t")
            for statement in DEFAULT_COSTS:
                conn.execute(statement)
            conn.execute("SET pg_tempbuf.parallel_scan = on")
            dirty = make_dirty(conn, share, shape.pages)
            chosen = chosen_plan_is_parallel(conn, sql)
            serial: list[float] = []
            parallel: list[float] = []
            for _ in range(run.options.repetitions):
                for statement in FORCE_PARALLEL:
                    conn.execute(statement)
                conn.execute("SET pg_tempbuf.parallel_scan = off")
                make_dirty(conn, share, shape.pages)
                serial.append(timed(conn, sql)[0])
                conn.execute("SET pg_tempbuf.parallel_scan = on")
                make_dirty(conn, share, shape.pages)
                parallel.append(timed(conn, sql)[0])
                progress.advance(task)
            run.decisions.append(Decision(shape.rows, shape.pages, share, name, dirty, chosen,
                                          serial, parallel))


def run_acceptance(conn: psycopg.Connection[Any], run: ParallelTempRun, shape: TableShape,
                   progress: Progress, task: Any) -> None:
    """The CPU-bound aggregate with default settings, the switch off vs on, interleaved;
    then the same query after an UPDATE of a third of the rows in an open transaction,
    parallel forced, against the serial plan.  Leaves the table as it found it."""
    sql = QUERIES["cpu_aggregate"].format(t="bench_t")
    reset_planner_defaults(conn)
    serial: list[float] = []
    default: list[float] = []
    digests: set[str] = set()
    for _ in range(run.options.repetitions):
        conn.execute("SET pg_tempbuf.parallel_scan = off")
        ms, result = timed(conn, sql)
        serial.append(ms)
        digests.add(result)
        conn.execute("SET pg_tempbuf.parallel_scan = on")
        ms, result = timed(conn, sql)
        default.append(ms)
        digests.add(result)
        progress.advance(task)
    plan = plan_summary(conn, sql)

    conn.execute("BEGIN")  # its ROLLBACK also undoes the SETs below
    try:
        updated = conn.execute("UPDATE bench_t SET x = x + 1 WHERE x % 3 = 0").rowcount
        conn.execute("SET pg_tempbuf.parallel_scan = off")
        expected = timed(conn, sql)[1]
        conn.execute("SET pg_tempbuf.parallel_scan = on")
        for statement in FORCE_PARALLEL:
            conn.execute(statement)
        after_plan = plan_summary(conn, sql)
        after = timed(conn, sql)[1]
    finally:
        conn.execute("ROLLBACK")
    progress.advance(task)
    run.acceptance.append(AcceptanceCheck(
        rows=shape.rows, plan=plan, serial_ms=serial, default_ms=default,
        same_rows=len(digests) == 1, updated_rows=updated, after_update_plan=after_plan,
        after_update_same_rows=after == expected))


def run_parallel_temp(options: ParallelTempOptions, console: Console) -> ParallelTempRun:
    run = ParallelTempRun(options=options, machine=machine_info(),
                          started=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    cores = max(options.workers)
    # The UNLOGGED copy is scanned in the benchmark's session: shared_buffers holds it as that
    # session's temp_buffers holds bench_t.
    settings = em.server_settings({
        "shared_preload_libraries": EXTENSION,
        "max_worker_processes": str(max(8, cores + 2)),
        "max_parallel_workers": str(max(8, cores)),
    }, options.shared_buffers, (options.temp_buffers,), options.dsn)
    start = time.perf_counter()
    bench_steps = len(options.rows) * len(QUERIES) * len(options.workers) * options.repetitions * len(Variant)
    decision_steps = (len(options.rows) * len(DEFAULT_DIRTY_SHARES) * len(QUERIES) * options.repetitions
                      if options.decision else 0)
    acceptance_steps = len(options.rows) * (options.repetitions + 1)
    with open_target(options.pg_config, options.dsn, options.checksums,
                     require_extension=EXTENSION, settings=settings) as target, Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=False,
    ) as progress:
        bench = progress.add_task("benchmark", total=bench_steps)
        decide = progress.add_task("decision", total=decision_steps) if options.decision else None
        accept = progress.add_task("default settings", total=acceptance_steps)
        for rows in options.rows:
            with session(target, options) as conn:
                if not run.server:
                    run.server = server_facts(conn, ("max_worker_processes", "max_parallel_workers",
                                                     "shared_preload_libraries", "jit", "shared_buffers"))
                progress.update(bench, description=f"benchmark: loading {rows:,} rows")
                shape = create_tables(conn, rows)
                em.warm_copy(conn, ["bench_u"], run.notes)
                run.shapes[rows] = shape
                progress.update(bench, description=f"benchmark: {rows:,} rows")
                run_benchmark(conn, run, shape, progress, bench)
                if decide is not None:
                    progress.update(decide, description=f"decision: {rows:,} rows")
                    run_decisions(conn, run, shape, progress, decide)
                # Last: its rolled-back UPDATE leaves dead row versions behind.
                progress.update(accept, description=f"default settings: {rows:,} rows")
                run_acceptance(conn, run, shape, progress, accept)
                drop_tables(conn)
        if options.sessions:
            run.sessions = run_sessions(target, options, progress)
    run.wall_s = time.perf_counter() - start
    return run
