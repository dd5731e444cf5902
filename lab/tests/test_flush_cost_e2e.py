"""`pglab flush-cost` end to end on a tiny grid against real servers with pg_tempbuf."""

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pglab.cli import main
from pglab.cluster import Cluster
from pglab.experiments.flush_cost import options as opt
from pglab.experiments.flush_cost.records import RAW_CSV_COLUMNS, load_raw_csv
from pglab.pgconfig import PgInstall
from pglab.report_section import load_section

SIZES = (128, 256)
ITERATIONS = 2
OUTPUTS = {"raw.csv", "summary.md", "model.json", "meta.json", "phases.png", "write_read_ratio.png", "section.json"}


@pytest.fixture(scope="module", autouse=True)
def _needs_extension(pg_config_path: str) -> None:
    if not PgInstall.from_pg_config(pg_config_path).has_extension("pg_tempbuf"):
        pytest.skip(f"pg_tempbuf is not installed for {pg_config_path} (run make install)")


@pytest.fixture
def shared_scratch_dir() -> Iterator[Path]:
    """A directory the server's OS user can reach (pytest's tmp_path is private to root)."""
    parent = "/dev/shm" if os.path.isdir("/dev/shm") else None
    path = Path(tempfile.mkdtemp(prefix="pglab-test-", dir=parent))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _check_outputs(out: Path, evict: opt.EvictMode) -> None:
    assert OUTPUTS <= {p.name for p in out.iterdir()}

    with open(out / "raw.csv", newline="") as file:
        assert tuple(csv.DictReader(file).fieldnames or ()) == RAW_CSV_COLUMNS
    records = load_raw_csv(out / "raw.csv")
    pg_phases = opt.phase_order(evict)
    expected_phases = set(pg_phases) | {opt.RAW_WRITE, opt.RAW_READ}
    assert {r.phase for r in records} == expected_phases
    assert len(records) == len(SIZES) * ITERATIONS * len(expected_phases)
    for r in records:
        assert r.ms >= 0
        if r.phase not in pg_phases:
            continue
        n = r.size
        assert r.relpages == n and r.pool_size == opt.pool_blocks(n)
        if r.phase in (opt.WRITE_SEQ, opt.WRITE_RANDOM):
            assert r.local_written == r.dirtied_local_buffers and r.local_written >= n
            assert f"local written={r.local_written}" in r.buffers
        if r.phase == opt.WRITE_RANDOM:
            assert r.local_written == n
        if r.phase in (opt.READ_SEQ, opt.READ_RANDOM):
            assert (r.local_read or 0) + (r.local_hit or 0) == n
            if evict is opt.EvictMode.FUNCTION:
                assert r.local_read == n
        if r.phase in (opt.SCAN_RESIDENT,):
            assert r.local_hit == n and r.local_read == 0
        if r.phase == opt.SCAN_PRIVATE:  # the worker's reads of the file, counted as local reads
            assert not r.local_hit and r.local_read == n
        if r.phase == opt.INDEX_RESIDENT:
            assert (r.local_hit or 0) >= n and (r.local_read or 0) <= max(8, n // 50)
        if r.phase == opt.INDEX_PRIVATE:
            assert not r.local_hit and (r.local_read or 0) >= n
        if r.phase in (opt.DRY_READ, opt.HIT_CHECK):
            assert r.local_hit == n and r.local_read == 0
        if r.phase == opt.MARK_DIRTY:
            assert r.local_dirtied == n
        if r.phase == opt.DRY_WRITE:
            assert r.local_written == 0

    model = json.loads((out / "model.json").read_text())
    for key in ("write_page_cost", "buffer_scan_cost", "read_page_cost", "index_read_page_cost",
                "random_write_penalty", "fits",
                "throughput_mb_s", "recommended_settings", "machine", "postgresql", "options"):
        assert key in model
    assert model["fits"][opt.WRITE_SEQ]["n_points"] == len(SIZES)
    assert 0 <= model["fits"][opt.WRITE_SEQ]["r_squared"] <= 1
    assert "flush_to_raw_write_ratio" in model["throughput_mb_s"]
    assert model["machine"]["cpu_model"] and model["postgresql"]["version_num"] > 0

    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "ok" and meta["sizes_measured"] == list(SIZES)
    assert meta["options"]["evict"] == str(evict)

    section = load_section(out / "section.json")  # the report's contract
    assert section.experiment == "flush-cost" and [r[0] for r in section.ours.rows] == list(SIZES)

    summary = (out / "summary.md").read_text()
    assert "## Model" in summary and f"### {opt.WRITE_SEQ}" in summary and "article median ms" in summary


def test_cli_throwaway_cluster(pg_config_path: str, tmp_path: Path) -> None:
    out = tmp_path / "flush"
    result = subprocess.run(
        [sys.executable, "-m", "pglab", "flush-cost", "--pg-config", pg_config_path,
         "--sizes", ",".join(map(str, SIZES)), "--iterations", str(ITERATIONS), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "write_page_cost" in result.stdout and f"results in {out}" in result.stdout
    _check_outputs(out, opt.EvictMode.FUNCTION)


def test_displacer_in_a_tablespace_on_existing_server(
    pg_cluster: Cluster, shared_scratch_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "flush"
    extension_query = "SELECT count(*) FROM pg_extension WHERE extname = 'pg_tempbuf'"
    with pg_cluster.connect() as conn:
        extension_before = conn.execute(extension_query).fetchone()
    code = main([
        "flush-cost", "--dsn", pg_cluster.conninfo, "--evict", "displacer",
        "--tablespace-dir", str(shared_scratch_dir),
        "--sizes", ",".join(map(str, SIZES)), "--iterations", str(ITERATIONS), "--out", str(out),
    ])
    assert code == 0
    _check_outputs(out, opt.EvictMode.DISPLACER)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["environment"]["tablespace"]["location"].startswith(str(shared_scratch_dir))
    assert list(shared_scratch_dir.iterdir()) == []  # tablespace dropped, its directory removed
    with pg_cluster.connect() as conn:
        assert conn.execute("SELECT count(*) FROM pg_tablespace WHERE spcname LIKE 'pglab%'").fetchone() == (0,)
        assert conn.execute(extension_query).fetchone() == extension_before  # left as found
