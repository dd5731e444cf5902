"""`pglab sequence-cache` end to end on a tiny grid, scaling analysis, output schema, bad options."""

import csv
import json
from pathlib import Path

import pytest
from helpers import assert_bad_pg_config_in_a_subprocess_is_one_line, assert_main_fails_in_one_line, run_pglab

from pglab.cli import main
from pglab.cluster import Cluster
from pglab.experiments.sequence_cache import analysis, perf
from pglab.experiments.sequence_cache import options as opt
from pglab.experiments.sequence_cache.runner import BENCH_COLUMNS, PERF_COLUMNS
from pglab.pgconfig import PgInstall
from pglab.report_section import load_section

VARIANTS = ("cache1", "unlogged-cache1")
CLIENTS = (1, 2)
CALLS = 2000
OUTPUTS = {"raw.csv", "perf.csv", "summary.csv", "summary.md", "meta.json", "section.json",
           "tps.png", "scaling.png", "locks.png"}


def _rows(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    with open(path, newline="") as file:
        reader = csv.DictReader(file)
        assert tuple(reader.fieldnames or ()) == columns
        return list(reader)


def test_scaling_limits() -> None:
    s = analysis.scaling({1: 100.0, 2: 190.0, 4: 300.0, 8: 310.0})
    assert (s.peak_clients, s.stops_at, s.linear_up_to) == (8, 4, 2)
    assert s.efficiency[2] == pytest.approx(0.95)
    falling = analysis.scaling({1: 100.0, 2: 90.0})
    assert (falling.peak_clients, falling.stops_at, falling.linear_up_to) == (1, 1, 1)
    assert analysis.scaling({1: 100.0, 2: 900.0}).superlinear and not s.superlinear


def test_grids_and_variants() -> None:
    assert opt.default_clients(2) == (1, 2, 4, 6, 8)
    assert opt.quick_clients(2) == (1, 2, 8) and opt.quick_clients(1) == (1, 4)
    v = opt.parse_variant("unlogged-cache100")
    assert (v.cache, v.unlogged) == (100, True) and v.ddl.startswith("CREATE UNLOGGED SEQUENCE")


def test_perf_script_parsing() -> None:
    output = "\n".join([
        "101  ffffffff815edba3 finish_task_switch.isra.0",
        "101            5a7980 s_lock",
        "101            5a7990 LWLockAcquire",
        "102            5a79a0 [unknown]",
        "999            5a7980 s_lock",  # not a pgbench backend
    ])
    shares = perf.parse_script(output, {101, 102})
    assert (shares.samples, shares.kernel, shares.spinlock, shares.lwlock, shares.unknown) == (4, 1, 1, 1, 1)
    assert shares.share(shares.spinlock) == 0.25


def test_tiny_grid_on_a_throwaway_cluster(pg_config_path: str, tmp_path: Path) -> None:
    out = tmp_path / "seq"
    result = run_pglab("sequence-cache", "--pg-config", pg_config_path, "--sequences", ",".join(VARIANTS),
                       "--clients", ",".join(map(str, CLIENTS)), "--duration", "1", "--calls", str(CALLS),
                       "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "The article" in result.stdout and "Ours (PostgreSQL" in result.stdout
    assert OUTPUTS <= {p.name for p in out.iterdir()}

    points = _rows(out / "raw.csv", BENCH_COLUMNS)
    assert {(p["variant"], p["kind"], int(p["clients"])) for p in points} == {
        (v, k.value, c) for v in VARIANTS for k in opt.Kind for c in CLIENTS}
    for p in points:
        calls = CALLS if p["kind"] == "bulk" else 1
        assert int(p["calls_per_transaction"]) == calls and int(p["failed"]) == 0
        assert float(p["tps"]) > 0 and float(p["nextval_per_s"]) == pytest.approx(float(p["tps"]) * calls)

    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "ok" and meta["variants_measured"] == list(VARIANTS)
    perf_rows = _rows(out / "perf.csv", PERF_COLUMNS)
    if perf.unavailable_reason() is None:
        assert meta["perf"].startswith("perf record -e cpu-clock")
        assert {(q["variant"], q["kind"], int(q["clients"])) for q in perf_rows} == {
            (v, k.value, max(CLIENTS)) for v in VARIANTS for k in opt.Kind}
        for q in perf_rows:
            assert int(q["backends"]) == max(CLIENTS) and int(q["samples"]) >= 0
            if int(q["samples"]) == 0:  # no sample, no share (see below)
                assert q["spinlock_share"] == "" and q["lwlock_share"] == ""
            else:
                assert 0 <= float(q["spinlock_share"]) <= 1 and 0 <= float(q["lwlock_share"]) <= 1
            assert (out / q["perf_data"]).is_file()
        # One second of a loaded 2-core machine can leave a single recording without a
        # sample of the backends; all of them without one means perf sampled nothing.
        assert sum(int(q["samples"]) for q in perf_rows) > 0
    else:
        assert perf_rows == [] and meta["perf"].startswith("not measured")

    section = load_section(out / "section.json")
    assert section.experiment == "sequence-cache" and section.plots == ["tps.png", "scaling.png", "locks.png"]
    assert len(section.ours.rows) == len(VARIANTS) * len(opt.Kind)
    assert PgInstall.from_pg_config(pg_config_path).version_num // 10000 == section.versions["postgresql_major"]
    for script in (out / "scripts").iterdir():
        assert script.read_text().startswith("BEGIN;\n") and script.read_text().endswith("END;\n")


def test_existing_server_single_only_without_perf(pg_cluster: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "seq"
    code = main(["sequence-cache", "--dsn", pg_cluster.conninfo, "--sequences", "cache100", "--transactions",
                 "single", "--clients", "1", "--duration", "1", "--perf", "off", "--out", str(out)])
    assert code == 0
    points = _rows(out / "raw.csv", BENCH_COLUMNS)
    assert [(p["variant"], p["kind"]) for p in points] == [("cache100", "single")]
    assert json.loads((out / "meta.json").read_text())["perf"] == "turned off (--perf off)"
    with pg_cluster.connect() as conn:  # sequences and the function are gone
        assert conn.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'pglab_seq_%'").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM pg_proc WHERE proname = 'pglab_seq_bulk'").fetchone() == (0,)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--sequences", "cacheX"], "expected cacheN"),
        (["--sequences", "cache0"], "expected cacheN"),
        (["--transactions", "many"], "single, bulk"),
        (["--clients", "0"], "not a positive integer"),
        (["--clients", "1,x"], "not a positive integer"),
        (["--duration", "0"], "not a positive integer"),
        (["--calls", "-5"], "not a positive integer"),
        (["--transactions", "single", "--calls", "10"], "--calls only applies"),
        (["--perf", "sometimes"], "--perf"),
        (["--pg-config", "/nonexistent/pg_config"], "pg_config not found"),
        (["--dsn", "x", "--pg-config", "y"], "not allowed with"),
        (["--dsn", "host=/nonexistent port=1 connect_timeout=2"], "cannot connect"),
    ],
)
def test_bad_options(args: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_main_fails_in_one_line(["sequence-cache", "--out", str(tmp_path / "out"), *args], needle, capsys)


def test_bad_option_in_a_subprocess_is_one_line(tmp_path: Path) -> None:
    assert_bad_pg_config_in_a_subprocess_is_one_line("sequence-cache", tmp_path / "out")
