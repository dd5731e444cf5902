"""Running `pglab sequence-cache`: sequences, pgbench over the client grid, perf runs, raw data."""

from __future__ import annotations

import csv
import dataclasses
import os
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from rich.console import Console

from pglab.cliargs import default_out_dir, prepare_out_dir
from pglab.errors import LabError
from pglab.experiments.sequence_cache import perf, pgbench
from pglab.experiments.sequence_cache.options import (
    NAME,
    UNLOGGED_SEQUENCES_SINCE,
    Kind,
    PerfMode,
    SequenceCacheOptions,
    Variant,
)
from pglab.jsonio import write_json
from pglab.machine import machine_info
from pglab.pgconfig import PgInstall
from pglab.progress import lab_progress
from pglab.report_section import command_line, utc_timestamp
from pglab.runlog import recorded_run
from pglab.server import TargetServer, open_target, server_facts

BULK_FUNCTION = "pglab_seq_bulk"
# The article's seq_bulk, with the loop count as a second argument.
BULK_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {BULK_FUNCTION}(seq_name text, calls int) RETURNS bigint AS $body$
declare
      ind int;
      s bigint;
begin
      for ind in 1..calls
      loop
            s := nextval(seq_name);
      end loop;
      return s;
end;
$body$
LANGUAGE PLPGSQL
SECURITY DEFINER
"""
APPLICATION_NAME = "pgbench"
PIDS_WAIT_S = 5.0


@dataclass
class BenchPoint:
    """One pgbench run of the grid."""

    variant: str
    cache: int
    unlogged: bool
    kind: str
    clients: int
    duration_s: int
    calls_per_transaction: int
    tps: float
    nextval_per_s: float
    transactions: int
    failed: int
    latency_ms: float | None


@dataclass
class PerfPoint:
    """One extra pgbench run with perf sampling its backends."""

    variant: str
    kind: str
    clients: int
    tps: float
    backends: int
    samples: int
    kernel_samples: int
    unknown_samples: int
    spinlock_samples: int
    lwlock_samples: int
    spinlock_share: float | None
    lwlock_share: float | None
    top_symbols: list[tuple[str, float]]
    perf_data: str


BENCH_COLUMNS = tuple(f.name for f in dataclasses.fields(BenchPoint))
PERF_COLUMNS = tuple(f.name for f in dataclasses.fields(PerfPoint))


@dataclass
class SequenceCacheResult:
    options: SequenceCacheOptions
    out_dir: Path | None = None
    points: list[BenchPoint] = field(default_factory=list)
    perf_points: list[PerfPoint] = field(default_factory=list)
    variants: tuple[Variant, ...] = ()
    server: dict[str, Any] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    pgbench: str = ""
    perf_note: str = ""
    notes: list[str] = field(default_factory=list)
    command: str = ""
    started: str = ""
    finished: str = ""
    wall_s: float = 0.0

    @property
    def version_num(self) -> int:
        return int(self.server.get("version_num") or 0)

    def meta(self, status: str, error: str | None) -> dict[str, Any]:
        o = self.options
        return {
            "status": status, "error": error, "command": self.command,
            "started": self.started, "finished": self.finished, "wall_s": self.wall_s,
            "options": {
                "variants": [dataclasses.asdict(v) for v in o.variants], "kinds": [str(k) for k in o.kinds],
                "clients": list(o.clients), "duration_s": o.duration_s, "bulk_calls": o.bulk_calls,
                "perf": str(o.perf), "pg_config": str(o.pg_config) if o.pg_config else None, "dsn": o.dsn,
                "quick": o.quick, "cores": o.cores, "perf_kinds": [str(k) for k in o.perf_kinds],
            },
            "variants_measured": [v.name for v in self.variants],
            "pgbench": self.pgbench, "perf": self.perf_note, "notes": self.notes,
            "server": self.server, "machine": self.machine,
        }


def run_sequence_cache(options: SequenceCacheOptions, console: Console) -> SequenceCacheResult:
    """Measure the grid; raw.csv, perf.csv and meta.json are written also when the run fails."""
    result = SequenceCacheResult(options=options, started=utc_timestamp(), machine=machine_info(),
                                 command=command_line())

    def write_data(status: str, error: str | None) -> None:
        if result.out_dir is not None:  # known once the server's version is
            write_points(result)
            write_json(result.out_dir / "meta.json", result.meta(status, error))

    with recorded_run(result, write_data):
        _run(result, console)
    return result


def _run(result: SequenceCacheResult, console: Console) -> None:
    options = result.options
    # pgbench comes from the measured installation (with --dsn: from --pg-config's default).
    install = PgInstall.from_pg_config(options.pg_config)
    result.pgbench = str(install.program("pgbench"))
    with ExitStack() as stack:
        target = stack.enter_context(open_target(options.pg_config, options.dsn, None))
        admin = stack.enter_context(target.connect())
        result.server = {"target": target.description, **server_facts(admin)}
        result.out_dir = prepare_out_dir(
            options.out_dir or default_out_dir(NAME, result.version_num // 10000), options.out_dir is None)
        result.variants = _usable_variants(result)
        if not result.variants:
            raise LabError("no sequence variant can be measured on this server (see the notes above)")
        _create_objects(admin, result.variants)
        if target.cluster is None:
            stack.callback(_drop_objects, admin, result.variants)
        scripts = _write_scripts(result.out_dir / "scripts", result.variants, options.bulk_calls)
        postmaster = _perf_target(result, target)
        env = {**os.environ, **(target.cluster.env() if target.cluster else {})}

        perf_clients = {PerfMode.MAX: options.clients[-1:], PerfMode.ALL: options.clients,
                        PerfMode.OFF: ()}[options.perf] if postmaster is not None else ()
        perf_kinds = [k for k in options.kinds if k in options.perf_kinds]
        total = len(result.variants) * (len(options.kinds) * len(options.clients) + len(perf_kinds) * len(perf_clients))
        with lab_progress(console) as progress:
            task = progress.add_task(NAME, total=total)
            for kind in options.kinds:
                for clients in options.clients:
                    for variant in result.variants:
                        progress.update(task, description=f"{kind} {variant.name}: {clients} clients")
                        result.points.append(_bench(result, scripts[(variant.name, kind)], variant, kind,
                                                    clients, env))
                        progress.advance(task)
            if postmaster is not None:
                (result.out_dir / "perf").mkdir(exist_ok=True)
            for kind in perf_kinds:
                for variant in result.variants:
                    for clients in perf_clients:
                        assert postmaster is not None
                        progress.update(task, description=f"perf: {kind} {variant.name}, {clients} clients")
                        point = _perf_run(result, admin, postmaster, scripts[(variant.name, kind)],
                                          variant, kind, clients, env)
                        if point is not None:
                            result.perf_points.append(point)
                        progress.advance(task)


def _usable_variants(result: SequenceCacheResult) -> tuple[Variant, ...]:
    usable = []
    for variant in result.options.variants:
        if variant.unlogged and result.version_num < UNLOGGED_SEQUENCES_SINCE:
            result.notes.append(f"{variant.name} skipped: UNLOGGED sequences need PostgreSQL 15 or later")
            continue
        usable.append(variant)
    return tuple(usable)


def _create_objects(conn: psycopg.Connection[Any], variants: tuple[Variant, ...]) -> None:
    _drop_objects(conn, variants)
    for variant in variants:
        conn.execute(variant.ddl.encode())
    conn.execute(BULK_FUNCTION_SQL.encode())


def _drop_objects(conn: psycopg.Connection[Any], variants: tuple[Variant, ...]) -> None:
    for variant in variants:
        conn.execute(sql.SQL("DROP SEQUENCE IF EXISTS {}").format(sql.Identifier(variant.sequence)))
    conn.execute(sql.SQL("DROP FUNCTION IF EXISTS {}(text, int)").format(sql.Identifier(BULK_FUNCTION)))


def _write_scripts(directory: Path, variants: tuple[Variant, ...], bulk_calls: int) -> dict[tuple[str, Kind], Path]:
    """The article's two transactions, one pgbench script per sequence."""
    directory.mkdir(exist_ok=True)
    scripts = {}
    for variant in variants:
        bodies = {
            Kind.SINGLE: f"SELECT nextval('{variant.sequence}');",
            Kind.BULK: f"SELECT {BULK_FUNCTION}('{variant.sequence}', {bulk_calls});",
        }
        for kind, body in bodies.items():
            path = directory / f"{kind}-{variant.name}.sql"
            path.write_text(f"BEGIN;\n{body}\nEND;\n", encoding="utf-8")
            path.chmod(0o644)
            scripts[(variant.name, kind)] = path
    return scripts


def _calls(kind: Kind, bulk_calls: int) -> int:
    return bulk_calls if kind is Kind.BULK else 1


def _bench(result: SequenceCacheResult, script: Path, variant: Variant, kind: Kind, clients: int,
           env: dict[str, str]) -> BenchPoint:
    options = result.options
    args = pgbench.command(Path(result.pgbench), script, clients, options.duration_s, options.dsn)
    outcome = pgbench.finish(pgbench.start(args, env), options.duration_s)
    calls = _calls(kind, options.bulk_calls)
    return BenchPoint(
        variant=variant.name, cache=variant.cache, unlogged=variant.unlogged, kind=str(kind), clients=clients,
        duration_s=options.duration_s, calls_per_transaction=calls, tps=outcome.tps,
        nextval_per_s=outcome.tps * calls, transactions=outcome.transactions, failed=outcome.failed,
        latency_ms=outcome.latency_ms,
    )


def _perf_target(result: SequenceCacheResult, target: TargetServer) -> int | None:
    """The postmaster perf attaches to, or None with the reason in perf_note."""
    if result.options.perf is PerfMode.OFF:
        result.perf_note = "turned off (--perf off)"
        return None
    why = perf.unavailable_reason()
    if why is None and target.data_dir is None:
        why = "the server is not on this machine (or its data directory is hidden)"
    pid = perf.postmaster_pid(target.data_dir) if target.data_dir else None
    if why is None and pid is None:
        why = f"cannot read {target.data_dir}/postmaster.pid (perf needs the postmaster's pid)"
    if why is not None:
        result.perf_note = f"not measured: {why}"
        return None
    result.perf_note = (f"perf record -e cpu-clock -F {perf.FREQUENCY_HZ} on the postmaster (pid {pid}) and the "
                        "backends it forks, narrowed to pgbench's connections")
    return pid


def _pgbench_pids(conn: psycopg.Connection[Any]) -> set[int]:
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND pid <> pg_backend_pid()",
        (APPLICATION_NAME,),
    ).fetchall()
    return {int(r[0]) for r in rows}


def _perf_run(result: SequenceCacheResult, admin: psycopg.Connection[Any], postmaster: int, script: Path,
              variant: Variant, kind: Kind, clients: int, env: dict[str, str]) -> PerfPoint | None:
    options = result.options
    assert result.out_dir is not None
    data = result.out_dir / "perf" / f"{kind}-{variant.name}-c{clients}.data"
    recorder = perf.PerfRecorder(postmaster, data)
    before = _pgbench_pids(admin)
    try:
        recorder.start()
    except perf.PerfError as exc:
        result.notes.append(f"perf for {kind} {variant.name} at {clients} clients: {exc}")
        return None
    pids: set[int] = set()
    try:
        process = pgbench.start(pgbench.command(Path(result.pgbench), script, clients, options.duration_s,
                                                options.dsn), env)
        deadline = time.monotonic() + PIDS_WAIT_S
        while time.monotonic() < deadline and process.poll() is None:
            pids = _pgbench_pids(admin) - before
            if len(pids) >= clients:
                break
            time.sleep(0.02)
        outcome = pgbench.finish(process, options.duration_s)
    finally:
        recorder.stop()
    try:
        shares = recorder.shares(pids)
    except perf.PerfError as exc:
        result.notes.append(f"perf for {kind} {variant.name} at {clients} clients: {exc}")
        return None
    if not pids or shares.samples == 0:
        result.notes.append(f"perf for {kind} {variant.name} at {clients} clients: no samples of pgbench's "
                            f"backends ({len(pids)} found in pg_stat_activity)")
    data.chmod(0o644)
    return PerfPoint(
        variant=variant.name, kind=str(kind), clients=clients, tps=outcome.tps, backends=len(pids),
        samples=shares.samples, kernel_samples=shares.kernel, unknown_samples=shares.unknown,
        spinlock_samples=shares.spinlock, lwlock_samples=shares.lwlock,
        spinlock_share=shares.share(shares.spinlock), lwlock_share=shares.share(shares.lwlock),
        top_symbols=shares.top(8), perf_data=f"perf/{data.name}",
    )


def write_points(result: SequenceCacheResult) -> None:
    assert result.out_dir is not None
    with open(result.out_dir / "raw.csv", "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=BENCH_COLUMNS)
        writer.writeheader()
        for p in result.points:
            writer.writerow({k: "" if v is None else v for k, v in dataclasses.asdict(p).items()})
    with open(result.out_dir / "perf.csv", "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=PERF_COLUMNS)
        writer.writeheader()
        for q in result.perf_points:
            row = dataclasses.asdict(q)
            row["top_symbols"] = "; ".join(f"{s} {share:.1%}" for s, share in q.top_symbols)
            writer.writerow({k: "" if v is None else v for k, v in row.items()})
