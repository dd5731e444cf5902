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
import csv
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from pglab import report_section as rs
from pglab.cliargs import resolve_out_dir
from pglab.cluster import Cluster
from pglab.errors import LabError
from pglab.jsonio import write_json
from pglab.machine import machine_info
from pglab.stats import Summary, summarize

EXTENSION = "pg_buffered_plan"
PLACEMENTS = ("scans", "all")
BATCH_SIZES = (64, 256, 1024, 2048, 4096)
TABLES = ("region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem")
SEED_QUERY = "SELECT count(1) FROM lineitem"
OFF = ("off", 0)

# The seed article (TPC-H SF 1, PostgreSQL 9.6-era fork, BufferedForeignScan).
SEED_MS_OFF = 25691.207
SEED_MS_BEST = 22782.283
SEED_BEST_BATCH = 2048
SEED_COUNTERS = {  # off -> batched
    "L1-dcache-load-misses %": (2.48, 0.58), "L1-dcache-store-misses %": (0.68, 0.25),
    "branch-misses %": (1.17, 1.06), "IPC": (1.73, 1.96),
}


@dataclass
class Options:
    out_dir: Path
    pg_config: Path | None
    scale: float
    repeats: int
    queries: dict[str, str]
    batch_sizes: tuple[int, ...]
    counter_scale: float
    counter_queries: tuple[str, ...]
    counter_configs: tuple[tuple[str, int], ...]
    quick: bool


@dataclass
class Run:
    options: Options
    server: str = ""
    server_version_num: int = 0
    timings: list[dict[str, Any]] = field(default_factory=list)
    counters: list[dict[str, Any]] = field(default_factory=list)
    counter_tool: str = ""
    plans: dict[str, str] = field(default_factory=dict)
    # "query config" -> the plan the counted single-user backend made (cachegrind only).
    counter_plans: dict[str, str] = field(default_factory=dict)


# -- command line ------------------------------------------------------------------------


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "buffered-plan",
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
                   help="output directory (its parent must exist; default results/buffered-plan)")
    p.add_argument("--pg-config", type=Path,
                   help="server to use (default: $PG_CONFIG, else the wheel's PostgreSQL 18); "
                        "pg_buffered_plan must be installed in it")


def options_from_args(args: argparse.Namespace) -> Options:
    queries_dir = _tpch_dir() / "queries"
    queries = {"count": SEED_QUERY,
               "q01": (queries_dir / "q01.sql").read_text(),
               "q06": (queries_dir / "q06.sql").read_text()}
    if args.all_queries:
        for path in sorted(queries_dir.glob("q*.sql")):
            queries.setdefault(path.stem, path.read_text())
    out_dir = resolve_out_dir(args.out, Path("results/buffered-plan"))
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
    options = options_from_args(args)
    console = Console(stderr=True)
    run = run_experiment(options, console)
    report(run, Console())
    return 0


# -- data ----------------------------------------------------------------------------------


def _tpch_dir() -> Path:
    """pg_buffered_plan/tpch of the source tree (schema, keys, the 22 queries)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "pg_buffered_plan" / "tpch"
        if candidate.is_dir():
            return candidate
    raise LabError("pg_buffered_plan/tpch not found above " + str(here))


def _tpchgen() -> str:
    for candidate in (str(Path(sys.executable).parent / "tpchgen-cli"), shutil.which("tpchgen-cli")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise LabError("tpchgen-cli not found: pip install tpchgen-cli")


def generate(scale: float, into: Path) -> Path:
    """CSV files of one scale factor, generated once and kept under --out."""
    target = into / f"tpch-sf{scale:g}"
    if not (target / ".complete").exists():
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run([_tpchgen(), "csv", "-s", f"{scale:g}", "-o", str(target), "--overwrite"],
                       check=True, capture_output=True)
        (target / ".complete").touch()
    return target


def load(cluster: Cluster, csv_dir: Path) -> None:
    tpch = _tpch_dir()
    with cluster.connect() as conn:
        conn.execute((tpch / "schema.sql").read_text())
        for table in TABLES:
            with conn.cursor().copy(f"COPY {table} FROM STDIN (FORMAT csv, HEADER true)") as copy:
                with open(csv_dir / f"{table}.csv", "rb") as f:
                    while chunk := f.read(1 << 20):
                        copy.write(chunk)
        conn.execute((tpch / "keys.sql").read_text())
        conn.execute("VACUUM (FREEZE, ANALYZE)")


SERVER_SETTINGS: dict[str, str | int | float | bool] = {
    "shared_preload_libraries": EXTENSION, "shared_buffers": "2GB", "jit": "off",
    "max_parallel_workers_per_gather": 0, "fsync": "off", "synchronous_commit": "off",
    "max_wal_size": "4GB", "autovacuum": "off",
}


def config_gucs(config: tuple[str, int]) -> str:
    placement, batch = config
    if batch == 0:
        return "SET pg_buffered_plan.batch_size = 0;"
    return (f"SET pg_buffered_plan.placement = '{placement}'; "
            f"SET pg_buffered_plan.batch_size = {batch};")


def config_label(config: tuple[str, int]) -> str:
    return "off" if config[1] == 0 else f"{config[0]}/{config[1]}"


# -- timing -------------------------------------------------------------------------------


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


# -- counters -------------------------------------------------------------------------------

PERF_EVENTS = ("instructions", "cycles", "L1-dcache-loads", "L1-dcache-load-misses",
               "branches", "branch-misses")


def perf_works() -> bool:
    """Whether perf can count hardware events here (not on most VMs)."""
    if shutil.which("perf") is None:
        return False
    probe = subprocess.run(["perf", "stat", "-x", ",", "-e", "instructions,L1-dcache-load-misses", "true"],
                           capture_output=True, text=True)
    return probe.returncode == 0 and "<not supported>" not in probe.stderr \
        and "<not counted>" not in probe.stderr


def measure_counters(options: Options, run: Run, cluster: Cluster) -> None:
    if perf_works():
        run.counter_tool = f"perf stat (hardware events) on the backend, SF {options.scale:g}"
        with cluster.connect() as conn:
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
            assert row is not None
            pid = row[0]
            for config in options.counter_configs:
                conn.execute(config_gucs(config))
                plans = {}
                for name in options.counter_queries:
                    plans[name] = "\n".join(r[0] for r in conn.execute("EXPLAIN (COSTS OFF) "
                                                                        + options.queries[name]))
                    check_plan(config, plans[name])
                for name in options.counter_queries:
                    perf = subprocess.Popen(["perf", "stat", "-x", ",", "-e", ",".join(PERF_EVENTS),
                                             "-p", str(pid)], stderr=subprocess.PIPE, text=True)
                    time.sleep(0.2)
                    conn.execute(options.queries[name]).fetchall()
                    perf.send_signal(signal.SIGINT)
                    _, err = perf.communicate()
                    values = {}
                    for line in err.splitlines():
                        parts = line.split(",")
                        if len(parts) > 2 and parts[0].replace(".", "").isdigit():
                            values[parts[2]] = float(parts[0])
                    row = _counter_row(name, config, values, "perf")
                    row.update(plan_nodes(plans[name]))
                    run.counters.append(row)
        return
    if shutil.which("valgrind") is None:
        run.counter_tool = "none (perf has no hardware events here and valgrind is not installed)"
        return
    run.counter_tool = (f"cachegrind --cache-sim=yes --branch-sim=yes on postgres --single, "
                        f"SF {options.counter_scale:g} (perf stat: hardware events not supported here)")
    csv_dir = generate(options.counter_scale, options.out_dir)
    with Cluster(options.pg_config, settings=SERVER_SETTINGS) as small:
        load(small, csv_dir)
        small.stop()
        for config in options.counter_configs:
            plans = {name: _single_user_plan(small, config, options.queries[name])
                     for name in options.counter_queries}
            base = _cachegrind(small, config, "")
            for name in options.counter_queries:
                run.counter_plans[f"{name} {config_label(config)}"] = plans[name]
                with_query = _cachegrind(small, config, options.queries[name])
                delta = {k: with_query[k] - base.get(k, 0.0) for k in with_query}
                row = _counter_row(name, config, delta, "cachegrind")
                row.update(plan_nodes(plans[name]))
                run.counters.append(row)


def _postgres_single(cluster: Cluster, script: str, cwd: Path,
                     wrapper: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """`postgres --single -j` (optionally under `wrapper`, e.g. valgrind) fed `script`.

    A single-user backend reports errors on stderr, not stdout, and carries on
    with the next statement: any ERROR or FATAL there fails the run, so that a
    rejected SET cannot leave a configuration measured with the defaults.
    """
    postgres = cluster.install.program("postgres")
    user, group, extra_groups = cluster.os_user.subprocess_identity()
    result = subprocess.run(
        [*(wrapper or []), str(postgres), "--single", "-j", "-D", str(cluster.data_dir),
         "-c", f"shared_preload_libraries={EXTENSION}", "-c", "jit=off",
         "-c", "max_parallel_workers_per_gather=0", "-c", "shared_buffers=128MB", "postgres"],
        input=script, capture_output=True, text=True, cwd=cwd,
        user=user, group=group, extra_groups=extra_groups,
    )
    if result.returncode != 0:
        raise LabError(f"single-user backend failed ({result.returncode}):\n{result.stderr[-2000:]}")
    failed = [line for line in result.stderr.splitlines() if re.search(r"\b(ERROR|FATAL|PANIC):", line)]
    if failed:
        raise LabError("statement failed in single-user mode: " + failed[0] + "\n" + result.stderr[-2000:])
    return result


def _single_user_script(config: tuple[str, int], sql: str) -> str:
    """Statements for `postgres --single -j`: each ends in a semicolon and a blank line."""
    script = f"{config_gucs(config)}\n\n"
    if sql:
        script += sql.strip().rstrip(";") + ";\n\n"
    return script


_SINGLE_USER_VALUE = re.compile(r'^\s*1: (.+?) = "(.*)"\t\(typeid = ', re.MULTILINE)


def _single_user_plan(cluster: Cluster, config: tuple[str, int], sql: str) -> str:
    """EXPLAIN (COSTS OFF) of `sql` in an uncounted single-user backend set up as the counted one,
    after checking that the settings took; raises LabError unless the plan fits `config`."""
    with tempfile.TemporaryDirectory(prefix="pglab-plan-") as tmp:
        cluster.os_user.chown(Path(tmp))
        script = (_single_user_script(config, "")
                  + "SHOW pg_buffered_plan.placement;\n\nSHOW pg_buffered_plan.batch_size;\n\n"
                  + "EXPLAIN (COSTS OFF) " + sql.strip().rstrip(";") + ";\n\n")
        result = _postgres_single(cluster, script, Path(tmp))
    values = _SINGLE_USER_VALUE.findall(result.stdout)
    shown = {name: value for name, value in values if name.startswith("pg_buffered_plan.")}
    plan = "\n".join(value for name, value in values if name == "QUERY PLAN")
    placement, batch = config
    want = {"pg_buffered_plan.batch_size": str(batch)}
    if batch:
        want["pg_buffered_plan.placement"] = placement
    for name, value in want.items():
        if shown.get(name) != value:
            raise LabError(f"{config_label(config)}: single-user backend shows {name} = "
                           f"{shown.get(name)!r}, not {value!r}:\n{result.stdout[-2000:]}")
    check_plan(config, plan)
    return plan


def plan_nodes(plan: str) -> dict[str, int]:
    """Our nodes in an EXPLAIN (COSTS OFF) text plan, and the stock Seq Scans left."""
    return {"batched_seq_scans": plan.count("Custom Scan (BatchedSeqScan)"),
            "buffered_nodes": plan.count("Custom Scan (Buffered)"),
            "seq_scans": len(re.findall(r"\bSeq Scan\b", plan))}


def check_plan(config: tuple[str, int], plan: str) -> None:
    """Raise LabError unless `plan` holds the nodes `config` should give it.

    off: none of ours.  scans/N: no Buffered and no stock Seq Scan (the TPC-H
    tables are heap), every batch size N.  all/N: in addition at least one Buffered node.
    """
    placement, batch = config
    nodes = plan_nodes(plan)
    sizes = set(re.findall(r"Batch Size: (\d+)", plan))
    problems = []
    if not plan:
        problems.append("no plan")
    elif batch == 0:
        if nodes["batched_seq_scans"] or nodes["buffered_nodes"]:
            problems.append("has batching nodes with the nodes off")
    else:
        if nodes["seq_scans"]:  # every table here is heap: each Seq Scan should be batched
            problems.append(f"{nodes['seq_scans']} stock Seq Scan left")
        if placement == "scans" and nodes["buffered_nodes"]:
            problems.append("Buffered node with placement = scans")
        if placement == "all" and not nodes["buffered_nodes"]:
            problems.append("no Buffered node with placement = all")
        if sizes - {str(batch)}:
            problems.append(f"batch sizes {sorted(sizes)}, not {batch}")
    if problems:
        raise LabError(f"plan for {config_label(config)} is not what it should be "
                       f"({'; '.join(problems)}):\n{plan}")


def _cachegrind(cluster: Cluster, config: tuple[str, int], sql: str) -> dict[str, float]:
    """Counts of one single-user backend that runs the settings and `sql`."""
    with tempfile.TemporaryDirectory(prefix="pglab-cg-") as tmp:
        tmp_dir = Path(tmp)
        cluster.os_user.chown(tmp_dir)
        out = tmp_dir / "cachegrind.out"
        _postgres_single(cluster, _single_user_script(config, sql), tmp_dir,
                         wrapper=["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes",
                                  f"--cachegrind-out-file={out}"])
        if not out.exists():
            raise LabError(f"cachegrind wrote no {out.name}")
        events: list[str] = []
        summary: list[float] = []
        for line in out.read_text().splitlines():
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:"):
                summary = [float(v) for v in line.split()[1:]]
        return dict(zip(events, summary, strict=True))


def _counter_row(name: str, config: tuple[str, int], v: dict[str, float], tool: str) -> dict[str, Any]:
    """Instructions, L1 data misses and branch mispredictions, raw and as rates."""
    if tool == "perf":
        instr, loads = v.get("instructions", 0.0), v.get("L1-dcache-loads", 0.0)
        l1d_miss, branches = v.get("L1-dcache-load-misses", 0.0), v.get("branches", 0.0)
        mispredicts, cycles = v.get("branch-misses", 0.0), v.get("cycles", 0.0)
    else:
        instr = v.get("Ir", 0.0)
        loads = v.get("Dr", 0.0) + v.get("Dw", 0.0)
        l1d_miss = v.get("D1mr", 0.0) + v.get("D1mw", 0.0)
        branches = v.get("Bc", 0.0) + v.get("Bi", 0.0)
        mispredicts = v.get("Bcm", 0.0) + v.get("Bim", 0.0)
        cycles = 0.0
    return {
        "query": name, "placement": config[0], "batch_size": config[1], "tool": tool,
        "instructions": instr, "l1d_accesses": loads, "l1d_misses": l1d_miss,
        "l1d_miss_pct": 100.0 * l1d_miss / loads if loads else float("nan"),
        "branches": branches, "branch_mispredicts": mispredicts,
        "branch_miss_pct": 100.0 * mispredicts / branches if branches else float("nan"),
        "ipc": instr / cycles if cycles else float("nan"),
    }


# -- report ----------------------------------------------------------------------------------


def _nodes_label(counter: dict[str, Any]) -> str:
    """BatchedSeqScan / Buffered / Seq Scan counts of a counter row's plan."""
    if "buffered_nodes" not in counter:
        return ""
    return f"{counter['batched_seq_scans']}/{counter['buffered_nodes']}/{counter['seq_scans']}"


def summaries(run: Run) -> dict[tuple[str, str, int], Summary]:
    groups: dict[tuple[str, str, int], list[float]] = {}
    for row in run.timings:
        groups.setdefault((row["query"], row["placement"], row["batch_size"]), []).append(row["ms"])
    return {key: summarize(values) for key, values in groups.items()}


def report(run: Run, console: Console) -> None:
    options = run.options
    out = options.out_dir
    summ = summaries(run)
    with open(out / "raw.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["query", "placement", "batch_size", "round", "ms"])
        writer.writeheader()
        writer.writerows(run.timings)
    if run.counters:
        with open(out / "counters.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(run.counters[0]))
            writer.writeheader()
            writer.writerows(run.counters)
    speedups: dict[str, dict[str, float]] = {}
    rows = []
    for (query, placement, batch), s in sorted(summ.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1])):
        off = summ[(query, "off", 0)].median
        label = config_label((placement, batch))
        speedups.setdefault(query, {})[label] = off / s.median
        rows.append({"query": query, "config": label, "n": s.n, "median_ms": s.median,
                     "ci_low": s.ci_low, "ci_high": s.ci_high, "cv": s.cv, "speedup_vs_off": off / s.median})
    write_json(out / "meta.json", {
        "server": run.server, "machine": machine_info(), "scale": options.scale, "repeats": options.repeats,
        "server_settings": SERVER_SETTINGS, "counter_tool": run.counter_tool,
        "counter_scale": options.counter_scale,
        "seed": {"ms_off": SEED_MS_OFF, "ms_best": SEED_MS_BEST, "best_batch": SEED_BEST_BATCH,
                 **SEED_COUNTERS},
        "summaries": rows, "plans": run.plans,
        "counter_plans": run.counter_plans,
        "note": "speedup_vs_off = median(off) / median(config); > 1 is faster. Medians of rounds "
                "interleaved in one session on a shared machine.",
    })
    _plot(run, speedups, out / "speedup.png")
    _write_summary_md(run, rows, out / "summary.md")

    configs = [OFF] + list(itertools.product(PLACEMENTS, options.batch_sizes))
    table = Table(title=f"Speedup vs off (median off / median config; > 1 is faster), {run.server}, "
                        f"TPC-H SF {options.scale:g}, {options.repeats} rounds")
    table.add_column("config")
    for query in options.queries:
        table.add_column(query, justify="right")
    table.add_row("off (ms)", *[f"{summ[(q, 'off', 0)].median:.0f}" for q in options.queries])
    for config in configs[1:]:
        table.add_row(config_label(config),
                      *[f"{speedups[q][config_label(config)]:.3f}" for q in options.queries])
    console.print(table)
    if run.counters:
        ctable = Table(title=f"Counters per run ({run.counter_tool})")
        for col in ("query", "config", "plan nodes", "instructions", "L1d miss %", "branch miss %",
                    "vs off: instr"):
            ctable.add_column(col, justify="right")
        base = {c["query"]: c for c in run.counters if c["batch_size"] == 0}
        for c in run.counters:
            ctable.add_row(c["query"], config_label((c["placement"], c["batch_size"])), _nodes_label(c),
                           f"{c['instructions']:,.0f}", f"{c['l1d_miss_pct']:.3f}",
                           f"{c['branch_miss_pct']:.3f}",
                           f"{c['instructions'] / base[c['query']]['instructions']:.4f}"
                           if c["query"] in base else "")
        console.print(ctable)
    console.print(f"seed (SF 1, perf): {SEED_MS_OFF:.0f} ms -> {SEED_MS_BEST:.0f} ms at {SEED_BEST_BATCH} "
                  f"(x{SEED_MS_OFF / SEED_MS_BEST:.3f}); L1-dcache-load-misses 2.48% -> 0.58%, "
                  f"branch-misses 1.17% -> 1.06%, IPC 1.73 -> 1.96")
    write_report_section(run, summ, speedups)
    console.print(f"written: {out}/raw.csv, counters.csv, summary.md, meta.json, speedup.png")


def write_report_section(run: Run, summ: dict[tuple[str, str, int], Summary],
                         speedups: dict[str, dict[str, float]]) -> None:
    """section.json for `pglab report`: the seed's TPC-H figures beside ours."""
    options = run.options
    seed_rows: list[list[rs.Cell]] = [["TPC-H SF 1, ms", SEED_MS_OFF, SEED_MS_BEST]]
    seed_rows += [[name, before, after] for name, (before, after) in SEED_COUNTERS.items()]
    article = rs.Table(
        columns=["measure", "off", "batched, 2048"],
        rows=seed_rows,
        caption="Seed article 001 (perf stat, a PostgreSQL fork, TPC-H SF 1)",
    )
    configs = [config_label(c) for c in itertools.product(PLACEMENTS, options.batch_sizes)]
    ours = rs.Table(
        columns=["query", "off ms", *[f"{c} (x)" for c in configs]],
        rows=[[q, summ[(q, "off", 0)].median, *[speedups[q].get(c) for c in configs]]
              for q in options.queries],
        caption=f"Speedup vs off (median of {options.repeats} interleaved rounds), TPC-H SF {options.scale:g}",
    )
    tables = []
    if run.counters:
        tables.append(rs.Table(
            columns=["query", "config", "instructions", "L1d miss %", "branch miss %"],
            rows=[[c["query"], config_label((c["placement"], c["batch_size"])), c["instructions"],
                   c["l1d_miss_pct"], c["branch_miss_pct"]] for c in run.counters],
            caption=f"Counters per run ({run.counter_tool}, SF {options.counter_scale:g})",
        ))
    raw = ["raw.csv", "meta.json", "summary.md"] + (["counters.csv"] if run.counters else [])
    rs.write_section(options.out_dir, rs.Section(
        experiment="buffered-plan",
        title="BufferedPlan batching nodes on TPC-H",
        article=article, ours=ours, tables=tables, machine=machine_info(),
        versions=rs.postgres_versions(run.server.removeprefix("PostgreSQL "), run.server_version_num),
        command=rs.command_line(), plots=["speedup.png"], raw_data=raw,
        notes=[f"Counters: {run.counter_tool}"],
    ))


def _plot(run: Run, speedups: dict[str, dict[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for query, by_config in speedups.items():
        for placement, style in zip(PLACEMENTS, ("o-", "s--"), strict=True):
            xs = [b for b in run.options.batch_sizes if f"{placement}/{b}" in by_config]
            ax.plot(xs, [by_config[f"{placement}/{b}"] for b in xs], style, label=f"{query} {placement}")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.axhline(SEED_MS_OFF / SEED_MS_BEST, color="red", linestyle=":", label="seed best (x1.128)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size")
    ax.set_ylabel("speedup vs off (median)")
    ax.set_title(f"pg_buffered_plan, {run.server}, TPC-H SF {run.options.scale:g}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _write_summary_md(run: Run, rows: list[dict[str, Any]], path: Path) -> None:
    lines = [f"# pglab buffered-plan: {run.server}, TPC-H SF {run.options.scale:g}", "",
             f"{run.options.repeats} interleaved rounds in one session, serial plans (no workers, "
             "no JIT); the machine may be shared, so timings are noisy.", "",
             "| query | config | n | median ms | 95% CI | speedup vs off |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['query']} | {r['config']} | {r['n']} | {r['median_ms']:.1f} | "
                     f"{r['ci_low']:.1f}..{r['ci_high']:.1f} | {r['speedup_vs_off']:.3f} |")
    lines += ["", f"Counters: {run.counter_tool}", ""]
    if run.counters:
        lines += ["| query | config | plan nodes | instructions | L1d accesses | L1d misses (%) | branches | "
                  "mispredicts (%) |", "|---|---|---|---|---|---|---|---|"]
        for c in run.counters:
            lines.append(f"| {c['query']} | {config_label((c['placement'], c['batch_size']))} | "
                         f"{_nodes_label(c)} | {c['instructions']:.0f} | {c['l1d_accesses']:.0f} | "
                         f"{c['l1d_misses']:.0f} ({c['l1d_miss_pct']:.3f}) | {c['branches']:.0f} | "
                         f"{c['branch_mispredicts']:.0f} ({c['branch_miss_pct']:.3f}) |")
        lines += ["", "Plan nodes: BatchedSeqScan / Buffered / stock Seq Scan in the plan of the counted "
                  "backend (checked before counting; plans in meta.json counter_plans)."]
    lines += ["", "Seed article (SF 1, perf stat): 25691 ms off, 22782 ms at 2048 (x1.128); "
              "L1-dcache-load-misses 2.48% -> 0.58%, L1-dcache-store-misses 0.68% -> 0.25%, "
              "branch-misses 1.17% -> 1.06%, IPC 1.73 -> 1.96.", "", "## Plans at scans/2048", ""]
    for name, plan in run.plans.items():
        lines += [f"### {name}", "", "```", plan, "```", ""]
    path.write_text("\n".join(lines) + "\n")
