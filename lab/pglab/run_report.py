"""What the sequence-cache and temp-extend reports share: the server's label, the opening
of summary.md and the run's facts in section.json."""

from __future__ import annotations

from typing import Any, Protocol

from pglab import report_section as rs


class MeasuredRun(Protocol):
    server: dict[str, Any]
    machine: dict[str, Any]
    command: str
    started: str
    finished: str

    @property
    def version_num(self) -> int: ...


def server_label(run: MeasuredRun) -> str:
    """'PostgreSQL 15.20' (Debian's version string adds its package version in parentheses)."""
    return f"PostgreSQL {str(run.server.get('version') or '?').split()[0]}"


def summary_opening(title: str, run: MeasuredRun, article: rs.Table, ours: rs.Table) -> list[str]:
    """summary.md's lines up to the article's table and ours: title, server, machine, when, rerun."""
    m = run.machine
    return [
        f"# {title}",
        "",
        f"- server: {run.server.get('version_full')} ({run.server.get('target')})",
        f"- machine: {m.get('cpu_model')}, {m.get('cpu_cores_logical')} logical cores, "
        f"{m.get('memory_total_bytes', 0) / 2**30:.1f} GiB memory, kernel {m.get('kernel')}"
        + (f", shared memory huge pages: {m['shmem_huge_pages']}" if m.get("shmem_huge_pages") else ""),
        f"- measured {run.started} .. {run.finished}; rerun: `{run.command}`",
        "",
        "## The article", "", article.markdown(), "",
        "## Ours", "", ours.markdown(), "",
    ]


def run_section(run: MeasuredRun, *, experiment: str, title: str, article: rs.Table, ours: rs.Table,
                tables: list[rs.Table], plots: list[str], raw_data: list[str], notes: list[str]) -> rs.Section:
    """section.json's Section, with the run's machine, versions, command and finish time."""
    return rs.Section(
        experiment=experiment, title=title, article=article, ours=ours, tables=tables,
        machine=run.machine,
        versions=rs.postgres_versions(str(run.server.get("version")), run.version_num,
                                      postgresql_full=run.server.get("version_full")),
        command=run.command, plots=plots, raw_data=raw_data, notes=notes,
        generated=run.finished or rs.utc_timestamp(),
    )
