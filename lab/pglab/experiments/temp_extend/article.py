"""What the 003 article published (PostgreSQL 10, SystemTap on md.c), for comparison only."""

from __future__ import annotations

from pglab.report_section import Table

SOURCE = "\"TEMPORARY TABLE(一時テーブル)を探る\" (PostgreSQL Advent Calendar 2017)"
SERVER = "PostgreSQL 10.0 built with --enable-dtrace, SystemTap probes added to mdextend"

# CTAS of a ~9 MB table with temp_buffers = 100 MB: 1134 mdextend calls, no mdwrite.
NINE_MB_EXTENDS = 1134
NINE_MB_EXTEND_US_DISK = 50_925
NINE_MB_EXTEND_US_TMPFS = 6_025
# `time psql -f` of SET temp_tablespaces + CTAS of a ~2 GB, 1M-row table (temp_buffers not stated).
ONE_M_ROWS_S_DISK = 15.618
ONE_M_ROWS_S_TMPFS = 2.442

COLUMNS = ["case", "extends", "extend ms", "writes", "elapsed ms"]


def table() -> Table:
    return Table(
        columns=COLUMNS,
        rows=[
            ["9MB (1134 blocks), temp_buffers 100 MB, disk", NINE_MB_EXTENDS, NINE_MB_EXTEND_US_DISK / 1000, 0, None],
            ["9MB (1134 blocks), temp_buffers 100 MB, tmpfs", NINE_MB_EXTENDS, NINE_MB_EXTEND_US_TMPFS / 1000, 0, None],
            ["1M rows (~2 GB), disk", None, None, None, ONE_M_ROWS_S_DISK * 1000],
            ["1M rows (~2 GB), tmpfs", None, None, None, ONE_M_ROWS_S_TMPFS * 1000],
        ],
        caption=(f"The article ({SERVER}): extends and their time counted by SystemTap in mdextend; "
                 "the 1M-row times are `time psql -f` wall clock of the whole script."),
    )


def disk_to_tmpfs() -> dict[str, float]:
    return {
        "9MB extend time": NINE_MB_EXTEND_US_DISK / NINE_MB_EXTEND_US_TMPFS,
        "1M rows elapsed": ONE_M_ROWS_S_DISK / ONE_M_ROWS_S_TMPFS,
    }
