/*-------------------------------------------------------------------------
 *
 * guc.c
 *	  The extension's settings: every pg_tempbuf.* GUC is defined here, and
 *	  only here.  The bottom floor: it calls nothing else of the extension.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>

#include "utils/guc.h"

#include "guc.h"

/*
 * The flush cost model's constants, in seq_page_cost units; pglab
 * flush-cost measures both on the user's own storage.  The article
 * ("PostgreSQL cost model: estimating the cost of flushing temp buffers to
 * disk", Andrei Lepikhov, 2026) found a temp page write to cost 1.2-1.3
 * sequential reads when pages go out one by one; written in file order, a
 * run of adjacent blocks at a time, it measured 0.66 here (PostgreSQL 18.6,
 * checksums on).  A look at one local buffer costs about 1% of a write.
 */
#define DEFAULT_WRITE_PAGE_COST		0.66
#define DEFAULT_BUFFER_SCAN_COST	0.01

/*
 * A worker's private read of a page the leader holds in local buffers,
 * above the serial scan's hit on it: a read call, a copy and, with data
 * checksums, a verification.  pglab flush-cost measures it as the extra
 * time of a one-worker scan of a resident table over the serial scan,
 * per page, in units of a sequential read into local buffers.
 */
#define DEFAULT_READ_PAGE_COST		1.5

/*
 * The share of a temporary table's serial read that a plan reading it in
 * workers must save on top of its price, to be chosen: the flush and
 * private reads are estimates, and a plan priced a few percent below the
 * serial one ran at 0.70x of it (TPC-H Q11, all tables temporary).
 * pglab regret measures what a setting wins and loses.
 */
#define DEFAULT_PARALLEL_MARGIN		1.0

bool		tb_parallel_scan_enabled = true;
bool		tb_index_scan_enabled = true;
bool		tb_verify_reread = false;
bool		tb_debug_sync_start = false;
bool		tb_shared_pool_enabled = true;
bool		tb_parallel_index_build = true;
int			tb_debug_hazard = TB_HAZARD_NONE;
bool		tb_debug_unprotected = false;
int			tb_debug_peek = TB_PEEK_AUTO;

static const struct config_enum_entry debug_hazard_options[] = {
	{"none", TB_HAZARD_NONE, false},
	{"prune_during_copy", TB_HAZARD_PRUNE_DURING_COPY, false},
	{"prune_during_read", TB_HAZARD_PRUNE_DURING_READ, false},
	{"write_during_read", TB_HAZARD_WRITE_DURING_READ, false},
	{"refill_during_copy", TB_HAZARD_REFILL_DURING_COPY, false},
	{"handshake_stall", TB_HAZARD_HANDSHAKE_STALL, false},
	{"evict_during_batch", TB_HAZARD_EVICT_DURING_BATCH, false},
	{"list_overflow", TB_HAZARD_LIST_OVERFLOW, false},
	{"slow_writes", TB_HAZARD_SLOW_WRITES, false},
	{NULL, 0, false}
};

static const struct config_enum_entry debug_peek_options[] = {
	{"auto", TB_PEEK_AUTO, false},
	{"in_place", TB_PEEK_IN_PLACE, false},
	{"read", TB_PEEK_READ, false},
	{NULL, 0, false}
};

/* Developer options, as core's: superuser only, out of SHOW ALL and the sample. */
#define TB_DEBUG_GUC_FLAGS	(GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL)
double		tb_write_page_cost = DEFAULT_WRITE_PAGE_COST;
double		tb_buffer_scan_cost = DEFAULT_BUFFER_SCAN_COST;
double		tb_read_page_cost = DEFAULT_READ_PAGE_COST;
double		tb_parallel_margin = DEFAULT_PARALLEL_MARGIN;

/*
 * Called once, from _PG_init().  The settings that change plans are
 * GUC_EXPLAIN: EXPLAIN (SETTINGS) and auto_explain's log_settings show them
 * where they differ from their defaults.
 */
void
tb_define_gucs(void)
{
	DefineCustomBoolVariable("pg_tempbuf.parallel_scan",
							 "Lets the planner scan temporary tables in parallel plans.",
							 "The leader flushes the table's dirty pages and every participant reads the table's file.",
							 &tb_parallel_scan_enabled,
							 tb_parallel_scan_enabled,
							 PGC_USERSET, GUC_EXPLAIN,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_tempbuf.index_scan",
							 "Lets the planner read temporary tables through their btree indexes in parallel plans.",
							 "Offers Temp Index Scan, Temp Index Only Scan and Temp Bitmap Heap Scan paths, when pg_tempbuf.parallel_scan is on too.",
							 &tb_index_scan_enabled,
							 tb_index_scan_enabled,
							 PGC_USERSET, GUC_EXPLAIN,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_tempbuf.verify_reread",
							 "Reads each temporary-table page twice in parallel scans and compares the copies.",
							 "Detects torn reads on clusters without data checksums, at the price of a second read.",
							 &tb_verify_reread,
							 tb_verify_reread,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_tempbuf.shared_pool",
							 "Keeps this session's local buffers in memory its parallel workers map, so that they read the leader's pages in place.",
							 "Linux only (a memfd the workers open through /proc).  Off, or where the system refuses it, "
							 "the leader writes the dirty pages workers read from the table's file.",
							 &tb_shared_pool_enabled,
							 tb_shared_pool_enabled,
							 PGC_USERSET, GUC_EXPLAIN,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_tempbuf.parallel_index_build",
							 "Lets CREATE INDEX and REINDEX of a btree on a temporary table use parallel workers.",
							 "Workers as core would request for a permanent table of that size "
							 "(max_parallel_maintenance_workers, the table's parallel_workers, maintenance_work_mem); "
							 "the leader first writes the table's dirty pages, which the workers read from its file.",
							 &tb_parallel_index_build,
							 tb_parallel_index_build,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_tempbuf.debug_sync_start",
							 "Makes the leader of a parallel temp scan wait for its workers to start before it reads.",
							 "For tests: on a small table the leader would otherwise read every page before a worker starts.",
							 &tb_debug_sync_start,
							 tb_debug_sync_start,
							 PGC_SUSET, TB_DEBUG_GUC_FLAGS,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("pg_tempbuf.debug_hazard",
							 "Makes a parallel temp scan's worker pause in the middle of a page while the leader changes it.",
							 "For tests of the scan's guards: see pg_tempbuf/README.md.",
							 &tb_debug_hazard,
							 TB_HAZARD_NONE,
							 debug_hazard_options,
							 PGC_SUSET, TB_DEBUG_GUC_FLAGS,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_tempbuf.debug_unprotected",
							 "Turns off the guards that keep pages from changing while parallel workers read them.",
							 "For tests only: parallel scans of temporary tables can then return wrong rows.",
							 &tb_debug_unprotected,
							 false,
							 PGC_SUSET, TB_DEBUG_GUC_FLAGS,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("pg_tempbuf.debug_peek",
							 "Sets how a parallel worker reads a row of a heap page it peeks at in the leader's pool.",
							 "For tests: auto reads a page in a part of the pool the worker has not touched with pread() (until it comes back there a third time), else in place; in_place and read force one way.",
							 &tb_debug_peek,
							 TB_PEEK_AUTO, debug_peek_options,
							 PGC_SUSET, TB_DEBUG_GUC_FLAGS,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("pg_tempbuf.write_page_cost",
							 "Sets the planner's estimate of the cost of writing one dirty temporary-table page.",
							 "In units of seq_page_cost; measure it with pglab flush-cost.",
							 &tb_write_page_cost,
							 DEFAULT_WRITE_PAGE_COST, 0.0, DBL_MAX,
							 PGC_USERSET, GUC_EXPLAIN,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("pg_tempbuf.buffer_scan_cost",
							 "Sets the planner's estimate of the cost of scanning one local buffer for dirty pages.",
							 "In units of seq_page_cost, per local buffer holding a page.",
							 &tb_buffer_scan_cost,
							 DEFAULT_BUFFER_SCAN_COST, 0.0, DBL_MAX,
							 PGC_USERSET, GUC_EXPLAIN,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("pg_tempbuf.read_page_cost",
							 "Sets the planner's estimate of the cost of a parallel worker's private read of one temporary-table page.",
							 "In units of seq_page_cost, above the serial scan's local buffer hit on the same page; measure it with pglab flush-cost.",
							 &tb_read_page_cost,
							 DEFAULT_READ_PAGE_COST, 0.0, DBL_MAX,
							 PGC_USERSET, GUC_EXPLAIN,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("pg_tempbuf.parallel_margin",
							 "Sets the share of the flush's estimated cost by which a plan that reads a temporary table in parallel workers must win.",
							 "Added to the cost of each of the extension's partial scans, so that a plan within the flush estimate's error of the serial one stays serial.",
							 &tb_parallel_margin,
							 DEFAULT_PARALLEL_MARGIN, 0.0, 10.0,
							 PGC_USERSET, GUC_EXPLAIN,
							 NULL, NULL, NULL);

	MarkGUCPrefixReserved("pg_tempbuf");
}
