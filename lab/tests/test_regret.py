"""pglab regret: --quick end to end against a throwaway cluster, the analysis on made-up numbers, option errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers import assert_main_fails_in_one_line, run_pglab

from pglab import report_section as rs
from pglab.cli import main
from pglab.errors import LabError
from pglab.experiments.regret import analysis as an
from pglab.experiments.regret.sessions import LOOP_NAMES
from pglab.experiments.temp_shapes import analysis as shapes_an
from pglab.experiments.temp_shapes.workload import SHAPE_NAMES


def test_quick_end_to_end(tmp_path: Path, pg_config_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "regret"
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"tpch": [{"load": 1, "items": [{"vs_off": 0.01, "vs_unlogged": 0.01}]}]}))
    result = run_pglab("regret", "--quick", "--baseline", str(baseline), "--pg-config", pg_config_path,
                       "--out", str(out), timeout=600)
    assert result.returncode == 0, result.stderr
    for name in ("raw.csv", "plans.csv", "results.json", "summary.md", "section.json", "ratios.png"):
        assert (out / name).is_file(), name
    assert "Worst ratio vs off:" in result.stdout and "Worst ratio vs the UNLOGGED copy:" in result.stdout

    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "ok" and results["server"]["version"] and results["machine"]["cpu_model"]
    assert not results["mismatches"]
    # Every part: the quick run's 2 loads of all 22 TPC-H queries, the five session loops, every shape.
    assert [load["load"] for load in results["tpch"]] == [1, 2]
    for load in results["tpch"]:
        assert [i["item"] for i in load["items"]] == [f"q{i:02d}" for i in range(1, 23)]
        assert all(i["results_equal"] and set(i["median_ms"]) == {"off", "on", "unlogged"} for i in load["items"])
    assert [s["item"] for s in results["sessions"]] == list(LOOP_NAMES)
    assert all(s["results_equal"] for s in results["sessions"])
    assert [s["item"] for s in results["shapes"]] == list(SHAPE_NAMES)
    ratios = results["ratios"]
    assert len(ratios) == 2 * 22 * 2 + len(LOOP_NAMES) + 2 * len(SHAPE_NAMES)
    assert all(isinstance(r["value"], float) and math.isfinite(r["value"]) and r["value"] > 0 for r in ratios)
    assert {r["part"] for r in ratios} == {"tpch", "sessions", "shapes"}
    worst = min(r["value"] for r in ratios if r["reference"] == "off")
    everything = [d for d in results["distributions"] if d["part"] == "all" and d["reference"] == "off"]
    assert len(everything) == 1 and everything[0]["worst"] == pytest.approx(worst)
    assert {d["part"] for d in results["distributions"]} >= {"TPC-H", "TPC-H load 1", "TPC-H load 2",
                                                              "session loops", "shapes", "all"}
    assert len(results["acceptance"]) == 4 and results["baseline"]["vs_off"] == pytest.approx(0.01)
    decisions = results["decisions"]
    assert decisions["items"] == 2 * 22 + len(SHAPE_NAMES) and 0 <= decisions["chosen"] <= decisions["items"]
    assert decisions["lost"]["1"] >= decisions["lost"]["0.95"] >= decisions["lost"]["0.9"]
    assert results["model_error"]["count"] <= decisions["chosen"]
    assert results["acceptance"][-1]["passed"]  # any geomean is above the made-up baseline's 0.01
    # Equal memory: the copy held in shared buffers sized as the temporary tables' pool, prewarmed.
    assert results["server"]["shared_buffers"] == results["tpch_temp_buffers"] == "2GB"
    assert any(n.startswith("shared_buffers = 2GB, temp_buffers = 2GB: the UNLOGGED copy") and "prewarmed by" in n
               for n in results["notes"]), results["notes"]

    section = json.loads((out / "section.json").read_text())
    assert section["experiment"] == "regret" and section["plots"] == ["ratios.png"]
    assert section["ours"]["columns"][:4] == ["part", "vs", "ratios", "worst"]
    # The report renders the section (not "not run yet").
    page = tmp_path / "report.html"
    assert main(["report", "--results", str(tmp_path), "--out", str(page)]) == 0
    capsys.readouterr()
    text = page.read_text()
    assert 'data-experiment="regret"' in text and "not run yet: pglab regret --quick" not in text
    assert "session loops" in text and "data:image/png;base64," in text
    assert rs.load_section(out / "section.json").experiment == "regret"


def _ratio(item: str, value: float, reference: str = "off", part: str = "tpch", load: int | None = 1) -> an.Ratio:
    return an.Ratio(part, item, load, reference, value, value * 10.0, 10.0)


def test_distribution_of_made_up_ratios() -> None:
    values = [0.5, 0.8, 0.92, 1.0, 1.0, 1.1, 1.2, 1.5, 2.0, 4.0]
    ratios = [_ratio(f"q{i:02d}", v) for i, v in enumerate(values, 1)] + [_ratio("nan", math.nan)]
    d = an.distribution(ratios)
    assert d.count == 10  # the nan left out
    assert d.worst == 0.5 and d.worst_where == "tpch q01 (load 1)"
    assert d.p10 == pytest.approx(0.5 + 0.9 * (0.8 - 0.5))  # numpy's linear interpolation
    assert d.median == pytest.approx(1.05)
    assert d.geomean == pytest.approx(math.prod(values) ** (1 / len(values)))
    assert d.below == {"0.9": 2, "0.95": 3}
    empty = an.distribution([])
    assert empty.count == 0 and math.isnan(empty.worst) and empty.below == {"0.9": 0, "0.95": 0}


def test_ratio_convention_and_geomean() -> None:
    assert an.ratio(200.0, 100.0) == 2.0  # off twice as slow as on: on is faster, ratio > 1
    assert an.ratio(100.0, 125.0) == pytest.approx(0.8)
    assert math.isnan(an.ratio(None, 1.0)) and math.isnan(an.ratio(1.0, 0.0)) and math.isnan(an.ratio(math.nan, 1.0))
    assert an.geomean([0.5, 2.0]) == pytest.approx(1.0) and math.isnan(an.geomean([]))
    assert an.MIN_SESSION_RATIO == pytest.approx(1 / 1.05)


def test_session_loop_medians_and_acceptance() -> None:
    from pglab.cli import build_parser
    from pglab.experiments.regret.command import options_from

    loop = an.SessionLoop("point_lookup", "t", "SELECT 1", results={"on": 7, "off": 7})
    for round_, (off, on) in enumerate([(100.0, 104.0), (101.0, 103.0), (150.0, 102.0)]):
        loop.timings += [an.LoopTiming("point_lookup", "off", round_, off, 1000),
                         an.LoopTiming("point_lookup", "on", round_, on, 1000)]
    assert loop.median_ms("off") == 101.0 and loop.median_ms("on") == 103.0 and loop.results_equal
    assert loop.timings[0].us_per_statement == pytest.approx(100.0)
    [r] = an.session_ratios([loop])
    assert r.value == pytest.approx(101 / 103) and r.reference == "off" and r.load is None
    run = an.RegretRun(options=options_from(build_parser().parse_args(["regret", "--quick"])), loops=[loop])
    [check] = an.acceptance(run)
    assert check.passed  # 103/101 = 1.0198 <= 1.05
    loop.timings += [an.LoopTiming("point_lookup", "on", r, 120.0 + r, 1000) for r in (3, 4, 5)]
    [check] = an.acceptance(run)
    assert not check.passed and "point_lookup" in check.detail  # median on 103 -> 112 ms: 112/101 > 1.05
    loop.results["on"] = 8
    assert not loop.results_equal and run.mismatches() == ["sessions point_lookup ({'on': 8, 'off': 7})"]


def test_defaults_and_quick() -> None:
    from pglab.cli import build_parser
    from pglab.experiments.regret.command import options_from

    full = options_from(build_parser().parse_args(["regret"]))
    assert (full.scale, full.loads, full.repetitions, full.rounds, full.iterations) == (0.5, 3, 3, 5, 10_000)
    assert len(full.tpch_queries) == 22 and full.sessions == LOOP_NAMES and full.shapes == SHAPE_NAMES
    assert full.session_temp_buffers == "512MB" and full.workers == 2 and full.session_sizes.big_rows == 500_000
    quick = options_from(build_parser().parse_args(["regret", "--quick", "--no-shapes"]))
    assert quick.scale == 0.01 and quick.iterations < full.iterations and quick.shapes == ()
    assert full.shared_buffers is None  # the TPC-H temp_buffers: the copy held as the temp tables are
    assert options_from(build_parser().parse_args(["regret", "--shared-buffers", "server"])).shared_buffers == "server"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--loads", "0"], "--loads"),
        (["--scale", "-1"], "--scale"),
        (["--tpch-queries", "q99"], "unknown q99"),
        (["--sessions", "nope"], "unknown nope"),
        (["--shapes", "nope"], "unknown nope"),
        (["--no-tpch", "--no-sessions", "--no-shapes"], "nothing to measure"),
        (["--session-temp-buffers", "lots"], "not a size"),
        (["--shared-buffers", "lots"], "not a size"),
        (["--shared-buffers", "1GB", "--dsn", "host=/nowhere"], "not with --dsn"),
        (["--baseline", "/nonexistent.json"], "cannot read"),
        (["--baseline", "/dev/null", "--no-tpch"], "not with --no-tpch"),
        (["--out", "/nonexistent/dir/x"], "parent directory"),
        (["--pg-config", "/nonexistent/pg_config"], "pg_config not found"),
    ],
)
def test_bad_options(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert_main_fails_in_one_line(["regret", *args], message, capsys)


def test_baseline_geomeans_of_both_formats(tmp_path: Path) -> None:
    regret = {"tpch": [{"load": 1, "items": [{"vs_off": 2.0, "vs_unlogged": 1.0}, {"vs_off": 0.5, "vs_unlogged": 4.0}]},
                       {"load": 2, "items": [{"vs_off": 1.0, "vs_unlogged": None}]}]}
    b = an.baseline_from(regret, "r.json")
    assert (b.vs_off, b.vs_unlogged, b.count) == (pytest.approx(1.0), pytest.approx(2.0), 2)
    shapes = {"items": [
        {"part": "tpch", "reference": "unlogged", "speedup_on_vs_off": 1.21, "on_vs_reference": 1.0},
        {"part": "shapes", "reference": "unlogged", "speedup_on_vs_off": 9.0, "on_vs_reference": 9.0}]}
    b = an.baseline_from(shapes, "ts.json")
    assert (b.vs_off, b.count) == (pytest.approx(1.21), 1)
    with pytest.raises(LabError, match="no TPC-H"):
        an.baseline_from({"items": []}, "x")
    # The committed issue-22 run of temp-shapes --tpch-all-temp is a valid baseline.
    committed = Path(__file__).resolve().parents[2] / "docs/results/temp-shapes-alltemp-pg18/results.json"
    if committed.is_file():
        b = an.read_baseline(committed)
        assert b.count == 22 and 0.5 < b.vs_off < 3
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    with pytest.raises(LabError, match="cannot read"):
        an.read_baseline(bad)


def _summary(item: str, off_ms: float, on_ms: float, on_outline: str,
             off_cost: float = 100.0, on_cost: float = 100.0) -> shapes_an.ItemSummary:
    def plan(outline: str, cost: float) -> shapes_an.PlanShape:
        return shapes_an.PlanShape(gather=False, gathers=0, workers_planned=0, workers_launched=0, temp_scans=0,
                                   parallel_temp_scans=0, leader_only=False, scans=(), outline=outline,
                                   execution_ms=0.0, total_cost=cost)
    return shapes_an.ItemSummary(part="tpch", item=item, title=item, configs=("off", "on", "unlogged"),
                                 reference="unlogged", median_ms={"off": off_ms, "on": on_ms, "unlogged": off_ms},
                                 plans={"off": plan("Seq Scan", off_cost), "on": plan(on_outline, on_cost)}, results_equal=True,
                                 mismatches=(), acceptance_vs_reference=False)


def test_decisions_count_plans_of_ours_that_lost() -> None:
    pairs = [
        (1, _summary("q01", 100.0, 50.0, "Gather")),  # ours, won
        (1, _summary("q02", 100.0, 104.0, "Gather")),  # ours, lost by 4%: below 1 only
        (2, _summary("q02", 100.0, 125.0, "Gather")),  # ours, lost by 25%
        (2, _summary("q03", 100.0, 150.0, "Seq Scan")),  # the same plan: noise, not a decision
        (None, _summary("self_join", float("nan"), 10.0, "Gather")),  # no off time: not judged
    ]
    d = an.decisions_of(pairs)
    assert d.items == 4 and d.chosen == 3
    assert d.lost == {"1": 2, "0.95": 1, "0.9": 1}
    assert d.worst == pytest.approx(0.8) and d.worst_where == "tpch q02 (load 2)"
    none = an.decisions_of([])
    assert none.chosen == 0 and math.isnan(none.worst) and none.worst_where == ""


def test_model_error_compares_predicted_and_measured_speedups() -> None:
    items = [
        _summary("q01", 100.0, 50.0, "Gather", off_cost=300.0, on_cost=100.0),  # predicted 3, measured 2
        _summary("q02", 100.0, 125.0, "Gather", off_cost=104.0, on_cost=100.0),  # predicted 1.04, lost: 0.8
        _summary("q03", 100.0, 100.0, "Seq Scan", off_cost=100.0, on_cost=100.0),  # same plan: left out
    ]
    e = an.model_error_of(items)
    assert e.count == 2 and e.quotients == pytest.approx(sorted([2 / 3, 0.8 / 1.04]))
    assert e.median == pytest.approx((2 / 3 + 0.8 / 1.04) / 2)
    assert e.near == {"0.05": (1, 1), "0.1": (1, 1), "0.2": (1, 1)}
    assert an.model_error_of([]).count == 0
