"""Tables, plots, summary.md and section.json of a sequence-cache run."""

from __future__ import annotations

import csv

from rich.console import Console

from pglab import report_section as rs
from pglab.experiments.sequence_cache import analysis, article
from pglab.experiments.sequence_cache.analysis import VariantSummary, summarize
from pglab.experiments.sequence_cache.options import ARTICLE_BULK_CALLS, NAME, Kind
from pglab.experiments.sequence_cache.runner import SequenceCacheResult
from pglab.run_report import run_section, server_label, summary_opening

TITLE = "Sequence CACHE under concurrency"


OURS_COLUMNS = ["sequence", "transaction", "peak nextval/s", "peak TPS", "at clients", "scaling stops at",
                "linear up to", "linear up to / cores", "perf at clients", "spinlock %", "LWLock %"]


def ours_table(result: SequenceCacheResult, summaries: list[VariantSummary]) -> rs.Table:
    cores = result.options.cores
    rows: list[list[rs.Cell]] = []
    for s in summaries:
        q = s.perf
        rows.append([
            s.variant, s.kind, round(s.peak_nextval_per_s, 1), round(s.scaling.peak, 3), s.scaling.peak_clients,
            s.scaling.stops_at, s.scaling.linear_up_to, s.scaling.linear_up_to / cores,
            q.clients if q else None, _percent(q.spinlock_share) if q else None,
            _percent(q.lwlock_share) if q else None,
        ])
    return rs.Table(OURS_COLUMNS, rows, caption=(
        f"Ours ({server_label(result)}, {cores} cores, pgbench on the same machine, {result.options.duration_s} s "
        f"per point, bulk = {result.options.bulk_calls:,} nextval calls per transaction): scaling stops at the "
        f"smallest client count no larger count beats by more than {analysis.SCALING_GAIN - 1:.0%}; linear up to "
        f"the largest count reached by steps up the grid that each gave >= {analysis.LINEAR_EFFICIENCY:.0%} of "
        "the proportional TPS gain. Shares: perf "
        "cpu-clock samples of pgbench's backends in spinlock (s_lock and its delay helpers) and LWLock* "
        "functions, in % of all their samples (kernel included)."))


def _percent(share: float | None) -> float | None:
    return None if share is None else round(100 * share, 3)


def curve_tables(result: SequenceCacheResult, summaries: list[VariantSummary]) -> list[rs.Table]:
    tables = []
    for kind in result.options.kinds:
        own = [s for s in summaries if s.kind == str(kind)]
        if not own:
            continue
        rows: list[list[rs.Cell]] = [
            [clients, *(s.tps_by_clients.get(clients) for s in own)] for clients in result.options.clients
        ]
        tables.append(rs.Table(["clients", *(f"{s.variant} TPS" for s in own)], rows,
                               caption=f"TPS per client count, transaction {kind}"))
    return tables


def perf_table(result: SequenceCacheResult) -> rs.Table:
    rows: list[list[rs.Cell]] = [
        [q.kind, q.variant, q.clients, q.samples, _percent(q.kernel_samples / q.samples) if q.samples else None,
         "; ".join(f"{sym} {share:.1%}" for sym, share in q.top_symbols[:6])]
        for q in result.perf_points
    ]
    return rs.Table(["transaction", "sequence", "clients", "samples", "kernel %", "top functions"], rows,
                    caption=f"perf: {result.perf_note}")


def notes(result: SequenceCacheResult, summaries: list[VariantSummary] | None = None) -> list[str]:
    lines = [
        f"pgbench: {result.pgbench} -n -f <script> -c N -j N -T {result.options.duration_s}; scripts in scripts/ "
        "(the article's BEGIN; SELECT nextval(...); END; and BEGIN; SELECT seq_bulk(...); END;).",
        f"perf: {result.perf_note}." + ("" if result.perf_points else " No lock shares were measured."),
        "The article's TPS curves are images without numbers: the comparison is the linear-scaling limit "
        "relative to the core count and perf's lock shares.",
    ]
    superlinear = [s for s in summaries or [] if s.scaling.superlinear]
    if superlinear:
        worst = max(superlinear, key=lambda s: max(s.scaling.efficiency.values()))
        lines.append(
            f"TPS grew faster than linearly from 1 client ({worst.kind} {worst.variant}: up to "
            f"{max(worst.scaling.efficiency.values()):.1f} x clients x TPS(1)) for "
            f"{', '.join(f'{s.kind} {s.variant}' for s in superlinear)}: one client was held back by round-trip "
            "and wake-up latency on this machine rather than by CPU, so the first step up looks superlinear.")
    unknown = sum(q.unknown_samples for q in result.perf_points)
    total = sum(q.samples for q in result.perf_points)
    if unknown:
        lines.append(f"{unknown / total:.1%} of the samples fell in functions perf could not name ([unknown]): the "
                     "server binary is stripped (Debian's is), so only its exported functions (s_lock, "
                     "LWLockAcquire, ...) resolve; static ones such as LWLockAttemptLock do not.")
    if Kind.BULK in result.options.kinds and result.options.bulk_calls != ARTICLE_BULK_CALLS:
        lines.append(f"bulk transactions make {result.options.bulk_calls:,} nextval calls (the article: 1,000,000).")
    return lines + result.notes


def write_outputs(result: SequenceCacheResult) -> tuple[list[VariantSummary], rs.Table, list[str]]:
    from pglab.experiments.sequence_cache.plots import (  # matplotlib is slow to import
        plot_locks,
        plot_scaling,
        plot_tps,
    )

    out = result.out_dir
    assert out is not None
    summaries = summarize(result)
    ours = ours_table(result, summaries)
    with open(out / "summary.csv", "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(ours.columns)
        writer.writerows(ours.rows)
    plots = ["tps.png", "scaling.png", "locks.png"]
    label = server_label(result)
    plot_tps(result, summaries, out / plots[0], label)
    plot_scaling(result, summaries, out / plots[1], label)
    plot_locks(result, summaries, out / plots[2], label)
    tables = [*curve_tables(result, summaries), perf_table(result)]
    all_notes = notes(result, summaries)
    (out / "summary.md").write_text(summary_markdown(result, ours, tables, all_notes), encoding="utf-8")
    rs.write_section(out, run_section(
        result, experiment=NAME, title=TITLE, article=article.table(), ours=ours, tables=tables,
        plots=plots, raw_data=["raw.csv", "perf.csv", "summary.csv", "meta.json"], notes=all_notes,
    ))
    return summaries, ours, all_notes


def summary_markdown(result: SequenceCacheResult, ours: rs.Table, tables: list[rs.Table], all_notes: list[str]) -> str:
    lines = summary_opening(TITLE, result, article.table(), ours)
    for table in tables:
        lines += [table.markdown(), ""]
    lines += ["## Notes", "", *[f"- {n}" for n in all_notes], "",
              "Plots: tps.png, scaling.png, locks.png; data: raw.csv, perf.csv (+ perf/*.data), summary.csv, "
              "meta.json."]
    return "\n".join(lines) + "\n"


def report(result: SequenceCacheResult, console: Console) -> None:
    _, ours, all_notes = write_outputs(result)
    console.print(article.table().rich(title="The article (Postgres 9.4/9.5, 72 cores)"))
    console.print(ours.rich(title=f"Ours ({server_label(result)}, {result.options.cores} cores)"))
    console.print(ours.caption, markup=False, highlight=False)
    for note in all_notes:
        console.print(f"- {note}", markup=False, highlight=False)
    console.print(f"\nresults in {result.out_dir}/ (raw.csv, perf.csv, summary.csv, summary.md, meta.json, "
                  "section.json, *.png)")

