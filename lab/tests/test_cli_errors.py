"""Bad options end with one clear error line and a non-zero exit, never a traceback."""

import subprocess
import sys
from pathlib import Path

import pytest

from pglab.cli import main
from pglab.cluster import Cluster
from pglab.experiments.flush_cost import runner


def _pglab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pglab", *args], capture_output=True, text=True, timeout=60)


def _assert_one_line_error(result: subprocess.CompletedProcess[str], needle: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert needle in lines[0]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--sizes", "0"], "not a positive integer"),
        (["--sizes", "128,abc"], "not a positive integer"),
        (["--iterations", "0"], "not a positive integer"),
        (["--evict", "magic"], "--evict"),
        (["--pg-config", "/nonexistent/pg_config"], "pg_config not found"),
        (["--dsn", "host=/nonexistent port=1 connect_timeout=2"], "cannot connect"),
        (["--dsn", "host=/nonexistent", "--checksums"], "--checksums"),
        (["--tablespace-dir", "/nonexistent/dir"], "--tablespace-dir"),
        (["--dsn", "x", "--pg-config", "y"], "not allowed with"),
    ],
)
def test_bad_flush_cost_options(args: list[str], needle: str, tmp_path: Path) -> None:
    _assert_one_line_error(_pglab("flush-cost", "--out", str(tmp_path / "out"), *args), needle)


def test_out_dir_parent_must_exist() -> None:
    _assert_one_line_error(_pglab("flush-cost", "--out", "/nonexistent/parent/out"), "does not exist")


def test_buffered_plan_refuses_a_dsn(tmp_path: Path) -> None:
    _assert_one_line_error(_pglab("buffered-plan", "--dsn", "host=/nonexistent", "--out", str(tmp_path / "o")),
                           "needs a throwaway cluster")


def test_default_out_dir_names_the_server_major(pg_config_path: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Every experiment's default folder is results/<experiment>-pg<major>, created on demand."""
    from pglab.cliargs import resolve_out_dir
    from pglab.pgconfig import PgInstall

    monkeypatch.chdir(tmp_path)
    major = PgInstall.from_pg_config(pg_config_path).version_num // 10000
    out = resolve_out_dir(None, "flush-cost", Path(pg_config_path), None)
    assert out == Path(f"results/flush-cost-pg{major}") and out.is_dir()
    assert resolve_out_dir(tmp_path / "mine", "flush-cost", Path(pg_config_path), None) == tmp_path / "mine"


def test_cluster_exec_needs_a_command() -> None:
    _assert_one_line_error(_pglab("cluster-exec"), "needs a command")


def test_help_for_every_command() -> None:
    for command in ([], ["flush-cost"], ["cluster-exec"]):
        result = _pglab(*command, "--help")
        assert result.returncode == 0 and "usage: pglab" in result.stdout


def test_missing_extension_on_existing_server(
    pg_cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(runner, "EXTENSION", "pg_tempbuf_not_installed")
    code = main(["flush-cost", "--dsn", pg_cluster.conninfo, "--sizes", "128", "--out", str(tmp_path / "o")])
    assert code == 1
    err = capsys.readouterr().err
    assert "extension pg_tempbuf_not_installed is not installed" in err and "Traceback" not in err


def test_missing_extension_in_throwaway_cluster(
    pg_config_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(runner, "EXTENSION", "pg_tempbuf_not_installed")
    code = main(["flush-cost", "--pg-config", pg_config_path, "--sizes", "128", "--out", str(tmp_path / "o")])
    assert code == 1
    assert "is not installed" in capsys.readouterr().err
