"""PNG plots of a parallel-temp run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pglab.experiments.parallel_temp.analysis import PARALLEL_VARIANTS, Key, mb
from pglab.experiments.parallel_temp.runner import ParallelTempRun
from pglab.experiments.parallel_temp.workload import QUERIES, Variant
from pglab.plotting import plt


def plot_speedups(run: ParallelTempRun, speed: dict[Key, float], path: Path) -> None:
    workers = max(run.options.workers)
    fig, axes = plt.subplots(1, len(QUERIES), figsize=(5 * len(QUERIES), 4), squeeze=False)
    for ax, query in zip(axes[0], QUERIES, strict=True):
        for variant in PARALLEL_VARIANTS:
            points = sorted((mb(run, r), speed[(r, query, workers, str(variant))])
                            for r in run.options.rows if (r, query, workers, str(variant)) in speed)
            if points:
                ax.plot(*zip(*points, strict=True), "o-", label=str(variant))
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("temp table size (MB)")
        ax.set_ylabel(f"speedup over serial ({workers} workers)")
        ax.set_title(query)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(f"Parallel Temp Seq Scan vs stock serial scan (temp_buffers={run.options.temp_buffers})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_scaling(run: ParallelTempRun, speed: dict[Key, float], path: Path) -> None:
    rows = max(run.options.rows)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for query in QUERIES:
        for variant in (Variant.PARALLEL_CLEAN, Variant.UNLOGGED_PARALLEL):
            points = [(w, speed[(rows, query, w, str(variant))]) for w in run.options.workers
                      if (rows, query, w, str(variant)) in speed]
            if points:
                style = "o-" if variant is Variant.PARALLEL_CLEAN else "s--"
                ax.plot(*zip(*points, strict=True), style, label=f"{query}, {variant}")
    ax.set_xlabel("workers")
    ax.set_ylabel("speedup over serial")
    ax.set_title(f"Scaling with workers, {mb(run, rows):.0f} MB table")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="x-small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_decisions(decisions: list[dict[str, Any]], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(decisions)), 4.2))
    labels = [f"{d['rows'] // 1000}k/{d['dirty_share']:.2f}/{d['query'][:5]}" for d in decisions]
    ratio = [d["serial_ms"] / d["parallel_ms"] if d["parallel_ms"] else 0.0 for d in decisions]
    colors = ["tab:green" if d["faster"] == d["planner"] else "tab:red" for d in decisions]
    ax.bar(range(len(decisions)), ratio, color=colors)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks(range(len(decisions)), labels, rotation=70, fontsize="x-small")
    ax.set_ylabel("serial ms / parallel ms")
    ax.set_title("Decision grid (rows/dirty share/query): green = planner chose the faster plan")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
