"""TPC-H tables of one kind (temporary, UNLOGGED or plain permanent) loaded in the calling session.

The schema and the keys are pg_buffered_plan/tpch's schema.sql and keys.sql, rewritten so every
table name is qualified: `pg_temp.<table>` for temporary tables (then they exist in this session
only, and shadow permanent tables of the same names while pg_temp comes first in search_path),
`<schema>.<table>` otherwise.  The rows are tpchgen-cli's CSV files (pglab.experiments.buffered_plan
.tpch.generate), COPYed in file order, so every kind holds the same rows in the same physical order.
Used by `pglab overhead` (planning time over temp TPC-H) and `pglab temp-shapes --tpch-all-temp`.
"""

from __future__ import annotations

import math
import re
from enum import StrEnum
from pathlib import Path
from typing import Any

import psycopg

from pglab.experiments.buffered_plan.tpch import tpch_dir

TABLES = ("region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem")
QUERIES = tuple(f"q{i:02d}" for i in range(1, 23))
TEMP_SCHEMA = "pg_temp"

_CREATE = re.compile(r"\bCREATE TABLE\s+(\w+)", re.IGNORECASE)
_ALTER_OR_INDEX = re.compile(r"\b(ALTER TABLE|CREATE INDEX ON)\s+(\w+)", re.IGNORECASE)


class Kind(StrEnum):
    TEMP = "temp"
    UNLOGGED = "unlogged"
    PERMANENT = "permanent"


def qualifier(kind: Kind, schema: str | None) -> str:
    if kind is Kind.TEMP:
        return TEMP_SCHEMA
    if not schema:
        raise ValueError(f"{kind} tables need a schema")
    return schema


def _statements(text: str) -> list[str]:
    """The SQL statements of a file of simple statements (no semicolons inside), comments dropped."""
    lines = [line.split("--", 1)[0] for line in text.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def create_statements(kind: Kind, schema: str | None, schema_sql: str) -> list[str]:
    """schema.sql's CREATE TABLEs as `kind` tables with qualified names."""
    where = qualifier(kind, schema)
    word = {Kind.TEMP: "CREATE TEMP TABLE", Kind.UNLOGGED: "CREATE UNLOGGED TABLE",
            Kind.PERMANENT: "CREATE TABLE"}[kind]
    return [_CREATE.sub(lambda m: f"{word} {where}.{m.group(1)}", s) for s in _statements(schema_sql)]


def key_statements(kind: Kind, schema: str | None, keys_sql: str) -> list[str]:
    """keys.sql's primary keys and foreign-key indexes on the qualified tables; its database-wide
    ANALYZE is left out (the loader analyzes each table it made)."""
    where = qualifier(kind, schema)
    return [_ALTER_OR_INDEX.sub(lambda m: f"{m.group(1)} {where}.{m.group(2)}", s) for s in _statements(keys_sql)
            if s.upper() != "ANALYZE"]


def temp_buffers_for(scale: float) -> str:
    """A temp_buffers that holds every TPC-H table of `scale` with its keys (about 1.6 GB at SF 1)."""
    return f"{math.ceil(scale * 2) + 1}GB"


def load(conn: psycopg.Connection[Any], csv_dir: Path, kind: Kind, schema: str | None = None,
         tables: tuple[str, ...] = TABLES) -> list[str]:
    """Create `tables` as `kind` tables, COPY the CSVs into them, add the keys and VACUUM (FREEZE,
    ANALYZE) each; returns the qualified table names.  Temporary tables need the session's
    temp_buffers set before its first temporary table."""
    tpch = tpch_dir()
    where = qualifier(kind, schema)
    if kind is not Kind.TEMP:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {where}")
    wanted = set(tables)
    for statement in create_statements(kind, schema, (tpch / "schema.sql").read_text()):
        match = re.search(rf"{re.escape(where)}\.(\w+)", statement)
        if match and match.group(1) in wanted:
            conn.execute(statement)
    for table in tables:
        with conn.cursor().copy(f"COPY {where}.{table} FROM STDIN (FORMAT csv, HEADER true)") as copy:
            with open(csv_dir / f"{table}.csv", "rb") as f:
                while chunk := f.read(1 << 20):
                    copy.write(chunk)
    for statement in key_statements(kind, schema, (tpch / "keys.sql").read_text()):
        match = re.search(rf"{re.escape(where)}\.(\w+)", statement)
        if match and match.group(1) in wanted:
            conn.execute(statement)
    for table in tables:
        conn.execute(f"VACUUM (FREEZE, ANALYZE) {where}.{table}")
    return [f"{where}.{table}" for table in tables]


def total_bytes(conn: psycopg.Connection[Any], relations: list[str]) -> int:
    """Heap, TOAST and indexes of the relations together."""
    total = 0
    for relation in relations:
        row = conn.execute("SELECT pg_total_relation_size(%s::regclass)", (relation,)).fetchone()
        total += int(row[0]) if row and row[0] is not None else 0
    return total


def query_text(name: str) -> str:
    """One of the 22 queries, without its trailing semicolon."""
    return (tpch_dir() / "queries" / f"{name}.sql").read_text().strip().rstrip(";")


def search_path(kind: Kind, schema: str | None) -> str:
    """The SET that makes unqualified names resolve to `kind`'s tables."""
    if kind is Kind.TEMP:
        return "SET search_path = pg_temp" + (f", {schema}" if schema else "")
    return f"SET search_path = {qualifier(kind, schema)}, pg_temp"
