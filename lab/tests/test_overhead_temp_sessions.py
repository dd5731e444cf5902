"""`pglab overhead`, sessions with temporary tables (issue 20): schedules, summaries, the EXPLAIN arc in a
callgrind profile, the shared TPC-H loader's SQL, and a tiny end-to-end run."""

import csv
import json
import math
import shutil
from pathlib import Path

import pytest
from helpers import run_pglab

from pglab import tpch_tables
from pglab.experiments.buffered_plan.tpch import tpch_dir
from pglab.experiments.overhead import analysis, callgrind, temp_sessions
from pglab.experiments.overhead.analysis import COLD, OFF, ON, STEADY, UNLOGGED, PlanningCount, PlanningPoint
from pglab.experiments.overhead.analysis import TpchPlanningPoint as Tp
from pglab.report_section import load_section


def test_alternate_rotates_the_order() -> None:
    assert [analysis.alternate((ON, OFF), r) for r in range(3)] == [(ON, OFF), (OFF, ON), (ON, OFF)]
    assert analysis.alternate(("a", "b", "c"), 4) == ("b", "c", "a")


def test_cold_keys_are_distinct_and_pages_apart() -> None:
    keys = temp_sessions.cold_keys(2_000_000, 400)
    assert len(set(keys)) == 400 and min(keys) == 1 and max(keys) <= 2_000_000
    assert min(b - a for a, b in zip(keys, keys[1:], strict=False)) >= 115  # more than a page of rows
    assert temp_sessions.cold_keys(10, 30)[:3] == [1, 2, 3] and max(temp_sessions.cold_keys(10, 30)) <= 10


def test_point_summaries_medians_ratios_and_counts() -> None:
    points = [PlanningPoint("8MB", phase, config, r, ms)
              for phase, on_ms in ((STEADY, [0.02, 0.03, 0.02]), (COLD, [0.2, 0.4, 0.3]))
              for r, (config, ms) in enumerate([(ON, on_ms[0]), (OFF, 0.01), (ON, on_ms[1]), (OFF, 0.01),
                                                 (ON, on_ms[2]), (OFF, 0.02)])]
    points += [PlanningPoint("4GB", STEADY, c, 0, 0.01) for c in (ON, OFF)]
    counts = [PlanningCount("8MB", COLD, ON, 5, 1000.0, 5), PlanningCount("8MB", COLD, OFF, 5, 250.0, 0)]
    summaries = analysis.point_summaries(points, counts)
    assert [(s.temp_buffers, s.phase) for s in summaries] == [("8MB", STEADY), ("8MB", COLD), ("4GB", STEADY)]
    steady, cold, big = summaries
    assert steady.plannings == 3 and steady.median_on_ms == pytest.approx(0.02)
    assert steady.median_off_ms == pytest.approx(0.01) and steady.ratio == pytest.approx(2.0)
    assert steady.on_ir is None and steady.ir_ratio is None
    assert cold.median_on_ms == pytest.approx(0.3) and (cold.on_ir, cold.off_ir, cold.ir_ratio) == (1000, 250, 4)
    assert big.ratio == pytest.approx(1.0)


def test_tpch_planning_summary_sums_the_medians() -> None:
    points = [Tp("q01", UNLOGGED, r, ms) for r, ms in enumerate([1.0, 2.0, 3.0])]
    points += [Tp("q01", OFF, 0, 1.0), Tp("q01", ON, 0, 3.0)]
    points += [Tp("q02", UNLOGGED, 0, 2.0), Tp("q02", OFF, 0, 2.0), Tp("q02", ON, 0, 3.0)]
    points += [Tp("q03", UNLOGGED, 0, 50.0)]  # not in every configuration: left out of the sums
    summary = analysis.tpch_planning_summary(points)
    assert summary is not None and summary.queries == ("q01", "q02", "q03")
    assert summary.median_ms["q01"] == {UNLOGGED: 2.0, OFF: 1.0, ON: 3.0}
    assert math.isnan(summary.median_ms["q03"][ON])
    assert summary.sum_ms == {UNLOGGED: 4.0, OFF: 3.0, ON: 6.0}
    assert summary.on_vs_unlogged == pytest.approx(1.5) and summary.within_limit is True
    assert summary.on_vs_off == pytest.approx(2.0) and summary.off_vs_unlogged == pytest.approx(0.75)
    assert analysis.tpch_planning_summary([]) is None


def test_explain_planning_ms() -> None:
    assert analysis.explain_planning_ms([{"Plan": {}, "Planning Time": 0.125, "Execution Time": 1}]) == 0.125
    with pytest.raises(ValueError):
        analysis.explain_planning_ms([{"Plan": {}}])


# EXPLAIN and a plain query each plan twice; only EXPLAIN's arc counts.
EXPLAIN_PROFILE = """events: Ir
fn=(1) exec_simple_query
0 10
cfn=(2) pg_plan_queries
calls=2 0
0 300
fn=(2)
0 10
cfn=(3) pg_plan_query
calls=2 0
0 280
fn=(4) standard_ExplainOneQuery
0 5
cfn=(3)
calls=2 0
0 900
fn=(3)
0 1180
cfn=(5) take_census
calls=1 0
0 77
fn=(5)
0 77
totals: 2500
"""


def test_explain_planning_ir(tmp_path: Path) -> None:
    path = tmp_path / "callgrind.out.1.1"
    path.write_text(EXPLAIN_PROFILE)
    profile = callgrind.parse(path)
    assert temp_sessions.explain_planning_ir(profile, 2) == 450
    assert profile.calls_to("take_census") == 1
    with pytest.raises(Exception, match="EXPLAIN caller"):
        temp_sessions.explain_planning_ir(profile, 3)
    # A stripped binary: the EXPLAIN caller has no name, but exactly our number of calls.
    path.write_text(EXPLAIN_PROFILE.replace("standard_ExplainOneQuery", "0x00000000004a5e10"))
    assert temp_sessions.explain_planning_ir(callgrind.parse(path), 2) == 450


def test_tpch_tables_sql_is_qualified() -> None:
    schema_sql = (tpch_dir() / "schema.sql").read_text()
    keys_sql = (tpch_dir() / "keys.sql").read_text()
    temp = tpch_tables.create_statements(tpch_tables.Kind.TEMP, None, schema_sql)
    assert len(temp) == len(tpch_tables.TABLES)
    assert temp[0].startswith("CREATE TEMP TABLE pg_temp.region ")
    unlogged = tpch_tables.create_statements(tpch_tables.Kind.UNLOGGED, "s", schema_sql)
    assert all(s.startswith("CREATE UNLOGGED TABLE s.") for s in unlogged)
    keys = tpch_tables.key_statements(tpch_tables.Kind.TEMP, None, keys_sql)
    assert "ALTER TABLE pg_temp.lineitem ADD PRIMARY KEY (l_orderkey, l_linenumber)" in keys
    assert "CREATE INDEX ON pg_temp.orders (o_custkey)" in keys
    assert not any(k.upper() == "ANALYZE" for k in keys) and len(keys) == 10
    assert all(k.startswith(("ALTER TABLE s.", "CREATE INDEX ON s."))
               for k in tpch_tables.key_statements(tpch_tables.Kind.PERMANENT, "s", keys_sql))
    with pytest.raises(ValueError):
        tpch_tables.create_statements(tpch_tables.Kind.UNLOGGED, None, schema_sql)
    assert tpch_tables.search_path(tpch_tables.Kind.TEMP, "s") == "SET search_path = pg_temp, s"
    assert tpch_tables.search_path(tpch_tables.Kind.UNLOGGED, "s") == "SET search_path = s, pg_temp"
    assert [tpch_tables.temp_buffers_for(s) for s in (0.01, 0.5, 1, 10)] == ["2GB", "2GB", "3GB", "21GB"]
    assert len(tpch_tables.QUERIES) == 22 and tpch_tables.query_text("q15").rstrip().endswith("s_suppkey")


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def test_tiny_temp_sessions_run(pg_config_path: str, tmp_path: Path) -> None:
    out = tmp_path / "overhead"
    result = run_pglab("overhead", "--no-tps", "--pg-config", pg_config_path, "--scale", "1", "--queries", "10",
                       "--warmup-queries", "2", "--count-rounds", "1", "--point-rows", "20000",
                       "--point-temp-buffers", "8MB,1GB", "--plannings", "4", "--counted-plannings", "2",
                       "--tpch-scale", "0.01", "--tpch-plannings", "1", "--out", str(out), timeout=600)
    assert result.returncode == 0, result.stderr
    planning = _rows(out / "planning.csv")
    assert len(planning) == 2 * 2 * 2 * 4  # temp_buffers x phases x configs x plannings
    assert {(p["temp_buffers"], p["phase"], p["config"]) for p in planning} == {
        (tb, ph, c) for tb in ("8MB", "1GB") for ph in (STEADY, COLD) for c in (ON, OFF)}
    assert all(float(p["planning_ms"]) > 0 for p in planning)
    tpch = _rows(out / "tpch_planning.csv")
    assert len(tpch) == 22 * 3 and {t["config"] for t in tpch} == {UNLOGGED, OFF, ON}
    summary = json.loads((out / "results.json").read_text())["temp_sessions"]
    assert summary["tpch"]["queries"] == list(tpch_tables.QUERIES)
    assert math.isfinite(summary["tpch"]["on_vs_unlogged"]) and summary["tpch_bytes"]["temp"] > 0
    assert len(summary["point"]) == 4
    counts = _rows(out / "planning_counts.csv")
    if shutil.which("valgrind") is None:
        assert counts == []
    else:
        by_key = {(c["temp_buffers"], c["phase"], c["config"]): c for c in counts}
        assert len(by_key) == 8 and all(float(c["planning_ir"]) > 0 for c in counts)
        # A point lookup cannot pay for a worker (worker_gate.c): its planning prices nothing, so no
        # planning walks the pool, not even the first one after a change (issue 20's cold case did).
        assert [k for k, c in by_key.items() if c["census_calls"] != "0"] == []
        # Nor does a cold planning grow with temp_buffers: about the same in a 1GB pool as in an 8MB
        # one (not 128 times).
        cold = {tb: float(by_key[(tb, COLD, ON)]["planning_ir"]) for tb in ("8MB", "1GB")}
        assert cold["1GB"] < 1.5 * cold["8MB"], cold
        assert len(list((out / "callgrind").glob("point-*.out"))) == 8
    section = load_section(out / "section.json")
    assert "planning.png" in section.plots and "tpch_planning.csv" in section.raw_data
