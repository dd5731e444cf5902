--
-- Bad input: a clear error with the right SQLSTATE that names the
-- relation, or NULL for STRICT functions; nothing is lost.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_tempbuf;
RESET client_min_messages;

-- SQLSTATE and message of a statement's error, for compact checks.
CREATE FUNCTION error_of(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

CREATE TABLE permanent (x int);
CREATE UNLOGGED TABLE unlogged (x int);
CREATE VIEW perm_view AS SELECT 1 AS x;
CREATE MATERIALIZED VIEW matview AS SELECT 1 AS x;
CREATE FOREIGN DATA WRAPPER dummy_fdw;
CREATE SERVER dummy_server FOREIGN DATA WRAPPER dummy_fdw;
CREATE FOREIGN TABLE foreign_t (x int) SERVER dummy_server;
CREATE TEMP TABLE t (x int PRIMARY KEY);
INSERT INTO t SELECT g FROM generate_series(1, 1000) g;
CREATE TEMP VIEW temp_view AS SELECT * FROM t;
CREATE TEMP TABLE temp_parted (x int) PARTITION BY RANGE (x);
CREATE TEMP SEQUENCE temp_seq;

-- What a user sees.
SELECT pg_read_temp_relation('permanent');
SELECT pg_temp_buffers_dirty('t_pkey');

-- Every relation-taking function, every wrong kind of relation.
SELECT f AS function, r AS relation,
       error_of(format('SELECT %s(%L::regclass)', f, r)) AS result
  FROM unnest(ARRAY['pg_read_temp_relation', 'pg_temp_buffers_dirty',
                    'pg_evict_local_buffers', 'pg_temp_flush_cost']) AS f,
       unnest(ARRAY['permanent', 'unlogged', 'perm_view', 'matview',
                    'foreign_t', 'temp_view', 'temp_parted', 't_pkey',
                    'temp_seq', 'pg_class']) AS r
 ORDER BY r, f;

-- A dropped table: its OID no longer names a relation.
CREATE TEMP TABLE doomed (x int);
SELECT 'doomed'::regclass::oid AS doomed_oid \gset
DROP TABLE doomed;
SELECT error_of(format('SELECT %s(%s::oid::regclass)', f, :doomed_oid)) LIKE
       '42P01: relation with OID % does not exist' AS undefined_table
  FROM unnest(ARRAY['pg_read_temp_relation', 'pg_temp_buffers_dirty',
                    'pg_evict_local_buffers', 'pg_temp_flush_cost']) AS f;

-- NULL: STRICT functions return NULL; the evict and cost functions take
-- NULL to mean "all local buffers".
SELECT pg_read_temp_relation(NULL) IS NULL AS read_null,
       pg_read_temp_relation('t', NULL) IS NULL AS read_randomize_null,
       pg_temp_buffers_dirty(NULL) IS NULL AS dirty_null;
SELECT pg_temp_buffers_dirty('t') AS dirty_t;
SELECT pg_temp_flush_cost(NULL) = pg_temp_flush_cost() AS cost_null_is_all;
SELECT pg_evict_local_buffers(NULL) > 0 AS evict_null_is_all,
       pg_allocated_local_buffers() AS allocated;

-- A pinned page cannot be evicted: the error comes before any write, and
-- the data stays intact.
BEGIN;
UPDATE t SET x = x + 1000;
DECLARE c CURSOR FOR SELECT * FROM t;
FETCH 1 FROM c;
\set VERBOSITY terse
SELECT pg_evict_local_buffers('t');
\set VERBOSITY default
ROLLBACK;
BEGIN;
DECLARE c CURSOR FOR SELECT * FROM t;
FETCH 1 FROM c;
SELECT error_of('SELECT pg_evict_local_buffers()');
CLOSE c;
SELECT pg_evict_local_buffers('t') > 0 AS evicted_after_close;
COMMIT;
SELECT count(*), min(x), max(x) FROM t;

-- The failed calls changed nothing on the permanent side either.
SELECT count(*) FROM permanent;

DROP FOREIGN TABLE foreign_t;
DROP SERVER dummy_server;
DROP FOREIGN DATA WRAPPER dummy_fdw;
DROP MATERIALIZED VIEW matview;
DROP VIEW perm_view;
DROP TABLE permanent, unlogged;

-- The debug settings that force races are a superuser's, as core's
-- developer options are, and SHOW ALL does not list them.
CREATE ROLE tempbuf_plain_user;
SET ROLE tempbuf_plain_user;
SET pg_tempbuf.debug_hazard = prune_during_copy;
SET pg_tempbuf.debug_unprotected = on;
SET pg_tempbuf.debug_sync_start = on;
RESET ROLE;
SET pg_tempbuf.debug_hazard = no_such_hazard;
SELECT count(*) FROM pg_settings WHERE name LIKE 'pg_tempbuf.debug%';
SHOW pg_tempbuf.debug_hazard;
DROP ROLE tempbuf_plain_user;
