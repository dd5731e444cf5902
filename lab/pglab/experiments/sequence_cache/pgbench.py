"""Running the server's pgbench with a custom script and reading its summary."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pglab.errors import LabError

_TPS = re.compile(r"^tps = ([0-9.]+) \(without initial connection time\)", re.MULTILINE)
_PROCESSED = re.compile(r"^number of transactions actually processed: (\d+)", re.MULTILINE)
_FAILED = re.compile(r"^number of failed transactions: (\d+)", re.MULTILINE)
_LATENCY = re.compile(r"^latency average = ([0-9.]+) ms", re.MULTILINE)
# Slack over -T for connecting, the last long transaction, and a loaded machine.
TIMEOUT_SLACK_S = 120


@dataclass(frozen=True)
class PgbenchResult:
    tps: float
    transactions: int
    failed: int
    latency_ms: float | None


def parse_output(stdout: str) -> PgbenchResult:
    tps = _TPS.search(stdout)
    processed = _PROCESSED.search(stdout)
    if tps is None or processed is None:
        raise LabError(f"cannot read pgbench's summary: {stdout.strip()[-300:]!r}")
    failed = _FAILED.search(stdout)  # PostgreSQL 15+
    latency = _LATENCY.search(stdout)
    return PgbenchResult(
        tps=float(tps.group(1)),
        transactions=int(processed.group(1)),
        failed=int(failed.group(1)) if failed else 0,
        latency_ms=float(latency.group(1)) if latency else None,
    )


def command(pgbench: Path, script: Path, clients: int, duration_s: int, dsn: str | None) -> list[str]:
    """The article's invocation: -n -f script -c N -j N -T seconds (a conninfo as dbname with --dsn)."""
    args = [str(pgbench), "-n", "-f", str(script), "-c", str(clients), "-j", str(clients), "-T", str(duration_s)]
    return args + ([dsn] if dsn else [])


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    try:
        return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as exc:
        raise LabError(f"cannot run {args[0]}: {exc.strerror}") from exc


def finish(process: subprocess.Popen[str], duration_s: int) -> PgbenchResult:
    try:
        stdout, stderr = process.communicate(timeout=duration_s + TIMEOUT_SLACK_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise LabError(f"pgbench did not finish within {duration_s + TIMEOUT_SLACK_S} s") from None
    if process.returncode != 0:
        last = [line for line in stderr.splitlines() if line.strip()]
        raise LabError(f"pgbench failed (exit {process.returncode}): {last[-1] if last else 'no output'}")
    return parse_output(stdout)
