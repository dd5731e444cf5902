"""pglab page-read: EXPLAIN parsing and the summaries, its option errors, and --quick end to end."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest
from helpers import assert_main_fails_in_one_line, run_pglab

from pglab.experiments.page_read import analysis as an
from pglab.experiments.page_read.analysis import Mode


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
    ],
)
def test_bad_options(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert_main_fails_in_one_line(["page-read", *args], message, capsys)


def test_quick_end_to_end(tmp_path: Path, pg_config_path: str) -> None:
    out = tmp_path / "results" / "page-read"
    out.parent.mkdir()
    result = run_pglab("page-read", "--quick", "--pg-config", pg_config_path, "--out", str(out), timeout=300)
    assert result.returncode == 0, result.stderr
    for name in ("raw.csv", "workers.csv", "results.json", "summary.md", "section.json", "page_read.png"):
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

    section = json.loads((out / "section.json").read_text())
    assert section["experiment"] == "page-read" and section["plots"] == ["page_read.png"]
    assert [row[0] for row in section["ours"]["rows"]] == ["in place", "file", "shared hit"]
    assert all(row[1] > 0 for row in section["ours"]["rows"])  # µs/page medians
    assert section["machine"]["cpu_model"] and section["versions"]["postgresql_major"] >= 15
    assert section["versions"]["pg_tempbuf"]  # the extension version, and when its library was built

    page = tmp_path / "report.html"
    report = run_pglab("report", "--results", str(out.parent), "--out", str(page), timeout=120)
    assert report.returncode == 0, report.stderr
    assert "page-read: PostgreSQL" in report.stdout and 'data-experiment="page-read"' in page.read_text()
