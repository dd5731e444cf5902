"""The size grid: temp_buffers per size and dropping sizes that do not fit."""

import argparse

import pytest

from pglab.experiments.flush_cost.command import size_list
from pglab.experiments.flush_cost.options import (
    ARTICLE_SIZES,
    MIN_TEMP_BUFFERS,
    EvictMode,
    phase_order,
    plan_sizes,
    pool_blocks,
)

GIB = 2**30


def test_article_grid() -> None:
    assert ARTICLE_SIZES[0] == 128 and ARTICLE_SIZES[-1] == 262144 and len(ARTICLE_SIZES) == 12


def test_pool_is_110_percent_but_at_least_the_minimum() -> None:
    assert pool_blocks(1000) == 1100
    assert pool_blocks(129) == 142  # rounded up
    assert pool_blocks(8) == MIN_TEMP_BUFFERS


def test_sizes_that_do_not_fit_are_dropped_with_a_reason() -> None:
    plan = plan_sizes(ARTICLE_SIZES, 8192, EvictMode.FUNCTION, available_memory=2 * GIB, free_disk=None)
    assert plan.kept == tuple(s for s in ARTICLE_SIZES if s <= 65536)
    assert [s for s, _ in plan.dropped] == [131072, 262144]
    assert all("memory" in why and "available" in why for _, why in plan.dropped)


def test_disk_limit() -> None:
    plan = plan_sizes((128, 262144), 8192, EvictMode.FUNCTION, available_memory=64 * GIB, free_disk=GIB)
    assert plan.kept == (128,)
    assert "disk" in plan.dropped[0][1]


def test_displacer_needs_more_memory() -> None:
    memory = 3 * GIB
    function = plan_sizes(ARTICLE_SIZES, 8192, EvictMode.FUNCTION, memory, None)
    displacer = plan_sizes(ARTICLE_SIZES, 8192, EvictMode.DISPLACER, memory, None)
    assert len(displacer.kept) <= len(function.kept)


def test_phase_order_names() -> None:
    assert phase_order(EvictMode.DISPLACER)[2] == "flush_displacer"
    assert phase_order(EvictMode.FUNCTION)[2] == "evict_for_seq"
    # The article's ten steps, plus our two scans of the resident table after step 8 and two
    # reads through an index after step 10.
    order = phase_order(EvictMode.FUNCTION)
    assert len(order) == 14
    assert order[order.index("hit_check") + 1:order.index("mark_dirty")] == ("scan_resident", "scan_private")
    assert order[-2:] == ("index_resident", "index_private")


def test_size_list_parsing() -> None:
    assert size_list("256,128, 256") == (128, 256)
    for bad in ("0", "-5", "abc", "12.5", ","):
        with pytest.raises(argparse.ArgumentTypeError):
            size_list(bad)
