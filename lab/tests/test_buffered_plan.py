"""buffered-plan: the plan check that guards each counter row's configuration."""

import pytest

from pglab.errors import LabError
from pglab.experiments.buffered_plan.counters import check_plan, plan_nodes, single_user_script
from pglab.experiments.buffered_plan.options import OFF
from pglab.experiments.buffered_plan.runner import config_gucs

STOCK = """Sort
  Sort Key: l_returnflag, l_linestatus
  ->  HashAggregate
        Group Key: l_returnflag, l_linestatus
        ->  Seq Scan on lineitem
              Filter: (l_shipdate <= '1998-09-02 00:00:00'::timestamp without time zone)"""
SCANS = """Sort
  Sort Key: l_returnflag, l_linestatus
  ->  HashAggregate
        Group Key: l_returnflag, l_linestatus
        ->  Custom Scan (BatchedSeqScan) on lineitem
              Filter: (l_shipdate <= '1998-09-02 00:00:00'::timestamp without time zone)
              Batch Size: 2048"""
ALL = """Custom Scan (Buffered)
  Batch Size: 2048
  ->  Sort
        Sort Key: l_returnflag, l_linestatus
        ->  Custom Scan (Buffered)
              Batch Size: 2048
              ->  HashAggregate
                    Group Key: l_returnflag, l_linestatus
                    ->  Custom Scan (BatchedSeqScan) on lineitem
                          Filter: (l_shipdate <= '1998-09-02 00:00:00'::timestamp without time zone)
                          Batch Size: 2048"""


def test_plan_nodes_counts_ours_and_stock_scans() -> None:
    assert plan_nodes(STOCK) == {"batched_seq_scans": 0, "buffered_nodes": 0, "seq_scans": 1}
    assert plan_nodes(SCANS) == {"batched_seq_scans": 1, "buffered_nodes": 0, "seq_scans": 0}
    assert plan_nodes(ALL) == {"batched_seq_scans": 1, "buffered_nodes": 2, "seq_scans": 0}


@pytest.mark.parametrize(("config", "plan"), [(OFF, STOCK), (("scans", 2048), SCANS), (("all", 2048), ALL)])
def test_each_configuration_accepts_its_own_plan(config: tuple[str, int], plan: str) -> None:
    check_plan(config, plan)


@pytest.mark.parametrize(("config", "plan"), [
    (OFF, SCANS), (("scans", 2048), STOCK), (("scans", 2048), ALL), (("all", 2048), SCANS),
    (("all", 2048), STOCK), (("all", 64), ALL), (("scans", 2048), ""),
])
def test_a_plan_of_another_configuration_is_refused(config: tuple[str, int], plan: str) -> None:
    with pytest.raises(LabError):
        check_plan(config, plan)


def test_single_user_script_ends_each_statement_with_a_blank_line() -> None:
    script = single_user_script(("all", 2048), "SELECT 1;\n")
    assert script == f"{config_gucs(('all', 2048))}\n\nSELECT 1;\n\n"
