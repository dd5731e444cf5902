"""Summaries of a buffered-plan run: medians per (query, placement, batch size).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pglab.experiments.buffered_plan.options import Options
from pglab.stats import Summary, summarize


def summaries(run: Run) -> dict[tuple[str, str, int], Summary]:
    groups: dict[tuple[str, str, int], list[float]] = {}
    for row in run.timings:
        groups.setdefault((row["query"], row["placement"], row["batch_size"]), []).append(row["ms"])
    return {key: summarize(values) for key, values in groups.items()}


@dataclass
class Run:
    options: Options
    server: str = ""
    server_version_num: int = 0
    timings: list[dict[str, Any]] = field(default_factory=list)
    counters: list[dict[str, Any]] = field(default_factory=list)
    counter_tool: str = ""
    plans: dict[str, str] = field(default_factory=dict)
    # "query config" -> the plan the counted single-user backend made (cachegrind only).
    counter_plans: dict[str, str] = field(default_factory=dict)
