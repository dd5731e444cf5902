/*-------------------------------------------------------------------------
 *
 * temp_scan.c
 *	  Temp Seq Scan: a custom scan of a temporary table whose workers read
 *	  the table's file, the leader writing the dirty pages they need.
 *
 * EXPLAIN shows it in core's framing for custom scans, in every format:
 * "Parallel Custom Scan (Temp Seq Scan)" for the partial scan, whose
 * participants share the table's blocks, and "Custom Scan (Temp Seq
 * Scan)" for the full one, which each participant reads whole (the inner
 * side of a join in a parallel plan, say).
 *
 * The node is this file: its plan, its callbacks and EXPLAIN; the flush
 * of a full scan waits for the executor to run the plan (scan_run.c, as
 * every scan of ours).  The rest of the scan:
 *	- temp_scan_supply.c: how pages reach each participant (the shared
 *	  state, the pages workers copy from the leader's buffers, through
 *	  page_source.c), and when the scan runs in the leader alone;
 *	- temp_scan_schedule.c: which block each participant reads next, the
 *	  leader's flush that workers follow (interleaved, pipelined) and their
 *	  waits for it;
 *	- temp_scan_tuples.c: the rows it returns, with the out-of-line values
 *	  of the columns the scan uses fetched privately by the participant
 *	  that meets them;
 *	- temp_scan_hazard.c: pg_tempbuf.debug_hazard's races, for tests
 *	  (where the worker and the leader meet: hazard_meet.c);
 *	- temp_scan_int.h: the state they share.
 *
 * Without shared memory (Gather running serially, e.g. an extended-protocol
 * fetch with a row limit) the node scans alone, the same way.
 *
 * EXPLAIN runs after the shared memory is gone, so everything it shows is
 * kept in the leader's own state.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/sysattr.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "utils/rel.h"

#include "compat.h"
#include "guc.h"
#include "hazard_meet.h"
#include "leader_pages.h"
#include "localbuf_access.h"
#include "page_guard.h"
#include "page_source.h"
#include "scan_run.h"
#include "shared_pool.h"
#include "temp_scan.h"
#include "temp_scan_int.h"
#include "toast_reader.h"
#include TB_EXPLAIN_FORMAT_HEADER

/* custom_private of the plan: positions of its members */
enum
{
	TSP_TOAST_SENSITIVE,		/* the scan's output or quals use a toastable column */
	TSP_EST_DIRTY_PAGES,		/* planner's view of the pages to flush */
	TSP_EST_FLUSH_COST,
	TSP_PARTIAL,				/* participants share the blocks */
	TSP_FLUSH_MODE,				/* the most the plan lets the leader overlap */
	TSP_OUTPUT_UNREAD,			/* the parent reads no column of the output */
	TSP_GUARD_PRUNING,			/* the statement may run code in the leader that reads tables */
	TSP_POOL_READS,				/* full: set when the plan runs, the leader wrote nothing */
	TSP_NUM_MEMBERS
};

static const char *const flush_mode_names[] = {
	[TB_FLUSH_UPFRONT] = "upfront",
	[TB_FLUSH_PIPELINED] = "pipelined",
	[TB_FLUSH_INTERLEAVED] = "interleaved",
};

static Node *temp_scan_create_state(CustomScan *cscan);
static void temp_scan_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *temp_scan_exec(CustomScanState *node);
static void temp_scan_end(CustomScanState *node);
static void temp_scan_rescan(CustomScanState *node);
static Size temp_scan_estimate_dsm(CustomScanState *node, ParallelContext *pcxt);
static void temp_scan_initialize_dsm(CustomScanState *node, ParallelContext *pcxt,
									 void *coordinate);
static void temp_scan_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt,
									   void *coordinate);
static void temp_scan_initialize_worker(CustomScanState *node, shm_toc *toc,
										void *coordinate);
static void temp_scan_shutdown(CustomScanState *node);
static void temp_scan_explain(CustomScanState *node, List *ancestors,
							  ExplainState *es);

static CustomScanMethods temp_scan_methods = {
	.CustomName = TB_TEMP_SCAN_NAME,
	.CreateCustomScanState = temp_scan_create_state,
};

static CustomExecMethods temp_scan_exec_methods = {
	.CustomName = TB_TEMP_SCAN_NAME,
	.BeginCustomScan = temp_scan_begin,
	.ExecCustomScan = temp_scan_exec,
	.EndCustomScan = temp_scan_end,
	.ReScanCustomScan = temp_scan_rescan,
	.EstimateDSMCustomScan = temp_scan_estimate_dsm,
	.InitializeDSMCustomScan = temp_scan_initialize_dsm,
	.ReInitializeDSMCustomScan = temp_scan_reinitialize_dsm,
	.InitializeWorkerCustomScan = temp_scan_initialize_worker,
	.ShutdownCustomScan = temp_scan_shutdown,
	.ExplainCustomScan = temp_scan_explain,
};

void
tb_register_temp_scan(void)
{
	RegisterCustomScanMethods(&temp_scan_methods);
	tb_scan_run_register(&temp_scan_exec_methods);
}

bool
tb_is_temp_scan(Plan *plan)
{
	return IsA(plan, CustomScan) &&
		((CustomScan *) plan)->methods == &temp_scan_methods;
}

List *
tb_temp_scan_private(bool partial, bool toast_sensitive, int est_dirty_pages,
					 double est_flush_cost)
{
	return list_concat(list_make4(makeInteger(toast_sensitive),
								  makeInteger(est_dirty_pages),
								  makeString(psprintf("%.17g", est_flush_cost)),
								  makeInteger(partial)),
					   list_make4(makeInteger(TB_FLUSH_UPFRONT),
								  makeInteger(false),
								  makeInteger(false),
								  makeInteger(false)));
}

/*
 * Leader of a full scan, when the executor runs the plan (scan_run.c),
 * before Gather sends the plan to workers: where its pool serves them,
 * its workers copy the pages it holds out of it, found in its directory,
 * and read the others from the file; nothing is written (of the toast
 * relation neither: the toast reader copies from the pool too).  Else the
 * table goes on disk.  The workers learn which from the plan: a full scan
 * has no shared state.
 */
static int64
temp_scan_write_full(CustomScanState *node)
{
	TempScanState *ts = (TempScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	bool		pool_reads;

	tb_ts_decide_toast(ts);
	pool_reads = tb_leader_pages_serve_from_pool();

	Assert(list_length(cscan->custom_private) == TSP_NUM_MEMBERS);
	intVal(list_nth(cscan->custom_private, TSP_POOL_READS)) = pool_reads;
	if (!pool_reads)
		return tb_ts_write_table(node);
	ts->flushed = true;
	return 0;
}

bool
tb_temp_scan_is_partial(CustomScan *cscan)
{
	Assert(list_length(cscan->custom_private) == TSP_NUM_MEMBERS);
	return intVal(list_nth(cscan->custom_private, TSP_PARTIAL));
}

/*
 * Can the scan produce these columns of the table (attribute numbers
 * offset by FirstLowInvalidHeapAttributeNumber, as pull_varattnos gives
 * them)?  Not system columns: our slot has none to give on every version.
 * A varlena column, or a whole-row reference to a table that has one,
 * makes the scan toast sensitive: its participants fetch out-of-line
 * values themselves.
 */
bool
tb_scan_attrs_supported(Relation relation, Bitmapset *attrs,
						bool *toast_sensitive)
{
	TupleDesc	desc = RelationGetDescr(relation);
	bool		any_toastable = false;
	int			x = -1;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		/* Any storage: SET STORAGE PLAIN leaves old values out of line. */
		if (!att->attisdropped && att->attlen == -1)
			any_toastable = true;
	}

	*toast_sensitive = false;
	while ((x = bms_next_member(attrs, x)) >= 0)
	{
		AttrNumber	attno = x + FirstLowInvalidHeapAttributeNumber;

		if (attno < 0)
			return false;
		if (attno == InvalidAttrNumber)
			*toast_sensitive |= any_toastable;
		else
		{
			if (TupleDescAttr(desc, attno - 1)->attlen == -1)
				*toast_sensitive = true;
		}
	}
	return true;
}

void
tb_temp_scan_mark_output_unread(CustomScan *cscan)
{
	Assert(list_length(cscan->custom_private) == TSP_NUM_MEMBERS);
	intVal(list_nth(cscan->custom_private, TSP_OUTPUT_UNREAD)) = true;
}

void
tb_temp_scan_mark_guard_pruning(CustomScan *cscan)
{
	Assert(list_length(cscan->custom_private) == TSP_NUM_MEMBERS);
	intVal(list_nth(cscan->custom_private, TSP_GUARD_PRUNING)) = true;
}

void
tb_temp_scan_set_flush_mode(CustomScan *cscan, TbFlushMode mode)
{
	Assert(list_length(cscan->custom_private) == TSP_NUM_MEMBERS);
	intVal(list_nth(cscan->custom_private, TSP_FLUSH_MODE)) = mode;
}

Plan *
tb_make_temp_scan_plan(Index scanrelid, List *tlist, List *quals,
					   List *custom_private)
{
	CustomScan *cscan = makeNode(CustomScan);

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = quals;
	cscan->scan.scanrelid = scanrelid;
	cscan->flags = 0;
	cscan->custom_plans = NIL;
	cscan->custom_exprs = NIL;
	cscan->custom_private = custom_private;
	cscan->custom_scan_tlist = NIL;
	cscan->methods = &temp_scan_methods;
	return &cscan->scan.plan;
}

static Node *
temp_scan_create_state(CustomScan *cscan)
{
	TempScanState *ts = palloc0(sizeof(TempScanState));
	List	   *priv = cscan->custom_private;

	NodeSetTag(ts, T_CustomScanState);
	ts->css.flags = cscan->flags;
	ts->css.methods = &temp_scan_exec_methods;
	/* Tuples point into our private page copy: a plain heap tuple slot. */
	TbSetScanSlotOps(&ts->css, &TTSOpsHeapTuple);

	ts->partial = intVal(list_nth(priv, TSP_PARTIAL));
	ts->toast_sensitive = intVal(list_nth(priv, TSP_TOAST_SENSITIVE));
	ts->output_unread = intVal(list_nth(priv, TSP_OUTPUT_UNREAD));
	ts->guard_pruning = intVal(list_nth(priv, TSP_GUARD_PRUNING));
	ts->pool_reads = intVal(list_nth(priv, TSP_POOL_READS));
	ts->run.est_dirty_pages = intVal(list_nth(priv, TSP_EST_DIRTY_PAGES));
	ts->run.est_flush_cost = strtod(strVal(list_nth(priv, TSP_EST_FLUSH_COST)), NULL);
	ts->plan_flush_mode = intVal(list_nth(priv, TSP_FLUSH_MODE));
	return (Node *) ts;
}

static void
temp_scan_begin(CustomScanState *node, EState *estate, int eflags)
{
	TempScanState *ts = (TempScanState *) node;

	ts->page = ts->page_buf = palloc(BLCKSZ);
	ts->scratch = palloc(BLCKSZ);
	ts->pinned = InvalidBuffer;
	ts->page_block = InvalidBlockNumber;
	tb_ts_plan_deform(ts);
	/* Before the flush: it decides whether the toast relation goes too. */
	if (ts->toast_sensitive)
		tb_ts_find_toast_attrs(ts);

	/*
	 * A full scan has no shared state to set up before workers start, so
	 * its leader flushes when the executor runs the plan (scan_run.c),
	 * before Gather launches any worker; a partial one when it sets up the
	 * shared state.
	 */
	if (!ts->partial && !IsParallelWorker() &&
		(eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0)
	{
		tb_scan_run_begin(&ts->run, temp_scan_write_full, !tb_debug_unprotected);
		if (tb_debug_unprotected)
			tb_ts_flush_table(ts);
	}
	else
		tb_scan_run_begin(&ts->run, tb_ts_write_table, false);

	/* A full scan's worker whose leader wrote nothing reads its pool. */
	if (IsParallelWorker() && !ts->partial && ts->pool_reads &&
		(eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0)
	{
		if (ts->guard_pruning && !tb_debug_unprotected)
			tb_page_source_guard_file_reads();
		tb_page_source_read_leader_pool(node->ss.ss_currentRelation);
	}
}

static TupleTableSlot *
temp_scan_next(ScanState *ss)
{
	TempScanState *ts = (TempScanState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;

	if (!ts->prepared)
	{
		/* A full scan, or no DSM: this node scans the whole table itself. */
		Assert(ts->shared == NULL);
		tb_ts_prepare(ts, TB_FLUSH_UPFRONT);
		tb_ts_reset_pass(ts);
	}
	if (ts->shared && (ts->shared->leader_only || ts->stays_out) && IsParallelWorker())
		return ExecClearTuple(slot);

	tb_ts_resume_in_place(ts);
	for (;;)
	{
		BlockNumber blkno;

		if (ts->next_visible < ts->nvisible)
		{
			OffsetNumber off = ts->visible[ts->next_visible++];
			Page		page = (Page) ts->page;
			ItemId		lp = PageGetItemId(page, off);

			ts->tuple.t_data = (HeapTupleHeader) PageGetItem(page, lp);
			ts->tuple.t_len = ItemIdGetLength(lp);
			tb_ts_pause_in_place(ts);
			ItemPointerSet(&ts->tuple.t_self, ts->page_block, off);
			ts->tuple.t_tableOid = RelationGetRelid(ss->ss_currentRelation);
			if (ts->toast && HeapTupleHasExternal(&ts->tuple))
			{
				if (!tb_ts_store_fetched(ts, slot))
					continue;
				return slot;
			}
			tb_ts_store_tuple(ts, slot, &ts->tuple);
			if (ts->qual && !tb_ts_qual_passes(ts, slot))
				continue;
			return slot;
		}
		if (!tb_ts_next_block(ts, &blkno))
		{
			ExecClearTuple(slot);
			tb_ts_unpin_page(ts);
			tb_ts_resume_in_place(ts);
			return slot;
		}
		CHECK_FOR_INTERRUPTS();
		tb_ts_load_page(ts, blkno);
	}
}

static bool
temp_scan_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
temp_scan_exec(CustomScanState *node)
{
	return ExecScan(&node->ss, temp_scan_next, temp_scan_recheck);
}

static void
temp_scan_end(CustomScanState *node)
{
	TempScanState *ts = (TempScanState *) node;

	tb_ts_unpin_page(ts);
	tb_pinset_release(&ts->pins);
	/* Held from the first pass on: a rescan lists the same toast pages. */
	tb_leader_pages_release(&ts->toast_pages);
	tb_scan_run_end(&ts->run);
	if (ts->toast)
		tb_toast_reader_close(ts->toast);
}

static void
temp_scan_rescan(CustomScanState *node)
{
	TempScanState *ts = (TempScanState *) node;

	tb_ts_reset_pass(ts);
	/* With DSM the leader prepares again when Gather reinitializes it. */
	if (ts->shared == NULL)
		ts->prepared = false;
}

static Size
temp_scan_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	return tb_ts_estimate_shared((TempScanState *) node, pcxt);
}

static void
temp_scan_initialize_dsm(CustomScanState *node, ParallelContext *pcxt,
						 void *coordinate)
{
	tb_ts_setup_shared((TempScanState *) node, pcxt, coordinate);
}

/* Keep what the last pass's participants did before the counters reset. */
static void
collect_counters(TempScanState *ts)
{
	TempScanShared *shared = ts->shared;

	if (shared == NULL)
		return;
	if (ts->totals == NULL)
	{
		ts->ntotals = shared->nworkers + 1;
		ts->totals = MemoryContextAllocZero(ts->css.ss.ps.state->es_query_cxt,
											sizeof(TempScanCounters) * ts->ntotals);
	}
	for (int i = 0; i < Min(ts->ntotals, shared->nworkers + 1); i++)
	{
		ts->totals[i].pages += shared->counters[i].pages;
		ts->totals[i].rereads += shared->counters[i].rereads;
		ts->totals[i].toast_values += shared->counters[i].toast_values;
		ts->totals[i].toast_pages += shared->counters[i].toast_pages;
		ts->totals[i].buffer_pages += shared->counters[i].buffer_pages;
		ts->totals[i].waits += shared->counters[i].waits;
		ts->totals[i].leader_pages += shared->counters[i].leader_pages;
	}
	memset(shared->counters, 0, sizeof(TempScanCounters) * (shared->nworkers + 1));
}

static void
temp_scan_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt,
						   void *coordinate)
{
	TempScanState *ts = (TempScanState *) node;

	collect_counters(ts);
	tb_ts_setup_shared(ts, pcxt, coordinate);
}

static void
temp_scan_initialize_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	TempScanState *ts = (TempScanState *) node;

	ts->shared = coordinate;
	ts->prepared = true;
	tb_ts_reset_pass(ts);

	/* Once per worker: the leader's list is the same on every pass. */
	ts->copies_from_leader = false;
	/* pg_tempbuf.debug_hazard: answer after the leader first asks, in its stall. */
	if (tb_debug_hazard == TB_HAZARD_HANDSHAKE_STALL)
		pg_usleep(50000L);
	if (ts->shared->nleader_pages > 0)
	{
		int			err = -1;

		ts->leader_pages = (TbLeaderPage *) ((char *) ts->shared +
										   ts->shared->leader_pages_offset);
		if (tb_debug_hazard != TB_HAZARD_HANDSHAKE_STALL)
			err = tb_shared_pool_attach(&ts->shared->pool);
		ts->copies_from_leader = err == 0;
		/* Pages listed unpinned are copied: twice, under user code. */
		if (ts->copies_from_leader && ts->guard_pruning)
			tb_page_source_verify_leader_copies();
		/* No leader to write what it would read: see tb_ts_setup_shared(). */
		if (err > 0 && !parallel_leader_participation &&
			ts->shared->nleader_pages > 0)
		{
			errno = err;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("parallel worker could not map the leader's local buffers to read temporary table \"%s\": %m",
							RelationGetRelationName(ts->css.ss.ss_currentRelation)),
					 errhint("SET pg_tempbuf.shared_pool = off makes the leader write the pages its workers read.")));
		}
		if (!ts->copies_from_leader)
		{
			/* Before the count, a barrier: the leader reads it after. */
			if (err > 0)
				pg_atomic_write_u32(&ts->shared->refused_errno, err);
			pg_atomic_fetch_add_u32(&ts->shared->workers_refused, 1);
		}
	}
	/*
	 * A worker that cannot copy the toast pages the leader lists (never
	 * written: tb_ts_write_table()) takes no part: the others cover it.
	 */
	ts->stays_out = !tb_leader_pages_usable(tb_ts_toast_list(ts->shared));
	if (!ts->stays_out)
		tb_leader_pages_attach(tb_ts_toast_list(ts->shared));
	pg_atomic_fetch_add_u32(&ts->shared->workers_started, 1);
	if (TB_HAZARD_PAUSES_READS(tb_debug_hazard))
	{
		tb_mid_read_hook = tb_hazard_worker_meets;
		tb_mid_read_arg = &ts->shared->hazard;
	}

	if (ts->shared->toast_private)
	{
		TempScanCounters *counters = tb_ts_my_counters(ts);
		const char *reason = NULL;

		ts->toast = tb_toast_reader_open(ts->css.ss.ss_currentRelation,
										 &counters->toast_pages,
										 &counters->rereads, &reason);
		/* The leader read the same pages and could. */
		if (ts->toast == NULL)
			elog(ERROR, "parallel worker could not read toast index: %s", reason);
	}
}

/*
 * Leader, before the shared state goes: how the last pass's workers got the
 * pages the leader held, for EXPLAIN.  Pages it did not hold come from the
 * file either way.
 */
static void
note_page_source(TempScanState *ts)
{
	TempScanShared *shared = ts->shared;
	MemoryContext oldcxt;
	uint32		refused;
	uint32		err;

	ts->page_source = NULL;
	if (!ts->partial || shared->leader_only || ts->pcxt == NULL ||
		ts->pcxt->nworkers_launched == 0)
		return;
	oldcxt = MemoryContextSwitchTo(ts->css.ss.ps.state->es_query_cxt);
	refused = pg_atomic_read_u32(&shared->workers_refused);
	pg_read_barrier();
	err = pg_atomic_read_u32(&shared->refused_errno);
	if (ts->copies_off_reason != NULL)
		ts->page_source = psprintf("file (%s)", ts->copies_off_reason);
	else if (refused == 0)
		ts->page_source = "leader's pool, file";
	else if (err != 0)
		ts->page_source = psprintf("file (leader's pool denied: %s)", strerror(err));
	else
		ts->page_source = "file (workers declined the leader's pool: pg_tempbuf.debug_hazard)";
	MemoryContextSwitchTo(oldcxt);
}

static void
temp_scan_shutdown(CustomScanState *node)
{
	TempScanState *ts = (TempScanState *) node;

	if (!IsParallelWorker() && ts->shared)
	{
		/* Workers still waiting for a flush the leader will not finish. */
		if (ts->flushing)
			tb_ts_finish_flush(ts, false);
		collect_counters(ts);
		note_page_source(ts);
	}
	/* The segment goes away after this. */
	ts->shared = NULL;
	ts->pcxt = NULL;
}

/*
 * "leader=N worker 0=N ..." for one counter; workers that read no page of
 * the table are left out.
 */
static char *
per_participant(TempScanCounters *counts, int ncounts, size_t field)
{
	StringInfoData buf;

#define COUNTER(i) (*(uint64 *) ((char *) &counts[i] + field))
	initStringInfo(&buf);
	appendStringInfo(&buf, "leader=" UINT64_FORMAT, COUNTER(0));
	for (int i = 1; i < ncounts; i++)
	{
		if (counts[i].pages > 0)
			appendStringInfo(&buf, " worker %d=" UINT64_FORMAT, i - 1,
							 COUNTER(i));
	}
#undef COUNTER
	return buf.data;
}

static void
temp_scan_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	TempScanState *ts = (TempScanState *) node;
	TempScanCounters *counts;
	int			ncounts;
	uint64		rereads = 0;
	uint64		toast_values = 0;
	uint64		waits = 0;
	uint64		leader_pages = 0;

	ExplainPropertyText("Scan Mode", ts->partial ? "partial" : "full", es);
	tb_scan_run_explain_estimate(&ts->run, es);
	if (!es->analyze)
		return;

	if (ts->partial && ts->totals)
		ExplainPropertyText("Flush Mode", flush_mode_names[ts->flush_mode], es);
	if (ts->page_source)
		ExplainPropertyText("Page Source", ts->page_source, es);
	tb_scan_run_explain_done(&ts->run, es);
	if (ts->leader_only_reason)
		ExplainPropertyText("Leader Only", ts->leader_only_reason, es);
	if (ts->pages_pinned > 0)
		ExplainPropertyInteger("Pages Pinned", NULL, ts->pages_pinned, es);
	if (ts->pages_kept > 0)
		ExplainPropertyInteger("Pages Kept By Leader", NULL, ts->pages_kept, es);

	if (ts->totals)
	{
		counts = ts->totals;
		ncounts = ts->ntotals;
	}
	else
	{
		counts = &ts->mine;
		ncounts = 1;
	}

	for (int i = 0; i < ncounts; i++)
	{
		rereads += counts[i].rereads;
		toast_values += counts[i].toast_values;
		waits += counts[i].waits;
		leader_pages += counts[i].leader_pages;
	}
#define EXPLAIN_PER_PARTICIPANT(label, field) \
	ExplainPropertyText((label), \
						per_participant(counts, ncounts, offsetof(TempScanCounters, field)), es)
	EXPLAIN_PER_PARTICIPANT("Pages Read", pages);
	if (toast_values > 0)
	{
		EXPLAIN_PER_PARTICIPANT("Toast Values Fetched", toast_values);
		EXPLAIN_PER_PARTICIPANT("Toast Pages Read", toast_pages);
	}
	/* Only the leader has buffers to copy from. */
	ExplainPropertyInteger("Pages From Local Buffers", NULL, counts[0].buffer_pages, es);
	if (leader_pages > 0)
		EXPLAIN_PER_PARTICIPANT("Pages From Leader's Pool", leader_pages);
	if (waits > 0)
		EXPLAIN_PER_PARTICIPANT("Waits For Flush", waits);
#undef EXPLAIN_PER_PARTICIPANT
	if (rereads > 0)
		ExplainPropertyInteger("Page Rereads", NULL, rereads, es);
}
