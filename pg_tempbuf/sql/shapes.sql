--
-- Temporary tables in the query shapes people write: a small staged table
-- joined to big permanent ones, semi and anti joins, subqueries, a table
-- read several times, partitioned temporary tables.  Each plan is shown,
-- and each result compared with pg_tempbuf.parallel_scan = off.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_tempbuf;
RESET client_min_messages;
LOAD 'pg_tempbuf';

CREATE TABLE big AS
  SELECT g AS id, g % 1000 AS k, (g * 37) % 10007 AS v FROM generate_series(1, 100000) g;
ANALYZE big;
CREATE TEMP TABLE stage AS
  SELECT g AS k, g * 3 AS w FROM generate_series(1, 400, 2) g;
ANALYZE stage;
CREATE TEMP TABLE unioned AS SELECT g % 1000 AS k FROM generate_series(1, 50000) g;
ANALYZE unioned;
CREATE TEMP TABLE stage2 AS SELECT g AS v FROM generate_series(1, 10007, 7) g;
ANALYZE stage2;

-- Results of a query with our paths and without them, which must match.
CREATE FUNCTION both_ways(query text) RETURNS TABLE (setting text, result text)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'SELECT string_agg(r::text, '' '' ORDER BY r::text) FROM (' || query || ') r' INTO result;
    setting := 'on';
    RETURN NEXT;
    SET LOCAL pg_tempbuf.parallel_scan = off;
    EXECUTE 'SELECT string_agg(r::text, '' '' ORDER BY r::text) FROM (' || query || ') r' INTO result;
    setting := 'off';
    RETURN NEXT;
    SET LOCAL pg_tempbuf.parallel_scan = on;
END $$;

-- Did Gather launch workers for it?
CREATE FUNCTION workers_launched(query text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || query INTO plan;
    RETURN (SELECT bool_or((node->>'Workers Launched')::int > 0)
              FROM jsonb_path_query(plan, 'strict $.**') AS node
             WHERE jsonb_typeof(node) = 'object' AND node ? 'Workers Launched');
END $$;

-- The lines of an EXPLAIN statement.
CREATE FUNCTION explain_lines(explain text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE explain;
END $$;

-- The plan's parallel nodes and every scan of a table, one line each:
-- what matters here, without what differs between versions.
CREATE FUNCTION plan_summary(query text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) ' || query INTO plan;
    RETURN QUERY
    SELECT concat_ws(' ',
                     CASE WHEN (node->>'Parallel Aware')::boolean THEN 'Parallel' END,
                     node->>'Node Type',
                     '(' || (node->>'Custom Plan Provider') || ')',
                     'on ' || (node->>'Relation Name'),
                     node->>'Scan Mode') AS line
      FROM jsonb_path_query(plan, 'strict $.**') AS node
     WHERE jsonb_typeof(node) = 'object' AND node ? 'Node Type'
       AND (node->>'Node Type' IN ('Gather', 'Gather Merge', 'Append')
            OR node ? 'Relation Name')
     ORDER BY line;
END $$;

-- Plans are made cheap to parallelize so that they do not depend on this
-- machine's costs; the flush is free because the tables are clean.
SELECT pg_flush_local_buffers() >= 0 AS flushed;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET pg_tempbuf.parallel_margin = 0;  -- tested on its own in parallel_scan
SET min_parallel_table_scan_size = '1MB';

-- A small temporary table on the inner side of a join: every participant
-- reads it whole.
EXPLAIN (COSTS OFF) SELECT count(*), sum(b.v) FROM big b JOIN stage s USING (k);
SELECT * FROM both_ways('SELECT count(*), sum(b.v) FROM big b JOIN stage s USING (k)');
SELECT workers_launched('SELECT count(*), sum(b.v) FROM big b JOIN stage s USING (k)');

-- Semi and anti joins.
EXPLAIN (COSTS OFF) SELECT count(*) FROM big WHERE k IN (SELECT k FROM stage);
SELECT * FROM both_ways('SELECT count(*) FROM big WHERE k IN (SELECT k FROM stage)');
EXPLAIN (COSTS OFF) SELECT count(*) FROM big b WHERE NOT EXISTS (SELECT FROM stage s WHERE s.k = b.k);
SELECT * FROM both_ways('SELECT count(*) FROM big b WHERE NOT EXISTS (SELECT FROM stage s WHERE s.k = b.k)');

-- NOT IN: a hashed SubPlan over the temporary table, evaluated by workers.
SELECT plan_summary('SELECT count(*) FROM big WHERE k NOT IN (SELECT k FROM stage)');
SELECT * FROM both_ways('SELECT count(*) FROM big WHERE k NOT IN (SELECT k FROM stage)');

-- Two temporary tables in one plan.
EXPLAIN (COSTS OFF) SELECT count(*) FROM big b JOIN stage s USING (k) JOIN stage2 s2 ON s2.v = b.v;
SELECT * FROM both_ways('SELECT count(*) FROM big b JOIN stage s USING (k) JOIN stage2 s2 ON s2.v = b.v');

-- Two temporary tables joined to each other, their join the inner side of
-- the big table's (TPC-H Q21's supplier and nation): core joins two rels
-- through their cheapest paths, the stock scans, which are not parallel
-- safe; our join hook joins them again through ours.
CREATE TEMP TABLE grade AS SELECT g AS n, 'grade ' || g AS name FROM generate_series(0, 9) g;
ANALYZE grade;
SELECT pg_flush_local_buffers() >= 0 AS flushed;
EXPLAIN (COSTS OFF) SELECT count(*), sum(b.v) FROM big b JOIN stage s USING (k) JOIN grade g ON g.n = s.w % 10 WHERE g.name = 'grade 3';
SELECT * FROM both_ways('SELECT count(*), sum(b.v) FROM big b JOIN stage s USING (k) JOIN grade g ON g.n = s.w % 10 WHERE g.name = ''grade 3''');
SELECT workers_launched('SELECT count(*), sum(b.v) FROM big b JOIN stage s USING (k) JOIN grade g ON g.n = s.w % 10 WHERE g.name = ''grade 3''');

-- Out-of-line values of a small table on the inner side: each participant
-- fetches them itself (the leader has none to give).
CREATE TEMP TABLE notes AS
  SELECT g AS k, (SELECT string_agg(md5(g::text || i::text), '') FROM generate_series(1, 100) i) AS body
    FROM generate_series(1, 40) g;
ANALYZE notes;
SELECT pg_flush_local_buffers() >= 0 AS flushed;
SELECT plan_summary('SELECT count(*), max(md5(n.body)) FROM big b JOIN notes n USING (k)');
SELECT * FROM both_ways('SELECT count(*), max(md5(n.body)) FROM big b JOIN notes n USING (k)');
SELECT workers_launched('SELECT count(*), max(md5(n.body)) FROM big b JOIN notes n USING (k)');
-- The same with the values' toast pages still dirty in local buffers: the
-- leader flushes the toast relation before any worker starts.
INSERT INTO notes
  SELECT g, (SELECT string_agg(md5(i::text || g::text), '') FROM generate_series(1, 100) i)
    FROM generate_series(41, 60) g;
SELECT * FROM both_ways('SELECT count(*), max(md5(n.body)) FROM big b JOIN notes n USING (k)');

-- Rescans: the inner side of a nested loop, and a correlated subquery.
-- Clean tables first: core prices each rescan of a scan at its whole cost,
-- flush included, which happens once.
SELECT pg_flush_local_buffers() >= 0 AS flushed;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT plan_summary('SELECT count(*) FROM big b JOIN stage s ON s.k = b.k AND s.w > b.v');
SELECT * FROM both_ways('SELECT count(*) FROM big b JOIN stage s ON s.k = b.k AND s.w > b.v');
RESET enable_hashjoin;
RESET enable_mergejoin;
SELECT plan_summary('SELECT count(*) FROM big b WHERE b.id < 300 AND b.v > (SELECT max(w) FROM stage s WHERE s.k < b.k)');
SELECT * FROM both_ways('SELECT count(*) FROM big b WHERE b.id < 300 AND b.v > (SELECT max(w) FROM stage s WHERE s.k < b.k)');

-- One table read in several places: a self-join, and an inlined CTE with a
-- subquery on the same table.  Every read is ours; the InitPlan's stock
-- scan became one.
SELECT plan_summary('SELECT count(*) FROM stage s1 JOIN stage s2 ON s1.k = s2.k + 2 JOIN big b ON b.k = s1.k');
SELECT * FROM both_ways('SELECT count(*) FROM stage s1 JOIN stage s2 ON s1.k = s2.k + 2 JOIN big b ON b.k = s1.k');
SELECT plan_summary('WITH c AS (SELECT k, w FROM stage) SELECT count(*), sum(c.w) FROM big b JOIN c USING (k) WHERE b.v > (SELECT avg(w) FROM stage)');
SELECT * FROM both_ways('WITH c AS (SELECT k, w FROM stage) SELECT count(*), sum(c.w) FROM big b JOIN c USING (k) WHERE b.v > (SELECT avg(w) FROM stage)');
SELECT workers_launched('WITH c AS (SELECT k, w FROM stage) SELECT count(*), sum(c.w) FROM big b JOIN c USING (k) WHERE b.v > (SELECT avg(w) FROM stage)');

-- UNION ALL of two reads of a table: both reads are ours.  (A permanent
-- member listed after a temporary one stays serial: core decided that its
-- rel may not be parallel before our hook ran.)
SELECT plan_summary('SELECT count(*), sum(k) FROM (SELECT k FROM unioned UNION ALL SELECT k FROM unioned WHERE k > 100) u');
SELECT * FROM both_ways('SELECT count(*), sum(k) FROM (SELECT k FROM unioned UNION ALL SELECT k FROM unioned WHERE k > 100) u');
SELECT * FROM both_ways('SELECT count(*), sum(k) FROM (SELECT k FROM unioned UNION ALL SELECT k FROM big) u');

-- A stock read that cannot become ours (a hash index scan in the InitPlan;
-- btree scans become Temp Index Scans, see index_scan.sql):
-- the plan is made again without our paths for that table, so workers
-- never read it, and no scan of ours runs in the leader alone under a
-- Gather costed with workers.
CREATE TEMP TABLE keyed AS SELECT g AS k, g * 3 AS w FROM generate_series(1, 20000) g;
CREATE INDEX keyed_k ON keyed USING hash (k);
ANALYZE keyed;
SELECT pg_flush_local_buffers() >= 0 AS flushed;
ALTER TABLE keyed SET (parallel_workers = 0);
SELECT plan_summary('SELECT count(*) FROM big b JOIN keyed s ON s.w = b.v');
SELECT plan_summary('SELECT count(*) FROM big b JOIN keyed s ON s.w = b.v WHERE b.k < (SELECT w FROM keyed WHERE k = 5)');
SELECT * FROM both_ways('SELECT count(*) FROM big b JOIN keyed s ON s.w = b.v WHERE b.k < (SELECT w FROM keyed WHERE k = 5)');
ALTER TABLE keyed SET (parallel_workers = 2);
SELECT plan_summary('SELECT count(*) FROM keyed WHERE w > (SELECT w FROM keyed WHERE k = 5)');
SELECT count(*) AS leader_only_scans FROM explain_lines('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM keyed WHERE w > (SELECT w FROM keyed WHERE k = 5)') AS line
 WHERE line ~ 'Leader Only';
SELECT * FROM both_ways('SELECT count(*) FROM keyed WHERE w > (SELECT w FROM keyed WHERE k = 5)');

-- A stock btree Index Scan above the Gather, of a table that workers read
-- below it (the inner side of a nested loop over the Gather, a SubPlan): a
-- Temp Index Scan that only the leader runs, through its local buffers,
-- without a hint bit or a prune and with nothing to flush.  The plan keeps
-- its workers instead of being made again without them.  Joins by nested
-- loop only: how many of the table's pages are still dirty when it is
-- planned tips a hash join of two partial scans against it.
SET enable_hashjoin = off;
SET enable_mergejoin = off;
CREATE TEMP TABLE looked AS
  SELECT g AS k, (g * 7) % 100000 AS v, md5(g::text) AS s FROM generate_series(1, 100000) g;
CREATE INDEX looked_k ON looked (k);
ANALYZE looked;
SELECT plan_summary('SELECT a.k, b.s FROM looked a JOIN looked b ON b.k = a.v WHERE a.s LIKE ''abc%''');
SELECT * FROM both_ways('SELECT count(*), md5(string_agg(x::text, '','' ORDER BY x::text)) FROM (SELECT a.k, b.s FROM looked a JOIN looked b ON b.k = a.v WHERE a.s LIKE ''abc%'') x');
SELECT plan_summary('SELECT a.k, (SELECT b.s FROM looked b WHERE b.k = a.v) FROM looked a WHERE a.s LIKE ''abc%''');
SELECT * FROM both_ways('SELECT count(*), md5(string_agg(x::text, '','' ORDER BY x::text)) FROM (SELECT a.k, (SELECT b.s FROM looked b WHERE b.k = a.v) FROM looked a WHERE a.s LIKE ''abc%'') x');
SELECT plan_summary('SELECT a.k FROM looked a WHERE a.s LIKE ''abc%'' AND NOT EXISTS (SELECT 1 FROM looked b WHERE b.k = a.v AND b.s LIKE ''a%'')');
SELECT * FROM both_ways('SELECT count(*), md5(string_agg(x::text, '','' ORDER BY x::text)) FROM (SELECT a.k FROM looked a WHERE a.s LIKE ''abc%'' AND NOT EXISTS (SELECT 1 FROM looked b WHERE b.k = a.v AND b.s LIKE ''a%'')) x');
-- Whether the nested loop runs above the Gather (the leader-only scan) or
-- in it (every participant probing) is the planner's call: both read looked
-- by our index scan, with workers.
SELECT regexp_replace(regexp_replace(line, '^\s*(->\s*)?|\s*\(actual.*', '', 'g'),
                      'Pages Flushed: \d+', 'Pages Flushed: N') AS line
  FROM explain_lines('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT a.k, b.s FROM looked a JOIN looked b ON b.k = a.v WHERE a.s LIKE ''abc%''') AS line
 WHERE line ~ '(Temp Index Scan|Pages Flushed|Workers Launched)'
 ORDER BY 1;
RESET enable_hashjoin;
RESET enable_mergejoin;

-- A plan that ends up serial reads the table the stock way.
SET max_parallel_workers_per_gather = 0;
SELECT plan_summary('SELECT count(*) FROM big b JOIN stage s USING (k)');
RESET max_parallel_workers_per_gather;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT plan_summary('SELECT count(*) FROM stage');
RESET enable_seqscan;
RESET enable_bitmapscan;

-- Partitioned temporary tables: Parallel Append over partitions, plan-time
-- and run-time pruning.
CREATE TEMP TABLE tp (k int, v int) PARTITION BY RANGE (k);
CREATE TEMP TABLE tp1 PARTITION OF tp FOR VALUES FROM (0) TO (300);
CREATE TEMP TABLE tp2 PARTITION OF tp FOR VALUES FROM (300) TO (700);
CREATE TEMP TABLE tp3 PARTITION OF tp DEFAULT;
INSERT INTO tp SELECT g % 1000, g FROM generate_series(1, 60000) g;
ANALYZE tp;
SELECT pg_flush_local_buffers() >= 0 AS flushed;
SELECT plan_summary('SELECT count(*), sum(v) FROM tp');
SELECT * FROM both_ways('SELECT count(*), sum(v) FROM tp');
SELECT plan_summary('SELECT count(*), sum(v) FROM tp WHERE k < 300');
SELECT * FROM both_ways('SELECT count(*), sum(v) FROM tp WHERE k < 300');
SELECT plan_summary('SELECT count(*) FROM big b JOIN tp USING (k) WHERE tp.v < 50');
SELECT * FROM both_ways('SELECT count(*) FROM big b JOIN tp USING (k) WHERE tp.v < 50');
SELECT workers_launched('SELECT count(*) FROM big b JOIN tp USING (k) WHERE tp.v < 50');
SET plan_cache_mode = force_generic_plan;
PREPARE tp_from(int) AS SELECT count(*), sum(v) FROM tp WHERE k >= $1;
SELECT plan_summary('EXECUTE tp_from(800)');
EXECUTE tp_from(800);
SET pg_tempbuf.parallel_scan = off;
EXECUTE tp_from(800);
RESET pg_tempbuf.parallel_scan;
RESET plan_cache_mode;

DROP TABLE big;

-- Planning stays stock where no worker can pay for itself (worker_gate.c):
-- joins of small tables, a point lookup or a short range of a big one.
-- A big permanent table still drives workers over a small temporary one,
-- at default costs.
CREATE TEMP TABLE tiny AS SELECT g AS k, g * 2 AS w FROM generate_series(1, 10) g;
ANALYZE tiny;
CREATE TEMP TABLE keyed_big AS SELECT g AS k, g % 7 AS w FROM generate_series(1, 300000) g;
CREATE INDEX ON keyed_big (k);
ANALYZE keyed_big;
CREATE TABLE wide AS SELECT g AS id, g % 10 + 1 AS k, md5(g::text) AS pad FROM generate_series(1, 300000) g;
ANALYZE wide;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
EXPLAIN (COSTS OFF) SELECT sum(tiny.w) FROM tiny JOIN stage USING (k);
EXPLAIN (COSTS OFF) SELECT count(*) FROM keyed_big b JOIN tiny t USING (k) WHERE b.k BETWEEN 5 AND 25;
SELECT * FROM both_ways('SELECT count(*) FROM keyed_big b JOIN tiny t USING (k) WHERE b.k BETWEEN 5 AND 25');
SELECT plan_summary('SELECT count(*), max(w.pad) FROM wide w JOIN tiny t USING (k) WHERE w.pad LIKE ''%ab%''');
SELECT * FROM both_ways('SELECT count(*), max(w.pad) FROM wide w JOIN tiny t USING (k) WHERE w.pad LIKE ''%ab%''');
SELECT workers_launched('SELECT count(*), max(w.pad) FROM wide w JOIN tiny t USING (k) WHERE w.pad LIKE ''%ab%''');
DROP TABLE wide;
