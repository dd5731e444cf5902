"""The speedup plot of a buffered-plan run.
"""

from __future__ import annotations

from pathlib import Path

from pglab.experiments.buffered_plan.analysis import Run
from pglab.experiments.buffered_plan.article import SEED_MS_BEST, SEED_MS_OFF
from pglab.experiments.buffered_plan.options import PLACEMENTS


def plot_speedups(run: Run, speedups: dict[str, dict[str, float]], path: Path) -> None:
    from pglab.plotting import plt  # matplotlib is slow to import

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for query, by_config in speedups.items():
        for placement, style in zip(PLACEMENTS, ("o-", "s--"), strict=True):
            xs = [b for b in run.options.batch_sizes if f"{placement}/{b}" in by_config]
            ax.plot(xs, [by_config[f"{placement}/{b}"] for b in xs], style, label=f"{query} {placement}")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.axhline(SEED_MS_OFF / SEED_MS_BEST, color="red", linestyle=":", label="seed best (x1.128)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size")
    ax.set_ylabel("speedup vs off (median)")
    ax.set_title(f"pg_buffered_plan, {run.server}, TPC-H SF {run.options.scale:g}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
