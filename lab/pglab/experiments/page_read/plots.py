"""The plot of `pglab page-read`: workers' µs per page and the wall time, per mode."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pglab.experiments.page_read.analysis import LABELS, Mode, ModeSummary, Sample, Spread
from pglab.plotting import plt

COLORS = {Mode.IN_PLACE: "tab:green", Mode.FILE: "tab:red", Mode.SHARED_HIT: "tab:blue"}


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
