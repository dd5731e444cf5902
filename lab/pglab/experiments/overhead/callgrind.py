"""Reading callgrind's output files: self and inclusive instructions per function, calls per arc.

Only what this experiment needs of the format (valgrind's docs/cl-format.xml): name compression
"(id) name" / "(id)", fn= / cfn= for functions, ob= / cob= for objects, calls= lines whose next
cost line is the inclusive cost of that call, and the events: header naming the cost columns.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

_COMPRESSED = re.compile(r"^\((\d+)\)(?:\s+(.*))?$")
_RECURSION = re.compile(r"'\d+$")  # --separate-recs: "walker'2"
_COST_LINE_START = "0123456789+-*"


@dataclass
class Profile:
    """One process's callgrind file, Ir only."""

    pid: int
    totals: int
    self_cost: dict[str, int] = field(default_factory=dict)  # function -> instructions in it
    objects: dict[str, str] = field(default_factory=dict)  # function -> ELF object
    arcs: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)  # (caller, callee) -> calls, Ir

    def calls_to(self, function: str) -> int:
        return sum(calls for (_, callee), (calls, _) in self.arcs.items() if callee == function)

    def callers(self, function: str) -> dict[str, int]:
        """caller -> calls to `function`."""
        return {caller: calls for (caller, callee), (calls, _) in self.arcs.items() if callee == function}

    def inclusive(self, function: str) -> int:
        """Self cost plus the inclusive cost of every call it makes (direct recursion excluded)."""
        return self.self_cost.get(function, 0) + sum(
            cost for (caller, callee), (_, cost) in self.arcs.items() if caller == function and callee != function)

    def arc_cost(self, caller: str, callee: str) -> int:
        return self.arcs.get((caller, callee), (0, 0))[1]

    def functions_of(self, object_suffix: str) -> list[str]:
        return [f for f, ob in self.objects.items() if ob.endswith(object_suffix)]


def base_name(function: str) -> str:
    """'count_relids_walker'2' -> 'count_relids_walker'."""
    return _RECURSION.sub("", function)


def _name(value: str, table: dict[str, str]) -> str:
    match = _COMPRESSED.match(value.strip())
    if not match:
        return value.strip()
    ident, name = match.groups()
    if name is not None:
        table[ident] = name
        return name
    return table.get(ident, f"({ident})")


def _ir(fields: list[str], ir_index: int) -> int:
    # fields[0] is the position (positions: line); missing trailing costs are zero.
    column = 1 + ir_index
    return int(fields[column]) if len(fields) > column else 0


def parse(path: Path) -> Profile:
    functions: dict[str, str] = {}
    objects: dict[str, str] = {}
    self_cost: dict[str, int] = defaultdict(int)
    function_objects: dict[str, str] = {}
    arcs: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    pid, totals, ir_index, positions = 0, 0, 0, 1
    current_ob, current_fn, call_ob, call_fn = "", "", "", ""
    pending_calls: int | None = None
    with open(path, encoding="utf-8", errors="replace") as file:
        for raw in file:
            line = raw.rstrip("\n")
            if not line:
                continue
            if line[0] in _COST_LINE_START:
                fields = line.split()
                fields = [" ".join(fields[:positions])] + fields[positions:] if positions > 1 else fields
                cost = _ir(fields, ir_index)
                if pending_calls is not None:
                    arc = arcs[(current_fn, call_fn)]
                    arc[0] += pending_calls
                    arc[1] += cost
                    function_objects.setdefault(call_fn, call_ob or current_ob)
                    pending_calls, call_ob = None, ""
                else:
                    self_cost[current_fn] += cost
                continue
            key, _, value = line.partition("=")
            if key == "fn":
                current_fn = _name(value, functions)
                function_objects[current_fn] = current_ob
                call_ob = ""
            elif key == "cfn":
                call_fn = _name(value, functions)
            elif key == "ob":
                current_ob = _name(value, objects)
            elif key == "cob":
                call_ob = _name(value, objects)
            elif key == "calls":
                pending_calls = int(value.split()[0])
            elif line.startswith("events:"):
                events = line.split()[1:]
                ir_index = events.index("Ir") if "Ir" in events else 0
            elif line.startswith("positions:"):
                positions = len(line.split()[1:])
            elif line.startswith("pid:"):
                pid = int(line.split()[1])
            elif line.startswith("totals:"):
                totals = int(line.split()[1 + ir_index])
            elif key in ("cfi", "cfl", "fi", "fe", "fl"):
                pass  # files: not needed
    return Profile(pid=pid, totals=totals, self_cost=dict(self_cost), objects=function_objects,
                   arcs={k: (v[0], v[1]) for k, v in arcs.items()})


def is_complete(path: Path) -> bool:
    """callgrind writes a process's file at its exit; 'totals:' comes last."""
    try:
        with open(path, "rb") as file:
            file.seek(0, 2)
            size = file.tell()
            file.seek(max(0, size - 4096))
            return b"\ntotals:" in file.read()
    except OSError:
        return False
