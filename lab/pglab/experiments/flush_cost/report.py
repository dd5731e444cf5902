"""summary.md, model.json, meta.json, plots and the console summary of a flush-cost run."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table

from pglab import reference
from pglab.experiments.flush_cost import options as opt
from pglab.experiments.flush_cost.analysis import FlushCostModel, build_model, summaries_by_phase
from pglab.experiments.flush_cost.plots import plot_phases, plot_write_read_ratio
from pglab.experiments.flush_cost.runner import FlushCostRun
from pglab.experiments.flush_cost.section import write_section
from pglab.jsonio import write_json
from pglab.stats import Summary

PHASE_DESCRIPTIONS = {
    opt.WRITE_SEQ: "step 1: flush of the freshly filled table (sequential write)",
    opt.DRY_WRITE: "step 2: second flush, nothing dirty (buffer scan only)",
    opt.EVICT_FOR_SEQ: "step 3: pg_evict_local_buffers(table)",
    opt.FLUSH_DISPLACER: "step 3: flush of the displacer table that pushed ours out",
    opt.READ_SEQ: "step 4: read of every block in order, from the OS",
    opt.DRY_READ: "step 5: second read, every block a hit",
    opt.EVICT_FOR_RANDOM: "step 6: pg_evict_local_buffers(table)",
    opt.FLUSH_DISPLACER_FOR_RANDOM: "step 6: flush of the second displacer",
    opt.READ_RANDOM: "step 7: read of every block in random order (random buffer placement)",
    opt.HIT_CHECK: "step 8: read again, every block a hit",
    opt.SCAN_RESIDENT: "ours: count(*) of the resident table, serial (local buffer hits)",
    opt.SCAN_PRIVATE: "ours: the same count(*) by one parallel worker alone (private reads of the file)",
    opt.MARK_DIRTY: "step 9: pg_temp_buffers_dirty(table)",
    opt.WRITE_RANDOM: "step 10: flush of the randomly placed dirty buffers",
    opt.RAW_WRITE: "no PostgreSQL: the same bytes written with 8 KiB pwrite, no fsync",
    opt.RAW_READ: "no PostgreSQL: the same bytes read with 8 KiB pread (page cache warm)",
    opt.RAW_READ_COLD: "no PostgreSQL: the same bytes read after dropping the page cache",
}
# Console table: phase -> short column header (the console may be 80 columns wide).
CONSOLE_COLUMNS = {
    opt.WRITE_SEQ: "write",
    opt.DRY_WRITE: "dry write",
    opt.READ_SEQ: "read",
    opt.DRY_READ: "dry read",
    opt.WRITE_RANDOM: "write rnd",
    opt.RAW_WRITE: "raw write",
}


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.1f}"
    return f"{value:.{digits}g}"


def _ci(summary: Summary) -> str:
    return f"{_fmt(summary.ci_low)} – {_fmt(summary.ci_high)}" if summary.has_ci else "n/a (n < 6)"


def settings_lines(model: FlushCostModel) -> tuple[list[str], list[str]]:
    """(SET statements, postgresql.conf lines) for the measured parameters."""
    recommended = model.recommended
    return (
        [f"SET {name} = {value};" for name, value in recommended.items()],
        [f"{name} = {value}" for name, value in recommended.items()],
    )


def server_label(run: FlushCostRun) -> str:
    version = run.server.get("version") or "PostgreSQL"
    checksums = run.server.get("data_checksums")
    return f"PostgreSQL {version}, checksums {checksums}"


def write_outputs(run: FlushCostRun) -> FlushCostModel:
    out = run.options.out_dir
    cold = run.options.cold_cache
    model = build_model(run.records, run.block_size, cold_reads=cold)
    summaries = summaries_by_phase(run.records)
    meta = run.meta("ok")
    write_json(out / "model.json", {
        **model.as_json(),
        "machine": run.machine,
        "postgresql": run.server,
        "environment": run.environment,
        "options": meta["options"],
        "sizes_measured": meta["sizes_measured"],
    })
    plot_phases(summaries, out / "phases.png", server_label(run))
    plot_write_read_ratio(model.write_read_ratio_by_size, out / "write_read_ratio.png", server_label(run))
    (out / "summary.md").write_text(summary_markdown(run, model, summaries), encoding="utf-8")
    write_section(run, model, summaries)  # section.json for `pglab report`
    meta["outputs"] = sorted(p.name for p in out.iterdir() if p.is_file())
    write_json(out / "meta.json", meta)
    return model


def summary_markdown(run: FlushCostRun, model: FlushCostModel, summaries: dict[str, dict[int, Summary]]) -> str:
    m, env = run.machine, run.environment
    fs = env.get("temp_files_filesystem") or {}
    lines = [
        "# Flush-cost calibration",
        "",
        f"- server: {run.server.get('version_full')} ({run.server.get('target')}), "
        f"data checksums {run.server.get('data_checksums')}, block size {run.block_size}",
        f"- machine: {m.get('cpu_model')}, {m.get('cpu_cores_logical')} logical cores, "
        f"{m.get('memory_total_bytes', 0) / 2**30:.1f} GiB memory, kernel {m.get('kernel')}",
        f"- temp files: {env.get('temp_files_dir') or 'unknown (remote server)'}"
        + (f" on {fs.get('fstype')} ({fs.get('device')})" if fs.get("fstype") else ""),
        f"- reads: {env.get('read_cache')}",
        f"- eviction: {run.options.evict}; sizes {', '.join(map(str, run.plan.kept if run.plan else []))} blocks, "
        f"{run.options.iterations} iterations each; measured {run.started} .. {run.finished}",
    ]
    if run.plan and run.plan.dropped:
        lines += [f"- dropped size {s}: {why}" for s, why in run.plan.dropped]
    raw = env.get("raw_io", {})
    lines.append(
        f"- raw I/O without PostgreSQL: {', '.join(raw.get('measured', [])) or 'not measured'}"
        + (f" ({raw.get('method')})" if raw.get("method") else f" ({raw.get('why_not')})")
    )

    lines += ["", "## Model", "", "| parameter | value | how |", "|---|---|---|"]
    t = model.throughput_mb_s
    lines += [
        f"| write_page_cost | {_fmt(model.write_page_cost)} | slope(write_seq) / slope(read_seq) |",
        f"| buffer_scan_cost | {_fmt(model.buffer_scan_cost)} "
        "| slope(dry_write per allocated buffer) / slope(read_seq) |",
        f"| read_page_cost | {_fmt(model.read_page_cost)} "
        "| (slope(scan_private) - slope(scan_resident)) / slope(read_seq) |",
        f"| index reads (no setting) | {_fmt(model.index_read_page_cost)} "
        "| (slope(index_private) - slope(index_resident)) / slope(read_seq): priced with read_page_cost |",
        f"| random-write penalty | {_fmt(model.random_write_penalty)} | slope(write_random) / slope(write_seq) |",
        f"| random-read penalty | {_fmt(model.random_read_penalty)} | slope(read_random) / slope(read_seq) |",
        f"| flush throughput | {_fmt(t.get('flush'))} MB/s "
        f"| {_fmt(t.get('flush_to_raw_write_ratio'))} × raw write ({_fmt(t.get('raw_write'))} MB/s) |",
        f"| read throughput | {_fmt(t.get('read'))} MB/s | {_fmt(t.get('read_to_raw_read_ratio'))} × raw read |",
    ]
    lines += ["", "Per-block fits (least squares with intercept over per-size medians):", "",
              "| phase | per | slope (ms) | intercept (ms) | R² | points |", "|---|---|---|---|---|---|"]
    for phase, pf in model.fits.items():
        if pf.fit is None:
            lines.append(f"| {phase} | {pf.x} | n/a | n/a | n/a | {pf.problem} |")
        else:
            f = pf.fit
            lines.append(
                f"| {phase} | {pf.x} | {f.slope:.4g} | {f.intercept:.4g} | {f.r_squared:.4f} | {f.n_points} |"
            )
    set_lines, conf_lines = settings_lines(model)
    lines += ["", "Recommended settings (measured here):", "", "```sql", *set_lines, "```", "",
              "postgresql.conf:", "", "```", *conf_lines, "```"]
    lines += [f"- {name} not recommended: {why}" for name, why in model.not_recommended.items()]

    lines += ["", "## Write / read ratio per size", "",
              "| blocks | ours | article run 2025-12-30 | article run 2026-01-02 |", "|---|---|---|---|"]
    article_tables = reference.write_read_ratios(reference.ARTICLE_RUN_TABLES)
    article_random = reference.write_read_ratios(reference.ARTICLE_RUN_RANDOM)
    for size, ratio in model.write_read_ratio_by_size.items():
        lines.append(
            f"| {size} | {_fmt(ratio)} | {_fmt(article_tables.get(size))} | {_fmt(article_random.get(size))} |"
        )

    lines += ["", "## Phases", "",
              "Median execution time per size; CV = standard deviation / mean; the 95% CI of the median is "
              "distribution-free (order statistics; needs at least 6 iterations). Article medians are "
              f"from the author's runs ({reference.ARTICLE_SERVER}): run 2025-12-30 for the phases of the "
              "article's tables, run 2026-01-02 for the random-order phases."]
    for phase, by_size in summaries.items():
        article = reference.article_medians(phase)
        lines += ["", f"### {phase}", "", PHASE_DESCRIPTIONS.get(phase, ""), "",
                  "| blocks | n | median ms | CV | 95% CI of median (ms) | article median ms | ours / article |",
                  "|---|---|---|---|---|---|---|"]
        for size, s in by_size.items():
            theirs = article.get(size)
            ours_to_theirs = s.median / theirs if theirs else None
            lines.append(
                f"| {size} | {s.n} | {_fmt(s.median)} | {_fmt(s.cv, 2)} | {_ci(s)} | {_fmt(theirs)} "
                f"| {_fmt(ours_to_theirs)} |"
            )
    return "\n".join(lines) + "\n"


def print_summary(run: FlushCostRun, model: FlushCostModel, console: Console) -> None:
    summaries = summaries_by_phase(run.records)
    table = Table(title=f"flush-cost: median ms ({server_label(run)})")
    table.add_column("blocks", justify="right")
    shown = [p for p in CONSOLE_COLUMNS if p in summaries]
    for phase in shown:
        table.add_column(CONSOLE_COLUMNS[phase], justify="right")
    table.add_column("W/R", justify="right")
    sizes = sorted({r.size for r in run.records})
    for size in sizes:
        cells = [_fmt(summaries[p][size].median) if size in summaries[p] else "" for p in shown]
        table.add_row(str(size), *cells, _fmt(model.write_read_ratio_by_size.get(size)))
    console.print(table)

    t = model.throughput_mb_s
    console.print(
        f"write_page_cost = {_fmt(model.write_page_cost)}, buffer_scan_cost = {_fmt(model.buffer_scan_cost)}, "
        f"read_page_cost = {_fmt(model.read_page_cost)}, "
        f"random-write penalty = {_fmt(model.random_write_penalty)}, "
        f"flush {_fmt(t.get('flush'))} MB/s = {_fmt(t.get('flush_to_raw_write_ratio'))} × raw write"
    )
    set_lines, conf_lines = settings_lines(model)
    if set_lines:
        console.print("\nRecommended settings (measured on this machine):")
        for line in set_lines:
            console.print(line, markup=False, highlight=False)
        console.print("# postgresql.conf", markup=False, highlight=False)
        for line in conf_lines:
            console.print(line, markup=False, highlight=False)
    for name, why in model.not_recommended.items():
        console.print(f"[yellow]{name} not recommended:[/] {why}")
    console.print(f"\nresults in {run.options.out_dir}/ (raw.csv, summary.md, model.json, meta.json, *.png)")


def report(run: FlushCostRun, console: Console) -> dict[str, Any]:
    model = write_outputs(run)
    print_summary(run, model, console)
    return model.as_json()
