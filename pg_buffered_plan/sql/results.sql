--
-- Identical results: every query below is run with the nodes off and at
-- batch sizes 1, 2, 3, 7, 64 and 2048 under both placements; same_rows()
-- reports 'same' only if every run returned the same rows in the same
-- order as the stock plan.
--
LOAD 'pg_buffered_plan';
CREATE SCHEMA bp_results;
SET search_path = bp_results;
SET max_parallel_workers_per_gather = 0;

CREATE FUNCTION rows_of(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE result text;
BEGIN
    EXECUTE format('SELECT string_agg(q::text, E''\n'') FROM (%s) q', query)
       INTO result;
    RETURN coalesce(result, '<no rows>');
END $$;

-- Plan lines naming our nodes, to prove a run really used them.
CREATE FUNCTION nodes_in(query text) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE line text; n int := 0;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        IF line ~ 'Custom Scan \((BatchedSeqScan|Buffered)\)' THEN n := n + 1; END IF;
    END LOOP;
    RETURN n;
END $$;

CREATE FUNCTION same_rows(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    stock text;
    placement text;
    batch int;
    bad text := '';
BEGIN
    PERFORM set_config('pg_buffered_plan.batch_size', '0', true);
    IF nodes_in(query) <> 0 THEN
        RETURN 'nodes in the stock plan';
    END IF;
    stock := rows_of(query);
    FOREACH placement IN ARRAY ARRAY['scans', 'all'] LOOP
        FOREACH batch IN ARRAY ARRAY[1, 2, 3, 7, 64, 2048] LOOP
            PERFORM set_config('pg_buffered_plan.placement', placement, true);
            PERFORM set_config('pg_buffered_plan.batch_size', batch::text, true);
            IF placement = 'all' AND nodes_in(query) = 0 THEN
                bad := bad || format(' %s/%s:no-nodes', placement, batch);
            END IF;
            IF rows_of(query) IS DISTINCT FROM stock THEN
                bad := bad || format(' %s/%s', placement, batch);
            END IF;
        END LOOP;
    END LOOP;
    PERFORM set_config('pg_buffered_plan.batch_size', '0', true);
    RETURN CASE WHEN bad = '' THEN 'same' ELSE 'DIFFERENT:' || bad END;
END $$;

CREATE TABLE t (a int, b int, c text);
INSERT INTO t SELECT g, g % 13, repeat(chr(65 + g % 26), g % 40) FROM generate_series(1, 5000) g;
CREATE TABLE small (id int, name text);
INSERT INTO small SELECT g, 'n' || g FROM generate_series(0, 12) g;
CREATE TABLE empty_t (a int);
-- One row per page, and TOASTed values.
CREATE TABLE wide (id int, pad text, big text) WITH (fillfactor = 10);
ALTER TABLE wide ALTER pad SET STORAGE plain;
INSERT INTO wide SELECT g, repeat('p', 3000), repeat(md5(g::text), 500) FROM generate_series(1, 2000) g;
-- Dead and HOT-updated tuples left on the pages (autovacuum off).
CREATE TABLE holes (a int, b int) WITH (autovacuum_enabled = off);
INSERT INTO holes SELECT g, g FROM generate_series(1, 4000) g;
DELETE FROM holes WHERE a % 3 = 0;
UPDATE holes SET b = -b WHERE a % 5 = 0;
-- Exactly a batch, one over, one under.
CREATE TABLE n2048 AS SELECT g AS a FROM generate_series(1, 2048) g;
CREATE TABLE n2049 AS SELECT g AS a FROM generate_series(1, 2049) g;
CREATE TABLE n2047 AS SELECT g AS a FROM generate_series(1, 2047) g;
CREATE TABLE parted (k int, v text) PARTITION BY RANGE (k);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (1000);
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (1000) TO (3000);
INSERT INTO parted SELECT g, 'v' || g FROM generate_series(0, 2999) g;
CREATE INDEX t_a ON t (a);
ANALYZE t, small, empty_t, wide, holes, n2048, n2049, n2047, parted;

-- Scans: whole tables, filters, projections, system columns.
SELECT same_rows('SELECT * FROM t');
SELECT same_rows('SELECT a, b FROM t WHERE b = 7');
SELECT same_rows('SELECT a * 2, upper(c) FROM t WHERE c LIKE ''%Q%''');
SELECT same_rows('SELECT * FROM t WHERE a < 0');
SELECT same_rows('SELECT * FROM empty_t');
SELECT same_rows('SELECT ctid, tableoid::regclass, a FROM t WHERE a % 500 = 0');
SELECT same_rows('SELECT id, length(pad), md5(big) FROM wide');
SELECT same_rows('SELECT id FROM wide WHERE big LIKE ''c4ca%''');
SELECT same_rows('SELECT * FROM holes');
SELECT same_rows('SELECT count(*), sum(b) FROM holes WHERE b < 0');
SELECT same_rows('SELECT a FROM n2048');
SELECT same_rows('SELECT a FROM n2049');
SELECT same_rows('SELECT a FROM n2047 WHERE a % 2 = 1');
SELECT same_rows('SELECT count(*) FROM n2049');

-- Aggregation, sorting, windows, set operations, partitions.
SELECT same_rows('SELECT b, count(*), sum(a), max(c) FROM t GROUP BY b ORDER BY b');
SELECT same_rows('SELECT b, count(*) FROM t GROUP BY ROLLUP (b) ORDER BY b');
SELECT same_rows('SELECT DISTINCT b FROM t ORDER BY b');
SELECT same_rows('SELECT a, sum(a) OVER (PARTITION BY b ORDER BY a) FROM t WHERE a < 300 ORDER BY a');
SELECT same_rows('SELECT a FROM t WHERE a < 50 UNION SELECT id FROM small ORDER BY 1');
SELECT same_rows('SELECT b FROM t INTERSECT SELECT id FROM small ORDER BY 1');
SELECT same_rows('SELECT b FROM t EXCEPT ALL SELECT id FROM small ORDER BY 1');
SELECT same_rows('SELECT * FROM parted WHERE k % 100 = 1 ORDER BY k');
SELECT same_rows('SELECT count(*), min(v) FROM parted');
SELECT same_rows('SELECT * FROM t ORDER BY c DESC, a LIMIT 20');

-- LIMIT and OFFSET stop early; batches must not change which rows.
SELECT same_rows('SELECT a FROM t LIMIT 5');
SELECT same_rows('SELECT a FROM t WHERE b = 3 LIMIT 10 OFFSET 7');
SELECT same_rows('SELECT * FROM small s, LATERAL (SELECT a FROM t WHERE t.b = s.id LIMIT 2) x');
-- An endless recursion that only LIMIT ends: read-ahead must be bounded.
SELECT same_rows('WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r LIMIT 100');

-- Rescans with new parameters: correlated subplans, LATERAL, EXISTS.
SELECT same_rows('SELECT id, (SELECT count(*) FROM t WHERE t.b = small.id) FROM small');
SELECT same_rows('SELECT id, (SELECT max(a) FROM t WHERE t.b = small.id AND t.a < 100 * small.id) FROM small');
SELECT same_rows('SELECT s.id, x.* FROM small s, LATERAL (SELECT count(*), sum(a) FROM t WHERE t.b = s.id) x');
SELECT same_rows('SELECT id FROM small WHERE EXISTS (SELECT 1 FROM t WHERE t.b = small.id AND t.a > 4990)');
SELECT same_rows('SELECT id FROM small WHERE id NOT IN (SELECT b FROM t WHERE a > 4995)');
SELECT same_rows('SELECT a FROM t WHERE a IN (SELECT id * 100 FROM small)');
SELECT same_rows('SELECT a, (SELECT name FROM small WHERE id = t.b) FROM t WHERE a < 40');

-- Forced join methods: nested loop (rescanned inner, parameterised index
-- scan), merge join (inner marks and restores), hash join.
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT same_rows('SELECT s.id, t.a FROM small s JOIN t ON t.a = s.id * 7');
SELECT same_rows('SELECT s.id, count(*) FROM small s JOIN t ON t.b = s.id GROUP BY s.id');
SET enable_material = off;
SELECT same_rows('SELECT s.id, count(*) FROM small s JOIN t ON t.b = s.id GROUP BY s.id');
RESET enable_material;
SET enable_nestloop = off;
SET enable_mergejoin = on;
SELECT same_rows('SELECT s.id, t.a FROM small s JOIN t ON t.b = s.id WHERE t.a < 200');
SELECT same_rows('SELECT t1.a, t2.a FROM n2049 t1 JOIN n2048 t2 ON t1.a = t2.a + 1');
RESET enable_nestloop;
RESET enable_mergejoin;
RESET enable_hashjoin;
SELECT same_rows('SELECT s.name, count(*), sum(t.a) FROM t JOIN small s ON s.id = t.b GROUP BY s.name ORDER BY 1');
SELECT same_rows('SELECT count(*) FROM t t1 LEFT JOIN t t2 ON t1.a = t2.b');

-- Other scan kinds under placement 'all'.
SELECT same_rows('SELECT * FROM generate_series(1, 5000) g WHERE g % 1000 = 0');
SELECT same_rows('SELECT * FROM (VALUES (1, ''x''), (2, ''y''), (3, ''z'')) v(a, b)');
SELECT same_rows('WITH c AS MATERIALIZED (SELECT a, b FROM t WHERE a < 100) SELECT x.a, y.b FROM c x JOIN c y ON x.a = y.a + 1');
SELECT same_rows('SELECT * FROM t WHERE a BETWEEN 100 AND 110');

-- Temporary tables use local buffers.
CREATE TEMP TABLE tmp AS SELECT * FROM t;
SELECT same_rows('SELECT b, count(*) FROM tmp WHERE a % 3 = 0 GROUP BY b ORDER BY b');

-- Parallel plans (rows from workers come in any order: aggregate).
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT same_rows('SELECT count(*), sum(a), sum(length(c)) FROM t WHERE b <> 4');
SELECT same_rows('SELECT b, count(*) FROM t GROUP BY b ORDER BY b');
SELECT same_rows('SELECT count(*) FROM t t1 JOIN t t2 ON t1.a = t2.a WHERE t1.b = 5');
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;

-- Cursors fetch forward in steps across batch boundaries.
SET pg_buffered_plan.batch_size = 3;
SET pg_buffered_plan.placement = 'all';
BEGIN;
DECLARE cur CURSOR FOR SELECT a FROM t WHERE b = 1 ORDER BY a;
FETCH 4 FROM cur;
MOVE 100 IN cur;
FETCH 2 FROM cur;
COMMIT;

-- A batch stops at its pin budget (shared_buffers / 64 pages), whatever
-- the batch size: wide has one row per page, so its largest batches are
-- cut at the budget (true for shared_buffers up to about 600 MB).
SET pg_buffered_plan.batch_size = 65536;
SET pg_buffered_plan.placement = 'scans';
CREATE FUNCTION max_pinned(query text) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || query INTO plan;
    RETURN (plan -> 0 -> 'Plan' -> 'Plans' -> 0 ->> 'Max Pinned Pages')::int;
END $$;
SELECT max_pinned('SELECT count(*) FROM wide') =
       (SELECT setting::int / 64 FROM pg_settings WHERE name = 'shared_buffers') AS pins_at_budget;
SELECT count(*) FROM wide;
-- No pins leak: a new scan of the same pages is not disturbed.
SELECT count(*) FROM wide w1 JOIN wide w2 USING (id);
RESET pg_buffered_plan.batch_size;
RESET pg_buffered_plan.placement;

RESET search_path;
DROP SCHEMA bp_results CASCADE;
