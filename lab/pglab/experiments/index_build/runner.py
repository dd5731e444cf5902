"""Running `pglab index-build`: one session per mode, then rounds of builds, interleaved.

Each mode has a session of its own, opened before any table: temp_buffers is set first (it counts from a
session's first temporary table), then pg_tempbuf.parallel_index_build, max_parallel_maintenance_workers,
maintenance_work_mem, and trace_sort with client_min_messages = debug2, whose notices say what each build asked
for, how many took part, and what ours wrote first.  No statement is prepared (pglab's connections never do), and
a build is a utility statement: nothing of one mode's plan or setting reaches another's.

With several pool sizes (--temp-buffers 8MB,1GB) every mode has a session per size.  For each table size and key
type, every round builds the index once in each session, the order rotating per round: in the session,
CREATE TABLE AS (the rows just written, as users have them), CREATE INDEX timed by the client, in the first round
the index checked (count and sum of hashes through an Index Only Scan against a Seq Scan), then DROP TABLE.

While each CREATE INDEX runs, a thread of the client samples the build's parallel workers from a connection of its
own (WorkerSampler): every SAMPLE_INTERVAL_S it lists them (pg_stat_activity.leader_pid = the session's backend)
and reads each one's RssAnon from /proc/<pid>/status, keeping each worker's highest.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg.errors import Diagnostic
from rich.console import Console

from pglab import equal_memory as em
from pglab.cliargs import default_out_dir, prepare_out_dir
from pglab.errors import LabError
from pglab.experiments.index_build import analysis as an
from pglab.experiments.index_build.analysis import KEY_COLUMNS, KEY_EXPRESSIONS, IndexBuildRun, Mode
from pglab.experiments.index_build.options import EXTENSION, NAME, SAMPLE_INTERVAL_S, IndexBuildOptions
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

BUILD_GUC = "pg_tempbuf.parallel_index_build"
SCHEMA = "pglab_index_build"  # the UNLOGGED tables; dropped at the end
TABLE = "ib_t"  # each session's table: a temporary one, or SCHEMA.ib_<mode>
MIN_WORKER_PROCESSES = 8

Conn = psycopg.Connection[Any]


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def table_name(mode: Mode) -> str:
    return TABLE if an.is_temp_mode(mode) else f"{SCHEMA}.ib_{mode}"


def session_settings(mode: Mode, temp_buffers: str, options: IndexBuildOptions) -> list[str]:
    """What a mode's session at one pool size sets, in this order, before its first table."""
    workers = 0 if mode is Mode.UNLOGGED_SERIAL else options.workers
    return [
        f"temp_buffers = '{temp_buffers}'",  # first: it counts from the first temporary table
        f"{BUILD_GUC} = {'off' if mode is Mode.TEMP_SERIAL else 'on'}",  # only temporary tables heed it
        f"max_parallel_maintenance_workers = {workers}",
        f"maintenance_work_mem = '{options.maintenance_work_mem}'",
        "trace_sort = on",  # "performsort of worker N" per participant
        # The build's DEBUG1 line (the workers it asks for), and pg_tempbuf's DEBUG2 line (what ours wrote first).
        "client_min_messages = debug2",
    ]


def table_sql(mode: Mode, rows: int, parallel_workers: int | None) -> str:
    """The rows every mode builds on: (id int, s text) = (g, md5(g::text)), written now."""
    kind = "TEMP" if an.is_temp_mode(mode) else "UNLOGGED"
    storage = f" WITH (parallel_workers = {parallel_workers})" if parallel_workers is not None else ""
    return (f"CREATE {kind} TABLE {table_name(mode)}{storage} AS SELECT {KEY_EXPRESSIONS['int']} AS "
            f"{KEY_COLUMNS['int']}, {KEY_EXPRESSIONS['text']} AS {KEY_COLUMNS['text']} "
            f"FROM generate_series(1, {rows}) g")


def index_name(mode: Mode) -> str:
    """The index's name, qualified as the table is (an index lives in its table's schema)."""
    name = f"ib_{mode}_idx"
    return name if an.is_temp_mode(mode) else f"{SCHEMA}.{name}"


def index_sql(mode: Mode, key: str) -> str:
    return f"CREATE INDEX {index_name(mode).rpartition('.')[2]} ON {table_name(mode)} ({KEY_COLUMNS[key]})"


def check_sql(mode: Mode, key: str) -> str:
    return f"SELECT count(*), sum(hashtext({KEY_COLUMNS[key]}::text)) FROM {table_name(mode)}"


# The check's two reads, each forced by settings local to its transaction: core's serial plans (no workers, not
# pg_tempbuf's scans), the index read as an Index Only Scan, the table as a Seq Scan.
CHECK_INDEX_SETTINGS = ("enable_seqscan = off", "enable_bitmapscan = off", "enable_indexscan = on",
                        "enable_indexonlyscan = on")
CHECK_SEQ_SETTINGS = ("enable_seqscan = on", "enable_bitmapscan = off", "enable_indexscan = off",
                      "enable_indexonlyscan = off")
CHECK_COMMON_SETTINGS = ("max_parallel_workers_per_gather = 0", "pg_tempbuf.parallel_scan = off",
                         "pg_tempbuf.index_scan = off")


def scalar(conn: Conn, sql: str, params: tuple[Any, ...] = ()) -> Any:
    row = conn.execute(sql, params).fetchone()
    assert row is not None
    return row[0]


class Session:
    """A mode's connection at one pool size, and the notices of its last statements (message, detail)."""

    def __init__(self, target: TargetServer, mode: Mode, temp_buffers: str, settings: list[str]) -> None:
        self.mode = mode
        self.temp_buffers = temp_buffers
        self.notices: list[tuple[str, str | None]] = []
        self.conn: Conn = target.connect()
        self.pid: int = self.conn.info.backend_pid
        try:
            self.conn.execute("SET client_min_messages = warning")
            self.conn.execute(f"LOAD '{EXTENSION}'")  # no-op when preloaded; makes --dsn servers work too
            if current_setting(self.conn, BUILD_GUC) is None:
                raise LabError(f"this {EXTENSION} has no {BUILD_GUC} setting: install a build with parallel index "
                               "builds (make install PG_CONFIG=...)")
            for setting in settings:
                self.conn.execute(f"SET {setting}")
            self.conn.add_notice_handler(self._notice)
        except BaseException:
            self.conn.close()
            raise

    def _notice(self, diag: Diagnostic) -> None:
        self.notices.append((diag.message_primary or "", diag.message_detail))

    def close(self) -> None:
        self.conn.close()


# The parallel workers of a session's statement (leader_pid: PostgreSQL 13 on).  pg_stat_activity's own function,
# without the view's joins to pg_database and pg_authid: a sixth of the view's server time (25 us a look, against
# 165), asked every SAMPLE_INTERVAL_S while a build runs.
WORKERS_SQL = ("SELECT pid FROM pg_stat_get_activity(NULL) WHERE backend_type = 'parallel worker' "
               "AND leader_pid = %s")
PROC = Path("/proc")


def proc_status(pid: int) -> str | None:
    """/proc/<pid>/status, or None where it cannot be read (gone, or hidden)."""
    try:
        return (PROC / str(pid) / "status").read_text()
    except OSError:
        return None


def is_postgres(pid: int) -> bool:
    """Whether /proc/<pid> is a process of PostgreSQL's (not another machine's pid that this one reuses)."""
    try:
        return (PROC / str(pid) / "comm").read_text().strip().startswith("postgres")
    except OSError:
        return False


class Watch:
    """One build's sampling: a thread listing the session's parallel workers and reading their RssAnon every
    interval, until stopped."""

    def __init__(self, conn: Conn, leader_pid: int, interval_s: float) -> None:
        self.conn = conn
        self.leader_pid = leader_pid
        self.interval_s = interval_s
        self.tracker = an.PeakTracker()
        self.checked: dict[int, bool] = {}  # pid -> whether it is a postgres process (checked once per worker)
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="index-build worker memory", daemon=True)
        self.thread.start()

    def _rss_anon(self, pid: int) -> int | None:
        if pid not in self.checked:
            self.checked[pid] = is_postgres(pid)
        status = proc_status(pid) if self.checked[pid] else None
        return None if status is None else an.rss_anon_kb(status)

    def _loop(self) -> None:
        try:
            while True:
                began = time.perf_counter()
                pids = [int(row[0]) for row in self.conn.execute(WORKERS_SQL, (self.leader_pid,), prepare=True)]
                self.tracker.sample([(pid, self._rss_anon(pid)) for pid in pids])
                if self.stop.wait(max(0.0, self.interval_s - (time.perf_counter() - began))):
                    return
        except BaseException as exc:  # handed to the main thread by finish()
            self.error = exc

    def finish(self) -> an.WorkerMemory:
        self.stop.set()
        self.thread.join()
        if self.error is not None:
            raise LabError(f"sampling the build's workers failed: {self.error}") from self.error
        return self.tracker.result()


def worker_memory_unavailable(target: TargetServer, enabled: bool, version_num: int, probe_pid: int) -> str | None:
    """Why the workers' memory cannot be sampled (probe_pid: a session's backend), or None."""
    if not enabled:
        return "--no-worker-memory"
    if version_num < 130000:
        return "pg_stat_activity has no leader_pid before PostgreSQL 13"
    if target.data_dir is None:
        return "the server is not on this machine (its data directory is not here): its /proc is not readable"
    if not is_postgres(probe_pid):
        return f"/proc/{probe_pid} (a session's backend) is not readable as a postgres process"
    status = proc_status(probe_pid)
    if status is None or an.rss_anon_kb(status) is None:
        return f"/proc/{probe_pid}/status (a session's backend) has no readable RssAnon line"
    return None


class WorkerSampler:
    """The connection that samples each build's parallel workers, or why their memory cannot be read here."""

    def __init__(self, target: TargetServer, enabled: bool, version_num: int, probe_pid: int) -> None:
        self.conn: Conn | None = None
        self.unavailable = worker_memory_unavailable(target, enabled, version_num, probe_pid)
        if self.unavailable is None:
            self.conn = target.connect()

    def watch(self, leader_pid: int) -> Watch | None:
        """Start sampling the workers of leader_pid's statement; None where they cannot be read."""
        return None if self.conn is None else Watch(self.conn, leader_pid, SAMPLE_INTERVAL_S)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def read_check(conn: Conn, sql: str, settings: tuple[str, ...]) -> tuple[int, int | None, str]:
    """count and sum of the check, and its plan's scan node, under settings local to one transaction."""
    with conn.transaction():
        for setting in (*CHECK_COMMON_SETTINGS, *settings):
            conn.execute(f"SET LOCAL {setting}")
        node = an.scan_node(scalar(conn, "EXPLAIN (FORMAT JSON) " + sql))
        row = conn.execute(sql).fetchone()
    assert row is not None
    return int(row[0]), None if row[1] is None else int(row[1]), node


def check_index(conn: Conn, mode: Mode, key: str) -> an.IndexCheck:
    sql = check_sql(mode, key)
    index_count, index_sum, index_node = read_check(conn, sql, CHECK_INDEX_SETTINGS)
    seq_count, seq_sum, seq_node = read_check(conn, sql, CHECK_SEQ_SETTINGS)
    return an.IndexCheck(index_count, index_sum, seq_count, seq_sum, index_node, seq_node)


def build_once(run: IndexBuildRun, session: Session, sampler: WorkerSampler, rows: int, key: str, repetition: int,
               position: int) -> None:
    """Write the table, time CREATE INDEX (its workers sampled meanwhile), check the index in the first round, drop
    the table."""
    conn, mode = session.conn, session.mode
    block_size = int(run.server.get("block_size") or 8192)
    conn.execute(f"DROP TABLE IF EXISTS {table_name(mode)}")
    start = time.perf_counter()
    conn.execute(table_sql(mode, rows, run.options.table_parallel_workers))
    load_ms = (time.perf_counter() - start) * 1000.0
    table_bytes = int(scalar(conn, "SELECT pg_relation_size(%s::regclass)", (table_name(mode),)))
    session.notices.clear()
    watch = sampler.watch(session.pid)
    try:
        start = time.perf_counter()
        conn.execute(index_sql(mode, key))
        ms = (time.perf_counter() - start) * 1000.0
    finally:
        memory = watch.finish() if watch is not None else None
    trace = an.parse_trace(session.notices)
    index_bytes = int(scalar(conn, "SELECT pg_relation_size(%s::regclass)", (index_name(mode),)))
    check = check_index(conn, mode, key) if repetition == 0 else None
    build = an.Build(temp_buffers=session.temp_buffers, rows=rows, key=key, mode=str(mode), repetition=repetition,
                     position=position, ms=ms, load_ms=load_ms, trace=trace, table_pages=table_bytes // block_size,
                     index_bytes=index_bytes, check=check, memory=memory)
    run.builds.append(build)
    conn.execute(f"DROP TABLE {table_name(mode)}")
    if check is not None:
        problem = check.problem(rows)
        if problem is not None:
            raise LabError(f"{an.LABELS[mode]}, temp_buffers = {session.temp_buffers}, {rows:,} rows, {key} key: "
                           f"the index built is wrong: {problem}: this is a bug, please report it")


def measure(run: IndexBuildRun, sessions: list[Session], sampler: WorkerSampler, progress: Any, task: Any) -> None:
    """Every round builds once in each session (a mode at a pool size), the order rotating per round."""
    options = run.options
    for rows in options.rows:
        for key in options.keys:
            for repetition in range(options.repetitions):
                progress.update(task, description=f"index-build: {rows:,} rows, {key} key, round "
                                                  f"{repetition + 1}/{options.repetitions}")
                shift = repetition % len(sessions)
                for position, session in enumerate(sessions[shift:] + sessions[:shift]):
                    build_once(run, session, sampler, rows, key, repetition, position)
                    progress.advance(task)


def server_sizes(conn: Conn, options: IndexBuildOptions) -> dict[str, Any]:
    """What core's rule reads, in its units: min_parallel_table_scan_size in pages, maintenance_work_mem in kB;
    and each temp_buffers in bytes."""
    block_size = int(current_setting(conn, "block_size") or 8192)
    return {
        "min_parallel_table_scan_pages": int(scalar(
            conn, "SELECT pg_size_bytes(current_setting('min_parallel_table_scan_size'))")) // block_size,
        "maintenance_work_mem_kb": int(scalar(conn, "SELECT pg_size_bytes(%s)", (options.maintenance_work_mem,)))
        // 1024,
        "temp_buffers_bytes": {size: int(scalar(conn, "SELECT pg_size_bytes(%s)", (size,)))
                               for size in options.temp_buffers},
    }


def run_index_build(options: IndexBuildOptions, console: Console) -> IndexBuildRun:
    from pglab.experiments.index_build.report import write_raw  # writes what exists, also on failure

    modes = tuple(m for m in an.MODES if options.unlogged_serial or m is not Mode.UNLOGGED_SERIAL)
    run = IndexBuildRun(options=options, machine=machine_info(), command=command_line(), started=utc_timestamp(),
                        modes=modes, session_settings={size: {str(m): session_settings(m, size, options) for m in modes}
                                                       for size in options.temp_buffers})
    run.machine["load_average_start"] = load_average()
    processes = str(max(MIN_WORKER_PROCESSES, options.workers + 1))
    settings = em.server_settings({"shared_preload_libraries": EXTENSION, "max_worker_processes": processes,
                                   "max_parallel_workers": processes},
                                  options.shared_buffers, options.temp_buffers, options.dsn)
    with open_target(options.pg_config, options.dsn, options.checksums, require_extension=EXTENSION,
                     settings=settings) as target:
        with target.connect() as admin:
            load_extension(admin, EXTENSION)
            run.server = server_facts(admin, ("shared_buffers", "max_worker_processes", "max_parallel_workers",
                                              "shared_preload_libraries", "min_parallel_table_scan_size",
                                              "parallel_leader_participation", "pg_tempbuf.shared_pool",
                                              BUILD_GUC))
            run.server["target"] = target.description
            run.server.update(server_sizes(admin, options))
            run.server.update(extension_library_facts(admin, EXTENSION))
            out = options.out_dir or default_out_dir(NAME, run.version_num // 10000)
            run.out_dir = prepare_out_dir(out, options.out_dir is None)
            sessions: list[Session] = []
            sampler: WorkerSampler | None = None
            with recorded_run(run, status_writer(run, write_raw)), lab_progress(console) as progress:
                task = progress.add_task("index-build: starting",
                                         total=len(options.rows) * len(options.keys) * options.repetitions * len(modes)
                                         * len(options.temp_buffers))
                try:
                    admin.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
                    admin.execute(f"CREATE SCHEMA {SCHEMA}")
                    for size in options.temp_buffers:
                        for mode in modes:
                            sessions.append(Session(target, mode, size, run.session_settings[size][str(mode)]))
                    sampler = WorkerSampler(target, options.worker_memory, run.version_num, sessions[0].pid)
                    run.worker_memory_unavailable = sampler.unavailable
                    measure(run, sessions, sampler, progress, task)
                finally:
                    if sampler is not None:
                        sampler.close()
                    for session in sessions:
                        session.close()
                    try:
                        admin.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
                    except psycopg.Error:
                        pass
                run.machine["load_average_end"] = load_average()
                run.notes.append(f"Load average (1, 5, 15 min) at the start {run.machine['load_average_start']}, "
                                 f"at the end {run.machine['load_average_end']}, on "
                                 f"{run.machine.get('cpu_cores_logical')} logical cores: other work on the "
                                 "machine widens the spread, and hits the modes alike, round by round.")
    return run
