"""raw.csv: one row per size x iteration x phase."""

from __future__ import annotations

import csv
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from pglab.experiments.flush_cost.steps import PhaseMeasurement


@dataclass(frozen=True)
class PhaseRecord:
    size: int  # table size in blocks (N)
    iteration: int
    phase: str
    ms: float  # EXPLAIN's Execution Time, or wall time of the raw I/O loop
    buffers: str = ""  # the plan's "Buffers:" line (without the prefix); "" for raw phases
    local_hit: int | None = None
    local_read: int | None = None
    local_dirtied: int | None = None
    local_written: int | None = None
    shared_hit: int | None = None
    shared_read: int | None = None
    shared_dirtied: int | None = None
    shared_written: int | None = None
    # The local buffer pool just before the call:
    allocated_local_buffers: int | None = None
    dirtied_local_buffers: int | None = None
    pool_size: int | None = None  # NLocBuffer
    relpages: int | None = None  # main-fork blocks of the test table (verified = size)

    @classmethod
    def from_measurement(cls, m: PhaseMeasurement) -> PhaseRecord:
        e = m.explain
        return cls(
            size=m.size,
            iteration=m.iteration,
            phase=m.phase,
            ms=e.execution_ms,
            buffers=e.buffers_line,
            local_hit=e.local_hit,
            local_read=e.local_read,
            local_dirtied=e.local_dirtied,
            local_written=e.local_written,
            shared_hit=e.count("shared", "hit"),
            shared_read=e.count("shared", "read"),
            shared_dirtied=e.count("shared", "dirtied"),
            shared_written=e.count("shared", "written"),
            allocated_local_buffers=m.before.allocated,
            dirtied_local_buffers=m.before.dirtied,
            pool_size=m.before.pool_size,
            relpages=m.relpages,
        )


RAW_CSV_COLUMNS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(PhaseRecord))
_INT_COLUMNS = {f.name for f in dataclasses.fields(PhaseRecord)} - {"phase", "ms", "buffers"}


class RawCsvWriter:
    """Appends records to raw.csv as they are measured (a failed run keeps what it got)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] = open(path, "w", newline="", encoding="utf-8")
        self._writer = csv.DictWriter(self._file, fieldnames=RAW_CSV_COLUMNS)
        self._writer.writeheader()

    def write(self, record: PhaseRecord) -> None:
        row = {k: ("" if v is None else v) for k, v in dataclasses.asdict(record).items()}
        self._writer.writerow(row)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> RawCsvWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def load_raw_csv(path: Path) -> list[PhaseRecord]:
    records = []
    with open(path, newline="", encoding="utf-8") as file:
        for row in csv.DictReader(file):
            values: dict[str, object] = {}
            for name in RAW_CSV_COLUMNS:
                text = row[name]
                if name in _INT_COLUMNS:
                    values[name] = int(text) if text != "" else None
                elif name == "ms":
                    values[name] = float(text)
                else:
                    values[name] = text
            records.append(PhaseRecord(**values))  # type: ignore[arg-type]
    return records
