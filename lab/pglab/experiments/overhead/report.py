"""Tables, plots, raw CSVs, summary.md, results.json and section.json of an overhead run."""

from __future__ import annotations

import csv
import dataclasses
import math
from typing import Any

from rich.console import Console

from pglab import report_section as rs
from pglab.experiments.overhead.analysis import (
    COLD,
    OFF,
    ON,
    UNLOGGED,
    Config,
    CountPoint,
    OverheadResult,
    PlanningCount,
    PlanningPoint,
    TpchPlanningPoint,
    TpsPoint,
    count_summaries,
    instruction_ratio,
    point_summaries,
    tpch_planning_summary,
    tps_summary,
    within_limit,
)
from pglab.experiments.overhead.options import INSTRUCTION_LIMIT, LIBRARY, NAME, TPCH_PLANNING_LIMIT
from pglab.experiments.overhead.temp_sessions import POINT_QUERY
from pglab.jsonio import write_json
from pglab.run_report import run_section, server_label, summary_opening

TITLE = "Zero cost when unused: pg_tempbuf loaded vs not (pgbench -S)"
COUNT_COLUMNS = tuple(f.name for f in dataclasses.fields(CountPoint))
TPS_COLUMNS = tuple(f.name for f in dataclasses.fields(TpsPoint))
PLANNING_COLUMNS = tuple(f.name for f in dataclasses.fields(PlanningPoint))
PLANNING_COUNT_COLUMNS = tuple(f.name for f in dataclasses.fields(PlanningCount))
TPCH_PLANNING_COLUMNS = tuple(f.name for f in dataclasses.fields(TpchPlanningPoint))
TEMP_RAW = ["planning.csv", "planning_counts.csv", "tpch_planning.csv"]
CONFIG_LABELS = {
    Config.NONE.value: "not loaded",
    Config.SESSION.value: "session_preload_libraries",
    Config.SHARED.value: "shared_preload_libraries",
}


def write_raw(result: OverheadResult) -> None:
    assert result.out_dir is not None
    tables: list[tuple[str, tuple[str, ...], list[Any]]] = [
        ("counts.csv", COUNT_COLUMNS, result.counts), ("tps.csv", TPS_COLUMNS, result.tps)]
    if result.options.temp_sessions:
        tables += [("planning.csv", PLANNING_COLUMNS, result.temp.points),
                   ("planning_counts.csv", PLANNING_COUNT_COLUMNS, result.temp.counts),
                   ("tpch_planning.csv", TPCH_PLANNING_COLUMNS, result.temp.tpch)]
    for name, columns, rows in tables:
        with open(result.out_dir / name, "w", newline="", encoding="utf-8") as file:
            writer = csv.DictWriter(file, fieldnames=columns)
            writer.writeheader()
            for row in rows:
                writer.writerow({k: "" if v is None else v for k, v in dataclasses.asdict(row).items()})


def _round(value: float, digits: int = 4) -> float | None:
    return None if math.isnan(value) else round(value, digits)


def article_table() -> rs.Table:
    """What the issue reported before this experiment: TPS A/B that was noise."""
    return rs.Table(["measure", "with / without"], [
        ["pgbench -S TPS, session_preload_libraries role vs plain, one order", 0.955],
        ["the same, the reverse order", 0.995],
    ], caption="Issue 11: pgbench -S, scale 10, 8 alternating 8 s runs, same cluster (noise, not an answer)")


def ours_table(result: OverheadResult) -> rs.Table:
    rows: list[list[rs.Cell]] = []
    for s in count_summaries(result.counts):
        rows.append([
            f"instructions: {CONFIG_LABELS[s.config]}", s.rounds, round(s.median["query_ir"], 1),
            round(s.median["plan_ir"], 1), round(s.median["execute_ir"], 1), round(s.median["backend_ir"], 1),
            round(s.median["hook_ir"], 1), _round(s.ratio["query_ir"]), _round(s.ratio["plan_ir"]),
            _round(s.ratio["backend_ir"]),
        ])
    tps = tps_summary(result.tps)
    if tps is not None:
        rows.append(["TPS: plain role", tps.runs // 2, round(tps.without, 1), None, None, None, None, None, None,
                     None])
        rows.append(["TPS: session_preload_libraries role", tps.runs // 2, round(tps.with_library, 1), None, None,
                     None, None, _round(tps.ratio), None, None])
        for order, ratio in tps.ratio_by_order.items():
            rows.append([f"TPS ratio, order {order}", tps.runs // len(tps.ratio_by_order), None, None, None,
                         None, None, _round(ratio), None, None])
    ratio = instruction_ratio(result.counts)
    verdict = within_limit(ratio)
    return rs.Table(
        ["configuration", "runs", "per query: exec_simple_query Ir (TPS: median)", "pg_plan_queries Ir",
         "PortalRun Ir", "backend Ir", f"{LIBRARY} hooks Ir", "ratio query (TPS)", "ratio planning",
         "ratio backend"],
        rows,
        caption=(f"Ours ({server_label(result)}): instructions per pgbench -S query from callgrind "
                 f"({result.options.queries} queries, medians over rounds; ratio = loaded / not loaded); "
                 f"headline ratio with shared_preload_libraries: "
                 f"{'not measured' if verdict is None else f'{ratio:.4f}'}"
                 + ("" if verdict is None else f" ({'within' if verdict else 'above'} the {INSTRUCTION_LIMIT} bound)")
                 + "; TPS from pgbench -S medians"),
    )


def library_table(result: OverheadResult) -> rs.Table:
    rows: list[list[rs.Cell]] = [
        [name, round(self_ir, 1), round(inclusive, 1)]
        for name, (self_ir, inclusive) in sorted(result.library_functions.items(), key=lambda kv: -kv[1][1])
    ]
    rows += [[f"  calls {arc}", None, round(cost, 1)]
             for arc, cost in sorted(result.library_callees.items(), key=lambda kv: -kv[1])]
    return rs.Table(["pg_tempbuf function (shared_preload, round 1)", "self Ir / query", "inclusive Ir / query"],
                    rows, caption=(f"Where {LIBRARY}'s instructions go, per query (tb_planner without the "
                                   "standard_planner it calls; walkers nest, so inclusive figures overlap)"))


def tps_table(result: OverheadResult) -> rs.Table:
    rows: list[list[rs.Cell]] = [[p.index + 1, p.order, CONFIG_LABELS[p.config], round(p.tps, 1),
                                  p.latency_ms] for p in result.tps]
    return rs.Table(["run", "order", "library", "TPS", "latency ms"], rows,
                    caption=f"pgbench -S -n -c {result.options.clients} -T {result.options.duration_s}, in run order")


def _ms(value: float, digits: int = 4) -> float | None:
    return None if math.isnan(value) else round(value, digits)


def point_table(result: OverheadResult) -> rs.Table:
    o = result.options
    rows: list[list[rs.Cell]] = []
    for s in point_summaries(result.temp.points, result.temp.counts):
        rows.append([s.temp_buffers, s.phase, s.plannings, _ms(s.median_off_ms), _ms(s.median_on_ms),
                     _round(s.ratio, 3),
                     None if s.off_ir is None else round(s.off_ir), None if s.on_ir is None else round(s.on_ir),
                     None if s.ir_ratio is None else round(s.ir_ratio, 3)])
    return rs.Table(
        ["temp_buffers", "phase", "plannings", "off: median planning ms", "on: median planning ms",
         "ratio on / off", "off: Ir per planning", "on: Ir per planning", "Ir ratio on / off"], rows,
        caption=(f"Sessions with temporary tables ({server_label(result)}): planning `{POINT_QUERY}` on an indexed "
                 f"{o.point_rows:,}-row temp table (EXPLAIN (SUMMARY) 'Planning Time', "
                 f"{LIBRARY}.parallel_scan on and off alternating each repetition); steady: the pool's census is "
                 "current; cold: the first planning after an UPDATE dirtied a clean page (one census); Ir: "
                 + (f"callgrind, {o.counted_plannings} plannings per phase and configuration" if result.temp.counts
                    else "not measured")))


def tpch_planning_table(result: OverheadResult) -> rs.Table:
    summary = tpch_planning_summary(result.temp.tpch)
    rows: list[list[rs.Cell]] = []
    if summary is not None:
        for q in summary.queries:
            m = summary.median_ms[q]
            rows.append([q, _ms(m.get(UNLOGGED, math.nan)), _ms(m.get(OFF, math.nan)), _ms(m.get(ON, math.nan)),
                         _round(m.get(ON, math.nan) / m[UNLOGGED] if m.get(UNLOGGED) else math.nan, 3),
                         _round(m.get(ON, math.nan) / m[OFF] if m.get(OFF) else math.nan, 3)])
        rows.append(["sum", _ms(summary.sum_ms.get(UNLOGGED, math.nan)), _ms(summary.sum_ms.get(OFF, math.nan)),
                     _ms(summary.sum_ms.get(ON, math.nan)), _round(summary.on_vs_unlogged, 3),
                     _round(summary.on_vs_off, 3)])
    verdict = summary.within_limit if summary else None
    o = result.options
    return rs.Table(
        ["query", "UNLOGGED ms", "temp, off ms", "temp, on ms", "on / UNLOGGED", "on / off"], rows,
        caption=(f"TPC-H SF {o.tpch_scale:g} planning time (EXPLAIN (SUMMARY) 'Planning Time', median of "
                 f"{o.tpch_plannings}, the configuration order rotating): every table temporary (off, on; "
                 f"temp_buffers {result.temp.tpch_temp_buffers}) vs the same data as UNLOGGED tables; keys.sql's "
                 "keys, default costs, max_parallel_workers_per_gather 2; sum of the medians over the queries; "
                 f"bound on / UNLOGGED <= {TPCH_PLANNING_LIMIT}: "
                 + ("not measured" if verdict is None else ("met" if verdict else "NOT met"))))


def temp_notes(result: OverheadResult) -> list[str]:
    if not result.options.temp_sessions:
        return ["Sessions with temporary tables: not measured (--no-temp-sessions)."]
    t = result.temp
    lines = [
        f"Temp sessions, instruction counts: {t.count_note}.",
        "Temp sessions: the library is LOADed in each session (planning needs no shared memory); the UNLOGGED "
        f"TPC-H configuration plans with {LIBRARY}.parallel_scan = off, as the stock planner does, in the same "
        "session that holds the temp tables (schema tpch_unlogged first in search_path).",
        "TPC-H plannings are steady-state: the census of the pool is taken by the warm-up plannings after the "
        "load and stays current (EXPLAIN reads no page that is not resident).",
    ]
    if t.tpch_bytes:
        lines.append("TPC-H bytes with indexes: "
                     + ", ".join(f"{k} {v / 2**20:,.0f} MiB" for k, v in t.tpch_bytes.items())
                     + f"; temp_buffers {t.tpch_temp_buffers}.")
    colds = [c for c in t.counts if c.phase == COLD and c.config == ON]
    if colds:
        lines.append("Census walks per cold planning (callgrind, take_census calls / plannings, on): "
                     + ", ".join(f"{c.temp_buffers} {c.census_calls}/{c.plannings}" for c in colds) + ".")
    return lines + t.notes


def notes(result: OverheadResult) -> list[str]:
    lines = [
        f"Instruction counts: {result.count_note}.",
        "Per query = (backend of warm-up + Q queries - backend of warm-up queries) / Q, same pgbench random seed: "
        "connection start, first-query cache misses and exit cancel out. 'exec_simple_query' is found as the "
        "caller of pg_plan_queries (a stripped server binary names it by address); 'backend' is everything in "
        "PostgresMain, including reading the query and idle-time statistics flushes (timer driven, so not "
        "exactly deterministic).",
        "The counted postmaster runs outside pg_ctl with the cluster's postgresql.conf (autovacuum off), "
        "the TPS series runs first on the normal server; both use the same data directory.",
        f"TPS: two roles of the same cluster, one with ALTER ROLE ... SET session_preload_libraries = {LIBRARY}; "
        "a 2-core shared machine makes TPS noisy: the instruction ratio is the answer, TPS the sanity check.",
    ]
    tps = tps_summary(result.tps)
    if tps is not None and tps.paired_ratios:
        lines.append("TPS paired ratios (with / without, neighbouring runs): "
                     + ", ".join(f"{r:.3f}" for r in tps.paired_ratios))
    return lines + temp_notes(result) + result.notes


def temp_results_json(result: OverheadResult) -> dict[str, object] | None:
    if not result.options.temp_sessions:
        return None
    tpch = tpch_planning_summary(result.temp.tpch)
    return {
        "point": [dataclasses.asdict(s) for s in point_summaries(result.temp.points, result.temp.counts)],
        "point_rows": result.options.point_rows, "point_table_bytes": result.temp.point_table_bytes,
        "tpch": None if tpch is None else {**dataclasses.asdict(tpch), "within_limit": tpch.within_limit},
        "tpch_scale": result.options.tpch_scale, "tpch_temp_buffers": result.temp.tpch_temp_buffers,
        "tpch_bytes": result.temp.tpch_bytes, "tpch_planning_limit": TPCH_PLANNING_LIMIT,
        "count_note": result.temp.count_note,
    }


def results_json(result: OverheadResult) -> dict[str, object]:
    tps = tps_summary(result.tps)
    ratio = instruction_ratio(result.counts)
    return {
        "experiment": NAME, "server": result.server, "machine": result.machine, "command": result.command,
        "instruction_ratio": ratio, "instruction_ratio_session": instruction_ratio(result.counts, Config.SESSION),
        "instruction_limit": INSTRUCTION_LIMIT, "within_limit": within_limit(ratio),
        "counts": [dataclasses.asdict(s) for s in count_summaries(result.counts)],
        "tps": dataclasses.asdict(tps) if tps else None,
        "library_functions": {k: {"self": v[0], "inclusive": v[1]} for k, v in result.library_functions.items()},
        "library_callees": result.library_callees, "temp_sessions": temp_results_json(result),
        "notes": notes(result),
    }


def write_outputs(result: OverheadResult) -> tuple[rs.Table, list[rs.Table], list[str]]:
    from pglab.experiments.overhead.plots import plot_instructions, plot_planning, plot_tps  # slow import

    out = result.out_dir
    assert out is not None
    write_raw(result)
    ours = ours_table(result)
    tables = [library_table(result), tps_table(result)]
    temp = result.options.temp_sessions
    if temp:
        tables = [point_table(result), tpch_planning_table(result)] + tables
    all_notes = notes(result)
    plots = ["instructions.png", "tps.png"] + (["planning.png"] if temp else [])
    label = server_label(result)
    plot_instructions(result, out / plots[0], label)
    plot_tps(result, out / plots[1], label)
    if temp:
        plot_planning(result, out / plots[2], label)
    write_json(out / "results.json", results_json(result))
    lines = summary_opening(TITLE, result, article_table(), ours)
    for table in tables:
        lines += [table.markdown(), ""]
    lines += ["## Notes", "", *[f"- {n}" for n in all_notes], "",
              f"Plots: {', '.join(plots)}; data: counts.csv, tps.csv, "
              + (", ".join(TEMP_RAW) + ", " if temp else "")
              + "results.json, meta.json, callgrind/*.out (callgrind_annotate --inclusive=yes FILE)."]
    (out / "summary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rs.write_section(out, run_section(
        result, experiment=NAME, title=TITLE, article=article_table(), ours=ours, tables=tables, plots=plots,
        raw_data=["counts.csv", "tps.csv", *(TEMP_RAW if temp else []), "results.json", "meta.json"],
        notes=all_notes))
    return ours, tables, all_notes


def report(result: OverheadResult, console: Console) -> None:
    ours, tables, all_notes = write_outputs(result)
    console.print(ours.rich(title=f"Ours ({server_label(result)})"))
    console.print(ours.caption, markup=False, highlight=False)
    for table in tables[:-1]:  # all but the TPS runs
        console.print(table.rich())
    for note in all_notes:
        console.print(f"- {note}", markup=False, highlight=False)
    ratio = instruction_ratio(result.counts)
    if not math.isnan(ratio):
        console.print(f"instruction ratio with / without {LIBRARY} (exec_simple_query, shared_preload_libraries): "
                      f"{ratio:.4f}", markup=False, highlight=False)
    tpch = tpch_planning_summary(result.temp.tpch)
    if tpch is not None:
        console.print(f"TPC-H planning sum over {len(tpch.queries)} queries: on / UNLOGGED {tpch.on_vs_unlogged:.3f} "
                      f"(bound {TPCH_PLANNING_LIMIT}: {'met' if tpch.within_limit else 'NOT met'}), "
                      f"on / off {tpch.on_vs_off:.3f}", markup=False, highlight=False)
    console.print(f"\nresults in {result.out_dir}/ (counts.csv, tps.csv, "
                  + (", ".join(TEMP_RAW) + ", " if result.options.temp_sessions else "")
                  + "results.json, summary.md, meta.json, section.json, *.png, callgrind/)")
