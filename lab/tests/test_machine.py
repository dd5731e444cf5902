"""What pglab records of the machine: the kernel's huge page policy for shared memory, which
decides whether pg_tempbuf's pool gets 2 MB pages (and so what its workers' page faults cost)."""

from __future__ import annotations

import pytest

from pglab import machine, run_report
from pglab import report_section as rs


@pytest.mark.parametrize(("text", "word"), [
    ("always within_size advise [never] deny force\n", "never"),
    ("always within_size [advise] never deny force", "advise"),
    ("[always] within_size advise never", "always"),
    ("always within_size advise never", None),
    ("", None),
])
def test_the_selected_policy_is_the_bracketed_word(text: str, word: str | None) -> None:
    assert machine.selected_word(text) == word


def test_machine_info_carries_the_policy() -> None:
    info = machine.machine_info()
    assert "shmem_huge_pages" in info
    assert info["shmem_huge_pages"] in (None, "always", "within_size", "advise", "never", "deny", "force")


class _Run:
    """What run_report's summary opening reads of a run."""

    def __init__(self, policy: str | None) -> None:
        self.machine = {"cpu_model": "cpu", "cpu_cores_logical": 2, "memory_total_bytes": 2**30,
                        "kernel": "6.18", "shmem_huge_pages": policy}
        self.server = {"version_full": "PostgreSQL 18.6", "target": "a cluster"}
        self.started = self.finished = "2026-11-28"
        self.command = "pglab regret"


@pytest.mark.parametrize("policy", ["advise", None])
def test_summaries_name_the_policy_when_known(policy: str | None) -> None:
    table = rs.Table(columns=["a"], rows=[["1"]])
    opening = run_report.summary_opening("t", _Run(policy), table, table)  # type: ignore[arg-type]
    machine_line = next(line for line in opening if line.startswith("- machine:"))
    if policy is None:
        assert "huge pages" not in machine_line
    else:
        assert machine_line.endswith(f"shared memory huge pages: {policy}")
