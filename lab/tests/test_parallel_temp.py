"""pglab parallel-temp end to end on a tiny grid, and its option errors."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pglab.cli import main


def pglab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pglab", *args], capture_output=True, text=True)


def test_tiny_grid_end_to_end(tmp_path: Path, pg_config_path: str) -> None:
    out = tmp_path / "pt"
    result = pglab("parallel-temp", "--rows", "20000", "--workers", "1,2", "--repetitions", "2",
                   "--pg-config", pg_config_path, "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "Speedup over the stock serial scan" in result.stdout
    assert "Decision experiment" in result.stdout
    for name in ("raw.csv", "plans.csv", "decisions.csv", "default_settings.csv", "results.json",
                 "summary.md", "section.json",
                 "speedup_vs_size.png", "speedup_vs_workers.png", "decisions.png"):
        assert (out / name).is_file(), name

    with (out / "raw.csv").open() as f:
        raw = list(csv.DictReader(f))
    variants = {"serial", "parallel_clean", "parallel_dirty", "parallel_part_dirty", "unlogged_parallel"}
    assert {r["variant"] for r in raw} == variants
    assert len(raw) == 3 * 2 * 2 * len(variants)  # queries x workers x repetitions x variants
    assert all(float(r["ms"]) > 0 for r in raw)
    dirty = {int(r["dirty_pages"]) for r in raw if r["variant"] == "parallel_dirty"}
    pages = {int(r["pages"]) for r in raw}
    assert dirty == pages, "every page of a table that fits in temp_buffers is dirty"

    with (out / "plans.csv").open() as f:
        plans = list(csv.DictReader(f))
    ours = [p for p in plans if p["variant"].startswith("parallel_")]
    assert ours and all(p["temp_seq_scan"] == "True" for p in ours)
    assert all(p["temp_seq_scan"] == "False" for p in plans if p["variant"] == "serial")

    results = json.loads((out / "results.json").read_text())
    assert results["server"]["version"]
    assert {s["variant"] for s in results["speedups"]} == variants
    assert results["regret"]["cases"] == 3 * 3  # dirty shares x queries
    section = json.loads((out / "section.json").read_text())
    assert section["experiment"] == "parallel-temp" and section["ours"]["rows"]
    for d in results["decisions"]:
        assert d["regret_ms"] >= 0
        assert d["planner"] in ("serial", "parallel") and d["faster"] in ("serial", "parallel")

    # Default settings: a 1 MB table stays serial (below min_parallel_table_scan_size);
    # after the UPDATE of a third of the rows the forced parallel plan returns the serial rows.
    [accepted] = results["default_settings"]
    assert accepted["rows"] == 20000 and not accepted["planner_parallel"]
    assert accepted["same_rows"] and accepted["after_update_same_rows"]
    assert accepted["updated_rows"] == 20000 // 3
    assert accepted["after_update_parallel"] and accepted["after_update_workers"] > 0
    with (out / "default_settings.csv").open() as f:
        samples = list(csv.DictReader(f))
    assert sorted(r["switch"] for r in samples) == ["off", "off", "on", "on"]
    assert "Default settings, 20,000 rows: the planner chose a serial plan" in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rows", "0"], "--rows"),
        (["--workers", "x"], "--workers"),
        (["--repetitions", "1,2"], "--repetitions"),
        (["--out", "/nonexistent/dir/x"], "parent directory"),
        (["--pg-config", "/nonexistent/pg_config"], "pg_config not found"),
        (["--dsn", "host=/nonexistent port=1", "--checksums"], "only apply to a throwaway cluster"),
    ],
)
def test_bad_options(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["parallel-temp", *args])
    except SystemExit as exc:  # argparse errors
        code = int(exc.code or 0)
    assert code != 0
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
