"""Running `pglab overhead`: pgbench data, two roles, the TPS A/B series, callgrind on the postmaster."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from rich.console import Console
from rich.progress import Progress, TaskID

from pglab.cliargs import default_out_dir, prepare_out_dir
from pglab.cluster import Cluster
from pglab.errors import LabError
from pglab.experiments.overhead import callgrind, temp_sessions
from pglab.experiments.overhead.analysis import Config, CountPoint, OverheadResult, TpsPoint
from pglab.experiments.overhead.options import LIBRARY, NAME, RANDOM_SEED, OverheadOptions
from pglab.experiments.overhead.postmaster import postmaster_under_callgrind
from pglab.experiments.sequence_cache import pgbench as pgbench_output
from pglab.jsonio import write_json
from pglab.machine import machine_info
from pglab.pgconfig import PgInstall
from pglab.progress import lab_progress
from pglab.report_section import command_line, utc_timestamp
from pglab.runlog import recorded_run
from pglab.server import TargetServer, current_setting, open_target, server_facts

ROLE_PLAIN = "pglab_overhead_plain"
ROLE_LOADED = "pglab_overhead_loaded"  # ALTER ROLE ... SET session_preload_libraries = pg_tempbuf
TABLES = ("pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history")
# The built-in `pgbench -S` script, as a file: with -f, pgbench's setup connection runs no queries, so the
# counted backend runs exactly -t queries.
SELECT_ONLY_SCRIPT = "\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"
PLANNER_HOOK = "tb_planner"
PASS_THROUGH = {"tb_planner": "standard_planner", "tb_process_utility": "standard_ProcessUtility"}
HOOK_ENTRIES = ("tb_planner", "tb_set_rel_pathlist", "tb_process_utility")
PROFILE_WAIT_S = 120
PGBENCH_TIMEOUT_S = 600


def run_overhead(options: OverheadOptions, console: Console) -> OverheadResult:
    """Measure; raw CSVs and meta.json are written also when the run fails."""
    result = OverheadResult(options=options, started=utc_timestamp(), machine=machine_info(),
                            command=command_line())

    def write_data(status: str, error: str | None) -> None:
        if result.out_dir is not None:
            from pglab.experiments.overhead.report import write_raw

            write_raw(result)
            write_json(result.out_dir / "meta.json", meta(result, status, error))

    with recorded_run(result, write_data):
        _run(result, console)
    return result


def meta(result: OverheadResult, status: str, error: str | None) -> dict[str, Any]:
    o = result.options
    return {
        "status": status, "error": error, "command": result.command, "started": result.started,
        "finished": result.finished, "wall_s": result.wall_s,
        "options": {**dataclasses.asdict(o), "out_dir": str(o.out_dir) if o.out_dir else None,
                    "pg_config": str(o.pg_config) if o.pg_config else None},
        "valgrind": result.valgrind, "pgbench": result.pgbench, "counts": result.count_note,
        "temp_sessions": {"counts": result.temp.count_note, "tpch_temp_buffers": result.temp.tpch_temp_buffers,
                          "tpch_bytes": result.temp.tpch_bytes, "point_table_bytes": result.temp.point_table_bytes},
        "notes": result.notes, "server": result.server, "machine": result.machine,
    }


def _run(result: OverheadResult, console: Console) -> None:
    options = result.options
    install = PgInstall.from_pg_config(options.pg_config)
    result.pgbench = str(install.program("pgbench"))
    if options.dsn is None and not (install.pkglibdir / f"{LIBRARY}.so").is_file():
        raise LabError(f"{LIBRARY}.so is not installed in {install.pkglibdir}; "
                       f"run `make install PG_CONFIG={install.pg_config}`")
    with ExitStack() as stack:
        target = stack.enter_context(open_target(options.pg_config, options.dsn, None,
                                                 settings={"autovacuum": "off"}))
        admin = stack.enter_context(target.connect())
        result.server = {"target": target.description,
                         **server_facts(admin, ("shared_preload_libraries", "autovacuum"))}
        result.out_dir = prepare_out_dir(
            options.out_dir or default_out_dir(NAME, result.version_num // 10000), options.out_dir is None)
        preloaded = result.server.get("shared_preload_libraries") or ""
        if LIBRARY in preloaded:
            raise LabError(f"the server preloads {LIBRARY} (shared_preload_libraries = {preloaded!r}): "
                           "no run without it is possible")
        env = {**os.environ, **(target.cluster.env() if target.cluster else {})}
        created_tables = _pgbench_tables(result, admin, target, env)
        if created_tables and target.cluster is None:
            stack.callback(_drop_pgbench_tables, result, target, env)
        _create_roles(admin)
        if target.cluster is None:
            stack.callback(_drop_roles, admin)
        _check_roles(target)
        counting = _counting_possible(result, target)
        total = ((4 * options.pairs if options.tps else 0)
                 + (options.count_rounds * 2 if counting else 0))
        temp_counting = counting and options.temp_sessions
        if options.temp_sessions:
            total += temp_sessions.timed_steps(result) + (len(options.point_temp_buffers) if temp_counting else 0)
            result.temp.count_note = (temp_sessions.counting_note(result.valgrind) if temp_counting
                                      else result.count_note)
        with lab_progress(console) as progress:
            task = progress.add_task(NAME, total=total)
            if options.tps:
                _tps_series(result, target, progress, task)
            if options.temp_sessions:
                temp_sessions.run_timed(result, target, progress, task)
            if counting:
                assert target.cluster is not None
                admin.close()
                target.cluster.stop()
                _count_series(result, target.cluster, progress, task)
                if temp_counting:
                    temp_sessions.run_counted(result, target.cluster, progress, task)


def _role_conninfo(target: TargetServer, role: str) -> str:
    return make_conninfo(target.conninfo, user=role)


def _pgbench_tables(result: OverheadResult, admin: psycopg.Connection[Any], target: TargetServer,
                    env: dict[str, str]) -> bool:
    """pgbench -i at --scale unless the tables are there (an existing server's); True if we made them."""
    exists = admin.execute("SELECT to_regclass('pgbench_accounts') IS NOT NULL").fetchone()
    if exists and exists[0]:
        row = admin.execute("SELECT count(*) FROM pgbench_branches").fetchone()
        result.notes.append(f"the server's pgbench tables were used as they were (scale {row[0] if row else '?'})")
        return False
    _run_program([result.pgbench, "-i", "-q", "-s", str(result.options.scale), target.conninfo], env,
                 "pgbench -i")
    return True


def _drop_pgbench_tables(result: OverheadResult, target: TargetServer, env: dict[str, str]) -> None:
    _run_program([result.pgbench, "-i", "-I", "d", target.conninfo], env, "pgbench -i -I d")


def _create_roles(admin: psycopg.Connection[Any]) -> None:
    _drop_roles(admin)
    for role in (ROLE_PLAIN, ROLE_LOADED):
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        admin.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(
            sql.SQL(", ").join(sql.Identifier(t) for t in TABLES), sql.Identifier(role)))
    admin.execute(sql.SQL("ALTER ROLE {} SET session_preload_libraries = {}").format(
        sql.Identifier(ROLE_LOADED), sql.Literal(LIBRARY)))


def _drop_roles(admin: psycopg.Connection[Any]) -> None:
    for role in (ROLE_PLAIN, ROLE_LOADED):
        if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))  # its grants
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def _check_roles(target: TargetServer) -> None:
    """The loaded role's sessions have pg_tempbuf's GUCs (the library is loaded), the plain role's do not."""
    for role, loaded in ((ROLE_PLAIN, False), (ROLE_LOADED, True)):
        with psycopg.connect(_role_conninfo(target, role), autocommit=True, prepare_threshold=None) as conn:
            has = current_setting(conn, f"{LIBRARY}.parallel_scan") is not None
        if has != loaded:
            raise LabError(f"role {role}: {LIBRARY} is {'not ' if loaded else ''}loaded in its sessions"
                           + (" (is the library installed on the server?)" if loaded else ""))


def _run_program(args: list[str], env: dict[str, str], what: str,
                 timeout: int = PGBENCH_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    try:
        result = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
    except OSError as exc:
        raise LabError(f"cannot run {args[0]}: {exc.strerror}") from exc
    except subprocess.TimeoutExpired:
        raise LabError(f"{what} did not finish within {timeout} s") from None
    if result.returncode != 0:
        last = [line for line in result.stderr.splitlines() if line.strip()]
        raise LabError(f"{what} failed (exit {result.returncode}): {last[-1] if last else 'no output'}")
    return result


# -- TPS A/B -----------------------------------------------------------------------------------


def tps_schedule(pairs: int) -> list[tuple[str, Config]]:
    """ABAB.. (without first) then BABA..: `pairs` pairs in each order."""
    ab = [("AB", c) for _ in range(pairs) for c in (Config.NONE, Config.SESSION)]
    ba = [("BA", c) for _ in range(pairs) for c in (Config.SESSION, Config.NONE)]
    return ab + ba


def _tps_series(result: OverheadResult, target: TargetServer, progress: Progress, task: TaskID) -> None:
    options = result.options
    env = dict(os.environ)
    for index, (order, config) in enumerate(tps_schedule(options.pairs)):
        role = ROLE_LOADED if config is Config.SESSION else ROLE_PLAIN
        progress.update(task, description=f"pgbench -S {order} #{index + 1}: {config}")
        args = [result.pgbench, "-n", "-S", "-c", str(options.clients), "-j", str(options.clients),
                "-T", str(options.duration_s), _role_conninfo(target, role)]
        outcome = pgbench_output.finish(pgbench_output.start(args, env), options.duration_s)
        if outcome.failed:
            raise LabError(f"pgbench -S as {role}: {outcome.failed} failed transactions")
        result.tps.append(TpsPoint(index=index, order=order, config=config.value, role=role,
                                   duration_s=options.duration_s, tps=outcome.tps,
                                   transactions=outcome.transactions, latency_ms=outcome.latency_ms))
        progress.advance(task)


# -- instruction counts ------------------------------------------------------------------------


def _counting_possible(result: OverheadResult, target: TargetServer) -> bool:
    if not result.options.callgrind:
        result.count_note = "not measured: --no-callgrind"
        return False
    if target.cluster is None:
        result.count_note = ("not measured: callgrind runs the postmaster itself, so it needs a throwaway cluster "
                             "(not --dsn)")
        return False
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        result.count_note = "not measured: valgrind is not installed"
        return False
    version = subprocess.run([valgrind, "--version"], capture_output=True, text=True).stdout.strip()
    result.valgrind = version
    result.count_note = (f"{version} --tool=callgrind --collect-atstart=no --toggle-collect=PostgresMain on the "
                         "postmaster (every backend it forks is counted, from PostgresMain on)")
    return True


def count_schedule(rounds: int) -> list[tuple[int, str]]:
    """(round, shared_preload_libraries) per postmaster start: without, with; then with, without; ..."""
    schedule = []
    for r in range(rounds):
        settings = ["", LIBRARY] if r % 2 == 0 else [LIBRARY, ""]
        schedule += [(r, s) for s in settings]
    return schedule


def _count_series(result: OverheadResult, cluster: Cluster, progress: Progress, task: TaskID) -> None:
    assert result.out_dir is not None
    script = result.out_dir / "select-only.sql"
    script.write_text(SELECT_ONLY_SCRIPT, encoding="utf-8")
    script.chmod(0o644)
    profiles_dir = result.out_dir / "callgrind"
    profiles_dir.mkdir(exist_ok=True)
    for round_, preload in count_schedule(result.options.count_rounds):
        progress.update(task, description=f"callgrind round {round_ + 1}: shared_preload_libraries = '{preload}'")
        configs = [(Config.SHARED, ROLE_PLAIN)] if preload else [(Config.NONE, ROLE_PLAIN),
                                                                  (Config.SESSION, ROLE_LOADED)]
        with postmaster_under_callgrind(cluster, preload) as dump_dir:
            # The same queries once uncounted: every page they read is in shared buffers for every configuration
            # (a restarted postmaster starts cold), and the relcache init file exists.
            _pgbench_counted(result, cluster, script, ROLE_PLAIN,
                             result.options.warmup_queries + result.options.queries)
            for config, role in configs:
                point = _count_config(result, cluster, script, dump_dir, profiles_dir, round_, config, role, preload)
                result.counts.append(point)
        progress.advance(task)


def _pgbench_counted(result: OverheadResult, cluster: Cluster, script: Path, role: str, queries: int) -> None:
    args = [result.pgbench, "-n", "-f", str(script), "-s", str(result.options.scale), "-c", "1", "-t",
            str(queries), f"--random-seed={RANDOM_SEED}", make_conninfo(cluster.conninfo, user=role)]
    _run_program(args, dict(os.environ), f"pgbench -t {queries} as {role}")


def _backend_profile(result: OverheadResult, cluster: Cluster, script: Path, dump_dir: Path, role: str,
                     queries: int, keep_as: Path) -> callgrind.Profile:
    """Run `queries` queries in one backend; its callgrind profile (written when the backend exits)."""
    before = set(dump_dir.iterdir())
    _pgbench_counted(result, cluster, script, role, queries)
    deadline = time.monotonic() + PROFILE_WAIT_S
    seen: set[Path] = set()
    while time.monotonic() < deadline:
        for path in sorted(set(dump_dir.iterdir()) - before - seen):
            if not callgrind.is_complete(path):
                continue
            seen.add(path)
            profile = callgrind.parse(path)
            if profile.calls_to("pg_plan_queries") == queries:
                shutil.copyfile(path, keep_as)
                return profile
        time.sleep(0.2)
    raise LabError(f"no callgrind profile of a backend with {queries} planned queries appeared in {dump_dir}")


def _count_config(result: OverheadResult, cluster: Cluster, script: Path, dump_dir: Path, profiles_dir: Path,
                  round_: int, config: Config, role: str, preload: str) -> CountPoint:
    options = result.options
    short_n, long_n = options.warmup_queries, options.warmup_queries + options.queries
    stem = f"r{round_ + 1}-{config}"
    short = _backend_profile(result, cluster, script, dump_dir, role, short_n, profiles_dir / f"{stem}-{short_n}.out")
    long = _backend_profile(result, cluster, script, dump_dir, role, long_n, profiles_dir / f"{stem}-{long_n}.out")
    query_function = _query_function(long)

    def per_query(function: str) -> float:
        return (long.inclusive(function) - short.inclusive(function)) / options.queries

    def hooks(profile: callgrind.Profile) -> float:
        total = 0
        for entry in HOOK_ENTRIES:
            total += profile.inclusive(entry) - profile.arc_cost(entry, PASS_THROUGH.get(entry, ""))
        return total

    calls = long.calls_to(PLANNER_HOOK)
    expect_loaded = config is not Config.NONE
    if (calls == long_n) != expect_loaded:
        raise LabError(f"{config}: pg_tempbuf's planner hook ran {calls} times in a backend of {long_n} queries")
    if round_ == 0 and config is Config.SHARED:
        _library_breakdown(result, short, long)
    return CountPoint(
        round=round_ + 1, config=config.value, shared_preload_libraries=preload, role=role,
        queries=options.queries, query_function=query_function, query_ir=per_query(query_function),
        plan_ir=per_query("pg_plan_queries"), execute_ir=per_query("PortalRun"),
        backend_ir=(long.totals - short.totals) / options.queries,
        hook_ir=(hooks(long) - hooks(short)) / options.queries, library_calls=calls,
    )


def _query_function(profile: callgrind.Profile) -> str:
    """exec_simple_query, found as the caller of pg_plan_queries (a stripped binary names it by address)."""
    callers = profile.callers("pg_plan_queries")
    if not callers:
        raise LabError("pg_plan_queries was never called in the counted backend")
    return max(callers, key=lambda name: callers[name])


def _library_breakdown(result: OverheadResult, short: callgrind.Profile, long: callgrind.Profile) -> None:
    """pg_tempbuf's functions per query (self and inclusive), and what they call outside the library."""
    n = result.options.queries
    names = set(long.functions_of(f"{LIBRARY}.so")) | set(short.functions_of(f"{LIBRARY}.so"))
    for name in sorted(names):
        inclusive_long = long.inclusive(name) - long.arc_cost(name, PASS_THROUGH.get(name, ""))
        inclusive_short = short.inclusive(name) - short.arc_cost(name, PASS_THROUGH.get(name, ""))
        self_ir = (long.self_cost.get(name, 0) - short.self_cost.get(name, 0)) / n
        if self_ir or inclusive_long != inclusive_short:
            result.library_functions[name] = (self_ir, (inclusive_long - inclusive_short) / n)
    for (caller, callee), (_, cost) in long.arcs.items():
        if caller in names and callee not in names and callee != PASS_THROUGH.get(caller):
            delta = (cost - short.arc_cost(caller, callee)) / n
            if delta:
                result.library_callees[f"{caller} -> {callee}"] = delta
