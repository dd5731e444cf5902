"""Outputs of `pglab regret`: raw.csv, plans.csv, results.json, summary.md, ratios.png, section.json."""

from __future__ import annotations

import csv
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console

from pglab import report_section as rs
from pglab.experiments.regret import analysis as an
from pglab.experiments.regret.analysis import OFF, ON, UNLOGGED, RegretRun
from pglab.experiments.regret.options import NAME
from pglab.experiments.regret.plots import PART_LABELS, plot_ratios
from pglab.experiments.temp_shapes import analysis as shapes_an
from pglab.jsonio import write_json
from pglab.run_report import run_section, server_label, summary_opening

TITLE = "Regret: where pg_tempbuf on is slower than off or an UNLOGGED copy (TPC-H loads, session loops, shapes)"
PLOT = "ratios.png"
RAW_FILES = ["raw.csv", "plans.csv", "results.json"]

ISSUE_TABLE = rs.Table(
    columns=["what", "acceptance line"],
    rows=[
        ["loops of 10,000 EXECUTEd lookups and of joins with small temp tables",
         "on/off <= 1.05 (medians of 5 interleaved rounds)"],
        ["TPC-H SF 0.5 all-temp, 3 loads x 3 interleaved runs",
         "every query >= 0.9x off and >= 0.9x the UNLOGGED copy in every load; geomean not lower than today"],
    ],
    caption="Issue 28, deliverable 3: the regret benchmark's acceptance lines",
)


def _x(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, 3)


def _ms(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, 3)


def _csv(path: Path, rows: list[dict[str, Any]], fields: list[str]) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


# -- distributions -----------------------------------------------------------------------------


def distribution_rows(run: RegretRun) -> list[tuple[str, str, an.Distribution]]:
    """(part, reference, distribution): each part, each TPC-H load, and all parts together."""
    ratios = run.ratios()
    rows = []
    for reference in an.REFERENCES:
        for part in an.PARTS:
            these = [r for r in ratios if r.part == part and r.reference == reference]
            if not these:
                continue
            rows.append((PART_LABELS[part], reference, an.distribution(these)))
            if part == an.TPCH_PART and len(run.loads) > 1:
                for load in run.loads:
                    rows.append((f"TPC-H load {load.load}", reference,
                                 an.distribution([r for r in these if r.load == load.load])))
        every = [r for r in ratios if r.reference == reference]
        if every:
            rows.append(("all", reference, an.distribution(every)))
    return rows


def distribution_table(run: RegretRun) -> rs.Table:
    rows: list[list[rs.Cell]] = []
    for part, reference, d in distribution_rows(run):
        rows.append([part, "UNLOGGED" if reference == UNLOGGED else "off", d.count, _x(d.worst), d.worst_where,
                     _x(d.p10), _x(d.median), _x(d.geomean), d.below.get("0.9", 0), d.below.get("0.95", 0)])
    return rs.Table(
        ["part", "vs", "ratios", "worst", "worst at", "p10", "median", "geomean", "< 0.9", "< 0.95"], rows,
        caption=(f"Ours ({server_label(run)}, max_parallel_workers_per_gather = {run.options.workers}, default "
                 "costs): the distribution of ratio = median(reference) / median(pg_tempbuf on) over every item "
                 "(> 1: on is faster; < 1: the regret); TPC-H items are query x load"))


# -- per part ----------------------------------------------------------------------------------


def tpch_table(run: RegretRun) -> rs.Table:
    per_load = run.tpch_summaries()
    loads = sorted(per_load)
    columns = ["query"]
    for load in loads:
        columns += [f"load {load}: on ms", f"load {load}: vs off", f"load {load}: vs UNLOGGED"]
    columns += ["worst vs off", "worst vs UNLOGGED", "plans on (distinct over loads)", "same rows"]
    queries = list(dict.fromkeys(s.item for items in per_load.values() for s in items))
    rows: list[list[rs.Cell]] = []
    for query in queries:
        row: list[rs.Cell] = [query]
        vs_off, vs_unl, outlines, equal = [], [], set(), True
        for load in loads:
            s = next((s for s in per_load[load] if s.item == query), None)
            if s is None:
                row += [None, None, None]
                continue
            off = an.ratio(s.median_ms.get(OFF), s.median_ms.get(ON))
            unl = an.ratio(s.median_ms.get(UNLOGGED), s.median_ms.get(ON))
            vs_off.append(off)
            vs_unl.append(unl)
            plan = s.plans.get(ON)
            if plan is not None:
                outlines.add(plan.outline)
            equal = equal and s.results_equal
            row += [_ms(s.median_ms.get(ON)), _x(off), _x(unl)]
        row += [_x(min(vs_off, default=math.nan)), _x(min(vs_unl, default=math.nan)), len(outlines),
                "yes" if equal else "NO"]
        rows.append(row)
    geo: list[rs.Cell] = ["geomean"]
    for load in loads:
        items = per_load[load]
        geo += [None, _x(an.geomean([an.ratio(s.median_ms.get(OFF), s.median_ms.get(ON)) for s in items])),
                _x(an.geomean([an.ratio(s.median_ms.get(UNLOGGED), s.median_ms.get(ON)) for s in items]))]
    geo += [None, None, None, None]
    rows.append(geo)
    return rs.Table(columns, rows, caption=(
        f"TPC-H SF {run.options.scale:g}, every table temporary (keys.sql's keys, temp_buffers = "
        f"{run.tpch_temp_buffers}), {len(loads)} loads (each a fresh COPY and ANALYZE sample), median of "
        f"{run.options.repetitions} interleaved runs per configuration, pool flushed before each; vs off = "
        "median(off) / median(on), vs UNLOGGED = median(UNLOGGED copy) / median(on)"))


def sessions_table(run: RegretRun) -> rs.Table:
    rows: list[list[rs.Cell]] = []
    for loop in run.loops:
        off, on = loop.median_ms(OFF), loop.median_ms(ON)
        n = run.options.iterations
        rows.append([loop.item, loop.title, n, _ms(off), _ms(on), _x(off * 1000 / n), _x(on * 1000 / n),
                     _x(an.ratio(off, on)), _x(on / off if off else math.nan), "yes" if loop.results_equal else "NO"])
    return rs.Table(
        ["loop", "statements", "per call", "off ms", "on ms", "off us/stmt", "on us/stmt", "vs off (off/on)",
         "on/off time", "same result"], rows,
        caption=(f"Many-statement sessions (temp_buffers = {run.options.session_temp_buffers}): one call = "
                 f"{run.options.iterations:,} EXECUTE format(...) statements in a PL/pgSQL loop, each planned anew; "
                 f"median of {run.options.rounds} interleaved rounds; issue 28's line: on/off time <= "
                 f"{an.MAX_SESSION_SLOWDOWN}"))


def _plan(s: shapes_an.ItemSummary, config: str) -> str:
    p = s.plans.get(config)
    return "" if p is None else p.label + (" (= off)" if config == ON and s.on_plan_is_off_plan else "")


def shapes_table(run: RegretRun) -> rs.Table:
    rows: list[list[rs.Cell]] = [
        [s.item, _plan(s, ON), _ms(s.median_ms.get(OFF)), _ms(s.median_ms.get(ON)), _ms(s.median_ms.get(UNLOGGED)),
         _x(s.speedup_on), _x(s.ratio_to_reference), "yes" if s.results_equal else "NO"]
        for s in run.shape_summaries()]
    return rs.Table(["shape", "plan on", "off ms", "on ms", "UNLOGGED ms", "vs off", "vs UNLOGGED", "same rows"],
                    rows, caption=(f"The temp-shapes suite (its workload and measurement), median of "
                                   f"{run.options.shape_repetitions} interleaved runs per configuration"))


def decisions_table(run: RegretRun) -> rs.Table:
    d = an.decisions(run)
    rows = [["items (TPC-H query x load, shapes) with both plans timed", d.items],
            ["on chose another plan than off (a plan of ours)", d.chosen]]
    rows += [[f"... and ran slower than off by {100 * (1 / float(t) - 1):.0f}% or more" if float(t) < 1
              else "... and ran slower than off", n] for t, n in d.lost.items()]
    rows.append(["worst of those (off/on)", f"{d.worst:.3f} ({d.worst_where})" if d.chosen else "-"])
    return rs.Table(["decisions", "count"], rows,
                    caption="How often a plan of ours was chosen, and how often it lost to off's plan")


def model_error_table(run: RegretRun) -> rs.Table:
    e = an.model_error(run)
    rows: list[list[Any]] = [
        ["plans of ours chosen with both costs and times", e.count],
        ["measured / predicted speedup: p10", f"{e.p10:.2f}" if e.count else "-"],
        ["... median", f"{e.median:.2f}" if e.count else "-"],
        ["... p90", f"{e.p90:.2f}" if e.count else "-"],
    ]
    rows += [[f"predicted to win by less than {100 * float(t):.0f}%: chosen / lost", f"{n} / {lost}"]
             for t, (n, lost) in e.near.items()]
    return rs.Table(["cost model", "value"], rows,
                    caption="The cost model's error on the plans of ours that were chosen: predicted speedup = off's "
                            "plan cost / on's, measured = off's time / on's (pg_tempbuf.parallel_margin included "
                            "in on's cost)")


def acceptance_table(run: RegretRun) -> rs.Table:
    return rs.Table(["issue 28 line", "result", "detail"],
                    [[c.what, "pass" if c.passed else "FAIL", c.detail] for c in an.acceptance(run)],
                    caption="Issue 28's acceptance lines, as this run measured them")


# -- raw data ----------------------------------------------------------------------------------


def _measured(run: RegretRun) -> list[tuple[int | None, shapes_an.Measured]]:
    return [(load.load, m) for load in run.loads for m in load.measured] + [(None, m) for m in run.shapes]


def write_raw(run: RegretRun) -> None:
    """raw.csv (every timed run), plans.csv (TPC-H and shapes plans per configuration) and results.json."""
    out = run.out_dir
    raw: list[dict[str, Any]] = []
    for load, m in _measured(run):
        raw += [{"part": t.part, "load": load, "item": t.item, "config": t.config, "repetition": t.repetition,
                 "ms": t.ms, "statements": None} for t in m.timings]
    raw += [{"part": an.SESSIONS_PART, "load": None, "item": t.item, "config": t.config, "repetition": t.round,
             "ms": t.ms, "statements": t.iterations} for loop in run.loops for t in loop.timings]
    _csv(out / "raw.csv", raw, ["part", "load", "item", "config", "repetition", "ms", "statements"])
    plans = []
    for load, m in _measured(run):
        for config, p in m.plans.items():
            result = m.results.get(config)
            plans.append({"part": m.part, "load": load, "item": m.item, "config": config, "plan": p.label,
                          "workers_launched": p.workers_launched, "temp_scans": p.temp_scans,
                          "explain_ms": p.execution_ms, "rows": result.rows if result else None,
                          "digest": result.digest if result else None, "outline": p.outline})
    _csv(out / "plans.csv", plans, ["part", "load", "item", "config", "plan", "workers_launched", "temp_scans",
                                    "explain_ms", "rows", "digest", "outline"])
    write_json(out / "results.json", {
        "status": run.status, "error": run.error, "command": run.command, "started": run.started,
        "finished": run.finished, "wall_s": run.wall_s, "part_seconds": run.part_seconds,
        "options": asdict(run.options), "server": run.server, "machine": run.machine,
        "table_bytes": run.table_sizes, "tpch_temp_buffers": run.tpch_temp_buffers, "notes": run.notes,
        "ratio": "median(reference) / median(on): > 1 when pg_tempbuf.parallel_scan = on is faster",
        "distributions": [{"part": part, "reference": reference, **d.as_json()}
                          for part, reference, d in distribution_rows(run)],
        "acceptance": [asdict(c) for c in an.acceptance(run)],
        "decisions": an.decisions(run).as_json(),
        "model_error": an.model_error(run).as_json(),
        "baseline": asdict(run.baseline) if run.baseline is not None else None,
        "mismatches": run.mismatches(),
        "ratios": [asdict(r) for r in run.ratios()],
        "tpch": [{"load": load.load, "load_seconds": load.seconds,
                  "items": [_item_json(s) for s in an.summaries(load.measured)]} for load in run.loads],
        "sessions": [{"item": loop.item, "title": loop.title, "call": loop.call, "statement": loop.statement,
                      "median_ms": {c: loop.median_ms(c) for c in (OFF, ON)}, "results": loop.results,
                      "results_equal": loop.results_equal} for loop in run.loops],
        "shapes": [_item_json(s) for s in run.shape_summaries()],
    })


def _item_json(s: shapes_an.ItemSummary) -> dict[str, Any]:
    return {"item": s.item, "title": s.title, "median_ms": s.median_ms, "vs_off": s.speedup_on,
            "vs_unlogged": s.ratio_to_reference, "results_equal": s.results_equal, "mismatches": list(s.mismatches),
            "plans": {c: p.label for c, p in s.plans.items()},
            "outlines": {c: p.outline for c, p in s.plans.items()}}


# -- the report --------------------------------------------------------------------------------


def report(run: RegretRun, console: Console) -> int:
    """Write every output, print the tables and the worst ratios; returns the number of mismatched items."""
    out = run.out_dir
    write_raw(run)
    ratios = run.ratios()
    plots = []
    if any(math.isfinite(r.value) for r in ratios):
        plot_ratios(ratios, f"pg_tempbuf regret, {server_label(run)}, {run.options.workers} workers", out / PLOT)
        plots.append(PLOT)
    ours = distribution_table(run)
    tables = [acceptance_table(run)]
    if run.loads:
        tables.append(tpch_table(run))
    if run.loops:
        tables.append(sessions_table(run))
    if run.shapes:
        tables.append(shapes_table(run))
    if run.loads or run.shapes:
        tables += [decisions_table(run), model_error_table(run)]
    mismatches = run.mismatches()
    notes = [
        "Ratio = median(reference) / median(on), the reference being pg_tempbuf.parallel_scan = off or the same "
        "rows in UNLOGGED tables under stock parallel query: > 1 when on is faster, < 1 is the regret. The issue's "
        f"\"on/off <= {an.MAX_SESSION_SLOWDOWN}\" (time over time) is a ratio >= {an.MIN_SESSION_RATIO:.3f} here.",
        "Every configuration ran in the same session, interleaved, the order rotating each repetition; no "
        "statement is prepared (each run, and each EXECUTE in the loops, is planned under its own settings).",
        "Timings are client-side wall times of whole queries (TPC-H, shapes) and of whole loop calls (sessions).",
    ]
    if mismatches:
        notes.insert(0, "RESULT MISMATCH: " + "; ".join(mismatches))
    if run.options.quick:
        notes.append("--quick: tiny tables and few repetitions; plans are mostly serial and the ratios are noise.")
    if run.part_seconds:
        notes.append("seconds per part: " + ", ".join(f"{k} {v:.0f}" for k, v in run.part_seconds.items()))
    notes += run.notes

    lines = summary_opening(TITLE, run, ISSUE_TABLE, ours)
    for table in tables:
        lines += [table.markdown(), ""]
    lines += ["## Notes", ""] + [f"- {n}" for n in notes] + ["", "## Session loops", ""]
    lines += [f"- **{loop.item}** ({loop.title}): `{loop.call}`, each iteration i EXECUTEs `{loop.statement}`"
              for loop in run.loops]
    (out / "summary.md").write_text("\n".join(lines) + "\n")

    rs.write_section(out, run_section(
        run, experiment=NAME, title=TITLE, article=ISSUE_TABLE, ours=ours, tables=tables, plots=plots,
        raw_data=RAW_FILES, notes=notes))

    for table in [*tables[1:], tables[0], ours]:
        console.print(table.rich())
    for reference in an.REFERENCES:
        every = [r for r in ratios if r.reference == reference and math.isfinite(r.value)]
        if every:
            worst = min(every, key=lambda r: r.value)
            console.print(f"Worst ratio vs {'the UNLOGGED copy' if reference == UNLOGGED else 'off'}: "
                          f"{worst.value:.3f} ({worst.where}: {worst.reference_ms:.1f} ms vs {worst.on_ms:.1f} ms on)")
    for item in mismatches:
        console.print(f"[bold red]RESULT MISMATCH[/] {item}")
    console.print(f"Results in {out}/ (summary.md, results.json, raw.csv, plans.csv, section.json"
                  + "".join(f", {p}" for p in plots) + ")")
    return len(mismatches)
