"""Outputs of `pglab temp-shapes`: raw.csv, plans.csv, results.json, summary.md, plots, section.json."""

from __future__ import annotations

import csv
import math
from dataclasses import asdict
from typing import Any

from rich.console import Console

from pglab import report_section as rs
from pglab.experiments.temp_shapes import analysis as an
from pglab.experiments.temp_shapes.analysis import TempShapesRun
from pglab.experiments.temp_shapes.options import NAME
from pglab.experiments.temp_shapes.plots import plot_shapes, plot_tpch
from pglab.experiments.temp_shapes.workload import SHAPES, Config
from pglab.jsonio import write_json
from pglab.run_report import run_section, server_label, summary_opening

TITLE = "Query shapes over temporary tables: pg_tempbuf off / on / UNLOGGED copy"
SHAPES_PLOT = "shapes_speedup.png"
TPCH_PLOT = "tpch.png"
RAW_FILES = ["raw.csv", "plans.csv", "results.json"]

# What issue 9's reporter measured (PG 18.6 / 15.20, 2 workers, default costs, tables flushed).
ISSUE_TABLE = rs.Table(
    columns=["shape", "plan today", "with the temp table made permanent"],
    rows=[
        ["3M-row permanent table JOIN a 5,000-row temp table (staged keys)", "serial Hash Join, 233 ms",
         "Gather + Hash Join, 167 ms"],
        ["permanent table WHERE id IN (SELECT id FROM temp)", "serial Hash Semi Join", "parallel"],
        ["a temp table joined to itself; a CTE and a subquery reading one temp table", "serial", "parallel"],
        ["a partitioned temp table (CREATE TEMP TABLE ... PARTITION BY)", "serial", "Parallel Append"],
        ["400k-row temp table, 20k out-of-line TOASTed values of 4.8 KB: aggregate reading them",
         "serial, 521 ms", "Gather + Parallel Seq Scan, 364 ms"],
    ],
    caption="Issue 9's reporter (PostgreSQL 18.6 / 15.20, 2 workers, default costs, tables flushed)",
)


def summaries(run: TempShapesRun) -> tuple[list[an.ItemSummary], list[an.ItemSummary]]:
    accept = {s.name: s.acceptance_vs_unlogged for s in SHAPES}
    shapes = [an.summarize(m, str(Config.UNLOGGED), accept.get(m.item, False))
              for m in run.measured if m.part == an.SHAPES_PART]
    tpch = [an.summarize(m, str(Config.UNLOGGED) if str(Config.UNLOGGED) in m.sql else str(Config.PERMANENT), False)
            for m in run.measured if m.part == an.TPCH_PART]
    return shapes, tpch


def _csv(path: Any, rows: list[dict[str, Any]], fields: list[str]) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def write_raw(run: TempShapesRun) -> None:
    """raw.csv (every timed run), plans.csv (the plan of each configuration) and results.json."""
    out = run.out_dir
    timings = [asdict(t) for m in run.measured for t in m.timings]
    _csv(out / "raw.csv", timings, ["part", "item", "config", "repetition", "ms"])
    plans = []
    for m in run.measured:
        for config, p in m.plans.items():
            result = m.results.get(config)
            plans.append({"part": m.part, "item": m.item, "config": config, "plan": p.label,
                          "gather": p.gather, "gathers": p.gathers, "workers_planned": p.workers_planned,
                          "workers_launched": p.workers_launched, "temp_scans": p.temp_scans,
                          "parallel_temp_scans": p.parallel_temp_scans, "leader_only": p.leader_only,
                          "pages_flushed": p.pages_flushed, "explain_ms": p.execution_ms, "scans": "; ".join(p.scans),
                          "rows": result.rows if result else None, "digest": result.digest if result else None,
                          "outline": p.outline})
    _csv(out / "plans.csv", plans, ["part", "item", "config", "plan", "gather", "gathers", "workers_planned",
                                    "workers_launched", "temp_scans", "parallel_temp_scans", "leader_only",
                                    "pages_flushed", "explain_ms", "scans", "rows", "digest", "outline"])
    shape_summaries, tpch_summaries = summaries(run)
    write_json(out / "results.json", {
        "status": run.status, "error": run.error, "command": run.command,
        "started": run.started, "finished": run.finished, "wall_s": run.wall_s,
        "options": asdict(run.options), "server": run.server, "machine": run.machine,
        "table_bytes": run.table_sizes, "tpch_temp_buffers": run.tpch_temp_buffers or None, "notes": run.notes,
        "items": [_summary_json(s) for s in shape_summaries + tpch_summaries],
        "queries": [{"part": m.part, "item": m.item, "sql": m.sql} for m in run.measured],
        "results": [asdict(r) for m in run.measured for r in m.results.values()],
    })


def _summary_json(s: an.ItemSummary) -> dict[str, Any]:
    return {
        "part": s.part, "item": s.item, "title": s.title, "reference": s.reference, "median_ms": s.median_ms,
        "speedup_on_vs_off": s.speedup_on, "speedup_reference_vs_off": s.speedup_reference,
        "on_vs_reference": s.ratio_to_reference, "results_equal": s.results_equal,
        "mismatches": list(s.mismatches), "acceptance_failed": s.acceptance(),
        "on_plan_is_off_plan": s.on_plan_is_off_plan,
        "plans": {c: {**asdict(p), "label": p.label} for c, p in s.plans.items()},
    }


def _x(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 3)


def _plan(s: an.ItemSummary, config: str) -> str:
    p = s.plans.get(config)
    if p is None:
        return ""
    return p.label + (" (= off)" if config == str(Config.ON) and s.on_plan_is_off_plan else "")


def shapes_table(run: TempShapesRun, items: list[an.ItemSummary]) -> rs.Table:
    rows: list[list[rs.Cell]] = []
    for s in items:
        failed = s.acceptance()
        rows.append([s.item, _plan(s, "off"), _plan(s, "on"), _plan(s, "unlogged"),
                     s.median_ms.get("off"), s.median_ms.get("on"), s.median_ms.get("unlogged"),
                     _x(s.speedup_on), _x(s.ratio_to_reference), "yes" if s.results_equal else "NO",
                     "pass" if not failed else "; ".join(failed)])
    return rs.Table(
        ["shape", "plan off", "plan on", "plan UNLOGGED", "off ms", "on ms", "UNLOGGED ms", "on vs off (x)",
         "on vs UNLOGGED (x)", "same rows", "issue 9 acceptance"], rows,
        caption=(f"Ours ({server_label(run)}, max_parallel_workers_per_gather = {run.options.workers}, default "
                 f"costs, temp_buffers = {run.options.temp_buffers}, tables flushed before each run): median "
                 f"of {run.options.repetitions} interleaved runs in one session; on vs off = median(off) / "
                 "median(on); on vs UNLOGGED = median(UNLOGGED) / median(on), 1 = as fast as the copy"))


def tpch_description(run: TempShapesRun) -> str:
    if run.options.tpch_all_temp:
        return (f"TPC-H SF {run.options.scale:g} with every table temporary (keys.sql's keys and indexes, "
                f"temp_buffers = {run.tpch_temp_buffers}; off, on) vs the same data as UNLOGGED tables")
    return (f"TPC-H SF {run.options.scale:g} with nation, region, supplier and part as temporary tables "
            "(off, on) vs all permanent")


def tpch_table(run: TempShapesRun, items: list[an.ItemSummary]) -> rs.Table:
    ref = str(Config.UNLOGGED) if run.options.tpch_all_temp else str(Config.PERMANENT)
    label = "UNLOGGED" if run.options.tpch_all_temp else "permanent"
    rows: list[list[rs.Cell]] = [
        [s.item, _plan(s, "off"), _plan(s, "on"), _plan(s, ref), s.median_ms.get("off"),
         s.median_ms.get("on"), s.median_ms.get(ref), _x(s.speedup_on), _x(s.ratio_to_reference),
         "yes" if s.results_equal else "NO"] for s in items]
    if items:
        totals = {c: sum(s.median_ms.get(c, math.nan) for s in items) for c in ("off", "on", ref)}
        rows.append(["sum", None, None, None, round(totals["off"], 3), round(totals["on"], 3),
                     round(totals[ref], 3), _x(totals["off"] / totals["on"]), _x(totals[ref] / totals["on"]),
                     "yes" if all(s.results_equal for s in items) else "NO"])
    return rs.Table(
        ["query", "plan off", "plan on", f"plan {'UNLOGGED' if ref == 'unlogged' else 'all permanent'}", "off ms",
         "on ms", f"{label} ms", "on vs off (x)", f"on vs {label} (x)", "same rows"], rows,
        caption=(f"{tpch_description(run)}; median of {run.options.repetitions} interleaved runs; on vs off = "
                 f"median(off) / median(on), on vs {label} = median({label}) / median(on); sum: of the medians"))


def plans_table(items: list[an.ItemSummary]) -> rs.Table:
    return rs.Table(["item", "config", "plan (EXPLAIN ANALYZE, outline)"],
                    [[s.item, c, p.outline] for s in items for c, p in s.plans.items()],
                    caption="The plans the planner chose (Gather[launched/planned])")


def report(run: TempShapesRun, console: Console) -> int:
    """Write every output, print the tables; returns the number of items whose rows differ."""
    out = run.out_dir
    write_raw(run)
    shape_items, tpch_items = summaries(run)
    plots = []
    if shape_items:
        plot_shapes(shape_items, f"Temp-table shapes, {server_label(run)}, {run.options.workers} workers",
                    out / SHAPES_PLOT)
        plots.append(SHAPES_PLOT)
    if tpch_items:
        what = "every table temporary" if run.options.tpch_all_temp else "temp dimension tables"
        plot_tpch(tpch_items, f"TPC-H SF {run.options.scale:g}, {what}, {server_label(run)}", out / TPCH_PLOT)
        plots.append(TPCH_PLOT)
    ours = shapes_table(run, shape_items) if shape_items else tpch_table(run, tpch_items)
    tables = ([tpch_table(run, tpch_items)] if shape_items and tpch_items else []) + \
        [plans_table(shape_items + tpch_items)]
    mismatched = [s for s in shape_items + tpch_items if not s.results_equal]
    notes = [
        "Timings are client-side wall times of whole queries; every ratio compares runs of the same session.",
        "No statement is prepared: each run is planned under its own settings.",
    ]
    if mismatched:
        notes.insert(0, "RESULT MISMATCH: " + ", ".join(f"{s.item} ({', '.join(s.mismatches)})" for s in mismatched))
    same = [s.item for s in shape_items + tpch_items if s.on_plan_is_off_plan]
    if same:
        notes.append(f"pg_tempbuf on chose exactly the stock plan (\"= off\") for {len(same)} of "
                     f"{len(shape_items) + len(tpch_items)} items ({', '.join(same)}): their on-vs-off ratios are "
                     "run-to-run noise.")
    if run.options.quick:
        notes.append("--quick: tiny tables, below min_parallel_table_scan_size; plans are mostly serial.")
    if run.options.tpch_all_temp and tpch_items:
        notes.append(f"{tpch_description(run)}: a session of its own (temp_buffers is fixed at a session's first "
                     "temporary table); the configurations differ in search_path (pg_temp first, or the UNLOGGED "
                     "schema first) and pg_tempbuf.parallel_scan; the pool flushed (clean) before each timed run.")
    notes += run.notes

    lines = summary_opening(TITLE, run, ISSUE_TABLE, ours)
    for table in tables:
        lines += [table.markdown(), ""]
    lines += ["## Notes", ""] + [f"- {n}" for n in notes] + ["", "## Queries", ""]
    for m in run.measured:
        on_sql = m.sql.get(str(Config.ON), "")
        lines.append(f"- **{m.item}** ({m.title}): `{on_sql}`" if m.part == an.SHAPES_PART
                     else f"- **{m.item}**: {m.title}")
    (out / "summary.md").write_text("\n".join(lines) + "\n")

    rs.write_section(out, run_section(
        run, experiment=NAME, title=TITLE, article=ISSUE_TABLE, ours=ours, tables=tables, plots=plots,
        raw_data=RAW_FILES, notes=notes))

    console.print(ours.rich())
    for table in tables[:-1]:
        console.print(table.rich())
    passed = [s.item for s in shape_items if not s.acceptance()]
    if shape_items:
        console.print(f"Issue 9 acceptance (Gather with workers, same rows, >= {an.MIN_SPEEDUP_VS_OFF}x of off, "
                      f">= {an.MIN_RATIO_VS_UNLOGGED}x of UNLOGGED where required): {len(passed)} of "
                      f"{len(shape_items)} shapes pass" + (f" ({', '.join(passed)})" if passed else ""))
    for s in mismatched:
        console.print(f"[bold red]RESULT MISMATCH[/] {s.item}: {', '.join(s.mismatches)} returned other rows "
                      "than pg_tempbuf.parallel_scan = off")
    console.print(f"Results in {out}/ (summary.md, results.json, raw.csv, plans.csv, section.json, "
                  f"{', '.join(plots)})")
    return len(mismatched)
