"""The leader's local buffer pool in a memfd its workers map (shared_pool.c).

At the first safe point after local buffers exist (a statement's planning, a parallel scan's
start) the backend moves its pool into a memfd named "pg_tempbuf local buffers", mapped
MAP_SHARED; workers map it read-only through /proc/<leader>/fd/<n>.  These tests look at it
from the outside, through /proc (the test runs as root here and in CI, the server as the OS
user pglab; as the server's own user /proc is readable too):

- the pool moves, sized by temp_buffers, and only where pg_tempbuf.shared_pool is on; parallel
  plans return the serial plan's rows either way;
- temp_buffers keeps core's meaning: settable until the first use, then core's error;
- the move does not hold the pool's memory twice: the peak RSS of a session that loads ~1 GB
  is that of the same session with the pool kept private;
- the memfd and its memory go away with the session, also when its backend is killed (-9) in
  the middle of a parallel query whose workers map it.

Other suites (another checkout's, or this one run twice) may run on the same machine at the
same time, with memfds of the same name: a memfd is identified here by its inode, which the
kernel does not hand out again soon, and /proc/meminfo's Shmem, which every process on the
machine moves, gets a wide tolerance (see shmem_tolerance).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from conftest import force_parallel, serial_rows, start_preloaded, temp_scan_nodes, workers_read
from pglab.cluster import Cluster

pytestmark = pytest.mark.skipif(sys.platform != "linux",
                                reason="the shared pool is a Linux memfd, observed through /proc")

MEMFD_NAME = "/memfd:pg_tempbuf local buffers"
KB = 1024
MB = 1024 * KB
GIB = 1024 * MB
# In front of the pages: a header page and a 64-byte descriptor per 8 kB buffer (1/128).
POOL_OVERHEAD = 1 / 64

QUERY = "SELECT x % 7 AS k, count(*), sum(x), max(s) FROM t WHERE s LIKE '%a%' GROUP BY 1 ORDER BY 1"


# -- what /proc says ---------------------------------------------------------------------------

def backend_pid(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


def memfd_vmas(pid: int) -> list[tuple[int, int, int]]:
    """(inode, mapped bytes, resident bytes) of each of pid's mappings of a pool memfd."""
    found: list[tuple[int, int, int]] = []
    vma: tuple[int, int] | None = None  # the current mapping's inode and size, if a pool's
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) >= 5 and "-" in fields[0] and ":" in fields[3]:  # a mapping's header
            vma = None
            if len(fields) == 6 and fields[5].startswith(MEMFD_NAME):
                start, end = (int(a, 16) for a in fields[0].split("-"))
                vma = (int(fields[4]), end - start)
        elif vma is not None and fields[0] == "Rss:":
            found.append((vma[0], vma[1], int(fields[1]) * KB))
            vma = None
    return found


def the_pool(pid: int) -> tuple[int, int, int]:
    """The (inode, mapped bytes, resident bytes) of the one pool memfd pid maps."""
    vmas = memfd_vmas(pid)
    assert len(vmas) == 1, f"backend {pid} maps {len(vmas)} pool memfds: {vmas}"
    return vmas[0]


def holders(inode: int) -> dict[int, str]:
    """Every process on the machine that maps the memfd `inode` or holds a descriptor of it,
    with how (scans all of /proc)."""
    found: dict[int, str] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for line in (proc / "maps").read_text().splitlines():
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and fields[5].startswith(MEMFD_NAME) and int(fields[4]) == inode:
                    found[int(proc.name)] = "maps it"
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd).startswith(MEMFD_NAME) and fd.stat().st_ino == inode:
                    found[int(proc.name)] = found.get(int(proc.name), "") + " holds a descriptor"
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
            continue  # the process went away while we looked
        except PermissionError:
            continue  # the VM's init, even to root: not a process PostgreSQL could share with
    return found


def status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == field:
            return int(value.split()[0])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def pools_bytes() -> int:
    """The memory every pool memfd on the machine holds now (other sessions', other suites'),
    from the descriptors that hold them: a pool lives as long as its leader holds it."""
    seen: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd).startswith(MEMFD_NAME):
                    st = fd.stat()
                    seen[st.st_ino] = st.st_blocks * 512
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError, PermissionError):
            continue
    return sum(seen.values())


def shmem_bytes(less_pools: bool = True) -> int:
    """/proc/meminfo's Shmem, less what the pools alive now hold unless asked not to: those are
    other sessions' before ours is made and after it is gone, which other suites on the machine
    load and drop meanwhile."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1]) * KB - (pools_bytes() if less_pools else 0)
    raise AssertionError("no Shmem in /proc/meminfo")


def settled_shmem_bytes(samples: int = 5, interval_s: float = 0.3) -> int:
    """Shmem's lowest value over a second or two: another process's short-lived shared memory
    (a cluster starting, a test's table) does not count; a leak would be in every sample."""
    values = []
    for _ in range(samples):
        values.append(shmem_bytes())
        time.sleep(interval_s)
    return min(values)


def shmem_back_bytes(before: int, tolerance: int, timeout_s: float = 30) -> int:
    """Shmem once it is back within tolerance of before, else its lowest value in timeout_s:
    the memfd's pages go as its last holder exits, another suite's may come and go meanwhile."""
    lowest = shmem_bytes()
    deadline = time.monotonic() + timeout_s
    while lowest - before > tolerance and time.monotonic() < deadline:
        time.sleep(0.2)
        lowest = min(lowest, shmem_bytes())
    return lowest


def shmem_tolerance(resident: int) -> int:
    """How far Shmem may be from where it was, given the memfd's resident bytes.  Shmem is the
    whole machine's (tmpfs, memfds, every cluster's shared buffers): on this project's VM it
    moved by 30-170 MB within seconds while other suites ran.  Half the memfd, at least 128 MB:
    a pool that stayed would still show, as its whole resident size."""
    return max(128 * MB, resident // 2)


def check_shmem_back(before: int, during: int, size: int, pool: tuple[int, int, int], holders_note: str) -> str:
    """Once the session is gone: Shmem back within shmem_tolerance of before (shmem_back_bytes), after
    it grew by about the pool's resident bytes while the session lived.  Prints the summary, of the
    relation's size, the pool (inode, mapped, resident bytes), Shmem and holders_note; returns it for
    the caller's own checks."""
    inode, mapped, resident = pool
    tolerance = shmem_tolerance(resident)
    after = shmem_back_bytes(before, tolerance)
    summary = (f"relation {mb(size)}, memfd {inode} mapped {mb(mapped)}, resident {mb(resident)}; "
               f"Shmem before {mb(before)}, during {mb(during)} ({mb(during - before)}), "
               f"after {mb(after)} ({mb(after - before)}), tolerance {mb(tolerance)}; "
               f"{holders_note}")
    print("\n" + summary)
    assert during - before >= resident - tolerance, summary
    assert after - before <= tolerance, summary
    return summary


def wait_until(what: str, predicate: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        time.sleep(0.05)


def wait_for_exit(pid: int, timeout_s: float = 20) -> None:
    def gone() -> bool:
        try:
            return status_state(pid) == "Z"  # exited, not yet reaped by the postmaster
        except FileNotFoundError:
            return True
    wait_until(f"backend {pid} exits", gone, timeout_s)


def status_state(pid: int) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("State:"):
            return line.split()[1]
    return "?"


def mb(n: float) -> str:
    return f"{n / MB:.1f} MB"


# -- tables and plans --------------------------------------------------------------------------

def load_small(conn: psycopg.Connection[Any], rows: int = 40000) -> None:
    conn.execute("CREATE TEMP TABLE t AS SELECT g AS x, md5(g::text) AS s FROM generate_series(1, %s) g",
                 (rows,))
    conn.execute("ANALYZE t")


def load_wide(conn: psycopg.Connection[Any], name: str, rows: int) -> int:
    """A temp table of 430-byte rows (384 bytes of text, kept inline): about 2,430 rows a MB.
    Its size in bytes."""
    conn.execute(f"CREATE TEMP TABLE {name} AS "
                 "SELECT g AS x, repeat(md5(g::text), 12) AS s FROM generate_series(1, %s) g", (rows,))
    row = conn.execute(f"SELECT pg_relation_size('{name}')").fetchone()
    assert row is not None
    return int(row[0])


# -- 1. the pool moves into the memfd ----------------------------------------------------------

@pytest.mark.parametrize("shared_pool", ["on", "off"])
def test_pool_moves_into_the_memfd_at_the_next_statement(preloaded_cluster: Cluster,
                                                         shared_pool: str) -> None:
    """temp_buffers=64MB: after the load and one more statement the backend maps the pool's
    memfd, 64 MB of pages and their descriptors; with pg_tempbuf.shared_pool off from the
    start it never does.  Either way the workers read pages and the parallel plan's rows are
    the serial plan's."""
    with preloaded_cluster.connect(options="-c temp_buffers=64MB") as conn:
        conn.execute(f"SET pg_tempbuf.shared_pool = {shared_pool}")
        force_parallel(conn)
        conn.execute("SET pg_tempbuf.debug_sync_start = on")
        pid = backend_pid(conn)
        load_small(conn)
        row = conn.execute("SELECT pg_relation_size('t')").fetchone()
        assert row is not None
        size = int(row[0])
        vmas = memfd_vmas(pid)
        print(f"\n[shared_pool={shared_pool}] backend {pid} memfd mappings (inode, bytes, resident): {vmas}")
        if shared_pool == "on":
            assert len(vmas) == 1, vmas
            _, mapped, resident = vmas[0]
            assert 64 * MB <= mapped <= 64 * MB * (1 + POOL_OVERHEAD), \
                f"pool mapping of {mapped} bytes for temp_buffers=64MB"
            assert resident >= size, f"the table's {size} bytes of pages are not in the memfd: {vmas}"
            row = conn.execute("SELECT pg_local_buffer_pool_size()").fetchone()
            assert row == (8192,)
        else:
            assert vmas == []
        (node,) = temp_scan_nodes(conn, QUERY)
        assert workers_read(node), node
        if shared_pool == "on":
            assert "leader's pool" in node["Page Source"], node
        else:
            assert node["Page Source"] == "file (pg_tempbuf.shared_pool is off)", node
        parallel = conn.execute(QUERY).fetchall()
        serial = serial_rows(conn, QUERY)
        assert len(serial) == 7
        assert parallel == serial
        if shared_pool == "off":
            assert memfd_vmas(pid) == [], "a parallel scan with shared_pool off adopted the pool"


# -- 2. temp_buffers keeps its meaning -----------------------------------------------------------

@pytest.fixture(scope="module")
def plain_cluster(pg_config_path: str) -> Iterator[Cluster]:
    """A cluster without pg_tempbuf: core's own behavior, to compare with."""
    cluster = Cluster(pg_config_path)
    cluster.start()
    yield cluster
    cluster.cleanup()


def temp_buffers_story(conn: psycopg.Connection[Any]) -> tuple[list[Any], tuple[Any, ...], str]:
    """Create a temp table, set temp_buffers before its first use, use it, try to set
    temp_buffers again: (the table's rows, the error's fields, temp_buffers afterwards)."""
    conn.execute("CREATE TEMP TABLE tb (x int, s text)")
    conn.execute("SET temp_buffers = '32MB'")
    conn.execute("INSERT INTO tb SELECT g, md5(g::text) FROM generate_series(1, 10000) g")
    rows = conn.execute("SELECT count(*), sum(x), max(s) FROM tb").fetchall()
    with pytest.raises(psycopg.Error) as raised:
        conn.execute("SET temp_buffers = '64MB'")
    diag = raised.value.diag
    error = (diag.sqlstate, diag.severity_nonlocalized, diag.message_primary, diag.message_detail,
             diag.message_hint)
    row = conn.execute("SHOW temp_buffers").fetchone()
    assert row is not None
    return rows, error, str(row[0])


def test_temp_buffers_is_set_before_first_use_and_refused_after(preloaded_cluster: Cluster,
                                                                plain_cluster: Cluster) -> None:
    """CREATE TEMP TABLE, SET temp_buffers = '32MB', first insert: the pool has 4096 buffers
    (and the memfd is sized for them); setting temp_buffers after that fails with the error
    core gives on a cluster without the extension, and the setting stays."""
    with plain_cluster.connect() as conn:
        core_rows, core_error, core_after = temp_buffers_story(conn)
    with preloaded_cluster.connect() as conn:
        pid = backend_pid(conn)
        rows, error, after = temp_buffers_story(conn)
        row = conn.execute("SELECT pg_local_buffer_pool_size()").fetchone()
        assert row == (4096,)
        _, mapped, _ = the_pool(pid)
        assert 32 * MB <= mapped <= 32 * MB * (1 + POOL_OVERHEAD), \
            f"pool mapping of {mapped} bytes for temp_buffers=32MB"
    print(f"\ncore's error: {core_error}")
    assert core_error[0] == "22023"  # invalid_parameter_value, from core's check hook
    assert error == core_error
    assert rows == core_rows
    assert after == core_after == "32MB"


# -- 3. memory is not held twice ---------------------------------------------------------------

# ~1.02 GB of pages (2,430 rows a MB).
BIG_ROWS = 2_480_000


def peak_of_gigabyte_session(cluster: Cluster, shared_pool: str) -> dict[str, int]:
    with cluster.connect(options="-c temp_buffers=2GB") as conn:
        conn.execute(f"SET pg_tempbuf.shared_pool = {shared_pool}")
        pid = backend_pid(conn)
        started = time.monotonic()
        size = load_wide(conn, "big", BIG_ROWS)
        row = conn.execute("SELECT count(*), sum(length(s)) FROM big").fetchone()
        assert row == (BIG_ROWS, BIG_ROWS * 384)
        figures = {
            "relation": size,
            "VmHWM": status_kb(pid, "VmHWM") * KB,
            "VmRSS": status_kb(pid, "VmRSS") * KB,
            "RssAnon": status_kb(pid, "RssAnon") * KB,
            "RssShmem": status_kb(pid, "RssShmem") * KB,
            "memfd mapped": sum(v[1] for v in memfd_vmas(pid)),
            "memfd resident": sum(v[2] for v in memfd_vmas(pid)),
        }
        print(f"\n[shared_pool={shared_pool}] {time.monotonic() - started:.1f} s; "
              + ", ".join(f"{k} {mb(v)}" for k, v in figures.items()))
    return figures


def test_moving_a_gigabyte_pool_does_not_double_the_peak(preloaded_cluster: Cluster) -> None:
    """temp_buffers=2GB, ~1 GB loaded privately, then a query (the pool moves, page by page,
    the private copy given back as it goes): the backend's peak RSS (VmHWM) is within 1.1x of
    the same session's with pg_tempbuf.shared_pool off.  The reference is the same cluster with
    the setting off rather than a cluster without the library: that isolates the move, with
    the same server, settings and plans otherwise."""
    off = peak_of_gigabyte_session(preloaded_cluster, "off")
    on = peak_of_gigabyte_session(preloaded_cluster, "on")
    ratio = on["VmHWM"] / off["VmHWM"]
    summary = (f"VmHWM on {mb(on['VmHWM'])}, off {mb(off['VmHWM'])}, ratio {ratio:.3f}; "
               f"relation {mb(on['relation'])}; on: memfd resident {mb(on['memfd resident'])}, "
               f"RssAnon {mb(on['RssAnon'])}; off: RssAnon {mb(off['RssAnon'])}")
    print(summary)
    assert 0.9 * GIB <= on["relation"] <= 1.2 * GIB, summary
    # The comparison means something: off held the table privately, on moved it.
    assert off["memfd mapped"] == 0 and off["VmHWM"] >= 0.95 * off["relation"], summary
    assert on["memfd mapped"] >= 2 * GIB and on["memfd resident"] >= 0.95 * on["relation"], summary
    assert on["RssAnon"] < 0.1 * on["relation"], f"the private pages were not given back: {summary}"
    assert ratio <= 1.1, summary


# -- 4. the memfd and its memory go away -------------------------------------------------------

def test_memfd_and_its_memory_go_when_the_session_ends(preloaded_cluster: Cluster) -> None:
    """~500 MB loaded with temp_buffers=768MB: while the session lives its backend, and only it,
    maps the memfd, and Shmem grew by about its resident size; once the session ends nothing on
    the machine maps or holds the memfd and Shmem is back."""
    before = settled_shmem_bytes()
    with preloaded_cluster.connect(options="-c temp_buffers=768MB") as conn:
        pid = backend_pid(conn)
        size = load_wide(conn, "t", 1_180_000)
        conn.execute("SELECT count(*) FROM t")
        inode, mapped, resident = the_pool(pid)
        during = shmem_bytes(less_pools=False)
        during_holders = holders(inode)
    wait_for_exit(pid)
    after_holders = holders(inode)
    summary = check_shmem_back(before, during, size, (inode, mapped, resident),
                               f"holders during {during_holders}, after {after_holders}")
    assert resident >= 0.95 * size, summary
    assert during_holders == {pid: "maps it holds a descriptor"}, summary
    assert after_holders == {}, summary


def test_memfd_goes_when_the_leader_is_killed_mid_query(pg_config_path: str) -> None:
    """A parallel query over ~250 MB whose workers map the leader's memfd; the leader gets
    SIGKILL: the postmaster's crash recovery ends every process of the session, nothing on the
    machine maps or holds the memfd, Shmem is back, and the cluster answers queries, parallel
    ones over temp tables included.  (A cluster of its own: the crash ends every session.)"""
    cluster = start_preloaded(pg_config_path)
    try:
        before = settled_shmem_bytes()
        with cluster.connect(options="-c temp_buffers=384MB") as conn:
            pid = backend_pid(conn)
            size = load_wide(conn, "t", 590_000)
            conn.execute("ANALYZE t")
            inode, mapped, resident = the_pool(pid)
            during = shmem_bytes(less_pools=False)
            force_parallel(conn)
            conn.execute("SET pg_tempbuf.debug_sync_start = on")
            outcome: dict[str, BaseException | list[Any]] = {}

            def long_query() -> None:
                try:  # 590,000 rows and 0.2 ms a row: minutes, unless killed
                    outcome["rows"] = conn.execute(
                        "SELECT count(*) FROM t WHERE pg_sleep(0.0002) IS NOT NULL").fetchall()
                except BaseException as exc:  # the connection dies with the backend
                    outcome["error"] = exc

            query = threading.Thread(target=long_query, daemon=True)
            query.start()
            wait_until("a worker maps the leader's memfd", lambda: len(holders(inode)) >= 2, 30)
            during_holders = holders(inode)
            os.kill(pid, signal.SIGKILL)
            query.join(30)
            assert not query.is_alive(), "the query's client did not notice the backend's death"
        assert isinstance(outcome.get("error"), psycopg.OperationalError), outcome

        def answers() -> bool:
            try:
                with cluster.connect(connect_timeout=5) as probe:
                    return probe.execute("SELECT 1").fetchone() == (1,)
            except psycopg.OperationalError:
                return False
        wait_until("the cluster accepts connections after crash recovery", answers, 90)
        wait_until("no process holds the killed leader's memfd", lambda: not holders(inode), 10)
        log = cluster.server_log()
        check_shmem_back(before, during, size, (inode, mapped, resident),
                         f"holders before the kill {during_holders}")
        assert f"(PID {pid}) was terminated by signal 9" in log, cluster.server_log(30)
        assert "all server processes terminated; reinitializing" in log, cluster.server_log(30)
        with cluster.connect(options="-c temp_buffers=64MB") as conn:
            force_parallel(conn)
            conn.execute("SET pg_tempbuf.debug_sync_start = on")
            load_small(conn)
            (node,) = temp_scan_nodes(conn, QUERY)
            assert workers_read(node) and "leader's pool" in node["Page Source"], node
            assert conn.execute(QUERY).fetchall() == serial_rows(conn, QUERY)
    finally:
        cluster.cleanup()
