/* pg_tempbuf--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_tempbuf" to load this file. \quit

-- Every function reads or changes the calling backend's private local
-- buffers, which parallel workers cannot see: the counters are PARALLEL
-- RESTRICTED (leader only), and everything that writes, reads or dirties
-- pages is PARALLEL UNSAFE, since it must not run while workers read the
-- same files.

CREATE FUNCTION pg_allocated_local_buffers()
RETURNS int
AS 'MODULE_PATHNAME', 'pg_allocated_local_buffers'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION pg_allocated_local_buffers() IS
'number of this session''s local buffers that hold a page';

CREATE FUNCTION pg_dirtied_local_buffers()
RETURNS int
AS 'MODULE_PATHNAME', 'pg_dirtied_local_buffers'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION pg_dirtied_local_buffers() IS
'number of this session''s local buffers holding a dirty page';

CREATE FUNCTION pg_local_buffer_pool_size()
RETURNS int
AS 'MODULE_PATHNAME', 'pg_local_buffer_pool_size'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION pg_local_buffer_pool_size() IS
'size of this session''s local buffer pool (NLocBuffer; 0 until the first temporary table access)';

CREATE FUNCTION pg_flush_local_buffers()
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_flush_local_buffers'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION pg_flush_local_buffers() IS
'write every dirty local buffer of this session; returns the number written';

CREATE FUNCTION pg_read_temp_relation(rel regclass, randomize boolean DEFAULT false)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_read_temp_relation'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION pg_read_temp_relation(regclass, boolean) IS
'read every block of a temporary table into local buffers, in order or randomly; returns the blocks read from storage';

CREATE FUNCTION pg_temp_buffers_dirty(rel regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_temp_buffers_dirty'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION pg_temp_buffers_dirty(regclass) IS
'mark every resident page of a temporary table dirty; returns how many';

CREATE FUNCTION pg_evict_local_buffers(rel regclass DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_evict_local_buffers'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION pg_evict_local_buffers(regclass) IS
'write if dirty, then drop the local buffers of a temporary table (all of them for NULL); returns the pages dropped';

CREATE FUNCTION pg_temp_flush_cost(rel regclass DEFAULT NULL)
RETURNS float8
AS 'MODULE_PATHNAME', 'pg_temp_flush_cost'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION pg_temp_flush_cost(regclass) IS
'estimated cost of flushing a temporary table''s dirty pages (all for NULL), in seq_page_cost units';

CREATE FUNCTION pg_local_buffers(
	OUT bufferid integer,
	OUT relfilenode oid,
	OUT reltablespace oid,
	OUT reldatabase oid,
	OUT relforknumber smallint,
	OUT relblocknumber bigint,
	OUT isdirty boolean,
	OUT usagecount smallint,
	OUT local_pin_count integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_local_buffers'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_local_buffers AS
	SELECT * FROM pg_local_buffers();

COMMENT ON VIEW pg_local_buffers IS
'one row per local buffer of this session, like pg_buffercache for shared buffers';
