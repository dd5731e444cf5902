"""PNG plots of a sequence-cache run, with the article's published numbers where it has them."""

from __future__ import annotations

from pathlib import Path

from pglab.experiments.sequence_cache import article
from pglab.experiments.sequence_cache.analysis import VariantSummary
from pglab.experiments.sequence_cache.runner import SequenceCacheResult
from pglab.plotting import plt


def plot_tps(result: SequenceCacheResult, summaries: list[VariantSummary], path: Path, server_label: str) -> None:
    """nextval() calls per second vs clients, one panel per transaction kind (the article's figs 1, 2)."""
    kinds = list(dict.fromkeys(s.kind for s in summaries))
    fig, axes = plt.subplots(1, len(kinds), figsize=(6.5 * len(kinds), 4.8), squeeze=False)
    cores = result.options.cores
    for ax, kind in zip(axes[0], kinds, strict=True):
        for s in (s for s in summaries if s.kind == kind):
            clients = sorted(s.tps_by_clients)
            values = [s.tps_by_clients[c] * s.calls_per_transaction for c in clients]
            (line,) = ax.plot(clients, values, "o-", label=s.variant)
            stop = s.scaling.stops_at
            ax.plot([stop], [s.tps_by_clients[stop] * s.calls_per_transaction], "x", markersize=12,
                    color=line.get_color())
        ax.axvline(cores, color="grey", linestyle=":", linewidth=1, label=f"{cores} cores")
        calls = next(s.calls_per_transaction for s in summaries if s.kind == kind)
        ax.set_title(f"transaction {kind}" + (f" ({calls:,} nextval calls)" if calls > 1 else " (1 nextval)"))
        ax.set_xlabel("pgbench clients (-c = -j)")
        ax.set_ylabel("nextval() calls per second")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small", title="x = scaling stops", title_fontsize="small")
    fig.suptitle(f"Sequence throughput vs clients ({server_label})")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_scaling(result: SequenceCacheResult, summaries: list[VariantSummary], path: Path,
                 server_label: str) -> None:
    """Linear-scaling limit relative to the core count: the article's 9.4/9.5 beside ours."""
    labels, values, colors = [], [], []
    for cache, by_version in article.LINEAR_UP_TO.items():
        for version, sessions in by_version.items():
            labels.append(f"article cache{cache}\n{version} ({sessions}/{article.CORES})")
            values.append(sessions / article.CORES)
            colors.append("tab:grey")
    for s in summaries:
        if s.kind != "single":
            continue
        labels.append(f"ours {s.variant}\n({s.scaling.linear_up_to}/{result.options.cores})")
        values.append(s.scaling.linear_up_to / result.options.cores)
        colors.append("tab:blue")
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(labels)), 4.5))
    bars = ax.bar(range(len(values)), values, color=colors)
    ax.bar_label(bars, fmt="%.2f", fontsize="small")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(labels)), labels, fontsize="small")
    ax.set_ylabel("linear scaling up to (clients / cores)")
    ax.set_title(f"Transaction (1): how far TPS grows linearly ({server_label} vs the article)")
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_locks(result: SequenceCacheResult, summaries: list[VariantSummary], path: Path,
               server_label: str) -> None:
    """Share of backend samples in spinlock and LWLock functions (the article's fig. 3 / perf reports)."""
    labels, spin, lw, colors = [], [], [], []
    for cache in article.PERF_SELF:
        labels.append(f"article cache{cache}\nbulk, {article.CORES} sessions")
        spin.append(article.spinlock_share(cache))
        lw.append(article.lwlock_share(cache))
        colors.append(0.5)
    for s in summaries:
        if s.perf is None or s.perf.spinlock_share is None or s.perf.lwlock_share is None:
            continue
        labels.append(f"ours {s.variant}\n{s.kind}, {s.perf.clients} clients")
        spin.append(s.perf.spinlock_share)
        lw.append(s.perf.lwlock_share)
        colors.append(1.0)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(labels)), 4.8))
    xs = range(len(labels))
    ax.bar(xs, [100 * v for v in spin], color="tab:red", label="spinlock (s_lock, spin delay)")
    ax.bar(xs, [100 * v for v in lw], bottom=[100 * v for v in spin], color="tab:orange", label="LWLock*")
    for x, (a, b) in enumerate(zip(spin, lw, strict=True)):
        ax.text(x, 100 * (a + b), f"{100 * (a + b):.1f}%", ha="center", va="bottom", fontsize="small")
    ax.set_xticks(list(xs), labels, fontsize="x-small")
    ax.set_ylabel("% of the backends' samples")
    if not result.perf_points:
        ax.text(0.75, 0.5, f"ours not measured:\n{result.perf_note}", ha="center", va="center",
                transform=ax.transAxes, fontsize="small", wrap=True)
    ax.set_title(f"Time in lock functions ({server_label} vs the article)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
