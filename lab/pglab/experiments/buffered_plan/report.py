"""Tables, summary.md, CSV and section.json of a buffered-plan run.
"""

from __future__ import annotations

import csv
import itertools
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from pglab import report_section as rs
from pglab.experiments.buffered_plan.analysis import Run, summaries
from pglab.experiments.buffered_plan.article import SEED_BEST_BATCH, SEED_COUNTERS, SEED_MS_BEST, SEED_MS_OFF
from pglab.experiments.buffered_plan.counters import nodes_label
from pglab.experiments.buffered_plan.options import OFF, PLACEMENTS, SERVER_SETTINGS, config_label
from pglab.jsonio import write_json
from pglab.machine import machine_info
from pglab.stats import Summary


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
    from pglab.experiments.buffered_plan.plots import plot_speedups  # matplotlib is slow to import

    plot_speedups(run, speedups, out / "speedup.png")
    write_summary_md(run, rows, out / "summary.md")

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
            ctable.add_row(c["query"], config_label((c["placement"], c["batch_size"])), nodes_label(c),
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


def write_summary_md(run: Run, rows: list[dict[str, Any]], path: Path) -> None:
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
                         f"{nodes_label(c)} | {c['instructions']:.0f} | {c['l1d_accesses']:.0f} | "
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
