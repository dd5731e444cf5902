--
-- Where the planner hook puts the nodes (EXPLAIN COSTS OFF), where it
-- must not, and what EXPLAIN ANALYZE reports.
--
LOAD 'pg_buffered_plan';
CREATE SCHEMA bp_plans;
SET search_path = bp_plans;

CREATE TABLE big (id int PRIMARY KEY, grp int, val numeric, note text);
INSERT INTO big SELECT g, g % 10, g * 1.5, 'row ' || g FROM generate_series(1, 10000) g;
CREATE TABLE small (id int PRIMARY KEY, name text);
INSERT INTO small SELECT g, 'name ' || g FROM generate_series(0, 9) g;
CREATE INDEX big_grp ON big (grp);
ANALYZE big, small;
SET max_parallel_workers_per_gather = 0;

-- EXPLAIN ANALYZE text that is the same on PostgreSQL 15 and 18.
CREATE FUNCTION explain_analyze(query text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || query
    LOOP
        -- Lines only 18 prints, and memory figures that differ.
        CONTINUE WHEN line ~ '^\s*(Index Searches|Storage):';
        line := regexp_replace(line, 'Memory( Usage)?: \d+kB', 'Memory\1: NkB', 'g');
        -- 18 prints fractional row counts.
        RETURN NEXT regexp_replace(line, 'rows=(\d+)\.00', 'rows=\1', 'g');
    END LOOP;
END $$;

-- Off (the default): the stock plan.
SHOW pg_buffered_plan.batch_size;
EXPLAIN (COSTS OFF) SELECT count(*) FROM big WHERE id % 10 = 3;

-- scans: the Seq Scan becomes a BatchedSeqScan, nothing else changes.
SET pg_buffered_plan.batch_size = 2048;
EXPLAIN (COSTS OFF) SELECT count(*) FROM big WHERE id % 10 = 3;
EXPLAIN (COSTS OFF, VERBOSE) SELECT id, val * 2 FROM big WHERE note LIKE 'row 1%';
EXPLAIN (COSTS OFF) SELECT b.grp, s.name, count(*) FROM big b JOIN small s ON s.id = b.grp GROUP BY 1, 2;
-- Index and bitmap scans are not sequential scans.
EXPLAIN (COSTS OFF) SELECT * FROM big WHERE id = 42;
-- Subplans and initplans are rewritten too.
EXPLAIN (COSTS OFF) SELECT name, (SELECT max(val) FROM big WHERE grp = small.id) FROM small;
-- Temporary tables are heap tables too.
CREATE TEMP TABLE tmp AS SELECT * FROM small;
EXPLAIN (COSTS OFF) SELECT * FROM tmp;

-- all: a copying Buffered node above every other node.
SET pg_buffered_plan.placement = 'all';
EXPLAIN (COSTS OFF) SELECT count(*) FROM big WHERE id % 10 = 3;
EXPLAIN (COSTS OFF, VERBOSE) SELECT s.name, sum(b.val) FROM big b JOIN small s ON s.id = b.grp GROUP BY s.name ORDER BY 2 DESC LIMIT 3;
-- Never above a Hash (HashJoin reads it directly) nor a bitmap index
-- scan (it returns a bitmap, not rows).
EXPLAIN (COSTS OFF) SELECT count(*) FROM big WHERE grp IN (1, 2);
-- Never as a merge join's inner side, which must mark and restore.
SET enable_hashjoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM big b JOIN small s ON s.id = b.grp;
RESET enable_hashjoin;
RESET enable_nestloop;
-- Append children and set operations.
EXPLAIN (COSTS OFF) SELECT id FROM small UNION ALL SELECT id FROM tmp;

-- Statements that keep the stock plan whatever the settings:
-- data-modifying statements and row locks (EvalPlanQual) ...
EXPLAIN (COSTS OFF) UPDATE small SET name = name WHERE id < 3;
EXPLAIN (COSTS OFF) SELECT * FROM small WHERE id < 3 FOR UPDATE;
EXPLAIN (COSTS OFF) WITH d AS (DELETE FROM small WHERE id > 100 RETURNING id) SELECT count(*) FROM d;
-- ... and scrollable cursors (no backward scan).
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT id FROM small;
FETCH 3 FROM c;
FETCH BACKWARD 2 FROM c;
COMMIT;
-- A cursor declared without SCROLL is scrollable only if its plan can go
-- backward; with the nodes it cannot (as with many stock plans).
BEGIN;
DECLARE c CURSOR FOR SELECT id FROM small;
FETCH 2 FROM c;
FETCH BACKWARD 1 FROM c;
ROLLBACK;

-- Parallel plans: the BatchedSeqScan is parallel-aware.
SET pg_buffered_plan.placement = 'scans';
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
EXPLAIN (COSTS OFF) SELECT count(*) FROM big WHERE id % 10 = 3;
SELECT count(*), sum(val) FROM big WHERE id % 10 = 3;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;

-- A plan keeps the batch size it was made with (prepared statements).
SET pg_buffered_plan.batch_size = 64;
PREPARE p AS SELECT count(*) FROM small;
EXECUTE p;
SET pg_buffered_plan.batch_size = 0;
EXPLAIN (COSTS OFF) EXECUTE p;
DEALLOCATE p;
EXPLAIN (COSTS OFF) SELECT count(*) FROM small;

-- EXPLAIN ANALYZE: batches ramp 1, 2, 4 ... 2048, so 10000 rows take
-- 11 batches for the first 2047, 3 full ones, and one of 1809.
SET pg_buffered_plan.batch_size = 2048;
SELECT explain_analyze('SELECT count(*) FROM big WHERE id % 10 = 3');
SET pg_buffered_plan.placement = 'all';
SELECT explain_analyze('SELECT grp, count(*) FROM big WHERE id <= 100 GROUP BY grp ORDER BY grp LIMIT 4');
-- Nested-loop inner side: rescanned per outer row, the ramp restarts.
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT explain_analyze('SELECT s.id, count(*) FROM small s JOIN small t ON t.id <= s.id WHERE s.id < 3 GROUP BY s.id');
RESET enable_hashjoin;
RESET enable_mergejoin;

RESET search_path;
DROP SCHEMA bp_plans CASCADE;
