"""pglab temp-shapes end to end with --quick against a throwaway cluster, and its option errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from helpers import assert_main_fails_in_one_line, run_pglab

from pglab.experiments.temp_shapes.analysis import plan_shape
from pglab.experiments.temp_shapes.workload import SHAPE_NAMES


def test_quick_end_to_end(tmp_path: Path, pg_config_path: str) -> None:
    out = tmp_path / "ts"
    result = run_pglab("temp-shapes", "--quick", "--tpch-queries", "q02,q05", "--pg-config", pg_config_path,
                       "--out", str(out), timeout=600)
    assert result.returncode == 0, result.stderr
    for name in ("raw.csv", "plans.csv", "results.json", "summary.md", "section.json",
                 "shapes_speedup.png", "tpch.png"):
        assert (out / name).is_file(), name

    with (out / "raw.csv").open() as f:
        raw = list(csv.DictReader(f))
    shapes = {(r["item"], r["config"]) for r in raw if r["part"] == "shapes"}
    assert shapes == {(s, c) for s in SHAPE_NAMES for c in ("off", "on", "unlogged")}
    tpch = {(r["item"], r["config"]) for r in raw if r["part"] == "tpch"}
    assert tpch == {(q, c) for q in ("q02", "q05") for c in ("off", "on", "permanent")}
    assert len(raw) == (len(SHAPE_NAMES) + 2) * 3 * 2  # items x configs x --quick repetitions
    assert all(float(r["ms"]) > 0 for r in raw)

    with (out / "plans.csv").open() as f:
        plans = list(csv.DictReader(f))
    assert len(plans) == (len(SHAPE_NAMES) + 2) * 3
    # Every configuration of an item returned the same rows (the digests are order-independent).
    for item in {p["item"] for p in plans}:
        digests = {p["digest"] for p in plans if p["item"] == item}
        assert len(digests) == 1, item
    # pg_tempbuf off gives stock plans: no Temp Seq Scan anywhere.
    assert all(p["temp_scans"] == "0" for p in plans if p["config"] == "off")
    # The UNLOGGED and permanent copies are read by the stock scans, the temp tables by theirs.
    unlogged = [p for p in plans if p["config"] == "unlogged"]
    assert all("tmp_" not in p["scans"] for p in unlogged)
    assert all("unl_" not in p["scans"] for p in plans if p["config"] in ("off", "on"))

    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "ok" and results["server"]["version"]
    items = {i["item"]: i for i in results["items"]}
    assert set(items) == {*SHAPE_NAMES, "q02", "q05"}
    assert all(i["results_equal"] and not i["mismatches"] for i in items.values())
    assert set(items["toast_aggregate"]["median_ms"]) == {"off", "on", "unlogged"}
    assert set(items["q05"]["median_ms"]) == {"off", "on", "permanent"}
    assert results["table_bytes"]["pglab_ts.big"] > 0

    section = json.loads((out / "section.json").read_text())
    assert section["experiment"] == "temp-shapes"
    assert [row[0] for row in section["ours"]["rows"]] == list(SHAPE_NAMES)
    assert section["plots"] == ["shapes_speedup.png", "tpch.png"]
    assert "RESULT MISMATCH" not in result.stdout


def test_quick_tpch_all_temp(tmp_path: Path, pg_config_path: str) -> None:
    """Every TPC-H table temporary vs an UNLOGGED copy, in a session of its own: same rows, stock plans when off."""
    out = tmp_path / "ts-all-temp"
    result = run_pglab("temp-shapes", "--quick", "--no-shapes", "--tpch-all-temp", "--tpch-queries", "q01,q03,q21",
                       "--tpch-temp-buffers", "256MB", "--pg-config", pg_config_path, "--out", str(out), timeout=600)
    assert result.returncode == 0, result.stderr
    with (out / "raw.csv").open() as f:
        raw = list(csv.DictReader(f))
    assert {(r["item"], r["config"]) for r in raw} == {
        (q, c) for q in ("q01", "q03", "q21") for c in ("off", "on", "unlogged")}
    with (out / "plans.csv").open() as f:
        plans = list(csv.DictReader(f))
    for item in ("q01", "q03", "q21"):
        assert len({p["digest"] for p in plans if p["item"] == item}) == 1, item
    assert all(p["temp_scans"] == "0" for p in plans if p["config"] in ("off", "unlogged"))
    # The temp configurations read pg_temp's tables, the UNLOGGED one its schema's: no Temp Seq Scan there.
    # With pg_tempbuf on, a plan with a Gather reads them through our scans (a stock scan of a temporary
    # table never runs in a worker), and a serial one through the stock scans (plan_walk.c).
    on = [p for p in plans if p["config"] == "on"]
    assert on and all(("Custom Scan (Temp" in p["scans"]) == (p["plan"] != "serial") for p in on), on
    results = json.loads((out / "results.json").read_text())
    assert results["options"]["tpch_all_temp"] and results["tpch_temp_buffers"] == "256MB"
    # Equal memory: shared_buffers holds the copy as the TPC-H session's pool holds the tables, both warm.
    assert results["server"]["shared_buffers"] == "256MB"
    assert any(n.startswith("shared_buffers = 256MB, temp_buffers = 256MB: the UNLOGGED copy") and "prewarmed by" in n
               for n in results["notes"]), results["notes"]
    assert results["table_bytes"]["pg_temp.lineitem"] > 0 and results["table_bytes"]["pglab_ts.lineitem"] > 0
    items = {i["item"]: i for i in results["items"]}
    assert all(i["reference"] == "unlogged" and i["results_equal"] for i in items.values())
    section = json.loads((out / "section.json").read_text())
    assert [row[0] for row in section["ours"]["rows"]] == ["q01", "q03", "q21", "sum"]


def test_tpch_all_temp_defaults_to_all_22_queries() -> None:
    from pglab.cli import build_parser
    from pglab.experiments.temp_shapes.command import options_from

    options = options_from(build_parser().parse_args(["temp-shapes", "--tpch-all-temp", "--scale", "0.5"]))
    assert options.tpch_all_temp and len(options.tpch_queries) == 22 and options.tpch_temp_buffers is None
    default = options_from(build_parser().parse_args(["temp-shapes"]))
    assert not default.tpch_all_temp and len(default.tpch_queries) == 7


def test_plan_shape_of_a_parallel_plan() -> None:
    explain = [{"Plan": {
        "Node Type": "Aggregate", "Plans": [{
            "Node Type": "Gather", "Workers Planned": 2, "Workers Launched": 2, "Plans": [{
                "Node Type": "Hash Join", "Plans": [
                    {"Node Type": "Seq Scan", "Parallel Aware": True, "Relation Name": "big"},
                    {"Node Type": "Hash", "Plans": [{
                        "Node Type": "Custom Scan", "Custom Plan Provider": "Temp Seq Scan",
                        "Parallel Aware": False, "Relation Name": "tmp_keys", "Leader Only": "toast"}]}]}]}]},
        "Execution Time": 12.5}]
    shape = plan_shape(explain)
    assert shape.gather and shape.gathers == 1 and shape.parallel
    assert shape.workers_planned == 2 and shape.workers_launched == 2
    assert shape.temp_scans == 1 and shape.parallel_temp_scans == 0 and shape.leader_only
    assert shape.scans == ("Parallel Seq Scan on big", "Custom Scan (Temp Seq Scan) on tmp_keys")
    assert shape.outline.startswith("Aggregate (Gather[2/2] (Hash Join (Parallel Seq Scan on big")
    assert shape.label == "Gather (2/2 workers), leader only" and shape.execution_ms == 12.5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--repetitions", "0"], "--repetitions"),
        (["--scale", "-1"], "--scale"),
        (["--shapes", "nope"], "unknown nope"),
        (["--tpch-queries", "q99"], "unknown q99"),
        (["--no-shapes", "--no-tpch"], "nothing to measure"),
        (["--no-tpch", "--tpch-all-temp"], "choose one"),
        (["--tpch-temp-buffers", "1GB"], "needs --tpch-all-temp"),
        (["--out", "/nonexistent/dir/x"], "parent directory"),
        (["--pg-config", "/nonexistent/pg_config"], "pg_config not found"),
    ],
)
def test_bad_options(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert_main_fails_in_one_line(["temp-shapes", *args], message, capsys)
