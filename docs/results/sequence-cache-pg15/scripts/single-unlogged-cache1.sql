BEGIN;
SELECT nextval('pglab_seq_unlogged_cache1');
END;
