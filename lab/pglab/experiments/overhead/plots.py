"""PNG plots of an overhead run."""

from __future__ import annotations

from pathlib import Path

from pglab.experiments.overhead.analysis import (
    OFF,
    ON,
    TPCH_CONFIGS,
    Config,
    OverheadResult,
    count_summaries,
    point_summaries,
    tpch_planning_summary,
)
from pglab.plotting import plt

COLORS = {Config.NONE.value: "tab:grey", Config.SESSION.value: "tab:orange", Config.SHARED.value: "tab:blue"}


def plot_instructions(result: OverheadResult, path: Path, server_label: str) -> None:
    """Instructions per query (exec_simple_query, pg_plan_queries, PortalRun) per configuration."""
    summaries = count_summaries(result.counts)
    metrics = [("query_ir", "exec_simple_query"), ("plan_ir", "pg_plan_queries"), ("execute_ir", "PortalRun")]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    width = 0.8 / max(1, len(summaries))
    for i, s in enumerate(summaries):
        xs = [j + i * width for j in range(len(metrics))]
        bars = ax.bar(xs, [s.median[m] for m, _ in metrics], width, label=s.config, color=COLORS[s.config])
        if s.config != Config.NONE.value:
            ax.bar_label(bars, labels=[f"x{s.ratio[m]:.4f}" for m, _ in metrics], fontsize="x-small")
    ax.set_xticks([j + width * (len(summaries) - 1) / 2 for j in range(len(metrics))], [n for _, n in metrics])
    ax.set_ylabel("instructions per query (callgrind)")
    if not summaries:
        ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(f"pgbench -S query, pg_tempbuf loaded or not ({server_label})")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_tps(result: OverheadResult, path: Path, server_label: str) -> None:
    """TPS of every A/B run in run order."""
    fig, ax = plt.subplots(figsize=(7.5, 4.0))
    for config in (Config.NONE, Config.SESSION):
        points = [p for p in result.tps if p.config == config.value]
        ax.plot([p.index + 1 for p in points], [p.tps for p in points], "o", color=COLORS[config.value],
                label="not loaded" if config is Config.NONE else "session_preload_libraries")
    if result.tps:
        half = len(result.tps) / 2 + 0.5
        ax.axvline(half, color="black", linewidth=0.8, linestyle=":")
        ax.text(half, ax.get_ylim()[1], " BABA..", va="top", fontsize="small")
        ax.text(half, ax.get_ylim()[1], "ABAB.. ", va="top", ha="right", fontsize="small")
    else:
        ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("run")
    ax.set_ylabel("pgbench -S TPS")
    ax.set_title(f"TPS A/B, both orders ({server_label})")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_planning(result: OverheadResult, path: Path, server_label: str) -> None:
    """Sessions with temp tables: point-query planning ms (on / off, per temp_buffers and phase) and the TPC-H
    planning sums per configuration."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.5), gridspec_kw={"width_ratios": [2, 1]})
    points = point_summaries(result.temp.points, result.temp.counts)
    width = 0.4
    xs = range(len(points))
    for offset, config, color in ((-width / 2, OFF, "tab:grey"), (width / 2, ON, "tab:blue")):
        values = [s.median_off_ms if config == OFF else s.median_on_ms for s in points]
        bars = left.bar([x + offset for x in xs], values, width, label=f"parallel_scan {config}", color=color)
        if config == ON:
            left.bar_label(bars, labels=[f"x{s.ratio:.2f}" for s in points], fontsize="x-small")
    left.set_xticks(list(xs), [f"{s.temp_buffers}\n{s.phase}" for s in points], fontsize="small")
    left.set_yscale("log")
    left.set_ylabel("median planning ms (EXPLAIN SUMMARY)")
    left.set_title(f"point query on a {result.options.point_rows:,}-row temp table", fontsize="medium")
    left.grid(True, axis="y", alpha=0.3, which="both")
    left.legend(fontsize="small")
    tpch = tpch_planning_summary(result.temp.tpch)
    if tpch is not None:
        configs = [c for c in TPCH_CONFIGS if c in tpch.sum_ms]
        colors = ["tab:green", "tab:grey", "tab:blue"][:len(configs)]
        right.bar(configs, [tpch.sum_ms[c] for c in configs], color=colors)
        right.set_title(f"TPC-H SF {result.options.tpch_scale:g}: sum of 22 planning medians", fontsize="medium")
        right.set_ylabel("ms")
        right.text(0.5, 0.95, f"on / UNLOGGED {tpch.on_vs_unlogged:.2f}, on / off {tpch.on_vs_off:.2f}",
                   ha="center", va="top", transform=right.transAxes, fontsize="small")
    else:
        right.text(0.5, 0.5, "not measured", ha="center", va="center", transform=right.transAxes)
    right.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"Planning in sessions with temporary tables ({server_label})", fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
