"""What a parallel-temp run found: medians, speedups, the decision grid's regret, the acceptance rows."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from pglab.experiments.parallel_temp.runner import ParallelTempRun
from pglab.experiments.parallel_temp.workload import Variant

Key = tuple[int, str, int, str]  # rows, query, workers, variant
PARALLEL_VARIANTS = [v for v in Variant if v is not Variant.SERIAL]
SHORT_NAMES = {
    Variant.PARALLEL_CLEAN: "ours clean",
    Variant.PARALLEL_DIRTY: "ours +flush",
    Variant.PARALLEL_PART_DIRTY: "ours +¼ flush",
    Variant.UNLOGGED_PARALLEL: "unlogged",
}


def medians(run: ParallelTempRun) -> dict[Key, float]:
    samples: dict[Key, list[float]] = defaultdict(list)
    for t in run.timings:
        samples[(t.rows, t.query, t.workers, t.variant)].append(t.ms)
    return {key: statistics.median(values) for key, values in samples.items()}


def speedups(run: ParallelTempRun, med: dict[Key, float]) -> dict[Key, float]:
    """serial median / variant median, both from the same workers loop of the same run."""
    out: dict[Key, float] = {}
    for (rows, query, workers, variant), value in med.items():
        serial = med.get((rows, query, workers, str(Variant.SERIAL)))
        if serial is not None and value > 0:
            out[(rows, query, workers, variant)] = serial / value
    return out


def decision_rows(run: ParallelTempRun) -> list[dict[str, Any]]:
    rows = []
    for d in run.decisions:
        serial = statistics.median(d.serial_ms)
        parallel = statistics.median(d.parallel_ms)
        best = min(serial, parallel)
        chosen = parallel if d.planner_parallel else serial
        rows.append({
            "rows": d.rows, "pages": d.pages, "dirty_share": d.dirty_share, "query": d.query,
            "dirty_pages": d.dirty_pages, "serial_ms": serial, "parallel_ms": parallel,
            "faster": "parallel" if parallel < serial else "serial",
            "planner": "parallel" if d.planner_parallel else "serial",
            "regret_ms": chosen - best, "regret_pct": 100.0 * (chosen - best) / best if best else 0.0,
        })
    return rows


def regret_totals(decisions: list[dict[str, Any]]) -> dict[str, float]:
    if not decisions:
        return {}
    best = sum(min(d["serial_ms"], d["parallel_ms"]) for d in decisions)
    regret = sum(d["regret_ms"] for d in decisions)
    right = sum(1 for d in decisions if d["faster"] == d["planner"])
    return {"cases": len(decisions), "right_choices": right, "total_regret_ms": regret,
            "total_best_ms": best, "regret_pct_of_best": 100.0 * regret / best if best else 0.0,
            "worst_regret_pct": max(d["regret_pct"] for d in decisions)}


def acceptance_rows(run: ParallelTempRun) -> list[dict[str, Any]]:
    rows = []
    for a in run.acceptance:
        serial = statistics.median(a.serial_ms)
        default = statistics.median(a.default_ms)
        rows.append({
            "rows": a.rows, "planner_parallel": a.plan["temp_seq_scan"],
            "workers_launched": a.plan["workers_launched"], "serial_ms": serial, "default_ms": default,
            "speedup": serial / default if default else 0.0, "same_rows": a.same_rows,
            "updated_rows": a.updated_rows,
            "after_update_parallel": a.after_update_plan["temp_seq_scan"],
            "after_update_workers": a.after_update_plan["workers_launched"],
            "after_update_same_rows": a.after_update_same_rows,
        })
    return rows


def mb(run: ParallelTempRun, rows: int) -> float:
    return run.shapes[rows].bytes / 2**20
