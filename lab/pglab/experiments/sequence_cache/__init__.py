"""The 004 article's experiment: nextval() throughput of CACHE 1 and CACHE 100 sequences (and,
since PostgreSQL 15, UNLOGGED ones) under pgbench with a growing number of clients, for a
one-call transaction and a bulk one (a PL/pgSQL loop of nextval calls), and the share of the
backends' time in spinlock and LWLock functions from perf's cpu-clock samples.

Modules: options (variants, grid), command (CLI), pgbench (running it, parsing its output),
perf (perf record of the backends, symbol shares), runner (server, sequences, the grid,
raw.csv), analysis (scaling limits), report (tables, summary.md, section.json), plots (PNG),
article (the published figures).
"""
