"""section.json of a flush-cost run, for `pglab report` (contract: pglab.report_section)."""

from __future__ import annotations

from pglab import reference
from pglab import report_section as rs
from pglab.experiments.flush_cost import options as opt
from pglab.experiments.flush_cost.analysis import FlushCostModel
from pglab.experiments.flush_cost.runner import FlushCostRun
from pglab.stats import Summary

NAME = "flush-cost"
TITLE = "Flush cost of temporary buffers"
# The article's two tables: write / dry-run write / read / dry-run read per size, and write/read.
PHASES = (opt.WRITE_SEQ, opt.DRY_WRITE, opt.READ_SEQ, opt.DRY_READ)
COLUMNS = ["blocks", "write ms", "dry write ms", "read ms", "dry read ms", "write / read"]


def article_table() -> rs.Table:
    medians = {phase: reference.article_medians(phase) for phase in PHASES}
    ratios = reference.write_read_ratios(reference.ARTICLE_RUN_TABLES)
    sizes = sorted(set().union(*(m.keys() for m in medians.values())))
    rows: list[list[rs.Cell]] = [[n, *(medians[p].get(n) for p in PHASES), ratios.get(n)] for n in sizes]
    return rs.Table(COLUMNS, rows, caption=(
        f"The article ({reference.ARTICLE_SERVER}): medians of its published run "
        f"({reference.ARTICLE_RUN_TABLES.removesuffix('.csv')}), EXPLAIN ANALYZE execution times."))


def ours_table(run: FlushCostRun, model: FlushCostModel, summaries: dict[str, dict[int, Summary]]) -> rs.Table:
    sizes = sorted({r.size for r in run.records})

    def median(phase: str, size: int) -> float | None:
        summary = summaries.get(phase, {}).get(size)
        return summary.median if summary else None

    rows: list[list[rs.Cell]] = [
        [n, *(median(p, n) for p in PHASES), model.write_read_ratio_by_size.get(n)] for n in sizes
    ]
    return rs.Table(COLUMNS, rows, caption=(
        f"Ours (PostgreSQL {run.server.get('version')}, {run.options.iterations} iterations per size, "
        f"eviction by {run.options.evict}): medians."))


def model_table(model: FlushCostModel) -> rs.Table:
    t = model.throughput_mb_s
    rows: list[list[rs.Cell]] = [
        ["write_page_cost", model.write_page_cost, "slope(write_seq) / slope(read_seq); the article: 1.2-1.3"],
        ["buffer_scan_cost", model.buffer_scan_cost, "slope(dry_write per allocated buffer) / slope(read_seq)"],
        ["read_page_cost", model.read_page_cost,
         "(slope(scan_private) - slope(scan_resident)) / slope(read_seq): a worker's private read"],
        ["index reads", model.index_read_page_cost,
         "(slope(index_private) - slope(index_resident)) / slope(read_seq): the same through an index "
         "(priced with read_page_cost)"],
        ["random-write penalty", model.random_write_penalty, "slope(write_random) / slope(write_seq)"],
        ["random-read penalty", model.random_read_penalty, "slope(read_random) / slope(read_seq)"],
        ["flush MB/s", t.get("flush"), "sequential flush throughput"],
        ["flush / raw write", t.get("flush_to_raw_write_ratio"), "the same bytes written without PostgreSQL"],
    ]
    return rs.Table(["parameter", "value", "how"], rows, caption="Fitted cost parameters (ours)")


def write_section(run: FlushCostRun, model: FlushCostModel, summaries: dict[str, dict[int, Summary]]) -> None:
    out = run.options.out_dir
    env = run.environment
    notes = [
        f"temp files in {env.get('temp_files_dir') or 'unknown (remote server)'}; reads: {env.get('read_cache')}",
        *[f"size {s} dropped: {why}" for s, why in (run.plan.dropped if run.plan else ())],
        *[f"{name} not recommended: {why}" for name, why in model.not_recommended.items()],
    ]
    rs.write_section(out, rs.Section(
        experiment=NAME, title=TITLE, article=article_table(), ours=ours_table(run, model, summaries),
        tables=[model_table(model)], machine=run.machine,
        versions=rs.postgres_versions(
            str(run.server.get("version")), int(run.server.get("version_num") or 0),
            postgresql_full=run.server.get("version_full"), pg_tempbuf=run.server.get("extension_version"),
        ),
        command=rs.command_line(), plots=["phases.png", "write_read_ratio.png"],
        raw_data=["raw.csv", "model.json", "meta.json", "summary.md"], notes=notes,
        generated=run.finished or rs.utc_timestamp(),
    ))
