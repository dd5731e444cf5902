"""`pglab temp-extend`: argument parsing and the command."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from pglab.cliargs import add_out_argument, add_target_arguments, check_out_and_pg_config, positive_int
from pglab.errors import LabError
from pglab.experiments.temp_extend import options as opt
from pglab.experiments.temp_extend.options import TempExtendOptions
from pglab.progress import result_console

NAME = opt.NAME


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        NAME,
        help="temp-table extends and writes of CREATE TEMP TABLE AS, default tablespace vs tmpfs",
        description=(
            "The 003 article's experiment: CREATE TEMP TABLE AS SELECT * FROM a permanent source (about "
            "9 MB and 1M rows), with temp_buffers large enough for the copy and too small (800 kB), on the "
            "default tablespace and on a scratch tablespace in a tmpfs directory. Per run: the statement's "
            "elapsed time, the temp table's file growth and allocated bytes, temp-relation extends and "
            "writes with bytes and times from pg_stat_get_backend_io (PostgreSQL 18) or pg_stat_io (16, "
            "17), pg_stat_statements' local blocks written, and on PostgreSQL 15 built with dtrace probes "
            "extends/writes counted and timed by bpftrace in one extra traced run per cell. Run it once "
            "per server (--pg-config); `pglab report` shows the latest run of each major version side "
            "by side."
        ),
    )
    parser.add_argument("--sizes", type=opt.size_list, metavar="S,S,...",
                        help=f"source tables (default {','.join(opt.DEFAULT_SIZES)}): 9MB = the article's "
                             f"1134-block table ({opt.ARTICLE_9MB_ROWS:,} rows of a 100-byte pad), 1M = "
                             "1,000,000 such rows (~135 MB), or ROWS[xWIDTH] such as 250k or 1Mx1900 "
                             "(~2 GB, the article's 1M-row table)")
    parser.add_argument("--iterations", type=positive_int, metavar="K",
                        help=f"timed runs per cell (default {opt.DEFAULT_ITERATIONS}, --quick {opt.QUICK_ITERATIONS})")
    parser.add_argument("--small-temp-buffers", type=positive_int, default=opt.SMALL_TEMP_BUFFERS, metavar="BLOCKS",
                        help="temp_buffers of the 'small' runs, in blocks (default %(default)s = 800 kB, the "
                             "article's; PostgreSQL's minimum is 100)")
    parser.add_argument("--tmpfs-dir", type=Path, default=opt.DEFAULT_TMPFS_DIR, metavar="DIR",
                        help="where the scratch tmpfs tablespace goes (default %(default)s)")
    parser.add_argument("--no-tmpfs", action="store_true", help="default tablespace only")
    parser.add_argument("--no-trace", dest="trace", action="store_false",
                        help="skip the bpftrace pass even where the server has USDT probes")
    parser.add_argument("--quick", action="store_true",
                        help=f"demo grid: sizes {','.join(opt.QUICK_SIZES)}, {opt.QUICK_ITERATIONS} iterations "
                             "(explicit --sizes/--iterations win)")
    add_out_argument(parser, NAME)
    add_target_arguments(parser, "")


def options_from(args: argparse.Namespace) -> TempExtendOptions:
    check_out_and_pg_config(args)
    if args.small_temp_buffers < opt.SMALL_TEMP_BUFFERS:
        raise LabError(f"--small-temp-buffers {args.small_temp_buffers}: PostgreSQL's minimum is "
                       f"{opt.SMALL_TEMP_BUFFERS} blocks")
    tmpfs_dir: Path | None = None if args.no_tmpfs else args.tmpfs_dir
    if tmpfs_dir is not None and not tmpfs_dir.is_dir():
        raise LabError(f"--tmpfs-dir {tmpfs_dir} is not an existing directory (or pass --no-tmpfs)")
    return TempExtendOptions(
        sizes=args.sizes or tuple(opt.PRESETS[s] for s in (opt.QUICK_SIZES if args.quick else opt.DEFAULT_SIZES)),
        iterations=args.iterations or (opt.QUICK_ITERATIONS if args.quick else opt.DEFAULT_ITERATIONS),
        out_dir=args.out,
        small_temp_buffers=args.small_temp_buffers,
        tmpfs_dir=tmpfs_dir.resolve() if tmpfs_dir else None,
        trace=args.trace,
        pg_config=args.pg_config,
        dsn=args.dsn,
        quick=args.quick,
    )


def command(args: argparse.Namespace) -> int:
    options = options_from(args)
    # Imported here: numpy, scipy and matplotlib take a while, and option errors should not wait.
    from pglab.experiments.temp_extend.report import report
    from pglab.experiments.temp_extend.runner import run_temp_extend

    result = run_temp_extend(options, Console(stderr=True))
    report(result, result_console())
    return 0
