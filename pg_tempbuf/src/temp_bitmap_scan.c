/*-------------------------------------------------------------------------
 *
 * temp_bitmap_scan.c
 *	  Temp Bitmap Heap Scan: a bitmap heap scan of a temporary table that
 *	  runs in parallel workers, "Custom Scan (Temp Bitmap Heap Scan)" in
 *	  EXPLAIN.
 *
 * It stands where core would put a Bitmap Heap Scan over btree indexes
 * (BitmapAnd and BitmapOr included): the inner side of a join in a
 * parallel plan, parameterized nested-loop inners too.  It is parallel
 * safe: each participant runs the whole scan.  Its parallel-aware form
 * ("Parallel Custom Scan (Temp Bitmap Heap Scan)", unparameterized) shares
 * one bitmap, as core's Parallel Bitmap Heap Scan does: the first
 * participant to get there builds it in the query's DSA while the others
 * wait, then all take its pages from one shared iterator.
 *
 * The plan keeps core's Bitmap Heap Scan plan as its one child in
 * custom_plans, never executed (as the Temp Index Scan keeps its Index
 * Scan): its bitmapqualplan tree gives the index scans to run, with their
 * quals as ExecIndexBuildScanKeys() wants them, and it is what the node
 * becomes again in a plan that ended up serial (plan_walk.c).  plan.qual
 * is the stock scan's filter; custom_exprs its bitmapqualorig, evaluated
 * on the rows of a page the bitmap asks to recheck (lossy, or an index
 * range wider than its keys, tb_btree_scan_exact()).
 *
 * Each participant scans the indexes through btree_reader.c into a
 * private TIDBitmap (work_mem, lossy beyond), intersects or unites them
 * as the tree says, then reads the heap pages it names through
 * page_source.c: the leader its local buffers, workers the files, which
 * the leader flushes (table, every index, toast) when the executor runs
 * the plan, before Gather launches anyone.  The partial form's workers
 * may instead copy the pages of the table and its indexes that the leader
 * holds out of its memory (leader_pages.c): then the leader writes none.
 * Rows are found as the Temp Index Scan finds them (tb_heap_hot_search(),
 * tb_heap_rows_store()).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/parallel.h"
#include "executor/executor.h"
#include "executor/nodeIndexscan.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/tidbitmap.h"
#include "optimizer/optimizer.h"
#include "storage/condition_variable.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/dsa.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/wait_event.h"

#include "btree_reader.h"
#include "compat.h"
#include "heap_rows.h"
#include "leader_pages.h"
#include "localbuf_access.h"
#include "page_source.h"
#include "scan_run.h"
#include "temp_bitmap_scan.h"
#include "toast_reader.h"
#include TB_EXPLAIN_FORMAT_HEADER

/* custom_private of the plan: positions of its members */
enum
{
	TBP_EST_DIRTY_PAGES,		/* planner's view of the pages to flush */
	TBP_EST_FLUSH_COST,
	TBP_GUARD_READS,			/* the leader may prune: workers compare file reads */
	TBP_LEADER_COPIES,			/* partial: workers copy the leader's pages */
	TBP_POOL_READS,				/* not partial: set when the plan runs, the leader wrote nothing */
	TBP_NUM_MEMBERS
};

/* TIDs handed to tbm_add_tuples() at once */
#define TID_BATCH	256

/* A node of the stock bitmapqualplan tree: an index scan, an AND, an OR. */
typedef struct BitmapSource
{
	NodeTag		kind;			/* T_BitmapIndexScan, T_BitmapAnd, T_BitmapOr */
	List	   *children;		/* BitmapSource *, of an AND or an OR */

	/* an index scan */
	Relation	index;
	List	   *indexqual;
	ScanKey		keys;
	int			nkeys;
	IndexRuntimeKeyInfo *runtime_keys;
	int			nruntime_keys;
	TbPageSource *pages;
	TbBtreeScan *btree;
} BitmapSource;

/* A participant's counts, for EXPLAIN. */
typedef struct BitmapScanCounts
{
	uint64		index_entries;
	uint64		exact_pages;
	uint64		lossy_pages;
} BitmapScanCounts;

/*
 * The partial form's state in the query's DSM: the one bitmap, built by
 * whoever gets there first, and the workers' counts, which each leaves
 * when its scan ends and the leader adds up before the segment goes;
 * with TBP_LEADER_COPIES, after them, the leader's pages of the table and
 * its indexes (leader_pages.c).
 */
typedef enum SharedBitmapPhase
{
	SHARED_BITMAP_EMPTY,
	SHARED_BITMAP_BUILDING,
	SHARED_BITMAP_BUILT
} SharedBitmapPhase;

typedef struct SharedBitmap
{
	slock_t		mutex;
	SharedBitmapPhase phase;
	dsa_pointer iterator;		/* tbm_prepare_shared_iterate()'s, once built */
	ConditionVariable built;
	int			nworkers;
	BitmapScanCounts counts[FLEXIBLE_ARRAY_MEMBER];	/* [i]: worker i */
} SharedBitmap;

typedef struct TempBitmapScanState
{
	CustomScanState css;
	TbScanRun	run;			/* leader: the flush when the plan runs */

	BitmapSource *source;		/* the tree */
	List	   *indexes;		/* its index scans, BitmapSource *, in order */
	ExprState  *recheck_conds;	/* bitmapqualorig */
	ExprContext *runtime_cxt;	/* runtime keys of every index, if any */
	bool		has_runtime_keys;

	/* the bitmap of the current scan, in bitmap_cxt */
	MemoryContext bitmap_cxt;
	bool		built;
	TbBitmapIterator *iterator;
	SharedBitmap *shared;		/* partial, under a Gather with a DSM */
	TBMSharedIterator *shared_iterator;
	bool		have_page;
	BlockNumber blkno;
	bool		recheck;
	int			noffsets;		/* -1: lossy, every line pointer */
	int			next;			/* next offset (lossy) or its index */
	OffsetNumber offsets[MaxHeapTuplesPerPage];

	TbPageSource *heap_pages;
	TbHeapRows	rows;

	BitmapScanCounts mine;		/* for EXPLAIN, this process's */
	TbWorkerTotals worker_totals;	/* leader */

	bool		plan_copies;	/* TBP_LEADER_COPIES: the segment has a TbLeaderPageList */
	bool		stays_out;		/* worker: takes no part of the scan */
	TbLeaderPageSet leader_pages;	/* leader: listed for the workers */
} TempBitmapScanState;

static Node *bitmap_scan_create_state(CustomScan *cscan);
static int64 bitmap_scan_flush(CustomScanState *node);
static void bitmap_scan_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *bitmap_scan_exec(CustomScanState *node);
static void bitmap_scan_end(CustomScanState *node);
static void bitmap_scan_rescan(CustomScanState *node);
static void bitmap_scan_explain(CustomScanState *node, List *ancestors,
								ExplainState *es);
static Size bitmap_scan_estimate_dsm(CustomScanState *node, ParallelContext *pcxt);
static void bitmap_scan_initialize_dsm(CustomScanState *node, ParallelContext *pcxt,
									   void *coordinate);
static void bitmap_scan_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt,
										 void *coordinate);
static void bitmap_scan_initialize_worker(CustomScanState *node, shm_toc *toc,
										  void *coordinate);
static void bitmap_scan_shutdown(CustomScanState *node);

static const CustomScanMethods bitmap_scan_methods = {
	.CustomName = TB_TEMP_BITMAP_SCAN_NAME,
	.CreateCustomScanState = bitmap_scan_create_state,
};

static const CustomExecMethods bitmap_scan_exec_methods = {
	.CustomName = TB_TEMP_BITMAP_SCAN_NAME,
	.BeginCustomScan = bitmap_scan_begin,
	.ExecCustomScan = bitmap_scan_exec,
	.EndCustomScan = bitmap_scan_end,
	.ReScanCustomScan = bitmap_scan_rescan,
	.ExplainCustomScan = bitmap_scan_explain,
	.EstimateDSMCustomScan = bitmap_scan_estimate_dsm,
	.InitializeDSMCustomScan = bitmap_scan_initialize_dsm,
	.ReInitializeDSMCustomScan = bitmap_scan_reinitialize_dsm,
	.InitializeWorkerCustomScan = bitmap_scan_initialize_worker,
	.ShutdownCustomScan = bitmap_scan_shutdown,
};

void
tb_register_temp_bitmap_scan(void)
{
	RegisterCustomScanMethods(&bitmap_scan_methods);
	tb_scan_run_register(&bitmap_scan_exec_methods);
}

bool
tb_is_temp_bitmap_scan(Plan *plan)
{
	return IsA(plan, CustomScan) &&
		((CustomScan *) plan)->methods == &bitmap_scan_methods;
}

/* As tb_temp_index_scan_mark_guard_reads(). */
void
tb_temp_bitmap_scan_mark_guard_reads(CustomScan *cscan)
{
	Assert(tb_is_temp_bitmap_scan(&cscan->scan.plan));
	lfirst(list_nth_cell(cscan->custom_private, TBP_GUARD_READS)) = makeInteger(true);
}

/* The Bitmap Heap Scan plan a Temp Bitmap Heap Scan carries. */
Plan *
tb_temp_bitmap_scan_stock_plan(CustomScan *cscan)
{
	return linitial(cscan->custom_plans);
}

Plan *
tb_make_temp_bitmap_scan_plan(BitmapHeapScan *stock, List *tlist,
							  int est_dirty_pages, double est_flush_cost,
							  bool leader_copies)
{
	CustomScan *cscan = makeNode(CustomScan);

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = stock->scan.plan.qual;
	cscan->scan.scanrelid = stock->scan.scanrelid;
	cscan->flags = 0;
	cscan->custom_plans = list_make1(stock);
	cscan->custom_exprs = copyObject(stock->bitmapqualorig);
	cscan->custom_private = list_make5(makeInteger(est_dirty_pages),
									   makeString(psprintf("%.2f", est_flush_cost)),
									   makeInteger(false),	/* TBP_GUARD_READS */
									   makeInteger(leader_copies),
									   makeInteger(false)); /* TBP_POOL_READS */
	cscan->methods = &bitmap_scan_methods;
	return &cscan->scan.plan;
}

static Node *
bitmap_scan_create_state(CustomScan *cscan)
{
	TempBitmapScanState *bs = palloc0(sizeof(TempBitmapScanState));

	NodeSetTag(bs, T_CustomScanState);
	bs->css.flags = cscan->flags;
	bs->css.methods = &bitmap_scan_exec_methods;
	/* Rows point into pages the scan keeps (a pinned buffer, a copy). */
	TbSetScanSlotOps(&bs->css, &TTSOpsHeapTuple);
	bs->run.est_dirty_pages = intVal(list_nth(cscan->custom_private, TBP_EST_DIRTY_PAGES));
	bs->run.est_flush_cost = strtod(strVal(list_nth(cscan->custom_private,
												 TBP_EST_FLUSH_COST)), NULL);
	bs->plan_copies = intVal(list_nth(cscan->custom_private, TBP_LEADER_COPIES));
	tb_leader_pages_init(&bs->leader_pages, bs->plan_copies,
						 intVal(list_nth(cscan->custom_private, TBP_GUARD_READS)));
	return (Node *) bs;
}

/* The state of plan, a node of the bitmapqualplan tree, and its children. */
static BitmapSource *
init_source(TempBitmapScanState *bs, Plan *plan, EState *estate,
			LOCKMODE lockmode, bool explain_only)
{
	BitmapSource *src = palloc0(sizeof(BitmapSource));
	List	   *children = NIL;
	ListCell   *lc;

	src->kind = nodeTag(plan);
	switch (nodeTag(plan))
	{
		case T_BitmapAnd:
			children = ((BitmapAnd *) plan)->bitmapplans;
			break;
		case T_BitmapOr:
			children = ((BitmapOr *) plan)->bitmapplans;
			break;
		case T_BitmapIndexScan:
			{
				BitmapIndexScan *bis = (BitmapIndexScan *) plan;
				IndexArrayKeyInfo *array_keys;
				int			narray_keys;

				src->index = index_open(bis->indexid, lockmode);
				src->indexqual = bis->indexqual;
				bs->indexes = lappend(bs->indexes, src);
				if (explain_only)
					break;
				/* As ExecInitBitmapIndexScan() does; btree takes arrays itself. */
				ExecIndexBuildScanKeys(&bs->css.ss.ps, src->index, bis->indexqual, false,
									   &src->keys, &src->nkeys,
									   &src->runtime_keys, &src->nruntime_keys,
									   &array_keys, &narray_keys);
				if (narray_keys > 0)
					elog(ERROR, "Temp Bitmap Heap Scan of index \"%s\" got array keys it cannot evaluate",
						 RelationGetRelationName(src->index));
				bs->has_runtime_keys |= src->nruntime_keys > 0;
				src->pages = tb_page_source_create(estate->es_query_cxt);
				src->btree = tb_btree_scan_begin(src->index, src->pages,
												 estate->es_query_cxt);
				break;
			}
		default:
			elog(ERROR, "unrecognized node type in a bitmap tree: %d",
				 (int) nodeTag(plan));
	}
	foreach(lc, children)
		src->children = lappend(src->children,
								init_source(bs, lfirst(lc), estate, lockmode,
											explain_only));
	return src;
}

static void
bitmap_scan_begin(CustomScanState *node, EState *estate, int eflags)
{
	TempBitmapScanState *bs = (TempBitmapScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	BitmapHeapScan *stock = castNode(BitmapHeapScan, linitial(cscan->custom_plans));
	LOCKMODE	lockmode = exec_rt_fetch(cscan->scan.scanrelid, estate)->rellockmode;
	bool		explain_only = (eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0;

	if (intVal(list_nth(cscan->custom_private, TBP_GUARD_READS)) && IsParallelWorker())
		tb_page_source_guard_file_reads();
	if (intVal(list_nth(cscan->custom_private, TBP_POOL_READS)) && IsParallelWorker() &&
		!explain_only)
		tb_page_source_read_leader_pool(node->ss.ss_currentRelation);
	bs->recheck_conds = ExecInitQual(cscan->custom_exprs, &node->ss.ps);
	bs->source = init_source(bs, stock->scan.plan.lefttree, estate, lockmode,
							 explain_only);
	if (explain_only)
		return;
	if (bs->has_runtime_keys)
	{
		ExprContext *stdecontext = node->ss.ps.ps_ExprContext;

		ExecAssignExprContext(estate, &node->ss.ps);
		bs->runtime_cxt = node->ss.ps.ps_ExprContext;
		node->ss.ps.ps_ExprContext = stdecontext;
	}
	bs->bitmap_cxt = AllocSetContextCreate(estate->es_query_cxt,
										   "Temp Bitmap Heap Scan bitmap",
										   ALLOCSET_DEFAULT_SIZES);
	bs->heap_pages = tb_page_source_create(estate->es_query_cxt);
	tb_heap_rows_init(&bs->rows, &node->ss, TB_TEMP_BITMAP_SCAN_NAME, true);

	/* As the Temp Index Scan: the leader flushes when the plan runs. */
	if (!IsParallelWorker())
		tb_scan_run_begin(&bs->run, bitmap_scan_flush, true);
}

/* Leader: put the table, its indexes and its toast relation on disk. */
static int64
bitmap_scan_flush(CustomScanState *node)
{
	TempBitmapScanState *bs = (TempBitmapScanState *) node;
	Relation	rel = bs->css.ss.ss_currentRelation;
	TbRelFileId heap_file = TbRelationFileId(rel);
	int64		pages;
	ListCell   *lc;
	bool		copies = bs->leader_pages.copies;

	/* Workers that copy the pages the leader holds need none written. */
	if (!node->ss.ps.plan->parallel_aware)
	{
		CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

		copies = tb_leader_pages_serve_from_pool();
		Assert(list_length(cscan->custom_private) == TBP_NUM_MEMBERS);
		intVal(list_nth(cscan->custom_private, TBP_POOL_READS)) = copies;
	}
	pages = 0;
	if (!copies)
	{
		pages += tb_flush_local_buffers(&heap_file, MAIN_FORKNUM);
		foreach(lc, bs->indexes)
		{
			BitmapSource *src = lfirst(lc);
			TbRelFileId index_file = TbRelationFileId(src->index);

			pages += tb_flush_local_buffers(&index_file, MAIN_FORKNUM);
		}
	}
	if (!copies)
		pages += tb_toast_flush(rel);
	return pages;
}

/*
 * The TIDs src's index entries hold, or its children's, combined: in dsa
 * for a bitmap the participants share, else in private memory.
 */
static TIDBitmap *
build_bitmap(TempBitmapScanState *bs, BitmapSource *src, dsa_area *dsa)
{
	TIDBitmap  *tbm;
	ListCell   *lc;

	if (src->kind == T_BitmapIndexScan)
	{
		ItemPointerData tids[TID_BATCH];
		int			ntids = 0;
		bool		recheck;

		tbm = tbm_create(work_mem * 1024L, dsa);
		tb_btree_scan_set_keys(src->btree, src->keys, src->nkeys);
		/* A range wider than the keys: its rows are checked again. */
		recheck = !tb_btree_scan_exact(src->btree);
		while (tb_btree_scan_next(src->btree, &tids[ntids]))
		{
			bs->mine.index_entries++;
			if (++ntids == TID_BATCH)
			{
				CHECK_FOR_INTERRUPTS();
				tbm_add_tuples(tbm, tids, ntids, recheck);
				ntids = 0;
			}
		}
		if (ntids > 0)
			tbm_add_tuples(tbm, tids, ntids, recheck);
		return tbm;
	}

	tbm = build_bitmap(bs, linitial(src->children), dsa);
	for_each_from(lc, src->children, 1)
	{
		TIDBitmap  *other;

		/* As core's BitmapAnd: nothing more can match an empty AND. */
		if (src->kind == T_BitmapAnd && tbm_is_empty(tbm))
			break;
		other = build_bitmap(bs, lfirst(lc), dsa);
		if (src->kind == T_BitmapAnd)
			tbm_intersect(tbm, other);
		else
			tbm_union(tbm, other);
		tbm_free(other);
	}
	return tbm;
}

/*
 * Should this participant build the shared bitmap?  The first to ask
 * does; the others wait until it is built (core's
 * BitmapShouldInitializeSharedState()).
 */
static bool
builds_shared_bitmap(SharedBitmap *shared)
{
	SharedBitmapPhase phase;

	for (;;)
	{
		SpinLockAcquire(&shared->mutex);
		phase = shared->phase;
		if (phase == SHARED_BITMAP_EMPTY)
			shared->phase = SHARED_BITMAP_BUILDING;
		SpinLockRelease(&shared->mutex);
		if (phase != SHARED_BITMAP_BUILDING)
			break;
		ConditionVariableSleep(&shared->built, WAIT_EVENT_PARALLEL_BITMAP_SCAN);
	}
	ConditionVariableCancelSleep();
	return phase == SHARED_BITMAP_EMPTY;
}

/* The bitmap of this scan, with the keys of this rescan. */
static void
start_bitmap(TempBitmapScanState *bs)
{
	MemoryContext oldcxt;
	dsa_area   *dsa = bs->css.ss.ps.state->es_query_dsa;
	ListCell   *lc;

	if (bs->has_runtime_keys)
	{
		ResetExprContext(bs->runtime_cxt);
		foreach(lc, bs->indexes)
		{
			BitmapSource *src = lfirst(lc);

			if (src->nruntime_keys > 0)
				ExecIndexEvalRuntimeKeys(bs->runtime_cxt, src->runtime_keys,
										 src->nruntime_keys);
		}
	}
	MemoryContextReset(bs->bitmap_cxt);
	oldcxt = MemoryContextSwitchTo(bs->bitmap_cxt);
	bs->iterator = NULL;
	bs->shared_iterator = NULL;
	if (bs->shared == NULL || dsa == NULL)
		bs->iterator = TbBitmapBeginIterate(build_bitmap(bs, bs->source, NULL));
	else
	{
		/*
		 * The bitmap's memory in the DSA lives until the query's DSA goes
		 * (a rescan frees the iterator's share: bitmap_scan_reinitialize_dsm).
		 */
		if (builds_shared_bitmap(bs->shared))
		{
			dsa_pointer iterator =
				tbm_prepare_shared_iterate(build_bitmap(bs, bs->source, dsa));

			SpinLockAcquire(&bs->shared->mutex);
			bs->shared->iterator = iterator;
			bs->shared->phase = SHARED_BITMAP_BUILT;
			SpinLockRelease(&bs->shared->mutex);
			ConditionVariableBroadcast(&bs->shared->built);
		}
		bs->shared_iterator = tbm_attach_shared_iterate(dsa, bs->shared->iterator);
	}
	MemoryContextSwitchTo(oldcxt);
	bs->have_page = false;
	bs->built = true;
}

/* The next visible row of the current page into bs->rows, if any. */
static bool
next_row_on_page(TempBitmapScanState *bs, Snapshot snapshot)
{
	Relation	rel = bs->css.ss.ss_currentRelation;
	Page		page = tb_page_source_get(bs->heap_pages, rel, bs->blkno);

	if (bs->noffsets < 0)
	{
		/* Lossy: every tuple of the page, each one its chain's visible member or not. */
		while (bs->next <= PageGetMaxOffsetNumber(page))
		{
			OffsetNumber offnum = bs->next++;

			if (tb_heap_tuple_at(&bs->rows, rel, page, bs->blkno, offnum, snapshot))
				return true;
		}
		return false;
	}
	while (bs->next < bs->noffsets)
	{
		OffsetNumber offnum = bs->offsets[bs->next++];

		if (tb_heap_hot_search(&bs->rows, rel, page, bs->blkno, offnum, snapshot))
			return true;
	}
	return false;
}

static TupleTableSlot *
bitmap_scan_next(ScanState *ss)
{
	TempBitmapScanState *bs = (TempBitmapScanState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	ExprContext *econtext = ss->ps.ps_ExprContext;
	Snapshot	snapshot = ss->ps.state->es_snapshot;

	/* A leader that has not run the plan yet (a subplan, say): nothing read. */
	tb_scan_run_flush_armed(&bs->run, &bs->css);
	if (bs->stays_out)
		return ExecClearTuple(slot);
	if (!bs->built)
		start_bitmap(bs);

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (!bs->have_page)
		{
			if (bs->shared_iterator ?
				!TbBitmapSharedNextPage(bs->shared_iterator, &bs->blkno, bs->offsets,
										&bs->noffsets, &bs->recheck) :
				!TbBitmapNextPage(bs->iterator, &bs->blkno, bs->offsets,
								  &bs->noffsets, &bs->recheck))
				return ExecClearTuple(slot);
			if (bs->noffsets < 0)
			{
				bs->mine.lossy_pages++;
				bs->next = FirstOffsetNumber;
			}
			else
			{
				bs->mine.exact_pages++;
				bs->next = 0;
			}
			bs->have_page = true;
		}
		if (!next_row_on_page(bs, snapshot))
		{
			bs->have_page = false;
			continue;
		}
		tb_heap_rows_store(&bs->rows, ss, slot);
		econtext->ecxt_scantuple = slot;
		if (bs->recheck && bs->recheck_conds &&
			!ExecQual(bs->recheck_conds, econtext))
		{
			InstrCountFiltered2(&ss->ps, 1);
			ResetExprContext(econtext);
			continue;
		}
		return slot;
	}
}

static bool
bitmap_scan_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
bitmap_scan_exec(CustomScanState *node)
{
	return ExecScan(&node->ss, bitmap_scan_next, bitmap_scan_recheck);
}

static void
bitmap_scan_end(CustomScanState *node)
{
	TempBitmapScanState *bs = (TempBitmapScanState *) node;
	ListCell   *lc;

	tb_scan_run_end(&bs->run);
	/* Gather waited for its workers before the plan ended: none reads now. */
	tb_leader_pages_release(&bs->leader_pages);
	if (bs->heap_pages)
		tb_page_source_close(bs->heap_pages);
	tb_heap_rows_end(&bs->rows);
	foreach(lc, bs->indexes)
	{
		BitmapSource *src = lfirst(lc);

		if (src->pages)
			tb_page_source_close(src->pages);
		index_close(src->index, NoLock);
	}
}

/* New keys, or a new pass: the bitmap is made again. */
static void
bitmap_scan_rescan(CustomScanState *node)
{
	TempBitmapScanState *bs = (TempBitmapScanState *) node;

	bs->built = false;
	ExecScanReScan(&node->ss);
}

/* "a AND (b OR c)": the indexes of the tree, as core's plan nests them. */
static void
describe_source(BitmapSource *src, StringInfo out, bool nested)
{
	ListCell   *lc;

	if (src->kind == T_BitmapIndexScan)
	{
		appendStringInfoString(out, quote_identifier(RelationGetRelationName(src->index)));
		return;
	}
	if (nested)
		appendStringInfoChar(out, '(');
	foreach(lc, src->children)
	{
		if (foreach_current_index(lc) > 0)
			appendStringInfoString(out, src->kind == T_BitmapAnd ? " AND " : " OR ");
		describe_source(lfirst(lc), out, true);
	}
	if (nested)
		appendStringInfoChar(out, ')');
}

/*
 * The partial form's DSM chunk: the shared bitmap, then the workers'
 * counts, then, with copies, the leader's pages of the table and its
 * indexes, listed now.  Without one (Gather running no worker) the leader
 * scans alone.
 */
static Size
shared_bitmap_size(int nworkers)
{
	return MAXALIGN(add_size(offsetof(SharedBitmap, counts),
							 mul_size(sizeof(BitmapScanCounts), nworkers)));
}

static TbLeaderPageList *
leader_page_list(SharedBitmap *shared)
{
	return (TbLeaderPageList *) ((char *) shared + shared_bitmap_size(shared->nworkers));
}

static Size
bitmap_scan_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	TempBitmapScanState *bs = (TempBitmapScanState *) node;
	Size		size = shared_bitmap_size(pcxt->nworkers);
	Relation   *rels;
	int			nrels = 0;
	ListCell   *lc;

	int			ntoast;

	if (!bs->plan_copies)
		return size;
	/*
	 * The table, its indexes (a tree may scan one twice: listed once) and
	 * its toast relation and index.
	 */
	rels = palloc(sizeof(Relation) * (3 + list_length(bs->indexes)));
	rels[nrels++] = bs->css.ss.ss_currentRelation;
	foreach(lc, bs->indexes)
		rels[nrels++] = ((BitmapSource *) lfirst(lc))->index;
	ntoast = tb_toast_relations_open(bs->css.ss.ss_currentRelation, rels + nrels);
	size = add_size(size, tb_leader_pages_collect(&bs->leader_pages, rels, nrels + ntoast));
	tb_toast_relations_close(rels + nrels, ntoast);
	pfree(rels);
	return size;
}

static void
bitmap_scan_initialize_dsm(CustomScanState *node, ParallelContext *pcxt,
						   void *coordinate)
{
	TempBitmapScanState *bs = (TempBitmapScanState *) node;
	SharedBitmap *shared = (SharedBitmap *) coordinate;

	SpinLockInit(&shared->mutex);
	shared->phase = SHARED_BITMAP_EMPTY;
	shared->iterator = InvalidDsaPointer;
	ConditionVariableInit(&shared->built);
	shared->nworkers = pcxt->nworkers;
	memset(shared->counts, 0, sizeof(BitmapScanCounts) * pcxt->nworkers);
	bs->shared = shared;
	if (bs->plan_copies)
		tb_leader_pages_share(&bs->leader_pages, leader_page_list(shared));
}

/* Leader: add the workers' counts to its totals, for EXPLAIN. */
static void
collect_worker_counts(TempBitmapScanState *bs)
{
	SharedBitmap *shared = bs->shared;

	if (shared == NULL || IsParallelWorker())
		return;
	tb_worker_totals_add(&bs->worker_totals, (uint64 *) shared->counts,
						 shared->nworkers, TB_COUNTERS(BitmapScanCounts),
						 bs->css.ss.ps.state->es_query_cxt);
}

/* Gather rescanned: the next set of workers shares a bitmap built anew. */
static void
bitmap_scan_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt,
							 void *coordinate)
{
	TempBitmapScanState *bs = (TempBitmapScanState *) node;
	SharedBitmap *shared = (SharedBitmap *) coordinate;
	dsa_area   *dsa = node->ss.ps.state->es_query_dsa;

	collect_worker_counts(bs);
	if (dsa != NULL && DsaPointerIsValid(shared->iterator))
		tbm_free_shared_area(dsa, shared->iterator);
	shared->iterator = InvalidDsaPointer;
	shared->phase = SHARED_BITMAP_EMPTY;
}

static void
bitmap_scan_initialize_worker(CustomScanState *node, shm_toc *toc,
							  void *coordinate)
{
	TempBitmapScanState *bs = (TempBitmapScanState *) node;
	TbLeaderPageList *list;

	bs->shared = (SharedBitmap *) coordinate;
	if (!bs->plan_copies)
		return;
	list = leader_page_list(bs->shared);
	bs->stays_out = !tb_leader_pages_usable(list);
	if (!bs->stays_out)
		tb_leader_pages_attach(list);
}

/*
 * A worker at the end of its run leaves its counts; the leader takes them
 * before the DSM segment goes, once Gather has waited for its workers.
 */
static void
bitmap_scan_shutdown(CustomScanState *node)
{
	TempBitmapScanState *bs = (TempBitmapScanState *) node;

	if (bs->shared == NULL)
		return;
	if (IsParallelWorker())
	{
		if (ParallelWorkerNumber < bs->shared->nworkers)
			bs->shared->counts[ParallelWorkerNumber] = bs->mine;
		return;
	}
	collect_worker_counts(bs);
	bs->shared = NULL;
}

static void
bitmap_scan_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	TempBitmapScanState *bs = (TempBitmapScanState *) node;
	StringInfoData indexes;

	initStringInfo(&indexes);
	describe_source(bs->source, &indexes, false);
	ExplainPropertyText("Bitmap Indexes", indexes.data, es);
	tb_explain_scan_conds(node, ancestors, es, "Recheck Cond");
	tb_scan_run_explain_estimate(&bs->run, es);
	if (!es->analyze || bs->heap_pages == NULL)
		return;
	tb_scan_run_explain_done(&bs->run, es);
	/* The partial form's workers leave their counts in the DSM. */
	if (bs->worker_totals.counts != NULL)
	{
		TbWorkerTotals *totals = &bs->worker_totals;

		ExplainPropertyText("Index Entries",
							tb_worker_totals_text(totals, bs->mine.index_entries,
												  TB_COUNTER(BitmapScanCounts, index_entries)), es);
		ExplainPropertyText("Exact Heap Blocks",
							tb_worker_totals_text(totals, bs->mine.exact_pages,
												  TB_COUNTER(BitmapScanCounts, exact_pages)), es);
		ExplainPropertyText("Lossy Heap Blocks",
							tb_worker_totals_text(totals, bs->mine.lossy_pages,
												  TB_COUNTER(BitmapScanCounts, lossy_pages)), es);
		return;
	}
	/* A full scan's workers keep theirs, as the Temp Index Scan's. */
	ExplainPropertyInteger("Leader Index Entries", NULL, bs->mine.index_entries, es);
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		char	   *blocks = psprintf("exact=" UINT64_FORMAT " lossy=" UINT64_FORMAT,
									  bs->mine.exact_pages, bs->mine.lossy_pages);

		ExplainPropertyText("Leader Heap Blocks", blocks, es);
	}
	else
	{
		ExplainPropertyInteger("Leader Exact Heap Blocks", NULL, bs->mine.exact_pages, es);
		ExplainPropertyInteger("Leader Lossy Heap Blocks", NULL, bs->mine.lossy_pages, es);
	}
}
