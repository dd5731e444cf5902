"""Argument types and checks shared by pglab's commands (one-line errors, no tracebacks)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import psycopg

from pglab.cluster import NO_IMPLICIT_PREPARE
from pglab.errors import LabError
from pglab.pgconfig import PgInstall


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def positive_int_list(text: str) -> tuple[int, ...]:
    """'1,2, 8' -> (1, 2, 8), sorted and without duplicates."""
    parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
    if not parts:
        raise argparse.ArgumentTypeError("empty list")
    values = set()
    for part in parts:
        try:
            values.add(positive_int(part))
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"{part!r} in {text!r} is not a positive integer") from None
    return tuple(sorted(values))


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


_SIZE = re.compile(r"^(\d+)(kB|MB|GB|TB)?$")
_UNIT_BYTES = {"": 8 << 10, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}  # no unit: 8 kB buffers


def memory_size(text: str) -> str:
    """One PostgreSQL memory size: '512MB'."""
    sizes = memory_size_list(text)
    if len(sizes) != 1:
        raise argparse.ArgumentTypeError(f"{text!r}: one size, like 512MB")
    return sizes[0]


def memory_size_bytes(size: str) -> int:
    """'512MB' -> bytes; a size without a unit counts 8 kB buffers, as PostgreSQL reads
    shared_buffers and temp_buffers."""
    match = _SIZE.match(size)
    if match is None:
        raise ValueError(f"{size}: not a size like 512MB or 2GB")
    return int(match.group(1)) * _UNIT_BYTES[match.group(2) or ""]


def memory_size_list(text: str) -> tuple[str, ...]:
    """'8MB, 512MB,4GB' -> ('8MB', '512MB', '4GB'): PostgreSQL memory sizes, in the given order."""
    parts = name_list(text)
    bad = [p for p in parts if not _SIZE.match(p)]
    if bad:
        raise argparse.ArgumentTypeError(f"{', '.join(bad)}: not a size like 8MB or 4GB")
    return parts


def name_list(text: str) -> tuple[str, ...]:
    """'a,b , c' -> ('a', 'b', 'c') in the given order, without duplicates."""
    parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
    if not parts:
        raise argparse.ArgumentTypeError("empty list")
    return tuple(dict.fromkeys(parts))


def add_target_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """--pg-config P | --dsn DSN, as every experiment takes them."""
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--pg-config", type=Path,
                        help=f"run a throwaway cluster of this installation{what} "
                             "(default: $PG_CONFIG, else the wheel's PostgreSQL 18)")
    target.add_argument("--dsn", help="use this existing server instead (libpq connection string; superuser)")


def add_out_argument(parser: argparse.ArgumentParser, experiment: str) -> None:
    """--out DIR, defaulting to default_out_dir(experiment, the server's major) after the run starts."""
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help=f"output directory (default results/{experiment}-pg<major>; an explicit one "
                             "needs an existing parent)")


def check_out_and_pg_config(args: argparse.Namespace) -> None:
    """--out and --pg-config, checked before a run starts."""
    check_out_dir(args.out)
    check_pg_config(args.pg_config)


def check_checksums_target(args: argparse.Namespace) -> None:
    """--checksums/--no-checksums set up a throwaway cluster: not with --dsn."""
    if args.dsn is not None and args.checksums is not None:
        raise LabError("--checksums/--no-checksums only apply to a throwaway cluster, not with --dsn")


def check_out_dir(out: Path | None) -> None:
    """--out must be a directory or creatable in an existing parent."""
    if out is None:
        return
    if not out.parent.is_dir():
        raise LabError(f"--out {out}: parent directory {out.parent} does not exist")
    if out.exists() and not out.is_dir():
        raise LabError(f"--out {out} exists and is not a directory")


def check_pg_config(pg_config: Path | None) -> None:
    if pg_config is not None and not pg_config.is_file():
        raise LabError(f"pg_config not found: {pg_config}")


def default_out_dir(experiment: str, postgresql_major: int | None, results_root: Path = Path("results")) -> Path:
    """results/<experiment>-pg<major>: runs on PostgreSQL 15 and 18 keep separate outputs,
    and `pglab report` shows the latest of each side by side."""
    suffix = f"-pg{postgresql_major}" if postgresql_major else ""
    return results_root / f"{experiment}{suffix}"


def prepare_out_dir(out: Path, defaulted: bool) -> Path:
    """Create the output directory (and, for the default one, its parents)."""
    try:
        out.mkdir(parents=defaulted, exist_ok=True)
    except OSError as exc:
        raise LabError(f"cannot create output directory {out}: {exc.strerror}") from exc
    return out


def server_major(pg_config: Path | None, dsn: str | None) -> int:
    """The major version of the server an experiment will measure: --dsn's, asked over a
    connection, else --pg-config's (default $PG_CONFIG, else the wheel's)."""
    if dsn is None:
        return PgInstall.from_pg_config(pg_config).version_num // 10000
    try:
        with psycopg.connect(dsn, autocommit=True, prepare_threshold=NO_IMPLICIT_PREPARE) as conn:
            row = conn.execute("SELECT current_setting('server_version_num')::int").fetchone()
    except psycopg.Error as exc:
        raise LabError(f"cannot connect to --dsn {dsn!r}: {str(exc).splitlines()[0]}") from exc
    assert row is not None
    return int(row[0]) // 10000


def resolve_out_dir(out: Path | None, experiment: str, pg_config: Path | None, dsn: str | None) -> Path:
    """--out as given (its parent must exist), else default_out_dir(experiment, the server's
    major), created with its parents: the rule every experiment follows, whether it knows the
    server before it starts (here) or once connected (default_out_dir)."""
    if out is not None:
        check_out_dir(out)
        return out
    return prepare_out_dir(default_out_dir(experiment, server_major(pg_config, dsn)), defaulted=True)
