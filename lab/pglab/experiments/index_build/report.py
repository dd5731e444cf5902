"""Outputs of `pglab index-build`: raw.csv, meta.json, summary.md, the plots, section.json, and the console's
tables."""

from __future__ import annotations

import csv
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console

from pglab import report_section as rs
from pglab.experiments.index_build import analysis as an
from pglab.experiments.index_build.analysis import LABELS, WHAT, IndexBuildRun, Mode
from pglab.experiments.index_build.options import EXTENSION, GOAL_VS_UNLOGGED, NAME, SAMPLE_INTERVAL_S
from pglab.experiments.index_build.plots import plot_build_times, plot_ratios
from pglab.jsonio import write_json
from pglab.run_report import run_section, server_label, summary_opening
from pglab.server import extension_library_note, extension_version

TITLE = "CREATE INDEX on a temporary table just written: serial, pg_tempbuf's parallel build, an UNLOGGED copy"
BUILD_PLOT = "build_time.png"
RATIO_PLOT = "ratios.png"
RAW_FILES = ["raw.csv", "meta.json"]
RAW_FIELDS = ["temp_buffers", "rows", "key", "mode", "repetition", "position", "ms", "load_ms", "workers_requested",
              "sort_participants", "workers_launched", "pages_written", "table_pages", "index_bytes",
              "worker_peak_mb", "workers_seen", "memory_samples", "checked", "check_ok", "index_count", "index_sum",
              "seq_count", "seq_sum", "check_index_node", "check_seq_node"]
WORKER_PEAK_COLUMN = "worker peak MiB"
WORKER_MEMORY_MEASURED = (
    "the RssAnon line of /proc/<pid>/status of each parallel worker of the build (pg_stat_activity's "
    "backend_type = 'parallel worker' and leader_pid = the building session's backend, through its function "
    f"pg_stat_get_activity), read every {SAMPLE_INTERVAL_S * 1000:g} ms from another connection while CREATE "
    "INDEX runs, each worker's highest kept; per build the largest worker's peak (kB / 1024 = MiB) and the "
    "workers seen, per mode the median over rounds. RssAnon is a worker's private memory (its sort's share of "
    "maintenance_work_mem, its local buffers, its catalog caches); shared memory, such as shared_buffers or the "
    "leader's pool mapped by the workers, is not anonymous and not counted; a peak between two samples can be "
    "missed, and a worker that lives under the interval may not be seen. Every build is sampled, serial ones "
    "too, so the sampler's cost hits the modes alike")


def _r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None or math.isnan(value) else round(value, digits)


def _csv(path: Path, rows: list[dict[str, Any]], fields: list[str]) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def raw_row(build: an.Build) -> dict[str, Any]:
    check = build.check
    memory = build.memory
    return {"temp_buffers": build.temp_buffers, "rows": build.rows, "key": build.key, "mode": build.mode,
            "repetition": build.repetition, "position": build.position, "ms": _r(build.ms, 3),
            "load_ms": _r(build.load_ms, 3),
            "workers_requested": build.trace.workers_requested, "sort_participants": build.trace.sort_participants,
            "workers_launched": build.trace.workers_launched, "pages_written": build.trace.pages_written,
            "table_pages": build.table_pages, "index_bytes": build.index_bytes,
            "worker_peak_mb": None if memory is None else _r(memory.peak_mb, 2),
            "workers_seen": None if memory is None else memory.workers_seen,
            "memory_samples": None if memory is None else memory.samples,
            "checked": check is not None,
            "check_ok": None if check is None else check.ok,
            "index_count": None if check is None else check.index_count,
            "index_sum": None if check is None else check.index_sum,
            "seq_count": None if check is None else check.seq_count,
            "seq_sum": None if check is None else check.seq_sum,
            "check_index_node": None if check is None else check.index_node,
            "check_seq_node": None if check is None else check.seq_node}


def versions(run: IndexBuildRun) -> dict[str, Any]:
    return rs.postgres_versions(str(run.server.get("version")), run.version_num,
                                postgresql_full=run.server.get("version_full"),
                                pg_tempbuf=extension_version(run.server, EXTENSION))


def write_raw(run: IndexBuildRun) -> None:
    """raw.csv (one row per build) and meta.json (the run, its server, machine, settings and summaries)."""
    out = run.out_dir
    _csv(out / "raw.csv", [raw_row(b) for b in run.builds], RAW_FIELDS)
    write_json(out / "meta.json", {
        "status": run.status, "error": run.error, "command": run.command, "started": run.started,
        "finished": run.finished, "wall_s": run.wall_s, "options": asdict(run.options), "server": run.server,
        "machine": run.machine, "versions": versions(run), "modes": [str(m) for m in run.modes],
        "session_settings": run.session_settings,
        "summaries": [{**asdict(s), "expected_workers": expected_workers(run, s)} for s in an.summaries(run.builds)],
        "ratios": [{**asdict(r), "label": r.label} for r in an.ratios(run.builds)],
        "goal_vs_unlogged": GOAL_VS_UNLOGGED,
        "worker_memory": {"measured": WORKER_MEMORY_MEASURED, "interval_ms": SAMPLE_INTERVAL_S * 1000,
                          "unavailable": run.worker_memory_unavailable},
        "notes": run.notes,
    })


def expected_workers(run: IndexBuildRun, s: an.ModeSummary) -> int:
    """The workers core's rule asks for the mode's build of a table of that many pages (0 for a serial mode)."""
    if s.mode not in an.PARALLEL_MODES:
        return 0
    return an.core_rule_workers(s.table_pages, run.options.workers, int(run.server.get("maintenance_work_mem_kb") or 0),
                                run.options.table_parallel_workers,
                                int(run.server.get("min_parallel_table_scan_pages") or 1024))


def setup_line(run: IndexBuildRun) -> str:
    o = run.options
    storage = f", tables' parallel_workers = {o.table_parallel_workers}" if o.table_parallel_workers is not None \
        else ""
    return (f"{server_label(run)}, max_parallel_maintenance_workers = {o.workers}, maintenance_work_mem = "
            f"{o.maintenance_work_mem}, temp_buffers = {', '.join(o.temp_buffers)}{storage}, data checksums "
            f"{run.server.get('data_checksums', '?')}")


def expected_table(run: IndexBuildRun, found: list[an.ModeSummary]) -> rs.Table:
    """What core's rule asks for at each size (no article measured this)."""
    o = run.options
    mwm_kb = int(run.server.get("maintenance_work_mem_kb") or 0)
    min_pages = int(run.server.get("min_parallel_table_scan_pages") or 1024)
    rows_out: list[list[rs.Cell]] = []
    for rows in o.rows:
        pages = [s.table_pages for s in found if s.rows == rows]
        if not pages:
            continue
        table_pages = max(pages)
        by_size = an.core_rule_workers(table_pages, o.workers, 1 << 40, o.table_parallel_workers, min_pages)
        workers = an.core_rule_workers(table_pages, o.workers, mwm_kb, o.table_parallel_workers, min_pages)
        rows_out.append([rows, table_pages, round(table_pages * int(run.server.get("block_size") or 8192) / 2**20, 1),
                         by_size, workers])
    return rs.Table(
        ["rows", "table pages", "table MiB", "workers by size (and max_parallel_maintenance_workers)",
         "workers core's rule asks for"], rows_out,
        caption=(f"What core's rule asks for a btree build on a table of that size (plan_create_index_workers, which "
                 f"pg_tempbuf follows for a temporary table): one worker from min_parallel_table_scan_size "
                 f"({run.server.get('min_parallel_table_scan_size', '?')}), one more at each tripling, at most "
                 f"max_parallel_maintenance_workers = {o.workers}, then fewer until each participant (the leader "
                 f"too) has 32MB of maintenance_work_mem = {o.maintenance_work_mem}"
                 + ("; the tables' parallel_workers storage parameter replaces all that" if o.table_parallel_workers
                    is not None else "") + ". No article measured this build."))


def worker_memory_caption(run: IndexBuildRun) -> str:
    if run.worker_memory_unavailable is not None:
        return f"worker peak: not measured ({run.worker_memory_unavailable})"
    return (f"worker peak: the median over rounds of each build's largest parallel worker's peak RssAnon "
            f"(/proc/<pid>/status, sampled every {SAMPLE_INTERVAL_S * 1000:g} ms; shared memory not counted, see "
            "the notes), empty where no worker was seen; workers seen: the most in one build")


def ours_table(run: IndexBuildRun, found: list[an.ModeSummary]) -> rs.Table:
    rows_out: list[list[rs.Cell]] = []
    for s in found:
        serial = an.summarize(run.builds, (s.temp_buffers, s.rows, s.key), Mode.TEMP_SERIAL)
        speedup = an.div(serial.ms.median, s.ms.median) if serial is not None else math.nan
        rows_out.append([s.temp_buffers, s.rows, s.key, LABELS[s.mode], _r(s.ms.median, 1), _r(s.ms.low, 1),
                         _r(s.ms.high, 1), s.ms.n, _r(speedup, 3), expected_workers(run, s), s.requested_label,
                         s.launched_label, _r(s.worker_peak_mb, 1), s.workers_seen_max, s.pages_written,
                         round(s.index_bytes / 2**20, 2),
                         f"{s.checked - s.check_failures}/{s.checked} ok" if s.checked else "not checked"])
    return rs.Table(
        ["temp_buffers", "rows", "key", "mode", "ms median", "ms min", "ms max", "builds",
         "speedup over temp off (x)", "workers, core's rule", "workers asked for", "workers launched",
         WORKER_PEAK_COLUMN, "workers seen", "pages written first", "index MiB", "index check"], rows_out,
        caption=(f"CREATE INDEX on a table just written ({setup_line(run)}): client wall time, median, min and max "
                 f"of {run.options.repetitions} interleaved rounds of one run, per temp_buffers of the sessions; "
                 "speedup = temp off's median at the same temp_buffers / the mode's; workers asked for: the build's "
                 "DEBUG1 line; launched: trace_sort's participants less the leader; "
                 f"{worker_memory_caption(run)}; pages written first: what ours wrote of the table before its "
                 "workers started, empty where it wrote none (its workers read its pool); index check: count and sum of hashes through an Index Only Scan equal a Seq "
                 "Scan's (first round)"))


CONSOLE_COLUMNS = ("temp_buffers", "rows", "key", "mode", "ms median", "ms min", "ms max", "speedup over temp off (x)",
                   "workers, core's rule", "workers asked for", "workers launched", WORKER_PEAK_COLUMN, "index check")


def console_table(table: rs.Table, columns: tuple[str, ...], caption: str) -> rs.Table:
    """Some of a table's columns, for the console (the whole table is in summary.md)."""
    where = [table.columns.index(c) for c in columns]
    return rs.Table(list(columns), [[row[i] for i in where] for row in table.rows], caption=caption)


RATIO_CONSOLE_COLUMNS = ("temp_buffers", "rows", "key", "ratio (time / time)", "of the medians", "per round min",
                         "per round max", f"goal line <= {GOAL_VS_UNLOGGED}")


def ratios_table(run: IndexBuildRun) -> rs.Table:
    rows_out: list[list[rs.Cell]] = []
    for r in an.ratios(run.builds):
        goal = an.goal_verdict(r) if (r.numerator, r.denominator) == an.VS_UNLOGGED else None
        rows_out.append([r.temp_buffers, r.rows, r.key, r.label, _r(r.of_medians, 3), _r(r.paired.median, 3),
                         _r(r.paired.low, 3), _r(r.paired.high, 3), r.paired.n,
                         None if math.isnan(r.differ_p) else float(f"{r.differ_p:.3g}"), goal])
    return rs.Table(
        ["temp_buffers", "rows", "key", "ratio (time / time)", "of the medians", "per round, median", "per round min",
         "per round max", "rounds", "p (times differ)", f"goal line <= {GOAL_VS_UNLOGGED}"], rows_out,
        caption=("Ratios within the same run, per temp_buffers of the sessions: of the medians, and per round (the "
                 "two modes' builds of one round at that temp_buffers, paired); a speedup above 1 is a faster "
                 "parallel build; ours / UNLOGGED parallel below 1 is ours faster. The goal line, ours within "
                 f"{GOAL_VS_UNLOGGED - 1:.0%} of the UNLOGGED copy's parallel build, as measured: within (both "
                 "estimates <= the line), above (both over), split; p: two-sided Mann-Whitney U of the two modes' "
                 "times"))


def checks_table(run: IndexBuildRun) -> rs.Table:
    rows_out: list[list[rs.Cell]] = []
    for b in run.builds:
        c = b.check
        if c is None:
            continue
        rows_out.append([b.temp_buffers, b.rows, b.key, LABELS[Mode(b.mode)], c.index_node, c.index_count, c.seq_count,
                         "equal" if c.index_sum == c.seq_sum else f"{c.index_sum} != {c.seq_sum}",
                         "ok" if c.ok and c.problem(b.rows) is None else "WRONG"])
    return rs.Table(
        ["temp_buffers", "rows", "key", "mode", "index read as", "count through the index", "count through a Seq Scan",
         "sum(hashtext(k::text))", "check"], rows_out,
        caption=("Each index built in the first round, read back: SELECT count(*), sum(hashtext(k::text)) through an "
                 "Index Only Scan (enable_seqscan and enable_bitmapscan off, core's serial plan) against a Seq Scan"))


def modes_table(run: IndexBuildRun) -> rs.Table:
    sizes = run.options.temp_buffers
    first = run.session_settings.get(sizes[0], {}) if sizes else {}
    caption = "The modes, each in a session of its own"
    if len(sizes) > 1:
        caption += (f", one per temp_buffers ({', '.join(sizes)}): the settings of the {sizes[0]} sessions shown, the "
                    "others differ in temp_buffers only")
    return rs.Table(["mode", "what", "session settings"],
                    [[LABELS[m], WHAT[m], "; ".join(first.get(str(m), []))] for m in run.modes], caption=caption)


def notes(run: IndexBuildRun, found: list[an.ModeSummary]) -> list[str]:
    o = run.options
    out = [
        "Every build runs on a table just written in its session, as users have it: each round, in each mode's "
        "session, CREATE TABLE AS SELECT g AS id, md5(g::text) AS s FROM generate_series(1, rows) g (TEMP or "
        "UNLOGGED), then CREATE INDEX on id (int key, rows in key order) or s (text key, random order), timed by the "
        "client, then DROP TABLE: a second build on the same table would find its hint bits set (and, where workers "
        "cannot map the leader's pool, its pages already written: ours then writes the table's dirty pages before "
        "its workers start).",
        "Every round builds once in each mode (at each temp_buffers), the order rotating per round; each mode has "
        "its own session (one per temp_buffers; no "
        "statement prepared; a build is a utility statement, not a cached plan). trace_sort = on and "
        "client_min_messages = debug2 in every session (the workers asked for and launched come from the notices; "
        "the messages cost every mode alike).",
        f"Server: shared_buffers = {run.server.get('shared_buffers', '?')}, parallel_leader_participation = "
        f"{run.server.get('parallel_leader_participation', '?')} (the leader sorts a share too), "
        f"pg_tempbuf.shared_pool = {run.server.get('pg_tempbuf.shared_pool', '?')}, max_worker_processes = "
        f"{run.server.get('max_worker_processes', '?')}, max_parallel_workers = "
        f"{run.server.get('max_parallel_workers', '?')}.",
    ]
    pool_bytes = run.server.get("temp_buffers_bytes")
    block_size = int(run.server.get("block_size") or 8192)
    for size in o.temp_buffers:
        temp_buffers = int(pool_bytes.get(size) or 0) if isinstance(pool_bytes, dict) else 0
        too_big = sorted({s.rows for s in found if s.temp_buffers == size and an.is_temp_mode(s.mode) and temp_buffers
                          and s.table_pages * block_size > temp_buffers})
        if too_big:
            out.append(f"The tables of {', '.join(f'{r:,}' for r in too_big)} rows do not fit temp_buffers = "
                       f"{size}: their load wrote pages out before the build (--temp-buffers).")
    if len(o.temp_buffers) > 1:
        out.append(f"Each mode has a session per temp_buffers ({', '.join(o.temp_buffers)}), all interleaved in each "
                   "round; the UNLOGGED modes do not use temp_buffers, so their builds at each size measure the same "
                   "build twice (the spread between them is the run's noise).")
    out.append(f"Worker memory ({WORKER_PEAK_COLUMN}): {WORKER_MEMORY_MEASURED}.")
    if run.worker_memory_unavailable is not None:
        out.append(f"Worker memory not measured: {run.worker_memory_unavailable}; the worker peak columns are empty.")
    for s in found:
        where = f"temp_buffers = {s.temp_buffers}, {s.rows:,} rows, {s.key} key, {LABELS[s.mode]}"
        expected = expected_workers(run, s)
        if s.workers_requested and set(s.workers_requested) != {expected}:
            out.append(f"WARNING: {where}: the builds asked for {s.requested_label} workers, core's rule gives "
                       f"{expected}.")
        if s.workers_launched_max > max(s.workers_requested or (0,)):
            out.append(f"WARNING: {where}: {s.workers_launched_max} workers launched, more than asked for.")
        elif s.workers_requested and s.workers_launched_min < min(s.workers_requested):
            out.append(f"{where}: some builds launched {s.workers_launched_min} of the {s.requested_label} workers "
                       "asked for (max_parallel_workers, max_worker_processes, other sessions' workers).")
        if s.check_failures:
            out.append(f"WARNING: {where}: {s.check_failures} index checks failed.")
        if s.workers_launched_max > 0 and s.workers_seen_max is not None and s.worker_peak_builds < s.ms.n:
            out.append(f"{where}: the workers' memory was read in {s.worker_peak_builds} of {s.ms.n} builds (a "
                       f"worker that lives under {SAMPLE_INTERVAL_S * 1000:g} ms may not be seen).")
    if any(s.mode in an.PARALLEL_MODES and expected_workers(run, s) == 0 for s in found):
        out.append("Where core's rule asks for no worker (a table under min_parallel_table_scan_size, or "
                   "maintenance_work_mem under 64MB), the parallel modes build serially: they measure the same build.")
    if o.quick:
        out.append("--quick: small tables and few rounds; the figures are noisier than a default run's.")
    library = extension_library_note(run.server, EXTENSION)
    if library is not None:
        out.append(library)
    return out + run.notes


def report(run: IndexBuildRun, console: Console) -> None:
    """Write every output and print the tables."""
    out = run.out_dir
    write_raw(run)
    found = an.summaries(run.builds)
    found_ratios = an.ratios(run.builds)
    keys = [k for k in run.options.keys if any(s.key == k for s in found)]
    pools = [p for p in run.options.temp_buffers if any(s.temp_buffers == p for s in found)]
    plot_build_times(found, pools, keys, f"CREATE INDEX on a table just written\n{setup_line(run)}", out / BUILD_PLOT)
    plot_ratios(found_ratios, pools, keys, GOAL_VS_UNLOGGED, f"Ratios of the same run, {server_label(run)}",
                out / RATIO_PLOT)
    plots = [BUILD_PLOT, RATIO_PLOT]
    ours = ours_table(run, found)
    tables = [ratios_table(run), checks_table(run), modes_table(run)]
    run_notes = notes(run, found)

    expected = expected_table(run, found)
    lines = summary_opening(TITLE, run, expected, ours)
    for table in tables:
        lines += [table.markdown(), ""]
    lines += ["## Notes", ""] + [f"- {n}" for n in run_notes]
    (out / "summary.md").write_text("\n".join(lines) + "\n")

    section = run_section(run, experiment=NAME, title=TITLE, article=expected, ours=ours, tables=tables,
                          plots=plots, raw_data=RAW_FILES, notes=run_notes)
    section.versions["pg_tempbuf"] = extension_version(run.server, EXTENSION)
    rs.write_section(out, section)

    console.print(console_table(ours, CONSOLE_COLUMNS, f"CREATE INDEX on a table just written, ms ({setup_line(run)}); "
                                                       "every column in summary.md").rich())
    console.print(console_table(tables[0], RATIO_CONSOLE_COLUMNS, "Ratios of the same run (time / time)").rich())
    for note in run_notes:
        if note.startswith("WARNING"):
            console.print(note, markup=False, highlight=False)
    console.print(f"Results in {out}/ (summary.md, {', '.join(RAW_FILES)}, section.json, {', '.join(plots)})",
                  markup=False, highlight=False)
