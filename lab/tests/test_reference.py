"""The article's published runs ship with the package and parse as expected."""

import numpy as np
import pytest

from pglab import reference
from pglab.experiments.flush_cost.options import ARTICLE_SIZES, REFERENCE_PHASES


@pytest.mark.parametrize("filename", [reference.ARTICLE_RUN_TABLES, reference.ARTICLE_RUN_RANDOM])
def test_thirty_iterations_per_size(filename: str) -> None:
    rows = reference.load_run(filename)
    assert sorted({r.nblocks for r in rows}) == list(ARTICLE_SIZES)
    assert len(rows) == 30 * len(ARTICLE_SIZES)


def test_every_reference_phase_has_article_data() -> None:
    for phase in REFERENCE_PHASES:
        assert reference.article_medians(phase), phase


def test_runs_match_the_article_table_where_it_quotes_them() -> None:
    # The article's first table quotes 0.54 / 0.58 ms (write / read) at 512 blocks,
    # its second 728.18 / 373.46 ms at 262144 blocks: means of the 2025-12-30 run.
    write = reference.phase_times(reference.ARTICLE_RUN_TABLES, "write_seq")
    read = reference.phase_times(reference.ARTICLE_RUN_TABLES, "read_seq")
    assert np.mean(write[512]) == pytest.approx(0.54, abs=0.005)
    assert np.mean(read[512]) == pytest.approx(0.58, abs=0.005)
    assert np.mean(write[262144]) == pytest.approx(728.18, abs=0.01)
    assert np.mean(read[262144]) == pytest.approx(373.46, abs=0.01)


def test_unknown_phase_has_no_reference() -> None:
    assert reference.article_medians("raw_write") == {}
