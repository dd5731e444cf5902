"""An UNLOGGED copy compared on equal memory.

A user who raises temp_buffers to hold their temporary tables sizes shared_buffers for the tables
they copy into, and a copy that does not fit shared_buffers is read through the kernel's page cache
while the temporary table is read in place: the comparison would measure memory, not the
extension.  So the experiments that time an UNLOGGED copy against a temporary table give the
throwaway server a shared_buffers that holds the copy as temp_buffers holds the table (never less
than the server's own), prewarm the copy after each load, and the temporary tables' indexes with
it (core builds an index into its file, not into the pool that the table lies in after its load),
and print both settings beside the results.  `--shared-buffers server` keeps the server's
setting, for the earlier runs' figures.
"""

from __future__ import annotations

import argparse
from typing import Any

import psycopg

from pglab.cliargs import memory_size, memory_size_bytes

SERVER_DEFAULT = "server"  # --shared-buffers server: the server's own setting
# The throwaway server's default (initdb's), below which equal memory never goes.
SERVER_FLOOR = "128MB"


def shared_buffers_argument(text: str) -> str:
    """argparse type of --shared-buffers: a size, or 'server'."""
    if text == SERVER_DEFAULT:
        return text
    try:
        return memory_size(text)
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"{e}, nor '{SERVER_DEFAULT}'") from None


def add_shared_buffers_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--shared-buffers", type=shared_buffers_argument, metavar="SIZE",
                        help="shared_buffers of the throwaway server (default: the largest temp_buffers the run "
                             "gives its temporary tables, at least 128MB, so that the UNLOGGED copy is held in "
                             f"memory as the temporary tables are, each prewarmed; '{SERVER_DEFAULT}': the "
                             "server's own)")


def shared_buffers_setting(chosen: str | None, temp_buffers: tuple[str, ...]) -> str | None:
    """The shared_buffers to start the throwaway server with (None: leave the server's)."""
    if chosen == SERVER_DEFAULT:
        return None
    if chosen is not None:
        return chosen
    return max((SERVER_FLOOR, *temp_buffers), key=memory_size_bytes)


def server_settings(settings: dict[str, str], chosen: str | None, temp_buffers: tuple[str, ...],
                    dsn: str | None) -> dict[str, str]:
    """`settings` with shared_buffers added where the run starts its own server."""
    size = shared_buffers_setting(chosen, temp_buffers) if dsn is None else None
    return settings if size is None else {**settings, "shared_buffers": size}


def prewarm(conn: psycopg.Connection[Any], relations: list[str]) -> str:
    """Read relations (tables and indexes) into shared buffers, or a temporary one into this session's
    local buffers; says how.  pg_prewarm where the server has it, else a scan of each table (its
    indexes then warm as queries use them)."""
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        for relation in relations:
            conn.execute("SELECT pg_prewarm(%s::regclass)", (relation,))
        return "pg_prewarm"
    except psycopg.Error:
        kinds = dict(conn.execute("SELECT c.oid::regclass::text, c.relkind FROM pg_class c "
                                  "WHERE c.oid = ANY(%s::regclass[])", (relations,)).fetchall())
        for relation in relations:
            if kinds.get(relation) == "r":
                conn.execute(f"SELECT count(*) FROM {relation}")
        return "a scan of each table (no pg_prewarm)"


def with_indexes(conn: psycopg.Connection[Any], tables: list[str]) -> list[str]:
    """The tables, then their indexes."""
    rows = conn.execute("SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = ANY(%s::regclass[]) "
                        "ORDER BY indexrelid", (tables,)).fetchall()
    return [*tables, *(r[0] for r in rows)]


def memory_note(conn: psycopg.Connection[Any], relations: list[str], how: str) -> str:
    """The settings both sides ran with, for the report's notes."""
    row = conn.execute("SELECT current_setting('shared_buffers'), pg_size_bytes(current_setting('shared_buffers')), "
                       "current_setting('temp_buffers'), "
                       "(SELECT sum(pg_relation_size(r)) FROM unnest(%s::regclass[]) r)",
                       (relations,)).fetchone()
    assert row is not None
    copy_bytes = int(row[3] or 0)
    note = (f"shared_buffers = {row[0]}, temp_buffers = {row[2]}: the UNLOGGED copy "
            f"({copy_bytes / 2**20:,.0f} MiB) prewarmed by {how}")
    if copy_bytes > int(row[1]):
        note += "; it does not fit shared_buffers: its scans read through the kernel's page cache"
    return note


def warm_copy(conn: psycopg.Connection[Any], tables: list[str], notes: list[str],
              temp_tables: list[str] | None = None) -> None:
    """Prewarm the copy's tables and indexes, and the temporary tables' alike (temp_tables, in this
    session), and add the settings' note once."""
    relations = with_indexes(conn, tables)
    how = prewarm(conn, relations)
    if temp_tables:
        how += f"; the temporary tables and indexes alike, by {prewarm(conn, with_indexes(conn, temp_tables))}"
    note = memory_note(conn, relations, how)
    if note not in notes:
        notes.append(note)
