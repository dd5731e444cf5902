--
-- CREATE INDEX and REINDEX of btrees on temporary tables with parallel
-- workers: pg_tempbuf asks for as many as core would for a permanent table
-- (core asks for none on a temporary one).  DEBUG1 shows the request; the
-- index must give the rows a sequential scan gives.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_tempbuf;
RESET client_min_messages;
LOAD 'pg_tempbuf';

SET max_parallel_maintenance_workers = 2;
CREATE TEMP TABLE staged (id int, code text, amount numeric) WITH (parallel_workers = 2);
INSERT INTO staged SELECT g, md5(g::text), g * 1.5 FROM generate_series(1, 20000) g;
DELETE FROM staged WHERE id % 10 = 0;

SET client_min_messages = debug1;
CREATE INDEX staged_code ON staged (code);
CREATE INDEX staged_id_incl ON staged (id) INCLUDE (amount) WHERE amount > 100;
REINDEX INDEX staged_code;
SET pg_tempbuf.parallel_index_build = off;
CREATE INDEX staged_lower ON staged (lower(code));
RESET pg_tempbuf.parallel_index_build;
ALTER TABLE staged SET (parallel_workers = 0);
CREATE INDEX staged_amount ON staged (amount);
RESET client_min_messages;

-- Through the indexes, and without them: the same rows.
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*), md5(string_agg(code, ',' ORDER BY code)) FROM staged WHERE code > '8';
SELECT count(*), md5(string_agg(code, ',' ORDER BY code)) FROM staged WHERE code > '8';
SELECT count(*), sum(amount) FROM staged WHERE id BETWEEN 100 AND 5000 AND amount > 100;
RESET enable_seqscan;
RESET enable_bitmapscan;
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
SET enable_bitmapscan = off;
SELECT count(*), md5(string_agg(code, ',' ORDER BY code)) FROM staged WHERE code > '8';
SELECT count(*), sum(amount) FROM staged WHERE id BETWEEN 100 AND 5000 AND amount > 100;
RESET enable_indexscan;
RESET enable_indexonlyscan;
RESET enable_bitmapscan;

-- A duplicate key: core's error, the key named.
ALTER TABLE staged SET (parallel_workers = 2);
UPDATE staged SET code = 'dup' WHERE id IN (7, 15007);
CREATE UNIQUE INDEX staged_code_unique ON staged (code);
DROP TABLE staged;
