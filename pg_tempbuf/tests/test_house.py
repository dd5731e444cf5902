"""The extension's house (issue 29): files on floors, each calling only files on its own floor or
below, no circle of files, one file that reads a temporary relation's pages, no file over 1,000
lines.  The floors are the ones pg_tempbuf/README.md ("Source layout") gives; the calls are read
from the object files the build left (nm), so a call through a header's macro counts too."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[1]
SRC = EXTENSION / "src"
README = EXTENSION / "README.md"

# What reads a page from a file or from another process's memory.
PAGE_READS = {"smgrread", "smgrreadv", "process_vm_readv", "FileRead", "FileReadV", "pg_preadv",
              "pread", "pread64"}
PAGE_SOURCE = "page_source"
MAX_LINES = 1000


def readme_floors() -> dict[str, int]:
    """File stem -> floor, from the README's layout table: `| 3 | `scan_run.c` | ... |`."""
    text = README.read_text()
    section = text.split("## Source layout", 1)[1].split("\n## ", 1)[0]
    floors = {}
    for floor, name in re.findall(r"^\|\s*(\d+)\s*\|\s*`([\w.]+)`", section, re.M):
        floors[name.rsplit(".", 1)[0]] = int(floor)
    return floors


def symbol_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], set[str]], dict[str, set[str]]]:
    """Calls between the extension's object files: (callees per file, symbols per edge, undefined
    symbols per file)."""
    if shutil.which("nm") is None:
        pytest.fail("nm (binutils) is needed to read the object files")
    objects = sorted(SRC.glob("*.o"))
    sources = sorted(SRC.glob("*.c"))
    missing = {p.stem for p in sources} - {p.stem for p in objects}
    assert not missing, f"build the extension first (make install): no object for {sorted(missing)}"
    defined: dict[str, str] = {}
    undefined: dict[str, set[str]] = defaultdict(set)
    for obj in objects:
        if not (SRC / f"{obj.stem}.c").exists():
            continue  # left over from a file since removed
        out = subprocess.run(["nm", str(obj)], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBR":
                defined[parts[2]] = obj.stem
            elif len(parts) == 2 and parts[0] == "U":
                undefined[obj.stem].add(parts[1])
    callees: dict[str, set[str]] = defaultdict(set)
    symbols: dict[tuple[str, str], set[str]] = defaultdict(set)
    for caller, names in undefined.items():
        for name in names:
            callee = defined.get(name)
            if callee and callee != caller:
                callees[caller].add(callee)
                symbols[(caller, callee)].add(name)
    return callees, symbols, undefined


def circles(callees: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one file (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in callees.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(set(callees) | {c for cs in callees.values() for c in cs}):
        if node not in index:
            visit(node)
    return found


def test_no_circle_of_files() -> None:
    callees, symbols, _ = symbol_graph()
    found = circles(callees)
    detail = [f"{a} -> {b}: {sorted(symbols[(a, b)])[:3]}" for c in found for a in c
              for b in callees[a] if b in c]
    assert not found, f"circles of files: {found}\n" + "\n".join(detail)


def test_every_call_goes_down_the_readme_floors() -> None:
    floors = readme_floors()
    sources = {p.stem for p in SRC.glob("*.c")}
    assert sources - set(floors) == set(), f"files missing from the README's layout: {sorted(sources - set(floors))}"
    assert set(floors) - sources == set(), f"the README's layout names files that do not exist: {sorted(set(floors) - sources)}"
    callees, symbols, _ = symbol_graph()
    upward = [f"{a} (floor {floors[a]}) -> {b} (floor {floors[b]}): {sorted(symbols[(a, b)])[:3]}"
              for a, bs in callees.items() for b in bs if floors[b] > floors[a]]
    # Issue 29 allows two; the house has none.
    assert not upward, "calls that run back up:\n" + "\n".join(sorted(upward))


def test_one_file_reads_pages_from_files_or_the_leaders_memory() -> None:
    _, _, undefined = symbol_graph()
    readers = {f: sorted(names & PAGE_READS) for f, names in undefined.items() if names & PAGE_READS}
    assert set(readers) == {PAGE_SOURCE}, f"files that read pages themselves: {readers}"


def test_no_source_file_over_a_thousand_lines() -> None:
    long = {p.name: n for p in sorted(SRC.glob("*.[ch]"))
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines: {long}"
