"""The article author's published runs (package data), for side-by-side comparison only."""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

ARTICLE_RUN_TABLES = "flush_cost_article_run_2025-12-30.csv"  # the run behind the article's tables
ARTICLE_RUN_RANDOM = "flush_cost_article_run_2026-01-02.csv"  # the later run with random phases
ARTICLE_SERVER = "PostgreSQL 18.1 (author's temp-buffers-sandbox branch), laptop with NVMe SSD"


@dataclass(frozen=True)
class ReferenceRow:
    nblocks: int
    iteration: int
    allocated_local_buffers: int | None
    ms: dict[str, float]  # phase -> execution time
    buffers: dict[str, str]  # phase -> Buffers line


@cache
def load_run(filename: str) -> tuple[ReferenceRow, ...]:
    text = resources.files("pglab.data").joinpath(filename).read_text(encoding="utf-8")
    rows = []
    for record in csv.DictReader(text.splitlines()):
        phases = [column[: -len("_ms")] for column in record if column.endswith("_ms")]
        ms = {p: float(record[f"{p}_ms"]) for p in phases if record[f"{p}_ms"]}
        buffers = {p: record.get(f"{p}_buffers") or "" for p in phases}
        allocated = record.get("allocated_local_buffers")
        rows.append(
            ReferenceRow(
                nblocks=int(record["nblocks"]),
                iteration=int(record["iter"]),
                allocated_local_buffers=int(allocated) if allocated else None,
                ms=ms,
                buffers=buffers,
            )
        )
    return tuple(rows)


def run_for_phase(phase: str) -> str | None:
    """Which published run to compare a phase with: the article's tables where they have it."""
    for filename in (ARTICLE_RUN_TABLES, ARTICLE_RUN_RANDOM):
        if any(phase in row.ms for row in load_run(filename)):
            return filename
    return None


def phase_times(filename: str, phase: str) -> dict[int, list[float]]:
    """nblocks -> the run's execution times of `phase`."""
    times: dict[int, list[float]] = defaultdict(list)
    for row in load_run(filename):
        if phase in row.ms:
            times[row.nblocks].append(row.ms[phase])
    return dict(times)


def article_medians(phase: str) -> dict[int, float]:
    """nblocks -> the article's median time for `phase` (empty if it never measured it)."""
    filename = run_for_phase(phase)
    if filename is None:
        return {}
    return {n: float(np.median(v)) for n, v in sorted(phase_times(filename, phase).items())}


def write_read_ratios(filename: str) -> dict[int, float]:
    """nblocks -> median(write_seq) / median(read_seq) within one published run."""
    writes = phase_times(filename, "write_seq")
    reads = phase_times(filename, "read_seq")
    ratios = {}
    for n in sorted(writes.keys() & reads.keys()):
        read = float(np.median(reads[n]))
        ratios[n] = float(np.median(writes[n])) / read if read > 0 else math.nan
    return ratios
