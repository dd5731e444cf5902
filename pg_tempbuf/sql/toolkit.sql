--
-- The temp-buffer toolkit on a temporary table of exactly 100 blocks.
--
CREATE EXTENSION pg_tempbuf;

-- EXPLAIN's own account of a statement's local-buffer I/O, so that each
-- function is checked against the buffer manager's counters, not only
-- against its own return value.
CREATE FUNCTION local_io(stmt text,
                         OUT hit bigint, OUT read bigint,
                         OUT dirtied bigint, OUT written bigint)
LANGUAGE plpgsql AS $$
DECLARE
    plan json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) ' || stmt INTO plan;
    hit := (plan->0->'Plan'->>'Local Hit Blocks')::bigint;
    read := (plan->0->'Plan'->>'Local Read Blocks')::bigint;
    dirtied := (plan->0->'Plan'->>'Local Dirtied Blocks')::bigint;
    written := (plan->0->'Plan'->>'Local Written Blocks')::bigint;
END $$;

-- A session that never touched a temporary table has no local buffers:
-- everything answers zero.
SELECT pg_local_buffer_pool_size() AS pool,
       pg_allocated_local_buffers() AS allocated,
       pg_dirtied_local_buffers() AS dirty,
       pg_flush_local_buffers() AS flushed,
       pg_evict_local_buffers() AS evicted,
       pg_temp_flush_cost() AS cost,
       (SELECT count(*) FROM pg_local_buffers) AS view_rows;

SET temp_buffers = '2MB';
CREATE TEMP TABLE t (x int);
-- 226 int4 rows fill a heap page: 22600 rows are 100 blocks.
INSERT INTO t SELECT g FROM generate_series(1, 22600) g;
SELECT pg_relation_size('t') / current_setting('block_size')::int AS blocks,
       pg_local_buffer_pool_size() AS pool;

-- Every page of the freshly filled table is dirty in local buffers.
SELECT pg_dirtied_local_buffers() AS dirty;
SELECT count(*) AS resident, count(*) FILTER (WHERE isdirty) AS dirty,
       min(relblocknumber), max(relblocknumber)
  FROM pg_local_buffers
 WHERE relfilenode = pg_relation_filenode('t') AND relforknumber = 0;
SELECT count(*) = pg_local_buffer_pool_size() AS one_row_per_buffer
  FROM pg_local_buffers;

-- (1) flush writes them all, (2) a second flush is a dry run.
SELECT * FROM local_io('SELECT pg_flush_local_buffers()');
SELECT pg_dirtied_local_buffers() AS dirty, pg_flush_local_buffers() AS dry_flush;
SELECT count(*) FILTER (WHERE isdirty) AS dirty_in_view FROM pg_local_buffers;

-- (3) evict, (4) read from storage in block order, (5) read again: all hits.
-- Eviction drops every resident page of the table, free space map included.
SELECT count(*) AS resident_before FROM pg_local_buffers
 WHERE relfilenode = pg_relation_filenode('t') \gset
SELECT pg_evict_local_buffers('t') = :resident_before AS evicted_all_resident;
SELECT count(*) AS resident FROM pg_local_buffers
 WHERE relfilenode = pg_relation_filenode('t');
SELECT * FROM local_io('SELECT pg_read_temp_relation(''t'')');
SELECT pg_read_temp_relation('t') AS second_read;
SELECT * FROM local_io('SELECT pg_read_temp_relation(''t'')');

-- (6) evict everything, (7) read in random order, (8) all hits again.
SELECT pg_evict_local_buffers() > 0 AS evicted_all, pg_allocated_local_buffers() AS allocated;
SELECT pg_read_temp_relation('t', randomize => true) AS random_read;
SELECT pg_read_temp_relation('t', true) AS random_hit_check;

-- (9) mark the resident pages dirty, (10) flush them.
SELECT * FROM local_io('SELECT pg_temp_buffers_dirty(''t'')');
SELECT pg_dirtied_local_buffers() AS dirty;
SELECT pg_temp_buffers_dirty('t') AS already_dirty_pages_marked_again;
SELECT pg_flush_local_buffers() AS flushed;

-- Evicting writes dirty pages first: nothing is lost.
UPDATE t SET x = -x WHERE x % 1000 = 0;
SELECT pg_dirtied_local_buffers() > 0 AS has_dirty;
SELECT pg_evict_local_buffers('t') > 100 AS evicted;
SELECT pg_dirtied_local_buffers() AS dirty;
SELECT count(*), sum(x) FROM t;

-- Eviction is per relation: another table's pages stay.
CREATE TEMP TABLE other (x int);
INSERT INTO other SELECT g FROM generate_series(1, 2260) g;
SELECT pg_read_temp_relation('t') AS read_t;
SELECT pg_evict_local_buffers('other') >= 10 AS evicted_other;
SELECT count(*) AS t_resident FROM pg_local_buffers
 WHERE relfilenode = pg_relation_filenode('t') AND relforknumber = 0;
SELECT count(*) AS other_resident FROM pg_local_buffers
 WHERE relfilenode = pg_relation_filenode('other');
SELECT count(*) FROM other;

-- A read of an empty table reads nothing.
CREATE TEMP TABLE empty (x int);
SELECT pg_read_temp_relation('empty'), pg_temp_buffers_dirty('empty'),
       pg_evict_local_buffers('empty');

-- A table larger than the pool: every block still comes from storage once.
CREATE TEMP TABLE big (x int);
INSERT INTO big SELECT g FROM generate_series(1, 226 * 300) g;
SELECT pg_evict_local_buffers() > 0 AS evicted, pg_allocated_local_buffers() AS allocated;
SELECT pg_read_temp_relation('big') AS big_read;

-- The toast table of a temporary table is temporary too.
CREATE TEMP TABLE wide (s text);
ALTER TABLE wide ALTER COLUMN s SET STORAGE EXTERNAL;
INSERT INTO wide SELECT repeat('x', 100000);
SELECT pg_evict_local_buffers() > 0 AS evicted, pg_allocated_local_buffers() AS allocated;
SELECT pg_read_temp_relation(reltoastrelid) > 0 AS toast_read
  FROM pg_class WHERE oid = 'wide'::regclass;
SELECT length(s) FROM wide;

-- Pins are visible: an open cursor holds its current page.
BEGIN;
DECLARE c CURSOR FOR SELECT * FROM t;
FETCH 1 FROM c;
SELECT count(*) > 0 AS pinned FROM pg_local_buffers WHERE local_pin_count > 0;
COMMIT;
SELECT count(*) AS pinned FROM pg_local_buffers WHERE local_pin_count > 0;

-- Parallel safety and volatility are declared truthfully.
SELECT p.proname, p.provolatile, p.proparallel, p.proisstrict
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_tempbuf')
   AND d.classid = 'pg_proc'::regclass
 ORDER BY 1;
