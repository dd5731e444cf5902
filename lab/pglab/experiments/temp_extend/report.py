"""Tables, plots, summary.md and section.json of a temp-extend run."""

from __future__ import annotations

import csv

from rich.console import Console

from pglab import report_section as rs
from pglab.experiments.temp_extend import article, iostats
from pglab.experiments.temp_extend.analysis import CellSummary, kb, summarize_cells
from pglab.experiments.temp_extend.options import DISK, NAME, TMPFS
from pglab.experiments.temp_extend.runner import TempExtendResult
from pglab.run_report import run_section, server_label, summary_opening

TITLE = "Temporary-table extends and tmpfs tablespaces"


OURS_COLUMNS = ["source", "temp_buffers", "tablespace", "n", "elapsed ms", "extends", "extend MB", "extend ms",
                "writes", "write MB", "write ms", "local written", "file MB", "alloc MB"]


def ours_table(result: TempExtendResult, cells: list[CellSummary]) -> rs.Table:
    rows: list[list[rs.Cell]] = [
        [c.size, f"{c.mode} ({kb(c.temp_buffers_blocks)})", c.tablespace, c.n, c.elapsed_median_ms,
         c.extends, c.extend_mb, c.extend_ms, c.writes, c.write_mb, c.write_ms, c.local_written, c.file_mb,
         c.allocated_mb]
        for c in cells
    ]
    counted_by = "; ".join(dict.fromkeys(c.counted_by for c in cells))
    return rs.Table(OURS_COLUMNS, rows, caption=(
        f"Ours ({server_label(result)}): median over the timed runs; elapsed = wall time of the CTAS "
        f"statement seen by the client; extends and writes (temp relation): {counted_by}; local written: "
        "pg_stat_statements' local_blks_written; alloc MB: the file's allocated bytes (st_blocks)."))


def ratio_table(cells: list[CellSummary]) -> rs.Table:
    """disk / tmpfs per size and temp_buffers, beside the article's ratios."""
    theirs = article.disk_to_tmpfs()
    rows: list[list[rs.Cell]] = [
        ["article: 9MB, temp_buffers 100 MB", None, theirs["9MB extend time"]],
        ["article: 1M rows (~2 GB)", theirs["1M rows elapsed"], None],
    ]
    by_key = {(c.size, c.mode, c.tablespace): c for c in cells}
    for c in cells:
        if c.tablespace != DISK or (c.size, c.mode, TMPFS) not in by_key:
            continue
        t = by_key[(c.size, c.mode, TMPFS)]
        extend_ratio = c.extend_ms / t.extend_ms if c.extend_ms and t.extend_ms else None
        rows.append([f"ours: {c.size}, temp_buffers {c.mode} ({kb(c.temp_buffers_blocks)})",
                     c.elapsed_median_ms / t.elapsed_median_ms if t.elapsed_median_ms else None, extend_ratio])
    return rs.Table(["case", "elapsed disk / tmpfs", "extend time disk / tmpfs"], rows,
                    caption="How much faster tmpfs is: disk / tmpfs (article: 50.9 / 6.0 ms and 15.6 / 2.4 s)")


def probe_overhead_note(cells: list[CellSummary]) -> str | None:
    traced = [c for c in cells if c.traced_elapsed_ms is not None]
    if not traced:
        return None
    with_probes = sum(c.traced_elapsed_ms or 0.0 for c in traced)
    without = sum(c.elapsed_median_ms for c in traced)
    return (f"bpftrace's probes slowed the traced runs: {with_probes:.0f} ms in all vs {without:.0f} ms untraced "
            "(medians); the extend and write times it measured include that probe overhead, as the article's "
            "SystemTap figures did.")


def notes(result: TempExtendResult, cells: list[CellSummary] | None = None) -> list[str]:
    fs = (result.environment.get("disk") or {}).get("filesystem") or {}
    tmpfs = result.environment.get("tmpfs") or {}
    lines = [
        f"disk = the default tablespace in {fs.get('path', 'the data directory')} "
        f"({fs.get('fstype', '?')} on {fs.get('device', '?')}); tmpfs = a scratch tablespace in "
        f"{tmpfs.get('dir', '(none)')}, dropped after the run. Temp files are never fsynced, so 'disk' "
        "writes mostly land in the OS page cache.",
        "temp_buffers: fits = 125% of the table + 128 blocks; small = "
        f"{result.options.small_temp_buffers} blocks (the article's 800 kB).",
        "I/O counters: " + {
            iostats.BACKEND_IO: "pg_stat_get_backend_io(pid) of the CTAS session, track_io_timing on.",
            iostats.STAT_IO: "pg_stat_io, client backends (only this session on a throwaway cluster).",
        }.get(result.io_source or "", "this server has no pg_stat_io (PostgreSQL 15 or older)."),
        f"bpftrace: {result.trace_note}.",
        "pg_stat_statements: " + (
            "local_blks_written of the CTAS (it counts every extended block as written, plus the evictions "
            "of dirty buffers)." if result.statement_stats == "pg_stat_statements"
            else f"not used: {result.statement_stats}."),
        "EXPLAIN (ANALYZE, BUFFERS) of a CTAS shows only the scan's buffers (the new table is filled by the "
        "DestReceiver, outside every plan node), so local blocks written come from pg_stat_statements.",
        "Our 1M-row source has 100-byte rows (~135 MB); the article's had ~2 GB. "
        "`--sizes 1Mx1900` builds a ~2 GB one. The article's 1M-row times include psql's start-up.",
    ]
    overhead = probe_overhead_note(cells or [])
    if overhead:
        lines.append(overhead)
    lines += [f"size {s} dropped: {why}" for s, why in result.dropped]
    lines += result.notes
    return lines


def write_outputs(result: TempExtendResult) -> tuple[list[CellSummary], list[str]]:
    from pglab.experiments.temp_extend.plots import plot_elapsed, plot_io  # matplotlib is slow to import

    out = result.out_dir
    assert out is not None
    cells = summarize_cells(result)
    with open(out / "cells.csv", "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=list(CellSummary.__dataclass_fields__))
        writer.writeheader()
        for c in cells:
            writer.writerow({k: "" if v is None else v for k, v in c.csv_row().items()})
    plots = ["elapsed.png", "io.png"]
    plot_elapsed(cells, out / plots[0], server_label(result))
    plot_io(cells, out / plots[1], server_label(result))
    ours, ratios = ours_table(result, cells), ratio_table(cells)
    all_notes = notes(result, cells)
    (out / "summary.md").write_text(summary_markdown(result, ours, ratios, all_notes), encoding="utf-8")
    rs.write_section(out, run_section(
        result, experiment=NAME, title=TITLE, article=article.table(), ours=ours, tables=[ratios],
        plots=plots, raw_data=["raw.csv", "cells.csv", "meta.json"], notes=all_notes,
    ))
    return cells, all_notes


def summary_markdown(result: TempExtendResult, ours: rs.Table, ratios: rs.Table, all_notes: list[str]) -> str:
    lines = [
        *summary_opening(TITLE, result, article.table(), ours),
        "## disk / tmpfs", "", ratios.markdown(), "",
        "## Notes", "",
        *[f"- {n}" for n in all_notes],
        "",
        "Plots: elapsed.png, io.png; data: raw.csv (every run), cells.csv (the table above), meta.json.",
    ]
    return "\n".join(lines) + "\n"


def report(result: TempExtendResult, console: Console) -> None:
    cells, all_notes = write_outputs(result)
    console.print(article.table().rich(title="The article (PostgreSQL 10, SystemTap)"))
    ours = ours_table(result, cells)
    console.print(ours.rich(title=f"Ours ({server_label(result)}), median ms"))
    console.print(ours.caption, markup=False, highlight=False)
    console.print(ratio_table(cells).rich(title="disk / tmpfs"))
    for note in all_notes:
        console.print(f"- {note}", markup=False, highlight=False)
    console.print(f"\nresults in {result.out_dir}/ (raw.csv, cells.csv, summary.md, meta.json, section.json, *.png)")


