"""pglab parallel-temp end to end on a tiny grid, and its option errors."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

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
    # Equal memory: the default 32MB pool is below the server's 128MB, which stays; the copy prewarmed.
    assert results["server"]["shared_buffers"] == "128MB"
    assert [n for n in results["notes"] if n.startswith("shared_buffers = 128MB, temp_buffers = 32MB: the UNLOGGED "
                                                         "copy") and "prewarmed by" in n], results["notes"]
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


def test_real_sessions_tiny(tmp_path: Path, pg_config_path: str) -> None:
    """The real-session cases: outputs exist, every configuration ran on every case that was not
    skipped, skipped cases say so (never passed), the configurations returned the same rows."""
    out = tmp_path / "pt"
    result = pglab("parallel-temp", "--rows", "20000", "--workers", "2", "--repetitions", "2", "--no-decision",
                   "--session-temp-buffers", "64MB", "--pg-config", pg_config_path, "--out", str(out))
    assert result.returncode == 0, result.stderr
    for name in ("sessions.csv", "sessions_raw.csv", "sessions.png", "summary.md", "section.json"):
        assert (out / name).is_file(), name
    results = json.loads((out / "results.json").read_text())
    sessions = results["sessions"]
    assert sessions["temp_buffers"] == "64MB" and sessions["repetitions"] == 2
    guc_known = sessions["copy_guc_known"]
    with (out / "sessions_raw.csv").open() as f:
        raw = list(csv.DictReader(f))
    ran = {(r["case"], r["query"]) for r in raw}
    expected_cases = {"fresh_ctas", "steps"} | ({"no_copies"} if guc_known else set())
    assert {case for case, _ in ran} == expected_cases
    for case, query in ran:
        runs = [r for r in raw if (r["case"], r["query"]) == (case, query)]
        assert sorted(r["config"] for r in runs) == sorted(["off", "chosen", "forced"] * 2), (case, query)
        assert len({r["digest_first"] for r in runs} | {r["digest_second"] for r in runs}) == 1
        assert all(float(r["first_ms"]) > 0 and float(r["second_ms"]) > 0 for r in runs)
        assert all(r["plan_first"] == "serial" for r in runs if r["config"] == "off")
        assert all(r["plan_first"] == "parallel" for r in runs if r["config"] == "forced")
    fresh = [r for r in raw if r["case"] == "fresh_ctas"]
    assert all(int(r["dirty_before_first"]) > 0 for r in fresh), "a fresh CTAS leaves its pages dirty"
    cases = sessions["cases"]
    assert {(c["case"], c["which"]) for c in cases} >= {("fresh_ctas", "first"), ("steps", "second")}
    assert all(c["same_rows"] for c in cases if c["status"] == "ok")
    summary = (out / "summary.md").read_text()
    assert "## Real sessions" in summary and "Acceptance line" in summary
    stdout = " ".join(result.stdout.split())
    skipped = [c for c in cases if c["status"] == "skipped"]
    if guc_known:
        assert not skipped and sessions["totals"]["cases"] == 3 * 2 * 2
    else:
        # Without the setting the case is skipped, visibly, never counted as passed.
        assert {c["case"] for c in skipped} == {"no_copies"}
        assert all("pg_tempbuf.shared_pool" in c["skipped_reason"] and "faster_chosen" not in c
                   for c in skipped)
        assert "no_copies | 20,000 | cpu_aggregate | first | SKIPPED" in summary
        assert "no_copies, 20,000 rows, cpu_aggregate: SKIPPED" in stdout
        assert sessions["totals"]["skipped"] == 2 and sessions["totals"]["cases"] == 2 * 2 * 2
    for c in cases:
        if c["status"] == "ok":  # every run of a plan counts towards its median: 2 own + chosen's
            assert c["serial_plan_runs"] + c["parallel_plan_runs"] == 3 * 2
    assert not sessions["acceptance"]["measured"]  # 2M rows are not in this run
    section = json.loads((out / "section.json").read_text())
    assert "sessions.png" in section["plots"] and "sessions.csv" in section["raw_data"]
    assert any(t["caption"].startswith("Real sessions") for t in section["tables"])


def test_no_sessions_option() -> None:
    from pglab.cli import build_parser
    from pglab.experiments.parallel_temp.command import options_from

    parser = build_parser()
    default = options_from(parser.parse_args(["parallel-temp"]))
    assert default.sessions and default.session_temp_buffers == "512MB"
    off = options_from(parser.parse_args(["parallel-temp", "--no-sessions", "--session-temp-buffers", "1GB"]))
    assert not off.sessions and off.session_temp_buffers == "1GB"


def session_run(config: str, repetition: int, plan: str, ms: float) -> Any:
    from pglab.experiments.parallel_temp.sessions import SessionRun

    digest = "s" * 16 if plan == "serial" else "p" * 16
    return SessionRun(config, repetition, 100, 100, 0, plan, plan, ms, ms, "rows", "rows", digest, digest)


def test_plans_pool_their_runs() -> None:
    """Each plan's median comes from every run of it: chosen's runs join the configuration that ran
    the same plan.  A planner that picked the slower plan shows that plan's regret."""
    from pglab.experiments.parallel_temp.sessions import SessionCase, SessionResults, case_rows, totals

    runs = [session_run("off", i, "serial", ms) for i, ms in enumerate((20.0, 21.0, 40.0))]
    runs += [session_run("forced", i, "parallel", ms) for i, ms in enumerate((24.0, 25.0, 26.0))]
    runs += [session_run("chosen", i, "parallel", ms) for i, ms in enumerate((23.0, 27.0, 60.0))]
    results = SessionResults("512MB", 3, (1000,), True, 2, [SessionCase("fresh_ctas", 1000, "count", runs=runs)])
    first, second = case_rows(results)
    assert first["serial_plan_ms"] == 21.0 and first["serial_plan_runs"] == 3
    assert first["parallel_plan_ms"] == 25.5 and first["parallel_plan_runs"] == 6  # median of six runs
    assert first["faster"] == "serial" and first["planner"] == "parallel" and not first["faster_chosen"]
    assert first["regret_pct"] == pytest.approx(100 * (25.5 / 21.0 - 1))
    assert first["own_regret_pct"] == pytest.approx(100 * (27.0 / 21.0 - 1))
    assert first["same_plan_diff_pct"] == pytest.approx(100 * (27.0 / 25.0 - 1))
    t = totals([first, second])
    assert t["faster_chosen"] == 0 and t["regret_over_10pct"] == 2
    # Three serial runs against six parallel ones that interleave with them: a miss within noise.
    assert first["plans_differ_p"] > 0.05 and t["misses"] == 2 and t["misses_tied"] == 2
    # Two runs a configuration (--quick) can never show a difference: the miss is not called a tie.
    few = SessionResults("512MB", 2, (1000,), True, 2, [SessionCase("fresh_ctas", 1000, "count", runs=[
        r for r in runs if r.repetition < 2])])
    t = totals(case_rows(few))
    assert t["misses"] == 2 and t["misses_tied"] == 0 and t["misses_untested"] == 2

    # The same case, the planner choosing the serial plan: no regret, whatever chosen's own noise.
    for r in runs:
        if r.config == "chosen":
            r.plan_first = r.plan_second = "serial"
            r.plan_digest_first = r.plan_digest_second = "s" * 16
    first, _ = case_rows(results)
    assert first["faster_chosen"] and first["regret_pct"] == 0.0 and first["serial_plan_runs"] == 6


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rows", "0"], "--rows"),
        (["--workers", "x"], "--workers"),
        (["--repetitions", "1,2"], "--repetitions"),
        (["--out", "/nonexistent/dir/x"], "parent directory"),
        (["--pg-config", "/nonexistent/pg_config"], "pg_config not found"),
        (["--dsn", "host=/nonexistent port=1", "--checksums"], "only apply to a throwaway cluster"),
        (["--shared-buffers", "lots"], "not a size"),
        (["--shared-buffers", "1GB", "--dsn", "host=/nowhere"], "not with --dsn"),
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
