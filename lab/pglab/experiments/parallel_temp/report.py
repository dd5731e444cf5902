"""Outputs of `pglab parallel-temp`: raw CSVs, results.json, summary.md, plots, console table."""

from __future__ import annotations

import csv
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from pglab import report_section as rs
from pglab.experiments.parallel_temp import sessions
from pglab.experiments.parallel_temp.analysis import (
    PARALLEL_VARIANTS,
    SHORT_NAMES,
    Key,
    acceptance_rows,
    decision_rows,
    mb,
    medians,
    regret_totals,
    speedups,
)
from pglab.experiments.parallel_temp.runner import ParallelTempRun
from pglab.experiments.parallel_temp.workload import QUERIES, Variant
from pglab.jsonio import write_json
from pglab.stats import summarize


def acceptance_markdown(run: ParallelTempRun, rows: list[dict[str, Any]]) -> list[str]:
    lines = ["## Default settings: the CPU-bound aggregate as a user runs it", "",
             f"Default costs and worker counts; `pg_tempbuf.parallel_scan` off vs on, interleaved, "
             f"{run.options.repetitions} runs each, medians.  Then, in one transaction, an UPDATE of a "
             "third of the rows and the query with a parallel plan forced, against the serial plan.", "",
             "| rows | planner's plan | workers launched | off ms | on ms | speedup | same rows | "
             "rows updated | after UPDATE: plan, workers | same rows |",
             "|---:|---|---:|---:|---:|---:|---|---:|---|---|"]
    for a in rows:
        plan = "Gather + Parallel Temp Seq Scan" if a["planner_parallel"] else "serial"
        after = ("Parallel Temp Seq Scan" if a["after_update_parallel"] else "serial") + \
            f", {a['after_update_workers']}"
        lines.append(f"| {a['rows']:,} | {plan} | {a['workers_launched']} | {a['serial_ms']:.1f} | "
                     f"{a['default_ms']:.1f} | {a['speedup']:.2f}x | {'yes' if a['same_rows'] else 'NO'} | "
                     f"{a['updated_rows']:,} | {after} | {'yes' if a['after_update_same_rows'] else 'NO'} |")
    return lines + [""]


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        path.write_text("")
        return
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def summary_markdown(run: ParallelTempRun, med: dict[Key, float], speed: dict[Key, float],
                     decisions: list[dict[str, Any]], acceptance: list[dict[str, Any]]) -> str:
    o = run.options
    lines = [
        "# Parallel Temp Seq Scan benchmark",
        "",
        f"Server: PostgreSQL {run.server.get('version')} (data checksums "
        f"{run.server.get('data_checksums')}, jit off); temp_buffers={o.temp_buffers}; "
        f"{o.repetitions} repetitions, median wall time per query (ms) measured by the client.",
        f"Machine: {run.machine.get('cpu_model')}, {run.machine.get('cpu_cores_logical')} cores, "
        f"{run.machine.get('memory_total_bytes', 0) / 2**30:.0f} GiB.",
        "Speedup = serial median / variant median, both from the same loop of the same session.",
        "",
    ]
    for query, template in QUERIES.items():
        lines += [f"## {query}: `{template.format(t='t')}`", "",
                  "| rows | MB | workers | serial ms | "
                  + " | ".join(f"{v} ms (speedup)" for v in PARALLEL_VARIANTS) + " |",
                  "|---:|---:|---:|---:|" + "---:|" * len(PARALLEL_VARIANTS)]
        for rows in o.rows:
            for w in o.workers:
                serial = med.get((rows, query, w, str(Variant.SERIAL)))
                if serial is None:
                    continue
                cells = []
                for v in PARALLEL_VARIANTS:
                    value = med.get((rows, query, w, str(v)))
                    cells.append(f"{value:.1f} ({speed[(rows, query, w, str(v))]:.2f}x)" if value else "-")
                lines.append(f"| {rows:,} | {mb(run, rows):.0f} | {w} | {serial:.1f} | " + " | ".join(cells) + " |")
        lines.append("")
    if decisions:
        totals = regret_totals(decisions)
        lines += ["## Decision experiment (default costs choose; both plans timed)", "",
                  f"Planner chose the faster plan in {totals['right_choices']} of {totals['cases']} cases; "
                  f"total regret {totals['total_regret_ms']:.1f} ms = {totals['regret_pct_of_best']:.1f}% "
                  f"of the best plans' time (worst case {totals['worst_regret_pct']:.1f}%).", "",
                  "| rows | dirty share | dirty pages | query | serial ms | parallel ms | faster | planner | regret |",
                  "|---:|---:|---:|---|---:|---:|---|---|---:|"]
        for d in decisions:
            lines.append(f"| {d['rows']:,} | {d['dirty_share']:.2f} | {d['dirty_pages']} | {d['query']} | "
                         f"{d['serial_ms']:.1f} | {d['parallel_ms']:.1f} | {d['faster']} | {d['planner']} | "
                         f"{d['regret_pct']:.1f}% |")
        lines.append("")
    if acceptance:
        lines += acceptance_markdown(run, acceptance)
    missing = [p for p in run.plans if p.variant != str(Variant.SERIAL) and p.info["workers_launched"] == 0]
    if missing:
        lines += ["Note: some parallel runs launched no worker (see plans.csv)."]
    return "\n".join(lines) + "\n"


def report(run: ParallelTempRun, console: Console) -> dict[str, Any]:
    out = run.options.out_dir
    out.mkdir(exist_ok=True)
    med = medians(run)
    speed = speedups(run, med)
    decisions = decision_rows(run)
    acceptance = acceptance_rows(run)
    write_csv(out / "raw.csv", [asdict(t) for t in run.timings])
    write_csv(out / "default_settings.csv",
              [{"rows": a.rows, "switch": switch, "repetition": i, "ms": ms}
               for a in run.acceptance
               for switch, samples in (("off", a.serial_ms), ("on", a.default_ms))
               for i, ms in enumerate(samples)])
    write_csv(out / "plans.csv", [{"rows": p.rows, "query": p.query, "variant": p.variant,
                                   "workers": p.workers, **p.info} for p in run.plans])
    write_csv(out / "decisions.csv", decisions)
    from pglab.experiments.parallel_temp.plots import plot_decisions, plot_scaling, plot_speedups  # slow to import

    plot_speedups(run, speed, out / "speedup_vs_size.png")
    plot_scaling(run, speed, out / "speedup_vs_workers.png")
    if decisions:
        plot_decisions(decisions, out / "decisions.png")
    results = {
        "options": asdict(run.options),
        "server": run.server,
        "notes": run.notes,
        "machine": run.machine,
        "started": run.started,
        "wall_s": run.wall_s,
        "tables": {rows: asdict(shape) for rows, shape in run.shapes.items()},
        "medians_ms": [{"rows": k[0], "query": k[1], "workers": k[2], "variant": k[3], "ms": v,
                        "spread": asdict(summarize([t.ms for t in run.timings
                                                    if (t.rows, t.query, t.workers, t.variant) == k]))}
                       for k, v in sorted(med.items())],
        "speedups": [{"rows": k[0], "query": k[1], "workers": k[2], "variant": k[3], "speedup": v}
                     for k, v in sorted(speed.items())],
        "decisions": decisions,
        "regret": regret_totals(decisions),
        "default_settings": acceptance,
    }
    summary = summary_markdown(run, med, speed, decisions, acceptance)
    if run.sessions is not None:  # the real-session cases: their own CSVs, key, section and plot
        session_rows = sessions.case_rows(run.sessions)
        write_csv(out / "sessions.csv", session_rows)
        write_csv(out / "sessions_raw.csv", sessions.raw_rows(run.sessions))
        if not sessions.plot(session_rows, out / "sessions.png"):
            (out / "sessions.png").unlink(missing_ok=True)  # none of a previous run into this directory
        results["sessions"] = sessions.as_json(run.sessions)
        summary += "\n" + "\n".join(sessions.markdown(run.sessions, session_rows))
    write_json(out / "results.json", results)
    (out / "summary.md").write_text(summary)

    workers = max(run.options.workers)
    table = Table(title=f"Speedup over the stock serial scan, {workers} workers (median of "
                        f"{run.options.repetitions}; PostgreSQL {run.server.get('version')})")
    table.add_column("query")
    table.add_column("rows", justify="right")
    table.add_column("serial ms", justify="right")
    for v in PARALLEL_VARIANTS:
        table.add_column(SHORT_NAMES[v], justify="right")
    for query in QUERIES:
        for rows in run.options.rows:
            serial = med.get((rows, query, workers, str(Variant.SERIAL)))
            if serial is None:
                continue
            table.add_row(query, f"{rows:,}", f"{serial:.1f}",
                          *[f"{speed.get((rows, query, workers, str(v)), float('nan')):.2f}x"
                            for v in PARALLEL_VARIANTS])
    console.print(table)
    if decisions:
        totals = regret_totals(decisions)
        console.print(f"Decision experiment: planner chose the faster plan in {totals['right_choices']}/"
                      f"{totals['cases']} cases; regret {totals['total_regret_ms']:.1f} ms = "
                      f"{totals['regret_pct_of_best']:.1f}% of the best plans' total time "
                      f"(worst case {totals['worst_regret_pct']:.1f}%).")
    for a in acceptance:
        plan = (f"Gather + Parallel Temp Seq Scan, {a['workers_launched']} workers launched"
                if a["planner_parallel"] else "a serial plan")
        console.print(f"Default settings, {a['rows']:,} rows: the planner chose {plan}; "
                      f"off {a['serial_ms']:.1f} ms vs on {a['default_ms']:.1f} ms = {a['speedup']:.2f}x; "
                      f"same rows: {'yes' if a['same_rows'] else 'NO'}; after an UPDATE of "
                      f"{a['updated_rows']:,} rows, parallel = serial: "
                      f"{'yes' if a['after_update_same_rows'] else 'NO'}.")
    if run.sessions is not None:
        sessions.print_console(run.sessions, sessions.case_rows(run.sessions), console)
    write_report_section(run, med, speed, decisions, acceptance)
    console.print(f"Results in {out}/ (summary.md, results.json, raw.csv, plans.csv, decisions.csv, "
                  f"default_settings.csv, {'sessions.csv, sessions_raw.csv, ' if run.sessions else ''}plots)")
    return results


def write_report_section(run: ParallelTempRun, med: dict[Key, float], speed: dict[Key, float],
                         decisions: list[dict[str, Any]], acceptance: list[dict[str, Any]]) -> None:
    """section.json for `pglab report`: the article's proposal beside what we measured."""
    workers = max(run.options.workers)
    article = rs.Table(
        columns=["quantity", "article (Lepikhov, 2026)"],
        rows=[["write_page_cost (seq_page_cost = 1)", 1.3],
              ["buffer_scan_cost per allocated buffer", 0.01],
              ["parallel scan of temporary tables", "proposed: flush in Gather, workers read from disk"]],
        caption="The flush cost model the article proposes as the way to parallel temp scans",
    )
    ours = rs.Table(
        columns=["query", "rows", "MB", "serial ms", *[SHORT_NAMES[v] + " (x)" for v in PARALLEL_VARIANTS]],
        rows=[[query, rows, round(mb(run, rows), 1), med[(rows, query, workers, str(Variant.SERIAL))],
               *[speed.get((rows, query, workers, str(v))) for v in PARALLEL_VARIANTS]]
              for query in QUERIES for rows in run.options.rows
              if (rows, query, workers, str(Variant.SERIAL)) in med],
        caption=f"Speedup over the stock serial scan with {workers} workers, median of "
                f"{run.options.repetitions} (same session, same data; temp_buffers={run.options.temp_buffers})",
    )
    tables = []
    if acceptance:
        tables.append(rs.Table(
            columns=["rows", "planner chose parallel", "workers launched", "off ms", "on ms", "speedup",
                     "same rows", "rows updated", "same rows after UPDATE (parallel forced)"],
            rows=[[a["rows"], a["planner_parallel"], a["workers_launched"], a["serial_ms"], a["default_ms"],
                   a["speedup"], a["same_rows"], a["updated_rows"], a["after_update_same_rows"]]
                  for a in acceptance],
            caption="Default settings: the CPU-bound aggregate with pg_tempbuf.parallel_scan off vs on "
                    f"(median of {run.options.repetitions}, interleaved, same session)",
        ))
    if decisions:
        totals = regret_totals(decisions)
        tables.append(rs.Table(
            columns=["rows", "dirty share", "query", "serial ms", "parallel ms", "faster", "planner", "regret %"],
            rows=[[d["rows"], d["dirty_share"], d["query"], d["serial_ms"], d["parallel_ms"], d["faster"],
                   d["planner"], d["regret_pct"]] for d in decisions],
            caption=f"Decision experiment: planner right in {totals['right_choices']}/{totals['cases']} cases, "
                    f"regret {totals['regret_pct_of_best']:.1f}% of the best plans' total time",
        ))
    plots = ["speedup_vs_size.png", "speedup_vs_workers.png"] + (["decisions.png"] if decisions else [])
    session_files: list[str] = []
    if run.sessions is not None:
        tables.append(sessions.section_table(run.sessions, sessions.case_rows(run.sessions)))
        plots += ["sessions.png"] if (run.options.out_dir / "sessions.png").is_file() else []
        session_files = ["sessions.csv", "sessions_raw.csv"]
    rs.write_section(run.options.out_dir, rs.Section(
        experiment="parallel-temp",
        title="Parallel scans of temporary tables",
        article=article,
        ours=ours,
        tables=tables,
        machine=run.machine,
        versions=rs.postgres_versions(str(run.server.get("version")), int(run.server.get("version_num", 0))),
        command=rs.command_line(),
        plots=plots,
        raw_data=["raw.csv", "plans.csv", "decisions.csv", "default_settings.csv", "results.json", *session_files],
        notes=["Timings are client-side wall times of whole queries; ratios come from the same run.", *run.notes],
    ))
