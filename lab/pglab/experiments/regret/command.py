"""`pglab regret`: argument parsing and the command."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
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
from pglab.experiments.regret import options as opt
from pglab.experiments.regret.analysis import read_baseline
from pglab.experiments.regret.options import RegretOptions
from pglab.experiments.regret.sessions import LOOP_NAMES
from pglab.experiments.temp_shapes.workload import SHAPE_NAMES
from pglab.progress import result_console

NAME = opt.NAME
EXIT_MISMATCH = 3  # as temp-shapes: some configuration returned other rows
_SIZE = re.compile(r"^\d+(kB|MB|GB|TB)$")


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        NAME,
        help="the regret benchmark: TPC-H all-temp over several loads, many-statement sessions and the temp "
             "shapes, pg_tempbuf on / off / UNLOGGED copy; the worst ratio and the distribution",
        description=(
            "Where could pg_tempbuf make a session slower? In one session per part, interleaved, the order "
            "rotating: (1) TPC-H with every table temporary, loaded --loads times (each load a fresh ANALYZE "
            "sample, so plans differ), the 22 queries with pg_tempbuf.parallel_scan on, off, and over the same "
            "rows in UNLOGGED tables under stock parallel query; (2) many-statement sessions: PL/pgSQL loops of "
            "EXECUTE format(...) statements (each planned anew) over small and large temp tables and a permanent "
            "one, on vs off; (3) the temp-shapes suite's shapes, on / off / UNLOGGED. Reports per item the ratio "
            "median(reference) / median(on) (> 1: on is faster), the worst ratio and the distribution (min, p10, "
            f"median, geomean, counts below 0.9 and 0.95), per load. Exit status {EXIT_MISMATCH} when any "
            "configuration returned other rows."
        ),
    )
    parser.add_argument("--scale", type=positive_float, metavar="SF",
                        help=f"TPC-H scale factor (default {opt.DEFAULT_SCALE:g}, --quick {opt.QUICK_SCALE:g})")
    parser.add_argument("--loads", type=positive_int, metavar="N",
                        help=f"TPC-H loads, each dropping and reloading the tables (default {opt.DEFAULT_LOADS}, "
                             f"--quick {opt.QUICK_LOADS})")
    parser.add_argument("--repetitions", type=positive_int, metavar="R",
                        help=f"timed runs per TPC-H query, configuration and load (default "
                             f"{opt.DEFAULT_REPETITIONS}, --quick {opt.QUICK_REPETITIONS})")
    parser.add_argument("--tpch-queries", type=name_list, metavar="qNN,...", help="TPC-H queries (default all 22)")
    parser.add_argument("--tpch-temp-buffers", metavar="SIZE",
                        help="temp_buffers of the TPC-H session (default: enough to hold the scale, as "
                             "temp-shapes --tpch-all-temp)")
    em.add_shared_buffers_argument(parser)
    parser.add_argument("--baseline", type=Path, metavar="RESULTS_JSON",
                        help="results.json of an earlier pglab regret (or temp-shapes --tpch-all-temp) run: its TPC-H "
                             "geomeans are the line for issue 28's \"geomean not lower than today\"")
    parser.add_argument("--rounds", type=positive_int, metavar="K",
                        help=f"interleaved on/off rounds of each session loop (default {opt.DEFAULT_ROUNDS}, "
                             f"--quick {opt.QUICK_ROUNDS})")
    parser.add_argument("--iterations", type=positive_int, metavar="N",
                        help=f"EXECUTEd statements per loop call (default {opt.DEFAULT_ITERATIONS:,}, --quick "
                             f"{opt.QUICK_ITERATIONS})")
    parser.add_argument("--sessions", type=name_list, metavar="NAME,...",
                        help=f"session loops to run (default all: {','.join(LOOP_NAMES)})")
    parser.add_argument("--session-temp-buffers", default=opt.DEFAULT_SESSION_TEMP_BUFFERS, metavar="SIZE",
                        help="temp_buffers of the sessions part (default %(default)s, a tuned session)")
    parser.add_argument("--shapes", type=name_list, metavar="NAME,...",
                        help=f"temp-shapes shapes to run (default all: {','.join(SHAPE_NAMES)})")
    parser.add_argument("--shape-repetitions", type=positive_int, metavar="K",
                        help=f"timed runs per shape and configuration (default {opt.DEFAULT_SHAPE_REPETITIONS}, "
                             f"--quick {opt.QUICK_SHAPE_REPETITIONS})")
    parser.add_argument("--no-tpch", action="store_true", help="skip the TPC-H part")
    parser.add_argument("--no-sessions", action="store_true", help="skip the session loops")
    parser.add_argument("--no-shapes", action="store_true", help="skip the shapes")
    parser.add_argument("--workers", type=positive_int, default=opt.DEFAULT_WORKERS, metavar="W",
                        help="max_parallel_workers_per_gather (default %(default)s)")
    parser.add_argument("--quick", action="store_true",
                        help=f"TPC-H SF {opt.QUICK_SCALE:g}, {opt.QUICK_LOADS} loads, {opt.QUICK_REPETITIONS} run; "
                             f"loops of {opt.QUICK_ITERATIONS} statements over a "
                             f"{opt.QUICK_SESSION_SIZES.big_rows:,}-row table; temp-shapes' quick tables")
    add_out_argument(parser, NAME)
    add_target_arguments(parser, ", pg_tempbuf installed in it")


def options_from(args: argparse.Namespace) -> RegretOptions:
    check_out_and_pg_config(args)
    queries = () if args.no_tpch else (args.tpch_queries or tpch_tables.QUERIES)
    bad = [q for q in queries if q not in tpch_tables.QUERIES]
    if bad:
        raise LabError(f"--tpch-queries: unknown {', '.join(bad)} (q01..q22)")
    sessions = () if args.no_sessions else (args.sessions or LOOP_NAMES)
    unknown = [s for s in sessions if s not in LOOP_NAMES]
    if unknown:
        raise LabError(f"--sessions: unknown {', '.join(unknown)} (known: {', '.join(LOOP_NAMES)})")
    shapes = () if args.no_shapes else (args.shapes or SHAPE_NAMES)
    unknown = [s for s in shapes if s not in SHAPE_NAMES]
    if unknown:
        raise LabError(f"--shapes: unknown {', '.join(unknown)} (known: {', '.join(SHAPE_NAMES)})")
    if not (queries or sessions or shapes):
        raise LabError("--no-tpch, --no-sessions and --no-shapes leave nothing to measure")
    for option, value in (("--session-temp-buffers", args.session_temp_buffers),
                          ("--tpch-temp-buffers", args.tpch_temp_buffers)):
        if value is not None and not _SIZE.match(value):
            raise LabError(f"{option} {value}: not a size like 512MB or 2GB")
    if args.shared_buffers is not None and args.dsn is not None:
        raise LabError("--shared-buffers sizes the throwaway server: not with --dsn (set it on that server)")
    if args.baseline is not None:
        if not queries:
            raise LabError("--baseline compares TPC-H geomeans: not with --no-tpch")
        read_baseline(args.baseline)  # fails now, not after the run
    quick = args.quick
    return RegretOptions(
        scale=args.scale or (opt.QUICK_SCALE if quick else opt.DEFAULT_SCALE),
        loads=args.loads or (opt.QUICK_LOADS if quick else opt.DEFAULT_LOADS),
        repetitions=args.repetitions or (opt.QUICK_REPETITIONS if quick else opt.DEFAULT_REPETITIONS),
        shape_repetitions=args.shape_repetitions or (opt.QUICK_SHAPE_REPETITIONS if quick
                                                     else opt.DEFAULT_SHAPE_REPETITIONS),
        rounds=args.rounds or (opt.QUICK_ROUNDS if quick else opt.DEFAULT_ROUNDS),
        iterations=args.iterations or (opt.QUICK_ITERATIONS if quick else opt.DEFAULT_ITERATIONS),
        session_sizes=opt.QUICK_SESSION_SIZES if quick else opt.DEFAULT_SESSION_SIZES,
        session_temp_buffers=args.session_temp_buffers,
        workers=args.workers,
        tpch_queries=tuple(queries),
        sessions=tuple(sessions),
        shapes=tuple(shapes),
        out_dir=args.out,
        tpch_temp_buffers=args.tpch_temp_buffers,
        shared_buffers=args.shared_buffers,
        baseline=args.baseline,
        pg_config=args.pg_config,
        dsn=args.dsn,
        quick=quick,
    )


def command(args: argparse.Namespace) -> int:
    options = options_from(args)
    # Imported here: numpy, scipy and matplotlib take a while, and option errors should not wait.
    from pglab.experiments.regret.report import report
    from pglab.experiments.regret.runner import run_regret

    run = run_regret(options, Console(stderr=True))
    mismatches = report(run, result_console())
    return EXIT_MISMATCH if mismatches else 0
