--
-- The flush cost model and its GUCs.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_tempbuf;
RESET client_min_messages;
LOAD 'pg_tempbuf';

SHOW pg_tempbuf.write_page_cost;
SHOW pg_tempbuf.buffer_scan_cost;
SELECT name, setting, unit, context, vartype, min_val, max_val, boot_val
  FROM pg_settings WHERE name LIKE 'pg_tempbuf.%' ORDER BY name;

-- Out of range, malformed, and unknown names under the reserved prefix.
SET pg_tempbuf.write_page_cost = -1;
SET pg_tempbuf.buffer_scan_cost = -0.5;
SET pg_tempbuf.write_page_cost = 'fast';
SET pg_tempbuf.read_page_cost = -0.1;
SET pg_tempbuf.read_page_cost = NULL;
SET pg_tempbuf.shared_pool = 'sometimes';
SET pg_tempbuf.no_such_setting = 1;
SHOW pg_tempbuf.write_page_cost;
SHOW pg_tempbuf.read_page_cost;
SHOW pg_tempbuf.shared_pool;

SET temp_buffers = '1MB';
-- No dirty page, no cost beyond the pool scan.
SELECT pg_temp_flush_cost() AS cost_before_any_temp_table;

CREATE TEMP TABLE t (x int);
INSERT INTO t SELECT g FROM generate_series(1, 226 * 40) g;
CREATE TEMP TABLE u (x int);
INSERT INTO u SELECT g FROM generate_series(1, 226 * 10) g;

-- The article's formula: write_page_cost * dirty + buffer_scan_cost * allocated.
SELECT abs(pg_temp_flush_cost() -
           (0.66 * pg_dirtied_local_buffers() + 0.01 * pg_allocated_local_buffers())) < 1e-9
       AS default_formula;

SET pg_tempbuf.write_page_cost = 2;
SET pg_tempbuf.buffer_scan_cost = 0.5;
SELECT abs(pg_temp_flush_cost() -
           (2 * pg_dirtied_local_buffers() + 0.5 * pg_allocated_local_buffers())) < 1e-9
       AS formula_follows_gucs;

-- Per table: that table's dirty main-fork pages, plus the scan of the pool.
SELECT pg_temp_flush_cost('t') = 2 * 40 + 0.5 * pg_allocated_local_buffers() AS t_cost,
       pg_temp_flush_cost('u') = 2 * 10 + 0.5 * pg_allocated_local_buffers() AS u_cost;

-- After a flush only the scan term is left; a table's cost drops to it.
SELECT pg_flush_local_buffers() >= 50 AS flushed;
SELECT pg_temp_flush_cost() = 0.5 * pg_allocated_local_buffers() AS scan_only,
       pg_temp_flush_cost('t') = pg_temp_flush_cost() AS t_scan_only;

SET pg_tempbuf.buffer_scan_cost = 0;
SELECT pg_temp_flush_cost() AS clean_pool_zero_scan_cost;
UPDATE u SET x = x + 1 WHERE x <= 226;
SELECT pg_temp_flush_cost('u') = 2 * (SELECT count(*) FROM pg_local_buffers
                                       WHERE relfilenode = pg_relation_filenode('u')
                                         AND relforknumber = 0 AND isdirty)
       AS u_dirty_pages_priced;

RESET pg_tempbuf.write_page_cost;
RESET pg_tempbuf.buffer_scan_cost;
SHOW pg_tempbuf.write_page_cost;
