"""The contract between an experiment and `pglab report`: one `section.json` per run.

Every experiment command writes `section.json` into its output directory, next to its plots
and raw data, at the end of a successful run (`write_section`).  `pglab report` walks a results
root (default `results/`), loads every `section.json` below it (`find_sections`) and renders
one self-contained HTML page: per experiment the article's figures, then ours, the plots, the
machine, the versions and the command that reruns it.  Runs of the same experiment on
different PostgreSQL major versions are shown side by side (the latest run of each major);
an experiment with no run yet is shown as "not run yet: <command>".

section.json (schema "pglab-section/1"; every key below is required unless marked optional):

    {
      "schema": "pglab-section/1",
      "experiment": "temp-extend",     # registry key, see EXPERIMENTS; the same for every version
      "title": "Temporary-table extends and tmpfs tablespaces",
      "article": {                     # what the source article published, as a table
        "caption": "003 (PostgreSQL 10, SystemTap): ...",
        "columns": ["case", "extends", "extend ms"],
        "rows": [["9 MB CTAS, disk", 1134, 50.925], ...]
      },
      "ours": {                        # our measured figures, same shape as "article" where possible
        "caption": "median of 3 runs ...",
        "columns": [...],
        "rows": [[...], ...]
      },
      "tables": [{...}, ...],          # optional: more tables of ours (caption, columns, rows)
      "machine": {...},                # pglab.machine.machine_info() of the measuring machine
      "versions": {                    # free-form, but these three keys are expected:
        "postgresql": "18.6",          #   server_version of the measured server
        "postgresql_major": 18,        #   the report groups runs by it (int)
        "pglab": "0.1.0"
      },
      "command": "pglab temp-extend --quick",   # exact command line that reruns this
      "plots": ["elapsed.png", ...],   # PNG files (only PNG) in the same directory, embedded in the report
      "raw_data": ["raw.csv", ...],    # optional: data files in the same directory behind the plots
      "notes": ["..."],                # optional: caveats, what could not be measured and why
      "generated": "2026-11-22T12:00:00+00:00",  # ISO 8601 UTC; "latest" means the largest
      "status": "ok"
    }

Table cells are strings, numbers or null (shown as an empty cell).  Paths in "plots" and
"raw_data" are file names relative to the section's directory; the report checks they exist.

From Python:

    from pglab import report_section as rs
    rs.write_section(out_dir, rs.Section(
        experiment="temp-extend", title=..., article=rs.Table(columns, rows, caption),
        ours=rs.Table(...), machine=machine_info(), versions=rs.postgres_versions(version, num),
        command=rs.command_line(), plots=["elapsed.png"], raw_data=["raw.csv"], notes=[...]))

`command_line()` gives "pglab <the arguments of this invocation>" (pglab.cli records them).
To add an experiment to the report's fixed list (so that a missing run says "not run yet"),
add it to EXPERIMENTS; sections of unlisted experiments are still shown, after the listed ones.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table as RichTable

import pglab
from pglab.errors import LabError
from pglab.jsonio import write_json

SCHEMA = "pglab-section/1"
FILENAME = "section.json"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

Cell = str | int | float | None


@dataclass(frozen=True)
class Experiment:
    key: str
    title: str
    command: str  # how to produce its first result (quick version)


# The report's fixed order; each one's quick command is what `make demo` runs.
EXPERIMENTS: tuple[Experiment, ...] = (
    Experiment("flush-cost", "Flush cost of temporary buffers", "pglab flush-cost --quick"),
    Experiment("parallel-temp", "Parallel scans of temporary tables", "pglab parallel-temp --quick"),
    Experiment("buffered-plan", "BufferedPlan: batched tuple hand-off (TPC-H)", "pglab buffered-plan --quick"),
    Experiment("temp-extend", "Temporary-table extends and tmpfs tablespaces", "pglab temp-extend --quick"),
    Experiment("sequence-cache", "Sequence CACHE under concurrency", "pglab sequence-cache --quick"),
    Experiment("overhead", "Zero cost when unused: pg_tempbuf loaded vs not (pgbench -S)", "pglab overhead --quick"),
    Experiment("temp-shapes", "Query shapes over temporary tables: off / on / UNLOGGED copy",
               "pglab temp-shapes --quick"),
    Experiment("regret", "Regret: TPC-H loads, session loops and shapes, pg_tempbuf on vs off and an UNLOGGED copy",
               "pglab regret --quick"),
    Experiment("page-read", "A worker's page read: in the leader's pool, from the file, as a shared-buffer hit",
               "pglab page-read --quick"),
    Experiment("index-build", "CREATE INDEX on a temporary table just written: serial, pg_tempbuf's parallel build, "
               "an UNLOGGED copy", "pglab index-build --quick"),
)


class SectionError(LabError):
    """A section.json that does not follow the contract."""


@dataclass
class Table:
    columns: list[str]
    rows: list[list[Cell]]
    caption: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"caption": self.caption, "columns": list(self.columns), "rows": [list(r) for r in self.rows]}

    def markdown(self) -> str:
        """A GitHub-flavoured markdown table (caption above it when there is one)."""
        lines = [self.caption, ""] if self.caption else []
        lines.append("| " + " | ".join(self.columns) + " |")
        lines.append("|" + "---|" * len(self.columns))
        lines += ["| " + " | ".join(format_cell(c) for c in row) + " |" for row in self.rows]
        return "\n".join(lines)

    def rich(self, title: str | None = None) -> RichTable:
        """The table for a rich console (numbers right-aligned)."""
        table = RichTable(title=title if title is not None else self.caption or None, title_justify="left")
        for i, column in enumerate(self.columns):
            cells = [row[i] for row in self.rows]
            is_number = bool(cells) and all(c is None or isinstance(c, (int, float)) for c in cells)
            short_text = all(len(format_cell(c)) <= 24 for c in cells)
            # Short text cells keep one line (headers wrap instead); numbers are never cut.
            table.add_column(column, justify="right" if is_number else "left", overflow="fold",
                             no_wrap=not is_number and short_text)
        for row in self.rows:
            table.add_row(*(format_cell(c) for c in row))
        return table

    @classmethod
    def from_json(cls, data: Any, where: str) -> Table:
        if not isinstance(data, dict):
            raise SectionError(f"{where}: expected an object with columns and rows")
        columns, rows = data.get("columns"), data.get("rows")
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
            raise SectionError(f"{where}.columns: expected a list of strings")
        if not isinstance(rows, list):
            raise SectionError(f"{where}.rows: expected a list of rows")
        for i, row in enumerate(rows):
            if not isinstance(row, list) or len(row) != len(columns):
                raise SectionError(f"{where}.rows[{i}]: expected a list of {len(columns)} cells")
            for cell in row:
                if cell is not None and not isinstance(cell, (str, int, float)):
                    raise SectionError(f"{where}.rows[{i}]: cell {cell!r} is not a string, number or null")
        caption = data.get("caption", "")
        return cls(columns=columns, rows=rows, caption=caption if isinstance(caption, str) else "")


@dataclass
class Section:
    experiment: str
    title: str
    article: Table
    ours: Table
    machine: dict[str, Any]
    versions: dict[str, Any]
    command: str
    plots: list[str]
    raw_data: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    generated: str = ""
    status: str = "ok"
    directory: Path | None = None  # where it was loaded from (not written)

    @property
    def postgresql_major(self) -> int | None:
        major = self.versions.get("postgresql_major")
        return major if isinstance(major, int) else None

    def as_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "experiment": self.experiment,
            "title": self.title,
            "article": self.article.as_json(),
            "ours": self.ours.as_json(),
            "tables": [t.as_json() for t in self.tables],
            "machine": self.machine,
            "versions": self.versions,
            "command": self.command,
            "plots": list(self.plots),
            "raw_data": list(self.raw_data),
            "notes": list(self.notes),
            "generated": self.generated or utc_timestamp(),
            "status": self.status,
        }


def format_cell(value: Cell) -> str:
    """Numbers with four significant digits (integers in full), None as an empty cell."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10000 else str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return ""
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if value != 0 and abs(value) < 1e-3:
            return f"{value:.3g}"
        return f"{value:.4g}"
    return value


def utc_timestamp() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def postgres_versions(server_version: str, server_version_num: int, **more: Any) -> dict[str, Any]:
    """The "versions" object: the server's, its major, pglab's, plus anything else given."""
    return {
        "postgresql": server_version,
        "postgresql_num": server_version_num,
        "postgresql_major": server_version_num // 10000,
        "pglab": pglab.__version__,
        **more,
    }


_invocation: list[str] | None = None


def set_invocation(argv: Sequence[str]) -> None:
    """Record the arguments pglab was called with (pglab.cli.main does this)."""
    global _invocation
    _invocation = list(argv)


def command_line(argv: Sequence[str] | None = None) -> str:
    """'pglab ARGS' as a shell command: the given args, else this invocation's."""
    args = list(argv) if argv is not None else (_invocation if _invocation is not None else sys.argv[1:])
    return shlex.join(["pglab", *args])


def write_section(out_dir: Path, section: Section) -> Path:
    """Check the plots and data files exist, then write out_dir/section.json atomically."""
    missing = [name for name in [*section.plots, *section.raw_data] if not (out_dir / name).is_file()]
    if missing:
        raise SectionError(f"section of {section.experiment}: missing files in {out_dir}: {', '.join(missing)}")
    data = section.as_json()
    _validate(data, str(out_dir / FILENAME))  # what we write must load back
    path = out_dir / FILENAME
    write_json(path, data)
    return path


def load_section(path: Path) -> Section:
    """Read and validate one section.json (SectionError when it breaks the contract)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SectionError(f"{path}: cannot read: {exc}") from exc
    section = _validate(data, str(path))
    section.directory = path.parent
    for name in section.plots:
        plot = path.parent / name
        try:
            with open(plot, "rb") as file:
                magic = file.read(len(PNG_MAGIC))
        except OSError:
            raise SectionError(f"{path}: plot {name} is missing") from None
        if magic != PNG_MAGIC:
            raise SectionError(f"{path}: plot {name} is not a PNG file")
    return section


def _validate(data: Any, where: str) -> Section:
    if not isinstance(data, dict):
        raise SectionError(f"{where}: not a JSON object")
    if data.get("schema") != SCHEMA:
        raise SectionError(f"{where}: schema is {data.get('schema')!r}, expected {SCHEMA!r}")

    def text(key: str) -> str:
        value = data.get(key)
        if not isinstance(value, str) or not value:
            raise SectionError(f"{where}: {key} must be a non-empty string")
        return value

    def names(key: str, required: bool) -> list[str]:
        value = data.get(key, None if required else [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise SectionError(f"{where}: {key} must be a list of file names")
        for name in value:
            if "/" in name or name.startswith("."):
                raise SectionError(f"{where}: {key} entry {name!r} must be a plain file name")
        return value

    def mapping(key: str) -> dict[str, Any]:
        value = data.get(key)
        if not isinstance(value, dict):
            raise SectionError(f"{where}: {key} must be an object")
        return value

    notes = data.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise SectionError(f"{where}: notes must be a list of strings")
    tables = data.get("tables", [])
    if not isinstance(tables, list):
        raise SectionError(f"{where}: tables must be a list")
    generated = text("generated")
    try:
        dt.datetime.fromisoformat(generated)
    except ValueError:
        raise SectionError(f"{where}: generated {generated!r} is not an ISO 8601 timestamp") from None
    return Section(
        experiment=text("experiment"),
        title=text("title"),
        article=Table.from_json(data.get("article"), f"{where}: article"),
        ours=Table.from_json(data.get("ours"), f"{where}: ours"),
        tables=[Table.from_json(t, f"{where}: tables[{i}]") for i, t in enumerate(tables)],
        machine=mapping("machine"),
        versions=mapping("versions"),
        command=text("command"),
        plots=names("plots", required=True),
        raw_data=names("raw_data", required=False),
        notes=notes,
        generated=generated,
        status=text("status"),
    )


@dataclass
class Found:
    """What a results root holds: valid sections per experiment, and files that broke the contract."""

    sections: dict[str, list[Section]]
    invalid: list[tuple[Path, str]]


def find_sections(results_root: Path) -> Found:
    """Every section.json under results_root, newest first per experiment."""
    sections: dict[str, list[Section]] = {}
    invalid: list[tuple[Path, str]] = []
    for path in sorted(results_root.rglob(FILENAME)):
        try:
            section = load_section(path)
        except SectionError as exc:
            invalid.append((path, str(exc)))
            continue
        sections.setdefault(section.experiment, []).append(section)
    for found in sections.values():
        found.sort(key=lambda s: _instant(s.generated), reverse=True)
    return Found(sections, invalid)


def _instant(timestamp: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(timestamp)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


def latest_per_major(sections: Sequence[Section]) -> list[Section]:
    """The newest section of each PostgreSQL major version, oldest major first (15 left of 18)."""
    newest: dict[int | None, Section] = {}
    for section in sections:  # newest first
        newest.setdefault(section.postgresql_major, section)
    return sorted(newest.values(), key=lambda s: s.postgresql_major or 0)
