"""Fault injection: where stock PostgreSQL answers, we answer.

Each fault the shared pool can meet, injected on purpose; every query must answer as with
pg_tempbuf.parallel_scan = off, with no ERROR, no hang and no backend killed:

* Workers that may not open the leader's /proc/<pid>/fd (shims/deny_proc_fd.c: an LSM policy,
  a seccomp filter, a container's /proc), though memfd_create() succeeds: the leader probes
  before its pool moves, keeps it private, and its scans fall back to the file it writes.
* A process of the server's OS user that truncates, writes or maps the pool writable: refused
  by the memfd's seals and mode, the session goes on.
* Strict overcommit (shims/strict_overcommit.c fakes vm.overcommit_memory = 2): the pool is
  reserved whole when it moves, and where the reservation fails it stays private, with a LOG.
* A small pool under user code: a function above Gather that pins many buffers while a
  partial scan runs finds them free.

The differential suites run once more under deny_proc_fd (PGTB_SERVER_SHIM, see the Makefile).
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from conftest import build_shim, force_parallel, serial_rows, start_preloaded
from pglab.cluster import Cluster

POOL_LINK = "/memfd:pg_tempbuf local buffers"


def shimmed(pg_config_path: str, name: str, **env: str) -> Cluster:
    shim = build_shim(name)
    if isinstance(shim, str):
        pytest.skip(shim)
    return start_preloaded(pg_config_path, server_env={"LD_PRELOAD": str(shim), **env})


def plan_of(conn: psycopg.Connection[Any], query: str) -> str:
    return "\n".join(row[0] for row in conn.execute(f"EXPLAIN (ANALYZE, COSTS OFF) {query}"))


def log_mark(cluster: Cluster) -> int:
    """Where the server log ends now: a test checks only what it logged (the session's shared
    cluster also serves tests that raise errors on purpose)."""
    return len(cluster.server_log())


def assert_no_error(cluster: Cluster, since: int = 0) -> None:
    log = cluster.server_log()[since:]
    assert " ERROR: " not in log, log[-3000:]
    assert "terminated by signal" not in log, log[-3000:]


# -- workers may not open the leader's /proc/<pid>/fd ----------------------------------

JOIN_SETUP = (
    "CREATE TEMP TABLE t1 AS SELECT g id, md5(g::text) v FROM generate_series(1, 200000) g;"
    "CREATE TEMP TABLE t2 AS SELECT g id, g % 100 k FROM generate_series(1, 50000) g;"
    "ANALYZE t1; ANALYZE t2;"
)
COST_SETTINGS = ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;"
                 "SET min_parallel_table_scan_size = 0;")

# The three shapes, default costs but for those named.
DENIED_SHAPES = {
    "full scan on a hash's inner side": (
        "SET enable_parallel_hash = off", "SELECT count(*) FROM t1 JOIN t2 USING (id)", "Temp Seq Scan"),
    "inner Temp Index Only Scan of a nested loop": (
        "CREATE INDEX ON t2 (id); ANALYZE t2; SET enable_hashjoin = off; SET enable_mergejoin = off;"
        "SET enable_seqscan = off; SET enable_bitmapscan = off",
        "SELECT count(*), sum(t2.id) FROM t1 JOIN t2 USING (id) WHERE t1.v LIKE '%a%'",
        "Temp Index Only Scan"),
    "partial scan, leader not participating": (
        "SET parallel_leader_participation = off",
        "SELECT count(*), max(v) FROM t1 WHERE v LIKE '%ab%'", "Temp Seq Scan"),
}


@pytest.fixture(scope="module")
def denied_cluster(pg_config_path: str) -> Iterator[Cluster]:
    cluster = shimmed(pg_config_path, "deny_proc_fd")
    yield cluster
    cluster.cleanup()


def test_the_shim_denies_proc_fd(denied_cluster: Cluster) -> None:
    assert re.search(r"deny_proc_fd: pid \d+: opening another process's /proc/<pid>/fd denied",
                     denied_cluster.server_log())


@pytest.mark.parametrize("shape", list(DENIED_SHAPES))
def test_denied_workers_answer_as_off(denied_cluster: Cluster, shape: str) -> None:
    settings, query, provider = DENIED_SHAPES[shape]
    with denied_cluster.connect() as conn:
        conn.execute(JOIN_SETUP)
        conn.execute(COST_SETTINGS)
        conn.execute(settings)
        plan = plan_of(conn, query)
        assert f"Custom Scan ({provider})" in plan and "Workers Launched: 2" in plan, plan
        if "Page Source" in plan:
            assert "workers may not open the leader's /proc/<pid>/fd: Permission denied" in plan, plan
        assert conn.execute(query).fetchall() == serial_rows(conn, query)
    assert_no_error(denied_cluster)


def test_denied_index_build_and_toast(denied_cluster: Cluster) -> None:
    """An index build with workers and out-of-line values read in parallel, denied too."""
    with denied_cluster.connect() as conn:
        conn.execute("SET max_parallel_maintenance_workers = 2; SET maintenance_work_mem = '64MB'")
        conn.execute("CREATE TEMP TABLE b AS SELECT g id, md5(g::text) s, CASE WHEN g % 50 = 0 "
                     "THEN repeat(md5(g::text), 200) END big FROM generate_series(1, 300000) g")
        conn.execute("CREATE INDEX b_s ON b (s)")
        force_parallel(conn)
        query = "SELECT count(*), sum(length(big)) FROM b WHERE s LIKE '%ab%'"
        assert "Workers Launched" in plan_of(conn, query)
        assert conn.execute(query).fetchall() == serial_rows(conn, query)
        conn.execute("SET enable_seqscan = off; SET enable_bitmapscan = off")
        ordered = "SELECT s FROM b WHERE s < '1' ORDER BY s"
        assert conn.execute(ordered).fetchall() == serial_rows(conn, ordered)
    assert_no_error(denied_cluster)


# -- the pool is the leader's alone -------------------------------------------------------


def pool_path(backend_pid: int) -> Path:
    for link in Path(f"/proc/{backend_pid}/fd").iterdir():
        try:
            if os.readlink(link).startswith(POOL_LINK):
                return link
        except OSError:
            continue
    raise AssertionError(f"backend {backend_pid} holds no pool")


ATTACK = r"""
import errno, mmap, os, sys
path = sys.argv[1]
out = []
def attempt(name, action):
    try:
        action()
        out.append(name + " done")
    except OSError as e:
        out.append(name + " refused " + errno.errorcode.get(e.errno, str(e.errno)))
attempt("truncate", lambda: os.truncate(path, 0))
attempt("open for writing", lambda: os.close(os.open(path, os.O_RDWR)))
fd = os.open(path, os.O_RDONLY)
attempt("chmod", lambda: os.fchmod(fd, 0o600))
try:
    rw = os.open(path, os.O_RDWR)
except OSError:
    rw = None
if rw is not None:
    attempt("pwrite", lambda: os.pwrite(rw, b"x", 0))
    attempt("ftruncate", lambda: os.ftruncate(rw, 0))
    attempt("writable mmap", lambda: mmap.mmap(rw, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE))
attempt("grow", lambda: os.ftruncate(fd, 1 << 40))
print("\n".join(out))
"""


def test_other_processes_cannot_change_the_pool(preloaded_cluster: Cluster) -> None:
    """As the server's OS user: truncating, writing, a writable mapping of a live session's
    pool are refused (even after the attacker makes the memfd writable by mode: the seals
    hold); no backend is killed; the session's next query is exact."""
    mark = log_mark(preloaded_cluster)
    with preloaded_cluster.connect() as conn:
        conn.execute("CREATE TEMP TABLE t AS SELECT g, md5(g::text) s FROM generate_series(1, 100000) g")
        before = conn.execute("SELECT count(*), max(s) FROM t").fetchall()
        pid = conn.info.backend_pid
        path = pool_path(pid)
        user, group, groups = preloaded_cluster.os_user.subprocess_identity()
        # The server's OS user may not reach a virtual environment under root's home.
        python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
        result = subprocess.run([python, "-c", ATTACK, str(path)], capture_output=True, text=True,
                                user=user, group=group, extra_groups=groups, check=True)
        lines = result.stdout.splitlines()
        assert "truncate refused EACCES" in lines, lines
        assert "open for writing refused EACCES" in lines, lines
        assert "grow refused EINVAL" in lines or "grow refused EBADF" in lines, lines
        assert not any(line.endswith(" done") and not line.startswith("chmod") for line in lines), lines
        if "chmod done" in lines:  # the owner may change the mode: the seals still refuse
            assert {"pwrite refused EPERM", "ftruncate refused EPERM", "writable mmap refused EPERM"} <= set(lines)
        assert conn.execute("SELECT count(*), max(s) FROM t").fetchall() == before
        force_parallel(conn)
        assert conn.execute("SELECT count(*), max(s) FROM t").fetchall() == before
        assert conn.info.backend_pid == pid
    assert_no_error(preloaded_cluster, mark)


# -- strict overcommit ------------------------------------------------------------------


def test_strict_overcommit_reserves_the_pool_whole(pg_config_path: str) -> None:
    cluster = shimmed(pg_config_path, "strict_overcommit")
    try:
        with cluster.connect(options="-c temp_buffers=64MB") as conn:
            conn.execute("CREATE TEMP TABLE t AS SELECT g FROM generate_series(1, 1000) g")
            conn.execute("SELECT count(*) FROM t")
            pool = pool_path(conn.info.backend_pid)
            stat = pool.stat()
            assert stat.st_size >= 64 << 20
            assert stat.st_blocks * 512 >= stat.st_size, "the pool's memory was not charged whole"
        assert "overcommit_memory reads 2" in cluster.server_log()
        assert_no_error(cluster)
    finally:
        cluster.cleanup()


def test_failed_reservation_keeps_the_pool_private(pg_config_path: str) -> None:
    cluster = shimmed(pg_config_path, "strict_overcommit", FAKE_FALLOCATE_ERRNO=str(errno.ENOMEM))
    try:
        with cluster.connect(options="-c temp_buffers=64MB") as conn:
            conn.execute(JOIN_SETUP)
            conn.execute(COST_SETTINGS)
            query = "SELECT count(*), max(v) FROM t1 WHERE v LIKE '%ab%'"
            plan = plan_of(conn, query)
            assert "Workers Launched: 2" in plan, plan
            assert "could not reserve the memory of the local buffers under strict overcommit" in plan, plan
            assert conn.execute(query).fetchall() == serial_rows(conn, query)
            with pytest.raises(AssertionError):
                pool_path(conn.info.backend_pid)
        log = cluster.server_log()
        assert re.search(r"LOG:  pg_tempbuf: could not reserve \d+ bytes for the local buffers of this "
                         r"session: Cannot allocate memory", log), log[-2000:]
        assert_no_error(cluster)
    finally:
        cluster.cleanup()


# -- the leader's own code finds buffers -------------------------------------------------

CURSOR_FUNCTION = """
CREATE FUNCTION pg_temp.open_cursors(n int) RETURNS int LANGUAGE plpgsql PARALLEL RESTRICTED AS $$
DECLARE
    cursors refcursor[];
    c refcursor;
    total int := 0;
    r record;
BEGIN
    FOR i IN 1..n LOOP
        c := 'c' || i || '_' || txid_current_if_assigned();
        OPEN c FOR SELECT x FROM other WHERE x > i * 2000;
        FETCH c INTO r;
        cursors := cursors || c;
    END LOOP;
    FOREACH c IN ARRAY cursors LOOP
        FETCH c INTO r;
        total := total + r.x;
        CLOSE c;
    END LOOP;
    RETURN total;
END $$;
"""


def outcome(conn: psycopg.Connection[Any], query: str) -> object:
    """The query's rows, or the SQLSTATE of its error."""
    try:
        with conn.transaction():
            return conn.execute(query).fetchall()
    except psycopg.Error as e:
        return f"error {e.sqlstate}"


@pytest.mark.parametrize("cursors", [10, 40])
def test_user_code_above_gather_finds_free_buffers(preloaded_cluster: Cluster, cursors: int) -> None:
    """temp_buffers = 100: a function above a parallel scan opens cursors on another temp
    table, each pinning a page; the scan's pins leave it room, and it answers as off.  (On 17,
    whose sequential scans read ahead through a stream of pins of their own, 40 cursors exhaust
    the pool with pg_tempbuf.parallel_scan off too: then both fail alike.)"""
    with preloaded_cluster.connect(options="-c temp_buffers=100") as conn:
        conn.execute("CREATE TEMP TABLE other AS SELECT g x FROM generate_series(1, 100000) g")
        conn.execute("CREATE TEMP TABLE big AS SELECT g id, md5(g::text) s FROM generate_series(1, 60000) g")
        conn.execute("ANALYZE other; ANALYZE big")
        conn.execute("SELECT count(*) FROM big")  # the pool holds the end of big
        conn.execute(CURSOR_FUNCTION)
        force_parallel(conn)
        query = f"SELECT pg_temp.open_cursors({cursors}), count(*) FROM big WHERE s LIKE '%ab%'"
        plan = plan_of(conn, query) if cursors == 10 else ""
        conn.execute("SET pg_tempbuf.parallel_scan = off")
        expected = outcome(conn, query)
        conn.execute("SET pg_tempbuf.parallel_scan = on")
        assert outcome(conn, query) == expected
    if cursors == 10:
        assert "Parallel Custom Scan (Temp Seq Scan)" in plan and "Workers Launched" in plan, plan
        assert isinstance(expected, list), expected
    elif preloaded_cluster.version_num // 10000 != 17:
        assert isinstance(expected, list), expected  # the case: off answers
