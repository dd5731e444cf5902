BEGIN;
SELECT pglab_seq_bulk('pglab_seq_unlogged_cache1', 100000);
END;
