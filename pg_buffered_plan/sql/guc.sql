--
-- GUCs: defaults, accepted values, and errors with their SQLSTATE.
--
LOAD 'pg_buffered_plan';

SHOW pg_buffered_plan.batch_size;
SHOW pg_buffered_plan.placement;

-- SQLSTATE and message of setting a parameter, for compact checks.
CREATE FUNCTION set_error(name text, value text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config(name, value, true);
    RETURN 'ok: ' || current_setting(name);
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- What a user sees.
SET pg_buffered_plan.batch_size = -1;
SET pg_buffered_plan.placement = 'everywhere';

SELECT v AS batch_size, set_error('pg_buffered_plan.batch_size', v) AS result
  FROM unnest(ARRAY['0', '1', '2048', '65536', '-1', '65537', 'lots', '1.5', '']) AS v;

SELECT v AS placement, set_error('pg_buffered_plan.placement', v) AS result
  FROM unnest(ARRAY['scans', 'all', 'ALL', 'none', '', '1']) AS v;

-- The prefix is reserved: a misspelt parameter is an error, not a new
-- placeholder that silently does nothing.
SELECT set_error('pg_buffered_plan.batchsize', '64');

-- Any user may change them (PGC_USERSET).
SELECT name, context, vartype, min_val, max_val, enumvals, boot_val
  FROM pg_settings WHERE name LIKE 'pg_buffered_plan.%' ORDER BY name;

-- SET, SET LOCAL and RESET behave as for any parameter.
SET pg_buffered_plan.batch_size = 256;
BEGIN;
SET LOCAL pg_buffered_plan.batch_size = 64;
SHOW pg_buffered_plan.batch_size;
ROLLBACK;
SHOW pg_buffered_plan.batch_size;
RESET pg_buffered_plan.batch_size;
SHOW pg_buffered_plan.batch_size;
