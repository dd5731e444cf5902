"""`pglab temp-shapes`: argument parsing and the command."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from pglab import equal_memory as em
from pglab import tpch_tables
from pglab.cliargs import (
    add_out_argument,
    add_target_arguments,
    check_out_and_pg_config,
    name_list,
    positive_float,
    positive_int,
)
from pglab.errors import LabError
from pglab.experiments.temp_shapes import options as opt
from pglab.experiments.temp_shapes.options import TempShapesOptions
from pglab.experiments.temp_shapes.workload import SHAPE_NAMES
from pglab.progress import result_console

NAME = opt.NAME
EXIT_MISMATCH = 3


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        NAME,
        help="query shapes over temp tables (joins, self-joins, CTEs, partitions, TOAST) and TPC-H with "
             "temp dimension tables: pg_tempbuf off / on / UNLOGGED copy",
        description=(
            "Times each query shape over temporary tables in one session, interleaved: "
            "pg_tempbuf.parallel_scan off, on, and the same rows in UNLOGGED permanent tables under stock "
            "parallel query. Shapes: a big permanent table joined to a small temp table and semi-joined "
            "with it, a temp table joined to itself, a CTE and a scalar subquery reading one temp table, "
            "a partitioned temp table, an aggregate over out-of-line TOASTed text. Then TPC-H "
            "(tpchgen-cli) with nation, region, supplier and part loaded as temporary tables, against the "
            "all-permanent schema (--tpch-all-temp: every table temporary, against the same data as UNLOGGED "
            "tables). Default costs; records the plan the planner chose (EXPLAIN ANALYZE, "
            "FORMAT JSON), and compares the result sets of every configuration (exit status "
            f"{EXIT_MISMATCH} when any differ)."
        ),
    )
    parser.add_argument("--repetitions", type=positive_int, metavar="K",
                        help=f"timed runs per configuration (default {opt.DEFAULT_REPETITIONS}, "
                             f"--quick {opt.QUICK_REPETITIONS})")
    parser.add_argument("--workers", type=positive_int, default=opt.DEFAULT_WORKERS, metavar="W",
                        help="max_parallel_workers_per_gather of the session (default %(default)s)")
    parser.add_argument("--scale", type=positive_float, metavar="SF",
                        help=f"TPC-H scale factor (default {opt.DEFAULT_SCALE:g}, --quick {opt.QUICK_SCALE:g})")
    parser.add_argument("--tpch-queries", type=name_list, metavar="qNN,...",
                        help=f"TPC-H queries (default {','.join(opt.DEFAULT_TPCH_QUERIES)})")
    parser.add_argument("--no-tpch", action="store_true", help="skip the TPC-H part")
    parser.add_argument("--tpch-all-temp", action="store_true",
                        help="TPC-H with every table temporary (with keys.sql's keys and indexes), against the "
                             "same data as UNLOGGED tables, in a session of its own; default queries: all 22")
    parser.add_argument("--tpch-temp-buffers", metavar="SIZE",
                        help="temp_buffers of the --tpch-all-temp session (default: enough to hold the scale, "
                             "3GB at SF 1)")
    parser.add_argument("--shapes", type=name_list, metavar="NAME,...",
                        help=f"shapes to run (default all: {','.join(SHAPE_NAMES)})")
    parser.add_argument("--no-shapes", action="store_true", help="TPC-H only")
    parser.add_argument("--temp-buffers", default=opt.DEFAULT_TEMP_BUFFERS, metavar="SIZE",
                        help="temp_buffers of the measuring session (default %(default)s)")
    em.add_shared_buffers_argument(parser)
    parser.add_argument("--quick", action="store_true",
                        help=f"tiny tables ({opt.QUICK_SIZES.big_rows:,}-row join table), TPC-H SF "
                             f"{opt.QUICK_SCALE:g}, {opt.QUICK_REPETITIONS} repetitions")
    add_out_argument(parser, NAME)
    add_target_arguments(parser, ", pg_tempbuf installed in it")


def options_from(args: argparse.Namespace) -> TempShapesOptions:
    check_out_and_pg_config(args)
    shapes = () if args.no_shapes else (args.shapes or SHAPE_NAMES)
    unknown = [s for s in shapes if s not in SHAPE_NAMES]
    if unknown:
        raise LabError(f"--shapes: unknown {', '.join(unknown)} (known: {', '.join(SHAPE_NAMES)})")
    if args.no_tpch and args.tpch_all_temp:
        raise LabError("--no-tpch with --tpch-all-temp: choose one")
    if args.tpch_temp_buffers and not args.tpch_all_temp:
        raise LabError("--tpch-temp-buffers needs --tpch-all-temp")
    default_queries = tpch_tables.QUERIES if args.tpch_all_temp else opt.DEFAULT_TPCH_QUERIES
    queries = () if args.no_tpch else (args.tpch_queries or default_queries)
    bad = [q for q in queries if q not in {f"q{i:02d}" for i in range(1, 23)}]
    if bad:
        raise LabError(f"--tpch-queries: unknown {', '.join(bad)} (q01..q22)")
    if args.shared_buffers is not None and args.dsn is not None:
        raise LabError("--shared-buffers sizes the throwaway server: not with --dsn (set it on that server)")
    if not shapes and not queries:
        raise LabError("--no-shapes with --no-tpch leaves nothing to measure")
    return TempShapesOptions(
        sizes=opt.QUICK_SIZES if args.quick else opt.DEFAULT_SIZES,
        repetitions=args.repetitions or (opt.QUICK_REPETITIONS if args.quick else opt.DEFAULT_REPETITIONS),
        workers=args.workers,
        temp_buffers=args.temp_buffers,
        scale=args.scale or (opt.QUICK_SCALE if args.quick else opt.DEFAULT_SCALE),
        tpch_queries=tuple(queries),
        shapes=tuple(shapes),
        out_dir=args.out,
        pg_config=args.pg_config,
        dsn=args.dsn,
        quick=args.quick,
        tpch_all_temp=args.tpch_all_temp,
        tpch_temp_buffers=args.tpch_temp_buffers,
        shared_buffers=args.shared_buffers,
    )


def command(args: argparse.Namespace) -> int:
    options = options_from(args)
    # Imported here: numpy, scipy and matplotlib take a while, and option errors should not wait.
    from pglab.experiments.temp_shapes.report import report
    from pglab.experiments.temp_shapes.runner import run_temp_shapes

    run = run_temp_shapes(options, Console(stderr=True))
    mismatches = report(run, result_console())
    return EXIT_MISMATCH if mismatches else 0
