"""The server an experiment runs against: a throwaway cluster, or an existing one (--dsn)."""

from __future__ import annotations

import datetime as dt
import os
import pwd
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from pglab.cluster import NO_IMPLICIT_PREPARE, Cluster
from pglab.errors import LabError
from pglab.osuser import OsUser
from pglab.pgconfig import PgInstall

CONNECT_TIMEOUT_S = 10


@dataclass
class TargetServer:
    """Connection details plus what we know about the server's files on this machine."""

    conninfo: str
    description: str  # "throwaway cluster (...)" or "existing server (dsn)"
    cluster: Cluster | None = None
    data_dir: Path | None = None  # None when the server is not on this machine (or hidden)
    server_user: OsUser | None = None  # owner of the data directory, for chown of new dirs
    scratch_dir: Path | None = None  # a writable directory on the data directory's filesystem

    def connect(self, autocommit: bool = True, **conninfo: Any) -> psycopg.Connection[Any]:
        if "connect_timeout" not in conninfo_to_dict(self.conninfo):
            conninfo.setdefault("connect_timeout", CONNECT_TIMEOUT_S)  # fail fast on a dead host
        try:
            return psycopg.connect(self.conninfo, autocommit=autocommit,
                                   prepare_threshold=NO_IMPLICIT_PREPARE, **conninfo)
        except psycopg.OperationalError as exc:
            raise LabError(f"cannot connect to {self.description}: {first_line(exc)}") from exc


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def current_setting(conn: psycopg.Connection[Any], name: str) -> str | None:
    """SHOW name, or None when the server has no such setting."""
    row = conn.execute("SELECT current_setting(%s, true)", (name,)).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def load_extension(conn: psycopg.Connection[Any], extension: str) -> None:
    """Create the extension if it is missing and load its library in this session, so that its
    settings show their defaults (also on a --dsn server that does not preload it)."""
    conn.execute("SET client_min_messages = warning")
    conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
    conn.execute(f"LOAD '{extension}'")


def extension_version(server: dict[str, Any], extension: str) -> str:
    """The extension's version from extension_library_facts(), and when its library was built
    (the C code changes under one version)."""
    library = server.get(f"{extension}_library")
    built = f" (library built {library.get('modified')})" if isinstance(library, dict) else ""
    return f"{server.get(extension) or '?'}{built}"


def extension_library_note(server: dict[str, Any], extension: str) -> str | None:
    """A summary note naming the library file measured, where extension_library_facts() found it."""
    library = server.get(f"{extension}_library")
    if not isinstance(library, dict):
        return None
    return f"{extension} {extension_version(server, extension)}: {library.get('path')}, {library.get('bytes')} bytes."


def extension_library_facts(conn: psycopg.Connection[Any], extension: str) -> dict[str, Any]:
    """The extension's version in this database (None if not created), and its library file's
    size and time where this machine sees the server's library directory."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = %s", (extension,)).fetchone()
    facts: dict[str, Any] = {extension: None if row is None else row[0]}
    try:
        row = conn.execute("SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'").fetchone()
    except psycopg.Error:
        return facts
    if row is None:
        return facts
    library = Path(str(row[0])) / f"{extension}.so"
    if library.is_file():
        stat = library.stat()
        facts[f"{extension}_library"] = {
            "path": str(library), "bytes": stat.st_size,
            "modified": dt.datetime.fromtimestamp(stat.st_mtime, dt.UTC).isoformat(timespec="seconds")}
    return facts


def server_facts(conn: psycopg.Connection[Any], extra_settings: tuple[str, ...] = ()) -> dict[str, Any]:
    """Version, block size, checksums and fsync of the server, plus the given settings."""
    version_row = conn.execute("SELECT version()").fetchone()
    facts: dict[str, Any] = {
        "version": current_setting(conn, "server_version"),
        "version_full": version_row[0] if version_row else None,
        "version_num": int(current_setting(conn, "server_version_num") or 0),
        "block_size": int(current_setting(conn, "block_size") or 8192),
        "data_checksums": current_setting(conn, "data_checksums"),
        "fsync": current_setting(conn, "fsync"),
    }
    facts.update({name: current_setting(conn, name) for name in extra_settings})
    return facts


def _existing_server(dsn: str) -> TargetServer:
    target = TargetServer(conninfo=dsn, description=f"server at dsn {dsn!r}")
    with target.connect() as conn:
        try:
            row = conn.execute("SELECT current_setting('data_directory')").fetchone()
        except psycopg.Error:
            row = None  # needs superuser or pg_read_all_settings; we then just know less
    data_dir = Path(row[0]) if row and row[0] else None
    if data_dir is not None and data_dir.is_dir():
        target.data_dir = data_dir
        owner = pwd.getpwuid(data_dir.stat().st_uid)
        target.server_user = OsUser(owner.pw_name, owner.pw_uid, owner.pw_gid)
        if os.access(data_dir.parent, os.W_OK):
            target.scratch_dir = data_dir.parent
    return target


@contextmanager
def open_target(
    pg_config: Path | None,
    dsn: str | None,
    checksums: bool | None,
    require_extension: str | None = None,
    settings: dict[str, str] | None = None,
) -> Iterator[TargetServer]:
    """Yield the server to measure: the one at `dsn`, or a throwaway cluster of `pg_config`."""
    if dsn is not None:
        yield _existing_server(dsn)
        return
    install = PgInstall.from_pg_config(pg_config)
    if require_extension and not install.has_extension(require_extension):
        raise LabError(
            f"extension {require_extension} is not installed in {install.version} "
            f"({install.sharedir}/extension); run `make install PG_CONFIG={install.pg_config}`"
        )
    with Cluster(install.pg_config, settings=settings, checksums=checksums) as cluster:
        yield TargetServer(
            conninfo=cluster.conninfo,
            description=f"throwaway cluster of {install.version}",
            cluster=cluster,
            data_dir=cluster.data_dir,
            server_user=cluster.os_user,
            scratch_dir=cluster.base_dir,
        )
