"""pglab regret: where pg_tempbuf could make a session slower than without it (issue 28, deliverable 3).

Three parts, each timed in one session with the configurations interleaved, the order rotating
per repetition: TPC-H with every table temporary, loaded several times (each load gives ANALYZE
a new sample, so the plans differ), pg_tempbuf.parallel_scan on / off / the same rows in
UNLOGGED tables under stock parallel query; many-statement sessions (PL/pgSQL loops of
`EXECUTE format(...)` lookups and joins over small and large temp tables, each statement planned
anew), on / off; and the temp-shapes suite's shapes.  The report gives the worst ratio and the
distribution of the ratios, not only a geometric mean.
"""
