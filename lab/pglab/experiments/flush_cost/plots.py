"""PNG plots: ours beside the article's, log-log."""

from __future__ import annotations

import math
from pathlib import Path

from pglab import reference
from pglab.plotting import plt
from pglab.stats import Summary

OURS = "ours (median, 95% CI)"


def plot_phases(summaries: dict[str, dict[int, Summary]], path: Path, server_label: str) -> None:
    """One log-log panel per phase: median ms vs blocks, ours and the article's."""
    phases = list(summaries)
    columns = 3
    rows = math.ceil(len(phases) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5 * columns, 3.8 * rows), squeeze=False)
    for ax, phase in zip(axes.flat, phases, strict=False):  # more panels than phases
        by_size = summaries[phase]
        sizes = sorted(by_size)
        medians = [by_size[s].median for s in sizes]
        low = [by_size[s].median - by_size[s].ci_low if by_size[s].has_ci else 0.0 for s in sizes]
        high = [by_size[s].ci_high - by_size[s].median if by_size[s].has_ci else 0.0 for s in sizes]
        ax.errorbar(sizes, medians, yerr=[low, high], marker="o", capsize=3, label=OURS)
        article = reference.article_medians(phase)
        if article:
            ax.plot(list(article), list(article.values()), "s--", alpha=0.7, label="article (median)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(phase)
        ax.set_xlabel("blocks")
        ax.set_ylabel("ms")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    for ax in list(axes.flat)[len(phases):]:
        ax.set_visible(False)
    fig.suptitle(f"Flush-cost phases: {server_label} vs the article's PostgreSQL 18.1 on NVMe")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_write_read_ratio(ours: dict[int, float], path: Path, server_label: str) -> None:
    """median(write_seq) / median(read_seq) per size, ours and both published runs."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if ours:
        ax.plot(list(ours), list(ours.values()), "o-", label=f"ours ({server_label})")
    for filename in (reference.ARTICLE_RUN_TABLES, reference.ARTICLE_RUN_RANDOM):
        ratios = reference.write_read_ratios(filename)
        run = filename.removeprefix("flush_cost_article_run_").removesuffix(".csv")
        ax.plot(list(ratios), list(ratios.values()), "s--", alpha=0.7, label=f"article run {run}")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("blocks")
    ax.set_ylabel("write / read time")
    ax.set_title("Sequential write vs read, per size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
