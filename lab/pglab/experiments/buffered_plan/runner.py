"""Running `pglab buffered-plan`: the throwaway cluster, the timed rounds.
"""

from __future__ import annotations

import itertools
import time

from rich.console import Console

from pglab.cluster import Cluster
from pglab.errors import LabError
from pglab.experiments.buffered_plan.analysis import Run
from pglab.experiments.buffered_plan.counters import measure_counters
from pglab.experiments.buffered_plan.options import (
    EXTENSION,
    OFF,
    PLACEMENTS,
    SERVER_SETTINGS,
    Options,
    config_gucs,
)
from pglab.experiments.buffered_plan.tpch import generate, load


def run_experiment(options: Options, console: Console) -> Run:
    options.out_dir.mkdir(exist_ok=True)
    run = Run(options)
    configs = [OFF] + list(itertools.product(PLACEMENTS, options.batch_sizes))
    with console.status(f"generating TPC-H SF {options.scale:g}"):
        csv_dir = generate(options.scale, options.out_dir)
    with Cluster(options.pg_config, settings=SERVER_SETTINGS) as cluster:
        if not (cluster.pkglibdir / f"{EXTENSION}.so").exists():
            raise LabError(f"{EXTENSION} is not installed in {cluster.pkglibdir}: "
                           f"make -C {EXTENSION} PG_CONFIG={cluster.install.pg_config} install")
        run.server = cluster.install.version
        run.server_version_num = cluster.version_num
        with console.status(f"loading SF {options.scale:g} into {run.server}"):
            load(cluster, csv_dir)
        with cluster.connect() as conn:
            for name, sql in options.queries.items():
                conn.execute(config_gucs(("scans", 2048)))
                run.plans[name] = "\n".join(r[0] for r in conn.execute("EXPLAIN (COSTS OFF) " + sql))
            # Warm the page cache and the caches of every configuration once.
            for config in configs:
                conn.execute(config_gucs(config))
                for sql in options.queries.values():
                    conn.execute(sql).fetchall()
            for round_no in range(options.repeats):
                order = configs[round_no % len(configs):] + configs[:round_no % len(configs)]
                console.log(f"round {round_no + 1}/{options.repeats}")
                for config in order:
                    conn.execute(config_gucs(config))
                    for name, sql in options.queries.items():
                        start = time.perf_counter()
                        conn.execute(sql).fetchall()
                        ms = (time.perf_counter() - start) * 1000.0
                        run.timings.append({"query": name, "placement": config[0], "batch_size": config[1],
                                            "round": round_no, "ms": ms})
        with console.status("counters"):
            try:
                measure_counters(options, run, cluster)
            except LabError as exc:
                # Keep the timings: report what failed instead of losing the run.
                console.log(f"counters failed: {exc}")
                run.counter_tool += f" -- FAILED: {str(exc).splitlines()[0]}"
    return run
