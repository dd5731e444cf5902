"""Running the flush-cost experiment: server, sizes, sessions, raw.csv."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from rich.console import Console
from rich.progress import Progress, TaskID

import pglab
from pglab.errors import LabError
from pglab.experiments.flush_cost import options as opt
from pglab.experiments.flush_cost.options import FlushCostOptions, SizePlan, plan_sizes, pool_blocks
from pglab.experiments.flush_cost.records import PhaseRecord, RawCsvWriter
from pglab.experiments.flush_cost.steps import PhaseMeasurement, SizeSession
from pglab.jsonio import write_json
from pglab.machine import available_memory_bytes, filesystem_of, free_disk_bytes, machine_info
from pglab.progress import lab_progress
from pglab.rawio import can_drop_page_cache, drop_page_cache, measure_raw_io
from pglab.report_section import utc_timestamp
from pglab.runlog import recorded_run
from pglab.server import TargetServer, first_line, open_target
from pglab.server import server_facts as shared_server_facts
from pglab.tablespace import Tablespace, scratch_tablespace

EXTENSION = "pg_tempbuf"
EXTENSION_SETTINGS = ("pg_tempbuf.write_page_cost", "pg_tempbuf.buffer_scan_cost", "pg_tempbuf.read_page_cost")


@dataclass
class FlushCostRun:
    """Everything measured in one run, for the report."""

    options: FlushCostOptions
    records: list[PhaseRecord] = field(default_factory=list)
    plan: SizePlan | None = None
    server: dict[str, Any] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)  # where files went, cache state, ...
    started: str = ""
    finished: str = ""
    wall_s: float = 0.0

    @property
    def block_size(self) -> int:
        return int(self.server.get("block_size", 8192))

    def meta(self, status: str, error: str | None = None) -> dict[str, Any]:
        options = {
            "sizes_requested": list(self.options.sizes),
            "iterations": self.options.iterations,
            "evict": str(self.options.evict),
            "pg_config": str(self.options.pg_config) if self.options.pg_config else None,
            "dsn": self.options.dsn,
            "checksums": self.options.checksums,
            "tablespace_dir": str(self.options.tablespace_dir) if self.options.tablespace_dir else None,
            "cold_cache": self.options.cold_cache,
            "quick": self.options.quick,
        }
        return {
            "status": status,
            "error": error,
            "pglab_version": pglab.__version__,
            "command": sys.argv,
            "started": self.started,
            "finished": self.finished,
            "wall_s": self.wall_s,
            "options": options,
            "sizes_measured": list(self.plan.kept) if self.plan else [],
            "sizes_dropped": [{"size": s, "why": why} for s, why in self.plan.dropped] if self.plan else [],
            "temp_buffers_by_size": {s: pool_blocks(s) for s in self.plan.kept} if self.plan else {},
            "server": self.server,
            "environment": self.environment,
            "machine": self.machine,
        }


def ensure_extension(conn: psycopg.Connection[Any], where: str) -> tuple[str, bool]:
    """CREATE EXTENSION pg_tempbuf if needed; a clear error if the server lacks it.
    Returns (its version, whether we created it)."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = %s", (EXTENSION,)).fetchone()
    if row:
        return str(row[0]), False
    available = conn.execute(
        "SELECT 1 FROM pg_available_extensions WHERE name = %s", (EXTENSION,)
    ).fetchone()
    if not available:
        raise LabError(
            f"extension {EXTENSION} is not installed on the {where}; build and install it with "
            f"`make install PG_CONFIG=<that server's pg_config>`"
        )
    try:
        conn.execute(sql.SQL("CREATE EXTENSION {}").format(sql.Identifier(EXTENSION)))
    except psycopg.Error as exc:
        raise LabError(f"CREATE EXTENSION {EXTENSION} failed: {first_line(exc)}") from exc
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = %s", (EXTENSION,)).fetchone()
    assert row is not None
    return str(row[0]), True


def drop_extension(conn: psycopg.Connection[Any]) -> None:
    conn.execute(sql.SQL("DROP EXTENSION IF EXISTS {}").format(sql.Identifier(EXTENSION)))


def server_facts(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    return shared_server_facts(conn, EXTENSION_SETTINGS)


def run_flush_cost(options: FlushCostOptions, console: Console) -> FlushCostRun:
    """Measure every planned size and return the records (raw.csv is written as we go).

    meta.json is written here too, also when the run fails, so a failed run says why."""
    if options.cold_cache and not can_drop_page_cache():
        raise LabError("--cold-cache needs root and a writable /proc/sys/vm/drop_caches")
    run = FlushCostRun(options=options, started=utc_timestamp(), machine=machine_info())
    options.out_dir.mkdir(exist_ok=True)

    def write_meta(status: str, error: str | None) -> None:
        write_json(options.out_dir / "meta.json", run.meta(status, error))

    with recorded_run(run, write_meta):
        _run(run, console)
    return run


def _run(run: FlushCostRun, console: Console) -> None:
    options = run.options
    with ExitStack() as stack:
        target = stack.enter_context(
            open_target(options.pg_config, options.dsn, options.checksums, require_extension=EXTENSION)
        )
        admin = stack.enter_context(target.connect())
        extversion, created = ensure_extension(admin, target.description)
        if created and target.cluster is None:
            stack.callback(drop_extension, admin)  # leave an existing server as we found it
        run.server = {"target": target.description, "extension_version": extversion, **server_facts(admin)}

        tablespace: Tablespace | None = None
        if options.tablespace_dir is not None:
            tablespace = stack.enter_context(
                scratch_tablespace(admin, options.tablespace_dir, target.server_user)
            )
        temp_files_dir = tablespace.location if tablespace else target.data_dir
        raw_dir = tablespace.location if tablespace else target.scratch_dir
        run.environment = _environment(target, tablespace, temp_files_dir, raw_dir, options)

        run.plan = plan_sizes(
            options.sizes,
            run.block_size,
            options.evict,
            available_memory_bytes(),
            free_disk_bytes(temp_files_dir) if temp_files_dir else None,
        )
        for size, why in run.plan.dropped:
            console.print(f"[yellow]dropping size {size} blocks:[/] {why}")
        if not run.plan.kept:
            raise LabError("no requested size fits this machine (see the messages above)")

        _measure_all(run, target, tablespace, raw_dir, console)


def _environment(
    target: TargetServer,
    tablespace: Tablespace | None,
    temp_files_dir: Path | None,
    raw_dir: Path | None,
    options: FlushCostOptions,
) -> dict[str, Any]:
    return {
        "temp_files_dir": str(temp_files_dir) if temp_files_dir else None,
        "temp_files_filesystem": filesystem_of(temp_files_dir) if temp_files_dir else None,
        "tablespace": {"name": tablespace.name, "location": str(tablespace.location)} if tablespace else None,
        "server_os_user": target.server_user.name if target.server_user else None,
        "read_cache": _read_cache_note(options.cold_cache, temp_files_dir),
        "raw_io": (
            {
                "dir": str(raw_dir),
                "method": "os.pwrite/os.preadv of 8 KiB blocks over a file pre-extended with zero blocks, no fsync",
                "measured": [opt.RAW_WRITE, opt.RAW_READ] + ([opt.RAW_READ_COLD] if options.cold_cache else []),
            }
            if raw_dir else {"measured": [], "why_not": "the server's files are not on this machine"}
        ),
    }


def _read_cache_note(cold_cache: bool, temp_files_dir: Path | None) -> str:
    if not cold_cache:
        return "warm: reads may be served from the OS page cache"
    fs = filesystem_of(temp_files_dir) if temp_files_dir else {}
    if fs.get("fstype") == "tmpfs":
        return "cold requested, but the temp files are on tmpfs, whose pages cannot be dropped: reads stay in memory"
    return "cold: OS page cache dropped (after sync) before each read phase"


def _measure_all(
    run: FlushCostRun,
    target: TargetServer,
    tablespace: Tablespace | None,
    raw_dir: Path | None,
    console: Console,
) -> None:
    options = run.options
    assert run.plan is not None
    progress = lab_progress(console)
    with RawCsvWriter(options.out_dir / "raw.csv") as raw_csv, progress:
        task = progress.add_task("flush-cost", total=len(run.plan.kept) * options.iterations)

        def record(measurement: PhaseMeasurement | PhaseRecord) -> None:
            rec = measurement if isinstance(measurement, PhaseRecord) else PhaseRecord.from_measurement(measurement)
            run.records.append(rec)
            raw_csv.write(rec)

        for size in run.plan.kept:
            _measure_size(run, size, target, tablespace, raw_dir, progress, task, record)
            raw_csv.flush()


def _measure_size(
    run: FlushCostRun,
    size: int,
    target: TargetServer,
    tablespace: Tablespace | None,
    raw_dir: Path | None,
    progress: Progress,
    task: TaskID,
    record: Callable[[PhaseMeasurement | PhaseRecord], None],
) -> None:
    options = run.options
    # temp_buffers is fixed once the session first touches a temp table: set it at connect.
    session_options = f"-c temp_buffers={pool_blocks(size)}"
    if tablespace is not None:
        session_options += f" -c temp_tablespaces={tablespace.name}"
    before_read = drop_page_cache if options.cold_cache else (lambda: None)
    with target.connect(options=session_options) as conn:
        session = SizeSession(conn, size, options.evict, before_read=before_read)
        session.prepare()
        if tablespace is not None and "pg_tblspc/" not in session.table_filepath():
            raise LabError(f"temp tables do not go to tablespace {tablespace.name}")
        for iteration in range(1, options.iterations + 1):
            label = f"{size} blocks, iteration {iteration}/{options.iterations}"

            def on_phase(phase: str, label: str = label) -> None:
                progress.update(task, description=f"{label}: {phase}")

            session.run_iteration(iteration, on_phase, record)
            if raw_dir is not None:
                on_phase("raw I/O")
                raw = measure_raw_io(raw_dir, size, session.block_size, cold_read=options.cold_cache)
                record(PhaseRecord(size=size, iteration=iteration, phase=opt.RAW_WRITE, ms=raw.write_ms))
                record(PhaseRecord(size=size, iteration=iteration, phase=opt.RAW_READ, ms=raw.read_ms))
                if raw.read_cold_ms is not None:
                    record(PhaseRecord(size=size, iteration=iteration, phase=opt.RAW_READ_COLD, ms=raw.read_cold_ms))
            progress.advance(task)

