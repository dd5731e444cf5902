BEGIN;
SELECT nextval('pglab_seq_cache1');
END;
