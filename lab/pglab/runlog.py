"""How flush-cost, sequence-cache and temp-extend run: timed, with meta.json written also on failure."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

import psycopg

from pglab.errors import LabError
from pglab.explain import ExplainParseError
from pglab.report_section import utc_timestamp
from pglab.server import first_line


class TimedRun(Protocol):
    finished: str
    wall_s: float


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
