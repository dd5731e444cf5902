"""The article's ten steps for one table size, in one session (temp_buffers is per session
and fixed at its first use, so each size needs a fresh connection)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from pglab.errors import LabError, MeasurementMismatch
from pglab.experiments.flush_cost import options as opt
from pglab.experiments.flush_cost.options import EvictMode
from pglab.explain import ExplainResult, parse_explain

TABLE = "pglab_flush_cost"
DISPLACER = "pglab_displacer"
PROBE = "pglab_probe"
SERIAL_SCAN = {"pg_tempbuf.parallel_scan": "off", "max_parallel_workers_per_gather": "0"}
# One worker reads every page privately while the leader waits: with the extension's costs at
# zero, its full scan ties with the stock Seq Scan and wins as the parallel-safe one; the forced
# single-copy Gather (debug_parallel_query, force_parallel_mode before 16) runs it in a worker.
# No partial plan: parallel setup is priced out.  The table is clean: nothing to flush.  The
# leader's pool off: the worker reads the file, as the article's flush-then-read does (with the
# pool, it would copy the pages the leader holds out of its memory; pglab page-read times that).
ONE_WORKER_PRIVATE_SCAN = {
    "pg_tempbuf.shared_pool": "off",
    "parallel_setup_cost": "1e9",
    "max_parallel_workers_per_gather": "1",
    "pg_tempbuf.write_page_cost": "0",
    "pg_tempbuf.buffer_scan_cost": "0",
    "pg_tempbuf.read_page_cost": "0",
    "pg_tempbuf.parallel_margin": "0",
}
# The index phases read through an index scan: no other path.
INDEX_ONLY_PATH = {"enable_seqscan": "off", "enable_bitmapscan": "off", "enable_indexonlyscan": "off"}
INDEX = "pglab_flush_cost_id"
# ~1.9 KB per row stays below the TOAST threshold (~2 KB), so rows are stored inline,
# uncompressed, and pages fill predictably.
PAD_BYTES = 1900


@dataclass(frozen=True)
class PoolState:
    allocated: int
    dirtied: int
    pool_size: int


@dataclass(frozen=True)
class PhaseMeasurement:
    size: int
    iteration: int
    phase: str
    explain: ExplainResult
    before: PoolState  # the local buffer pool just before the measured call
    relpages: int


@dataclass
class SizeSession:
    """Runs iterations of the ten steps on one connection whose temp_buffers fits `size`."""

    conn: psycopg.Connection[Any]
    size: int
    evict: EvictMode
    before_read: Callable[[], None] = lambda: None  # e.g. drop the OS page cache
    block_size: int = 8192
    rows_per_page: int = field(default=0, init=False)
    _last_plan: str = field(default="", init=False)
    _force_parallel_setting: str = field(default="debug_parallel_query", init=False)

    def prepare(self) -> None:
        self.block_size = int(self._scalar("SELECT current_setting('block_size')::int"))
        version = int(self._scalar("SELECT current_setting('server_version_num')::int"))
        self._force_parallel_setting = "debug_parallel_query" if version >= 160000 else "force_parallel_mode"
        self.rows_per_page = self._probe_rows_per_page()

    # -- the steps -----------------------------------------------------------------------

    def run_iteration(
        self,
        iteration: int,
        on_phase: Callable[[str], None],
        record: Callable[[PhaseMeasurement], None],
    ) -> None:
        """Create and fill the table, then measure steps 1-10; `record` gets each measurement
        before it is checked, so a failing one still reaches raw.csv."""
        n = self.size
        evict_seq, evict_random = opt.eviction_phases(self.evict)
        self._create_filled_table(TABLE, n)

        def measure(phase: str, call: sql.Composable) -> ExplainResult:
            on_phase(phase)
            before = self._pool_state()
            explain = self._explain(call)
            measurement = PhaseMeasurement(n, iteration, phase, explain, before, n)
            record(measurement)
            self._check(measurement)
            return explain

        table = sql.Literal(TABLE)
        measure(opt.WRITE_SEQ, sql.SQL("pg_flush_local_buffers()"))
        measure(opt.DRY_WRITE, sql.SQL("pg_flush_local_buffers()"))
        self._evict(evict_seq, measure)
        self.before_read()
        measure(opt.READ_SEQ, sql.SQL("pg_read_temp_relation({}::regclass, false)").format(table))
        measure(opt.DRY_READ, sql.SQL("pg_read_temp_relation({}::regclass, false)").format(table))
        self._evict(evict_random, measure)
        self.before_read()
        measure(opt.READ_RANDOM, sql.SQL("pg_read_temp_relation({}::regclass, true)").format(table))
        measure(opt.HIT_CHECK, sql.SQL("pg_read_temp_relation({}::regclass, false)").format(table))
        count = sql.SQL("count(*) FROM {}").format(sql.Identifier(TABLE))
        with self._settings(SERIAL_SCAN):
            measure(opt.SCAN_RESIDENT, count)
        with self._settings({**ONE_WORKER_PRIVATE_SCAN, self._force_parallel_setting: "on"}):
            measure(opt.SCAN_PRIVATE, count)
        measure(opt.MARK_DIRTY, sql.SQL("pg_temp_buffers_dirty({}::regclass)").format(table))
        measure(opt.WRITE_RANDOM, sql.SQL("pg_flush_local_buffers()"))
        # Every row through an index on id, heap fetched (count(pad) is no index-only read);
        # the index is built and flushed first, so nothing is written while measured.
        self.conn.execute(sql.SQL("CREATE INDEX {} ON {} (id)").format(
            sql.Identifier(INDEX), sql.Identifier(TABLE)))
        self.conn.execute("SELECT pg_flush_local_buffers()")
        by_index = sql.SQL("count(pad) FROM {} WHERE id > 0").format(sql.Identifier(TABLE))
        with self._settings({**SERIAL_SCAN, **INDEX_ONLY_PATH}):
            self.conn.execute(sql.SQL("SELECT {}").format(by_index))  # the index's pages in
            measure(opt.INDEX_RESIDENT, by_index)
        with self._settings({**ONE_WORKER_PRIVATE_SCAN, **INDEX_ONLY_PATH,
                             self._force_parallel_setting: "on"}):
            measure(opt.INDEX_PRIVATE, by_index)
        self._drop_table(TABLE)

    def _evict(self, phase: str, measure: Callable[[str, sql.Composable], ExplainResult]) -> None:
        if self.evict is EvictMode.FUNCTION:
            measure(phase, sql.SQL("pg_evict_local_buffers({}::regclass)").format(sql.Literal(TABLE)))
            return
        # The article's way: a table as large as the pool pushes ours out; flush what the
        # displacer left dirty (recorded as its own phase), then drop it to free its buffers.
        pool_size = self._pool_state().pool_size
        self._create_filled_table(DISPLACER, pool_size)
        measure(phase, sql.SQL("pg_flush_local_buffers()"))
        self._drop_table(DISPLACER)

    # -- checks: the EXPLAIN counters must show that each step did what it claims ---------

    def _check(self, m: PhaseMeasurement) -> None:
        n, e, dirty_before = m.size, m.explain, m.before.dirtied
        reads_all_with_function = self.evict is EvictMode.FUNCTION
        expectations: dict[str, list[tuple[bool, str]]] = {
            opt.WRITE_SEQ: [
                (e.local_written == dirty_before, f"local written = {dirty_before} (the dirty buffers)"),
                (e.local_written >= n, f"local written >= {n} (the table's blocks)"),
            ],
            opt.DRY_WRITE: [(e.local_written == 0, "no local writes")],
            opt.EVICT_FOR_SEQ: [(e.local_written == 0, "no local writes (pages are clean)")],
            opt.EVICT_FOR_RANDOM: [(e.local_written == 0, "no local writes (pages are clean)")],
            opt.FLUSH_DISPLACER: [(e.local_written == dirty_before, f"local written = {dirty_before}")],
            opt.FLUSH_DISPLACER_FOR_RANDOM: [
                (e.local_written == dirty_before, f"local written = {dirty_before}")
            ],
            opt.READ_SEQ: self._read_expectations(e, n, reads_all_with_function),
            opt.READ_RANDOM: self._read_expectations(e, n, reads_all_with_function),
            opt.DRY_READ: [(e.local_hit == n and e.local_read == 0, f"local hit = {n}, no reads")],
            opt.HIT_CHECK: [(e.local_hit == n and e.local_read == 0, f"local hit = {n}, no reads")],
            opt.SCAN_RESIDENT: [(e.local_hit == n and e.local_read == 0, f"local hit = {n}, no reads")],
            # Private reads bypass local buffers, and a worker did them: each a read of the
            # file, which the worker counts as a local read (as core counts a backend's).
            opt.SCAN_PRIVATE: [
                (e.local_hit == 0 and e.local_read == n, f"no local hit, local read = {n} (the worker's)"),
                ("Workers Launched: 1" in self._last_plan and "Temp Seq Scan" in self._last_plan,
                 "one worker launched, running Temp Seq Scan"),
            ],
            # The pool is sized for the table: a few index pages may not stay in it.
            opt.INDEX_RESIDENT: [
                (e.local_hit >= n and e.local_read <= max(8, n // 50),
                 f"local hit >= {n} (heap and index), a few reads at most"),
                ("Index Scan using" in self._last_plan, "core's Index Scan"),
            ],
            opt.INDEX_PRIVATE: [
                (e.local_hit == 0 and e.local_read >= n,
                 f"no local hit, local read >= {n} (the worker's, heap and index)"),
                ("Workers Launched: 1" in self._last_plan and "Temp Index Scan" in self._last_plan,
                 "one worker launched, running Temp Index Scan"),
            ],
            opt.MARK_DIRTY: [(e.local_dirtied == n, f"local dirtied = {n}")],
            opt.WRITE_RANDOM: [
                (e.local_written == n, f"local written = {n}"),
                (e.local_written == dirty_before, f"local written = {dirty_before} (the dirty buffers)"),
            ],
        }
        for ok, wanted in expectations.get(m.phase, []):
            if not ok:
                raise MeasurementMismatch(
                    f"size {n} iteration {m.iteration} phase {m.phase}: expected {wanted}, "
                    f"but EXPLAIN reported 'Buffers: {e.buffers_line}'"
                )

    @staticmethod
    def _read_expectations(e: ExplainResult, n: int, all_evicted: bool) -> list[tuple[bool, str]]:
        if all_evicted:
            return [(e.local_read == n and e.local_hit == 0, f"local read = {n}, no hits")]
        # A displacer may leave a few of the table's pages resident (the article saw hit=1).
        return [
            (e.local_read + e.local_hit == n, f"local hit + read = {n}"),
            (e.local_read > 0, "some local reads (the displacer evicted nothing)"),
            (e.local_written == 0, "no local writes"),
        ]

    # -- SQL helpers ---------------------------------------------------------------------

    def _explain(self, call: sql.Composable) -> ExplainResult:
        query = sql.SQL("EXPLAIN (ANALYZE, TIMING OFF, BUFFERS) SELECT {}").format(call)
        lines = [row[0] for row in self.conn.execute(query).fetchall()]
        self._last_plan = "\n".join(lines)
        return parse_explain(lines)

    @contextmanager
    def _settings(self, settings: dict[str, str]) -> Iterator[None]:
        for name, value in settings.items():
            self.conn.execute(sql.SQL("SELECT set_config({}, {}, false)").format(
                sql.Literal(name), sql.Literal(value)))
        try:
            yield
        finally:
            for name in settings:
                self.conn.execute(sql.SQL("RESET {}").format(sql.Identifier(*name.split("."))))

    def _pool_state(self) -> PoolState:
        row = self.conn.execute(
            "SELECT pg_allocated_local_buffers(), pg_dirtied_local_buffers(), pg_local_buffer_pool_size()"
        ).fetchone()
        assert row is not None
        return PoolState(int(row[0]), int(row[1]), int(row[2]))

    def _scalar(self, query: str | sql.SQL | sql.Composed) -> Any:
        row = self.conn.execute(query).fetchone()
        assert row is not None
        return row[0]

    def _probe_rows_per_page(self) -> int:
        """How many of our rows fit on one heap page, measured on a scratch table."""
        self._create_table(PROBE)
        self.conn.execute(
            sql.SQL("INSERT INTO {} SELECT g, repeat('x', {}) FROM generate_series(1, 64) g").format(
                sql.Identifier(PROBE), sql.Literal(PAD_BYTES)
            )
        )
        per_page = int(self._scalar(f"SELECT count(*) FROM {PROBE} WHERE ctid < '(1,0)'::tid"))
        self._drop_table(PROBE)
        if per_page < 1:
            raise LabError("probe table holds no rows on its first page")
        return per_page

    def _create_table(self, name: str) -> None:
        self.conn.execute(
            sql.SQL("CREATE TEMP TABLE {} (id int4, pad text)").format(sql.Identifier(name))
        )

    def _create_filled_table(self, name: str, nblocks: int) -> None:
        """A temp table of exactly `nblocks` main-fork blocks, all its pages dirty in the pool."""
        self._create_table(name)
        self.conn.execute(
            sql.SQL("INSERT INTO {} SELECT g, repeat('x', {}) FROM generate_series(1, {}) g").format(
                sql.Identifier(name), sql.Literal(PAD_BYTES), sql.Literal(nblocks * self.rows_per_page)
            )
        )
        # A plain read of every row now, so that no measured step sets what a first reader
        # sets: hint bits on every version, and from PostgreSQL 19 PD_ALL_VISIBLE and the
        # visibility map (a read-only scan sets them on access, writing the VM fork).
        with self._settings(SERIAL_SCAN):
            self.conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(name)))
        size = int(self._scalar(
            sql.SQL("SELECT pg_relation_size({}::regclass, 'main')").format(sql.Literal(name))
        ))
        if size != nblocks * self.block_size:
            raise MeasurementMismatch(
                f"temp table {name} has {size // self.block_size} main-fork blocks, wanted {nblocks}"
            )

    def _drop_table(self, name: str) -> None:
        self.conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(name)))

    def table_filepath(self) -> str:
        """Where the current test table's file lives (to confirm temp_tablespaces took effect)."""
        self._create_table(PROBE)
        path = str(self._scalar(f"SELECT pg_relation_filepath('{PROBE}')"))
        self._drop_table(PROBE)
        return path
