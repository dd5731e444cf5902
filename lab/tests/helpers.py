"""What several of the lab's test files share: pglab in a subprocess, and its one-line errors."""

import subprocess
import sys
from pathlib import Path

import pytest

from pglab.cli import main


def run_pglab(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pglab", *args], capture_output=True, text=True, timeout=timeout)


def assert_main_fails_in_one_line(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    """pglab.cli.main(argv) fails with exactly one stderr line, and it contains needle."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code != 0 and len(lines) == 1 and needle in lines[0], err


def assert_bad_pg_config_in_a_subprocess_is_one_line(command: str, out: Path) -> None:
    result = run_pglab(command, "--out", str(out), "--pg-config", "/nonexistent/pg_config", timeout=60)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 1 and len(lines) == 1 and "Traceback" not in result.stderr
