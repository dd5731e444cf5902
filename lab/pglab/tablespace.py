"""A scratch tablespace in a user-chosen directory (e.g. under /dev/shm), dropped afterwards."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from pglab.errors import LabError
from pglab.osuser import OsUser
from pglab.server import first_line

DROP_RETRY_S = 10.0


@dataclass(frozen=True)
class Tablespace:
    name: str
    location: Path


@contextmanager
def scratch_tablespace(
    conn: psycopg.Connection[Any], parent_dir: Path, server_user: OsUser | None
) -> Iterator[Tablespace]:
    """Create a tablespace in a new directory under `parent_dir`; drop both on exit.

    The directory must belong to the server's OS user: when we are root and know that user
    (our own throwaway cluster, or a local server's data directory owner), we chown it.
    """
    if not parent_dir.is_dir():
        raise LabError(f"--tablespace-dir {parent_dir} is not a directory")
    location = Path(tempfile.mkdtemp(prefix="pglab-ts-", dir=parent_dir))
    if server_user is not None and os.geteuid() == 0:
        server_user.chown(location)
    name = f"pglab_scratch_{os.getpid()}"
    try:
        conn.execute(
            sql.SQL("CREATE TABLESPACE {} LOCATION {}").format(
                sql.Identifier(name), sql.Literal(str(location))
            )
        )
    except psycopg.Error as exc:
        shutil.rmtree(location, ignore_errors=True)
        raise LabError(f"cannot create a tablespace in {location}: {first_line(exc)}") from exc
    try:
        yield Tablespace(name, location)
    finally:
        _drop_tablespace(conn, name)
        shutil.rmtree(location, ignore_errors=True)


def _drop_tablespace(conn: psycopg.Connection[Any], name: str) -> None:
    # A backend that just exited may still be unlinking its temp files: retry a little.
    deadline = time.monotonic() + DROP_RETRY_S
    while True:
        try:
            conn.execute(sql.SQL("DROP TABLESPACE IF EXISTS {}").format(sql.Identifier(name)))
            return
        except psycopg.errors.ObjectNotInPrerequisiteState:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
