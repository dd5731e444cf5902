"""Outputs of `pglab page-read`: raw.csv, workers.csv, results.json, summary.md, the plot, section.json; and the
serial part's serial.csv, tables and plot (not with --no-serial)."""

from __future__ import annotations

import csv
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console

from pglab import report_section as rs
from pglab.experiments.page_read import analysis as an
from pglab.experiments.page_read.analysis import LABELS, POOL_LABELS, POOLS, WHAT, Mode, PageReadRun, Pool
from pglab.experiments.page_read.options import EXTENSION, NAME, SERIAL_ACCEPTANCE
from pglab.experiments.page_read.plots import plot_page_read, plot_serial
from pglab.jsonio import write_json
from pglab.run_report import run_section, server_label, summary_opening
from pglab.server import extension_library_note, extension_version

TITLE = "A worker's page read: in the leader's pool, from the file, as a shared-buffer hit"
PLOT = "page_read.png"
RAW_FILES = ["raw.csv", "workers.csv", "results.json"]
RAW_FIELDS = ["mode", "repetition", "wall_ms", "explain_ms", "workers_planned", "workers_launched", "worker_pages",
              "worker_ms", "us_per_page", "leader_pages", "pages_flushed", "flush_ms", "pages_from_pool",
              "page_source", "shared_hit", "shared_read"]
WORKER_FIELDS = ["mode", "repetition", "worker", "pages", "ms", "us_per_page"]
SERIAL_PLOT = "serial_scan.png"
SERIAL_RAW = "serial.csv"
SERIAL_FIELDS = ["session", "repetition", "position", "wall_ms"]


def raw_files(run: PageReadRun) -> list[str]:
    return RAW_FILES + ([SERIAL_RAW] if run.options.serial else [])


def expected_table(run: PageReadRun) -> rs.Table:
    """What the design expects of each mode (no article measured this): pg_tempbuf's cost model, with the
    server's defaults of its prices."""
    read_cost = run.server.get("pg_tempbuf.read_page_cost") or "?"
    write_cost = run.server.get("pg_tempbuf.write_page_cost") or "?"
    return rs.Table(
        columns=["mode", "what a worker does per page", "what pg_tempbuf's cost model assumes"],
        rows=[
            [LABELS[Mode.IN_PLACE], "follows a pointer into the leader's pool, a memfd it maps read-only: no copy, "
                                    "nothing written", "a shared-buffer hit: nothing above the serial scan's hit"],
            [LABELS[Mode.FILE], "reads the page from the table's file (OS page cache) into private memory, a read "
                                "call per page, and verifies it (the checksum when the cluster has data checksums); "
                                "the leader wrote the dirty pages first",
             f"pg_tempbuf.read_page_cost = {read_cost} seq_page_cost units above a hit, plus the leader's writes "
             f"(pg_tempbuf.write_page_cost = {write_cost} a page)"],
            [LABELS[Mode.SHARED_HIT], "stock Parallel Seq Scan of an UNLOGGED copy: a shared buffer lookup and pin",
             "the reference"],
        ],
        caption="What each mode costs a worker by design (pg_tempbuf's shared pool and cost model, the server's "
                "defaults); no article measured it",
    )


def _csv(path: Path, rows: list[dict[str, Any]], fields: list[str]) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def _r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None or math.isnan(value) else round(value, digits)


def raw_row(sample: an.Sample) -> dict[str, Any]:
    read = sample.read
    return {"mode": sample.mode, "repetition": sample.repetition, "wall_ms": _r(sample.wall_ms),
            "explain_ms": read.execution_ms, "workers_planned": read.workers_planned,
            "workers_launched": read.workers_launched, "worker_pages": read.worker_pages,
            "worker_ms": _r(read.worker_ms), "us_per_page": _r(read.us_per_page), "leader_pages": read.leader_pages,
            "pages_flushed": read.pages_flushed, "flush_ms": read.flush_ms, "pages_from_pool": read.pages_from_pool,
            "page_source": read.page_source, "shared_hit": read.shared_hit, "shared_read": read.shared_read}


def write_raw(run: PageReadRun) -> None:
    """raw.csv (one row per timed run), workers.csv (one per worker and run) and results.json."""
    out = run.out_dir
    _csv(out / "raw.csv", [raw_row(s) for s in run.samples], RAW_FIELDS)
    _csv(out / "workers.csv",
         [{"mode": s.mode, "repetition": s.repetition, "worker": w.worker, "pages": w.pages, "ms": w.ms,
           "us_per_page": _r(w.us_per_page)} for s in run.samples for w in s.read.workers], WORKER_FIELDS)
    write_json(out / "results.json", {
        "status": run.status, "error": run.error, "command": run.command, "started": run.started,
        "finished": run.finished, "wall_s": run.wall_s, "options": asdict(run.options), "server": run.server,
        "machine": run.machine, "table": run.table, "session_settings": run.session_settings,
        "prewarm": run.prewarm,
        "preparations": [{**asdict(p), "us_per_page": p.first.us_per_page} for p in run.preparations],
        "modes": {str(m): asdict(s) for m, s in an.summaries(run.samples).items()},
        "ratios": [{**asdict(r), "label": r.label} for r in an.ratios(run.samples)],
        "serial": serial_results(run),
        "notes": run.notes,
    })
    if run.options.serial:
        _csv(out / SERIAL_RAW, [{"session": s.session, "repetition": s.repetition, "position": s.position,
                                 "wall_ms": _r(s.wall_ms)} for s in run.serial_samples], SERIAL_FIELDS)


def serial_results(run: PageReadRun) -> dict[str, Any] | None:
    """results.json's "serial": the leader's own scan, pool vs private (None with --no-serial)."""
    if not run.options.serial:
        return None
    ratio = an.serial_ratio(run.serial_samples)
    return {
        "table": run.serial_table, "settings": run.serial_settings,
        "checks": [asdict(c) for c in run.serial_checks],
        "sessions": {str(pool): asdict(spread) for pool, spread in an.serial_spreads(run.serial_samples).items()},
        "ratio": None if ratio is None else {
            **asdict(ratio), "label": "pool / private", "acceptance_limit": SERIAL_ACCEPTANCE,
            "acceptance": serial_verdict(run, ratio)},
        "warnings": an.mapping_warnings(run.serial_checks),
    }


def serial_verdict(run: PageReadRun, ratio: an.SerialRatio) -> str:
    if an.mapping_warnings(run.serial_checks):
        return "void (mapping check)"
    return ratio.verdict(SERIAL_ACCEPTANCE)


def setup_line(run: PageReadRun) -> str:
    o = run.options
    pages = run.table.get("pages") or o.pages
    return (f"{server_label(run)}, {pages:,} pages ({pages * int(run.server.get('block_size') or 8192) / 2**20:,.0f} "
            f"MiB, {run.table.get('rows_per_page', '?')} rows a page), {o.workers} workers, "
            f"parallel_leader_participation = off, data checksums {run.server.get('data_checksums', '?')}")


def ours_table(run: PageReadRun, found: dict[Mode, an.ModeSummary]) -> rs.Table:
    reference = found.get(Mode.SHARED_HIT)
    rows: list[list[rs.Cell]] = []
    for mode, s in found.items():
        per_page = an.div(s.us_per_page.median, reference.us_per_page.median) if reference else math.nan
        wall = an.div(s.wall_ms.median, reference.wall_ms.median) if reference else math.nan
        rows.append([LABELS[mode], _r(s.us_per_page.median, 3), _r(s.us_per_page.low, 3), _r(s.us_per_page.high, 3),
                     _r(per_page, 3), _r(s.wall_ms.median, 2), _r(s.wall_ms.low, 2), _r(s.wall_ms.high, 2),
                     _r(wall, 3), s.worker_pages, f"{s.workers_launched}/{s.workers_planned}",
                     s.pages_flushed if mode is not Mode.SHARED_HIT else None, s.page_source])
    return rs.Table(
        ["mode", "µs/page median", "µs/page min", "µs/page max", "µs/page vs shared hit (x)", "wall ms median",
         "wall ms min", "wall ms max", "wall vs shared hit (x)", "pages read by workers", "workers launched",
         "Pages Flushed (timed, max)", "page source"], rows,
        caption=(f"Ours ({setup_line(run)}): median, min and max of {run.options.repetitions} interleaved rounds of "
                 "one run; µs/page = the workers' actual time in the scan node (EXPLAIN ANALYZE VERBOSE) / the pages "
                 "they read; wall = SELECT count(*) timed by the client; vs shared hit = ratio of the medians"))


def ratios_table(run: PageReadRun) -> rs.Table:
    rows: list[list[rs.Cell]] = []
    for r in an.ratios(run.samples):
        rows.append([r.label, _r(r.us_per_page, 3), _r(r.paired_us_per_page.median, 3),
                     _r(r.paired_us_per_page.low, 3), _r(r.paired_us_per_page.high, 3), _r(r.wall, 3),
                     _r(r.paired_wall.median, 3), _r(r.paired_wall.low, 3), _r(r.paired_wall.high, 3),
                     None if math.isnan(r.differ_p) else float(f"{r.differ_p:.3g}")])
    return rs.Table(
        ["ratio", "µs/page: of the medians", "µs/page: per round, median", "per round min", "per round max",
         "wall: of the medians", "wall: per round, median", "per round min", "per round max",
         "p (µs/page samples differ)"], rows,
        caption=("Ratios within the same run: of the medians, and per round (the two modes timed in the same round, "
                 "paired); p: two-sided Mann-Whitney U of the µs/page samples (small: the difference is not noise)"))


def preparation_table(run: PageReadRun) -> rs.Table:
    rows: list[list[rs.Cell]] = []
    for p in run.preparations:
        first = p.first
        rows.append([LABELS[Mode(p.mode)], p.flushed_before, _r(p.flush_before_ms, 2), first.pages_flushed,
                     _r(first.flush_ms, 2), first.pages_from_pool, first.page_source or "shared buffers",
                     _r(first.us_per_page, 3), _r(first.execution_ms, 2)])
    return rs.Table(
        ["mode", "flushed before timing (pg_flush_local_buffers)", "flush ms", "first query: Pages Flushed",
         "first query: Flush Time ms", "first query: Pages From Leader's Pool", "first query: page source",
         "first query: µs/page", "first query: execution ms"], rows,
        caption="Before the timed rounds: the file session's explicit flush, then each mode's first query (untimed)")


def serial_setup(run: PageReadRun) -> str:
    table = run.serial_table
    facts = table.get(str(Pool.SHARED)) or table.get(str(Pool.PRIVATE)) or {}
    size = f"{facts['pages']:,} pages, {facts['bytes'] / 2**20:,.0f} MiB" if facts else "?"
    return (f"{server_label(run)}, {run.options.serial_rows:,} rows (id int, md5 text; {size}), temp_buffers = "
            f"{run.options.serial_temp_buffers}")


def serial_table(run: PageReadRun) -> rs.Table:
    """The leader's own serial scan, one row per session: the client's times and the checks."""
    spreads = an.serial_spreads(run.serial_samples)
    checks = {c.session: c for c in run.serial_checks}
    rows: list[list[rs.Cell]] = []
    for pool in POOLS:
        spread = spreads.get(pool)
        check = checks.get(str(pool))
        scan = check.scan if check else None
        memory = check.memory_kb if check else {}
        rows.append([
            POOL_LABELS[pool], _r(spread.median, 2) if spread else None, _r(spread.low, 2) if spread else None,
            _r(spread.high, 2) if spread else None, spread.n if spread else 0,
            scan.node if scan else None, scan.local_hit if scan else None, scan.local_read if scan else None,
            _r(scan.execution_ms, 2) if scan else None, check.mapping.label if check else None,
            memory.get("RssAnon"), memory.get("RssShmem")])
    return rs.Table(
        ["session", "wall ms median", "wall ms min", "wall ms max", "rounds", "EXPLAIN: scan",
         "EXPLAIN: local hits", "EXPLAIN: local reads", "EXPLAIN: execution ms", "maps the memfd pool",
         "RssAnon kB", "RssShmem kB"], rows,
        caption=(f"The leader's own serial scan ({serial_setup(run)}): `{run.serial_table.get('query', '?')}` with "
                 "pg_tempbuf.parallel_scan = off and max_parallel_workers_per_gather = 0, in two sessions, timed by "
                 f"the client in {run.options.serial_repetitions} interleaved rounds (the order alternating); "
                 "EXPLAIN (ANALYZE, BUFFERS) once per session before the rounds; the mapping from /proc/<pid>/maps, "
                 "the memory from /proc/<pid>/status after it"))


def serial_ratio_table(run: PageReadRun) -> rs.Table:
    ratio = an.serial_ratio(run.serial_samples)
    rows: list[list[rs.Cell]] = []
    if ratio is not None:
        rows.append(["pool / private", _r(ratio.of_medians, 4), _r(ratio.paired.median, 4), _r(ratio.paired.low, 4),
                     _r(ratio.paired.high, 4), _interval(ratio.paired), ratio.paired.n,
                     None if math.isnan(ratio.differ_p) else float(f"{ratio.differ_p:.3g}"),
                     _r(ratio.first_second, 4), serial_verdict(run, ratio)])
    return rs.Table(
        ["ratio", "wall: of the medians", "wall: per round, median", "per round min", "per round max",
         "per round median: 95% CI", "rounds",
         "p (times differ)", "first / second in a round", f"acceptance (<= {SERIAL_ACCEPTANCE})"], rows,
        caption=(f"The serial scan, pool / private: of the medians, and per round (paired; the CI distribution-free, "
                 "none for fewer than 6 rounds); p: two-sided "
                 "Mann-Whitney U of the two sessions' times; first / second: the median time of a round's first "
                 "query over its second's (an order effect, which the alternating order spreads over both); "
                 f"acceptance: \"a serial scan with pg_tempbuf.parallel_scan = off is not slower (<= "
                 f"{(SERIAL_ACCEPTANCE - 1):.0%})\", met when both estimates are <= {SERIAL_ACCEPTANCE}, not met when "
                 "both are above, undecided when they split"))


def _interval(spread: an.Spread) -> str | None:
    if math.isnan(spread.ci_low) or math.isnan(spread.ci_high):
        return None
    return f"{spread.ci_low:.4f} .. {spread.ci_high:.4f}"


def serial_notes(run: PageReadRun) -> list[str]:
    if not run.options.serial:
        return []
    out = [
        "Serial part: two sessions of their own after the parallel part's were closed, pg_tempbuf.shared_pool set "
        "before their first temporary table (on: the local buffers move into the memfd at the first statement "
        "after the load; off: they stay in core's private memory), then " + "; ".join(run.serial_settings) + ". "
        "Each loads the same table (CREATE TEMP TABLE AS, VACUUM ANALYZE), reads it once (warm) and EXPLAINs it "
        "(a plain Seq Scan, no Gather, local hits only: checked), then every round times the query once in each, "
        "the pool first in even rounds, the private session first in odd ones.",
    ]
    out += [f"WARNING: serial scan: {w}; the pool / private comparison is void."
            for w in an.mapping_warnings(run.serial_checks)]
    out += [f"Serial scan, {POOL_LABELS[Pool(c.session)]}: the mapping was not checked: {c.mapping.detail}."
            for c in run.serial_checks if not c.mapping.checked]
    if run.options.quick:
        out.append("--quick: the serial part's table is small and its rounds few; a 2% difference is within its "
                   "noise.")
    return out


def notes(run: PageReadRun, found: dict[Mode, an.ModeSummary]) -> list[str]:
    o = run.options
    out = [
        f"One session per mode (temp_buffers = {o.temp_buffers} and pg_tempbuf.shared_pool set before its first "
        "temporary table); every round times each mode once, the order rotating, first the plain count (wall), "
        "then EXPLAIN (ANALYZE, VERBOSE, BUFFERS, FORMAT JSON) of it (µs/page). No statement is prepared.",
        f"Table: {o.pages:,} rows (id int, a {run.table.get('pad_bytes', '?')}-byte text) with fillfactor "
        f"{run.table.get('fillfactor', '?')}: one row a page, so a page's work is its read and one tuple; every copy "
        "vacuumed after its load (hint bits and all-visible pages in each mode).",
        "Session settings: " + "; ".join(run.session_settings) + ". The costs only make the planner pick the "
        "parallel plan (checked on every run); they do not change what runs.",
        f"Shared hit: the UNLOGGED copy read into shared_buffers = {run.server.get('shared_buffers', '?')} by "
        f"{run.prewarm or '?'}.",
    ]
    if str(run.server.get("data_checksums")) == "on":
        out.append("The cluster has data checksums: a file-mode worker verifies each page's checksum, which the "
                   "in-place and shared-hit reads do not (a buffer is verified when it is read into memory).")
    for p in run.preparations:
        if p.mode == str(Mode.IN_PLACE) and p.first.pages_flushed:
            out.append(f"In place, first query: pg_tempbuf wrote {p.first.pages_flushed:,} dirty pages "
                       f"(Pages Flushed, {_r(p.first.flush_ms, 1)} ms of Flush Time, Flush Mode upfront: leader "
                       "participation is off) although its workers read "
                       f"{p.first.pages_from_pool or 0:,} pages in the leader's pool; the timed runs after it had "
                       "nothing left to write.")
    in_place = found.get(Mode.IN_PLACE)
    if in_place is not None and in_place.pages_from_pool == 0:
        out.append("WARNING: a timed in-place run read no page in the leader's pool (Pages From Leader's Pool = 0).")
    for mode, s in found.items():
        if s.pages_flushed and mode is not Mode.SHARED_HIT:
            out.append(f"WARNING: a timed {LABELS[mode]} run flushed {s.pages_flushed:,} pages.")
        if s.workers_launched < s.workers_planned:
            out.append(f"{LABELS[mode]}: some rounds launched {s.workers_launched} of {s.workers_planned} workers.")
    shared = found.get(Mode.SHARED_HIT)
    if shared is not None and shared.shared_read:
        out.append(f"WARNING: a timed shared-hit run read {shared.shared_read:,} pages into shared_buffers "
                   "(not all hits).")
    if o.quick:
        out.append("--quick: a small table and few rounds; the figures are noisier than a default run's.")
    out += serial_notes(run)
    library = extension_library_note(run.server, EXTENSION)
    if library is not None:
        out.append(library)
    return out + run.notes


def report(run: PageReadRun, console: Console) -> None:
    """Write every output and print the tables."""
    out = run.out_dir
    write_raw(run)
    found = an.summaries(run.samples)
    plot_page_read(found, run.samples, f"Workers' page reads, {setup_line(run)}", out / PLOT)
    ours = ours_table(run, found)
    tables = [ratios_table(run), preparation_table(run),
              rs.Table(["mode", "what"], [[LABELS[m], WHAT[m]] for m in an.MODES], caption="The modes")]
    plots = [PLOT]
    serial_tables: list[rs.Table] = []
    if run.options.serial:
        serial_tables = [serial_table(run), serial_ratio_table(run)]
        tables += serial_tables
        plot_serial(run.serial_samples, f"The leader's serial scan, {serial_setup(run)}", SERIAL_ACCEPTANCE,
                    out / SERIAL_PLOT)
        plots.append(SERIAL_PLOT)
    run_notes = notes(run, found)

    expected = expected_table(run)
    lines = summary_opening(TITLE, run, expected, ours)
    for table in tables:
        lines += [table.markdown(), ""]
    lines += ["## Notes", ""] + [f"- {n}" for n in run_notes]
    (out / "summary.md").write_text("\n".join(lines) + "\n")

    section = run_section(run, experiment=NAME, title=TITLE, article=expected, ours=ours, tables=tables,
                          plots=plots, raw_data=raw_files(run), notes=run_notes)
    section.versions["pg_tempbuf"] = extension_version(run.server, EXTENSION)
    rs.write_section(out, section)

    console.print(ours.rich())
    console.print(tables[0].rich())
    console.print(tables[1].rich())
    for table in serial_tables:
        console.print(table.rich())
    for note in run_notes:
        if note.startswith("WARNING") or note.startswith("In place, first query"):
            console.print(note, markup=False, highlight=False)
    console.print(f"Results in {out}/ (summary.md, {', '.join(raw_files(run))}, section.json, {', '.join(plots)})",
                  markup=False, highlight=False)
