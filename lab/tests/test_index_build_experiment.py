"""pglab index-build, the experiment (pg_tempbuf/tests/test_index_build.py tests the build itself, hence this
file's name): the notices parsed, core's rule, the index check, the workers' memory, the summaries per pool size, the
report's rows, its option errors, and tiny runs end to end."""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import assert_main_fails_in_one_line, run_pglab

from pglab.experiments.index_build import analysis as an
from pglab.experiments.index_build import options as opt
from pglab.experiments.index_build import report as rp
from pglab.experiments.index_build import runner
from pglab.experiments.index_build.analysis import Mode
from pglab.experiments.index_build.command import temp_buffers_list
from pglab.experiments.index_build.options import IndexBuildOptions
from pglab.server import TargetServer

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
           check: an.IndexCheck | None = None, temp_buffers: str = "8MB",
           memory: an.WorkerMemory | None = None) -> an.Build:
    participants = launched + 1 if launched else 0
    return an.Build(temp_buffers=temp_buffers, rows=rows, key=key, mode=str(mode), repetition=repetition, position=0,
                    ms=ms, load_ms=5.0,
                    trace=an.BuildTrace(launched, participants, 100 if mode is Mode.TEMP_PARALLEL else None),
                    table_pages=10, index_bytes=8192 * 3, check=check, memory=memory)


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
    assert {r.temp_buffers for r in ratios.values()} == {"8MB"}
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
    split = an.Ratio("8MB", 1, "int", *an.VS_UNLOGGED, of_medians=1.05, paired=an.Spread(1.2, 1.0, 1.3, 3),
                     differ_p=0.5)
    assert an.goal_verdict(split) == "split"
    assert an.ratio_of(list(ratios.values()), ("8MB", 1000, "int"), an.VS_UNLOGGED) == vs
    assert an.ratio_of(list(ratios.values()), ("1GB", 1000, "int"), an.VS_UNLOGGED) is None
    assert an.summaries([]) == [] and an.ratios([]) == []
    assert math.isnan(an.div(1.0, 0.0))


def test_temp_buffers_list() -> None:
    """--temp-buffers: sizes, ascending by bytes, each once (the first spelling kept)."""
    assert temp_buffers_list("1GB") == ("1GB",)
    assert temp_buffers_list("1GB,8MB") == ("8MB", "1GB")
    assert temp_buffers_list(" 8MB, 1GB ,8192kB,1024MB") == ("8MB", "1GB")
    assert temp_buffers_list("1024") == ("1024",)  # 1024 buffers of 8 kB: 8MB, as PostgreSQL reads it
    assert temp_buffers_list("16MB,1024") == ("1024", "16MB")


def test_rss_anon_kb() -> None:
    status = ("Name:\tpostgres\nVmRSS:\t   20480 kB\nRssAnon:\t    5321 kB\nRssFile:\t   10000 kB\n"
              "RssShmem:\t    5159 kB\n")
    assert an.rss_anon_kb(status) == 5321
    assert an.rss_anon_kb("Name:\tpostgres\nVmRSS:\t   20480 kB\n") is None  # a kernel without the line
    assert an.rss_anon_kb("RssAnon:\tlots\n") is None
    assert an.rss_anon_kb("") is None


def test_peak_tracker() -> None:
    """Each worker's highest RssAnon over the samples; the build's peak is the largest worker's."""
    tracker = an.PeakTracker()
    assert tracker.result() == an.WorkerMemory(workers_seen=0, peaks_kb=(), samples=0)
    tracker.sample([])  # before the workers started
    tracker.sample([(101, 4096), (102, None)])  # 102 listed, its status not readable yet
    tracker.sample([(101, 6144), (102, 3072)])
    tracker.sample([(101, 5120), (102, None)])  # 102 gone: its peak stays
    tracker.sample([(103, None)])  # seen, never read
    memory = tracker.result()
    assert memory == an.WorkerMemory(workers_seen=3, peaks_kb=(6144, 3072), samples=5)
    assert memory.peak_kb == 6144 and memory.peak_mb == 6.0
    unread = an.WorkerMemory(workers_seen=1, peaks_kb=(), samples=2)
    assert unread.peak_kb is None and unread.peak_mb is None


def test_worker_memory_unavailable(tmp_path: Path) -> None:
    """The sampler reads /proc only where the server runs here: else None in every build, and the reason."""
    here = TargetServer("host=/tmp", "throwaway cluster", data_dir=tmp_path)
    remote = TargetServer("host=db.example", "existing server", data_dir=None)
    assert runner.worker_memory_unavailable(here, False, 180000, os.getpid()) == "--no-worker-memory"
    assert "before PostgreSQL 13" in (runner.worker_memory_unavailable(here, True, 120000, os.getpid()) or "")
    assert "not on this machine" in (runner.worker_memory_unavailable(remote, True, 180000, os.getpid()) or "")
    # This test's own process is no postgres backend (another machine's pid that this one reuses, say).
    assert "not readable as a postgres process" in (runner.worker_memory_unavailable(here, True, 180000,
                                                                                     os.getpid()) or "")
    assert runner.proc_status(os.getpid()) is not None and not runner.is_postgres(os.getpid())


def _memory(peak_mb: float | None, seen: int = 1) -> an.WorkerMemory:
    return an.WorkerMemory(workers_seen=seen, peaks_kb=() if peak_mb is None else (int(peak_mb * 1024),), samples=5)


def _two_pools() -> list[an.Build]:
    """Two pool sizes, three rounds each: ours faster at 1GB; the workers' peaks (MiB) per round."""
    times = {("8MB", Mode.TEMP_SERIAL): [100.0, 100.0, 100.0], ("8MB", Mode.TEMP_PARALLEL): [50.0, 50.0, 50.0],
             ("8MB", Mode.UNLOGGED_PARALLEL): [50.0, 50.0, 50.0], ("1GB", Mode.TEMP_SERIAL): [100.0, 100.0, 100.0],
             ("1GB", Mode.TEMP_PARALLEL): [40.0, 40.0, 40.0], ("1GB", Mode.UNLOGGED_PARALLEL): [50.0, 50.0, 50.0]}
    peaks: dict[tuple[str, Mode], list[float | None]] = {("8MB", Mode.TEMP_PARALLEL): [10.0, 30.0, 20.0],
                                                         ("8MB", Mode.UNLOGGED_PARALLEL): [5.0, None, 7.0],
                                                         ("1GB", Mode.TEMP_PARALLEL): [2.0, 3.0, 4.0],
                                                         ("1GB", Mode.UNLOGGED_PARALLEL): [6.0, 6.0, 6.0]}
    builds = []
    for r in range(3):
        for (pool, mode), ms in times.items():
            peak = peaks.get((pool, mode), [None] * 3)[r]
            memory = _memory(peak) if mode in an.PARALLEL_MODES else _memory(None, seen=0)
            builds.append(_build(mode, r, ms[r], launched=1 if mode in an.PARALLEL_MODES else 0, temp_buffers=pool,
                                 memory=memory))
    return builds


def test_summaries_per_pool_and_worker_peak() -> None:
    builds = _two_pools()
    assert an.groups(builds) == [("8MB", 1000, "int"), ("1GB", 1000, "int")]
    found = {(s.temp_buffers, s.mode): s for s in an.summaries(builds)}
    assert list(found) == [(p, m) for p in ("8MB", "1GB") for m in an.MODES[:3]]
    assert all(s.ms.n == 3 for s in found.values())  # each pool's own builds
    ours_8, ours_1 = found[("8MB", Mode.TEMP_PARALLEL)], found[("1GB", Mode.TEMP_PARALLEL)]
    assert ours_8.worker_peak_mb == pytest.approx(20.0) and ours_8.worker_peak_builds == 3
    assert ours_1.worker_peak_mb == pytest.approx(3.0) and ours_1.workers_seen_max == 1
    unlogged = found[("8MB", Mode.UNLOGGED_PARALLEL)]  # one round's worker was not read: the median of two
    assert unlogged.worker_peak_mb == pytest.approx(6.0) and unlogged.worker_peak_builds == 2
    serial = found[("8MB", Mode.TEMP_SERIAL)]
    assert serial.worker_peak_mb is None and serial.worker_peak_builds == 0 and serial.workers_seen_max == 0
    # Not sampled (/proc not readable): None, also for the workers seen.
    unsampled = an.summarize([_build(Mode.TEMP_PARALLEL, 0, 10.0, launched=1)], ("8MB", 1000, "int"),
                             Mode.TEMP_PARALLEL)
    assert unsampled is not None and unsampled.worker_peak_mb is None and unsampled.workers_seen_max is None
    # Ratios pair the rounds of one pool size.
    ratios = {(r.temp_buffers, r.numerator, r.denominator): r for r in an.ratios(builds)}
    assert ratios[("8MB", *an.SPEEDUP)].of_medians == pytest.approx(2.0)
    assert ratios[("1GB", *an.SPEEDUP)].paired.median == pytest.approx(2.5)
    assert ratios[("1GB", *an.VS_UNLOGGED)].paired.high == pytest.approx(0.8)
    assert ("1GB", *an.CORE_SPEEDUP) not in ratios  # no UNLOGGED serial build


def _run(builds: list[an.Build], unavailable: str | None = None) -> an.IndexBuildRun:
    options = IndexBuildOptions(rows=(1000,), keys=("int",), repetitions=3, workers=2, maintenance_work_mem="64MB",
                                temp_buffers=("8MB", "1GB"), out_dir=None, unlogged_serial=False)
    return an.IndexBuildRun(options=options, server={"version": "18.6", "maintenance_work_mem_kb": 65536,
                                                     "min_parallel_table_scan_pages": 1024, "block_size": 8192,
                                                     "temp_buffers_bytes": {"8MB": 8 << 20, "1GB": 1 << 30}},
                            modes=an.MODES[:3], builds=builds, worker_memory_unavailable=unavailable)


def test_report_rows() -> None:
    """The tables have a row per pool size, table size, key and mode, with the worker peak; raw.csv's rows too."""
    run = _run(_two_pools())
    found = an.summaries(run.builds)
    ours = rp.ours_table(run, found)
    assert ours.columns[:4] == ["temp_buffers", "rows", "key", "mode"]
    peak = ours.columns.index(rp.WORKER_PEAK_COLUMN)
    seen = ours.columns.index("workers seen")
    speedup = ours.columns.index("speedup over temp off (x)")
    rows = {(row[0], row[3]): row for row in ours.rows}
    assert list(rows) == [(p, an.LABELS[m]) for p in ("8MB", "1GB") for m in an.MODES[:3]]
    assert rows[("8MB", an.LABELS[Mode.TEMP_PARALLEL])][peak] == 20.0
    assert rows[("1GB", an.LABELS[Mode.TEMP_PARALLEL])][peak] == 3.0
    assert rows[("1GB", an.LABELS[Mode.TEMP_PARALLEL])][speedup] == 2.5  # against temp off at 1GB
    assert rows[("8MB", an.LABELS[Mode.TEMP_SERIAL])][peak] is None
    assert rows[("8MB", an.LABELS[Mode.TEMP_SERIAL])][seen] == 0
    assert "sampled every 10 ms" in (ours.caption or "")
    ratios = rp.ratios_table(run)
    assert [row[0] for row in ratios.rows] == ["8MB", "8MB", "1GB", "1GB"]
    console = rp.console_table(ours, rp.CONSOLE_COLUMNS, "")
    assert console.columns[0] == "temp_buffers" and rp.WORKER_PEAK_COLUMN in console.columns
    raw = rp.raw_row(run.builds[1])
    assert list(raw) == rp.RAW_FIELDS
    assert (raw["temp_buffers"], raw["mode"], raw["worker_peak_mb"], raw["workers_seen"]) == (
        "8MB", "temp_parallel", 10.0, 1)
    notes = rp.notes(run, found)
    assert any(n.startswith("Worker memory (worker peak MiB): the RssAnon line") for n in notes)
    assert any("a session per temp_buffers (8MB, 1GB)" in n for n in notes)
    assert not any("not measured" in n for n in notes)


def test_report_without_proc() -> None:
    """Where /proc cannot be read the worker peak is None, and the notes and the caption say why."""
    builds = [_build(m, r, 10.0, temp_buffers=p) for p in ("8MB", "1GB") for r in range(2) for m in an.MODES[:3]]
    run = _run(builds, unavailable="the server is not on this machine")
    found = an.summaries(builds)
    ours = rp.ours_table(run, found)
    peak = ours.columns.index(rp.WORKER_PEAK_COLUMN)
    assert all(row[peak] is None and row[peak + 1] is None for row in ours.rows)
    assert "not measured (the server is not on this machine)" in (ours.caption or "")
    assert rp.raw_row(builds[0])["worker_peak_mb"] is None and rp.raw_row(builds[0])["workers_seen"] is None
    assert any(n.startswith("Worker memory not measured: the server is not on this machine")
               for n in rp.notes(run, found))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rows", "0"], "--rows"),
        (["--rows", "1000,x"], "not a positive integer"),
        (["--keys", "int,uuid"], "not a key type"),
        (["--repetitions", "x"], "--repetitions"),
        (["--workers", "0"], "--workers"),
        (["--maintenance-work-mem", "lots"], "not a size"),
        (["--temp-buffers", "8MB,lots"], "not a size"),
        (["--temp-buffers", ","], "empty list"),
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
    """--quick at two pool sizes: two table sizes, one under min_parallel_table_scan_size (serial everywhere), one
    over it (one worker at 64MB); temp_buffers 8MB (the default setting: the table is then mostly on file when it is
    indexed, as a table larger than the pool is) and 1GB (the table wholly in the leader's pool), a session per mode
    and size, interleaved; each build's workers sampled for their peak RssAnon."""
    out = tmp_path / "results" / "index-build"
    out.parent.mkdir()
    (small, big), repetitions, pools = opt.QUICK_ROWS, opt.QUICK_REPETITIONS, ("8MB", "1GB")
    result = run_pglab("index-build", "--quick", "--pg-config", pg_config_path, "--temp-buffers", "1GB,8MB",
                       "--out", str(out), timeout=300)
    assert result.returncode == 0, result.stderr
    for name in ("raw.csv", "meta.json", "summary.md", "section.json", "build_time.png", "ratios.png"):
        assert (out / name).is_file(), name
    assert "temp on (ours) / UNLOGGED parallel" in result.stdout

    meta = json.loads((out / "meta.json").read_text())
    # The workers' memory is read where the server's /proc is (a throwaway cluster here, unless /proc is hidden).
    measured = meta["worker_memory"]["unavailable"] is None
    raw = _raw(out)
    assert len(raw) == len(pools) * 2 * 2 * repetitions * len(an.MODES)
    for pool in pools:
        for rows in (small, big):
            for key in ("int", "text"):
                for mode in an.MODES:
                    case = (pool, rows, key, mode)
                    mine = [r for r in raw if (r["temp_buffers"], int(r["rows"]), r["key"], r["mode"]) ==
                            (pool, rows, key, str(mode))]
                    assert sorted(int(r["repetition"]) for r in mine) == list(range(repetitions)), case
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
                    assert all(int(r["workers_requested"]) == (1 if parallel else 0) for r in mine), case
                    assert all(int(r["workers_launched"]) == (1 if parallel else 0) for r in mine), case
                    if parallel and mode is Mode.TEMP_PARALLEL:  # ours wrote the table's pages first (those with
                        # rows: the load's bulk extension leaves a few empty pages at the end, never dirtied), where it
                        # says so
                        assert all(0 < int(r["pages_written"]) <= int(r["table_pages"]) for r in mine
                                   if r["pages_written"])
                    else:
                        assert all(r["pages_written"] == "" for r in mine)
                    # The workers' peak: a number where a worker was read, empty where none ran or /proc is not
                    # readable; the workers seen: at most those launched, empty where not sampled.  A worker of
                    # a build this small may be listed and gone before its status is read: seen, no peak.
                    for r in mine:
                        if not measured:
                            assert r["worker_peak_mb"] == r["workers_seen"] == r["memory_samples"] == "", r
                            continue
                        assert int(r["memory_samples"]) >= 1 and int(r["workers_seen"]) <= int(r["workers_launched"])
                        if r["worker_peak_mb"]:
                            assert float(r["worker_peak_mb"]) > 0 and int(r["workers_seen"]) >= 1, r
                        else:
                            assert int(r["workers_seen"]) <= int(r["workers_launched"]), r
    if measured:  # but in every mode with workers, some build's workers were read
        for mode in an.PARALLEL_MODES:
            assert any(r["worker_peak_mb"] for r in raw if r["mode"] == str(mode) and int(r["rows"]) == big), mode
    # Each round's order rotates over the sessions (a mode at a pool size): a different one first in each round.
    firsts = [(r["temp_buffers"], r["mode"]) for r in raw if r["position"] == "0" and r["rows"] == str(big)
              and r["key"] == "int"]
    assert firsts == [("8MB", str(m)) for m in an.MODES[:repetitions]]

    assert meta["status"] == "ok" and meta["machine"]["cpu_model"] and meta["versions"]["postgresql_major"] >= 15
    assert meta["server"]["pg_tempbuf.parallel_index_build"] == "on"
    assert meta["options"]["rows"] == [small, big] and meta["modes"] == [str(m) for m in an.MODES]
    assert meta["options"]["temp_buffers"] == list(pools)  # ascending, whatever the order given
    assert meta["server"]["shared_buffers"] == "1GB"  # equal memory: the largest temp_buffers
    assert list(meta["session_settings"]) == list(pools)
    for pool in pools:
        settings = meta["session_settings"][pool]
        assert all(s[0] == f"temp_buffers = '{pool}'" and "trace_sort = on" in s for s in settings.values())
        assert "pg_tempbuf.parallel_index_build = off" in settings["temp_serial"]
        assert "max_parallel_maintenance_workers = 0" in settings["unlogged_serial"]
    assert meta["worker_memory"]["interval_ms"] == 10
    summaries = meta["summaries"]
    assert [(s["temp_buffers"], s["rows"], s["key"], s["mode"]) for s in summaries] == [
        (p, r, k, str(m)) for p in pools for r in (small, big) for k in ("int", "text") for m in an.MODES]
    assert all(s["expected_workers"] == s["workers_launched_max"] for s in summaries)
    for s in summaries:
        if not measured:
            assert s["worker_peak_mb"] is None and s["workers_seen_max"] is None, s
        elif s["rows"] == small or s["mode"] not in {str(m) for m in an.PARALLEL_MODES}:
            assert s["worker_peak_mb"] is None and s["workers_seen_max"] == 0, s  # no worker ran
        else:
            assert s["worker_peak_mb"] is None or s["worker_peak_mb"] > 0, s
    if measured:  # the 200,000-row builds last tens of ms: their worker is seen in most
        assert any(s["worker_peak_mb"] for s in summaries)
    assert {r["label"] for r in meta["ratios"]} == set(an.RATIO_LABELS.values())
    assert {r["temp_buffers"] for r in meta["ratios"]} == set(pools)

    section = json.loads((out / "section.json").read_text())
    assert section["experiment"] == "index-build" and section["plots"] == ["build_time.png", "ratios.png"]
    assert section["raw_data"] == ["raw.csv", "meta.json"]
    ours = section["ours"]
    assert [row[:4] for row in ours["rows"]] == [
        [p, r, k, an.LABELS[m]] for p in pools for r in (small, big) for k in ("int", "text") for m in an.MODES]
    peak = ours["columns"].index(rp.WORKER_PEAK_COLUMN)
    assert all(row[peak] is None or row[peak] > 0 for row in ours["rows"])
    assert [row[-1] for row in section["article"]["rows"]] == [0, 1]  # core's rule: no worker, then one
    checks = next(t for t in section["tables"] if t["caption"].startswith("Each index built in the first round"))
    assert len(checks["rows"]) == len(pools) * 2 * 2 * len(an.MODES) and all(row[-1] == "ok" for row in checks["rows"])
    assert section["versions"]["pg_tempbuf"]
    summary = (out / "summary.md").read_text()
    assert "## Ours" in summary and "goal line" in summary and "WARNING" not in summary
    assert "Worker memory (worker peak MiB): the RssAnon line of /proc/<pid>/status" in summary

    page = tmp_path / "report.html"
    report = run_pglab("report", "--results", str(out.parent), "--out", str(page), timeout=120)
    assert report.returncode == 0, report.stderr
    assert "index-build: PostgreSQL" in report.stdout and 'data-experiment="index-build"' in page.read_text()


def test_table_parallel_workers_and_no_unlogged_serial(tmp_path: Path, pg_config_path: str) -> None:
    """The tables' parallel_workers: two workers on a tiny table, whatever maintenance_work_mem; three modes; one
    pool size (the default); the workers' memory not sampled."""
    out = tmp_path / "index-build"
    result = run_pglab("index-build", "--rows", "1000", "--keys", "text", "--repetitions", "1",
                       "--table-parallel-workers", "2", "--no-unlogged-serial", "--no-worker-memory", "--pg-config",
                       pg_config_path, "--out", str(out), timeout=300)
    assert result.returncode == 0, result.stderr
    raw = _raw(out)
    assert [r["mode"] for r in raw] == [str(m) for m in an.MODES[:3]]
    launched = {r["mode"]: int(r["workers_launched"]) for r in raw}
    assert launched == {"temp_serial": 0, "temp_parallel": 2, "unlogged_parallel": 2}
    assert all(r["check_ok"] == "True" for r in raw)
    assert all(r["temp_buffers"] == opt.DEFAULT_TEMP_BUFFERS[0] and r["worker_peak_mb"] == r["workers_seen"] == ""
               for r in raw)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "ok" and meta["options"]["table_parallel_workers"] == 2
    assert meta["options"]["temp_buffers"] == list(opt.DEFAULT_TEMP_BUFFERS)
    assert list(meta["session_settings"]) == list(opt.DEFAULT_TEMP_BUFFERS)
    assert "unlogged_serial" not in meta["session_settings"][opt.DEFAULT_TEMP_BUFFERS[0]]
    assert meta["worker_memory"]["unavailable"] == "--no-worker-memory"
    assert "Worker memory not measured: --no-worker-memory" in (out / "summary.md").read_text()
