"""The plots of `pglab index-build`: build time against rows, one panel per pool size (temp_buffers) and key type,
one series per mode; and the ratios of the same run against rows, panelled alike."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

from pglab.experiments.index_build.analysis import (
    CORE_SPEEDUP,
    LABELS,
    RATIO_LABELS,
    SPEEDUP,
    VS_UNLOGGED,
    Mode,
    ModeSummary,
    Ratio,
)
from pglab.plotting import plt

COLORS = {Mode.TEMP_SERIAL: "tab:gray", Mode.TEMP_PARALLEL: "tab:green", Mode.UNLOGGED_PARALLEL: "tab:blue",
          Mode.UNLOGGED_SERIAL: "tab:cyan"}
STYLES = {Mode.TEMP_SERIAL: "o-", Mode.TEMP_PARALLEL: "s-", Mode.UNLOGGED_PARALLEL: "^-", Mode.UNLOGGED_SERIAL: "v--"}
RATIO_COLORS = {SPEEDUP: "tab:green", VS_UNLOGGED: "tab:blue", CORE_SPEEDUP: "tab:cyan"}


def rows_label(rows: int) -> str:
    """20000 -> '20k', 5000000 -> '5M'."""
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if rows >= size and rows % (size // 10) == 0:
            return f"{rows / size:g}{unit}"
    return f"{rows:,}"


def _rows_axis(ax: Any, rows: Sequence[int]) -> None:
    """A log axis of rows, ticked at the sizes measured."""
    ax.set_xscale("log")
    ticks = sorted(set(rows))
    ax.set_xticks(ticks, [rows_label(r) for r in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    if len(ticks) == 1:
        ax.set_xlim(ticks[0] / 2, ticks[0] * 2)
    ax.set_xlabel("rows")


def panel_title(pool: str, key: str, pools: Sequence[str]) -> str:
    return f"{key} key" if len(pools) == 1 else f"temp_buffers = {pool}, {key} key"


def plot_build_times(found: Sequence[ModeSummary], pools: Sequence[str], keys: Sequence[str], title: str,
                     path: Path) -> None:
    """Median CREATE INDEX time against rows (log-log), min..max as error bars; a panel per pool size (a row) and
    key type (a column)."""
    fig, axes = plt.subplots(len(pools), len(keys), figsize=(5.5 * len(keys), 4.4 * len(pools)), squeeze=False)
    for (pool, key), ax in zip([(p, k) for p in pools for k in keys], axes.flat, strict=True):
        here = [s for s in found if (s.temp_buffers, s.key) == (pool, key)]
        for mode in Mode:
            mine = sorted((s for s in here if s.mode is mode), key=lambda s: s.rows)
            if not mine:
                continue
            xs = [s.rows for s in mine]
            medians = [s.ms.median for s in mine]
            errors = [[s.ms.median - s.ms.low for s in mine], [s.ms.high - s.ms.median for s in mine]]
            ax.errorbar(xs, medians, yerr=errors, fmt=STYLES[mode], color=COLORS[mode], capsize=3, markersize=4,
                        linewidth=1,
                        label=f"{LABELS[mode]} (workers launched: {', '.join(s.launched_label for s in mine)})")
        _rows_axis(ax, [s.rows for s in here])
        ax.set_yscale("log")
        plain = ScalarFormatter()
        plain.set_scientific(False)
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_ylabel("CREATE INDEX, ms (median, min..max)")
        ax.set_title(panel_title(pool, key, pools), fontsize="medium")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize="x-small", loc="upper left")
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_ratios(found: Sequence[Ratio], pools: Sequence[str], keys: Sequence[str], goal: float, title: str,
                path: Path) -> None:
    """Each ratio (of the medians; per round min..max as error bars) against rows, a panel per pool size (a row)
    and key type (a column); 1 and the goal line drawn."""
    fig, axes = plt.subplots(len(pools), len(keys), figsize=(5.5 * len(keys), 4.0 * len(pools)), squeeze=False)
    for (pool, key), ax in zip([(p, k) for p in pools for k in keys], axes.flat, strict=True):
        here = [r for r in found if (r.temp_buffers, r.key) == (pool, key)]
        for pair, label in RATIO_LABELS.items():
            mine = sorted((r for r in here if (r.numerator, r.denominator) == pair), key=lambda r: r.rows)
            if not mine:
                continue
            xs = [r.rows for r in mine]
            values = [r.of_medians for r in mine]
            low = [max(v - r.paired.low, 0.0) if r.paired.n else 0.0 for v, r in zip(values, mine, strict=True)]
            high = [max(r.paired.high - v, 0.0) if r.paired.n else 0.0 for v, r in zip(values, mine, strict=True)]
            ax.errorbar(xs, values, yerr=[low, high], fmt="o-", color=RATIO_COLORS[pair], capsize=3, markersize=4,
                        linewidth=1, label=label)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axhline(goal, color="tab:red", linewidth=0.8, linestyle="--", label=f"goal line {goal} (ours / UNLOGGED)")
        _rows_axis(ax, [r.rows for r in here])
        ax.set_ylabel("time ratio (of the medians; per round min..max)")
        ax.set_title(panel_title(pool, key, pools), fontsize="medium")
        highest = max([r.paired.high for r in here if r.paired.n] + [goal])
        ax.set_ylim(0, highest * 1.1)
        ax.grid(True, which="major", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize="x-small", loc="lower center", ncols=len(labels))
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout(rect=(0, 0.07 / len(pools), 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
