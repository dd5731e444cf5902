"""`pglab parallel-temp`: argument parsing and the command."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from pglab import equal_memory as em
from pglab.cliargs import (
    add_target_arguments,
    check_checksums_target,
    check_pg_config,
    positive_int,
    positive_int_list,
    resolve_out_dir,
)
from pglab.errors import LabError
from pglab.experiments.parallel_temp import options as opt
from pglab.experiments.parallel_temp.options import ParallelTempOptions

NAME = "parallel-temp"


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        NAME,
        help="parallel scans of temporary tables vs serial, flush included, and the planner's choice",
        description=(
            "Times, on the same data in the same session: the stock serial scan of a temporary table; "
            "pg_tempbuf's Parallel Temp Seq Scan with clean buffers, with every resident page dirty "
            "(the flush included) and with a quarter of the table dirty; and a stock Parallel Seq Scan "
            "of an UNLOGGED copy. Queries: a CPU-bound aggregate, a selective filter, a bare count. "
            "Then the decision experiment: over table size x dirty share x query, both plans timed, "
            "the plan the planner picks with default costs, and the regret."
        ),
    )
    parser.add_argument("--rows", type=positive_int_list, metavar="N,N,...",
                        help=f"table sizes in rows (default {','.join(map(str, opt.DEFAULT_ROWS))}; "
                             f"1M rows are about 65 MB)")
    parser.add_argument("--workers", type=positive_int_list, metavar="W,W,...",
                        help="workers per Gather (default 1..number of cores)")
    parser.add_argument("--repetitions", type=positive_int, metavar="K",
                        help=f"timed runs per cell (default {opt.DEFAULT_REPETITIONS})")
    parser.add_argument("--temp-buffers", default=opt.DEFAULT_TEMP_BUFFERS, metavar="SIZE",
                        help="temp_buffers of the measuring session (default %(default)s)")
    em.add_shared_buffers_argument(parser)
    parser.add_argument("--quick", action="store_true",
                        help=f"small grid for a demo: rows {','.join(map(str, opt.QUICK_ROWS))}, "
                             f"{opt.QUICK_REPETITIONS} repetitions")
    parser.add_argument("--no-decision", dest="decision", action="store_false",
                        help="skip the decision experiment")
    parser.add_argument("--session-temp-buffers", default=opt.DEFAULT_SESSION_TEMP_BUFFERS, metavar="SIZE",
                        help="temp_buffers of the real-session cases: tables written just before the query, "
                             "every page dirty (default %(default)s)")
    parser.add_argument("--no-sessions", dest="sessions", action="store_false",
                        help="skip the real-session cases of the decision experiment")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help=f"output directory, created if missing (its parent must exist; "
                             f"default results/{NAME}-pg<major>)")
    add_target_arguments(parser, ", pg_tempbuf installed in it")
    parser.add_argument("--checksums", action=argparse.BooleanOptionalAction, default=None,
                        help="data checksums of the throwaway cluster (default: initdb's default)")


def options_from(args: argparse.Namespace) -> ParallelTempOptions:
    check_pg_config(args.pg_config)
    check_checksums_target(args)
    if args.shared_buffers is not None and args.dsn is not None:
        raise LabError("--shared-buffers sizes the throwaway server: not with --dsn (set it on that server)")
    return ParallelTempOptions(
        rows=args.rows or (opt.QUICK_ROWS if args.quick else opt.DEFAULT_ROWS),
        workers=args.workers or opt.default_workers(),
        repetitions=args.repetitions or (opt.QUICK_REPETITIONS if args.quick else opt.DEFAULT_REPETITIONS),
        temp_buffers=args.temp_buffers,
        out_dir=resolve_out_dir(args.out, NAME, args.pg_config, args.dsn),
        pg_config=args.pg_config,
        dsn=args.dsn,
        checksums=args.checksums,
        decision=args.decision,
        quick=args.quick,
        sessions=args.sessions,
        session_temp_buffers=args.session_temp_buffers,
        shared_buffers=args.shared_buffers,
    )


def command(args: argparse.Namespace) -> int:
    options = options_from(args)
    # Imported here: matplotlib and numpy take a while, and option errors should not wait.
    from pglab.experiments.parallel_temp.report import report
    from pglab.experiments.parallel_temp.runner import run_parallel_temp

    run = run_parallel_temp(options, Console(stderr=True))
    report(run, Console())
    return 0
