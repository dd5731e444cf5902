"""pglab buffered-plan: the batching-node experiment (extension pg_buffered_plan).

TPC-H data from tpchgen-cli is COPYed into a throwaway cluster that preloads
pg_buffered_plan.  The seed's `SELECT count(1) FROM lineitem`, TPC-H Q1 and Q6
(optionally all 22) run serially (no parallel workers, no JIT) with the nodes
off and at each batch size under each placement, rounds interleaved so that
drift on a shared machine hits every configuration alike.  Medians, speedups
vs off, raw CSV and plots go to --out.

Counters per run beside the seed's perf figures: `perf stat` on the backend
where the CPU exposes hardware events; otherwise cachegrind (cache and branch
simulation) of a single-user backend (`postgres --single`), which counts
deterministically: a run with the query minus the same run without it.
Before each counted configuration an uncounted single-user backend with the
same settings SHOWs them and EXPLAINs the query, and the run stops unless the
plan holds the nodes that configuration should put there (see `check_plan`).
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path
from typing import Any

from rich.console import Console

from pglab.cliargs import add_target_arguments, check_pg_config, resolve_out_dir
from pglab.errors import LabError
from pglab.experiments.buffered_plan.options import BATCH_SIZES, OFF, PLACEMENTS, SEED_QUERY, Options
from pglab.experiments.buffered_plan.tpch import tpch_dir

NAME = "buffered-plan"


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        NAME,
        help="time TPC-H with the BufferedPlan batching nodes (extension pg_buffered_plan)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quick", action="store_true",
                   help="SF 0.1, 3 rounds, counters for Q1 at off/2048 only (a couple of minutes)")
    p.add_argument("--scale", type=float, help="TPC-H scale factor (default 1, 0.1 with --quick)")
    p.add_argument("--repeats", type=int, help="rounds per configuration (default 5, 3 with --quick)")
    p.add_argument("--all-queries", action="store_true", help="also time the 22 TPC-H queries")
    p.add_argument("--counter-scale", type=float, default=0.01,
                   help="scale factor of the counter runs (cachegrind is ~50x slower; default %(default)s)")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="output directory (its parent must exist; default results/buffered-plan-pg<major>)")
    add_target_arguments(p, ", pg_buffered_plan installed in it; --dsn is refused: the counters "
                            "run a single-user backend on the cluster's own data directory")


def options_from(args: argparse.Namespace) -> Options:
    if args.dsn is not None:
        raise LabError("buffered-plan needs a throwaway cluster (--pg-config): its counters run a "
                       "single-user backend on the cluster's data directory, which --dsn cannot give")
    check_pg_config(args.pg_config)
    queries_dir = tpch_dir() / "queries"
    queries = {"count": SEED_QUERY,
               "q01": (queries_dir / "q01.sql").read_text(),
               "q06": (queries_dir / "q06.sql").read_text()}
    if args.all_queries:
        for path in sorted(queries_dir.glob("q*.sql")):
            queries.setdefault(path.stem, path.read_text())
    out_dir = resolve_out_dir(args.out, NAME, args.pg_config, None)
    repeats = args.repeats or (3 if args.quick else 5)
    if repeats < 1:
        raise LabError("--repeats must be at least 1")
    all_configs = (OFF,) + tuple(itertools.product(PLACEMENTS, BATCH_SIZES))
    return Options(
        out_dir=out_dir, pg_config=args.pg_config,
        scale=args.scale or (0.1 if args.quick else 1.0), repeats=repeats, queries=queries,
        batch_sizes=BATCH_SIZES, counter_scale=args.counter_scale,
        counter_queries=("q01",) if args.quick else ("count", "q01", "q06"),
        counter_configs=((OFF, ("scans", 2048), ("all", 2048)) if args.quick else all_configs),
        quick=args.quick,
    )


def command(args: argparse.Namespace) -> int:
    options = options_from(args)
    # Imported here: matplotlib and numpy take a while, and option errors should not wait.
    from pglab.experiments.buffered_plan.report import report
    from pglab.experiments.buffered_plan.runner import run_experiment

    console = Console(stderr=True)
    run = run_experiment(options, console)
    report(run, Console())
    return 0
