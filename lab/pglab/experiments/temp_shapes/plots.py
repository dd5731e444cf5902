"""Plots of `pglab temp-shapes`: speedup per shape, TPC-H per query."""

from __future__ import annotations

from pathlib import Path

from pglab.experiments.temp_shapes.analysis import (
    MIN_RATIO_VS_UNLOGGED,
    ItemSummary,
)
from pglab.experiments.temp_shapes.workload import Config
from pglab.plotting import plt


def _short(summary: ItemSummary, config: Config) -> str:
    """The plan in a few characters: serial, or Gather launched/planned (leader only)."""
    plan = summary.plans.get(str(config))
    if plan is None:
        return "?"
    if not plan.gather:
        return "serial"
    return f"Gather {plan.workers_launched}/{plan.workers_planned}" + (" LO" if plan.leader_only else "")


def plot_shapes(summaries: list[ItemSummary], title: str, path: Path) -> None:
    """Per shape: median(off)/median(on) and median(UNLOGGED)/median(on)."""
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(summaries) + 2), 4.5))
    width = 0.38
    xs = range(len(summaries))
    vs_off = [s.speedup_on for s in summaries]
    vs_ref = [s.ratio_to_reference for s in summaries]
    ax.bar([x - width / 2 for x in xs], vs_off, width, label="on vs off: median(off) / median(on)")
    ax.bar([x + width / 2 for x in xs], vs_ref, width,
           label="on vs UNLOGGED copy: median(unlogged) / median(on)")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.axhline(MIN_RATIO_VS_UNLOGGED, color="red", linestyle=":", linewidth=0.8, label="0.9 (issue 9)")
    labels = [f"{s.item}\non: {_short(s, Config.ON)}\n{s.reference}: {_short(s, Config(s.reference))}"
              for s in summaries]
    ax.set_xticks(list(xs), labels, fontsize="x-small")
    ax.set_ylabel("ratio (> 1: pg_tempbuf on is faster)")
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize="x-small")
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_tpch(summaries: list[ItemSummary], title: str, path: Path) -> None:
    """Per TPC-H query: median ms of off, on and the reference (all permanent, or the UNLOGGED copy)."""
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(summaries) + 2), 4.5))
    reference = Config(summaries[0].reference) if summaries else Config.PERMANENT
    configs = (Config.OFF, Config.ON, reference)
    all_temp = reference is Config.UNLOGGED
    width = 0.8 / len(configs)
    for i, config in enumerate(configs):
        xs = [x + (i - 1) * width for x in range(len(summaries))]
        ax.bar(xs, [s.median_ms.get(str(config), 0.0) for s in summaries], width,
               label={Config.OFF: f"temp {'tables' if all_temp else 'dimensions'}, pg_tempbuf off",
                      Config.ON: f"temp {'tables' if all_temp else 'dimensions'}, on",
                      Config.PERMANENT: "all permanent", Config.UNLOGGED: "UNLOGGED copy"}[config])
    ax.set_xticks(range(len(summaries)),
                  [f"{s.item}\non: {_short(s, Config.ON)}\n{'unl.' if all_temp else 'perm.'}: {_short(s, reference)}"
                   for s in summaries],
                  fontsize="x-small")
    ax.set_ylabel("median ms")
    ax.set_yscale("log")
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize="x-small")
    ax.grid(True, axis="y", alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
