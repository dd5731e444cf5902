"""Options and constants of `pglab buffered-plan`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

EXTENSION = "pg_buffered_plan"


PLACEMENTS = ("scans", "all")


BATCH_SIZES = (64, 256, 1024, 2048, 4096)


TABLES = ("region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem")


SEED_QUERY = "SELECT count(1) FROM lineitem"


OFF = ("off", 0)


@dataclass(frozen=True)
class Options:
    out_dir: Path
    pg_config: Path | None
    scale: float
    repeats: int
    queries: dict[str, str]
    batch_sizes: tuple[int, ...]
    counter_scale: float
    counter_queries: tuple[str, ...]
    counter_configs: tuple[tuple[str, int], ...]
    quick: bool


SERVER_SETTINGS: dict[str, str | int | float | bool] = {
    "shared_preload_libraries": EXTENSION, "shared_buffers": "2GB", "jit": "off",
    "max_parallel_workers_per_gather": 0, "fsync": "off", "synchronous_commit": "off",
    "max_wal_size": "4GB", "autovacuum": "off",
}


def config_gucs(config: tuple[str, int]) -> str:
    placement, batch = config
    if batch == 0:
        return "SET pg_buffered_plan.batch_size = 0;"
    return (f"SET pg_buffered_plan.placement = '{placement}'; "
            f"SET pg_buffered_plan.batch_size = {batch};")


def config_label(config: tuple[str, int]) -> str:
    return "off" if config[1] == 0 else f"{config[0]}/{config[1]}"
