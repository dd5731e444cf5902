--
-- Temp Seq Scan: plans, fallbacks, and what EXPLAIN shows.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_tempbuf;
RESET client_min_messages;
LOAD 'pg_tempbuf';
-- Workers read the file here, after the leader's writes, on every platform:
-- reading the leader's pool in place depends on the system (tests/test_leader_copies.py).
SET pg_tempbuf.shared_pool = off;

-- EXPLAIN ANALYZE with the run-to-run noise masked: page counts per
-- participant, timings and (across versions) the pages a fill dirties
-- vary; the plan's shape and our labels do not.
CREATE FUNCTION explain_analyze(query text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE
        'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || query
    LOOP
        CONTINUE WHEN line ~ '^\s*(Worker \d+:|Rows Removed|Batches|Memory|Sort Method|Waits For Flush)';
        line := regexp_replace(line, 'Pages Read: .*', 'Pages Read: ...');
        -- How many pages the leader reads before workers take the rest is a race.
        line := regexp_replace(line, 'Pages From Local Buffers: \d+', 'Pages From Local Buffers: N');
        -- So is how many pages it guards from workers (page_guard.c).
        line := regexp_replace(line, '(Pages Pinned|Pages Kept By Leader): \d+', '\1: N');
        -- Which participant met a value varies; the total does not.
        IF line ~ 'Toast Values Fetched:' THEN
            line := regexp_replace(line, 'Fetched: .*', 'Fetched: total=' ||
                (SELECT sum(m[1]::int) FROM regexp_matches(line, '=(\d+)', 'g') m));
        END IF;
        line := regexp_replace(line, 'Workers Launched: [1-9]\d*', 'Workers Launched: some');
        line := regexp_replace(line, 'Pages Flushed: [1-9]\d*', 'Pages Flushed: some');
        line := regexp_replace(line, 'actual rows=[0-9.]+ ', 'actual ');
        RETURN NEXT line;
    END LOOP;
END $$;

CREATE TEMP TABLE t (id int, a int, s text);
INSERT INTO t SELECT g, g % 100, md5(g::text) FROM generate_series(1, 50000) g;
ANALYZE t;
CREATE TABLE perm AS SELECT g AS a, g * 2 AS b FROM generate_series(1, 100) g;
ANALYZE perm;

-- The flush cost decides: with parallel setup free, a fully dirty table
-- stays serial when writing its pages costs more than the workers save
-- (a write priced as 5 reads, the value of danolivo/pgdev PR #19), goes
-- parallel at the default price of a write in file order, and at any
-- price once clean.  Workers' private reads are free here; they are
-- priced below.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET pg_tempbuf.parallel_margin = 0;  -- tested on its own below
SET min_parallel_table_scan_size = 0;
SET pg_tempbuf.read_page_cost = 0;
SET pg_tempbuf.write_page_cost = 5;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE s LIKE '%ab%';
RESET pg_tempbuf.write_page_cost;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE s LIKE '%ab%';
SET pg_tempbuf.write_page_cost = 5;
SELECT pg_flush_local_buffers() > 0 AS flushed;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE s LIKE '%ab%';
UPDATE t SET a = a;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE s LIKE '%ab%';

-- Pages the leader holds cost workers a private read each, where the
-- serial scan finds them in buffers: at a high enough price, serial.
SET pg_tempbuf.write_page_cost = 0;
SELECT pg_flush_local_buffers() > 0 AS flushed;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE s LIKE '%ab%';
SET pg_tempbuf.read_page_cost = 50;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE s LIKE '%ab%';
-- ... unless they are not in the buffers.
SELECT pg_evict_local_buffers('t') > 0 AS evicted;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE s LIKE '%ab%';
SET pg_tempbuf.read_page_cost = 0;

-- The margin: a plan in workers must beat the serial one by that share of
-- the flush's price.  The table is clean: nothing to flush, no margin, the
-- plan core would choose for a permanent table.
SET pg_tempbuf.parallel_margin = 10;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE s LIKE '%ab%';
-- Dirty, it has a flush to price: free workers win by well under ten
-- times that, and by more than nothing.
RESET pg_tempbuf.write_page_cost;
SELECT pg_read_temp_relation('t') > 0 AS read;
SELECT pg_temp_buffers_dirty('t') > 0 AS dirtied;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE s LIKE '%ab%';
SET pg_tempbuf.parallel_margin = 0;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE s LIKE '%ab%';
SELECT pg_flush_local_buffers() > 0 AS flushed;
SET pg_tempbuf.parallel_margin = -0.1;
SET pg_tempbuf.parallel_margin = 0;

-- Make every eligible scan parallel for the rest of the file.
SET pg_tempbuf.write_page_cost = 0;
SET pg_tempbuf.buffer_scan_cost = 0;

-- EXPLAIN shows the flush estimate: this table's dirty pages, priced.
CREATE FUNCTION temp_scan_node(query text, options text DEFAULT '') RETURNS json
LANGUAGE plpgsql AS $$
DECLARE
    plan json;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON' || options || ') ' || query INTO plan;
    RETURN (WITH RECURSIVE nodes(n) AS (
                SELECT plan->0->'Plan'
                UNION ALL
                SELECT child FROM nodes, json_array_elements(n->'Plans') AS child)
            SELECT n FROM nodes
             WHERE n->>'Custom Plan Provider' = 'Temp Seq Scan' LIMIT 1);
END $$;

UPDATE t SET a = a + 1 WHERE id <= 1000;
SELECT count(*) AS dirty_pages FROM pg_local_buffers
 WHERE relfilenode = pg_relation_filenode('t') AND relforknumber = 0 AND isdirty \gset
SET pg_tempbuf.write_page_cost = 2;
SELECT (n->>'Flush Estimate Pages')::int = :dirty_pages AS estimate_counts_dirty_pages,
       (n->>'Flush Estimate Cost')::float8 = 2 * :dirty_pages AS estimate_priced,
       (n->>'Parallel Aware')::bool AS parallel_aware
  FROM temp_scan_node('SELECT count(*) FROM t') AS n;
SET pg_tempbuf.write_page_cost = 0;

-- ... and EXPLAIN ANALYZE what the leader flushed.  Under an aggregate
-- the leader writes only what workers read and scans the rest from its
-- buffers, which stay dirty: every dirty page was either written or left.
SELECT * FROM explain_analyze('SELECT count(*), sum(a) FROM t WHERE s LIKE ''%ab%''');
UPDATE t SET a = a WHERE id <= 1000;
SELECT pg_dirtied_local_buffers() AS dirty_before \gset
SELECT n->>'Flush Mode' AS flush_mode,
       (n->>'Pages Flushed')::int + pg_dirtied_local_buffers() = :dirty_before
         AS written_or_still_dirty,
       (n->>'Pages From Local Buffers')::int > 0 AS leader_copied_pages
  FROM temp_scan_node('SELECT count(*), sum(a) FROM t WHERE s LIKE ''%ab%''', ', ANALYZE') AS n;
-- It says where workers got the pages the leader holds, and why from the
-- file when not copied from its memory (tests/test_leader_copies.py shows
-- the copies, and a system that denies them).
SELECT n->>'Page Source' AS page_source
  FROM temp_scan_node('SELECT count(*), sum(a) FROM t WHERE s LIKE ''%ab%''', ', ANALYZE') AS n;

-- Where rows go from the scan straight up to Gather, the leader writes
-- every dirty page in its first call, workers reading behind it; when the
-- leader takes no part, before workers start.  Either way the workers'
-- rows are those of the serial scan.
CREATE FUNCTION dirty_main_pages(rel regclass) RETURNS bigint
LANGUAGE sql AS $$
    SELECT count(*) FROM pg_local_buffers
     WHERE relfilenode = pg_relation_filenode(rel) AND relforknumber = 0 AND isdirty
$$;
PREPARE ids_of_a7 AS
    SELECT count(*), md5(string_agg(id::text, ',' ORDER BY id))
      FROM (SELECT id FROM t WHERE a = 7 OFFSET 0) s;
UPDATE t SET a = a WHERE id % 3 = 0;
SELECT n->>'Flush Mode' AS flush_mode,
       (n->>'Pages Flushed')::int > 0 AS flushed,
       dirty_main_pages('t') AS dirty_left
  FROM temp_scan_node('EXECUTE ids_of_a7', ', ANALYZE') AS n;
UPDATE t SET a = a WHERE id % 3 = 0;
SET parallel_leader_participation = off;
UPDATE t SET a = a WHERE id % 3 = 0;
SELECT n->>'Flush Mode' AS flush_mode,
       (n->>'Pages Flushed')::int > 0 AS flushed,
       dirty_main_pages('t') AS dirty_left
  FROM temp_scan_node('SELECT count(*), sum(a) FROM t WHERE s LIKE ''%ab%''', ', ANALYZE') AS n;
RESET parallel_leader_participation;
UPDATE t SET a = a WHERE id % 3 = 0;
EXECUTE ids_of_a7;
SET pg_tempbuf.parallel_scan = off;
EXECUTE ids_of_a7;
SET pg_tempbuf.parallel_scan = on;
SELECT count(*), sum(a) FROM t WHERE s LIKE '%ab%';
SET pg_tempbuf.parallel_scan = off;
SELECT count(*), sum(a) FROM t WHERE s LIKE '%ab%';
SET pg_tempbuf.parallel_scan = on;

-- Gather Merge, partial aggregation, joins with temp and permanent tables.
EXPLAIN (COSTS OFF) SELECT id FROM t WHERE a = 7 ORDER BY s;
EXPLAIN (COSTS OFF) SELECT a, count(*) FROM t GROUP BY a;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t JOIN perm USING (a);
CREATE TEMP TABLE u AS SELECT g AS id, g % 10 AS k FROM generate_series(1, 20000) g;
ANALYZE u;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t JOIN u USING (id) WHERE u.k = 3;
SELECT count(*) FROM t JOIN u USING (id) WHERE u.k = 3;
-- Under an aggregate that reads none of its columns, the scan hands up the
-- table's tuples as they are (Output lists them all), as core's Seq Scan
-- does: no projection per row.  Not where a column is dropped, nor under a
-- node that would carry the wider tuples.
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM t;
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM t WHERE s LIKE '%ab%';
EXPLAIN (VERBOSE, COSTS OFF) SELECT 1 FROM t WHERE a = 7;
CREATE TEMP TABLE dropped AS SELECT * FROM t;
ALTER TABLE dropped DROP COLUMN a;
ANALYZE dropped;
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM dropped;
SELECT count(*) FROM dropped;
DROP TABLE dropped;

-- Fallbacks: no parallel path at all.
-- The switch.
SET pg_tempbuf.parallel_scan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t;
SET pg_tempbuf.parallel_scan = on;
-- The table read twice in one statement: self-join, subquery, CTE.
EXPLAIN (COSTS OFF) SELECT count(*) FROM t t1 JOIN t t2 USING (id);
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE a IN (SELECT a FROM t WHERE id < 10);
EXPLAIN (COSTS OFF) WITH c AS MATERIALIZED (SELECT * FROM t) SELECT count(*) FROM c JOIN t USING (id);
-- System columns, parallel-restricted functions, data-modifying statements.
EXPLAIN (COSTS OFF) SELECT count(ctid) FROM t;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE a > random() * 100;
EXPLAIN (COSTS OFF) UPDATE t SET a = a WHERE id = 1;
-- Stock parallel switches and the table's reloption.
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t;
RESET max_parallel_workers_per_gather;
ALTER TABLE t SET (parallel_workers = 0);
EXPLAIN (COSTS OFF) SELECT count(*) FROM t;
ALTER TABLE t RESET (parallel_workers);
-- A tiny table under the stock minimum size.
RESET min_parallel_table_scan_size;
CREATE TEMP TABLE tiny AS SELECT g AS x FROM generate_series(1, 100) g;
ANALYZE tiny;
EXPLAIN (COSTS OFF) SELECT count(*) FROM tiny;
SET min_parallel_table_scan_size = 0;
-- Inheritance and partition children stay serial.
CREATE TEMP TABLE parent (x int);
CREATE TEMP TABLE child () INHERITS (parent);
INSERT INTO child SELECT g FROM generate_series(1, 1000) g;
CREATE TEMP TABLE parted (x int) PARTITION BY RANGE (x);
CREATE TEMP TABLE part1 PARTITION OF parted FOR VALUES FROM (0) TO (500);
CREATE TEMP TABLE part2 PARTITION OF parted FOR VALUES FROM (500) TO (1001);
INSERT INTO parted SELECT g FROM generate_series(1, 1000) g;
ANALYZE parent, child, parted;
EXPLAIN (COSTS OFF) SELECT count(*) FROM parent;
EXPLAIN (COSTS OFF) SELECT count(*) FROM parted;

-- TOAST: participants fetch the out-of-line values of the columns the scan
-- uses through private pages of the toast relation and its index, which the
-- leader flushes with the table; a scan that uses no such column reads none.
CREATE TEMP TABLE wide (id int, body text);
INSERT INTO wide SELECT g, 'short' FROM generate_series(1, 3000) g;
ANALYZE wide;
PREPARE wide_lengths AS SELECT sum(length(body)), count(*) FROM wide;
PREPARE wide_ids AS SELECT sum(id), count(*) FROM wide;
SELECT * FROM explain_analyze('EXECUTE wide_lengths');
INSERT INTO wide SELECT g, (SELECT string_agg(md5(g::text || i::text), '') FROM generate_series(1, 200) i)
  FROM generate_series(1, 10) g;
SELECT * FROM explain_analyze('EXECUTE wide_lengths');
SELECT * FROM explain_analyze('EXECUTE wide_ids');
EXECUTE wide_lengths;
SET parallel_leader_participation = off;
SELECT * FROM explain_analyze('EXECUTE wide_lengths');
EXECUTE wide_lengths;
RESET parallel_leader_participation;
-- Planned afresh now that the toast table has data: still parallel.
EXPLAIN (COSTS OFF) SELECT sum(length(body)) FROM wide;
EXPLAIN (COSTS OFF) SELECT count(wide) FROM wide;
SET pg_tempbuf.parallel_scan = off;
SELECT sum(length(body)), count(*) FROM wide;
SET pg_tempbuf.parallel_scan = on;

-- Compressed (pglz) and uncompressed out-of-line values, one exactly two
-- chunks long, NULLs, a qual and a whole-row reference: the same answers
-- as the serial plan, every value fetched privately.
CREATE TEMP TABLE toasty (id int, z text, x text);
ALTER TABLE toasty ALTER COLUMN z SET COMPRESSION pglz;
ALTER TABLE toasty ALTER COLUMN x SET STORAGE EXTERNAL;
INSERT INTO toasty SELECT g,
    CASE WHEN g % 3 <> 0 THEN (SELECT string_agg(repeat(md5(g::text || i::text), 2), '') FROM generate_series(1, 60) i) END,
    CASE WHEN g % 4 <> 0 THEN repeat('x', 1000 + 37 * g) END
  FROM generate_series(1, 200) g;
-- TOAST_MAX_CHUNK_SIZE is 1996 bytes with 8 kB pages: exactly two chunks.
INSERT INTO toasty VALUES (0, NULL, repeat('b', 2 * 1996));
INSERT INTO toasty SELECT g, NULL, NULL FROM generate_series(1000, 3000) g;
ANALYZE toasty;
-- Values reach the plan fetched and decompressed: a statement asking how
-- they are stored gets no parallel scan of the table.
EXPLAIN (COSTS OFF) SELECT count(*) FROM toasty WHERE pg_column_compression(z) = 'pglz';
SELECT count(*) FILTER (WHERE z IS NOT NULL AND pg_column_compression(z) = 'pglz') > 100 AS pglz_values,
       count(*) FILTER (WHERE pg_column_size(x) > 1000) > 100 AS external_values
  FROM toasty;
SELECT * FROM explain_analyze('SELECT sum(length(z)), sum(length(x)), count(*) FROM toasty');
SELECT * FROM explain_analyze('SELECT count(*) FROM toasty WHERE x LIKE ''%xb%'' OR z LIKE ''%ab%''');
-- Under count(*) the scan lists every column for the aggregate's sake,
-- which reads none: only the quals' values are fetched (the 130 values of
-- x stored out of line), none of z for the 69 rows that pass.
SELECT regexp_replace(line, 'Local Buffers: \w+', 'Local Buffers: some or none')
  FROM explain_analyze('SELECT count(*) FROM toasty WHERE length(x) > 5000') AS line;
SELECT count(*) FROM toasty WHERE length(x) > 5000;
-- Values only the output needs are fetched for the rows the quals keep:
-- 14 of the 20 rows with id % 10 = 1 have a z.  Whether the leader gets a
-- chunk of so small a table before the workers take them all is timing.
SELECT regexp_replace(line, 'Local Buffers: \w+', 'Local Buffers: some or none')
  FROM explain_analyze('SELECT max(length(z)) FROM toasty WHERE id % 10 = 1') AS line;
SELECT max(length(z)), count(z) FROM toasty WHERE id % 10 = 1;
CREATE VIEW toasty_all AS
  SELECT count(*) AS n, sum(length(z)) AS z_len, sum(length(x)) AS x_len,
         sum(hashtext(t::text)) AS rows_hash
  FROM toasty t;
SELECT * FROM explain_analyze('SELECT * FROM toasty_all');
CREATE TEMP TABLE toasty_parallel AS SELECT * FROM toasty_all;
SET pg_tempbuf.parallel_scan = off;
EXPLAIN (COSTS OFF) SELECT * FROM toasty_all;
CREATE TEMP TABLE toasty_serial AS SELECT * FROM toasty_all;
SELECT ROW(p.*) = ROW(s.*) AS same_as_serial, p.n FROM toasty_parallel p, toasty_serial s;
SET pg_tempbuf.parallel_scan = on;

-- Prepared statements flush at execution time, not at plan time.
PREPARE count_t AS SELECT count(*), sum(a) FROM t;
EXECUTE count_t;
UPDATE t SET a = a + 1000 WHERE id % 2 = 0;
SELECT * FROM explain_analyze('EXECUTE count_t');
EXECUTE count_t;

-- Rescans: a Gather on the inner side of a nested loop sets up its scan
-- again on each loop; the table is flushed on the first loop only.  The
-- join's random() (parallel restricted) keeps the join above the Gathers.
CREATE TEMP TABLE small AS SELECT g AS a FROM generate_series(1, 3) g;
ANALYZE small;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
SELECT * FROM explain_analyze('SELECT count(*), sum(t.a) FROM t JOIN small ON small.a + 4 = t.a AND random() >= 0 WHERE t.id <= 10');
SELECT count(*), sum(t.a) FROM t JOIN small ON small.a + 4 = t.a AND random() >= 0 WHERE t.id <= 10;
SET pg_tempbuf.parallel_scan = off;
SELECT count(*), sum(t.a) FROM t JOIN small ON small.a + 4 = t.a AND random() >= 0 WHERE t.id <= 10;
SET pg_tempbuf.parallel_scan = on;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-- Columns added with a default after rows were written.
ALTER TABLE t ADD COLUMN d int DEFAULT 7;
SELECT d, count(*) FROM t GROUP BY d;

-- Temporary tables created in the running transaction, and savepoints.
BEGIN;
CREATE TEMP TABLE fresh AS SELECT g AS x FROM generate_series(1, 10000) g;
ANALYZE fresh;
SAVEPOINT s1;
DELETE FROM fresh WHERE x % 2 = 0;
ROLLBACK TO s1;
SAVEPOINT s2;
UPDATE fresh SET x = -x WHERE x % 3 = 0;
RELEASE s2;
SELECT * FROM explain_analyze('SELECT count(*), sum(x) FROM fresh');
SELECT count(*), sum(x) FROM fresh;
SET LOCAL pg_tempbuf.parallel_scan = off;
SELECT count(*), sum(x) FROM fresh;
COMMIT;

-- Rows of many inserters on the same pages, none of them hinted yet: a
-- committed transaction and the running one, each with a rolled-back
-- subtransaction for every third row.  Participants remember their last
-- verdict on an inserter: switching between them row by row must not
-- carry one inserter's verdict over to another's rows.  Workers read
-- without leader participation, so that they see every page, before any
-- stock scan sets hint bits.
CREATE TEMP TABLE mixed (x int);
CREATE PROCEDURE fill_mixed(first int, last int) LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN first..last LOOP
        IF i % 3 = 0 THEN
            BEGIN
                INSERT INTO mixed VALUES (-i);
                RAISE EXCEPTION 'undone';
            EXCEPTION WHEN raise_exception THEN
                NULL;
            END;
        ELSE
            INSERT INTO mixed VALUES (i);
        END IF;
    END LOOP;
END $$;
CALL fill_mixed(1, 3000);
BEGIN;
CALL fill_mixed(3001, 6000);
SET LOCAL parallel_leader_participation = off;
SELECT * FROM explain_analyze('SELECT count(*), sum(x), min(x) FROM mixed');
SELECT count(*), sum(x), min(x) FROM mixed;
SET LOCAL pg_tempbuf.parallel_scan = off;
SELECT count(*), sum(x), min(x) FROM mixed;
COMMIT;
DROP TABLE mixed;
DROP PROCEDURE fill_mixed(int, int);

-- EXPLAIN names the node in core's framing for custom scans, the same in
-- every format: node type "Custom Scan", provider "Temp Seq Scan", with
-- core's "Parallel" for the partial scan; "Scan Mode" says which.
CREATE FUNCTION explain_json(query text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) ' || query INTO plan;
    RETURN plan;
END $$;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t;
SELECT node->>'Node Type' AS node_type,
       node->>'Custom Plan Provider' AS provider,
       node->>'Parallel Aware' AS parallel_aware,
       node->>'Scan Mode' AS scan_mode
  FROM jsonb_path_query(explain_json('SELECT count(*) FROM t'),
                        'strict $.**') AS node
 WHERE jsonb_typeof(node) = 'object' AND node ? 'Custom Plan Provider';

DROP TABLE perm;
