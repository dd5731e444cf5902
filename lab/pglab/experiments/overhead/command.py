"""`pglab overhead`: argument parsing and the command."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from pglab.cliargs import (
    add_out_argument,
    add_target_arguments,
    check_out_and_pg_config,
    memory_size_list,
    positive_float,
    positive_int,
)
from pglab.errors import LabError
from pglab.experiments.overhead import options as opt
from pglab.experiments.overhead.options import OverheadOptions
from pglab.progress import result_console

NAME = opt.NAME


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        NAME,
        help="what loading pg_tempbuf costs pgbench -S (callgrind instruction counts and TPS A/B)",
        description=(
            "Measures what loading pg_tempbuf costs a workload that never touches a temporary table, on one "
            "cluster with pgbench data. Instructions: the postmaster runs under callgrind (counting from "
            "PostgresMain), with shared_preload_libraries empty and then pg_tempbuf (the order alternating "
            "per round); backends run pgbench's select-only query N and N+Q times (fixed random seed) and the "
            "difference / Q gives instructions per query in exec_simple_query (parse, plan, execute), in "
            "pg_plan_queries (planning) and PortalRun, plus a role with session_preload_libraries = "
            "pg_tempbuf. TPS: pgbench -S -n as a role without and a role with session_preload_libraries, "
            "alternating ABAB.. and BABA..; medians and ratios per order. The acceptance bound is an "
            f"instruction ratio of at most {opt.INSTRUCTION_LIMIT}. Sessions with temporary tables (issue 20, "
            "--temp-sessions, on by default): planning time (EXPLAIN (SUMMARY) 'Planning Time') of a point query "
            "on an indexed temp table at several temp_buffers, pg_tempbuf.parallel_scan on vs off, steady and "
            "right after the pool changed (the census), with callgrind instructions per planning; and the sum of "
            "the 22 TPC-H queries' planning times over temp tables (off, on) vs the same data in UNLOGGED "
            f"tables (acceptance bound on / UNLOGGED <= {opt.TPCH_PLANNING_LIMIT})."
        ),
    )
    parser.add_argument("--scale", type=positive_int, metavar="SF",
                        help=f"pgbench -i scale (default {opt.DEFAULT_SCALE}, --quick {opt.QUICK_SCALE})")
    parser.add_argument("--queries", type=positive_int, metavar="Q",
                        help=f"counted queries per configuration (default {opt.DEFAULT_QUERIES}, "
                             f"--quick {opt.QUICK_QUERIES})")
    parser.add_argument("--warmup-queries", type=positive_int, metavar="N",
                        help=f"queries of the short run subtracted from the long one (default {opt.DEFAULT_WARMUP}, "
                             f"--quick {opt.QUICK_WARMUP})")
    parser.add_argument("--count-rounds", type=positive_int, metavar="R",
                        help=f"callgrind rounds, each a postmaster without and one with the library "
                             f"(default {opt.DEFAULT_COUNT_ROUNDS}, --quick {opt.QUICK_COUNT_ROUNDS})")
    parser.add_argument("--duration", type=positive_int, metavar="SECONDS",
                        help=f"pgbench -T per TPS run (default {opt.DEFAULT_DURATION_S}, "
                             f"--quick {opt.QUICK_DURATION_S})")
    parser.add_argument("--pairs", type=positive_int, metavar="P",
                        help=f"TPS pairs per order, ABAB.. then BABA.. (default {opt.DEFAULT_PAIRS}, "
                             f"--quick {opt.QUICK_PAIRS})")
    parser.add_argument("--clients", type=positive_int, metavar="C",
                        help=f"pgbench -c = -j of the TPS runs (default {opt.DEFAULT_CLIENTS})")
    parser.add_argument("--no-callgrind", dest="callgrind", action="store_false",
                        help="skip the instruction counts")
    parser.add_argument("--no-tps", dest="tps", action="store_false", help="skip the TPS A/B series")
    parser.add_argument("--temp-sessions", action=argparse.BooleanOptionalAction, default=True,
                        help="also measure sessions that have temporary tables: point-query and TPC-H planning "
                             "time, pg_tempbuf.parallel_scan on vs off (default on)")
    parser.add_argument("--point-rows", type=positive_int, metavar="N",
                        help=f"rows of the indexed temp table of the point query (default {opt.DEFAULT_POINT_ROWS:,}, "
                             f"--quick {opt.QUICK_POINT_ROWS:,})")
    parser.add_argument("--point-temp-buffers", type=memory_size_list, metavar="SIZE,...",
                        help=f"temp_buffers of the point-query sessions (default "
                             f"{','.join(opt.DEFAULT_POINT_TEMP_BUFFERS)})")
    parser.add_argument("--plannings", type=positive_int, metavar="K",
                        help=f"timed point-query plannings per configuration, steady and cold each "
                             f"(default {opt.DEFAULT_PLANNINGS}, --quick {opt.QUICK_PLANNINGS})")
    parser.add_argument("--counted-plannings", type=positive_int, metavar="K",
                        help=f"point-query plannings per configuration and phase under callgrind "
                             f"(default {opt.DEFAULT_COUNTED_PLANNINGS}, --quick {opt.QUICK_COUNTED_PLANNINGS})")
    parser.add_argument("--tpch-scale", type=positive_float, metavar="SF",
                        help=f"TPC-H scale of the planning sum (default {opt.DEFAULT_TPCH_SCALE:g}, "
                             f"--quick {opt.QUICK_TPCH_SCALE:g})")
    parser.add_argument("--tpch-plannings", type=positive_int, metavar="K",
                        help=f"EXPLAINs per TPC-H query and configuration, median (default "
                             f"{opt.DEFAULT_TPCH_PLANNINGS}, --quick {opt.QUICK_TPCH_PLANNINGS})")
    parser.add_argument("--tpch-temp-buffers", metavar="SIZE",
                        help="temp_buffers of the TPC-H planning session (default: enough for the scale, "
                             "2GB at SF 0.5)")
    parser.add_argument("--quick", action="store_true",
                        help="demo size (a few minutes): scale 1, 200 counted queries, 1 round, 2 s TPS runs, "
                             "1 pair per order; temp sessions with a 100,000-row table, 40 plannings, TPC-H SF "
                             "0.01 (explicit options win)")
    add_out_argument(parser, NAME)
    add_target_arguments(parser, " (pg_tempbuf installed in it)")


def options_from(args: argparse.Namespace) -> OverheadOptions:
    check_out_and_pg_config(args)
    if not args.callgrind and not args.tps and not args.temp_sessions:
        raise LabError("--no-callgrind, --no-tps and --no-temp-sessions leave nothing to measure")
    quick = bool(args.quick)

    def pick(value: int | None, default: int, quick_default: int) -> int:
        return value if value is not None else (quick_default if quick else default)

    def pick_float(value: float | None, default: float, quick_default: float) -> float:
        return value if value is not None else (quick_default if quick else default)

    return OverheadOptions(
        scale=pick(args.scale, opt.DEFAULT_SCALE, opt.QUICK_SCALE),
        warmup_queries=pick(args.warmup_queries, opt.DEFAULT_WARMUP, opt.QUICK_WARMUP),
        queries=pick(args.queries, opt.DEFAULT_QUERIES, opt.QUICK_QUERIES),
        count_rounds=pick(args.count_rounds, opt.DEFAULT_COUNT_ROUNDS, opt.QUICK_COUNT_ROUNDS),
        duration_s=pick(args.duration, opt.DEFAULT_DURATION_S, opt.QUICK_DURATION_S),
        pairs=pick(args.pairs, opt.DEFAULT_PAIRS, opt.QUICK_PAIRS),
        clients=args.clients or opt.DEFAULT_CLIENTS,
        callgrind=args.callgrind, tps=args.tps,
        out_dir=args.out, pg_config=args.pg_config, dsn=args.dsn, quick=quick,
        temp_sessions=args.temp_sessions,
        point_rows=pick(args.point_rows, opt.DEFAULT_POINT_ROWS, opt.QUICK_POINT_ROWS),
        point_temp_buffers=args.point_temp_buffers or opt.DEFAULT_POINT_TEMP_BUFFERS,
        plannings=pick(args.plannings, opt.DEFAULT_PLANNINGS, opt.QUICK_PLANNINGS),
        counted_plannings=pick(args.counted_plannings, opt.DEFAULT_COUNTED_PLANNINGS, opt.QUICK_COUNTED_PLANNINGS),
        tpch_scale=pick_float(args.tpch_scale, opt.DEFAULT_TPCH_SCALE, opt.QUICK_TPCH_SCALE),
        tpch_plannings=pick(args.tpch_plannings, opt.DEFAULT_TPCH_PLANNINGS, opt.QUICK_TPCH_PLANNINGS),
        tpch_temp_buffers=args.tpch_temp_buffers,
    )


def command(args: argparse.Namespace) -> int:
    options = options_from(args)
    # Imported here: numpy and matplotlib take a while, and option errors should not wait.
    from pglab.experiments.overhead.report import report
    from pglab.experiments.overhead.runner import run_overhead

    result = run_overhead(options, Console(stderr=True))
    report(result, result_console())
    return 0
