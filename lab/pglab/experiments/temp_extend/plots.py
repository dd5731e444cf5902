"""PNG plots of a temp-extend run, the article's figures in the first panel."""

from __future__ import annotations

from pathlib import Path

from matplotlib.axes import Axes

from pglab.experiments.temp_extend import article
from pglab.experiments.temp_extend.analysis import CellSummary
from pglab.experiments.temp_extend.options import DISK, TEMP_BUFFER_MODES, TMPFS
from pglab.plotting import plt

COLORS = {DISK: "tab:brown", TMPFS: "tab:cyan"}
WIDTH = 0.38


def _article_panel(ax: Axes) -> None:
    groups = ["9 MB: extend time (ms)", "1M rows ~2 GB: elapsed (s)"]
    disk = [article.NINE_MB_EXTEND_US_DISK / 1000, article.ONE_M_ROWS_S_DISK]
    tmpfs = [article.NINE_MB_EXTEND_US_TMPFS / 1000, article.ONE_M_ROWS_S_TMPFS]
    xs = range(len(groups))
    for offset, label, values in ((-WIDTH / 2, DISK, disk), (WIDTH / 2, TMPFS, tmpfs)):
        bars = ax.bar([x + offset for x in xs], values, WIDTH, color=COLORS[label], hatch="//", label=label)
        ax.bar_label(bars, fmt="%.3g", fontsize="small")
    ax.set_xticks(list(xs), groups, fontsize="small")
    ax.set_title("the article (PostgreSQL 10)")
    ax.legend(fontsize="small")
    ax.grid(True, axis="y", alpha=0.3)


def _grouped(ax: Axes, cells: list[CellSummary], value: str, ylabel: str, title: str) -> None:
    """Bars per temp_buffers mode, disk beside tmpfs; min..max whiskers for elapsed."""
    present = False
    for offset, tablespace in ((-WIDTH / 2, DISK), (WIDTH / 2, TMPFS)):
        xs: list[float] = []
        heights: list[float] = []
        errors: list[list[float]] = [[], []]
        for x, mode in enumerate(TEMP_BUFFER_MODES):
            cell = next((c for c in cells if c.mode == mode and c.tablespace == tablespace), None)
            height = getattr(cell, value) if cell else None
            if height is None:
                continue
            xs.append(x + offset)
            heights.append(height)
            if value == "elapsed_median_ms" and cell is not None:
                errors[0].append(height - cell.elapsed_min_ms)
                errors[1].append(cell.elapsed_max_ms - height)
        if not xs:
            continue
        present = True
        bars = ax.bar(xs, heights, WIDTH, color=COLORS[tablespace], label=tablespace,
                      yerr=errors if errors[0] else None, capsize=3)
        ax.bar_label(bars, fmt="%.3g", fontsize="small")
    labels = []
    for mode in TEMP_BUFFER_MODES:
        cell = next((c for c in cells if c.mode == mode), None)
        labels.append(f"temp_buffers {mode}" + (f"\n({cell.temp_buffers_blocks} blocks)" if cell else ""))
    ax.set_xticks(range(len(TEMP_BUFFER_MODES)), labels, fontsize="small")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    if present:
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "not counted by this server", ha="center", va="center", transform=ax.transAxes)


def _sizes(cells: list[CellSummary]) -> list[str]:
    return list(dict.fromkeys(c.size for c in cells))


def plot_elapsed(cells: list[CellSummary], path: Path, server_label: str) -> None:
    sizes = _sizes(cells)
    fig, axes = plt.subplots(1, 1 + len(sizes), figsize=(5 * (1 + len(sizes)), 4.5), squeeze=False)
    _article_panel(axes[0][0])
    for ax, size in zip(axes[0][1:], sizes, strict=True):
        own = [c for c in cells if c.size == size]
        blocks = own[0].table_blocks if own else 0
        _grouped(ax, own, "elapsed_median_ms", "ms (median, min..max)", f"ours: CTAS of {size} ({blocks} blocks)")
    fig.suptitle(f"CREATE TEMP TABLE AS: elapsed, disk vs tmpfs ({server_label})")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_io(cells: list[CellSummary], path: Path, server_label: str) -> None:
    sizes = _sizes(cells)
    fig, axes = plt.subplots(2, len(sizes), figsize=(5.5 * len(sizes), 8), squeeze=False)
    for column, size in enumerate(sizes):
        own = [c for c in cells if c.size == size]
        counted = own[0].counted_by if own else ""
        _grouped(axes[0][column], own, "extend_ms", "ms", f"{size}: extend time\n({counted})")
        _grouped(axes[1][column], own, "write_ms", "ms", f"{size}: write time of evicted buffers")
        if size == "9MB":
            for tablespace, us in ((DISK, article.NINE_MB_EXTEND_US_DISK), (TMPFS, article.NINE_MB_EXTEND_US_TMPFS)):
                axes[0][column].axhline(us / 1000, color=COLORS[tablespace], linestyle="--", linewidth=1,
                                        label=f"article {tablespace} ({us / 1000:.1f} ms, 1134 extends)")
            axes[0][column].legend(fontsize="small")
    fig.suptitle(f"Temp-relation extends and writes ({server_label})")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
