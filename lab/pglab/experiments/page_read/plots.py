"""The plots of `pglab page-read`: workers' µs per page and the wall time, per mode; the serial scan, pool vs
private, round by round."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.ticker import MaxNLocator

from pglab.experiments.page_read.analysis import (
    LABELS,
    POOL_LABELS,
    POOLS,
    Mode,
    ModeSummary,
    Pool,
    Sample,
    SerialSample,
    Spread,
    serial_paired,
    serial_rounds,
)
from pglab.plotting import plt

COLORS = {Mode.IN_PLACE: "tab:green", Mode.FILE: "tab:red", Mode.SHARED_HIT: "tab:blue"}
POOL_COLORS = {Pool.SHARED: "tab:green", Pool.PRIVATE: "tab:gray"}


def _panel(ax: Any, modes: list[Mode], spreads: list[Spread], points: list[list[float]], ylabel: str,
           title: str) -> None:
    xs = list(range(len(modes)))
    medians = [s.median for s in spreads]
    errors = [[s.median - s.low for s in spreads], [s.high - s.median for s in spreads]]
    ax.bar(xs, medians, color=[COLORS[m] for m in modes], alpha=0.75)
    ax.errorbar(xs, medians, yerr=errors, fmt="none", ecolor="black", capsize=6,
                label="min .. max")
    for x, values in zip(xs, points, strict=True):
        offsets = [x - 0.2 + 0.4 * i / max(1, len(values) - 1) for i in range(len(values))]
        ax.plot(offsets, values, ".", color="black", markersize=3, alpha=0.5)
    ax.set_xticks(xs, [f"{LABELS[m]}\nmedian {median:.3g}" for m, median in zip(modes, medians, strict=True)])
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    ax.set_ylim(bottom=0)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="x-small", loc="upper left")


def plot_page_read(summaries: dict[Mode, ModeSummary], samples: Sequence[Sample], title: str, path: Path) -> None:
    """Left: the workers' µs per page (median bar, min..max, every round a dot); right: the wall time."""
    modes = list(summaries)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
    _panel(left, modes, [summaries[m].us_per_page for m in modes],
           [[s.read.us_per_page for s in samples if s.mode == str(m)] for m in modes],
           "µs per page (worker time in the scan / pages it read)", "A worker's page read")
    _panel(right, modes, [summaries[m].wall_ms for m in modes],
           [[s.wall_ms for s in samples if s.mode == str(m)] for m in modes],
           "ms (SELECT count(*), client wall time)", "The whole query")
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_serial(samples: Sequence[SerialSample], title: str, limit: float, path: Path) -> None:
    """Left: each session's time per round; right: pool / private per round, with 1 and the acceptance limit."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
    for pool in POOLS:
        mine = sorted((s.repetition, s.wall_ms) for s in samples if s.session == str(pool))
        left.plot([r for r, _ in mine], [ms for _, ms in mine], ".-", color=POOL_COLORS[pool], label=POOL_LABELS[pool],
                  linewidth=0.8, markersize=4)
    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    left.set_xlabel("round")
    left.set_ylabel("ms (client wall time)")
    left.set_title("Each session's serial scan", fontsize="medium")
    left.set_ylim(bottom=0)
    left.grid(True, alpha=0.3)
    left.legend(fontsize="x-small", loc="lower right")
    paired = serial_paired(samples)
    right.plot(serial_rounds(samples), paired, ".-", color="black", linewidth=0.8, markersize=4,
               label="pool / private, per round")
    right.axhline(1.0, color="tab:gray", linewidth=0.8)
    right.axhline(limit, color="tab:red", linewidth=0.8, linestyle="--", label=f"acceptance limit {limit}")
    right.xaxis.set_major_locator(MaxNLocator(integer=True))
    right.set_xlabel("round")
    right.set_ylabel("ratio")
    right.set_title("Pool / private, the same round", fontsize="medium")
    right.grid(True, alpha=0.3)
    right.legend(fontsize="x-small", loc="upper left")
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
