"""pglab index-build: CREATE INDEX (btree) on a temporary table just written, serial against pg_tempbuf's
parallel build, and an UNLOGGED copy under core's parallel build, in one run.

For each table size and key type (int: `g`, in order; text: `md5(g::text)`, in random order), every round
builds the index once in each mode, the order rotating per round, each mode in a session of its own:

* temp, off: a temporary table, pg_tempbuf.parallel_index_build = off: core's serial build, what stock
  PostgreSQL does for a temporary table;
* temp, on (ours): the same with pg_tempbuf.parallel_index_build = on: core's parallel build with core's rule
  for the worker count; its workers copy the pages the leader holds out of its pool (where they cannot map it,
  the leader first writes the table's dirty pages and they read the file);
* UNLOGGED, parallel: an UNLOGGED table of the same rows, core's own parallel build (what users do instead);
* UNLOGGED, serial (--no-unlogged-serial skips it): the same with max_parallel_maintenance_workers = 0.

With several pool sizes (--temp-buffers 8MB,1GB) each mode has a session per size, all interleaved.

Each build runs on a table just written in that session: CREATE TABLE AS, then CREATE INDEX (timed by the
client), then (first round) the index checked against a sequential scan, then DROP TABLE.  The workers a build
launched come from trace_sort's lines (one "performsort of worker N" per participant, N >= 0; none in a
serial build), the workers it asked for from its DEBUG1 line, their peak anonymous memory from /proc/<pid>/status
(RssAnon), sampled every 10 ms while the build runs.
"""
