"""What the 004 article published (Postgres 9.4 and 9.5, 72 cores), for comparison only.

Its TPS curves (figures 1-3) are images without numbers; what it gives in numbers is the client
count up to which TPS grew linearly (transaction (1)) and perf's self shares of the lock
functions for transaction (2) at 72 sessions.
"""

from __future__ import annotations

from pglab.report_section import Table

SOURCE = ("\"Сравнение кэшируемых и некэшируемых последовательностей в версиях Postgres 9.4 и 9.5\" "
          "(Postgres Professional)")
SERVER = ("Postgres 9.4 and 9.5 on 4 x Xeon E7-8890 v3 (72 cores), 3 TB RAM, database in memory, "
          "pgbench on the same host")
CORES = 72
DURATION_S = 60

# Transaction (1): largest session count with linear TPS growth.
LINEAR_UP_TO = {  # cache -> {server version: sessions}
    1: {"9.4": 60, "9.5": 80},
    100: {"9.4": 90, "9.5": 120},
}
# Transaction (2), 72 sessions, perf record -e cycles, "Self" column (version not stated).
PERF_SELF = {
    1: {"s_lock": 0.2754, "LWLockAcquire": 0.0911, "LWLockRelease": 0.0444, "LWLockDequeueSelf": 0.0399},
    100: {"LWLockAcquire": 0.5729, "LWLockRelease": 0.3295, "s_lock": 0.0},
}


def spinlock_share(cache: int) -> float:
    return PERF_SELF[cache].get("s_lock", 0.0)


def lwlock_share(cache: int) -> float:
    """The LWLock functions the article lists (a lower bound: it elides the rest)."""
    return sum(v for k, v in PERF_SELF[cache].items() if k.startswith("LWLock"))


COLUMNS = ["sequence", "transaction", "linear up to (sessions)", "linear up to / cores",
           "perf at sessions", "spinlock %", "LWLock %"]


def table() -> Table:
    rows: list[list[str | int | float | None]] = []
    for cache, by_version in LINEAR_UP_TO.items():
        rows.append([f"cache{cache}", "single",
                     ", ".join(f"{n} ({v})" for v, n in by_version.items()),
                     ", ".join(f"{n / CORES:.2f} ({v})" for v, n in by_version.items()),
                     None, None, None])
    for cache in PERF_SELF:
        rows.append([f"cache{cache}", "bulk", None, None, CORES, round(100 * spinlock_share(cache), 2),
                     round(100 * lwlock_share(cache), 2)])
    return Table(COLUMNS, rows, caption=(
        f"The article ({SERVER}; {DURATION_S} s per point): the session count up to which transaction (1) "
        "scaled linearly, and perf's self share of s_lock and of the LWLock functions it lists for "
        "transaction (2) at 72 sessions, in % of all samples."))
