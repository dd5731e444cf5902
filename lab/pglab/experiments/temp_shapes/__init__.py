"""pglab temp-shapes: query shapes over temporary tables, pg_tempbuf off / on / an UNLOGGED copy.

Each shape (a big permanent table joined to a small temp table, a semi-join, a self-join, a
CTE, a scalar subquery, a partitioned temp table, an aggregate over TOASTed values) runs in
one session with `pg_tempbuf.parallel_scan` off, on, and over the same data in UNLOGGED
permanent tables (what users do instead).  TPC-H with the small dimension tables loaded as
temporary tables runs the same way against the all-permanent schema.  The plan the planner
chose is recorded from EXPLAIN (ANALYZE, FORMAT JSON) and the result sets are compared.
"""
