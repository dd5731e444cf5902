"""`pglab temp-extend` end to end on a tiny grid, its outputs' schema, and bad options."""

import csv
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import assert_bad_pg_config_in_a_subprocess_is_one_line, assert_main_fails_in_one_line, run_pglab

from pglab.cli import main
from pglab.cluster import Cluster
from pglab.experiments.temp_extend import options as opt
from pglab.experiments.temp_extend import trace
from pglab.experiments.temp_extend.runner import RAW_COLUMNS, estimated_blocks
from pglab.pgconfig import PgInstall
from pglab.report_section import load_section

# 2,000 rows fit in 35 blocks; 20,000 rows take 345 blocks, more than the 100 "small" buffers.
SIZES = "2k,20k"
ITERATIONS = 2
OUTPUTS = {"raw.csv", "cells.csv", "summary.md", "meta.json", "section.json", "elapsed.png", "io.png"}


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as file:
        reader = csv.DictReader(file)
        assert tuple(reader.fieldnames or ()) == RAW_COLUMNS
        return list(reader)


def test_article_sizes() -> None:
    assert estimated_blocks(opt.PRESETS["9MB"], 8192) == 1134  # the article's 1134 extends
    assert opt.parse_size("1Mx1900").rows == 1_000_000 and opt.parse_size("250k").rows == 250_000
    assert [s.label for s in opt.size_list("9MB, 1M,9MB")] == ["9MB", "1M"]


@pytest.fixture
def tmpfs_dir() -> Iterator[Path]:
    """A private directory on tmpfs that the server's OS user can enter."""
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm tmpfs on this machine")
    path = Path(tempfile.mkdtemp(prefix="pglab-test-", dir="/dev/shm"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_tiny_grid_on_a_throwaway_cluster(pg_config_path: str, tmp_path: Path, tmpfs_dir: Path) -> None:
    out = tmp_path / "te"
    result = run_pglab("temp-extend", "--pg-config", pg_config_path, "--sizes", SIZES,
                       "--iterations", str(ITERATIONS), "--tmpfs-dir", str(tmpfs_dir), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "The article" in result.stdout and "Ours (PostgreSQL" in result.stdout and "disk / tmpfs" in result.stdout
    assert OUTPUTS <= {p.name for p in out.iterdir()}

    install = PgInstall.from_pg_config(pg_config_path)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "ok" and meta["server"]["version_num"] == install.version_num
    assert meta["environment"]["tmpfs"]["filesystem"]["fstype"] == "tmpfs"
    # pgserver's PostgreSQL 16 ships no contrib modules, pg_stat_statements among them.
    has_pgss = (install.pkglibdir / "pg_stat_statements.so").is_file() and install.has_extension("pg_stat_statements")
    if has_pgss:
        assert meta["statement_stats"] == "pg_stat_statements"
    else:
        assert meta["statement_stats"] == "pg_stat_statements is not in shared_preload_libraries"

    rows = _rows(out / "raw.csv")
    timed = [r for r in rows if r["traced"] == "0"]
    assert len(timed) == 2 * 2 * 2 * ITERATIONS  # sizes x temp_buffers x tablespaces x iterations
    assert {(r["temp_buffers_mode"], r["tablespace"]) for r in timed} == {
        (m, t) for m in opt.TEMP_BUFFER_MODES for t in (opt.DISK, opt.TMPFS)}
    for r in timed:
        blocks, big = int(r["table_blocks"]), r["size"] == "20k"
        assert float(r["elapsed_ms"]) > 0 and int(r["file_bytes"]) == blocks * 8192
        assert blocks >= (345 if big else 35)
        evicting = big and r["temp_buffers_mode"] == opt.SMALL
        if has_pgss:
            written = float(r["pgss_local_blks_written"])  # extended blocks count as written, then evictions
            assert written >= blocks and (written > blocks) == evicting
        else:
            assert r["pgss_local_blks_written"] == ""
        if install.version_num >= 160000:
            assert float(r["io_extends"]) >= 1 and float(r["io_extend_bytes"]) == int(r["file_bytes"])
            assert (float(r["io_writes"]) > 0) == evicting
        else:
            assert r["io_extends"] == ""

    traced = [r for r in rows if r["traced"] == "1"]
    if install.version_num < 160000 and trace.unavailable_reason(install.bindir / "postgres",
                                                                 install.version_num) is None:
        assert len(traced) == 2 * 2 * 2
        for r in traced:  # one extend per block on PostgreSQL <= 15
            assert int(r["bt_extends"]) == int(r["table_blocks"])
            evicting = r["size"] == "20k" and r["temp_buffers_mode"] == opt.SMALL
            assert (int(r["bt_writes"]) > 0) == evicting
    else:
        assert traced == []

    section = load_section(out / "section.json")
    assert section.experiment == "temp-extend" and section.plots == ["elapsed.png", "io.png"]
    assert section.versions["postgresql_major"] == install.version_num // 10000
    assert section.article.rows[0][1] == 1134 and len(section.ours.rows) == 8
    assert section.command.startswith("pglab temp-extend --pg-config")
    assert list(tmpfs_dir.iterdir()) == []  # the scratch tablespace and its directory are gone


def test_existing_server_without_tmpfs(pg_cluster: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "te"
    code = main(["temp-extend", "--dsn", pg_cluster.conninfo, "--no-tmpfs", "--sizes", "2k",
                 "--iterations", "1", "--out", str(out)])
    assert code == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "ok" and meta["environment"]["tmpfs"] is None
    assert "shared_preload_libraries" in meta["statement_stats"]  # said why it was not used
    assert {r["tablespace"] for r in _rows(out / "raw.csv")} == {opt.DISK}
    with pg_cluster.connect() as conn:  # the source table was dropped
        assert conn.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'pglab_te_%'").fetchone() == (0,)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--sizes", "abc"], "expected 9MB, 1M"),
        (["--sizes", "1kx5000"], "TOASTed"),
        (["--sizes", ""], "no sizes"),
        (["--iterations", "0"], "not a positive integer"),
        (["--small-temp-buffers", "50"], "minimum is 100"),
        (["--tmpfs-dir", "/nonexistent/dir"], "--tmpfs-dir"),
        (["--pg-config", "/nonexistent/pg_config"], "pg_config not found"),
        (["--dsn", "x", "--pg-config", "y"], "not allowed with"),
        (["--dsn", "host=/nonexistent port=1 connect_timeout=2"], "cannot connect"),
    ],
)
def test_bad_options(args: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_main_fails_in_one_line(["temp-extend", "--out", str(tmp_path / "out"), *args], needle, capsys)


def test_bad_option_in_a_subprocess_is_one_line(tmp_path: Path) -> None:
    assert_bad_pg_config_in_a_subprocess_is_one_line("temp-extend", tmp_path / "out")


def test_out_parent_must_exist() -> None:
    result = run_pglab("temp-extend", "--out", "/nonexistent/parent/out", timeout=60)
    assert result.returncode != 0 and "does not exist" in result.stderr and "Traceback" not in result.stderr


