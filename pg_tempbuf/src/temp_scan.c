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
 * Life of one execution:
 *	- On Linux, where the system allows it, workers of a partial scan copy
 *	  the pages the leader holds straight out of its local buffers
 *	  (page_reader.c), from a list of them the leader puts in the shared
 *	  state; pages not in its buffers are on disk already.  Then nothing
 *	  below is written.
 *	- Otherwise every block a worker reads must be on disk in its newest
 *	  image first (only main-fork pages: the scan reads nothing else).
 *	  The leader of a
 *	  partial scan that an aggregate or sort drains (plan_walk.c decides)
 *	  writes dirty runs just ahead of the workers, who take chunks from the
 *	  low end of the table, and meanwhile scans chunks from the high end
 *	  out of its own buffers, which it then need not write: interleaved.
 *	  Where rows go straight up to Gather, it writes everything in its first
 *	  call, workers reading behind it: pipelined.  Progress is published in
 *	  the shared state, and workers sleep on a condition variable for blocks
 *	  not written yet.  Otherwise (a full scan, no leader participation,
 *	  toast values to fetch, leader-only mode) the leader writes everything
 *	  before Gather launches workers: a partial scan when it sets up the
 *	  shared state, a full scan when the executor runs the plan.
 *	  A rescan writes only what is dirty then: until the statement ends
 *	  nothing can dirty those pages but hint bits (a parallel query cannot
 *	  write, and no other scan of the table in the plan goes through local
 *	  buffers: plan_walk.c).
 *	- Participants take chunks of blocks from a shared range and read
 *	  them into private memory (page_reader.c), so workers need no
 *	  temp_buffers of their own; the leader reads the pages it holds in
 *	  place, pinning each local buffer while it is on that page.
 *	- Out-of-line values of the columns the scan uses are fetched by the
 *	  participant that meets them, through private pages of the toast
 *	  relation and its index (toast_reader.c), which the leader flushes
 *	  with the table; the tuple goes up with those values inline, so no
 *	  participant detoasts through local buffers.
 *	- When workers must not look at the table's rows the scan runs in the
 *	  leader alone: it then stops Gather from launching any worker.  That
 *	  happens when the toast index is one toast_reader.c cannot read, or
 *	  when code the leader runs could prune pages the guards cannot keep
 *	  (page_guard.c).
 *	- Pages workers read cannot change under them: see page_guard.c.
 *	- Without shared memory (Gather running serially, e.g. an extended-
 *	  protocol fetch with a row limit) the node scans alone, the same way.
 *
 * EXPLAIN runs after the shared memory is gone, so everything it shows is
 * kept in the leader's own state.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/heapam.h"
#include "access/parallel.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "port/atomics.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "storage/condition_variable.h"
#include "utils/wait_event.h"
#include "utils/rel.h"

#include "pg_tempbuf.h"
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
	TSP_NUM_MEMBERS
};

static const char *const flush_mode_names[] = {
	[TB_FLUSH_UPFRONT] = "upfront",
	[TB_FLUSH_PIPELINED] = "pipelined",
	[TB_FLUSH_INTERLEAVED] = "interleaved",
};

/* pg_tempbuf.debug_hazard: where a worker and the leader are (hazard_phase) */
#define HAZARD_IDLE		0
#define HAZARD_CLAIMED	1		/* a worker is about to pause */
#define HAZARD_PAUSED	2		/* in the middle of hazard_block */
#define HAZARD_CHANGED	3		/* the leader did what the hazard says */
#define HAZARD_READ		4		/* the worker has read the rest of the page */
#define HAZARD_RESTORED 5		/* the leader put the buffer back */

/* Workers may read every block: no flush is under way. */
#define ALL_READABLE	((uint32) 0xFFFFFFFF)

/* The blocks not yet handed out: [low, high), packed for one atomic word. */
#define RANGE(low, high)	(((uint64) (high) << 32) | (uint64) (low))
#define RANGE_LOW(r)		((BlockNumber) ((r) & 0xFFFFFFFF))
#define RANGE_HIGH(r)		((BlockNumber) ((r) >> 32))

/* What each participant did, for EXPLAIN ANALYZE. */
typedef struct TempScanCounters
{
	uint64		pages;
	uint64		rereads;
	uint64		toast_values;	/* out-of-line values fetched privately */
	uint64		toast_pages;	/* toast heap and index pages read for them */
	uint64		buffer_pages;	/* of pages, those the leader read in its buffers */
	uint64		leader_pages;	/* of pages, those a worker copied from the leader's */
	uint64		waits;			/* times a worker waited for the flush */
} TempScanCounters;

/* Shared state in the parallel query's DSM segment. */
typedef struct TempScanShared
{
	BlockNumber nblocks;		/* the table's length when the leader flushed */
	BlockNumber chunk;			/* blocks taken from range at a time */
	bool		leader_only;
	bool		toast_private;	/* participants fetch out-of-line values */

	/*
	 * Blocks not handed out yet.  Everybody takes chunks from the low end;
	 * in interleaved mode the leader also takes them from the high end,
	 * where it reads dirty pages from its own buffers instead of writing
	 * them.
	 */
	pg_atomic_uint64 range;

	/*
	 * While the leader flushes, every block below this one is on disk in
	 * its newest image (ALL_READABLE once the flush is over); workers wait
	 * on flush_progress for the rest.  leader_gone lets them stop should
	 * the leader end its part without finishing the flush.
	 */
	pg_atomic_uint32 readable_below;
	pg_atomic_uint32 leader_gone;
	ConditionVariable flush_progress;
	pg_atomic_uint32 workers_started;	/* counted once each tried leader_pages */
	pg_atomic_uint32 workers_refused;	/* and could not copy from the leader */
	pg_atomic_uint32 refused_errno; /* why a worker could not, for EXPLAIN */

	/*
	 * The table's pages in the leader's local buffers, by block, where the
	 * leader's memory holds them; nleader_pages is 0 when workers read the
	 * file only.  The list follows the counters.
	 */
	pid_t		leader_pid;
	int			nleader_pages;
	Size		leader_pages_offset;

	/*
	 * Blocks that only the leader reads, a bit each (page_guard.c): workers
	 * skip them, and the leader reads them once it has no chunk left.
	 */
	bool		any_reserved;
	BlockNumber reserved_bits;
	Size		reserved_offset;

	/* pg_tempbuf.debug_hazard: where a worker and the leader meet */
	pg_atomic_uint32 hazard_phase;
	BlockNumber hazard_block;

	int			nworkers;
	/* [0] is the leader, [1 + ParallelWorkerNumber] the workers */
	TempScanCounters counters[FLEXIBLE_ARRAY_MEMBER];
} TempScanShared;

typedef struct TempScanState
{
	CustomScanState css;

	/* from the plan */
	bool		partial;
	bool		toast_sensitive;
	bool		output_unread;
	bool		guard_pruning;
	bool		reads_no_column;	/* neither quals nor parent read a column */
	int			est_dirty_pages;
	double		est_flush_cost;
	TbFlushMode plan_flush_mode;

	/* block allocation: shared, or private when running without DSM */
	TempScanShared *shared;
	bool		prepared;		/* sized for this pass */
	bool		flushed;		/* this execution's flush is done */
	BlockNumber nblocks;
	BlockNumber next_block;		/* without DSM only */
	BlockNumber chunk_next;		/* rest of the chunk in hand */
	BlockNumber chunk_end;
	const char *leader_only_reason;

	/* leader: the flush done as workers go (pipelined, interleaved) */
	ParallelContext *pcxt;
	TbFlushMode flush_mode;		/* this pass's (the last one's, for EXPLAIN) */
	bool		flushing;		/* a flush workers wait on is not over */
	bool		pass_started;	/* the leader has sized this pass's flush */
	bool		flush_opened;	/* and collected the pages it writes */
	TbFlushCursor flush;
	BlockNumber lookahead;		/* blocks to keep readable ahead of workers */

	/*
	 * Interleaved mode: what a written page and a page scanned from the high
	 * end cost the leader in this pass, to tell which way it serves the
	 * scan better.
	 */
	double		pass_scan_ms;
	uint64		pass_scanned;
	double		last_write_ms;	/* the latest write run, and its pages */
	int64		last_write_pages;
	int			chunks_since_write; /* high chunks scanned since then */
	instr_time	high_chunk_start;	/* of the high chunk in hand */
	BlockNumber high_chunk_pages;
	bool		start_synced;	/* pg_tempbuf.debug_sync_start done this pass */
	bool		writes_needed_known;	/* workers_need_writes() answered */
	long		start_wait_us;	/* waited for that answer, pipelined */

	/* leader: the table's pages in local buffers, copied from there */
	TbResidentPage *resident;
	int			nresident;

	/* leader: entries the DSM has for the list of its dirty pages */
	int			leader_pages_room;
	BlockNumber reserved_room;	/* and bits for the blocks it keeps */
	const char *copies_off_reason;	/* why it lists none, this pass */
	uint64		ptracer_hold;	/* from tb_admit_workers(), until the end */
	const char *page_source;	/* for EXPLAIN: how workers got those pages */

	/* leader: pages kept from changing while workers read (page_guard.c) */
	TbPinSet	pins;
	bool		reserved_pass;	/* reading the blocks it keeps */
	BlockNumber reserved_next;
	uint64		reserved_count; /* for EXPLAIN, this pass */
	bool		hazard_served;

	/* leader of a full scan: flushes when the executor runs the plan */
	bool		awaits_run;
	uint64		pages_pinned;	/* for EXPLAIN, summed over passes */
	uint64		pages_kept;

	/* worker: copies pages the leader holds out of its memory */
	bool		copies_from_leader;
	TbLeaderPage *leader_pages;	/* in the shared state */
	char	   *copies;			/* the last batch of copies, a page each */
	const TbLeaderPage *copied; /* their entries in leader_pages */
	bool		copy_valid[TB_LEADER_COPY_BATCH];
	int			ncopies;

	/*
	 * Private toast fetches: the varlena columns the quals use, fetched
	 * before the quals run, and those only the output uses, fetched for rows
	 * that pass.  The scan then runs the quals itself, in place of ExecScan.
	 */
	AttrNumber *qual_attrs;
	int			nqual_attrs;
	AttrNumber *late_attrs;
	int			nlate_attrs;
	ExprState  *qual;
	bool		fetch_toast;	/* participants fetch out-of-line values */
	bool		toast_decided;	/* fetch_toast is set for this execution */
	TbToastReader *toast;		/* this participant's reader, or NULL */
	Datum	   *values;
	bool	   *isnull;

	/*
	 * The page in hand (page_buf, a copy from the leader, or the leader's
	 * own local buffer, pinned) and its visible tuples.
	 */
	char	   *page;
	char	   *page_buf;
	Buffer		pinned;
	char	   *scratch;
	BlockNumber page_block;
	int			nvisible;
	int			next_visible;
	OffsetNumber visible[MaxHeapTuplesPerPage];
	HeapTupleData tuple;
	TbXminVerdict last_xmin;	/* for tb_tuple_visible() */

	/* kept for EXPLAIN */
	int64		pages_flushed;
	double		flush_ms;
	TempScanCounters mine;		/* without DSM */
	TempScanCounters *totals;	/* per participant, summed over passes */
	int			ntotals;
} TempScanState;

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
					   list_make3(makeInteger(TB_FLUSH_UPFRONT),
								  makeInteger(false),
								  makeInteger(false)));
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
	ts->est_dirty_pages = intVal(list_nth(priv, TSP_EST_DIRTY_PAGES));
	ts->est_flush_cost = strtod(strVal(list_nth(priv, TSP_EST_FLUSH_COST)), NULL);
	ts->plan_flush_mode = intVal(list_nth(priv, TSP_FLUSH_MODE));
	return (Node *) ts;
}

/* Varlena columns of the table that the expressions reference. */
static Bitmapset *
varlena_attrs(TempScanState *ts, List *exprs)
{
	CustomScan *cscan = (CustomScan *) ts->css.ss.ps.plan;
	TupleDesc	desc = RelationGetDescr(ts->css.ss.ss_currentRelation);
	Bitmapset  *attrs = NULL;
	Bitmapset  *result = NULL;
	bool		whole_row;

	pull_varattnos((Node *) exprs, cscan->scan.scanrelid, &attrs);
	whole_row = bms_is_member(InvalidAttrNumber - FirstLowInvalidHeapAttributeNumber,
							  attrs);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		/* Any storage: SET STORAGE PLAIN leaves old values out of line. */
		if (att->attisdropped || att->attlen != -1)
			continue;
		if (whole_row ||
			bms_is_member(i + 1 - FirstLowInvalidHeapAttributeNumber, attrs))
			result = bms_add_member(result, i);
	}
	return result;
}

static AttrNumber *
attr_array(Bitmapset *attrs, int *nattrs)
{
	AttrNumber *result = palloc(sizeof(AttrNumber) * Max(bms_num_members(attrs), 1));
	int			x = -1;

	*nattrs = 0;
	while ((x = bms_next_member(attrs, x)) >= 0)
		result[(*nattrs)++] = x;
	return result;
}

/*
 * Which out-of-line values this scan may have to fetch: those of the
 * varlena columns its quals and output use (all of them for a whole-row
 * reference).
 */
static void
find_toast_attrs(TempScanState *ts)
{
	CustomScan *cscan = (CustomScan *) ts->css.ss.ps.plan;
	TupleDesc	desc = RelationGetDescr(ts->css.ss.ss_currentRelation);
	Bitmapset  *in_qual = varlena_attrs(ts, cscan->scan.plan.qual);
	Bitmapset  *in_output = ts->output_unread ? NULL :
		varlena_attrs(ts, cscan->scan.plan.targetlist);

	ts->qual_attrs = attr_array(in_qual, &ts->nqual_attrs);
	ts->late_attrs = attr_array(bms_difference(in_output, in_qual), &ts->nlate_attrs);
	if (ts->nqual_attrs + ts->nlate_attrs == 0)
		return;

	/* Rows the quals reject must not cost a fetch: run them here. */
	ts->qual = ts->css.ss.ps.qual;
	ts->css.ss.ps.qual = NULL;
	ts->values = palloc(sizeof(Datum) * desc->natts);
	ts->isnull = palloc(sizeof(bool) * desc->natts);
}

static void flush_table(TempScanState *ts);
static TempScanCounters *my_counters(TempScanState *ts);

/* Full scans begun in this backend whose flush waits for ExecutorRun. */
int			tb_scans_awaiting_run = 0;
static void plan_deform(TempScanState *ts);

static void
temp_scan_begin(CustomScanState *node, EState *estate, int eflags)
{
	TempScanState *ts = (TempScanState *) node;

	ts->page = ts->page_buf = palloc(BLCKSZ);
	ts->scratch = palloc(BLCKSZ);
	ts->pinned = InvalidBuffer;
	ts->page_block = InvalidBlockNumber;
	plan_deform(ts);
	/* Before the flush: it decides whether the toast relation goes too. */
	if (ts->toast_sensitive)
		find_toast_attrs(ts);

	/*
	 * A full scan has no shared state to set up before workers start, so
	 * its leader flushes when the executor runs the plan (see
	 * temp_scan_executor_run), before Gather launches any worker.  Not
	 * here: with the extended protocol a portal can be bound, the table
	 * changed by another statement, and the portal run afterwards.
	 */
	if (!ts->partial && !IsParallelWorker() &&
		(eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0)
	{
		if (tb_debug_unprotected)
			flush_table(ts);
		else
		{
			ts->awaits_run = true;
			tb_scans_awaiting_run++;
		}
	}
}

/* Does the table's toast relation hold anything a worker might fetch? */
bool
tb_toast_has_data(Relation rel)
{
	Oid			toastrelid = rel->rd_rel->reltoastrelid;
	Relation	toastrel;
	BlockNumber nblocks;

	if (!OidIsValid(toastrelid))
		return false;
	toastrel = table_open(toastrelid, AccessShareLock);
	nblocks = RelationGetNumberOfBlocks(toastrel);
	table_close(toastrel, AccessShareLock);
	return nblocks > 0;
}

/*
 * Must this scan's participants fetch out-of-line values themselves?  Not
 * when the leader scans alone anyway.
 */
static bool
wants_toast_reader(TempScanState *ts)
{
	return ts->nqual_attrs + ts->nlate_attrs > 0 &&
		tb_toast_has_data(ts->css.ss.ss_currentRelation);
}

/* Once per execution: must participants fetch out-of-line values? */
static void
decide_toast(TempScanState *ts)
{
	if (ts->toast_decided)
		return;
	ts->fetch_toast = wants_toast_reader(ts);
	ts->toast_decided = true;
}

/*
 * Leader only: put the table's pages (and those of its toast relation,
 * when participants fetch from it) on disk, once per execution.
 */
static void
flush_table(TempScanState *ts)
{
	Relation	rel = ts->css.ss.ss_currentRelation;
	TbRelFileId file = TbRelationFileId(rel);
	instr_time	start;
	instr_time	duration;

	Assert(!IsParallelWorker());

	if (ts->flushed)
		return;
	decide_toast(ts);
	INSTR_TIME_SET_CURRENT(start);
	ts->pages_flushed += tb_flush_local_buffers(&file, MAIN_FORKNUM);
	if (ts->fetch_toast)
		ts->pages_flushed += tb_toast_flush(rel);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	ts->flush_ms += INSTR_TIME_GET_MILLISEC(duration);
	ts->flushed = true;
}

/* Leader: note which of the table's pages it can copy from its buffers. */
static void
remember_resident_pages(TempScanState *ts)
{
	Relation	rel = ts->css.ss.ss_currentRelation;
	MemoryContext oldcxt = MemoryContextSwitchTo(ts->css.ss.ps.state->es_query_cxt);

	if (ts->resident)
		pfree(ts->resident);
	ts->resident = tb_resident_pages(TbRelationFileId(rel), MAIN_FORKNUM,
									 &ts->nresident);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Size the scan and, in the leader, flush the table (or get ready to, for
 * a flush that workers follow) and decide whether workers may take part.
 * Runs at execution time, so a prepared statement sees the table as it is
 * now.  A worker running a full scan sizes it alone: the leader flushed
 * before it started, and nothing changes the table's length until the
 * statement ends.
 */
static void
temp_scan_prepare(TempScanState *ts, TbFlushMode mode)
{
	Relation	rel = ts->css.ss.ss_currentRelation;
	const char *toast_reason = NULL;

	decide_toast(ts);
	if (!IsParallelWorker())
	{
		/*
		 * Workers fetching out-of-line values need the toast relation on
		 * disk before they start.
		 */
		if (ts->fetch_toast)
			mode = TB_FLUSH_UPFRONT;
		if (mode == TB_FLUSH_UPFRONT)
			flush_table(ts);
		ts->flush_mode = mode;
		ts->flushing = mode != TB_FLUSH_UPFRONT;
		ts->pass_started = false;
		ts->flush_opened = false;
		remember_resident_pages(ts);
	}

	ts->nblocks = RelationGetNumberOfBlocks(rel);

	if (ts->fetch_toast && ts->toast == NULL)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(ts->css.ss.ps.state->es_query_cxt);
		TempScanCounters *counters = &ts->mine;

		ts->toast = tb_toast_reader_open(rel, &counters->toast_pages,
										 &counters->rereads, &toast_reason);
		MemoryContextSwitchTo(oldcxt);
		/* The leader read the same pages and could. */
		if (ts->toast == NULL && IsParallelWorker())
			elog(ERROR, "parallel worker could not read toast index: %s",
				 toast_reason);
	}

	if (ts->fetch_toast && ts->toast == NULL)
		ts->leader_only_reason = toast_reason;
	else
		ts->leader_only_reason = NULL;

	ts->prepared = true;
}

/* Let go of the leader's local buffer the page in hand is read from. */
static void
unpin_page(TempScanState *ts)
{
	if (BufferIsValid(ts->pinned))
	{
		ReleaseBuffer(ts->pinned);
		ts->pinned = InvalidBuffer;
		ts->page = ts->page_buf;
		ts->nvisible = ts->next_visible = 0;
	}
}

static void
reset_pass(TempScanState *ts)
{
	unpin_page(ts);
	ts->ncopies = 0;
	ts->last_xmin.xid = InvalidTransactionId;
	ts->next_block = 0;
	ts->chunk_next = ts->chunk_end = 0;
	ts->nvisible = ts->next_visible = 0;
	ts->page_block = InvalidBlockNumber;
	ts->reserved_pass = false;
	ts->reserved_next = 0;
}

/*
 * Hand out blocks in chunks, so that participants read runs of adjacent
 * blocks; small enough that the tail of the scan stays balanced.
 */
static BlockNumber
chunk_size(BlockNumber nblocks, int nparticipants)
{
	BlockNumber chunk = nblocks / (Max(nparticipants, 1) * 64);

	return Max(1, Min(chunk, 64));
}

/*
 * Take the next chunk of the blocks left: from the low end, as everybody
 * does, or (the leader, interleaved mode) from the high end.
 */
static bool
claim_chunk(TempScanShared *shared, bool from_high, BlockNumber *start,
			BlockNumber *end)
{
	uint64		range = pg_atomic_read_u64(&shared->range);

	for (;;)
	{
		BlockNumber low = RANGE_LOW(range);
		BlockNumber high = RANGE_HIGH(range);
		BlockNumber n;

		if (low >= high)
			return false;
		n = Min(shared->chunk, high - low);
		*start = from_high ? high - n : low;
		*end = *start + n;
		if (pg_atomic_compare_exchange_u64(&shared->range, &range,
										   from_high ? RANGE(low, high - n) :
										   RANGE(low + n, high)))
			return true;
	}
}

/*
 * Leader: the flush that workers wait on is over; let them all go.  Should
 * the leader end its part before the flush did (completed false), they
 * stop instead of reading.
 */
static void
finish_flush(TempScanState *ts, bool completed)
{
	TempScanShared *shared = ts->shared;

	if (completed)
		pg_atomic_exchange_u32(&shared->readable_below, ALL_READABLE);
	else
		pg_atomic_exchange_u32(&shared->leader_gone, 1);
	ConditionVariableBroadcast(&shared->flush_progress);
	if (ts->flush_opened)
	{
		ts->pages_flushed += ts->flush.written;
		tb_flush_cursor_close(&ts->flush);
		ts->flush_opened = false;
	}
	ts->flushing = false;
}

/* pg_tempbuf.debug_hazard: the leader loses the CPU for a while here. */
static void
stall_for_hazard(TbDebugHazard hazard)
{
	if (tb_debug_hazard == hazard)
		pg_usleep(100000L);
}

/*
 * Leader: write the next run of dirty blocks that workers may be handed
 * (those below the high end of the range: the leader reads the blocks
 * above from its buffers), then tell workers how far they may read.
 */
static void
flush_step(TempScanState *ts)
{
	TempScanShared *shared = ts->shared;
	BlockNumber high = RANGE_HIGH(pg_atomic_read_u64(&shared->range));
	BlockNumber next;
	instr_time	start;
	instr_time	duration;
	int64		written_before;

	INSTR_TIME_SET_CURRENT(start);
	/* Collected at the first write: with copies from the leader there is none. */
	if (!ts->flush_opened)
	{
		tb_flush_cursor_open(&ts->flush,
							 TbRelationFileId(ts->css.ss.ss_currentRelation),
							 MAIN_FORKNUM);
		ts->flush_opened = true;
	}
	written_before = ts->flush.written;
	(void) tb_flush_cursor_write_run(&ts->flush, high);
	stall_for_hazard(TB_HAZARD_SLOW_WRITES);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	ts->flush_ms += INSTR_TIME_GET_MILLISEC(duration);
	if (ts->flush.written > written_before)
	{
		ts->last_write_ms = INSTR_TIME_GET_MILLISEC(duration);
		ts->last_write_pages = ts->flush.written - written_before;
		ts->chunks_since_write = 0;
	}

	next = tb_flush_cursor_next_block(&ts->flush);
	if (next == InvalidBlockNumber || next >= high)
		finish_flush(ts, true);
	else
	{
		/* The exchange is a full barrier: the write is done before this. */
		pg_atomic_exchange_u32(&shared->readable_below, next);
		ConditionVariableBroadcast(&shared->flush_progress);
	}
}

/*
 * pg_tempbuf.debug_sync_start: wait (a second at most) until the launched
 * workers run, so that tests see them read even a small table.
 */
static void
wait_for_workers(TempScanState *ts, int nworkers)
{
	for (int i = 0; i < 10000; i++)
	{
		if (pg_atomic_read_u32(&ts->shared->workers_started) >= (uint32) nworkers)
			return;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(100L);
	}
}

/*
 * pg_tempbuf.debug_hazard: wait (ten seconds at most) until the other side
 * gets to phase.
 */
static bool
wait_for_phase(TempScanShared *shared, uint32 phase, long timeout_us)
{
	for (long waited = 0; waited < timeout_us; waited += 100)
	{
		if (pg_atomic_read_u32(&shared->hazard_phase) >= phase)
			return true;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(100L);
	}
	return false;
}

/*
 * Would heap_page_prune_opt() prune this page (as far as its first half
 * tells)?  Only such a page shows a prune in the middle of a read.
 */
static bool
page_prunes_on_access(const char *page)
{
	return tb_page_may_be_pruned((Page) page) &&
		(PageIsFull((Page) page) ||
		 PageGetHeapFreeSpace((Page) page) < BLCKSZ / 10);
}

/*
 * Worker, pg_tempbuf.debug_hazard: the first page read the hazard is about
 * pauses in its middle until the leader has changed it (see serve_hazard).
 */
static bool
worker_meets_hazard(BlockNumber blkno, const char *page, bool from_leader,
					bool done, void *arg)
{
	TempScanState *ts = (TempScanState *) arg;
	TempScanShared *shared = ts->shared;
	uint32		idle = HAZARD_IDLE;
	bool		wanted;

	if (done)
	{
		pg_atomic_exchange_u32(&shared->hazard_phase, HAZARD_READ);
		if (tb_debug_hazard == TB_HAZARD_REFILL_DURING_COPY)
			(void) wait_for_phase(shared, HAZARD_RESTORED, 10000000L);
		return true;
	}
	switch ((TbDebugHazard) tb_debug_hazard)
	{
		case TB_HAZARD_PRUNE_DURING_COPY:
			wanted = from_leader && page != NULL && page_prunes_on_access(page);
			break;
		case TB_HAZARD_PRUNE_DURING_READ:
			wanted = !from_leader && page_prunes_on_access(page);
			break;
		case TB_HAZARD_WRITE_DURING_READ:
			wanted = !from_leader;
			break;
		case TB_HAZARD_REFILL_DURING_COPY:
			wanted = from_leader && page != NULL;
			break;
		case TB_HAZARD_EVICT_DURING_BATCH:
			wanted = from_leader && page == NULL;
			break;
		default:
			wanted = false;
			break;
	}
	if (!wanted ||
		!pg_atomic_compare_exchange_u32(&shared->hazard_phase, &idle, HAZARD_CLAIMED))
		return false;
	shared->hazard_block = blkno;
	pg_atomic_exchange_u32(&shared->hazard_phase, HAZARD_PAUSED);
	(void) wait_for_phase(shared, HAZARD_CHANGED, 10000000L);
	return true;
}

/* Write a local buffer's page if it is dirty, as an eviction would. */
static void
write_if_dirty(Buffer buffer)
{
	BufferDesc *desc = GetLocalBufferDescriptor(-buffer - 1);

	if (pg_atomic_read_u32(&desc->state) & BM_DIRTY)
		tb_write_local_run(&desc, 1);
}

/*
 * Leader, pg_tempbuf.debug_hazard: once per pass, after its flush, wait a
 * little for a worker to pause in the middle of a page, and change that
 * page as code running in the leader could: prune it (as an index scan in
 * a function above Gather does), write it back (as an eviction does), let
 * its buffer hold another page for a while (as an eviction and a read of
 * the same block into the same buffer would), or give its buffer to another
 * block while a worker copies a batch.  Each does nothing to a
 * page the scan's guards keep: heap_page_prune_opt() and the buffer
 * manager leave a buffer pinned twice alone.
 */
static void
serve_hazard(TempScanState *ts)
{
	TempScanShared *shared = ts->shared;
	Relation	rel = ts->css.ss.ss_currentRelation;
	BlockNumber blkno;
	Buffer		buffer;

	if (!TB_HAZARD_PAUSES_READS(tb_debug_hazard) ||
		ts->hazard_served || ts->flushing || shared->leader_only ||
		ts->pcxt == NULL || ts->pcxt->nworkers_launched == 0)
		return;
	ts->hazard_served = true;
	if (!wait_for_phase(shared, HAZARD_PAUSED, 3000000L))
		return;
	blkno = shared->hazard_block;
	buffer = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
	switch ((TbDebugHazard) tb_debug_hazard)
	{
		case TB_HAZARD_PRUNE_DURING_COPY:
			heap_page_prune_opt(rel, buffer);
			break;
		case TB_HAZARD_PRUNE_DURING_READ:
			heap_page_prune_opt(rel, buffer);
			write_if_dirty(buffer);
			break;
		case TB_HAZARD_WRITE_DURING_READ:
			write_if_dirty(buffer);
			break;
		case TB_HAZARD_REFILL_DURING_COPY:
			/* Only an unpinned buffer can be reused: this pin is ours. */
			if (LocalRefCount[-buffer - 1] > 1)
			{
				pg_atomic_exchange_u32(&shared->hazard_phase, HAZARD_RESTORED);
				break;
			}
			write_if_dirty(buffer);
			smgrread(RelationGetSmgr(rel), MAIN_FORKNUM,
					 (blkno + 1) % ts->nblocks, BufferGetPage(buffer));
			pg_atomic_exchange_u32(&shared->hazard_phase, HAZARD_CHANGED);
			(void) wait_for_phase(shared, HAZARD_READ, 10000000L);
			smgrread(RelationGetSmgr(rel), MAIN_FORKNUM, blkno, BufferGetPage(buffer));
			pg_atomic_exchange_u32(&shared->hazard_phase, HAZARD_RESTORED);
			break;
		case TB_HAZARD_EVICT_DURING_BATCH:
			{
				BufferDesc *desc = GetLocalBufferDescriptor(-buffer - 1);
				BufferTag	tag = desc->tag;

				if (LocalRefCount[-buffer - 1] > 1)
					break;

				/*
				 * Evicted (written first, being dirty) and given to another
				 * block, as a read of that block would, while the worker is
				 * between the batch's two looks at the descriptors; put back
				 * once it has read the pages.
				 */
				write_if_dirty(buffer);
				desc->tag.blockNum = (blkno + 1) % ts->nblocks;
				smgrread(RelationGetSmgr(rel), MAIN_FORKNUM, desc->tag.blockNum,
						 BufferGetPage(buffer));
				pg_atomic_exchange_u32(&shared->hazard_phase, HAZARD_CHANGED);
				(void) wait_for_phase(shared, HAZARD_READ, 10000000L);
				smgrread(RelationGetSmgr(rel), MAIN_FORKNUM, blkno, BufferGetPage(buffer));
				desc->tag = tag;
			}
			break;
		default:
			break;
	}
	ReleaseBuffer(buffer);
	ereport(NOTICE,
			(errmsg("pg_tempbuf.debug_hazard: block %u of \"%s\" met the leader in the middle of a worker's read",
					blkno, RelationGetRelationName(rel))));
	if (pg_atomic_read_u32(&shared->hazard_phase) < HAZARD_CHANGED)
		pg_atomic_exchange_u32(&shared->hazard_phase, HAZARD_CHANGED);
}

/* Interleaved mode: high chunks the leader scans before it times a write again. */
#define WRITE_RETRY_CHUNKS	4

/*
 * Interleaved mode: does writing a page for the workers cost the leader
 * less than scanning one itself?  Only then do idle workers gain from a
 * write: otherwise the leader gets further by scanning, even alone.  (On a
 * virtual machine whose fresh page-cache memory is slow to touch, a write
 * can cost more than the scan of the page.)  Each pass measures a write
 * first, then a scan.  The latest write run is the one compared, and one
 * slow run does not stop the writes for the rest of the pass: after a few
 * scanned chunks the leader times another.
 */
static bool
writing_pays(TempScanState *ts)
{
	if (ts->flush.written == 0)
		return true;
	if (ts->pass_scanned == 0)
		return false;
	if (ts->chunks_since_write >= WRITE_RETRY_CHUNKS)
		return true;
	return ts->last_write_ms / ts->last_write_pages <
		ts->pass_scan_ms / ts->pass_scanned;
}

/* Interleaved mode: the leader takes a chunk from the high end, timed. */
static bool
take_high_chunk(TempScanState *ts)
{
	if (!claim_chunk(ts->shared, true, &ts->chunk_next, &ts->chunk_end))
		return false;
	INSTR_TIME_SET_CURRENT(ts->high_chunk_start);
	ts->high_chunk_pages = ts->chunk_end - ts->chunk_next;
	ts->chunks_since_write++;
	return true;
}

/* Interleaved mode: the leader is done with the high chunk it held. */
static void
time_high_chunk(TempScanState *ts)
{
	instr_time	duration;

	if (ts->high_chunk_pages == 0)
		return;
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, ts->high_chunk_start);
	ts->pass_scan_ms += INSTR_TIME_GET_MILLISEC(duration);
	ts->pass_scanned += ts->high_chunk_pages;
	ts->high_chunk_pages = 0;
}

/*
 * Leader: do workers need the flush?  Not when each of them copies the
 * pages the leader holds out of its memory (the others are on disk).  Says
 * so once every launched worker has tried; until then, *known is false.
 */
static bool
workers_need_writes(TempScanState *ts, bool *known)
{
	TempScanShared *shared = ts->shared;
	int			nworkers = ts->pcxt ? ts->pcxt->nworkers_launched : 0;

	uint32		started;
	uint32		refused;

	*known = true;
	if (shared->nleader_pages == 0)
		return true;

	/*
	 * A worker counts itself refused before it counts itself started: read
	 * started first, and once every launched worker has started, every
	 * refusal is there to see.
	 */
	if (tb_debug_unprotected)
	{
		refused = pg_atomic_read_u32(&shared->workers_refused);
		stall_for_hazard(TB_HAZARD_HANDSHAKE_STALL);
		started = pg_atomic_read_u32(&shared->workers_started);
	}
	else
	{
		started = pg_atomic_read_u32(&shared->workers_started);
		pg_read_barrier();
		stall_for_hazard(TB_HAZARD_HANDSHAKE_STALL);
		refused = pg_atomic_read_u32(&shared->workers_refused);
	}
	if (refused > 0)
		return true;
	if (started >= (uint32) nworkers)
		return false;
	*known = false;
	return true;
}

/* How long a pipelined leader waits to learn whether workers need writes. */
#define WORKER_START_WAIT_US	200000L

/*
 * Leader, with DSM: the next chunk.  While a flush that workers follow is
 * under way, the leader writes runs ahead of them (always, when
 * pipelined); in interleaved mode, when they have enough to read or a
 * write costs it more than a scan, it scans a chunk from the high end
 * instead, out of its own buffers.
 */
static bool
leader_next_chunk(TempScanState *ts)
{
	TempScanShared *shared = ts->shared;

	time_high_chunk(ts);

	if (tb_debug_sync_start && !ts->start_synced)
	{
		ts->start_synced = true;
		if (ts->pcxt && ts->pcxt->nworkers_launched > 0)
			wait_for_workers(ts, ts->pcxt->nworkers_launched);
	}

	while (ts->flushing)
	{
		uint64		range;

		if (!ts->pass_started)
		{
			int			nworkers = ts->pcxt ? ts->pcxt->nworkers_launched : 0;

			/* No worker started: the leader reads everything from its buffers. */
			if (nworkers == 0)
			{
				finish_flush(ts, true);
				break;
			}
			ts->pass_started = true;
			ts->flush.written = 0;
			ts->lookahead = 2 * shared->chunk * nworkers;
			ts->writes_needed_known = false;
			ts->start_wait_us = 0;
			ts->pass_scan_ms = 0;
			ts->pass_scanned = 0;
			ts->chunks_since_write = 0;
			ts->high_chunk_pages = 0;
		}

		range = pg_atomic_read_u64(&shared->range);
		if (!ts->writes_needed_known)
		{
			bool		known;

			if (!workers_need_writes(ts, &known))
			{
				/* Every worker copies from the leader: nothing to write. */
				finish_flush(ts, true);
				break;
			}
			if (known || ts->start_wait_us >= WORKER_START_WAIT_US)
				ts->writes_needed_known = true;
			else if (ts->flush_mode == TB_FLUSH_PIPELINED ||
					 RANGE_LOW(range) >= RANGE_HIGH(range))
			{
				/* Rows may not go up before the writes: wait a little. */
				CHECK_FOR_INTERRUPTS();
				pg_usleep(100L);
				ts->start_wait_us += 100;
				continue;
			}
			else if (take_high_chunk(ts))
				return true;	/* scan while the workers start, writing nothing yet */
			else
				continue;
		}
		if (ts->flush_mode == TB_FLUSH_PIPELINED ||
			RANGE_LOW(range) >= RANGE_HIGH(range) ||
			(RANGE_LOW(range) + ts->lookahead >=
			 pg_atomic_read_u32(&shared->readable_below) &&
			 writing_pays(ts)))
			flush_step(ts);
		else if (take_high_chunk(ts))
			return true;
	}
	return claim_chunk(shared, false, &ts->chunk_next, &ts->chunk_end);
}

/*
 * Worker: wait until blkno is on disk in its newest image.  False when
 * the leader stopped before flushing it: nothing reads this scan's rows
 * any more.
 */
static bool
wait_readable(TempScanState *ts, BlockNumber blkno)
{
	TempScanShared *shared = ts->shared;
	bool		readable = true;

	if (blkno >= pg_atomic_read_u32(&shared->readable_below))
	{
		my_counters(ts)->waits++;
		ConditionVariablePrepareToSleep(&shared->flush_progress);
		while (blkno >= pg_atomic_read_u32(&shared->readable_below))
		{
			if (pg_atomic_read_u32(&shared->leader_gone))
			{
				readable = false;
				break;
			}
			ConditionVariableSleep(&shared->flush_progress, PG_WAIT_EXTENSION);
		}
		ConditionVariableCancelSleep();
	}
	pg_read_barrier();
	return readable;
}

static uint64 *
reserved_map(TempScanShared *shared)
{
	return (uint64 *) ((char *) shared + shared->reserved_offset);
}

static bool
is_reserved(TempScanShared *shared, BlockNumber blkno)
{
	return shared->any_reserved &&
		tb_block_reserved(reserved_map(shared), shared->reserved_bits, blkno);
}

/* Leader, once no chunk is left: the next of the blocks it kept. */
static bool
next_reserved_block(TempScanState *ts, BlockNumber *blkno)
{
	TempScanShared *shared = ts->shared;
	BlockNumber end = Min(shared->reserved_bits, ts->nblocks);

	while (ts->reserved_next < end)
	{
		BlockNumber candidate = ts->reserved_next++;

		if (is_reserved(shared, candidate))
		{
			*blkno = candidate;
			return true;
		}
	}
	return false;
}

static void serve_hazard(TempScanState *ts);

static bool
next_block(TempScanState *ts, BlockNumber *blkno)
{
	for (;;)
	{
		if (ts->reserved_pass)
			return next_reserved_block(ts, blkno);
		if (ts->chunk_next >= ts->chunk_end)
		{
			if (ts->shared)
			{
				bool		found;

				if (IsParallelWorker())
					found = claim_chunk(ts->shared, false, &ts->chunk_next, &ts->chunk_end);
				else
				{
					found = leader_next_chunk(ts);
					serve_hazard(ts);
				}
				if (!found)
				{
					if (IsParallelWorker() || !ts->shared->any_reserved)
						return false;
					ts->reserved_pass = true;
					continue;
				}
			}
			else
			{
				BlockNumber chunk = chunk_size(ts->nblocks, 1);

				if (ts->next_block >= ts->nblocks)
					return false;
				ts->chunk_next = ts->next_block;
				ts->chunk_end = Min(ts->next_block + chunk, ts->nblocks);
				ts->next_block = ts->chunk_end;
			}
		}
		*blkno = ts->chunk_next++;
		if (ts->shared && is_reserved(ts->shared, *blkno))
			continue;
		if (ts->shared && IsParallelWorker() && !ts->copies_from_leader &&
			!wait_readable(ts, *blkno))
		{
			ts->chunk_next = ts->chunk_end;
			return false;
		}
		return true;
	}
}

static TempScanCounters *
my_counters(TempScanState *ts)
{
	if (ts->shared == NULL)
		return &ts->mine;
	return &ts->shared->counters[IsParallelWorker() ? 1 + ParallelWorkerNumber : 0];
}

/*
 * Worker: copy blkno from the leader's buffers, if it held the page when
 * the scan started and still does.  Any other page is on disk in its
 * newest image: it was not in the leader's buffers, or their eviction
 * wrote it.
 */
static int
compare_leader_pages(const void *a, const void *b)
{
	BlockNumber ba = ((const TbLeaderPage *) a)->blkno;
	BlockNumber bb = ((const TbLeaderPage *) b)->blkno;

	return (ba > bb) - (ba < bb);
}

/*
 * Worker: the page blkno, copied from the leader's buffers, or NULL when
 * the leader does not hold it (or no longer did during the copy).  The
 * copy comes in a batch with the leader's next pages of this worker's
 * chunk, which no other participant reads.
 */
static char *
copy_from_leader(TempScanState *ts, BlockNumber blkno)
{
	TbLeaderPage key = {0, 0, blkno};
	const TbLeaderPage *lp;
	const TbLeaderPage *end;
	int			n;

	for (int i = 0; i < ts->ncopies; i++)
	{
		if (ts->copied[i].blkno == blkno)
			return ts->copy_valid[i] ? ts->copies + (Size) i * BLCKSZ : NULL;
	}

	lp = bsearch(&key, ts->leader_pages, ts->shared->nleader_pages,
				 sizeof(TbLeaderPage), compare_leader_pages);
	if (lp == NULL)
		return NULL;
	end = ts->leader_pages + ts->shared->nleader_pages;
	/* The other hazards pause in the middle of a page: one at a time. */
	for (n = 1; n < TB_LEADER_COPY_BATCH && lp + n < end &&
		 (!tb_mid_read_hook || tb_debug_hazard == TB_HAZARD_EVICT_DURING_BATCH); n++)
	{
		if (lp[n].blkno >= ts->chunk_end)
			break;
	}
	if (ts->copies == NULL)
		ts->copies = MemoryContextAlloc(ts->css.ss.ps.state->es_query_cxt,
										(Size) TB_LEADER_COPY_BATCH * BLCKSZ);
	tb_read_leader_pages(ts->css.ss.ss_currentRelation, ts->shared->leader_pid,
						 lp, n, ts->copies, ts->copy_valid);
	ts->copied = lp;
	ts->ncopies = n;
	return ts->copy_valid[0] ? ts->copies : NULL;
}

/*
 * Get one block, from the leader's own buffers, a copy of the leader's, or
 * the file, and collect its tuples visible to the snapshot.
 */
static void
load_page(TempScanState *ts, BlockNumber blkno)
{
	Relation	rel = ts->css.ss.ss_currentRelation;
	Snapshot	snapshot = ts->css.ss.ps.state->es_snapshot;
	TempScanCounters *counters = my_counters(ts);
	char	   *copy = NULL;
	Page		page;
	OffsetNumber maxoff;
	bool		all_visible;

	unpin_page(ts);
	if (ts->resident)
		ts->pinned = tb_pin_resident_page(rel, ts->resident, ts->nresident,
										  MAIN_FORKNUM, blkno);
	if (BufferIsValid(ts->pinned))
	{
		ts->page = BufferGetPage(ts->pinned);
		counters->buffer_pages++;
	}
	else if (ts->copies_from_leader && (copy = copy_from_leader(ts, blkno)) != NULL)
	{
		ts->page = copy;
		counters->leader_pages++;
	}
	else
		counters->rereads += tb_read_page(rel, MAIN_FORKNUM, blkno, ts->page, ts->scratch);
	counters->pages++;
	page = (Page) ts->page;

	ts->page_block = blkno;
	ts->nvisible = ts->next_visible = 0;
	if (PageIsNew(page))
		return;

	all_visible = PageIsAllVisible(page) && !snapshot->takenDuringRecovery;
	maxoff = PageGetMaxOffsetNumber(page);
	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off = OffsetNumberNext(off))
	{
		ItemId		lp = PageGetItemId(page, off);

		if (!ItemIdIsNormal(lp))
			continue;
		if (all_visible ||
			tb_tuple_visible((HeapTupleHeader) PageGetItem(page, lp), snapshot,
							 &ts->last_xmin))
			ts->visible[ts->nvisible++] = off;
	}
}

/*
 * Put a tuple of the private page into the scan slot.  A heap tuple slot
 * just points at it; the virtual slot of PostgreSQL 15 needs it deformed,
 * with defaults of columns added since the row was written.
 */
static void
store_tuple(TempScanState *ts, TupleTableSlot *slot, HeapTuple tuple)
{
	if (TTS_IS_HEAPTUPLE(slot))
		ExecStoreHeapTuple(tuple, slot, false);
	else
	{
		int			natts = HeapTupleHeaderGetNatts(tuple->t_data);

		ExecClearTuple(slot);
		if (ts->reads_no_column)
			memset(slot->tts_isnull, true,
				   slot->tts_tupleDescriptor->natts * sizeof(bool));
		else
		{
			heap_deform_tuple(tuple, slot->tts_tupleDescriptor,
							  slot->tts_values, slot->tts_isnull);
			if (natts < slot->tts_tupleDescriptor->natts)
				slot_getmissingattrs(slot, natts,
									 slot->tts_tupleDescriptor->natts);
		}
		ExecStoreVirtualTuple(slot);
	}
}

/*
 * The virtual slot of PostgreSQL 15 holds every column deformed, where
 * the heap tuple slot deforms only what is read.  When neither the quals
 * nor the parent read any column (count(*)), the row goes up as NULLs and
 * nothing is deformed.
 */
static void
plan_deform(TempScanState *ts)
{
	CustomScan *cscan = (CustomScan *) ts->css.ss.ps.plan;
	Bitmapset  *attrs = NULL;

	pull_varattnos((Node *) cscan->scan.plan.qual, cscan->scan.scanrelid, &attrs);
	if (!ts->output_unread)
		pull_varattnos((Node *) cscan->scan.plan.targetlist, cscan->scan.scanrelid,
					   &attrs);
	ts->reads_no_column = bms_is_empty(attrs);
}

/*
 * Fetch the out-of-line values of attrs into ts->values, decompressed;
 * false when there was none.  A value of another toast relation cannot
 * occur in a table (core re-toasts such values on insertion): should one
 * turn up, the leader leaves it to core, while a worker, which cannot,
 * gives up.
 */
static bool
fetch_values(TempScanState *ts, AttrNumber *attrs, int nattrs)
{
	Relation	rel = ts->css.ss.ss_currentRelation;
	TempScanCounters *counters = my_counters(ts);
	bool		fetched = false;

	for (int i = 0; i < nattrs; i++)
	{
		int			att = attrs[i];
		struct varlena *value = (struct varlena *) DatumGetPointer(ts->values[att]);
		struct varatt_external toast_pointer;

		if (ts->isnull[att] || !VARATT_IS_EXTERNAL_ONDISK(value))
			continue;
		VARATT_EXTERNAL_GET_POINTER(toast_pointer, value);
		if (toast_pointer.va_toastrelid != tb_toast_reader_relid(ts->toast))
		{
			if (!IsParallelWorker())
				continue;
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot fetch an out-of-line value of temporary table \"%s\" in a parallel worker",
							RelationGetRelationName(rel)),
					 errdetail("The value is stored in toast relation %u, not in the table's own.",
							   toast_pointer.va_toastrelid)));
		}
		value = tb_toast_fetch(ts->toast, value, &counters->toast_pages,
							   &counters->rereads);
		counters->toast_values++;

		/*
		 * Decompress here (pglz or lz4, no relation access): in parallel,
		 * and not in the leader when the row goes up through Gather.
		 */
		if (VARATT_IS_COMPRESSED(value))
		{
			struct varlena *compressed = value;

			value = detoast_attr(compressed);
			pfree(compressed);
		}
		ts->values[att] = PointerGetDatum(value);
		fetched = true;
	}
	return fetched;
}

/* Store ts->values, as a heap tuple standing for the one on the page. */
static void
store_values(TempScanState *ts, TupleTableSlot *slot)
{
	HeapTuple	tuple = heap_form_tuple(slot->tts_tupleDescriptor, ts->values,
										ts->isnull);

	tuple->t_self = ts->tuple.t_self;
	tuple->t_tableOid = ts->tuple.t_tableOid;
	store_tuple(ts, slot, tuple);
}

static bool
qual_passes(TempScanState *ts, TupleTableSlot *slot)
{
	ExprContext *econtext = ts->css.ss.ps.ps_ExprContext;

	econtext->ecxt_scantuple = slot;
	if (ExecQual(ts->qual, econtext))
		return true;
	InstrCountFiltered1(&ts->css.ss.ps, 1);
	ResetExprContext(econtext);
	return false;
}

/*
 * Put the tuple in hand into the slot with the out-of-line values the quals
 * need inline, run the quals, and fetch the values only the output needs
 * for a row that passes.  Returns whether it passed.  Everything lives in
 * per-tuple memory.
 */
static bool
store_fetched(TempScanState *ts, TupleTableSlot *slot)
{
	ExprContext *econtext = ts->css.ss.ps.ps_ExprContext;
	MemoryContext oldcxt = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	bool		passed;

	heap_deform_tuple(&ts->tuple, slot->tts_tupleDescriptor, ts->values, ts->isnull);
	if (fetch_values(ts, ts->qual_attrs, ts->nqual_attrs))
		store_values(ts, slot);
	else
		store_tuple(ts, slot, &ts->tuple);
	passed = ts->qual == NULL || qual_passes(ts, slot);
	if (passed && fetch_values(ts, ts->late_attrs, ts->nlate_attrs))
		store_values(ts, slot);
	MemoryContextSwitchTo(oldcxt);
	return passed;
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
		temp_scan_prepare(ts, TB_FLUSH_UPFRONT);
		reset_pass(ts);
	}
	if (ts->shared && ts->shared->leader_only && IsParallelWorker())
		return ExecClearTuple(slot);

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
			ItemPointerSet(&ts->tuple.t_self, ts->page_block, off);
			ts->tuple.t_tableOid = RelationGetRelid(ss->ss_currentRelation);
			if (ts->toast && HeapTupleHasExternal(&ts->tuple))
			{
				if (!store_fetched(ts, slot))
					continue;
				return slot;
			}
			store_tuple(ts, slot, &ts->tuple);
			if (ts->qual && !qual_passes(ts, slot))
				continue;
			return slot;
		}
		if (!next_block(ts, &blkno))
		{
			ExecClearTuple(slot);
			unpin_page(ts);
			return slot;
		}
		CHECK_FOR_INTERRUPTS();
		load_page(ts, blkno);
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

	unpin_page(ts);
	tb_pinset_release(&ts->pins);
	/* Gather waited for its workers before the plan ended: none copies now. */
	tb_dismiss_workers(ts->ptracer_hold);
	ts->ptracer_hold = 0;
	if (ts->awaits_run)
	{
		tb_scans_awaiting_run--;
		ts->awaits_run = false;
	}
	if (ts->toast)
		tb_toast_reader_close(ts->toast);
}

static void
temp_scan_rescan(CustomScanState *node)
{
	TempScanState *ts = (TempScanState *) node;

	reset_pass(ts);
	/* With DSM the leader prepares again when Gather reinitializes it. */
	if (ts->shared == NULL)
		ts->prepared = false;
}

static Size
leader_pages_offset(int nworkers)
{
	return MAXALIGN(add_size(offsetof(TempScanShared, counters),
							 mul_size(nworkers + 1, sizeof(TempScanCounters))));
}

/* Can this partial scan's workers copy pages from the leader's memory? */
static bool
offers_leader_pages(TempScanState *ts)
{
	return ts->partial && tb_leader_pages_readable();
}

/*
 * Room for the list of the leader's pages: one entry per block of the
 * table, never more than the pool has buffers.  Sizing it by the pool
 * alone made every parallel query of a session with a large temp_buffers
 * pay for a segment the kernel zeroes (1.5 MB at 512MB: 0.48 ms a query
 * on a 1,000-row table on our test machine), however small the table.
 */
static Size
reserved_offset(int nworkers, int leader_pages_room)
{
	return MAXALIGN(add_size(leader_pages_offset(nworkers),
							 mul_size(leader_pages_room, sizeof(TbLeaderPage))));
}

static Size
temp_scan_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	TempScanState *ts = (TempScanState *) node;
	BlockNumber nblocks = RelationGetNumberOfBlocks(ts->css.ss.ss_currentRelation);

	ts->leader_pages_room = 0;
	if (offers_leader_pages(ts))
		ts->leader_pages_room = (int) Min((BlockNumber) NLocBuffer, nblocks);
	/* pg_tempbuf.debug_hazard: as if the table had doubled since. */
	if (tb_debug_hazard == TB_HAZARD_LIST_OVERFLOW)
		ts->leader_pages_room /= 2;
	/* A bit per block for those the leader keeps: 4 kB for 256 MB of table. */
	ts->reserved_room = nblocks;
	return add_size(reserved_offset(pcxt->nworkers, ts->leader_pages_room),
					mul_size((nblocks + 63) / 64, sizeof(uint64)));
}

/*
 * Leader: list the pages a worker copies from its buffers: the dirty ones.
 * A clean page is the same on disk, and a read call costs a worker about
 * what a copy does (less without checksums, as pglab flush-cost measures).
 * Each listed buffer is pinned, so that it holds that page, unchanged,
 * until the scan ends (page_guard.c); a page the pin budget leaves out is
 * one the leader reads itself.
 */
static void
share_leader_pages(TempScanState *ts, TempScanShared *shared)
{
	TbLeaderPage *pages = (TbLeaderPage *) ((char *) shared + shared->leader_pages_offset);
	int			n = 0;
	bool		any_dirty = false;

	shared->leader_pid = MyProcPid;
	shared->nleader_pages = 0;
	ts->copies_off_reason = NULL;
	if (!ts->partial || shared->leader_only)
		return;
	ts->copies_off_reason = tb_leader_copies_unavailable();
	if (ts->copies_off_reason != NULL)
		return;
	for (int i = 0; i < ts->nresident && !any_dirty; i++)
		any_dirty = ts->resident[i].dirty;
	if (!any_dirty)
	{
		ts->copies_off_reason = "no dirty page in the leader's buffers";
		return;
	}
	/* Once per scan: the hold lasts until the end, rescans included. */
	if (ts->ptracer_hold == 0 &&
		!tb_admit_workers(&ts->ptracer_hold, &ts->copies_off_reason))
		return;
	for (int i = 0; i < ts->nresident; i++)
	{
		if (!ts->resident[i].dirty)
			continue;
		if (!tb_debug_unprotected)
		{
			if (!tb_pinset_add(&ts->pins, ts->resident[i].buf_id))
			{
				if (!tb_reserve_block(reserved_map(shared), shared->reserved_bits,
									  ts->resident[i].blkno))
					elog(ERROR, "block %u of temporary table \"%s\" is beyond the scan's shared state",
						 ts->resident[i].blkno,
						 RelationGetRelationName(ts->css.ss.ss_currentRelation));
				continue;
			}
			ts->resident[i].pinned = true;
		}

		/*
		 * The table grew past the list's room since the DSM was sized, which
		 * a read-only statement cannot do: offer no copies, so that the
		 * leader writes what workers read.
		 */
		if (n >= ts->leader_pages_room)
		{
			ts->copies_off_reason = "the table outgrew the shared list of the leader's pages";
			n = 0;
			break;
		}
		tb_local_buffer_addresses(ts->resident[i].buf_id, &pages[n].page_addr,
								  &pages[n].desc_addr);
		pages[n].blkno = ts->resident[i].blkno;
		n++;
	}
	shared->nleader_pages = n;
}

/* How many blocks the leader keeps to itself this pass. */
static uint64
count_reserved(TempScanShared *shared)
{
	const uint64 *reserved = reserved_map(shared);
	uint64		n = 0;

	for (BlockNumber w = 0; w < (shared->reserved_bits + 63) / 64; w++)
		n += pg_popcount64(reserved[w]);
	return n;
}

/*
 * Leader, before workers start: keep every page they may read from
 * changing while they read it (page_guard.c), or decide that they must not
 * read the table at all.  Lists the pages workers copy from the leader.
 */
static void
guard_pages(TempScanState *ts, TempScanShared *shared)
{
	Relation	rel = ts->css.ss.ss_currentRelation;
	const char *reason = NULL;

	tb_pinset_release(&ts->pins);
	tb_pinset_init(&ts->pins, ts->css.ss.ps.state->es_query_cxt);
	memset(reserved_map(shared), 0, sizeof(uint64) * ((shared->reserved_bits + 63) / 64));

	share_leader_pages(ts, shared);
	if (!shared->leader_only && ts->guard_pruning && !tb_debug_unprotected)
	{
		if (!tb_guard_prunable_pages(rel, ts->resident, ts->nresident, &ts->pins,
									 reserved_map(shared), shared->reserved_bits,
									 ts->scratch))
			reason = "code in the leader may prune pages workers read";
		else if (ts->toast && !tb_toast_guard(rel, &ts->pins, ts->scratch))
			reason = "code in the leader may prune out-of-line values workers read";
	}
	shared->any_reserved = count_reserved(shared) > 0;
	if (reason == NULL && shared->any_reserved && !parallel_leader_participation)
		reason = "the leader keeps pages to itself but does not take part";

	if (reason != NULL)
	{
		ts->leader_only_reason = reason;
		shared->leader_only = true;
		shared->nleader_pages = 0;
		shared->any_reserved = false;
		tb_pinset_release(&ts->pins);
	}
	if (shared->any_reserved)
		ts->pages_kept += count_reserved(shared);
	ts->pages_pinned += ts->pins.npinned;
}

static void
setup_shared(TempScanState *ts, ParallelContext *pcxt, TempScanShared *shared)
{
	/* Workers wait on a flush only where the leader surely gets to it. */
	temp_scan_prepare(ts, parallel_leader_participation ?
					  ts->plan_flush_mode : TB_FLUSH_UPFRONT);
	reset_pass(ts);

	shared->nblocks = ts->nblocks;
	shared->chunk = chunk_size(ts->nblocks, pcxt->nworkers + 1);
	shared->leader_only = ts->leader_only_reason != NULL;
	shared->toast_private = ts->toast != NULL;
	pg_atomic_init_u64(&shared->range, RANGE(0, ts->nblocks));
	pg_atomic_init_u32(&shared->readable_below,
					   ts->flushing ? 0 : ALL_READABLE);
	pg_atomic_init_u32(&shared->leader_gone, 0);
	ConditionVariableInit(&shared->flush_progress);
	pg_atomic_init_u32(&shared->workers_started, 0);
	pg_atomic_init_u32(&shared->workers_refused, 0);
	pg_atomic_init_u32(&shared->refused_errno, 0);
	shared->leader_pages_offset = leader_pages_offset(pcxt->nworkers);
	shared->reserved_offset = reserved_offset(pcxt->nworkers, ts->leader_pages_room);
	shared->reserved_bits = ts->reserved_room;
	pg_atomic_init_u32(&shared->hazard_phase, HAZARD_IDLE);
	shared->hazard_block = InvalidBlockNumber;
	ts->hazard_served = false;
	guard_pages(ts, shared);
	shared->nworkers = pcxt->nworkers;
	memset(shared->counters, 0, sizeof(TempScanCounters) * (pcxt->nworkers + 1));
	ts->shared = shared;
	ts->pcxt = pcxt;
	ts->start_synced = false;

	/* Gather launches workers right after this: make it launch none. */
	if (shared->leader_only)
		pcxt->nworkers_to_launch = 0;
}

static void
temp_scan_initialize_dsm(CustomScanState *node, ParallelContext *pcxt,
						 void *coordinate)
{
	setup_shared((TempScanState *) node, pcxt, coordinate);
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
	setup_shared(ts, pcxt, coordinate);
}

static void
temp_scan_initialize_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	TempScanState *ts = (TempScanState *) node;

	ts->shared = coordinate;
	ts->prepared = true;
	reset_pass(ts);

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
			err = tb_leader_read_errno(ts->shared->leader_pid,
									   ts->leader_pages[0].desc_addr);
		ts->copies_from_leader = err == 0;
		if (!ts->copies_from_leader)
		{
			/* Before the count, a barrier: the leader reads it after. */
			if (err > 0)
				pg_atomic_write_u32(&ts->shared->refused_errno, err);
			pg_atomic_fetch_add_u32(&ts->shared->workers_refused, 1);
		}
	}
	pg_atomic_fetch_add_u32(&ts->shared->workers_started, 1);
	if (TB_HAZARD_PAUSES_READS(tb_debug_hazard))
	{
		tb_mid_read_hook = worker_meets_hazard;
		tb_mid_read_arg = ts;
	}

	if (ts->shared->toast_private)
	{
		TempScanCounters *counters = my_counters(ts);
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
 * Full scans, Temp Index Scans and Temp Bitmap Heap Scans of ours in the
 * plan flush their tables
 * now, before Gather launches the workers that read the files.
 */
static bool
flush_full_scans(PlanState *planstate, void *context)
{
	if (planstate == NULL)
		return false;
	if (IsA(planstate, CustomScanState) &&
		((CustomScanState *) planstate)->methods == &temp_scan_exec_methods)
	{
		TempScanState *ts = (TempScanState *) planstate;

		if (ts->awaits_run)
			flush_table(ts);
	}
	else if (tb_is_temp_index_scan_state(planstate))
		tb_temp_index_scan_flush(planstate);
	else if (tb_is_temp_bitmap_scan_state(planstate))
		tb_temp_bitmap_scan_flush(planstate);
	return planstate_tree_walker(planstate, flush_full_scans, context);
}

static ExecutorRun_hook_type prev_executor_run = NULL;

static void
temp_scan_executor_run(TB_EXECUTOR_RUN_PARAMS)
{
	if (tb_scans_awaiting_run > 0 && !IsParallelWorker())
		(void) flush_full_scans(queryDesc->planstate, NULL);
	if (prev_executor_run)
		prev_executor_run(TB_EXECUTOR_RUN_ARGS);
	else
		standard_ExecutorRun(TB_EXECUTOR_RUN_ARGS);
}

void
tb_install_executor_hooks(void)
{
	prev_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = temp_scan_executor_run;
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
		ts->page_source = "leader copies, file";
	else if (err != 0)
		ts->page_source = psprintf("file (leader copy denied: %s)", strerror(err));
	else
		ts->page_source = "file (workers declined copies: pg_tempbuf.debug_hazard)";
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
			finish_flush(ts, false);
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
	if (es->costs)
	{
		ExplainPropertyInteger("Flush Estimate Pages", NULL, ts->est_dirty_pages, es);
		ExplainPropertyFloat("Flush Estimate Cost", NULL, ts->est_flush_cost, 2, es);
	}
	if (!es->analyze)
		return;

	if (ts->partial && ts->totals)
		ExplainPropertyText("Flush Mode", flush_mode_names[ts->flush_mode], es);
	if (ts->page_source)
		ExplainPropertyText("Page Source", ts->page_source, es);
	ExplainPropertyInteger("Pages Flushed", NULL, ts->pages_flushed, es);
	if (es->timing)
		ExplainPropertyFloat("Flush Time", "ms", ts->flush_ms, 3, es);
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
		EXPLAIN_PER_PARTICIPANT("Pages Copied From Leader", leader_pages);
	if (waits > 0)
		EXPLAIN_PER_PARTICIPANT("Waits For Flush", waits);
#undef EXPLAIN_PER_PARTICIPANT
	if (rereads > 0)
		ExplainPropertyInteger("Page Rereads", NULL, rereads, es);
}
