"""The 003 article's experiment: where a temporary table's data goes while CREATE TEMP TABLE AS
fills it, how many extends and writes that costs, and what a tmpfs temp_tablespaces saves.

Modules: options (grid, size presets), command (CLI), runner (server, sources, timed and traced
runs, raw.csv), iostats (pg_stat_io / pg_stat_get_backend_io / pg_stat_statements counters),
trace (bpftrace on USDT probes, PostgreSQL <= 15), report (tables, summary.md, section.json),
plots (PNG), article (the published figures).
"""
