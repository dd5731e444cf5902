"""Counters per configuration: `perf stat` where the CPU exposes hardware events, else cachegrind
of a single-user backend, with each counted plan checked first.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from pglab.cluster import Cluster
from pglab.errors import LabError
from pglab.experiments.buffered_plan.analysis import Run
from pglab.experiments.buffered_plan.options import EXTENSION, SERVER_SETTINGS, Options, config_gucs, config_label
from pglab.experiments.buffered_plan.tpch import generate, load

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


def single_user_script(config: tuple[str, int], sql: str) -> str:
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
        script = (single_user_script(config, "")
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
        _postgres_single(cluster, single_user_script(config, sql), tmp_dir,
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


def nodes_label(counter: dict[str, Any]) -> str:
    """BatchedSeqScan / Buffered / Seq Scan counts of a counter row's plan."""
    if "buffered_nodes" not in counter:
        return ""
    return f"{counter['batched_seq_scans']}/{counter['buffered_nodes']}/{counter['seq_scans']}"
