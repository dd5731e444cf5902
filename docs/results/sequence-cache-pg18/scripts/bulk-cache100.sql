BEGIN;
SELECT pglab_seq_bulk('pglab_seq_cache100', 100000);
END;
