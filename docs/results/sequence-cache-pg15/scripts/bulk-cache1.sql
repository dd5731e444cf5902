BEGIN;
SELECT pglab_seq_bulk('pglab_seq_cache1', 100000);
END;
