"""What a temp-extend run found: per (size, temp_buffers, tablespace) cell, time and I/O counts."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from pglab.experiments.temp_extend.options import TEMP_BUFFER_MODES
from pglab.experiments.temp_extend.runner import CtasRun, TempExtendResult
from pglab.stats import summarize

MB = 2**20


@dataclass
class CellSummary:
    """The timed runs of one (size, temp_buffers, tablespace) cell, and how its I/O was counted."""

    size: str
    mode: str
    tablespace: str
    temp_buffers_blocks: int
    n: int
    elapsed_median_ms: float
    elapsed_min_ms: float
    elapsed_max_ms: float
    elapsed_cv: float | None
    table_blocks: int
    file_mb: float
    allocated_mb: float | None
    extends: float | None
    extend_mb: float | None
    extend_ms: float | None
    writes: float | None
    write_mb: float | None
    write_ms: float | None
    local_written: float | None  # pg_stat_statements local_blks_written (extended blocks count too)
    counted_by: str
    traced_elapsed_ms: float | None = None  # the bpftrace run's elapsed time (probes attached)

    @property
    def label(self) -> str:
        return f"{self.size}, temp_buffers {self.mode} ({kb(self.temp_buffers_blocks)}), {self.tablespace}"

    def csv_row(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def kb(blocks: int, block_size: int = 8192) -> str:
    kib = blocks * block_size // 1024
    return f"{kib // 1024} MB" if kib >= 10 * 1024 else f"{kib} kB"


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def summarize_cells(result: TempExtendResult) -> list[CellSummary]:
    cells = []
    sizes = list(dict.fromkeys(r.size for r in result.runs))
    for size in sizes:
        for mode in TEMP_BUFFER_MODES:
            for tablespace in result.tablespaces:
                key = (size, mode, tablespace)
                own = [r for r in result.runs if (r.size, r.temp_buffers_mode, r.tablespace) == key]
                timed = [r for r in own if not r.traced]
                traced = [r for r in own if r.traced]
                if timed:
                    cells.append(_cell(result, timed, traced[0] if traced else None))
    return cells


def _cell(result: TempExtendResult, timed: list[CtasRun], traced: CtasRun | None) -> CellSummary:
    first = timed[0]
    elapsed = summarize([r.elapsed_ms for r in timed])
    table_blocks = int(statistics.median(r.table_blocks for r in timed))
    local_written = _median([r.statement.get("local_blks_written") if r.statement else None for r in timed])
    extends = extend_mb = extend_ms = writes = write_mb = write_ms = None
    if result.io_source:
        def io(key: str) -> float | None:
            return _median([r.io.get(key) if r.io else None for r in timed])
        extends, writes = io("extends"), io("writes")
        extend_ms, write_ms = io("extend_time"), io("write_time")
        eb, wb = io("extend_bytes"), io("write_bytes")
        extend_mb = eb / MB if eb is not None else None
        write_mb = wb / MB if wb is not None else None
        counted_by = result.io_source + " (median)"
    elif traced is not None and traced.traced_counts is not None:
        t = traced.traced_counts
        extends, extend_ms = float(t.extends), t.extend_ns / 1e6
        writes, write_ms = float(t.writes), t.write_ns / 1e6
        block = traced.file_bytes / traced.table_blocks if traced.table_blocks else 8192
        extend_mb, write_mb = extends * block / MB, writes * block / MB
        counted_by = "bpftrace USDT (1 traced run)"
    else:
        # PostgreSQL <= 15 extends a temp table one block per mdextend: the file's growth in blocks.
        extends = float(table_blocks)
        extend_mb = extends * first.file_bytes / max(first.table_blocks, 1) / MB
        writes = local_written - table_blocks if local_written is not None else None
        write_mb = writes * 8192 / MB if writes is not None else None
        counted_by = "file growth; writes = local written - extends" if writes is not None else "file growth"
    allocated = _median([float(r.file_allocated_bytes) if r.file_allocated_bytes is not None else None
                         for r in timed])
    return CellSummary(
        size=first.size, mode=first.temp_buffers_mode, tablespace=first.tablespace,
        temp_buffers_blocks=first.temp_buffers_blocks, n=len(timed),
        elapsed_median_ms=elapsed.median, elapsed_min_ms=min(r.elapsed_ms for r in timed),
        elapsed_max_ms=max(r.elapsed_ms for r in timed),
        elapsed_cv=elapsed.cv if elapsed.n > 1 else None,
        table_blocks=table_blocks, file_mb=statistics.median(r.file_bytes for r in timed) / MB,
        allocated_mb=allocated / MB if allocated is not None else None,
        extends=extends, extend_mb=extend_mb, extend_ms=extend_ms,
        writes=writes, write_mb=write_mb, write_ms=write_ms,
        local_written=local_written, counted_by=counted_by,
        traced_elapsed_ms=traced.elapsed_ms if traced is not None else None,
    )
