"""Fixtures for the extension's own Python tests: clusters with pg_tempbuf preloaded."""

from __future__ import annotations

import atexit
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, settings

from pglab.cluster import Cluster

# Settings that make every eligible temporary-table scan parallel, so that a
# test compares the parallel plan with the serial one on any table size.
FORCE_PARALLEL = {
    "parallel_setup_cost": "0",
    "parallel_tuple_cost": "0",
    "min_parallel_table_scan_size": "0",
    "pg_tempbuf.write_page_cost": "0",
    "pg_tempbuf.buffer_scan_cost": "0",
    "pg_tempbuf.read_page_cost": "0",
    "pg_tempbuf.parallel_margin": "0",
}


def start_preloaded(pg_config_path: str, checksums: bool | None = None,
                    server_env: dict[str, str] | None = None) -> Cluster:
    cluster = Cluster(
        pg_config_path,
        settings={
            "shared_preload_libraries": "pg_tempbuf",
            "max_worker_processes": 8,
            "max_parallel_workers": 8,
            "max_parallel_workers_per_gather": 2,
        },
        checksums=checksums,
        server_env=server_env,
    )
    cluster.start()
    with cluster.connect() as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_tempbuf")
    return cluster


# PGTB_SERVER_SHIM=NAME starts the shared cluster with tests/shims/NAME.c preloaded into the
# server: the differential suites run once more so under a fault (see the Makefile).
SERVER_SHIM = os.environ.get("PGTB_SERVER_SHIM") or None


@pytest.fixture(scope="session")
def preloaded_cluster(pg_config_path: str) -> Iterator[Cluster]:
    """A cluster with pg_tempbuf in shared_preload_libraries (initdb's checksum default)."""
    server_env = None
    if SERVER_SHIM is not None:
        shim = build_shim(SERVER_SHIM)
        if isinstance(shim, str):
            pytest.skip(shim)
        server_env = {"LD_PRELOAD": str(shim)}
    cluster = start_preloaded(pg_config_path, server_env=server_env)
    yield cluster
    cluster.cleanup()


@pytest.fixture
def session(preloaded_cluster: Cluster) -> Iterator[psycopg.Connection[Any]]:
    """A fresh autocommit session on the preloaded cluster."""
    with preloaded_cluster.connect() as conn:
        yield conn


def differential_settings(examples: int) -> settings:
    """The hypothesis settings of the differential suites: no deadline (a case builds tables),
    examples derandomized unless PGTB_DIFF_RANDOM is set."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=os.environ.get("PGTB_DIFF_RANDOM") is None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def create_perm_table(cluster: Cluster) -> None:
    """The permanent table `perm (a, b)` the shape suites join temporary tables with: 3,000 rows,
    a NULL every 97th."""
    with cluster.connect() as admin:
        admin.execute("DROP TABLE IF EXISTS perm")
        admin.execute(
            "CREATE TABLE perm AS SELECT CASE WHEN g % 97 = 0 THEN NULL ELSE g % 50 END AS a, g AS b "
            "FROM generate_series(1, 3000) g"
        )
        admin.execute("ANALYZE perm")


def force_parallel(conn: psycopg.Connection[Any]) -> None:
    for name, value in FORCE_PARALLEL.items():
        conn.execute(f"SET {name} = {value}")


def plan_text(conn: psycopg.Connection[Any], query: str, options: str = "COSTS OFF") -> str:
    rows = conn.execute(f"EXPLAIN ({options}) {query}").fetchall()
    return "\n".join(row[0] for row in rows)


def temp_scan_nodes(conn: psycopg.Connection[Any], sql: str) -> list[dict[str, Any]]:
    """The Temp Seq Scan nodes of one EXPLAIN ANALYZE run of sql, [] when it fails (the
    caller's savepoint q is then restored)."""
    try:
        row = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}").fetchone()
    except psycopg.Error:
        conn.execute("ROLLBACK TO SAVEPOINT q")
        return []
    assert row is not None
    found: list[dict[str, Any]] = []
    pending = [row[0][0]["Plan"]]
    while pending:
        node = pending.pop()
        if node.get("Custom Plan Provider") == "Temp Seq Scan":
            found.append(node)
        pending.extend(node.get("Plans", []))
    return found


def worker_counts(node: dict[str, Any], field: str) -> int:
    """The sum over workers of a per-worker field of a scan node ("worker 0=12, worker 1=9")."""
    return sum(int(n) for n in re.findall(r"worker \d+=(\d+)", node.get(field, "")))


def workers_read(node: dict[str, Any]) -> bool:
    """Did a worker read pages of this scan node (EXPLAIN ANALYZE, JSON)?"""
    return worker_counts(node, "Pages Read") > 0


def serial_rows(conn: psycopg.Connection[Any], sql: str) -> list[Any]:
    """sql's rows with pg_tempbuf.parallel_scan off (the stock serial plan); the setting back on after."""
    conn.execute("SET pg_tempbuf.parallel_scan = off")
    rows = conn.execute(sql).fetchall()
    conn.execute("SET pg_tempbuf.parallel_scan = on")
    return rows


def count_flush_facts(counts: Counter[str], nodes: list[dict[str, Any]]) -> None:
    """What the scans' flushes did, for a suite to prove its cases reached each mode."""
    for node in nodes:
        mode = node.get("Flush Mode", "none")
        counts[f"flush mode {mode}"] += 1
        if workers_read(node):
            counts[f"workers read, {mode}"] += 1
            if node.get("Pages Flushed", 0) > 0:
                counts[f"workers read pages written by this scan, {mode}"] += 1
        if "Waits For Flush" in node:
            counts[f"workers waited for the flush, {mode}"] += 1
        if re.search(r"worker \d+=[1-9]", node.get("Pages From Leader's Pool", "")):
            counts[f"workers copied pages from the leader, {mode}"] += 1
        if node.get("Pages Pinned", 0) > 0:
            counts["guarded: pages pinned against the leader's changes"] += 1
        if node.get("Pages Kept By Leader", 0) > 0:
            counts["guarded: pages kept by the leader"] += 1
        if "Leader Only" in node:
            counts[f"leader only: {node['Leader Only']}"] += 1


YAMA_SCOPE = Path("/proc/sys/kernel/yama/ptrace_scope")


def yama_scope() -> int | None:
    """kernel.yama.ptrace_scope, None without Yama."""
    return int(YAMA_SCOPE.read_text()) if YAMA_SCOPE.exists() else None


def leader_pool_unavailable() -> str | None:
    """None when workers may map the leader's pool of local buffers on this system, else why
    not.  The pool is a memfd workers open through /proc/<pid>/fd: a PTRACE_MODE_READ check,
    which Yama leaves alone (it restricts attaching)."""
    if sys.platform != "linux":
        return "the leader's shared pool is Linux only"
    if SERVER_SHIM == "deny_proc_fd":
        return "the server denies opening another process's /proc/<pid>/fd (shims/deny_proc_fd.c)"
    return None


SHIMS = Path(__file__).parent / "shims"


def build_shim(name: str) -> Path | str:
    """Compile tests/shims/NAME.c into a shared library the server's OS user can load;
    returns its path, or why it cannot be built here."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"):
        return f"the {name} shim is for Linux on x86_64 or aarch64"
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return "no C compiler to build the shim"
    out_dir = Path(tempfile.mkdtemp(prefix="pgtb-shim-"))
    out_dir.chmod(0o755)  # the server may run as another OS user
    # Servers that load it are stopped by the fixtures' teardown, before the interpreter exits.
    atexit.register(shutil.rmtree, out_dir, ignore_errors=True)
    library = out_dir / f"{name}.so"
    result = subprocess.run([compiler, "-Wall", "-shared", "-fPIC", "-o", str(library),
                             str(SHIMS / f"{name}.c"), "-ldl"], capture_output=True, text=True)
    if result.returncode != 0:
        return f"could not build the {name} shim: {result.stderr.strip()}"
    library.chmod(0o755)
    return library
