"""`pglab sequence-cache`: argument parsing and the command."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from pglab.cliargs import (
    add_out_argument,
    add_target_arguments,
    check_out_and_pg_config,
    positive_int,
    positive_int_list,
)
from pglab.errors import LabError
from pglab.experiments.sequence_cache import options as opt
from pglab.experiments.sequence_cache.options import Kind, PerfMode, SequenceCacheOptions
from pglab.progress import result_console

NAME = opt.NAME


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        NAME,
        help="nextval() throughput of cached, uncached and unlogged sequences vs pgbench clients, with perf",
        description=(
            "The 004 article's benchmark: sequences CACHE 1, CACHE 100 and UNLOGGED (PostgreSQL 15+); "
            "pgbench (from the server's bindir) runs the transaction BEGIN; SELECT nextval(seq); END; and "
            "the bulk one BEGIN; SELECT seq_bulk(seq, N); END; (a PL/pgSQL loop of N nextval calls) with "
            "-c = -j clients from 1 to 4 x cores. Reports TPS per client count, where scaling stops, and, "
            "from one extra run per variant sampled with perf record -e cpu-clock, the share of the "
            "backends' time in spinlock and LWLock functions. Run it once per server (--pg-config); "
            "`pglab report` shows the latest run of each major version side by side."
        ),
    )
    parser.add_argument("--sequences", type=opt.variant_list, metavar="V,V,...",
                        help=f"sequence variants, cacheN or unlogged-cacheN (default {','.join(opt.DEFAULT_VARIANTS)})")
    parser.add_argument("--transactions", type=opt.kind_list, metavar="K,K",
                        help="single (one nextval), bulk (seq_bulk) or both (default single,bulk)")
    parser.add_argument("--clients", type=positive_int_list, metavar="N,N,...",
                        help="pgbench client counts (default powers of two and multiples of the core count up "
                             "to 4 x cores; --quick: 1, cores, 4 x cores)")
    parser.add_argument("--duration", type=positive_int, metavar="SECONDS",
                        help=f"pgbench -T per point (default {opt.DEFAULT_DURATION_S}, --quick {opt.QUICK_DURATION_S}; "
                             "the article: 60)")
    parser.add_argument("--calls", type=positive_int, metavar="N",
                        help=f"nextval calls per bulk transaction (default {opt.ARTICLE_BULK_CALLS:,} as in the "
                             f"article, --quick {opt.QUICK_BULK_CALLS:,})")
    parser.add_argument("--perf", type=PerfMode, choices=list(PerfMode), default=PerfMode.MAX,
                        help="perf sampling runs: at the largest client count (max), at every count (all) or "
                             "none (default %(default)s)")
    parser.add_argument("--quick", action="store_true",
                        help="demo grid: 1 s per point, clients 1, cores, 4 x cores, "
                             f"{opt.QUICK_BULK_CALLS:,} calls per bulk transaction, perf for the bulk "
                             "transaction only (as in the article; explicit options win)")
    add_out_argument(parser, NAME)
    add_target_arguments(parser, "")


def options_from(args: argparse.Namespace) -> SequenceCacheOptions:
    check_out_and_pg_config(args)
    cores = opt.cores()
    clients = args.clients or (opt.quick_clients(cores) if args.quick else opt.default_clients(cores))
    if args.calls is not None and Kind.BULK not in (args.transactions or tuple(Kind)):
        raise LabError("--calls only applies to bulk transactions, which --transactions leaves out")
    kinds = args.transactions or tuple(Kind)
    perf_kinds = (Kind.BULK,) if args.quick and Kind.BULK in kinds and args.perf is PerfMode.MAX else kinds
    return SequenceCacheOptions(
        variants=args.sequences or tuple(opt.parse_variant(v) for v in opt.DEFAULT_VARIANTS),
        kinds=kinds,
        clients=clients,
        duration_s=args.duration or (opt.QUICK_DURATION_S if args.quick else opt.DEFAULT_DURATION_S),
        bulk_calls=args.calls or (opt.QUICK_BULK_CALLS if args.quick else opt.ARTICLE_BULK_CALLS),
        perf=args.perf,
        out_dir=args.out,
        pg_config=args.pg_config,
        dsn=args.dsn,
        quick=args.quick,
        cores=cores,
        perf_kinds=perf_kinds,
    )


def command(args: argparse.Namespace) -> int:
    options = options_from(args)
    # Imported here: numpy, scipy and matplotlib take a while, and option errors should not wait.
    from pglab.experiments.sequence_cache.report import report
    from pglab.experiments.sequence_cache.runner import run_sequence_cache

    result = run_sequence_cache(options, Console(stderr=True))
    report(result, result_console())
    return 0
