"""`pglab index-build`: argument parsing and the command."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from pglab import equal_memory as em
from pglab.cliargs import (
    add_out_argument,
    add_target_arguments,
    check_checksums_target,
    check_out_and_pg_config,
    memory_size,
    memory_size_bytes,
    memory_size_list,
    name_list,
    positive_int,
    positive_int_list,
)
from pglab.errors import LabError
from pglab.experiments.index_build import options as opt
from pglab.experiments.index_build.options import IndexBuildOptions
from pglab.progress import result_console

NAME = opt.NAME


def key_list(text: str) -> tuple[str, ...]:
    """'int,text' -> ('int', 'text'): key types of opt.KEYS, in the given order."""
    keys = name_list(text)
    bad = [k for k in keys if k not in opt.KEYS]
    if bad:
        raise argparse.ArgumentTypeError(f"{', '.join(bad)}: not a key type ({', '.join(opt.KEYS)})")
    return keys


def temp_buffers_list(text: str) -> tuple[str, ...]:
    """'1GB,8MB' -> ('8MB', '1GB'): pool sizes, ascending; a size given twice (also as 8192kB and 8MB) once."""
    by_bytes: dict[int, str] = {}
    for size in memory_size_list(text):
        by_bytes.setdefault(memory_size_bytes(size), size)
    return tuple(size for _, size in sorted(by_bytes.items()))


def non_negative_int(text: str) -> int:
    if text.strip() == "0":
        return 0
    return positive_int(text)


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        NAME,
        help="CREATE INDEX (btree) on a temporary table just written: serial, pg_tempbuf's parallel build, and an "
             "UNLOGGED copy's parallel build",
        description=(
            "Times, in one run, interleaved, per table size and key type (int: g; text: md5(g::text)), CREATE INDEX "
            "on a table just written in the session (CREATE TABLE AS, then CREATE INDEX, then DROP TABLE, each "
            "round): (1) a temporary table with pg_tempbuf.parallel_index_build = off (core's serial build, as stock "
            "PostgreSQL); (2) the same with it on (ours: core's parallel build, core's rule for the worker count, its "
            "workers reading the leader's pool or, where they cannot map it, the file the leader writes first); (3) an UNLOGGED copy under core's parallel build; (4) the UNLOGGED "
            "copy with max_parallel_maintenance_workers = 0 (--no-unlogged-serial skips it); each at every "
            "--temp-buffers size. Reports the medians, min and max, the workers each build asked for and launched "
            "(trace_sort), the parallel workers' peak anonymous memory (RssAnon), the ratios of the same run "
            "(ours / serial speedup, ours / UNLOGGED parallel against the 10% goal line), and checks each index "
            "built in the first round against a sequential scan."
        ),
    )
    parser.add_argument("--rows", type=positive_int_list, metavar="N,...",
                        help=f"table sizes in rows (default {','.join(map(str, opt.DEFAULT_ROWS))}, --quick "
                             f"{','.join(map(str, opt.QUICK_ROWS))})")
    parser.add_argument("--keys", type=key_list, default=opt.KEYS, metavar="K,...",
                        help="key types: int (g, in order), text (md5(g::text), in random order) (default "
                             f"{','.join(opt.KEYS)})")
    parser.add_argument("--repetitions", type=positive_int, metavar="K",
                        help=f"rounds, each building the index once in every mode (default {opt.DEFAULT_REPETITIONS}, "
                             f"--quick {opt.QUICK_REPETITIONS})")
    parser.add_argument("--workers", type=positive_int, default=opt.DEFAULT_WORKERS, metavar="W",
                        help="max_parallel_maintenance_workers of the parallel modes (default %(default)s); core's "
                             "rule may give fewer (the table's size, maintenance_work_mem / 32MB a participant)")
    parser.add_argument("--maintenance-work-mem", type=memory_size, default=opt.DEFAULT_MAINTENANCE_WORK_MEM,
                        metavar="SIZE",
                        help="maintenance_work_mem of every session (default %(default)s: core's rule then gives 1 "
                             "worker; 96MB gives 2)")
    parser.add_argument("--temp-buffers", type=temp_buffers_list, default=opt.DEFAULT_TEMP_BUFFERS,
                        metavar="SIZE,...",
                        help="temp_buffers of the sessions, set before their first temporary table; several sizes "
                             "(8MB,1GB) run every size and key type at each, interleaved in each round, a session "
                             "per mode and size, reported per size (default "
                             f"{','.join(opt.DEFAULT_TEMP_BUFFERS)})")
    em.add_shared_buffers_argument(parser)
    parser.add_argument("--table-parallel-workers", type=non_negative_int, metavar="N",
                        help="the tables' parallel_workers storage parameter, which core's rule takes instead of the "
                             "size and maintenance_work_mem (default: not set)")
    parser.add_argument("--unlogged-serial", action=argparse.BooleanOptionalAction, default=True,
                        help="also time the UNLOGGED copy's serial build, max_parallel_maintenance_workers = 0, for "
                             "reference (default: on)")
    parser.add_argument("--worker-memory", action=argparse.BooleanOptionalAction, default=True,
                        help="sample the parallel workers' anonymous memory (RssAnon, /proc/<pid>/status) every "
                             f"{opt.SAMPLE_INTERVAL_S * 1000:g} ms during every build, from another connection; "
                             "the report gives each build's largest worker peak (default: on; nothing is sampled "
                             "where the server's /proc is not readable)")
    parser.add_argument("--quick", action="store_true",
                        help=f"demo size: {','.join(map(str, opt.QUICK_ROWS))} rows, {opt.QUICK_REPETITIONS} rounds "
                             "(explicit options win)")
    add_out_argument(parser, NAME)
    add_target_arguments(parser, ", pg_tempbuf installed in it")
    parser.add_argument("--checksums", action=argparse.BooleanOptionalAction, default=None,
                        help="data checksums of the throwaway cluster (default: initdb's default)")


def options_from(args: argparse.Namespace) -> IndexBuildOptions:
    check_out_and_pg_config(args)
    check_checksums_target(args)
    if args.shared_buffers is not None and args.dsn is not None:
        raise LabError("--shared-buffers sizes the throwaway server: not with --dsn (set it on that server)")
    if not args.keys:
        raise LabError("--keys: at least one key type")
    return IndexBuildOptions(
        rows=args.rows or (opt.QUICK_ROWS if args.quick else opt.DEFAULT_ROWS),
        keys=tuple(args.keys),
        repetitions=args.repetitions or (opt.QUICK_REPETITIONS if args.quick else opt.DEFAULT_REPETITIONS),
        workers=args.workers,
        maintenance_work_mem=args.maintenance_work_mem,
        temp_buffers=args.temp_buffers,
        out_dir=args.out,
        unlogged_serial=args.unlogged_serial,
        table_parallel_workers=args.table_parallel_workers,
        pg_config=args.pg_config,
        dsn=args.dsn,
        checksums=args.checksums,
        shared_buffers=args.shared_buffers,
        quick=args.quick,
        worker_memory=args.worker_memory,
    )


def command(args: argparse.Namespace) -> int:
    options = options_from(args)
    # Imported here: numpy, scipy and matplotlib take a while, and option errors should not wait.
    from pglab.experiments.index_build.report import report
    from pglab.experiments.index_build.runner import run_index_build

    run = run_index_build(options, Console(stderr=True))
    report(run, result_console())
    return 0
