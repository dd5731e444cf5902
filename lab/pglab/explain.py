"""Parsing `EXPLAIN (ANALYZE, TIMING OFF, BUFFERS)` text output.

Only the plan's own "Buffers:" line counts: with BUFFERS, PostgreSQL also prints one under
"Planning:" (catalog lookups while planning), which is not the measured call's I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

# The pgBufferUsage counters that EXPLAIN prints, as "<kind> <counter>=<n>" groups.
BUFFER_KINDS = ("shared", "local", "temp")
BUFFER_COUNTERS = ("hit", "read", "dirtied", "written")

_EXECUTION_TIME = re.compile(r"^\s*Execution Time:\s*([0-9.]+)\s*ms\s*$")
_BUFFERS = re.compile(r"^\s*Buffers:\s*(.*?)\s*$")
_GROUP = re.compile(r"^(shared|local|temp)((?:\s+\w+=\d+)+)$")
_COUNTER = re.compile(r"(\w+)=(\d+)")


@dataclass(frozen=True)
class ExplainResult:
    """Execution time and plan-level buffer counters of one EXPLAIN ANALYZE."""

    execution_ms: float
    buffers_line: str  # what follows "Buffers: " in the plan, "" when nothing was counted
    counts: dict[str, int] = field(default_factory=dict)  # e.g. {"local_written": 128}

    def count(self, kind: str, counter: str) -> int:
        return self.counts.get(f"{kind}_{counter}", 0)

    @property
    def local_hit(self) -> int:
        return self.count("local", "hit")

    @property
    def local_read(self) -> int:
        return self.count("local", "read")

    @property
    def local_dirtied(self) -> int:
        return self.count("local", "dirtied")

    @property
    def local_written(self) -> int:
        return self.count("local", "written")


class ExplainParseError(ValueError):
    pass


def parse_buffers_line(text: str) -> dict[str, int]:
    """'shared hit=3, local hit=128 dirtied=128' -> {'shared_hit': 3, 'local_hit': 128, ...}."""
    counts: dict[str, int] = {}
    if not text.strip():
        return counts
    for group in text.split(","):
        match = _GROUP.match(group.strip())
        if not match:
            raise ExplainParseError(f"unrecognised Buffers group {group.strip()!r} in {text!r}")
        kind = match.group(1)
        for counter, value in _COUNTER.findall(match.group(2)):
            counts[f"{kind}_{counter}"] = int(value)
    return counts


def parse_explain(lines: Iterable[str]) -> ExplainResult:
    """Parse the text lines of EXPLAIN ANALYZE output."""
    buffers_line = ""
    execution_ms: float | None = None
    in_planning = False
    for line in lines:
        stripped = line.strip()
        if stripped == "Planning:":
            in_planning = True
            continue
        if in_planning and not line.startswith((" ", "\t")):
            in_planning = False
        buffers = _BUFFERS.match(line)
        if buffers and not in_planning and not buffers_line:
            buffers_line = buffers.group(1)
            continue
        timing = _EXECUTION_TIME.match(line)
        if timing:
            execution_ms = float(timing.group(1))
    if execution_ms is None:
        raise ExplainParseError("no 'Execution Time' line in EXPLAIN output (was ANALYZE on?)")
    return ExplainResult(execution_ms, buffers_line, parse_buffers_line(buffers_line))
