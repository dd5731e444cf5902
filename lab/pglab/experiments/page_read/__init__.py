"""pglab page-read: what one page costs a parallel worker, read three ways, in one run.

One table shape (one row per page: fillfactor 10 and a 500-byte value, so the per-page work is the
read), `SELECT count(*)` with only workers reading (parallel_leader_participation = off), timed
interleaved, the order rotating per repetition:

* in place: a temporary table just loaded, pg_tempbuf.shared_pool = on: workers read the pages
  the leader holds where they lie, in its pool (a memfd they map read-only);
* file: the same with pg_tempbuf.shared_pool = off, set before the session's first temporary
  table: the leader's pages written (flushed) before timing, workers read the table's file, a
  read call per page (and the checksum verification when the cluster has data checksums);
* shared hit: an UNLOGGED copy of the rows, prewarmed into shared_buffers, stock Parallel Seq Scan.

Workers' microseconds per page come from EXPLAIN (ANALYZE, VERBOSE, BUFFERS): each worker's actual
time in the scan node over the pages it read (Temp Seq Scan's "Pages Read"; the stock scan's
shared buffer hits and reads); each mode's wall time is the plain query's, timed by the client.

Then, a table of its own (--no-serial skips it): the leader's own serial scan of a temporary
table, pg_tempbuf.parallel_scan = off and no workers, its local buffers in the shared pool
(pg_tempbuf.shared_pool = on: moved into the memfd) vs in core's private memory (off before the
session's first temporary table): two sessions, the same table, `SELECT count(*), sum(length(s))`
timed by the client in interleaved rounds; the ratio pool / private against the acceptance line
"not slower (<= 2%)".  Each session's plan (a plain Seq Scan, local hits only) and mapping
(/proc/<pid>/maps) are checked once before its rounds.
"""
