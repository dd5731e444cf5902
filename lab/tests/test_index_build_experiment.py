"""pglab index-build, the experiment (pg_tempbuf/tests/test_index_build.py tests the build itself, hence this
file's name): the notices parsed, core's rule, the index check, the summaries, its option errors, and tiny runs end
to end."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest
from helpers import assert_main_fails_in_one_line, run_pglab

from pglab.experiments.index_build import analysis as an
from pglab.experiments.index_build.analysis import Mode

# Notices of real builds (PostgreSQL 18, client_min_messages = debug2, trace_sort = on), trimmed of the lines
# that say nothing about workers.
SORT_LINES = [
    ("begin index sort: unique = f, workMem = 32768, randomAccess = f", None),
    ("performsort of worker 0 starting: CPU: user: 0.02 s, system: 0.01 s, elapsed: 0.03 s", None),
    ("worker 0 switching to external sort with 6 tapes: CPU: user: 0.02 s, system: 0.01 s, elapsed: 0.03 s", None),
    ("performsort of worker 1 starting: CPU: user: 0.01 s, system: 0.00 s, elapsed: 0.02 s", None),
    ("performsort of worker 0 done: CPU: user: 0.02 s, system: 0.01 s, elapsed: 0.04 s", None),
    ("parallel external sort of worker 0 ended, 541 disk blocks used: CPU: user: 0.02 s, system: 0.01 s", None),
    ("parallel external sort of worker 1 ended, 194 disk blocks used: CPU: user: 0.02 s, system: 0.00 s", None),
    ("performsort of worker -1 starting: CPU: user: 0.00 s, system: 0.00 s, elapsed: 0.00 s", None),
    ("performsort of worker -1 done (except 2-way final merge): CPU: user: 0.00 s, system: 0.00 s", None),
    ('index "t_idx" can safely use deduplication', None),
]
SERIAL_SORT = [
    ("begin index sort: unique = f, workMem = 65536, randomAccess = f", None),
    ("performsort of worker -1 starting: CPU: user: 0.01 s, system: 0.00 s, elapsed: 0.01 s", None),
    ("internal sort ended, 8402 KB used: CPU: user: 0.02 s, system: 0.00 s, elapsed: 0.02 s", None),
]


def test_parse_trace_of_ours() -> None:
    """Core says serially for a temporary table, then pg_tempbuf asks, and says what it wrote first."""
    trace = an.parse_trace([
        ('building index "t_idx" on table "t" serially', None),
        ('building index "t_idx" on temporary table "t" with request for 1 parallel workers', None),
        ('1667 pages of temporary table "t" written for the workers to read', None),
        *SORT_LINES])
    assert trace == an.BuildTrace(workers_requested=1, sort_participants=2, pages_written=1667)
    assert trace.workers_launched == 1
    # pg_tempbuf's first version said it in the request's detail.
    first = an.parse_trace([
        ('building index "t_idx" on temporary table "t" with request for 1 parallel workers',
         "2500 pages of the table written first, for the workers to read."), *SORT_LINES])
    assert (first.workers_requested, first.pages_written) == (1, 2500)


def test_parse_trace_of_core() -> None:
    parallel = an.parse_trace([('building index "u_idx" on table "u" with request for 2 parallel workers', None),
                               *SORT_LINES])
    assert (parallel.workers_requested, parallel.workers_launched, parallel.pages_written) == (2, 1, None)
    serial = an.parse_trace([('building index "u_idx" on table "u" serially', None), *SERIAL_SORT])
    assert (serial.workers_requested, serial.sort_participants, serial.workers_launched) == (0, 0, 0)
    # Asked for workers, none launched: the build falls back to a serial sort.
    none_launched = an.parse_trace([('building index "u_idx" on table "u" with request for 1 parallel workers',
                                     None), *SERIAL_SORT])
    assert (none_launched.workers_requested, none_launched.workers_launched) == (1, 0)
    assert an.parse_trace([]) == an.BuildTrace(None, 0, None)


def test_core_rule_workers() -> None:
    mwm = 64 * 1024  # kB
    assert an.core_rule_workers(192, 2, mwm, None, 1024) == 0  # under min_parallel_table_scan_size
    assert an.core_rule_workers(1728, 2, mwm, None, 1024) == 1
    assert an.core_rule_workers(8640, 2, 1 << 40, None, 1024) == 2  # by size alone: 2 at three times the minimum
    assert an.core_rule_workers(8640, 2, mwm, None, 1024) == 1  # 64MB: 32MB for each of 2 participants
    assert an.core_rule_workers(8640, 2, 96 * 1024, None, 1024) == 2
    assert an.core_rule_workers(8640, 8, 1 << 40, None, 1024) == 2  # 3072 <= pages < 9216
    assert an.core_rule_workers(20000, 8, 1 << 40, None, 1024) == 3  # 9216 <= pages < 27648
    assert an.core_rule_workers(100, 2, mwm, 2, 1024) == 2  # parallel_workers: size and memory not considered
    assert an.core_rule_workers(100, 1, mwm, 4, 1024) == 1
    assert an.core_rule_workers(1_000_000, 0, mwm, 4, 1024) == 0  # max_parallel_maintenance_workers = 0


def test_index_check() -> None:
    good = an.IndexCheck(1000, 12345, 1000, 12345, "Index Only Scan", "Seq Scan")
    assert good.ok and good.problem(1000) is None
    assert "expected 2,000" in (good.problem(2000) or "")
    wrong = an.IndexCheck(999, 12000, 1000, 12345, "Index Only Scan", "Seq Scan")
    assert not wrong.ok and "through the index count 999" in (wrong.problem(1000) or "")
    unforced = an.IndexCheck(1000, 12345, 1000, 12345, "Seq Scan", "Seq Scan")
    assert not unforced.ok and "not an Index Only Scan" in (unforced.problem(1000) or "")


def test_scan_node() -> None:
    index_only = [{"Plan": {"Node Type": "Aggregate", "Plans": [
        {"Node Type": "Index Only Scan", "Index Name": "ib_temp_serial_idx", "Relation Name": "ib_t"}]}}]
    assert an.scan_node(index_only) == "Index Only Scan"
    custom = {"Plan": {"Node Type": "Aggregate", "Plans": [
        {"Node Type": "Custom Scan", "Custom Plan Provider": "Temp Seq Scan"}]}}
    assert an.scan_node(custom) == "Custom Scan (Temp Seq Scan)"


def _build(mode: Mode, repetition: int, ms: float, launched: int = 0, rows: int = 1000, key: str = "int",
           check: an.IndexCheck | None = None) -> an.Build:
    participants = launched + 1 if launched else 0
    return an.Build(rows=rows, key=key, mode=str(mode), repetition=repetition, position=0, ms=ms, load_ms=5.0,
                    trace=an.BuildTrace(launched, participants, 100 if mode is Mode.TEMP_PARALLEL else None),
                    table_pages=10, index_bytes=8192 * 3, check=check)


def test_summaries_and_ratios() -> None:
    times = {Mode.TEMP_SERIAL: [100.0, 110.0, 90.0], Mode.TEMP_PARALLEL: [50.0, 60.0, 40.0],
             Mode.UNLOGGED_PARALLEL: [50.0, 50.0, 50.0], Mode.UNLOGGED_SERIAL: [100.0, 100.0, 100.0]}
    ok = an.IndexCheck(1000, 1, 1000, 1, "Index Only Scan", "Seq Scan")
    builds = [_build(m, r, times[m][r], launched=1 if m in an.PARALLEL_MODES else 0, check=ok if r == 0 else None)
              for r in range(3) for m in an.MODES]
    builds.append(_build(Mode.TEMP_SERIAL, 0, 30.0, rows=50, key="text"))  # another group, serial alone
    found = an.summaries(builds)
    assert [(s.rows, s.key, s.mode) for s in found][:4] == [(1000, "int", m) for m in an.MODES]
    ours = found[1]
    assert ours.ms.median == 50.0 and (ours.ms.low, ours.ms.high, ours.ms.n) == (40.0, 60.0, 3)
    assert ours.workers_requested == (1,) and ours.launched_label == "1" and ours.requested_label == "1"
    assert ours.pages_written == 100 and ours.checked == 1 and ours.check_failures == 0
    assert found[0].pages_written is None and found[0].launched_label == "0"
    ratios = {(r.rows, r.key, r.numerator, r.denominator): r for r in an.ratios(builds)}
    assert set(ratios) == {(1000, "int", *pair) for pair in an.RATIOS}  # the text group has one mode: no ratio
    speedup = ratios[(1000, "int", *an.SPEEDUP)]
    assert speedup.of_medians == pytest.approx(2.0)
    # Per round: 100/50, 110/60, 90/40.
    assert speedup.paired.median == pytest.approx(2.0) and speedup.paired.high == pytest.approx(2.25)
    assert speedup.label == "temp off / on (ours' speedup)"
    vs = ratios[(1000, "int", *an.VS_UNLOGGED)]
    assert vs.of_medians == pytest.approx(1.0) and vs.paired.low == pytest.approx(0.8)
    assert an.goal_verdict(vs) == "within"
    assert an.goal_verdict(vs, limit=0.5) == "above"
    assert an.goal_verdict(None) == ""
    split = an.Ratio(1, "int", *an.VS_UNLOGGED, of_medians=1.05, paired=an.Spread(1.2, 1.0, 1.3, 3), differ_p=0.5)
    assert an.goal_verdict(split) == "split"
    assert an.ratio_of(list(ratios.values()), 1000, "int", an.VS_UNLOGGED) == vs
    assert an.summaries([]) == [] and an.ratios([]) == []
    assert math.isnan(an.div(1.0, 0.0))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rows", "0"], "--rows"),
        (["--rows", "1000,x"], "not a positive integer"),
        (["--keys", "int,uuid"], "not a key type"),
        (["--repetitions", "x"], "--repetitions"),
        (["--workers", "0"], "--workers"),
        (["--maintenance-work-mem", "lots"], "not a size"),
        (["--temp-buffers", "1GB,2GB"], "one size"),
        (["--table-parallel-workers", "-1"], "--table-parallel-workers"),
        (["--dsn", "host=/nonexistent", "--checksums"], "--checksums"),
        (["--out", "/nonexistent/dir/x"], "parent directory"),
        (["--pg-config", "/nonexistent/pg_config"], "pg_config not found"),
    ],
)
def test_bad_options(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert_main_fails_in_one_line(["index-build", *args], message, capsys)


def _raw(out: Path) -> list[dict[str, Any]]:
    with (out / "raw.csv").open() as f:
        return list(csv.DictReader(f))


def test_end_to_end(tmp_path: Path, pg_config_path: str) -> None:
    """Two sizes, one under min_parallel_table_scan_size (serial everywhere), one over it (one worker at 64MB).
    temp_buffers at its default 8MB: the table is then mostly on file when it is indexed, as a table
    larger than the pool is; wholly dirty in a larger pool, ours builds it serially (its own test)."""
    out = tmp_path / "results" / "index-build"
    out.parent.mkdir()
    small, big, repetitions = 2_000, 130_000, 2
    result = run_pglab("index-build", "--rows", f"{small},{big}", "--repetitions", str(repetitions), "--pg-config",
                       pg_config_path, "--temp-buffers", "8MB", "--out", str(out), timeout=300)
    assert result.returncode == 0, result.stderr
    for name in ("raw.csv", "meta.json", "summary.md", "section.json", "build_time.png", "ratios.png"):
        assert (out / name).is_file(), name
    assert "temp on (ours) / UNLOGGED parallel" in result.stdout

    raw = _raw(out)
    assert len(raw) == 2 * 2 * repetitions * len(an.MODES)
    for rows in (small, big):
        for key in ("int", "text"):
            for mode in an.MODES:
                mine = [r for r in raw if (int(r["rows"]), r["key"], r["mode"]) == (rows, key, str(mode))]
                assert sorted(int(r["repetition"]) for r in mine) == list(range(repetitions)), (rows, key, mode)
                assert all(float(r["ms"]) > 0 and float(r["load_ms"]) > 0 for r in mine)
                assert all(int(r["index_bytes"]) > 0 and int(r["table_pages"]) > 0 for r in mine)
                # The index check: the first round's, through an Index Only Scan, equal to the Seq Scan's.
                first = next(r for r in mine if r["repetition"] == "0")
                assert first["checked"] == "True" and first["check_ok"] == "True", first
                assert first["check_index_node"] == "Index Only Scan" and first["check_seq_node"] == "Seq Scan"
                assert int(first["index_count"]) == int(first["seq_count"]) == rows
                assert first["index_sum"] == first["seq_sum"] != ""
                assert all(r["checked"] == "False" for r in mine if r["repetition"] != "0")
                parallel = rows == big and mode in an.PARALLEL_MODES
                assert all(int(r["workers_requested"]) == (1 if parallel else 0) for r in mine), (rows, key, mode)
                assert all(int(r["workers_launched"]) == (1 if parallel else 0) for r in mine), (rows, key, mode)
                if parallel and mode is Mode.TEMP_PARALLEL:  # ours wrote the table's pages first (those with rows:
                    # the load's bulk extension leaves a few empty pages at the end, never dirtied), where it says so
                    assert all(0 < int(r["pages_written"]) <= int(r["table_pages"]) for r in mine
                               if r["pages_written"])
                else:
                    assert all(r["pages_written"] == "" for r in mine)
    # Each round's order rotates: every mode is first in some round.
    assert {r["mode"] for r in raw if r["position"] == "0" and r["rows"] == str(big) and r["key"] == "int"} == {
        str(m) for m in an.MODES[:repetitions]}

    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "ok" and meta["machine"]["cpu_model"] and meta["versions"]["postgresql_major"] >= 15
    assert meta["server"]["pg_tempbuf.parallel_index_build"] == "on"
    assert meta["options"]["rows"] == [small, big] and meta["modes"] == [str(m) for m in an.MODES]
    assert all("trace_sort = on" in s for s in meta["session_settings"].values())
    assert "pg_tempbuf.parallel_index_build = off" in meta["session_settings"]["temp_serial"]
    assert "max_parallel_maintenance_workers = 0" in meta["session_settings"]["unlogged_serial"]
    assert len(meta["summaries"]) == 2 * 2 * len(an.MODES)
    assert all(s["expected_workers"] == s["workers_launched_max"] for s in meta["summaries"])
    assert {r["label"] for r in meta["ratios"]} == set(an.RATIO_LABELS.values())

    section = json.loads((out / "section.json").read_text())
    assert section["experiment"] == "index-build" and section["plots"] == ["build_time.png", "ratios.png"]
    assert section["raw_data"] == ["raw.csv", "meta.json"]
    assert [row[:3] for row in section["ours"]["rows"][:4]] == [[small, "int", an.LABELS[m]] for m in an.MODES]
    assert [row[-1] for row in section["article"]["rows"]] == [0, 1]  # core's rule: no worker, then one
    checks = next(t for t in section["tables"] if t["caption"].startswith("Each index built in the first round"))
    assert len(checks["rows"]) == 2 * 2 * len(an.MODES) and all(row[-1] == "ok" for row in checks["rows"])
    assert section["versions"]["pg_tempbuf"]
    summary = (out / "summary.md").read_text()
    assert "## Ours" in summary and "goal line" in summary and "WARNING" not in summary

    page = tmp_path / "report.html"
    report = run_pglab("report", "--results", str(out.parent), "--out", str(page), timeout=120)
    assert report.returncode == 0, report.stderr
    assert "index-build: PostgreSQL" in report.stdout and 'data-experiment="index-build"' in page.read_text()


def test_table_parallel_workers_and_no_unlogged_serial(tmp_path: Path, pg_config_path: str) -> None:
    """The tables' parallel_workers: two workers on a tiny table, whatever maintenance_work_mem; three modes."""
    out = tmp_path / "index-build"
    result = run_pglab("index-build", "--rows", "1000", "--keys", "text", "--repetitions", "1",
                       "--table-parallel-workers", "2", "--no-unlogged-serial", "--pg-config", pg_config_path,
                       "--out", str(out), timeout=300)
    assert result.returncode == 0, result.stderr
    raw = _raw(out)
    assert [r["mode"] for r in raw] == [str(m) for m in an.MODES[:3]]
    launched = {r["mode"]: int(r["workers_launched"]) for r in raw}
    assert launched == {"temp_serial": 0, "temp_parallel": 2, "unlogged_parallel": 2}
    assert all(r["check_ok"] == "True" for r in raw)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "ok" and meta["options"]["table_parallel_workers"] == 2
    assert "unlogged_serial" not in meta["session_settings"]
