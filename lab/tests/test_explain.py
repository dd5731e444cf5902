"""EXPLAIN (ANALYZE, TIMING OFF, BUFFERS) parsing."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pglab import reference
from pglab.explain import (
    BUFFER_COUNTERS,
    BUFFER_KINDS,
    ExplainParseError,
    parse_buffers_line,
    parse_explain,
)

PG18_FLUSH = """\
Result  (cost=0.00..0.01 rows=1 width=8) (actual rows=1.00 loops=1)
  Buffers: local written=129
Planning:
  Buffers: shared hit=5
Planning Time: 0.010 ms
Execution Time: 0.500 ms"""

PG15_DRY = """\
Result  (cost=0.00..0.01 rows=1 width=8) (actual rows=1 loops=1)
Planning Time: 0.005 ms
Execution Time: 0.004 ms"""


def test_plan_buffers_line_not_the_planning_one() -> None:
    result = parse_explain(PG18_FLUSH.splitlines())
    assert result.execution_ms == 0.5
    assert result.buffers_line == "local written=129"
    assert result.local_written == 129
    assert result.count("shared", "hit") == 0


def test_no_buffers_line_means_nothing_counted() -> None:
    result = parse_explain(PG15_DRY.splitlines())
    assert result.execution_ms == 0.004
    assert result.buffers_line == ""
    assert result.counts == {}


def test_only_planning_buffers() -> None:
    lines = ["Result  (actual rows=1 loops=1)", "Planning:", "  Buffers: shared hit=3",
             "Planning Time: 0.1 ms", "Execution Time: 0.2 ms"]
    assert parse_explain(lines).buffers_line == ""


def test_several_groups() -> None:
    counts = parse_buffers_line("shared hit=3 read=1, local hit=128 dirtied=128, temp written=2")
    assert counts == {"shared_hit": 3, "shared_read": 1, "local_hit": 128, "local_dirtied": 128,
                      "temp_written": 2}


def test_missing_execution_time_is_an_error() -> None:
    with pytest.raises(ExplainParseError):
        parse_explain(["Result  (cost=0.00..0.01 rows=1 width=8)"])


def test_garbage_buffers_group_is_an_error() -> None:
    with pytest.raises(ExplainParseError):
        parse_buffers_line("local lots=many")


@pytest.mark.parametrize("filename", [reference.ARTICLE_RUN_TABLES, reference.ARTICLE_RUN_RANDOM])
def test_every_published_buffers_line_parses(filename: str) -> None:
    for row in reference.load_run(filename):
        for line in row.buffers.values():
            parse_buffers_line(line)


counts_strategy = st.dictionaries(
    st.sampled_from([f"{k}_{c}" for k in BUFFER_KINDS for c in BUFFER_COUNTERS]),
    st.integers(min_value=1, max_value=10**9),
)


@given(counts_strategy, st.floats(min_value=0, max_value=1e6, allow_nan=False).map(lambda v: round(v, 3)))
def test_round_trip(counts: dict[str, int], ms: float) -> None:
    groups = []
    for kind in BUFFER_KINDS:
        parts = [f"{c}={counts[f'{kind}_{c}']}" for c in BUFFER_COUNTERS if f"{kind}_{c}" in counts]
        if parts:
            groups.append(f"{kind} " + " ".join(parts))
    lines = ["Result  (actual rows=1 loops=1)"]
    if groups:
        lines.append("  Buffers: " + ", ".join(groups))
    lines.append(f"Execution Time: {ms:.3f} ms")
    result = parse_explain(lines)
    assert result.counts == counts
    assert result.execution_ms == pytest.approx(ms)
