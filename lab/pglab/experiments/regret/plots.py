"""Plot of `pglab regret`: every ratio per part and reference, as points over a box plot."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

from pglab.experiments.regret.analysis import (
    MIN_SESSION_RATIO,
    MIN_TPCH_RATIO,
    PARTS,
    REFERENCES,
    TPCH_PART,
    UNLOGGED,
    Ratio,
)
from pglab.plotting import plt

TICKS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0)
PART_LABELS = {"tpch": "TPC-H", "sessions": "session loops", "shapes": "shapes"}


def groups(ratios: list[Ratio]) -> list[tuple[str, list[Ratio]]]:
    """(label, finite ratios) per part and reference, in PARTS order, empty groups left out."""
    found = []
    for part in PARTS:
        for reference in REFERENCES:
            these = [r for r in ratios if r.part == part and r.reference == reference and math.isfinite(r.value)]
            if these:
                label = f"{PART_LABELS[part]}\nvs {'UNLOGGED' if reference == UNLOGGED else 'off'}"
                found.append((label, these))
    return found


def plot_ratios(ratios: list[Ratio], title: str, path: Path) -> None:
    """A strip plot (TPC-H points coloured by load) over a box plot per group; log scale, 1 and the thresholds."""
    found = groups(ratios)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(found) + 2), 5.0))
    rng = np.random.default_rng(28)
    loads = sorted({r.load for r in ratios if r.load is not None})
    colours = plt.get_cmap("tab10")
    for x, (_, these) in enumerate(found):
        values = [r.value for r in these]
        ax.boxplot([values], positions=[x], widths=0.5, showfliers=False,
                   medianprops={"color": "black"}, boxprops={"color": "grey"}, whiskerprops={"color": "grey"})
        jitter = rng.uniform(-0.18, 0.18, len(values))
        for r, dx in zip(these, jitter, strict=True):
            colour = colours(loads.index(r.load) % 10) if r.part == TPCH_PART and r.load in loads else "tab:blue"
            ax.plot(x + dx, r.value, "o", color=colour, alpha=0.75, markersize=4)
        worst = min(these, key=lambda r: r.value)
        ax.annotate(f"{worst.item} {worst.value:.2f}", (x, worst.value), textcoords="offset points",
                    xytext=(8, -10), fontsize="x-small", color="red")
    for load in loads:
        ax.plot([], [], "o", color=colours(loads.index(load) % 10), label=f"TPC-H load {load}")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.axhline(MIN_TPCH_RATIO, color="red", linestyle=":", linewidth=0.9, label=f"{MIN_TPCH_RATIO} (TPC-H line)")
    ax.axhline(MIN_SESSION_RATIO, color="orange", linestyle="--", linewidth=0.9,
               label=f"{MIN_SESSION_RATIO:.3f} = 1/1.05 (session line)")
    ax.set_xticks(range(len(found)), [label for label, _ in found], fontsize="small")
    ax.set_yscale("log")
    low, high = ax.get_ylim()
    ax.yaxis.set_major_locator(FixedLocator([t for t in TICKS if low <= t <= high]))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel("median(reference) / median(on)\n(> 1: pg_tempbuf on is faster)")
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize="x-small", loc="upper left")
    ax.grid(True, axis="y", alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
