--
-- Temp Index Scan: btree index scans of temporary tables that run in
-- parallel workers.  Each plan is shown, and each result compared with
-- pg_tempbuf.parallel_scan = off (stock plans).
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_tempbuf;
RESET client_min_messages;
LOAD 'pg_tempbuf';

CREATE TABLE orders AS
  SELECT g AS id, g % 500 AS cust, (g * 37) % 10007 AS v FROM generate_series(1, 60000) g;
ANALYZE orders;
CREATE TEMP TABLE items (id int PRIMARY KEY, grp int, note text, amount numeric);
INSERT INTO items SELECT g, CASE WHEN g % 997 = 0 THEN NULL ELSE g % 100 END, 'n' || g, g * 1.5
  FROM generate_series(1, 40000) g;
CREATE INDEX items_grp_id ON items (grp, id);
CREATE INDEX items_grp_desc ON items (grp DESC NULLS FIRST, id);
CREATE INDEX items_note_lower ON items (lower(note));
CREATE INDEX items_small ON items (grp) WHERE id <= 2000;
ANALYZE items;

-- Results of a query with our paths and without them, which must match.
CREATE OR REPLACE FUNCTION compare_ways(query text) RETURNS TABLE (setting text, result text)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'SELECT md5(string_agg(r::text, '' '' ORDER BY r::text)) || '' '' || count(*) FROM (' || query || ') r' INTO result;
    setting := 'on';
    RETURN NEXT;
    SET LOCAL pg_tempbuf.parallel_scan = off;
    EXECUTE 'SELECT md5(string_agg(r::text, '' '' ORDER BY r::text)) || '' '' || count(*) FROM (' || query || ') r' INTO result;
    setting := 'off';
    RETURN NEXT;
    SET LOCAL pg_tempbuf.parallel_scan = on;
END $$;

-- Did a Temp Index Scan return rows in a worker?  The leader stays out of
-- the parallel part, so that it cannot do all the work before workers start.
CREATE OR REPLACE FUNCTION workers_ran_index_scan(query text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
    participation text := current_setting('parallel_leader_participation');
BEGIN
    PERFORM set_config('parallel_leader_participation', 'off', true);
    EXECUTE 'EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) ' || query INTO plan;
    PERFORM set_config('parallel_leader_participation', participation, true);
    RETURN coalesce((SELECT bool_or((w->>'Actual Rows')::numeric > 0)
                       FROM jsonb_path_query(plan, 'strict $.**') AS node,
                            jsonb_array_elements(node->'Workers') AS w
                      WHERE jsonb_typeof(node) = 'object'
                        AND node->>'Custom Plan Provider' LIKE 'Temp Index%'), false);
END $$;

-- The lines of an EXPLAIN, to filter.
CREATE OR REPLACE FUNCTION explain_lines(explain text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE explain;
END $$;

SELECT pg_flush_local_buffers() >= 0 AS flushed;
-- Plans are made cheap to parallelize, the flush free, so that they depend
-- neither on this machine's costs nor on how many pages a step dirtied.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET pg_tempbuf.parallel_margin = 0;  -- tested on its own in parallel_scan
SET min_parallel_table_scan_size = 0;
SET pg_tempbuf.write_page_cost = 0;
SET pg_tempbuf.buffer_scan_cost = 0;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_bitmapscan = off;

-- The inner side of a nested loop: a parameterized scan, rescanned with
-- each outer row's key, in every participant.
EXPLAIN (COSTS OFF) SELECT count(*), sum(i.amount) FROM orders o JOIN items i ON i.id = o.id WHERE o.cust < 250;
SELECT * FROM compare_ways('SELECT o.id, i.amount FROM orders o JOIN items i ON i.id = o.id WHERE o.cust < 250');
SELECT workers_ran_index_scan('SELECT count(*), sum(i.amount) FROM orders o JOIN items i ON i.id = o.id WHERE o.cust < 250');

-- contrib/tempscan's shape: a join that reads the temporary side through
-- its index, with a range on it.
EXPLAIN (COSTS OFF) SELECT count(*) FROM orders o JOIN items i ON i.grp = o.cust AND i.id < 10 WHERE o.v < 5000;
SELECT * FROM compare_ways('SELECT o.id, i.id FROM orders o JOIN items i ON i.grp = o.cust AND i.id < 10 WHERE o.v < 5000');

-- Equality on a prefix and a range on the next column; ranges alone.
SELECT * FROM compare_ways('SELECT o.id, i.id FROM orders o JOIN items i ON i.grp = o.cust % 100 AND i.id BETWEEN o.id AND o.id + 300 WHERE o.v < 3000');
SELECT * FROM compare_ways('SELECT o.id, i.id FROM orders o JOIN items i ON i.id > o.id * 3 AND i.id <= o.id * 3 + 2 WHERE o.v < 500');

-- = ANY(array), with duplicates and a NULL element, and IS NULL.
EXPLAIN (COSTS OFF) SELECT count(*) FROM orders o JOIN items i ON i.id = ANY (ARRAY[o.id, o.id + 1, o.id * 2, o.id, NULL]) WHERE o.cust < 100;
SELECT * FROM compare_ways('SELECT o.id, i.id FROM orders o JOIN items i ON i.id = ANY (ARRAY[o.id, o.id + 1, o.id * 2, o.id, NULL]) WHERE o.cust < 100');
SELECT * FROM compare_ways('SELECT o.id, i.id FROM orders o JOIN items i ON i.grp = ANY (''{7,3,3,99}'') AND i.id = o.id WHERE o.v < 8000');
SELECT * FROM compare_ways('SELECT o.id, i.id FROM orders o JOIN items i ON i.grp IS NULL AND i.id = o.id');
SELECT * FROM compare_ways('SELECT o.id, i.id FROM orders o JOIN items i ON i.grp = NULL::int AND i.id = o.id');

-- A DESC index, an expression index, a partial index, a cross-type key.
SET enable_indexscan = on;
SELECT * FROM compare_ways('SELECT o.id, i.id FROM orders o JOIN items i ON i.grp <= o.cust % 100 AND i.id = o.id WHERE o.v < 300');
EXPLAIN (COSTS OFF) SELECT count(*) FROM orders o JOIN items i ON lower(i.note) = 'n' || o.id WHERE o.cust < 50;
SELECT * FROM compare_ways('SELECT o.id, i.id FROM orders o JOIN items i ON lower(i.note) = ''n'' || o.id WHERE o.cust < 50');
SELECT * FROM compare_ways('SELECT o.id, i.id FROM orders o JOIN items i ON i.grp = o.cust AND i.id <= 2000 WHERE o.v < 2000');
SELECT * FROM compare_ways('SELECT o.id, i.id FROM orders o JOIN items i ON i.id = o.id::int8 WHERE o.cust = 7');

-- Ordered output: a merge join in the workers reads the index in order.
SET enable_mergejoin = on;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT count(*), sum(i.amount) FROM orders o JOIN items i ON i.id = o.id AND i.id < 3000;
SELECT * FROM compare_ways('SELECT o.id, i.amount FROM orders o JOIN items i ON i.id = o.id AND i.id < 3000');
-- Backward: the same read in descending order, for ORDER BY ... DESC
-- (row_number() numbers rows in the order they come).
EXPLAIN (COSTS OFF) SELECT o.id, i.amount FROM orders o JOIN items i ON i.id = o.id AND i.id < 3000 ORDER BY i.id DESC LIMIT 20;
SELECT * FROM compare_ways('SELECT row_number() OVER (), id, amount FROM (SELECT o.id, i.amount FROM orders o JOIN items i ON i.id = o.id AND i.id < 3000 ORDER BY i.id DESC LIMIT 20) s');
SELECT * FROM compare_ways('SELECT row_number() OVER (), id, grp FROM (SELECT o.id, i.grp FROM orders o JOIN items i ON i.id = o.id AND i.id > 100 AND i.id <= 2500 ORDER BY i.id DESC) s');
-- Only the leader reads the table, above Gather: core's Index Scan.
EXPLAIN (COSTS OFF) SELECT o.id, i.amount FROM orders o JOIN items i ON i.id = o.id WHERE o.cust = 3;
SELECT * FROM compare_ways('SELECT o.id, i.amount FROM orders o JOIN items i ON i.id = o.id WHERE o.cust = 3');
RESET enable_mergejoin;
RESET enable_nestloop;

-- Rows of the open transaction: updates that move rows in the index, a
-- HOT update, deletions, a rolled-back savepoint.  The leader's own index
-- read marks the deleted rows' entries dead first.
BEGIN;
DELETE FROM items WHERE id % 10 = 1;
SET LOCAL enable_seqscan = off;
SELECT count(*) FROM items WHERE id > 0;
RESET enable_seqscan;
UPDATE items SET grp = grp + 1, id = id + 100000 WHERE id % 10 = 2;
UPDATE items SET amount = amount + 1 WHERE id % 10 = 3;
SAVEPOINT s;
UPDATE items SET amount = -1 WHERE id % 10 = 4;
ROLLBACK TO SAVEPOINT s;
INSERT INTO items SELECT g, g % 100, 'm' || g, 0 FROM generate_series(200001, 200500) g;
SELECT * FROM compare_ways('SELECT o.id, i.id, i.grp, i.amount FROM orders o JOIN items i ON i.id = ANY (ARRAY[o.id, o.id + 100000, o.id + 200000]) WHERE o.cust < 300');
SELECT * FROM compare_ways('SELECT o.id, i.id FROM orders o JOIN items i ON i.grp = o.cust % 100 AND i.id BETWEEN o.id AND o.id + 100 WHERE o.v < 2000');
SELECT workers_ran_index_scan('SELECT o.id, i.id, i.grp, i.amount FROM orders o JOIN items i ON i.id = ANY (ARRAY[o.id, o.id + 100000, o.id + 200000]) WHERE o.cust < 300');
COMMIT;

-- Duplicates: a non-unique index on one value deduplicates into posting lists.
CREATE TEMP TABLE dup AS SELECT g % 7 AS k, g AS v FROM generate_series(1, 20000) g;
CREATE INDEX dup_k ON dup (k);
ANALYZE dup;
SELECT * FROM compare_ways('SELECT o.id, d.v FROM orders o JOIN dup d ON d.k = o.cust WHERE o.id < 40');
-- A semi or anti join stops each inner scan at its first match, inside a
-- posting list: the next outer row's scan starts afresh.
SELECT * FROM compare_ways('SELECT o.id FROM orders o WHERE NOT EXISTS (SELECT 1 FROM dup d WHERE d.k = o.cust % 10 AND d.v < 30) AND o.id < 3000');
SELECT * FROM compare_ways('SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM dup d WHERE d.k = o.cust % 10 AND d.v > 19990) AND o.id < 3000');

-- One range shared by the participants (Parallel Temp Index Scan): each
-- leaf, and the rows it points to, is read by one of them.  A range, an
-- ordered read under Gather Merge (row_number() numbers rows in the order
-- they come), posting lists, an empty range.
SET min_parallel_index_scan_size = 0;
SET pg_tempbuf.read_page_cost = 0;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*), sum(amount) FROM items WHERE id BETWEEN 1000 AND 30000;
SELECT * FROM compare_ways('SELECT id, amount FROM items WHERE id BETWEEN 1000 AND 30000');
SELECT workers_ran_index_scan('SELECT id, amount FROM items WHERE id BETWEEN 1000 AND 30000');
-- EXPLAIN ANALYZE adds up each participant's entries and heap fetches:
-- together, every entry of the range, each fetched once.
SELECT sum(m[1]::bigint) FILTER (WHERE line ~ 'Index Entries:') =
       sum(m[1]::bigint) FILTER (WHERE line ~ 'Heap Fetches:') AS each_entry_fetched,
       sum(m[1]::bigint) FILTER (WHERE line ~ 'Index Entries:') >=
       (SELECT count(*) FROM items WHERE id BETWEEN 1000 AND 30000) AS whole_range
  FROM explain_lines('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
    SELECT count(*), sum(amount) FROM items WHERE id BETWEEN 1000 AND 30000') AS line,
       regexp_matches(line, '=(\d+)', 'g') AS m;
EXPLAIN (COSTS OFF) SELECT id, grp FROM items WHERE grp > 20 AND md5(note) > 'a' ORDER BY grp, id;
SELECT * FROM compare_ways('SELECT row_number() OVER (), id, grp FROM (SELECT id, grp FROM items WHERE grp > 20 AND md5(note) > ''a'' ORDER BY grp, id) s');
SELECT * FROM compare_ways('SELECT k, v FROM dup WHERE k BETWEEN 2 AND 4');
SELECT * FROM compare_ways('SELECT id FROM items WHERE id < 0');
-- "= ANY(array)": the participants share each element's range in turn,
-- so that each one's rows stay in index order for Gather Merge.  (Two
-- workers, so that workers alone beat a serial scan.)
ALTER TABLE items SET (parallel_workers = 2);
EXPLAIN (COSTS OFF) SELECT count(*), sum(amount) FROM items WHERE grp = ANY ('{1,5,9,13,17,21,25,29,33,37,41,45,49,53,57,61,65,69,73,77,81,85,89,93,97,9,NULL}');
SELECT * FROM compare_ways('SELECT id, amount FROM items WHERE grp = ANY (''{1,5,9,13,17,21,25,29,33,37,41,45,49,53,57,61,65,69,73,77,81,85,89,93,97,9,NULL}'')');
SELECT workers_ran_index_scan('SELECT count(*), sum(amount) FROM items WHERE grp = ANY (''{1,5,9,13,17,21,25,29,33,37,41,45,49,53,57,61,65,69,73,77,81,85,89,93,97,9,NULL}'')');
EXPLAIN (COSTS OFF) SELECT grp, id FROM items WHERE grp = ANY ('{1,5,9,13,17,21,25,29,33,37,41,45,49,53,57,61,65,69,73,77,81,85,89,93,97,9,NULL}') AND md5(note) > 'a' ORDER BY grp, id;
SELECT * FROM compare_ways('SELECT row_number() OVER (), grp, id FROM (SELECT grp, id FROM items WHERE grp = ANY (''{1,5,9,13,17,21,25,29,33,37,41,45,49,53,57,61,65,69,73,77,81,85,89,93,97,9,NULL}'') AND md5(note) > ''a'' ORDER BY grp, id) s');
SELECT * FROM compare_ways('SELECT k, v FROM dup WHERE k = ANY (''{1,6,9}'')');
ALTER TABLE items RESET (parallel_workers);
RESET enable_seqscan;
RESET pg_tempbuf.read_page_cost;
RESET min_parallel_index_scan_size;

-- Index only (Temp Index Only Scan): the index's columns, the heap fetched
-- only for entries whose page the visibility map does not say all visible.
-- After VACUUM every page is; then rows of the open transaction clear the
-- map for the pages they touch.
CREATE TEMP TABLE cov (k int, v int, pad text);
INSERT INTO cov SELECT g % 1000, g, repeat('p', 40) FROM generate_series(1, 30000) g;
CREATE INDEX cov_k_v ON cov (k, v);
VACUUM ANALYZE cov;
SET min_parallel_index_scan_size = 0;
SET pg_tempbuf.read_page_cost = 0;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT k, count(*), sum(v) FROM cov WHERE k > 100 GROUP BY k;
-- Each participant's heap fetches (which of them read entries is a race):
-- none.
SELECT regexp_replace(regexp_replace(line, 'actual rows=[0-9.]+ loops=\d+', 'actual rows=R loops=L'),
                      '(Heap Fetches: )leader=0( worker \d+=0)*$', '\1none') AS line
  FROM explain_lines('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
    SELECT k, v FROM cov WHERE k BETWEEN 10 AND 20') AS line
 WHERE line ~ '(Temp Index|Heap Fetches)';
SELECT * FROM compare_ways('SELECT k, count(*), sum(v) FROM cov WHERE k > 100 GROUP BY k');
SELECT workers_ran_index_scan('SELECT k, v FROM cov WHERE k > 100');
BEGIN;
DELETE FROM cov WHERE v % 50 = 0;
UPDATE cov SET v = -v WHERE v % 70 = 0;
SAVEPOINT s;
INSERT INTO cov SELECT g % 1000, g, 'new' FROM generate_series(30001, 31000) g;
ROLLBACK TO SAVEPOINT s;
INSERT INTO cov SELECT g % 1000, g, 'new' FROM generate_series(40001, 40500) g;
SELECT * FROM compare_ways('SELECT k, count(*), sum(v) FROM cov WHERE k > 100 GROUP BY k');
SELECT * FROM compare_ways('SELECT o.id, c.v FROM orders o JOIN cov c ON c.k = o.cust AND c.v < o.id WHERE o.id < 400');
COMMIT;
RESET enable_seqscan;
RESET pg_tempbuf.read_page_cost;
RESET min_parallel_index_scan_size;

-- A plan that ends up serial gets core's Index Scan back: no flush needed.
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT count(*) FROM orders o JOIN items i ON i.id = o.id WHERE o.cust < 250;
-- An Index Only Scan given back keeps the target list ours computed.
SELECT * FROM compare_ways('SELECT o.id, i.id * 2 FROM orders o JOIN items i ON i.id = o.id WHERE o.cust < 250');
RESET max_parallel_workers_per_gather;

-- Code that may read tables in the leader while workers read (a function
-- that is not parallel safe, above Gather): the index scans stay ours and
-- keep their workers, which compare what they read of a file where no
-- checksum would catch a page the leader prunes and writes back meanwhile
-- (tests/test_guards.py forces that race).  Private reads free, as above.
SET pg_tempbuf.read_page_cost = 0;
CREATE OR REPLACE FUNCTION items_count(k int) RETURNS bigint LANGUAGE sql STABLE PARALLEL RESTRICTED
  AS 'SELECT count(*) FROM items WHERE id = k';
SELECT count(*) FILTER (WHERE line ~ 'Temp Index (Only )?Scan') AS temp_index_scans,
       count(*) FILTER (WHERE line ~ 'Index (Only )?Scan using') AS stock_index_scans
  FROM explain_lines('EXPLAIN (COSTS OFF) SELECT count(*), sum(items_count(o.id)) FROM orders o JOIN items i ON i.id = o.id WHERE o.cust < 250') AS line;
SELECT * FROM compare_ways('SELECT o.id, items_count(o.id) FROM orders o JOIN items i ON i.id = o.id WHERE o.cust < 20');
SELECT workers_ran_index_scan('SELECT count(*), sum(items_count(o.id)) FROM orders o JOIN items i ON i.id = o.id WHERE o.cust < 20');
-- A PL/pgSQL function reading items by its index, above a Gather over an
-- index range of items.
CREATE OR REPLACE FUNCTION items_amount(k int) RETURNS numeric LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
  AS 'BEGIN RETURN (SELECT amount FROM items WHERE id = k); END';
SET enable_seqscan = off;
SET min_parallel_index_scan_size = 0;
EXPLAIN (COSTS OFF) SELECT count(*), sum(items_amount(id)) FROM items WHERE id BETWEEN 1000 AND 30000;
SELECT * FROM compare_ways('SELECT id, items_amount(id) FROM items WHERE id BETWEEN 1000 AND 30000');
SELECT workers_ran_index_scan('SELECT count(*), sum(items_amount(id)) FROM items WHERE id BETWEEN 1000 AND 30000');
RESET enable_seqscan;
RESET min_parallel_index_scan_size;
RESET pg_tempbuf.read_page_cost;

-- EXPLAIN ANALYZE: what the leader's part did (how much of the work it
-- got before the workers took the rest is a race: masked).
SELECT regexp_replace(regexp_replace(line, '(Leader Index Entries|Leader Heap Fetches|Pages Flushed): \d+', '\1: N'),
                      'actual rows=[0-9.]+ loops=\d+', 'actual rows=R loops=L') AS line
  FROM explain_lines('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
    SELECT count(*) FROM orders o JOIN items i ON i.id = o.id WHERE o.id < 100') AS line
 WHERE line !~ '^\s*(Worker \d+:|Rows Removed)';

-- Temp Bitmap Heap Scan: core's bitmap heap scans (BitmapOr, BitmapAnd)
-- of a temporary table, parallel safe and run whole by each participant,
-- here the inner side of a nested loop under Gather.
CREATE TEMP TABLE bm (id int, a int, b int, c int, pad text);
INSERT INTO bm SELECT g, g % 1000, (g * 7) % 1001, g % 3, repeat('p', 200) FROM generate_series(1, 80000) g;
CREATE INDEX bm_a ON bm (a);
CREATE INDEX bm_b ON bm (b);
CREATE INDEX bm_c ON bm (c);
ANALYZE bm;
CREATE OR REPLACE FUNCTION workers_ran_bitmap_scan(query text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    SET LOCAL parallel_leader_participation = off;
    EXECUTE 'EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) ' || query INTO plan;
    RETURN coalesce((SELECT bool_or((w->>'Actual Rows')::numeric > 0)
                       FROM jsonb_path_query(plan, 'strict $.**') AS node,
                            jsonb_array_elements(node->'Workers') AS w
                      WHERE jsonb_typeof(node) = 'object'
                        AND node->>'Custom Plan Provider' = 'Temp Bitmap Heap Scan'), false);
END $$;
SET enable_bitmapscan = on;
SET enable_indexscan = off;
SET enable_mergejoin = off;
SET random_page_cost = 10;
EXPLAIN (COSTS OFF) SELECT count(*), sum(t.id) FROM orders o JOIN bm t ON t.a = o.cust OR t.b = o.cust WHERE o.v < 20;
SELECT * FROM compare_ways('SELECT o.id, t.id FROM orders o JOIN bm t ON t.a = o.cust OR t.b = o.cust WHERE o.v < 20');
SELECT workers_ran_bitmap_scan('SELECT o.id, t.id FROM orders o JOIN bm t ON t.a = o.cust OR t.b = o.cust WHERE o.v < 20');
EXPLAIN (COSTS OFF) SELECT count(*) FROM orders o JOIN bm t ON t.a BETWEEN o.cust AND o.cust + 20 AND t.b BETWEEN o.cust AND o.cust + 30 WHERE o.v < 20;
SELECT * FROM compare_ways('SELECT o.id, t.id FROM orders o JOIN bm t ON t.a BETWEEN o.cust AND o.cust + 20 AND t.b BETWEEN o.cust AND o.cust + 30 WHERE o.v < 20');
SELECT workers_ran_bitmap_scan('SELECT o.id, t.id FROM orders o JOIN bm t ON t.a BETWEEN o.cust AND o.cust + 20 AND t.b BETWEEN o.cust AND o.cust + 30 WHERE o.v < 20');
-- = ANY in a BitmapOr, a constant bitmap rescanned per outer row.
SELECT * FROM compare_ways('SELECT o.id, t.id FROM orders o JOIN bm t ON (t.a = ANY (ARRAY[o.cust, o.cust + 7, NULL]) OR t.b = o.cust) AND t.c = 1 WHERE o.v < 15');

-- Lossy: a bitmap bigger than work_mem keeps whole pages, whose rows are
-- checked again.  Without workers the leader runs the plan: its counts.
-- (A partial scan of bm joined to a Materialize of orders would win on the
-- join's underestimated rows: no Materialize.)
SET work_mem = '64kB';
SET enable_material = off;
EXPLAIN (COSTS OFF) SELECT count(*), sum(t.id) FROM orders o JOIN bm t ON t.c = o.id % 3 WHERE o.id <= 4;
SELECT * FROM compare_ways('SELECT o.id, t.id FROM orders o JOIN bm t ON t.c = o.id % 3 AND t.a < 900 WHERE o.id <= 4');
SELECT workers_ran_bitmap_scan('SELECT o.id, t.id FROM orders o JOIN bm t ON t.c = o.id % 3 WHERE o.id <= 4');
SET max_parallel_workers = 0;
SELECT regexp_replace(regexp_replace(line, 'actual rows=[0-9.]+ loops=\d+', 'actual rows=R loops=L'),
                      'exact=\d+ lossy=[1-9]\d*', 'exact=N lossy=M (more than 0)') AS line
  FROM explain_lines('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
    SELECT count(*), sum(t.id) FROM orders o JOIN bm t ON t.c = o.id % 3 WHERE o.id <= 4') AS line
 WHERE line ~ '(Temp Bitmap|Bitmap Indexes|Leader Heap Blocks|Workers Launched)';
RESET max_parallel_workers;
RESET enable_material;
RESET work_mem;

-- The partial form (unparameterized): one bitmap, built in the query's DSA
-- by the first participant to get there, its heap pages shared among all,
-- as core's Parallel Bitmap Heap Scan.  Who builds and who reads which
-- page is a race; the heap blocks read add up to the serial scan's.
SET enable_seqscan = off;
SET pg_tempbuf.read_page_cost = 0;
EXPLAIN (COSTS OFF) SELECT count(*), sum(id) FROM bm WHERE a < 30 OR b < 30;
SELECT * FROM compare_ways('SELECT id FROM bm WHERE a < 30 OR b < 30');
SELECT workers_ran_bitmap_scan('SELECT id FROM bm WHERE a < 30 OR b < 30');
SELECT (regexp_match(line, '(Parallel Custom Scan \(Temp Bitmap Heap Scan\)|Index Entries: leader|Exact Heap Blocks: leader|Lossy Heap Blocks: leader)'))[1] AS shown
  FROM explain_lines('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
    SELECT count(*), sum(id) FROM bm WHERE a < 30 OR b < 30') AS line
 WHERE line ~ '(Temp Bitmap|Index Entries|Heap Blocks)';
SELECT (SELECT sum(m[1]::int)
          FROM explain_lines('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
                 SELECT count(*), sum(id) FROM bm WHERE a < 30 OR b < 30') AS line,
               regexp_matches(line, '=(\d+)', 'g') AS m
         WHERE line ~ 'Exact Heap Blocks') AS shared_exact_blocks;
SET pg_tempbuf.parallel_scan = off;
SELECT (SELECT (regexp_match(line, 'exact=(\d+)'))[1]::int
          FROM explain_lines('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
                 SELECT count(*), sum(id) FROM bm WHERE a < 30 OR b < 30') AS line
         WHERE line ~ 'Heap Blocks') AS serial_exact_blocks;
RESET pg_tempbuf.parallel_scan;
RESET pg_tempbuf.read_page_cost;
RESET enable_seqscan;

-- Rows of the open transaction: an update that moves rows in both indexes,
-- a HOT update, deletions, a rolled-back savepoint, new rows.
BEGIN;
DELETE FROM bm WHERE id % 10 = 1;
UPDATE bm SET a = a + 1, b = b + 2 WHERE id % 10 = 2;
UPDATE bm SET pad = 'hot' WHERE id % 10 = 3;
SAVEPOINT s;
UPDATE bm SET a = 7, b = 7 WHERE id % 10 = 4;
ROLLBACK TO SAVEPOINT s;
INSERT INTO bm SELECT g, g % 1000, g % 1001, g % 3, 'new' FROM generate_series(200001, 201000) g;
SELECT * FROM compare_ways('SELECT o.id, t.id, t.a, t.b, t.pad FROM orders o JOIN bm t ON t.a = o.cust OR t.b = o.cust WHERE o.v < 20');
SELECT * FROM compare_ways('SELECT o.id, t.id, t.pad FROM orders o JOIN bm t ON t.a BETWEEN o.cust AND o.cust + 20 AND t.b BETWEEN o.cust AND o.cust + 30 WHERE o.v < 20');
SELECT workers_ran_bitmap_scan('SELECT o.id, t.id FROM orders o JOIN bm t ON t.a = o.cust OR t.b = o.cust WHERE o.v < 20');
COMMIT;

-- EXPLAIN's other formats: the same properties, the block counts apart.
CREATE OR REPLACE FUNCTION explain_json(query text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) ' || query INTO plan;
    RETURN plan;
END $$;
SELECT key FROM jsonb_path_query(explain_json('SELECT count(*) FROM orders o JOIN bm t ON t.a = o.cust OR t.b = o.cust WHERE o.v < 20'),
         'strict $.**') AS node,
     jsonb_object_keys(node) AS key
 WHERE jsonb_typeof(node) = 'object' AND node->>'Custom Plan Provider' = 'Temp Bitmap Heap Scan'
   AND key IN ('Bitmap Indexes', 'Recheck Cond', 'Leader Index Entries',
               'Leader Exact Heap Blocks', 'Leader Lossy Heap Blocks')
 ORDER BY key;
SELECT count(*) FILTER (WHERE line ~ 'Bitmap Indexes: "?bm_a OR bm_b') AS indexes,
       count(*) FILTER (WHERE line ~ 'Leader Exact Heap Blocks: \d+') AS exact
  FROM explain_lines('EXPLAIN (ANALYZE, COSTS OFF, FORMAT YAML)
    SELECT count(*) FROM orders o JOIN bm t ON t.a = o.cust OR t.b = o.cust WHERE o.v < 20') AS y,
       regexp_split_to_table(y, E'\n') AS line;

-- An OR inside a correlated subquery (a SubPlan, planned alone, which the
-- leader runs above Gather: core's scan back), and pg_tempbuf.index_scan =
-- off, which leaves core's serial bitmap scans.
EXPLAIN (COSTS OFF) SELECT o.id, (SELECT count(*) FROM bm t WHERE t.a = o.cust OR t.b = o.cust) FROM orders o WHERE o.v < 10;
SELECT * FROM compare_ways('SELECT o.id, (SELECT count(*) FROM bm t WHERE t.a = o.cust OR t.b = o.cust) FROM orders o WHERE o.v < 10');
SET pg_tempbuf.index_scan = off;
SELECT count(*) FILTER (WHERE line ~ 'Temp Bitmap Heap Scan') AS temp_bitmap_scans,
       count(*) FILTER (WHERE line ~ '^\s*(->  )?Bitmap Heap Scan') AS stock_bitmap_scans
  FROM explain_lines('EXPLAIN (COSTS OFF) SELECT count(*) FROM orders o JOIN bm t ON t.a = o.cust OR t.b = o.cust WHERE o.v < 20') AS line;
RESET pg_tempbuf.index_scan;

-- A plan that ends up serial gets core's Bitmap Heap Scan back.
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT count(*), sum(t.id) FROM orders o JOIN bm t ON t.a = o.cust OR t.b = o.cust WHERE o.v < 20;
RESET max_parallel_workers_per_gather;
RESET random_page_cost;
RESET enable_indexscan;
RESET enable_mergejoin;
SET enable_bitmapscan = off;
RESET enable_bitmapscan;

-- Forced parallel mode (debug_parallel_query; force_parallel_mode before
-- 16), as regression suites run it: a small indexed table's index-only
-- scan goes to a worker under the single-copy Gather, as core's scan of a
-- permanent table would, and returns what the stock scan returns.
CREATE TEMP TABLE small_ix (k int PRIMARY KEY, v int);
INSERT INTO small_ix SELECT g, g % 10 FROM generate_series(1, 2000) g;
VACUUM ANALYZE small_ix;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
                       THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END,
                  'on', false) AS forced;
EXPLAIN (COSTS OFF) SELECT k FROM small_ix WHERE k BETWEEN 100 AND 200;
SELECT workers_ran_index_scan('SELECT k FROM small_ix WHERE k BETWEEN 100 AND 200');
SELECT * FROM compare_ways('SELECT k FROM small_ix WHERE k BETWEEN 100 AND 200');
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
                       THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END,
                  'off', false) AS forced;
