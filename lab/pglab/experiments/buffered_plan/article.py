"""The seed article's published figures: "一次'失败'的尝试" (w@hidva.com, 2020),
TPC-H SF 1 on a PostgreSQL 9.6-era fork with BufferedForeignScan.
"""

from __future__ import annotations

# The seed article (TPC-H SF 1, PostgreSQL 9.6-era fork, BufferedForeignScan).
SEED_MS_OFF = 25691.207


SEED_MS_BEST = 22782.283


SEED_BEST_BATCH = 2048


SEED_COUNTERS = {  # off -> batched
    "L1-dcache-load-misses %": (2.48, 0.58), "L1-dcache-store-misses %": (0.68, 0.25),
    "branch-misses %": (1.17, 1.06), "IPC": (1.73, 1.96),
}
