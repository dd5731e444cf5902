"""How flush-cost, sequence-cache and temp-extend run: timed, with meta.json written also on failure;
and page-read, regret and temp-shapes: a RecordedRun, its raw data written on failure (status_writer)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import psycopg

from pglab.errors import LabError
from pglab.explain import ExplainParseError
from pglab.report_section import utc_timestamp
from pglab.server import first_line


class TimedRun(Protocol):
    finished: str
    wall_s: float


@dataclass(kw_only=True)
class RecordedRun:
    """What a run of page-read, regret or temp-shapes records besides its measurements: the server
    and machine it ran on, its command line, when it started and finished, how long it took, and
    how it ended (status and error, set through status_writer)."""

    server: dict[str, Any] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    command: str = ""
    started: str = ""
    finished: str = ""
    wall_s: float = 0.0
    status: str = "running"
    error: str | None = None

    @property
    def version_num(self) -> int:
        return int(self.server.get("version_num") or 0)


RunT = TypeVar("RunT", bound=RecordedRun)


def status_writer(run: RunT, write_raw: Callable[[RunT], None]) -> Callable[[str, str | None], None]:
    """recorded_run's write for a RecordedRun: the status and error kept in the run, its raw data
    written (write_raw) only when it failed; a run that ends ok has it written by its report."""

    def write(status: str, error: str | None) -> None:
        run.status, run.error = status, error
        if status != "ok":
            write_raw(run)

    return write


@contextmanager
def recorded_run(run: TimedRun, write: Callable[[str, str | None], None]) -> Iterator[None]:
    """Run the with-block; then set run.finished and run.wall_s and call write(status, error),
    status "ok" or "failed". Driver and EXPLAIN errors come out as one-line LabErrors."""
    clock = time.monotonic()
    status, error = "failed", None
    try:
        yield
        status = "ok"
    except LabError as exc:
        error = str(exc)
        raise
    except (psycopg.Error, ExplainParseError) as exc:
        error = f"{type(exc).__name__}: {first_line(exc)}"
        raise LabError(error) from exc
    except KeyboardInterrupt:
        error = "interrupted"
        raise
    finally:
        run.finished = utc_timestamp()
        run.wall_s = round(time.monotonic() - clock, 3)
        write(status, error)
