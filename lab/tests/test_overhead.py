"""`pglab overhead`: callgrind parsing, schedules and summaries, a tiny end-to-end run, bad options."""

import csv
import json
import math
import shutil
from pathlib import Path

import pytest
from helpers import assert_main_fails_in_one_line, run_pglab

from pglab.experiments.overhead import analysis, callgrind, runner
from pglab.experiments.overhead.analysis import Config, TpsPoint
from pglab.pgconfig import PgInstall
from pglab.report_section import load_section

OUTPUTS = {"counts.csv", "tps.csv", "results.json", "summary.md", "meta.json", "section.json",
           "instructions.png", "tps.png"}

# Two functions of a library calling into core, with name compression and a recursive walker.
PROFILE = """# callgrind format
version: 1
pid: 4242
positions: line
events: Ir
summary: 1000

ob=(1) /x/postgres
fl=(1) ???
fn=(1) exec_simple_query
0 100
cfn=(2) pg_plan_queries
calls=3 0
0 600
cob=(2) /x/pg_tempbuf.so
cfn=(3) tb_planner
calls=1 0
0 0

fn=(2)
0 50
cob=(2)
cfn=(3)
calls=3 0
0 550

ob=(2)
fn=(3)
0 30
cob=(1)
cfn=(4) standard_planner
calls=3 0
0 500
cfn=(5) walker'2
calls=6 0
0 20

fn=(5)
+1 20

ob=(1)
fn=(4)
0 500

totals: 1000
"""


def test_callgrind_parse(tmp_path: Path) -> None:
    path = tmp_path / "callgrind.out.4242"
    path.write_text(PROFILE)
    assert callgrind.is_complete(path)
    p = callgrind.parse(path)
    assert (p.pid, p.totals) == (4242, 1000)
    assert p.calls_to("pg_plan_queries") == 3 and p.callers("pg_plan_queries") == {"exec_simple_query": 3}
    assert p.calls_to("tb_planner") == 4  # 3 from pg_plan_queries, 1 from exec_simple_query
    assert p.inclusive("exec_simple_query") == 700 and p.inclusive("pg_plan_queries") == 600
    assert p.inclusive("tb_planner") - p.arc_cost("tb_planner", "standard_planner") == 50
    assert sorted(p.functions_of("pg_tempbuf.so")) == ["tb_planner", "walker'2"]
    assert p.objects["standard_planner"] == "/x/postgres"
    assert callgrind.base_name("walker'2") == "walker"
    path.write_text(PROFILE.replace("totals: 1000\n", ""))
    assert not callgrind.is_complete(path)


def test_schedules_alternate() -> None:
    schedule = runner.tps_schedule(2)
    assert [c for _, c in schedule] == [Config.NONE, Config.SESSION] * 2 + [Config.SESSION, Config.NONE] * 2
    assert [o for o, _ in schedule] == ["AB"] * 4 + ["BA"] * 4
    assert runner.count_schedule(2) == [(0, ""), (0, "pg_tempbuf"), (1, "pg_tempbuf"), (1, "")]


def test_tps_summary_orders_and_pairs() -> None:
    tps = [100.0, 90.0, 80.0, 100.0]  # AB: none 100, session 90; BA: session 80, none 100
    points = [TpsPoint(i, o, c.value, "r", 1, t, 1, None)
              for i, ((o, c), t) in enumerate(zip(runner.tps_schedule(1), tps, strict=True))]
    summary = analysis.tps_summary(points)
    assert summary is not None
    assert summary.ratio_by_order == {"AB": pytest.approx(0.9), "BA": pytest.approx(0.8)}
    assert summary.paired_ratios == [pytest.approx(0.9), pytest.approx(0.8)]
    assert summary.ratio == pytest.approx(85.0 / 100.0)
    assert analysis.tps_summary([]) is None
    assert math.isnan(analysis.instruction_ratio([])) and analysis.within_limit(math.nan) is None


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def test_tiny_run_on_a_throwaway_cluster(pg_config_path: str, tmp_path: Path) -> None:
    out = tmp_path / "overhead"
    result = run_pglab("overhead", "--quick", "--pg-config", pg_config_path, "--scale", "1", "--queries", "40",
                       "--warmup-queries", "5", "--duration", "1", "--no-temp-sessions", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert OUTPUTS <= {p.name for p in out.iterdir()}

    tps = _rows(out / "tps.csv")
    assert [(t["order"], t["config"]) for t in tps] == [
        ("AB", "none"), ("AB", "session"), ("BA", "session"), ("BA", "none")]
    assert all(float(t["tps"]) > 0 for t in tps)
    assert {t["role"] for t in tps if t["config"] == "none"} != {t["role"] for t in tps if t["config"] == "session"}

    summary = json.loads((out / "results.json").read_text())
    assert summary["temp_sessions"] is None and not (out / "planning.csv").exists()
    counts = _rows(out / "counts.csv")
    if shutil.which("valgrind") is None:
        assert counts == [] and summary["instruction_ratio"] is None
    else:
        by_config = {c["config"]: c for c in counts}
        assert set(by_config) == {"none", "session", "shared"}
        none, shared = by_config["none"], by_config["shared"]
        # Two different configurations: the library ran in one backend and not in the other.
        assert (none["shared_preload_libraries"], shared["shared_preload_libraries"]) == ("", "pg_tempbuf")
        assert int(none["library_calls"]) == 0 and int(shared["library_calls"]) == 45
        assert float(none["hook_ir"]) == 0 and float(shared["hook_ir"]) > 0
        assert float(none["query_ir"]) > float(none["plan_ir"]) > 0
        ratio = summary["instruction_ratio"]
        assert isinstance(ratio, float) and math.isfinite(ratio)
        assert ratio == pytest.approx(float(shared["query_ir"]) / float(none["query_ir"]))
        assert "tb_planner" in summary["library_functions"]
        assert len(list((out / "callgrind").iterdir())) == 6

    section = load_section(out / "section.json")
    assert section.experiment == "overhead" and section.plots == ["instructions.png", "tps.png"]
    assert PgInstall.from_pg_config(pg_config_path).version_num // 10000 == section.versions["postgresql_major"]


def test_nothing_to_measure_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert_main_fails_in_one_line(["overhead", "--no-callgrind", "--no-tps", "--no-temp-sessions"],
                                  "nothing to measure", capsys)


def test_bad_temp_buffers_list_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert_main_fails_in_one_line(["overhead", "--point-temp-buffers", "8MB,lots"], "not a size", capsys)
