"""Running `pglab temp-extend`: sources, the timed CTAS grid, the traced pass, raw.csv."""

from __future__ import annotations

import csv
import math
import os
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from rich.console import Console
from rich.progress import Progress, TaskID

from pglab.cliargs import default_out_dir, prepare_out_dir
from pglab.errors import LabError
from pglab.experiments.temp_extend import iostats, trace
from pglab.experiments.temp_extend.options import (
    DISK,
    NAME,
    TEMP_BUFFER_MODES,
    TMPFS,
    SourceSize,
    TempExtendOptions,
    large_temp_buffers,
    temp_buffers_blocks,
)
from pglab.jsonio import write_json
from pglab.machine import available_memory_bytes, filesystem_of, free_disk_bytes, machine_info
from pglab.pgconfig import PgInstall
from pglab.progress import lab_progress
from pglab.report_section import command_line, utc_timestamp
from pglab.runlog import recorded_run
from pglab.server import TargetServer, open_target, server_facts
from pglab.tablespace import Tablespace, scratch_tablespace

CTAS_TABLE = "pglab_te_ctas"
CTAS_PREFIX = f"CREATE TEMP TABLE {CTAS_TABLE} AS"
PGSS = "pg_stat_statements"
MEMORY_BUDGET_SHARE = 0.7
PAGE_HEADER = 24
TUPLE_HEADER = 24  # 23 bytes, MAXALIGNed
LINE_POINTER = 4


@dataclass
class CtasRun:
    """One CREATE TEMP TABLE AS: the cell, and what was measured."""

    size: str
    rows: int
    width: int
    source_blocks: int
    temp_buffers_mode: str
    temp_buffers_blocks: int
    tablespace: str
    iteration: int  # 1..N timed; 0 for the traced pass
    traced: bool
    backend_pid: int
    elapsed_ms: float
    table_blocks: int  # the temp table's main fork after the CTAS (its file's growth)
    file_bytes: int
    file_allocated_bytes: int | None  # st_blocks * 512: less than file_bytes when sparse
    io: dict[str, float] | None = None  # pg_stat_io deltas
    statement: dict[str, float] | None = None  # pg_stat_statements deltas
    traced_counts: trace.TraceCounts | None = None

    def row(self) -> dict[str, Any]:
        io = self.io or {}
        st = self.statement or {}
        tr = self.traced_counts
        return {
            "size": self.size, "rows": self.rows, "width": self.width, "source_blocks": self.source_blocks,
            "temp_buffers_mode": self.temp_buffers_mode, "temp_buffers_blocks": self.temp_buffers_blocks,
            "tablespace": self.tablespace, "iteration": self.iteration, "traced": int(self.traced),
            "backend_pid": self.backend_pid, "elapsed_ms": round(self.elapsed_ms, 4),
            "table_blocks": self.table_blocks, "file_bytes": self.file_bytes,
            "file_allocated_bytes": self.file_allocated_bytes,
            **{f"io_{k}": io.get(k) for k in IO_KEYS},
            **{f"pgss_{k}": st.get(k) for k in PGSS_KEYS},
            "bt_extends": tr.extends if tr else None,
            "bt_extend_ms": tr.extend_ns / 1e6 if tr else None,
            "bt_writes": tr.writes if tr else None,
            "bt_write_ms": tr.write_ns / 1e6 if tr else None,
        }


IO_KEYS = (*iostats.COUNTS, *iostats.TIMES, *iostats.BYTES)
PGSS_KEYS = (*iostats.PGSS_COUNTERS, iostats.PGSS_WRITE_TIME)
RAW_COLUMNS: tuple[str, ...] = (
    "size", "rows", "width", "source_blocks", "temp_buffers_mode", "temp_buffers_blocks", "tablespace",
    "iteration", "traced", "backend_pid", "elapsed_ms", "table_blocks", "file_bytes", "file_allocated_bytes",
    *(f"io_{k}" for k in IO_KEYS), *(f"pgss_{k}" for k in PGSS_KEYS),
    "bt_extends", "bt_extend_ms", "bt_writes", "bt_write_ms",
)


@dataclass
class TempExtendResult:
    options: TempExtendOptions
    out_dir: Path | None = None
    runs: list[CtasRun] = field(default_factory=list)
    server: dict[str, Any] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)  # size label -> rows, blocks, bytes
    dropped: list[tuple[str, str]] = field(default_factory=list)
    io_source: str | None = None
    statement_stats: str = ""  # "pg_stat_statements" or why not
    trace_note: str = ""
    notes: list[str] = field(default_factory=list)
    command: str = ""
    started: str = ""
    finished: str = ""
    wall_s: float = 0.0

    @property
    def version_num(self) -> int:
        return int(self.server.get("version_num") or 0)

    @property
    def tablespaces(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.tablespace for r in self.runs))

    def meta(self, status: str, error: str | None) -> dict[str, Any]:
        o = self.options
        return {
            "status": status, "error": error, "command": self.command,
            "started": self.started, "finished": self.finished, "wall_s": self.wall_s,
            "options": {
                "sizes": [{"label": s.label, "rows": s.rows, "width": s.width} for s in o.sizes],
                "iterations": o.iterations, "small_temp_buffers": o.small_temp_buffers,
                "tmpfs_dir": str(o.tmpfs_dir) if o.tmpfs_dir else None, "trace": o.trace,
                "pg_config": str(o.pg_config) if o.pg_config else None, "dsn": o.dsn, "quick": o.quick,
            },
            "sources": self.sources,
            "sizes_dropped": [{"size": s, "why": why} for s, why in self.dropped],
            "io_source": self.io_source, "statement_stats": self.statement_stats, "trace": self.trace_note,
            "notes": self.notes, "server": self.server, "environment": self.environment, "machine": self.machine,
        }


def estimated_blocks(size: SourceSize, block_size: int) -> int:
    """Heap blocks of the source (and of its copy): MAXALIGNed tuples plus line pointers."""
    varlena_header = 1 if size.width <= 126 else 4
    tuple_bytes = TUPLE_HEADER + 4 + varlena_header + size.width
    tuple_bytes = (tuple_bytes + 7) // 8 * 8 + LINE_POINTER
    per_page = max(1, (block_size - PAGE_HEADER) // tuple_bytes)
    return math.ceil(size.rows / per_page)


def _target_settings(install: PgInstall | None) -> dict[str, str]:
    settings = {"track_io_timing": "on"}
    if install is not None and (install.pkglibdir / f"{PGSS}.so").is_file() and install.has_extension(PGSS):
        settings["shared_preload_libraries"] = PGSS
    return settings


def run_temp_extend(options: TempExtendOptions, console: Console) -> TempExtendResult:
    """Measure the grid; raw.csv and meta.json are written also when the run fails."""
    result = TempExtendResult(options=options, started=utc_timestamp(), machine=machine_info(),
                              command=command_line())

    def write_data(status: str, error: str | None) -> None:
        if result.out_dir is not None:  # known once the server's version is
            write_raw_csv(result.out_dir / "raw.csv", result.runs)
            write_json(result.out_dir / "meta.json", result.meta(status, error))

    with recorded_run(result, write_data):
        _run(result, console)
    return result


def _run(result: TempExtendResult, console: Console) -> None:
    options = result.options
    install = PgInstall.from_pg_config(options.pg_config) if options.dsn is None else None
    with ExitStack() as stack:
        target = stack.enter_context(
            open_target(options.pg_config, options.dsn, None, settings=_target_settings(install))
        )
        admin = stack.enter_context(target.connect())
        result.server = {"target": target.description, **server_facts(admin, ("track_io_timing", "temp_buffers"))}
        major = result.version_num // 10000
        result.out_dir = prepare_out_dir(options.out_dir or default_out_dir(NAME, major), options.out_dir is None)

        result.io_source = iostats.io_source(result.version_num)
        stats = iostats.statement_stats(admin, may_create=target.cluster is not None)
        result.statement_stats = PGSS if stats.available else stats.why_not

        tablespace: Tablespace | None = None
        if options.tmpfs_dir is not None:
            if target.data_dir is None:
                result.notes.append("tmpfs tablespace skipped: the server's files are not on this machine")
            else:
                tablespace = stack.enter_context(scratch_tablespace(admin, options.tmpfs_dir, target.server_user))
        _describe_environment(result, target, tablespace)

        sources = _plan_sources(result, target, console)
        if not sources:
            raise LabError("no requested size fits this machine (see the messages above)")
        binary = install.bindir / "postgres" if install else None
        why_not = trace.unavailable_reason(binary, result.version_num) if binary else (
            "the server is not a local installation we know (--dsn)")
        if not options.trace:
            why_not = "turned off (--no-trace)"
        result.trace_note = why_not or (
            "bpftrace on the server's USDT probes, one traced run per cell: buffer__read__start/done with block "
            "P_NEW (one mdextend each) and smgr__md__write__start/done, temp relations only")
        tablespaces: list[tuple[str, str | None]] = [(DISK, None)]
        if tablespace is not None:
            tablespaces.append((TMPFS, tablespace.name))

        cells = len(sources) * len(TEMP_BUFFER_MODES) * len(tablespaces)
        total = len(sources) + cells * options.iterations + (cells if why_not is None else 0)
        with lab_progress(console) as progress:
            task = progress.add_task(NAME, total=total)
            try:
                for size in sources:
                    progress.update(task, description=f"source {size.label}: {size.rows:,} rows")
                    result.sources[size.label] = _create_source(admin, size)
                    progress.advance(task)
                for iteration in range(1, options.iterations + 1):
                    order = tablespaces if iteration % 2 else list(reversed(tablespaces))
                    for size in sources:
                        _warm_source(admin, size)
                        for mode in TEMP_BUFFER_MODES:
                            for ts_label, ts_name in order:
                                progress.update(task, description=(
                                    f"{size.label} {mode} {ts_label}: iteration {iteration}/{options.iterations}"))
                                result.runs.append(_measure(result, target, stats, size, mode,
                                                            ts_label, ts_name, iteration, traced=False))
                                progress.advance(task)
                if why_not is None:
                    assert binary is not None
                    _traced_pass(result, target, stats, sources, tablespaces, binary, progress, task)
            finally:
                if target.cluster is None:
                    for size in sources:
                        admin.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(size.table_name)))


def _describe_environment(result: TempExtendResult, target: TargetServer, tablespace: Tablespace | None) -> None:
    disk_fs = filesystem_of(target.data_dir) if target.data_dir else None
    result.environment = {
        "disk": {"dir": str(target.data_dir) if target.data_dir else None, "filesystem": disk_fs},
        "tmpfs": ({"dir": str(tablespace.location), "tablespace": tablespace.name,
                   "filesystem": filesystem_of(tablespace.location)} if tablespace else None),
        "server_os_user": target.server_user.name if target.server_user else None,
    }
    if disk_fs and disk_fs.get("fstype") == "tmpfs":
        result.notes.append(f"the default tablespace ({target.data_dir}) is itself on tmpfs: "
                            "'disk' and 'tmpfs' runs hit the same kind of storage")
    if tablespace is not None:
        fstype = result.environment["tmpfs"]["filesystem"].get("fstype")
        if fstype != "tmpfs":
            result.notes.append(f"--tmpfs-dir {result.options.tmpfs_dir} is on {fstype}, not tmpfs")


def _plan_sources(result: TempExtendResult, target: TargetServer, console: Console) -> list[SourceSize]:
    """Drop sizes whose source, temp buffers and tmpfs copy would not fit in memory."""
    block_size = int(result.server.get("block_size") or 8192)
    available = available_memory_bytes()
    free_disk = free_disk_bytes(target.data_dir) if target.data_dir else None
    kept = []
    for size in result.options.sizes:
        blocks = estimated_blocks(size, block_size)
        table_bytes = blocks * block_size
        memory = table_bytes * 2 + large_temp_buffers(blocks) * block_size  # source cache, tmpfs copy, pool
        if memory > MEMORY_BUDGET_SHARE * available:
            why = (f"needs ~{memory / 2**30:.2f} GiB of memory, over {MEMORY_BUDGET_SHARE:.0%} of the "
                   f"{available / 2**30:.2f} GiB available")
        elif free_disk is not None and 2 * table_bytes > 0.9 * free_disk:
            why = f"needs ~{2 * table_bytes / 2**30:.2f} GiB of disk, {free_disk / 2**30:.2f} GiB free"
        else:
            kept.append(size)
            continue
        result.dropped.append((size.label, why))
        console.print(f"[yellow]dropping size {size.label}:[/] {why}")
    return kept


def _create_source(conn: psycopg.Connection[Any], size: SourceSize) -> dict[str, Any]:
    name = sql.Identifier(size.table_name)
    conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(name))
    conn.execute(
        sql.SQL("CREATE TABLE {} AS SELECT i AS id, repeat('x', {}) AS pad FROM generate_series(1, {}) AS i")
        .format(name, sql.Literal(size.width), sql.Literal(size.rows))
    )
    conn.execute(sql.SQL("VACUUM (FREEZE, ANALYZE) {}").format(name))  # hint bits set now, not during runs
    conn.execute("CHECKPOINT")
    row = conn.execute("SELECT pg_relation_size(%s::regclass)", (size.table_name,)).fetchone()
    assert row is not None
    block_size = int(conn.execute("SELECT current_setting('block_size')").fetchone()[0])  # type: ignore[index]
    return {"rows": size.rows, "width": size.width, "table": size.table_name,
            "blocks": int(row[0]) // block_size, "bytes": int(row[0])}


def _warm_source(conn: psycopg.Connection[Any], size: SourceSize) -> None:
    conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(size.table_name)))


def _measure(
    result: TempExtendResult,
    target: TargetServer,
    stats: iostats.StatementStats,
    size: SourceSize,
    mode: str,
    ts_label: str,
    ts_name: str | None,
    iteration: int,
    traced: bool,
) -> CtasRun:
    source = result.sources[size.label]
    blocks = temp_buffers_blocks(mode, source["blocks"], result.options.small_temp_buffers)
    # temp_buffers is fixed once a session touches a temp table: one session per CTAS.
    session_options = f"-c temp_buffers={blocks} -c track_io_timing=on"
    if ts_name is not None:
        session_options += f" -c temp_tablespaces={ts_name}"
    # Plain text (both names are ours and need no quoting), so pg_stat_statements finds it by prefix.
    ctas = f"{CTAS_PREFIX} SELECT * FROM {size.table_name}"
    with target.connect(options=session_options) as conn:
        pid = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])  # type: ignore[index]
        io_before = iostats.snapshot(conn, result.io_source) if result.io_source else None
        st_before = stats.read(conn, CTAS_PREFIX) if stats.available else None
        start = time.perf_counter_ns()
        conn.execute(ctas.encode())
        elapsed_ms = (time.perf_counter_ns() - start) / 1e6
        io = iostats.snapshot(conn, result.io_source).minus(io_before) if io_before and result.io_source else None
        statement = None
        if st_before is not None:
            after = stats.read(conn, CTAS_PREFIX)
            statement = {k: after[k] - st_before[k] for k in after}
        row = conn.execute("SELECT pg_relation_size(%s::regclass), pg_relation_filepath(%s::regclass)",
                           (CTAS_TABLE, CTAS_TABLE)).fetchone()
        assert row is not None
        file_bytes, filepath = int(row[0]), str(row[1])
        if ts_name is not None and "pg_tblspc/" not in filepath:
            raise LabError(f"the temp table did not go to tablespace {ts_name} ({filepath})")
        allocated = _allocated_bytes(target.data_dir / filepath) if target.data_dir else None
        conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(CTAS_TABLE)))
    block_size = int(result.server.get("block_size") or 8192)
    return CtasRun(
        size=size.label, rows=size.rows, width=size.width, source_blocks=source["blocks"],
        temp_buffers_mode=mode, temp_buffers_blocks=blocks, tablespace=ts_label, iteration=iteration,
        traced=traced, backend_pid=pid, elapsed_ms=elapsed_ms, table_blocks=file_bytes // block_size,
        file_bytes=file_bytes, file_allocated_bytes=allocated, io=io, statement=statement,
    )


def _allocated_bytes(first_segment: Path) -> int | None:
    """Bytes the filesystem allocated to the relation's segment files (sparse files show less)."""
    total, segment, path = 0, 0, first_segment
    try:
        while path.exists():
            total += os.stat(path).st_blocks * 512
            segment += 1
            path = first_segment.with_name(f"{first_segment.name}.{segment}")
    except OSError:
        return None
    return total if segment else None


def _traced_pass(
    result: TempExtendResult,
    target: TargetServer,
    stats: iostats.StatementStats,
    sources: list[SourceSize],
    tablespaces: list[tuple[str, str | None]],
    binary: Path,
    progress: Progress,
    task: TaskID,
) -> None:
    """One more CTAS per cell with bpftrace attached; its elapsed time is not used."""
    progress.update(task, description="attaching bpftrace")
    tracer = trace.Tracer(binary)
    traced: list[CtasRun] = []
    try:
        tracer.start()
    except trace.TraceError as exc:
        result.trace_note = f"bpftrace failed: {exc}"
        progress.advance(task, len(sources) * len(TEMP_BUFFER_MODES) * len(tablespaces))
        return
    try:
        for size in sources:
            for mode in TEMP_BUFFER_MODES:
                for ts_label, ts_name in tablespaces:
                    progress.update(task, description=f"{size.label} {mode} {ts_label}: traced")
                    traced.append(_measure(result, target, stats, size, mode, ts_label, ts_name, 0, traced=True))
                    progress.advance(task)
    finally:
        counts = tracer.stop()
    for run in traced:
        run.traced_counts = counts.get(run.backend_pid, trace.TraceCounts())
    result.runs.extend(traced)
    if traced and not any(r.traced_counts and r.traced_counts.extends for r in traced):
        result.trace_note = f"bpftrace attached but counted no extends ({trace.last_error(tracer.stderr)})"


def write_raw_csv(path: Path, runs: list[CtasRun]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=RAW_COLUMNS)
        writer.writeheader()
        for run in runs:
            writer.writerow({k: ("" if v is None else v) for k, v in run.row().items()})

