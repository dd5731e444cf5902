"""Running `pglab page-read`: one session per mode, the tables loaded, then timed rounds, interleaved.

Each mode has a session of its own, because pg_tempbuf.shared_pool and temp_buffers count from a
session's first temporary table: the in-place session loads its temporary table with the pool on,
the file session with it off (so its pool is never adopted), and the shared-hit session reads the
UNLOGGED copy.  Every round times each mode once (the plain count, then its EXPLAIN), the order
rotating per round, so that drifting machine load hits the modes alike.

The serial part comes after, in two sessions of its own (the parallel part's closed): both with
pg_tempbuf.parallel_scan = off and no workers, one with pg_tempbuf.shared_pool = on (its local
buffers move into the memfd at the first statement after its table's load), one with it off
from the start (core's private memory); each loads the same table, reads it once, checks its
plan (EXPLAIN) and mapping (/proc/<pid>/maps), then rounds time the query in both, the order
alternating per round.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import psycopg
from rich.console import Console

from pglab.cliargs import default_out_dir, prepare_out_dir
from pglab.errors import LabError
from pglab.experiments.page_read import analysis as an
from pglab.experiments.page_read.analysis import POOLS, Mode, PageReadRun, Pool
from pglab.experiments.page_read.options import EXTENSION, FILLFACTOR, NAME, PAD_BYTES, PageReadOptions
from pglab.machine import machine_info
from pglab.progress import lab_progress
from pglab.report_section import command_line, utc_timestamp
from pglab.runlog import recorded_run, status_writer
from pglab.server import (
    TargetServer,
    current_setting,
    extension_library_facts,
    load_extension,
    open_target,
    server_facts,
)

POOL_GUC = "pg_tempbuf.shared_pool"
SCHEMA = "pglab_page_read"  # the UNLOGGED copy; dropped at the end
TEMP_TABLE = "page_read_t"
UNLOGGED_TABLE = f"{SCHEMA}.page_read_u"
EXPLAIN = "EXPLAIN (ANALYZE, VERBOSE, BUFFERS, FORMAT JSON) "
SERVER_SETTINGS = {
    "shared_preload_libraries": EXTENSION,
    "max_worker_processes": "8",
    "max_parallel_workers": "8",
}
# The shared-hit copy must fit shared_buffers with room to spare.
SHARED_BUFFERS_SHARE = 0.9
# The serial part: its own table, the same in both sessions, and the query timed.
SERIAL_TABLE = "serial_t"
SERIAL_QUERY = f"SELECT count(*), sum(length(s)) FROM {SERIAL_TABLE}"
SERIAL_EXPLAIN = "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "
MD5_CHARS = 32

Conn = psycopg.Connection[Any]


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def session_settings(workers: int) -> list[str]:
    """What every measuring session sets (after pg_tempbuf.shared_pool and temp_buffers): a parallel
    plan whatever the costs say, and only workers reading."""
    return [
        "jit = off",
        f"max_parallel_workers_per_gather = {workers}",
        "parallel_leader_participation = off",  # only workers read: the leader waits at Gather
        "parallel_setup_cost = 0",
        "parallel_tuple_cost = 0",
        # Core does not divide a scan's disk cost among workers: with one row a page the serial plan
        # would stay within the planner's fuzz of the parallel one and be kept.
        "seq_page_cost = 0.01",
        # pg_tempbuf's prices of the flush and of workers' private reads: nothing holds the parallel plan back.
        "pg_tempbuf.write_page_cost = 0",
        "pg_tempbuf.buffer_scan_cost = 0",
        "pg_tempbuf.read_page_cost = 0",
        "pg_tempbuf.parallel_margin = 0",
    ]


def serial_settings(temp_buffers: str) -> list[str]:
    """What both serial sessions set after pg_tempbuf.shared_pool: the stock serial plan, the table in the pool."""
    return [
        f"temp_buffers = '{temp_buffers}'",
        "pg_tempbuf.parallel_scan = off",  # the stock plans: no Temp Seq Scan
        "max_parallel_workers_per_gather = 0",
        "jit = off",
    ]


def serial_table_sql(rows: int) -> list[str]:
    """(id int, md5 text): about 120 rows a page; vacuumed, so that both sessions read the same pages."""
    return [
        f"CREATE TEMP TABLE {SERIAL_TABLE} AS SELECT g AS id, md5(g::text) AS s FROM generate_series(1, {rows}) g",
        f"VACUUM ANALYZE {SERIAL_TABLE}",
    ]


def table_sql(kind: str, name: str, pages: int, workers: int) -> list[str]:
    """One row per page (fillfactor 10 and a 500-byte value, stored inline), vacuumed: hint bits and
    all-visible pages in every mode, so that a page's work is its read and one tuple."""
    return [
        f"CREATE {kind} TABLE {name} (id int NOT NULL, pad text NOT NULL) "
        f"WITH (fillfactor = {FILLFACTOR}, parallel_workers = {workers})",
        f"INSERT INTO {name} SELECT g, repeat('x', {PAD_BYTES}) FROM generate_series(1, {pages}) g",
        f"VACUUM ANALYZE {name}",
    ]


def count_sql(mode: Mode) -> str:
    return f"SELECT count(*) FROM {UNLOGGED_TABLE if mode is Mode.SHARED_HIT else TEMP_TABLE}"


def scalar(conn: Conn, sql: str, params: tuple[Any, ...] = ()) -> Any:
    row = conn.execute(sql, params).fetchone()
    assert row is not None
    return row[0]


def open_pool_session(target: TargetServer, pool: bool, settings: list[str]) -> Conn:
    """A session with pg_tempbuf loaded and pg_tempbuf.shared_pool set (on where pool) before any
    temporary table, then each of settings ("name = value")."""
    conn = target.connect()
    try:
        conn.execute("SET client_min_messages = warning")
        conn.execute(f"LOAD '{EXTENSION}'")  # no-op when preloaded; makes --dsn servers work too
        if current_setting(conn, POOL_GUC) is None:
            raise LabError(f"this {EXTENSION} has no {POOL_GUC} setting: install a build with the shared pool "
                           f"(make install PG_CONFIG=...)")
        conn.execute(f"SET {POOL_GUC} = {'on' if pool else 'off'}")
        for setting in settings:
            conn.execute(f"SET {setting}")
    except BaseException:
        conn.close()
        raise
    return conn


def open_session(target: TargetServer, run: PageReadRun, pool: bool) -> Conn:
    """A measuring session: pg_tempbuf loaded, its pool setting and temp_buffers set before any
    temporary table, then the planner settings."""
    return open_pool_session(target, pool, [f"temp_buffers = '{run.options.temp_buffers}'", *run.session_settings])


def relation_facts(conn: Conn, relation: str, block_size: int) -> dict[str, int]:
    """Size and ANALYZE's row count: no scan, which would be the session's first query (and flush)."""
    row = conn.execute("SELECT pg_relation_size(oid), reltuples::bigint FROM pg_class WHERE oid = %s::regclass",
                       (relation,)).fetchone()
    assert row is not None
    return {"bytes": int(row[0]), "pages": int(row[0]) // block_size, "rows": int(row[1])}


def check_fits(run: PageReadRun, conn: Conn, table_bytes: int) -> None:
    """The temporary table must stay in the leader's pool, the copy in shared_buffers."""
    temp_buffers = int(scalar(conn, "SELECT pg_size_bytes(%s)", (run.options.temp_buffers,)))
    if table_bytes > temp_buffers:
        raise LabError(f"--pages {run.options.pages:,}: the table ({table_bytes / 2**20:,.0f} MiB) does not fit "
                       f"temp_buffers = {run.options.temp_buffers} (--temp-buffers)")
    shared = int(scalar(conn, "SELECT pg_size_bytes(current_setting('shared_buffers'))"))
    if table_bytes > SHARED_BUFFERS_SHARE * shared:
        raise LabError(f"--pages {run.options.pages:,}: the UNLOGGED copy ({table_bytes / 2**20:,.0f} MiB) does not "
                       f"fit {SHARED_BUFFERS_SHARE:.0%} of shared_buffers = {current_setting(conn, 'shared_buffers')} "
                       "(--shared-buffers)")


def prewarm(conn: Conn) -> str:
    """Read the UNLOGGED copy into shared_buffers; how it was done."""
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        conn.execute("SELECT pg_prewarm(%s::regclass)", (UNLOGGED_TABLE,))
        return "pg_prewarm (buffer mode)"
    except psycopg.Error:
        # A TID range scan reads every page without the ring buffer a large seq scan would use.
        conn.execute("SET max_parallel_workers_per_gather = 0")
        conn.execute(f"SELECT count(*) FROM {UNLOGGED_TABLE} WHERE ctid >= '(0,0)'::tid")
        conn.execute("RESET max_parallel_workers_per_gather")
        return "a TID range scan of every page (pg_prewarm is not installed)"


def explain(conn: Conn, mode: Mode) -> an.ScanRead:
    plan = scalar(conn, EXPLAIN + count_sql(mode))
    try:
        read = an.scan_read(plan)
        an.check_plan(read, mode)
    except an.PlanError as exc:
        raise LabError(f"page-read: {exc}") from exc
    return read


def timed_count(conn: Conn, mode: Mode, rows: int) -> float:
    start = time.perf_counter()
    count = scalar(conn, count_sql(mode))
    ms = (time.perf_counter() - start) * 1000.0
    if count != rows:
        raise LabError(f"{an.LABELS[mode]}: count(*) returned {count:,}, expected {rows:,}: this is a bug, "
                       "please report it")
    return ms


def load(run: PageReadRun, admin: Conn, sessions: dict[Mode, Conn]) -> None:
    """The UNLOGGED copy (prewarmed), then each temporary table in its own session: the in-place one
    left as the load and VACUUM left it (dirty, in the pool), the file one flushed."""
    options = run.options
    block_size = int(run.server.get("block_size") or 8192)
    admin.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    admin.execute(f"CREATE SCHEMA {SCHEMA}")
    for sql in table_sql("UNLOGGED", UNLOGGED_TABLE, options.pages, options.workers):
        admin.execute(sql)
    unlogged = relation_facts(admin, UNLOGGED_TABLE, block_size)
    check_fits(run, admin, unlogged["bytes"])
    run.prewarm = prewarm(admin)
    run.table = {"rows": options.pages, "fillfactor": FILLFACTOR, "pad_bytes": PAD_BYTES, "unlogged": unlogged}
    schema = scalar(admin, "SELECT quote_ident(extnamespace::regnamespace::text) FROM pg_extension "
                           "WHERE extname = %s", (EXTENSION,))
    for mode in (Mode.IN_PLACE, Mode.FILE):
        conn = sessions[mode]
        for sql in table_sql("TEMP", TEMP_TABLE, options.pages, options.workers):
            conn.execute(sql)
        run.table[str(mode)] = relation_facts(conn, TEMP_TABLE, block_size)
        run.table[f"{mode}_dirty_local_buffers"] = int(scalar(conn, f"SELECT {schema}.pg_dirtied_local_buffers()"))
    pages = unlogged["pages"]
    run.table["pages"] = pages
    run.table["rows_per_page"] = round(options.pages / pages, 3) if pages else None

    # Before the timed rounds: the file session's flush, then every mode's first query (untimed).
    for mode in an.MODES:
        conn = sessions[mode]
        flushed: int | None = None
        flush_ms: float | None = None
        if mode is Mode.FILE:
            start = time.perf_counter()
            flushed = int(scalar(conn, f"SELECT {schema}.pg_flush_local_buffers()"))
            flush_ms = (time.perf_counter() - start) * 1000.0
        run.preparations.append(an.Preparation(str(mode), flushed, flush_ms, explain(conn, mode)))


def measure(run: PageReadRun, sessions: dict[Mode, Conn], progress: Any, task: Any) -> None:
    rows = run.options.pages
    for repetition in range(run.options.repetitions):
        shift = repetition % len(an.MODES)
        for mode in an.MODES[shift:] + an.MODES[:shift]:
            conn = sessions[mode]
            wall = timed_count(conn, mode, rows)
            run.samples.append(an.Sample(str(mode), repetition, wall, explain(conn, mode)))
            progress.advance(task)


def open_serial_session(target: TargetServer, run: PageReadRun, pool: Pool) -> Conn:
    """A serial session: pg_tempbuf.shared_pool set before its first temporary table, then the rest."""
    return open_pool_session(target, pool is Pool.SHARED, run.serial_settings)


def read_proc(pid: int, name: str, target: TargetServer) -> tuple[str | None, str]:
    """/proc/<pid>/<name> of a backend, or None and why not."""
    if target.data_dir is None:
        return None, "the server is not on this machine (its data directory is not here)"
    proc = Path("/proc") / str(pid)
    try:
        comm = (proc / "comm").read_text().strip()
        if not comm.startswith("postgres"):
            return None, f"/proc/{pid} is {comm!r}, not a postgres backend"
        return (proc / name).read_text(), ""
    except OSError as exc:
        return None, f"/proc/{pid}/{name} not readable: {exc.strerror or exc}"


def serial_count(conn: Conn, rows: int, label: str) -> float:
    """Time the serial query by the client; check what it returned."""
    start = time.perf_counter()
    row = conn.execute(SERIAL_QUERY).fetchone()
    ms = (time.perf_counter() - start) * 1000.0
    assert row is not None
    if (row[0], row[1]) != (rows, MD5_CHARS * rows):
        raise LabError(f"serial scan, {label}: returned {row[0]}, {row[1]}, expected {rows}, {MD5_CHARS * rows}: "
                       "this is a bug, please report it")
    return ms


def serial_load(run: PageReadRun, sessions: dict[Pool, Conn], target: TargetServer) -> None:
    """Each session loads the table (the pool session's pool moves into the memfd at the first statement after
    the load); then, both loaded, each reads it once (warm), EXPLAIN ANALYZE checks the plan, /proc the mapping."""
    options = run.options
    block_size = int(run.server.get("block_size") or 8192)
    run.serial_table = {"rows": options.serial_rows, "query": SERIAL_QUERY}
    for pool in POOLS:
        conn = sessions[pool]
        for sql in serial_table_sql(options.serial_rows):
            conn.execute(sql)
        facts = relation_facts(conn, SERIAL_TABLE, block_size)
        run.serial_table[str(pool)] = facts
        temp_buffers = int(scalar(conn, "SELECT pg_size_bytes(current_setting('temp_buffers'))"))
        if facts["bytes"] > temp_buffers:
            raise LabError(f"--serial-rows {options.serial_rows:,}: the serial table ({facts['bytes'] / 2**20:,.0f} "
                           f"MiB) does not fit temp_buffers = {options.serial_temp_buffers} (--serial-temp-buffers)")
    for pool in POOLS:
        conn = sessions[pool]
        label = an.POOL_LABELS[pool]
        warm_ms = serial_count(conn, options.serial_rows, label)
        try:
            scan = an.serial_scan(scalar(conn, SERIAL_EXPLAIN + SERIAL_QUERY))
            an.check_serial(scan, pool)
        except an.PlanError as exc:
            raise LabError(f"page-read: {exc}") from exc
        pid = int(scalar(conn, "SELECT pg_backend_pid()"))
        maps, why = read_proc(pid, "maps", target)
        mapping = an.pool_mapping(maps) if maps is not None else an.unchecked_mapping(why)
        status, _ = read_proc(pid, "status", target)
        memory = an.memory_kb(status) if status is not None else {}
        # A mapping where none belongs (or none where one does) is reported, not fatal: the parallel part's
        # figures stand, and the report marks the comparison void.
        run.serial_checks.append(an.SerialCheck(str(pool), pid, warm_ms, scan, mapping, memory))


def serial_measure(run: PageReadRun, sessions: dict[Pool, Conn], progress: Any, task: Any) -> None:
    rows = run.options.serial_rows
    for repetition in range(run.options.serial_repetitions):
        for position, pool in enumerate(an.pool_order(repetition)):
            wall = serial_count(sessions[pool], rows, an.POOL_LABELS[pool])
            run.serial_samples.append(an.SerialSample(str(pool), repetition, position, wall))
            progress.advance(task)


def run_serial(run: PageReadRun, target: TargetServer, progress: Any, task: Any) -> None:
    """The serial part: two sessions of their own, opened after the parallel part's are closed."""
    options = run.options
    run.serial_settings = serial_settings(options.serial_temp_buffers)
    sessions: dict[Pool, Conn] = {}
    try:
        for pool in POOLS:
            sessions[pool] = open_serial_session(target, run, pool)
        progress.update(task, description=f"page-read: serial scan, {options.serial_rows:,} rows")
        serial_load(run, sessions, target)
        serial_measure(run, sessions, progress, task)
    finally:
        for conn in sessions.values():
            conn.close()


def run_page_read(options: PageReadOptions, console: Console) -> PageReadRun:
    from pglab.experiments.page_read.report import write_raw  # writes what exists, also on failure

    run = PageReadRun(options=options, machine=machine_info(), command=command_line(), started=utc_timestamp(),
                      session_settings=session_settings(options.workers))
    run.machine["load_average_start"] = load_average()
    settings = dict(SERVER_SETTINGS)
    if options.shared_buffers is not None:
        settings["shared_buffers"] = options.shared_buffers
    with open_target(options.pg_config, options.dsn, options.checksums, require_extension=EXTENSION,
                     settings=settings) as target:
        with target.connect() as admin:
            load_extension(admin, EXTENSION)
            run.server = server_facts(admin, ("shared_buffers", "max_worker_processes", "max_parallel_workers",
                                              "shared_preload_libraries", "pg_tempbuf.read_page_cost",
                                              "pg_tempbuf.write_page_cost"))
            run.server["target"] = target.description
            run.server["temp_buffers"] = options.temp_buffers
            run.server.update(extension_library_facts(admin, EXTENSION))
            out = options.out_dir or default_out_dir(NAME, run.version_num // 10000)
            run.out_dir = prepare_out_dir(out, options.out_dir is None)
            sessions: dict[Mode, Conn] = {}
            with recorded_run(run, status_writer(run, write_raw)), lab_progress(console) as progress:
                serial_rounds = options.serial_repetitions * len(POOLS) if options.serial else 0
                task = progress.add_task("page-read: loading",
                                         total=options.repetitions * len(an.MODES) + serial_rounds)
                try:
                    for mode in an.MODES:
                        sessions[mode] = open_session(target, run, pool=mode is not Mode.FILE)
                    load(run, admin, sessions)
                    progress.update(task, description=f"page-read: {options.pages:,} pages, {options.workers} "
                                                      "workers")
                    measure(run, sessions, progress, task)
                finally:
                    for conn in sessions.values():
                        conn.close()
                    try:
                        admin.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
                    except psycopg.Error:
                        pass
                if options.serial:
                    run_serial(run, target, progress, task)
                run.machine["load_average_end"] = load_average()
                run.notes.append(f"Load average (1, 5, 15 min) at the start {run.machine['load_average_start']}, "
                                 f"at the end {run.machine['load_average_end']}, on "
                                 f"{run.machine.get('cpu_cores_logical')} logical cores: other work on the "
                                 "machine widens the spread, and hits the modes alike, round by round.")
    return run
