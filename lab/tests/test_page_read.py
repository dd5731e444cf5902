"""pglab page-read: EXPLAIN parsing and the summaries, its option errors, and --quick end to end."""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import assert_main_fails_in_one_line, run_pglab

from pglab.experiments.page_read import analysis as an
from pglab.experiments.page_read.analysis import Mode, Pool


def _worker(number: int, ms: float, **buffers: int) -> dict[str, Any]:
    return {"Worker Number": number, "Actual Startup Time": 0.01, "Actual Total Time": ms, "Actual Rows": 10.0,
            "Actual Loops": 1, **buffers}


def _plan(scan: dict[str, Any], planned: int = 2, launched: int = 2) -> list[dict[str, Any]]:
    partial = {"Node Type": "Aggregate", "Partial Mode": "Partial", "Plans": [scan]}
    gather = {"Node Type": "Gather", "Workers Planned": planned, "Workers Launched": launched, "Plans": [partial]}
    return [{"Plan": {"Node Type": "Aggregate", "Partial Mode": "Finalize", "Plans": [gather]},
             "Execution Time": 12.5}]


def temp_scan(**fields: Any) -> dict[str, Any]:
    return {"Node Type": "Custom Scan", "Custom Plan Provider": "Temp Seq Scan", "Parallel Aware": True,
            "Relation Name": "page_read_t", "Page Source": "leader's pool, file", "Pages Flushed": 0,
            "Flush Time": 0.0, "Pages Read": "leader=0 worker 0=3000 worker 1=1000",
            "Pages From Leader's Pool": "leader=0 worker 0=3000 worker 1=1000",
            "Workers": [_worker(0, 3.0), _worker(1, 2.0)], **fields}


def test_parse_participants() -> None:
    assert an.parse_participants("leader=0 worker 0=1520 worker 1=2480") == {
        "leader": 0, "worker 0": 1520, "worker 1": 2480}
    assert an.worker_counts("leader=7 worker 1=4000") == {1: 4000}
    assert an.parse_participants(None) == {} and an.worker_counts("") == {}


def test_scan_read_of_a_temp_seq_scan() -> None:
    read = an.scan_read(_plan(temp_scan()))
    assert read.node == "Temp Seq Scan" and read.parallel_aware
    assert (read.workers_planned, read.workers_launched) == (2, 2)
    assert [(w.worker, w.pages, w.ms) for w in read.workers] == [(0, 3000, 3.0), (1, 1000, 2.0)]
    assert read.workers[0].us_per_page == pytest.approx(1.0) and read.workers[1].us_per_page == pytest.approx(2.0)
    assert read.worker_pages == 4000 and read.leader_pages == 0
    assert read.us_per_page == pytest.approx(1000 * 5.0 / 4000)  # pages-weighted: all time over all pages
    assert read.pages_flushed == 0 and read.pages_from_pool == 4000 and read.page_source == "leader's pool, file"
    assert read.execution_ms == 12.5
    an.check_plan(read, Mode.IN_PLACE)


def test_a_worker_that_read_nothing_is_left_out() -> None:
    """A worker that started after the others had taken every page: its time is not a page's."""
    read = an.scan_read(_plan(temp_scan(**{"Pages Read": "leader=0 worker 1=4000",
                                           "Pages From Leader's Pool": "leader=0 worker 1=4000",
                                           "Workers": [_worker(0, 0.001), _worker(1, 4.0)]})))
    assert [(w.worker, w.pages) for w in read.workers] == [(0, 0), (1, 4000)]
    assert math.isnan(read.workers[0].us_per_page)
    assert read.worker_ms == 4.0 and read.us_per_page == pytest.approx(1.0)


def test_the_file_mode_has_no_pool_pages() -> None:
    scan = temp_scan(**{"Page Source": "file (pg_tempbuf.shared_pool is off)", "Pages Flushed": 0})
    del scan["Pages From Leader's Pool"]
    read = an.scan_read(_plan(scan))
    assert read.pages_from_pool == 0 and read.page_source is not None and read.page_source.startswith("file")


def test_scan_read_of_a_stock_parallel_seq_scan() -> None:
    scan = {"Node Type": "Seq Scan", "Parallel Aware": True, "Relation Name": "page_read_u",
            "Shared Hit Blocks": 4000, "Shared Read Blocks": 0,
            "Workers": [_worker(0, 6.0, **{"Shared Hit Blocks": 2990, "Shared Read Blocks": 10}),
                        _worker(1, 2.0, **{"Shared Hit Blocks": 1000, "Shared Read Blocks": 0})]}
    read = an.scan_read(_plan(scan))
    assert read.node == "Seq Scan" and read.pages_flushed is None and read.pages_from_pool is None
    assert [(w.worker, w.pages) for w in read.workers] == [(0, 3000), (1, 1000)]
    assert read.us_per_page == pytest.approx(2.0) and read.shared_hit == 4000 and read.leader_pages == 0
    an.check_plan(read, Mode.SHARED_HIT)
    with pytest.raises(an.PlanError, match="Temp Seq Scan"):
        an.check_plan(read, Mode.FILE)


def test_plans_the_benchmark_refuses() -> None:
    serial = [{"Plan": {"Node Type": "Aggregate", "Plans": [
        {"Node Type": "Seq Scan", "Parallel Aware": False, "Relation Name": "page_read_u"}]}, "Execution Time": 1.0}]
    with pytest.raises(an.PlanError, match="serial"):
        an.check_plan(an.scan_read(serial), Mode.SHARED_HIT)
    with pytest.raises(an.PlanError, match="no worker launched"):
        an.check_plan(an.scan_read(_plan(temp_scan(**{"Pages Read": "leader=4000", "Workers": []}), launched=0)),
                      Mode.IN_PLACE)
    with pytest.raises(an.PlanError, match="VERBOSE"):  # pages counted, but no per-worker time
        an.scan_read(_plan(temp_scan(Workers=[])))


def _sample(mode: Mode, repetition: int, wall_ms: float, us_per_page: float) -> an.Sample:
    read = an.ScanRead(node="Seq Scan" if mode is Mode.SHARED_HIT else "Temp Seq Scan", parallel_aware=True,
                       workers_planned=2, workers_launched=2,
                       workers=(an.WorkerRead(0, 1000, us_per_page), an.WorkerRead(1, 1000, us_per_page)),
                       leader_pages=0, execution_ms=wall_ms - 1,
                       pages_flushed=None if mode is Mode.SHARED_HIT else 0,
                       pages_from_pool=2000 if mode is Mode.IN_PLACE else None)
    return an.Sample(str(mode), repetition, wall_ms, read)


def test_summaries_and_ratios() -> None:
    per_page = {Mode.IN_PLACE: [0.5, 0.6, 0.4], Mode.FILE: [3.0, 2.0, 4.0], Mode.SHARED_HIT: [1.0, 1.0, 2.0]}
    wall = {Mode.IN_PLACE: [10.0, 11.0, 12.0], Mode.FILE: [20.0, 22.0, 30.0], Mode.SHARED_HIT: [10.0, 10.0, 20.0]}
    samples = [_sample(m, r, wall[m][r], per_page[m][r]) for r in range(3) for m in an.MODES]
    found = an.summaries(samples)
    assert list(found) == list(an.MODES)
    in_place = found[Mode.IN_PLACE]
    assert in_place.us_per_page.median == pytest.approx(0.5)
    assert in_place.us_per_page.low == pytest.approx(0.4) and in_place.us_per_page.high == pytest.approx(0.6)
    assert in_place.wall_ms.median == 11.0 and in_place.worker_pages == 2000 and in_place.pages_from_pool == 2000
    assert found[Mode.SHARED_HIT].pages_flushed == 0 and found[Mode.SHARED_HIT].workers_launched == 2
    ratios = {(r.numerator, r.denominator): r for r in an.ratios(samples)}
    assert set(ratios) == set(an.RATIOS)
    file_vs_shared = ratios[(Mode.FILE, Mode.SHARED_HIT)]
    assert file_vs_shared.us_per_page == pytest.approx(3.0) and file_vs_shared.wall == pytest.approx(2.2)
    # Per round: 3/1, 2/1, 4/2 -> median 2, min 2, max 3.
    assert file_vs_shared.paired_us_per_page.median == pytest.approx(2.0)
    assert file_vs_shared.paired_us_per_page.low == pytest.approx(2.0)
    assert file_vs_shared.paired_us_per_page.high == pytest.approx(3.0)
    assert ratios[(Mode.IN_PLACE, Mode.SHARED_HIT)].label == "in place / shared hit"
    assert an.summaries([]) == {} and an.ratios([]) == []


def _serial_plan(scan: dict[str, Any], gather: bool = False) -> list[dict[str, Any]]:
    node: dict[str, Any] = {"Node Type": "Aggregate", "Plans": [scan]}
    if gather:
        node = {"Node Type": "Gather", "Workers Planned": 2, "Workers Launched": 2, "Plans": [node]}
    return [{"Plan": {"Node Type": "Aggregate", "Plans": [node]} if gather else node,
             "Planning": {"Shared Hit Blocks": 12}, "Execution Time": 30.5}]


def seq_scan(**fields: Any) -> dict[str, Any]:
    return {"Node Type": "Seq Scan", "Parallel Aware": False, "Relation Name": "serial_t", "Shared Hit Blocks": 0,
            "Shared Read Blocks": 0, "Local Hit Blocks": 1728, "Local Read Blocks": 0, **fields}


def test_serial_scan_of_a_plain_seq_scan() -> None:
    scan = an.serial_scan(_serial_plan(seq_scan()))
    assert (scan.node, scan.relation, scan.parallel_aware, scan.gathers) == ("Seq Scan", "serial_t", False, 0)
    assert (scan.local_hit, scan.local_read, scan.shared_hit, scan.shared_read) == (1728, 0, 0, 0)
    assert scan.execution_ms == 30.5  # the planning's shared hits are not the scan's
    an.check_serial(scan, Pool.SHARED)
    an.check_serial(scan, Pool.PRIVATE)


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        (_serial_plan(seq_scan(**{"Parallel Aware": True}), gather=True), "parallel Seq Scan under 1 Gather"),
        (_serial_plan(temp_scan(**{"Parallel Aware": False})), r"Custom Scan \(Temp Seq Scan\)"),
        (_serial_plan(seq_scan(**{"Local Read Blocks": 12})), "12 local reads"),
        (_serial_plan(seq_scan(**{"Local Hit Blocks": 0, "Shared Hit Blocks": 5})), "0 local hits"),
    ],
)
def test_serial_plans_the_benchmark_refuses(plan: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(an.PlanError, match=message):
        an.check_serial(an.serial_scan(plan), Pool.SHARED)


def test_serial_scan_needs_one_scan() -> None:
    two = [{"Plan": {"Node Type": "Append", "Plans": [seq_scan(), seq_scan()]}, "Execution Time": 1.0}]
    with pytest.raises(an.PlanError, match="found 2"):
        an.serial_scan(two)


MAPS = """\
55d0c0a00000-55d0c0e00000 r-xp 00000000 08:01 1234   /usr/lib/postgresql/bin/postgres
7f3a10000000-7f3a14002000 rw-s 00000000 00:01 5678   /memfd:pg_tempbuf local buffers (deleted)
7f3a20000000-7f3a20100000 rw-s 00000000 00:01 9999   /dev/zero (deleted)
7ffd0000-7ffd1000 rw-p 00000000 00:00 0              [stack]
"""


def test_pool_mapping_from_proc_maps() -> None:
    mapping = an.pool_mapping(MAPS)
    assert mapping.checked and mapping.mapped and mapping.bytes == 0x4002000
    assert "7f3a10000000-7f3a14002000" in mapping.detail and "/dev/zero" not in mapping.detail
    assert mapping.label == "yes, 64 MiB"
    private = an.pool_mapping("\n".join(line for line in MAPS.splitlines() if "memfd" not in line))
    assert private.checked and private.mapped is False and private.bytes == 0 and private.label == "no"
    unchecked = an.unchecked_mapping("/proc/12/maps not readable: Permission denied")
    assert not unchecked.checked and unchecked.mapped is None and unchecked.label == "not checked"


def test_memory_kb_from_proc_status() -> None:
    status = "Name:\tpostgres\nVmRSS:\t   28324 kB\nRssAnon:\t    3488 kB\nRssFile:\t   0 kB\n" \
             "RssShmem:\t   24836 kB\nThreads:\t1\n"
    assert an.memory_kb(status) == {"VmRSS": 28324, "RssAnon": 3488, "RssFile": 0, "RssShmem": 24836}
    assert an.memory_kb("") == {}


def _check(pool: Pool, mapped: bool | None) -> an.SerialCheck:
    mapping = an.unchecked_mapping("not here") if mapped is None else an.pool_mapping(MAPS if mapped else "")
    return an.SerialCheck(str(pool), 42, 30.0, an.serial_scan(_serial_plan(seq_scan())), mapping, {})


def test_mapping_warnings() -> None:
    assert an.mapping_warnings([_check(Pool.SHARED, True), _check(Pool.PRIVATE, False)]) == []
    assert an.mapping_warnings([_check(Pool.SHARED, None), _check(Pool.PRIVATE, None)]) == []  # not checked
    warnings = an.mapping_warnings([_check(Pool.SHARED, False), _check(Pool.PRIVATE, True)])
    assert len(warnings) == 2 and "does not map" in warnings[0] and " maps " in warnings[1]


def test_pool_order_alternates() -> None:
    assert an.pool_order(0) == (Pool.SHARED, Pool.PRIVATE) and an.pool_order(1) == (Pool.PRIVATE, Pool.SHARED)
    assert an.pool_order(2) == an.pool_order(0)


def _serial_samples(pool_ms: list[float], private_ms: list[float]) -> list[an.SerialSample]:
    out = []
    times = {Pool.SHARED: pool_ms, Pool.PRIVATE: private_ms}
    for repetition in range(len(pool_ms)):
        for position, pool in enumerate(an.pool_order(repetition)):
            out.append(an.SerialSample(str(pool), repetition, position, times[pool][repetition]))
    return out


def test_serial_spreads_and_ratio() -> None:
    samples = _serial_samples([101.0, 99.0, 110.0, 100.0], [100.0, 100.0, 100.0, 80.0])
    spreads = an.serial_spreads(samples)
    assert spreads[Pool.SHARED].median == pytest.approx(100.5) and spreads[Pool.SHARED].low == 99.0
    assert spreads[Pool.PRIVATE].median == pytest.approx(100.0) and spreads[Pool.PRIVATE].high == 100.0
    assert an.serial_paired(samples) == pytest.approx([1.01, 0.99, 1.1, 1.25])
    assert an.serial_rounds(samples) == [0, 1, 2, 3]
    ratio = an.serial_ratio(samples)
    assert ratio is not None
    assert ratio.of_medians == pytest.approx(1.005)
    # Per round 1.01, 0.99, 1.10, 1.25: median 1.055, min 0.99, max 1.25.
    assert ratio.paired.median == pytest.approx(1.055) and ratio.paired.low == pytest.approx(0.99)
    assert ratio.paired.high == pytest.approx(1.25) and ratio.paired.n == 4
    assert 0 < ratio.differ_p <= 1
    # Firsts: pool 101 (round 0), private 100 (1), pool 110 (2), private 80 (3): median 100.5; seconds 100, 99,
    # 100, 100: median 100.
    assert ratio.first_second == pytest.approx(1.005)
    assert ratio.meets(1.02) is None and ratio.verdict(1.02) == "undecided"  # the two estimates split
    assert ratio.meets(1.1) is True and ratio.verdict(1.1) == "met"
    assert ratio.meets(1.0) is False and ratio.verdict(1.0) == "not met"


def test_serial_ratio_needs_both_sessions() -> None:
    assert an.serial_ratio([]) is None and an.serial_spreads([]) == {}
    only_pool = [an.SerialSample(str(Pool.SHARED), 0, 0, 10.0)]
    assert an.serial_ratio(only_pool) is None and an.serial_paired(only_pool) == []
    unfinished = _serial_samples([10.0, 10.0], [10.0, 10.0])[:3]  # the last round timed one session
    assert an.serial_paired(unfinished) == [1.0] and an.serial_rounds(unfinished) == [0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pages", "0"], "--pages"),
        (["--repetitions", "x"], "--repetitions"),
        (["--workers", "0"], "--workers"),
        (["--temp-buffers", "lots"], "not a size"),
        (["--shared-buffers", "1GB,2GB"], "one size"),
        (["--dsn", "host=/nonexistent", "--shared-buffers", "1GB"], "--shared-buffers only applies"),
        (["--dsn", "host=/nonexistent", "--checksums"], "--checksums"),
        (["--out", "/nonexistent/dir/x"], "parent directory"),
        (["--pg-config", "/nonexistent/pg_config"], "pg_config not found"),
        (["--serial-rows", "0"], "--serial-rows"),
        (["--serial-repetitions", "-1"], "--serial-repetitions"),
        (["--serial-temp-buffers", "8MB,16MB"], "one size"),
        (["--no-serial", "--serial-rows", "1000"], "--serial-rows only applies to the serial part"),
    ],
)
def test_bad_options(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert_main_fails_in_one_line(["page-read", *args], message, capsys)


def test_quick_end_to_end(tmp_path: Path, pg_config_path: str) -> None:
    out = tmp_path / "results" / "page-read"
    out.parent.mkdir()
    result = run_pglab("page-read", "--quick", "--pg-config", pg_config_path, "--out", str(out), timeout=300)
    assert result.returncode == 0, result.stderr
    for name in ("raw.csv", "workers.csv", "results.json", "summary.md", "section.json", "page_read.png",
                 "serial.csv", "serial_scan.png"):
        assert (out / name).is_file(), name

    with (out / "raw.csv").open() as f:
        raw = list(csv.DictReader(f))
    results = json.loads((out / "results.json").read_text())
    repetitions = results["options"]["repetitions"]
    assert len(raw) == 3 * repetitions
    for mode in an.MODES:
        rows = [r for r in raw if r["mode"] == str(mode)]
        assert len(rows) == repetitions and {int(r["repetition"]) for r in rows} == set(range(repetitions))
        assert all(float(r["us_per_page"]) > 0 and float(r["wall_ms"]) > 0 for r in rows), mode
        assert all(int(r["worker_pages"]) == results["table"]["pages"] for r in rows), mode  # only workers read
        assert all(int(r["workers_launched"]) > 0 and int(r["leader_pages"]) == 0 for r in rows), mode
    in_place = [r for r in raw if r["mode"] == "in_place"]
    assert all(int(r["pages_from_pool"]) > 0 and int(r["pages_flushed"]) == 0 for r in in_place)
    file = [r for r in raw if r["mode"] == "file"]
    assert all(r["page_source"].startswith("file") and int(r["pages_flushed"]) == 0 for r in file)
    shared = [r for r in raw if r["mode"] == "shared_hit"]
    assert all(int(r["shared_read"]) == 0 and int(r["shared_hit"]) > 0 for r in shared)

    assert results["status"] == "ok" and results["server"]["version"] and results["machine"]["cpu_model"]
    assert results["table"]["rows_per_page"] == 1.0
    assert set(results["modes"]) == {str(m) for m in an.MODES}
    assert all(results["modes"][m]["us_per_page"]["median"] > 0 for m in results["modes"])
    assert {r["label"] for r in results["ratios"]} == {"in place / shared hit", "file / shared hit",
                                                       "file / in place"}
    file_prep = next(p for p in results["preparations"] if p["mode"] == "file")
    assert file_prep["flushed_before"] >= results["table"]["pages"]  # the load's dirty pages written before timing

    # The serial part: both sessions timed every round, a plain Seq Scan of local hits, the pool mapped in one only.
    serial = results["serial"]
    serial_repetitions = results["options"]["serial_repetitions"]
    with (out / "serial.csv").open() as f:
        serial_raw = list(csv.DictReader(f))
    assert len(serial_raw) == 2 * serial_repetitions
    assert all(float(r["wall_ms"]) > 0 for r in serial_raw)
    for pool in ("pool", "private"):
        rows = [r for r in serial_raw if r["session"] == pool]
        assert {int(r["repetition"]) for r in rows} == set(range(serial_repetitions)), pool
        assert {int(r["position"]) for r in rows} == {0, 1}, pool  # the order alternates
        assert serial["sessions"][pool]["median"] > 0 and serial["sessions"][pool]["n"] == serial_repetitions
    checks = {c["session"]: c for c in serial["checks"]}
    assert set(checks) == {"pool", "private"}
    pages = serial["table"]["pool"]["pages"]
    assert pages > 0 and serial["table"]["private"]["pages"] == pages
    for pool, check in checks.items():
        scan = check["scan"]
        assert scan["node"] == "Seq Scan" and scan["gathers"] == 0 and not scan["parallel_aware"], pool
        assert scan["local_hit"] == pages and scan["local_read"] == 0, pool
    if os.geteuid() == 0:  # root reads any backend's /proc/<pid>/maps (as does the server's own user)
        assert checks["pool"]["mapping"]["checked"] and checks["private"]["mapping"]["checked"]
    if checks["pool"]["mapping"]["checked"]:
        assert checks["pool"]["mapping"]["mapped"] and checks["pool"]["mapping"]["bytes"] >= pages * 8192
    if checks["private"]["mapping"]["checked"]:
        assert checks["private"]["mapping"]["mapped"] is False
    assert serial["warnings"] == []
    ratio = serial["ratio"]
    assert ratio["of_medians"] > 0 and ratio["paired"]["median"] > 0 and ratio["paired"]["n"] == serial_repetitions
    assert ratio["acceptance"] in ("met", "not met", "undecided")

    section = json.loads((out / "section.json").read_text())
    assert section["experiment"] == "page-read" and section["plots"] == ["page_read.png", "serial_scan.png"]
    assert "serial.csv" in section["raw_data"]
    serial_tables = [t for t in section["tables"] if t["caption"].startswith("The leader's own serial scan")]
    assert len(serial_tables) == 1
    assert [row[0] for row in serial_tables[0]["rows"]] == [an.POOL_LABELS[Pool.SHARED], an.POOL_LABELS[Pool.PRIVATE]]
    assert all(row[1] > 0 for row in serial_tables[0]["rows"])  # wall ms medians
    ratio_row = next(t for t in section["tables"] if t["caption"].startswith("The serial scan, pool / private"))["rows"]
    assert ratio_row[0][0] == "pool / private" and ratio_row[0][1] > 0
    assert "The leader's own serial scan" in (out / "summary.md").read_text()
    assert [row[0] for row in section["ours"]["rows"]] == ["in place", "file", "shared hit"]
    assert all(row[1] > 0 for row in section["ours"]["rows"])  # µs/page medians
    assert section["machine"]["cpu_model"] and section["versions"]["postgresql_major"] >= 15
    assert section["versions"]["pg_tempbuf"]  # the extension version, and when its library was built

    page = tmp_path / "report.html"
    report = run_pglab("report", "--results", str(out.parent), "--out", str(page), timeout=120)
    assert report.returncode == 0, report.stderr
    assert "page-read: PostgreSQL" in report.stdout and 'data-experiment="page-read"' in page.read_text()


def test_no_serial_end_to_end(tmp_path: Path, pg_config_path: str) -> None:
    """--no-serial: the parallel part alone, no serial output anywhere."""
    out = tmp_path / "page-read"
    result = run_pglab("page-read", "--no-serial", "--pages", "1000", "--repetitions", "2", "--pg-config",
                       pg_config_path, "--out", str(out), timeout=300)
    assert result.returncode == 0, result.stderr
    assert not (out / "serial.csv").exists() and not (out / "serial_scan.png").exists()
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "ok" and results["serial"] is None and not results["options"]["serial"]
    section = json.loads((out / "section.json").read_text())
    assert section["plots"] == ["page_read.png"] and "serial.csv" not in section["raw_data"]
    assert not any("serial" in t["caption"] for t in section["tables"])
