BEGIN;
SELECT nextval('pglab_seq_cache100');
END;
