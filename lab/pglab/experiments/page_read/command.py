"""`pglab page-read`: argument parsing and the command."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from pglab.cliargs import (
    add_out_argument,
    add_target_arguments,
    check_checksums_target,
    check_out_and_pg_config,
    memory_size,
    memory_size_list,
    positive_int,
)
from pglab.errors import LabError
from pglab.experiments.page_read import options as opt
from pglab.experiments.page_read.options import PageReadOptions
from pglab.progress import result_console

NAME = opt.NAME


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        NAME,
        help="micro-benchmark of a parallel worker's page read: in the leader's pool, from the file, as a "
             "shared-buffer hit",
        description=(
            "Times, in one run, interleaved, a parallel SELECT count(*) whose workers alone read (leader "
            "participation off) a table of one row per page: (1) in place: a temporary table just loaded, "
            "pg_tempbuf.shared_pool = on, workers read the leader's pages in its pool; (2) file: the same with "
            "pg_tempbuf.shared_pool = off, flushed before timing, workers read the table's file; (3) shared hit: "
            "an UNLOGGED copy prewarmed into shared_buffers, stock Parallel Seq Scan. Reports the workers' "
            "microseconds per page (their actual time in the scan node, EXPLAIN ANALYZE VERBOSE, over the pages "
            "each read), each mode's wall time, and the ratios to the shared hit: median, min and max over the "
            "rounds. Then, in a table of its own (--no-serial skips it), the leader's own serial scan of a temporary "
            "table with pg_tempbuf.parallel_scan = off, its local buffers in the shared pool vs in private memory, "
            "two sessions timed interleaved."
        ),
    )
    parser.add_argument("--pages", type=positive_int, metavar="N",
                        help=f"table size in pages, one row each (default {opt.DEFAULT_PAGES:,}, "
                             f"--quick {opt.QUICK_PAGES:,}; 8 kB pages)")
    parser.add_argument("--repetitions", type=positive_int, metavar="K",
                        help=f"timed rounds, each timing every mode once (default {opt.DEFAULT_REPETITIONS}, "
                             f"--quick {opt.QUICK_REPETITIONS})")
    parser.add_argument("--workers", type=positive_int, default=opt.DEFAULT_WORKERS, metavar="W",
                        help="parallel workers per query (default %(default)s)")
    parser.add_argument("--temp-buffers", type=memory_size, default=opt.DEFAULT_TEMP_BUFFERS, metavar="SIZE",
                        help="temp_buffers of the sessions; must hold the table (default %(default)s)")
    parser.add_argument("--shared-buffers", type=memory_size, metavar="SIZE",
                        help=f"shared_buffers of the throwaway cluster; must hold the UNLOGGED copy (default "
                             f"{opt.DEFAULT_SHARED_BUFFERS})")
    parser.add_argument("--serial", action=argparse.BooleanOptionalAction, default=True,
                        help="also time the leader's own serial scan of a temporary table (pg_tempbuf.parallel_scan "
                             "= off, no workers) in two sessions, its local buffers in the shared pool "
                             "(pg_tempbuf.shared_pool = on) and in private memory (off), interleaved; a table of its "
                             "own in the report (default: on; --no-serial skips it)")
    parser.add_argument("--serial-rows", type=positive_int, metavar="N",
                        help=f"rows of the serial part's table, (id int, md5 text) (default "
                             f"{opt.DEFAULT_SERIAL_ROWS:,}, --quick {opt.QUICK_SERIAL_ROWS:,})")
    parser.add_argument("--serial-repetitions", type=positive_int, metavar="K",
                        help=f"timed rounds of the serial part, each timing both sessions once (default "
                             f"{opt.DEFAULT_SERIAL_REPETITIONS}, --quick {opt.QUICK_SERIAL_REPETITIONS})")
    parser.add_argument("--serial-temp-buffers", type=memory_size, metavar="SIZE",
                        help=f"temp_buffers of the serial part's sessions; must hold its table (default "
                             f"{opt.DEFAULT_SERIAL_TEMP_BUFFERS}, --quick {opt.QUICK_SERIAL_TEMP_BUFFERS})")
    parser.add_argument("--quick", action="store_true",
                        help=f"demo size: {opt.QUICK_PAGES:,} pages, {opt.QUICK_REPETITIONS} rounds; serial part "
                             f"{opt.QUICK_SERIAL_ROWS:,} rows, {opt.QUICK_SERIAL_REPETITIONS} rounds "
                             "(explicit options win)")
    add_out_argument(parser, NAME)
    add_target_arguments(parser, ", pg_tempbuf installed in it")
    parser.add_argument("--checksums", action=argparse.BooleanOptionalAction, default=None,
                        help="data checksums of the throwaway cluster (default: initdb's default)")


def options_from(args: argparse.Namespace) -> PageReadOptions:
    check_out_and_pg_config(args)
    check_checksums_target(args)
    if args.dsn is not None and args.shared_buffers is not None:
        raise LabError("--shared-buffers only applies to a throwaway cluster, not with --dsn")
    if not args.serial:
        given = [name for name, value in (("--serial-rows", args.serial_rows),
                                          ("--serial-repetitions", args.serial_repetitions),
                                          ("--serial-temp-buffers", args.serial_temp_buffers)) if value is not None]
        if given:
            raise LabError(f"{given[0]} only applies to the serial part, not with --no-serial")
    return PageReadOptions(
        pages=args.pages or (opt.QUICK_PAGES if args.quick else opt.DEFAULT_PAGES),
        repetitions=args.repetitions or (opt.QUICK_REPETITIONS if args.quick else opt.DEFAULT_REPETITIONS),
        workers=args.workers,
        temp_buffers=args.temp_buffers,
        shared_buffers=None if args.dsn is not None else (args.shared_buffers or opt.DEFAULT_SHARED_BUFFERS),
        out_dir=args.out,
        pg_config=args.pg_config,
        dsn=args.dsn,
        checksums=args.checksums,
        quick=args.quick,
        serial=args.serial,
        serial_rows=args.serial_rows or (opt.QUICK_SERIAL_ROWS if args.quick else opt.DEFAULT_SERIAL_ROWS),
        serial_repetitions=args.serial_repetitions or (
            opt.QUICK_SERIAL_REPETITIONS if args.quick else opt.DEFAULT_SERIAL_REPETITIONS),
        serial_temp_buffers=args.serial_temp_buffers or (
            opt.QUICK_SERIAL_TEMP_BUFFERS if args.quick else opt.DEFAULT_SERIAL_TEMP_BUFFERS),
    )


def command(args: argparse.Namespace) -> int:
    options = options_from(args)
    # Imported here: numpy, scipy and matplotlib take a while, and option errors should not wait.
    from pglab.experiments.page_read.report import report
    from pglab.experiments.page_read.runner import run_page_read

    run = run_page_read(options, Console(stderr=True))
    report(run, result_console())
    return 0
