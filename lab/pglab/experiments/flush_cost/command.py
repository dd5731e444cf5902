"""`pglab flush-cost`: argument parsing and the command."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from pglab.cliargs import check_checksums_target, check_pg_config, positive_int, resolve_out_dir
from pglab.errors import LabError
from pglab.experiments.flush_cost import options as flush_options
from pglab.experiments.flush_cost.options import EvictMode, FlushCostOptions

NAME = "flush-cost"


def size_list(text: str) -> tuple[int, ...]:
    """'128,256, 1024' -> (128, 256, 1024): table sizes in blocks."""
    parts = [p.strip() for p in text.replace(" ", ",").split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("no sizes given")
    sizes = []
    for part in parts:
        try:
            sizes.append(positive_int(part))
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"size {part!r} is not a positive integer (blocks)") from None
    return tuple(sorted(set(sizes)))


def add_parser(commands: Any) -> None:
    flush = commands.add_parser(
        NAME,
        help="calibrate the cost of flushing temp buffers (the article's benchmark)",
        description=(
            "For each size N (blocks) and iteration: fill a temp table of exactly N blocks with "
            "temp_buffers = 110% of N, then measure with EXPLAIN (ANALYZE, TIMING OFF, BUFFERS): "
            "flush, dry flush, eviction, sequential read, dry read, eviction, random-order read, "
            "hit check, mark dirty, flush of randomly placed buffers. Buffer counts are checked "
            "against N. Also times the same bytes written/read without PostgreSQL. Fits per-block "
            "costs and prints pg_tempbuf.write_page_cost, pg_tempbuf.buffer_scan_cost and pg_tempbuf.read_page_cost."
        ),
    )
    flush.add_argument("--sizes", type=size_list, metavar="N,N,...",
                       help="table sizes in blocks (default: the article's 128..262144, powers of two; "
                            "sizes that do not fit in memory are dropped with a message)")
    flush.add_argument("--iterations", type=positive_int, metavar="K",
                       help=f"iterations per size (default {flush_options.DEFAULT_ITERATIONS})")
    flush.add_argument("--quick", action="store_true",
                       help=f"small grid for a demo: sizes {','.join(map(str, flush_options.QUICK_SIZES))}, "
                            f"{flush_options.QUICK_ITERATIONS} iterations (explicit --sizes/--iterations win)")
    flush.add_argument("--out", type=Path, metavar="DIR",
                       help="output directory, created if missing (its parent must exist; "
                            "default results/flush-cost-pg<major>)")
    flush.add_argument("--evict", type=EvictMode, choices=list(EvictMode), default=EvictMode.FUNCTION,
                       help="function: pg_evict_local_buffers(table); displacer: the article's way, fill "
                            "the pool with a scratch table, flush and drop it (default %(default)s)")
    target = flush.add_mutually_exclusive_group()
    target.add_argument("--pg-config", type=Path,
                        help="run a throwaway cluster of this installation, pg_tempbuf installed in it "
                             "(default: $PG_CONFIG, else the wheel's PostgreSQL 18)")
    target.add_argument("--dsn", help="use this existing server instead (libpq connection string)")
    flush.add_argument("--tablespace-dir", type=Path, metavar="DIR",
                       help="put temp tables in a scratch tablespace created in DIR (e.g. /dev/shm), dropped after")
    flush.add_argument("--cold-cache", action="store_true",
                       help="drop the OS page cache before each read (needs root and /proc/sys/vm/drop_caches)")
    flush.add_argument("--checksums", action=argparse.BooleanOptionalAction, default=None,
                       help="data checksums of the throwaway cluster (default: initdb's default: "
                            "on for PostgreSQL 18, off before)")


def options_from(args: argparse.Namespace) -> FlushCostOptions:
    check_checksums_target(args)
    if args.tablespace_dir is not None and not args.tablespace_dir.is_dir():
        raise LabError(f"--tablespace-dir {args.tablespace_dir} is not an existing directory")
    check_pg_config(args.pg_config)
    out_dir = resolve_out_dir(args.out, NAME, args.pg_config, args.dsn)
    sizes = args.sizes or (flush_options.QUICK_SIZES if args.quick else flush_options.ARTICLE_SIZES)
    iterations = args.iterations or (
        flush_options.QUICK_ITERATIONS if args.quick else flush_options.DEFAULT_ITERATIONS
    )
    return FlushCostOptions(
        sizes=tuple(sizes),
        iterations=iterations,
        out_dir=out_dir,
        evict=args.evict,
        pg_config=args.pg_config,
        dsn=args.dsn,
        checksums=args.checksums,
        tablespace_dir=args.tablespace_dir.resolve() if args.tablespace_dir else None,
        cold_cache=args.cold_cache,
        quick=args.quick,
    )


def command(args: argparse.Namespace) -> int:
    options = options_from(args)
    # Imported here: numpy, scipy and matplotlib take a while, and option errors should not wait.
    from pglab.experiments.flush_cost.report import report
    from pglab.experiments.flush_cost.runner import run_flush_cost

    progress_console = Console(stderr=True)
    run = run_flush_cost(options, progress_console)
    report(run, Console())
    return 0
