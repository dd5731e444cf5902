"""TPC-H data for the lab: tpchgen-cli output COPYed into a cluster, and the queries that ship in pg_buffered_plan/tpch.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from pglab.cluster import Cluster
from pglab.errors import LabError
from pglab.experiments.buffered_plan.options import TABLES


def tpch_dir() -> Path:
    """pg_buffered_plan/tpch of the source tree (schema, keys, the 22 queries)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "pg_buffered_plan" / "tpch"
        if candidate.is_dir():
            return candidate
    raise LabError("pg_buffered_plan/tpch not found above " + str(here))


def _tpchgen() -> str:
    for candidate in (str(Path(sys.executable).parent / "tpchgen-cli"), shutil.which("tpchgen-cli")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise LabError("tpchgen-cli not found: pip install tpchgen-cli")


def generate(scale: float, into: Path) -> Path:
    """CSV files of one scale factor, generated once and kept under --out."""
    target = into / f"tpch-sf{scale:g}"
    if not (target / ".complete").exists():
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run([_tpchgen(), "csv", "-s", f"{scale:g}", "-o", str(target), "--overwrite"],
                       check=True, capture_output=True)
        (target / ".complete").touch()
    return target


def load(cluster: Cluster, csv_dir: Path) -> None:
    tpch = tpch_dir()
    with cluster.connect() as conn:
        conn.execute((tpch / "schema.sql").read_text())
        for table in TABLES:
            with conn.cursor().copy(f"COPY {table} FROM STDIN (FORMAT csv, HEADER true)") as copy:
                with open(csv_dir / f"{table}.csv", "rb") as f:
                    while chunk := f.read(1 << 20):
                        copy.write(chunk)
        conn.execute((tpch / "keys.sql").read_text())
        conn.execute("VACUUM (FREEZE, ANALYZE)")
