/*-------------------------------------------------------------------------
 *
 * temp_index_scan.c
 *	  Temp Index Scan: a btree index scan of a temporary table that runs in
 *	  parallel workers, "Custom Scan (Temp Index Scan)" in EXPLAIN.
 *
 * It stands where core would put an Index Scan or an Index Only Scan: the inner
 * side of a nested loop, rescanned with each outer row's keys, possibly
 * under Memoize; a range or equality lookup; an ordered read for a merge
 * join or ORDER BY ... LIMIT.  It is parallel safe; each participant runs
 * the whole scan it is given.  Its parallel-aware form ("Parallel Custom
 * Scan (Temp Index Scan)", for an unparameterized forward scan) shares the
 * leaves of its range (of each array element's, in turn) among the
 * participants instead, as core's Parallel Index Scan does: each leaf, and
 * the rows it points to, is read by one of them (btree_reader.c).
 *
 * Every participant, the leader included, descends the index and fetches
 * heap tuples through page_source.c (btree_reader.c): the leader reads its
 * own local buffers, workers private copies from the files, which the
 * leader flushes when the executor starts running the plan, before Gather
 * launches anyone.  Nobody sets hint bits, prunes or marks entries dead,
 * so nothing a worker reads changes but in ways it takes whole.  Visibility is decided on the copy by tb_tuple_visible(),
 * following HOT chains as heap_hot_search_buffer() does; out-of-line
 * values are fetched through toast_reader.c, by every participant alike.
 *
 * The plan keeps core's own Index Scan (or Index Only Scan) plan as its
 * one child in custom_plans, never executed: it holds the index quals as
 * the executor needs them (index columns on the left:
 * ExecIndexBuildScanKeys()), and it is what the node becomes again in a
 * plan that ended up serial (plan_walk.c).  The scan's quals are core's:
 * plan.qual is the stock scan's filter, and the index conditions
 * (indexqualorig, in custom_exprs) are checked on every row when
 * btree_reader.c scans a wider range than the keys ask for.
 *
 * The index-only form returns the index tuple's columns (custom_scan_tlist
 * is the Index Only Scan's indextlist, so that both number them alike),
 * and fetches the heap only for entries whose heap page the visibility map
 * does not say all visible, as core does.  The map is as exact for a
 * worker as for the leader: the leader writes it with the table before
 * workers start, and nothing changes it during a parallel query; every
 * participant reads it from the file.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/relscan.h"
#include "access/sysattr.h"
#include "access/visibilitymapdefs.h"
#include "executor/executor.h"
#include "executor/nodeIndexscan.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "btree_reader.h"
#include "compat.h"
#include "core_copies.h"
#include "guc.h"
#include "hazard_meet.h"
#include "heap_rows.h"
#include "leader_pages.h"
#include "localbuf_access.h"
#include "page_source.h"
#include "scan_run.h"
#include "temp_index_scan.h"
#include "toast_reader.h"
#include TB_EXPLAIN_FORMAT_HEADER

/* custom_private of the plan: positions of its members */
enum
{
	TIP_EST_DIRTY_PAGES,		/* planner's view of the pages to flush */
	TIP_EST_FLUSH_COST,
	TIP_LEADER_ONLY,			/* above Gather: reads local buffers, flushes nothing */
	TIP_GUARD_READS,			/* the leader may prune: workers compare file reads */
	TIP_LEADER_COPIES,			/* shared range: workers copy the leader's pages */
	TIP_POOL_READS,				/* not parallel aware: set when the plan runs, the leader wrote nothing */
	TIP_NUM_MEMBERS
};

/* A participant's counts, for EXPLAIN. */
typedef struct IndexScanCounts
{
	uint64		entries;		/* index entries returned */
	uint64		heap_fetches;	/* TIDs looked up */
} IndexScanCounts;

/*
 * The workers' counts, in the partial form's DSM chunk after the shared
 * range: each worker leaves its own when its scan ends, before Gather's
 * shutdown waits for it; the leader adds them up before the chunk goes.
 */
typedef struct IndexScanWorkerCounts
{
	TbHazardMeet hazard;		/* pg_tempbuf.debug_hazard */
	int			nworkers;
	IndexScanCounts counts[FLEXIBLE_ARRAY_MEMBER];	/* [i]: worker i */
} IndexScanWorkerCounts;

/*
 * With TIP_LEADER_COPIES, after the counts: the pages of the table and of
 * the index the leader held when the workers were launched, which they
 * copy from its memory (leader_pages.c).
 */

typedef struct TempIndexScanState
{
	CustomScanState css;
	TbScanRun	run;			/* leader: the flush when the plan runs */

	Relation	index;
	Oid			indexid;		/* from the plan's child, core's plan of the scan */
	List	   *indexqual;
	bool		index_only;
	bool		leader_only;	/* TIP_LEADER_ONLY */
	bool		guard_reads;	/* TIP_GUARD_READS */
	bool		plan_copies;	/* TIP_LEADER_COPIES: the segment has a TbLeaderPageList */
	bool		pool_reads;		/* TIP_POOL_READS, worker: the leader wrote nothing */
	bool		stays_out;		/* worker: takes no part of the range */
	TbLeaderPageSet leader_pages;	/* leader: listed for the workers */
	bool		hazard_served;	/* pg_tempbuf.debug_hazard, leader */
	bool		backward;		/* the stock plan's indexorderdir */
	ExprState  *index_conds;	/* indexqualorig, for rows of a wide range */

	/* core's scan keys, their runtime parts evaluated at each rescan */
	ScanKey		keys;
	int			nkeys;
	IndexRuntimeKeyInfo *runtime_keys;
	int			nruntime_keys;
	ExprContext *runtime_cxt;
	bool		keys_set;

	TbPageSource *pages;
	TbBtreeScan *btree;
	TbHeapRows	rows;

	/* index only: the visibility map page in hand */
	char	   *vm_page;
	char	   *vm_scratch;
	BlockNumber vm_block;		/* InvalidBlockNumber: none */
	BlockNumber vm_nblocks;		/* InvalidBlockNumber: not looked up yet */

	uint64		heap_fetches;	/* TIDs looked up, for EXPLAIN */

	/* partial form with workers: their counts (leader: summed over rescans) */
	IndexScanWorkerCounts *worker_counts;	/* in the DSM chunk */
	TbWorkerTotals worker_totals;	/* leader */
} TempIndexScanState;

static Node *index_scan_create_state(CustomScan *cscan);
static int64 index_scan_flush(CustomScanState *node);
static void index_scan_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *index_scan_exec(CustomScanState *node);
static void index_scan_end(CustomScanState *node);
static void index_scan_rescan(CustomScanState *node);
static void index_scan_explain(CustomScanState *node, List *ancestors,
							   ExplainState *es);
static Size index_scan_estimate_dsm(CustomScanState *node, ParallelContext *pcxt);
static void index_scan_initialize_dsm(CustomScanState *node, ParallelContext *pcxt,
									  void *coordinate);
static void index_scan_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt,
										void *coordinate);
static void index_scan_shutdown(CustomScanState *node);
static void publish_worker_counts(TempIndexScanState *is);
static void index_scan_initialize_worker(CustomScanState *node, shm_toc *toc,
										 void *coordinate);

static const CustomScanMethods index_scan_methods = {
	.CustomName = TB_TEMP_INDEX_SCAN_NAME,
	.CreateCustomScanState = index_scan_create_state,
};

static const CustomScanMethods index_only_scan_methods = {
	.CustomName = TB_TEMP_INDEX_ONLY_SCAN_NAME,
	.CreateCustomScanState = index_scan_create_state,
};

#define INDEX_SCAN_EXEC_METHODS \
	.BeginCustomScan = index_scan_begin, \
	.ExecCustomScan = index_scan_exec, \
	.EndCustomScan = index_scan_end, \
	.ReScanCustomScan = index_scan_rescan, \
	.EstimateDSMCustomScan = index_scan_estimate_dsm, \
	.InitializeDSMCustomScan = index_scan_initialize_dsm, \
	.ReInitializeDSMCustomScan = index_scan_reinitialize_dsm, \
	.InitializeWorkerCustomScan = index_scan_initialize_worker, \
	.ShutdownCustomScan = index_scan_shutdown, \
	.ExplainCustomScan = index_scan_explain

static const CustomExecMethods index_scan_exec_methods = {
	.CustomName = TB_TEMP_INDEX_SCAN_NAME,
	INDEX_SCAN_EXEC_METHODS
};

static const CustomExecMethods index_only_scan_exec_methods = {
	.CustomName = TB_TEMP_INDEX_ONLY_SCAN_NAME,
	INDEX_SCAN_EXEC_METHODS
};

void
tb_register_temp_index_scan(void)
{
	RegisterCustomScanMethods(&index_scan_methods);
	RegisterCustomScanMethods(&index_only_scan_methods);
	tb_scan_run_register(&index_scan_exec_methods);
	tb_scan_run_register(&index_only_scan_exec_methods);
}

bool
tb_is_temp_index_scan(Plan *plan)
{
	return IsA(plan, CustomScan) &&
		(((CustomScan *) plan)->methods == &index_scan_methods ||
		 ((CustomScan *) plan)->methods == &index_only_scan_methods);
}

/*
 * Code the leader runs may read the table too (a function above Gather):
 * it may prune a heap page and write it back while a worker reads the file
 * (page_source.c).
 */
void
tb_temp_index_scan_mark_guard_reads(CustomScan *cscan)
{
	Assert(tb_is_temp_index_scan(&cscan->scan.plan));
	lfirst(list_nth_cell(cscan->custom_private, TIP_GUARD_READS)) = makeInteger(true);
}

/* The Index Scan plan a Temp Index Scan carries. */
Plan *
tb_temp_index_scan_stock_plan(CustomScan *cscan)
{
	return linitial(cscan->custom_plans);
}

/*
 * The plan: stock is core's Index Scan or Index Only Scan of the same path
 * (see the file header); tlist and the filter are the stock scan's.  A
 * leader_only one stands above Gather for a stock Index Scan of a table
 * that workers read (plan_walk.c): it reads the leader's local buffers as
 * every participant's leader does, without setting a hint bit or pruning,
 * and has nothing to flush.
 */
Plan *
tb_make_temp_index_scan_plan(Scan *stock, List *tlist, List *indexqualorig,
							 int est_dirty_pages, double est_flush_cost,
							 bool leader_only, bool leader_copies)
{
	CustomScan *cscan = makeNode(CustomScan);

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = stock->plan.qual;
	cscan->scan.scanrelid = stock->scanrelid;
	cscan->flags = 0;
	cscan->custom_plans = list_make1(stock);
	cscan->custom_exprs = copyObject(indexqualorig);
	cscan->custom_private = lappend(list_make5(makeInteger(est_dirty_pages),
											   makeString(psprintf("%.2f", est_flush_cost)),
											   makeInteger(leader_only),
											   makeInteger(false),	/* TIP_GUARD_READS */
											   makeInteger(leader_copies)),
									makeInteger(false));	/* TIP_POOL_READS */
	cscan->methods = &index_scan_methods;
	if (IsA(stock, IndexOnlyScan))
	{
		cscan->custom_scan_tlist = copyObject(((IndexOnlyScan *) stock)->indextlist);
		cscan->methods = &index_only_scan_methods;
	}
	return &cscan->scan.plan;
}

static Node *
index_scan_create_state(CustomScan *cscan)
{
	TempIndexScanState *is = palloc0(sizeof(TempIndexScanState));

	NodeSetTag(is, T_CustomScanState);
	is->css.flags = cscan->flags;
	/*
	 * Tuples point into pages the scan keeps (a pinned buffer, a copy): a
	 * plain heap tuple slot, or the index tuple's columns.
	 */
	if (IsA(linitial(cscan->custom_plans), IndexOnlyScan))
	{
		IndexOnlyScan *stock = linitial(cscan->custom_plans);

		is->index_only = true;
		is->indexid = stock->indexid;
		is->indexqual = stock->indexqual;
		is->backward = ScanDirectionIsBackward(stock->indexorderdir);
		is->css.methods = &index_only_scan_exec_methods;
		TbSetScanSlotOps(&is->css, &TTSOpsVirtual);
	}
	else
	{
		IndexScan  *stock = castNode(IndexScan, linitial(cscan->custom_plans));

		is->indexid = stock->indexid;
		is->indexqual = stock->indexqual;
		is->backward = ScanDirectionIsBackward(stock->indexorderdir);
		is->css.methods = &index_scan_exec_methods;
		TbSetScanSlotOps(&is->css, &TTSOpsHeapTuple);
	}
	is->run.est_dirty_pages = intVal(list_nth(cscan->custom_private, TIP_EST_DIRTY_PAGES));
	is->run.est_flush_cost = strtod(strVal(list_nth(cscan->custom_private,
												 TIP_EST_FLUSH_COST)), NULL);
	is->leader_only = intVal(list_nth(cscan->custom_private, TIP_LEADER_ONLY));
	is->guard_reads = intVal(list_nth(cscan->custom_private, TIP_GUARD_READS));
	is->plan_copies = intVal(list_nth(cscan->custom_private, TIP_LEADER_COPIES));
	is->pool_reads = intVal(list_nth(cscan->custom_private, TIP_POOL_READS));
	tb_leader_pages_init(&is->leader_pages, is->plan_copies, is->guard_reads);
	return (Node *) is;
}

static void
index_scan_begin(CustomScanState *node, EState *estate, int eflags)
{
	TempIndexScanState *is = (TempIndexScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	LOCKMODE	lockmode = exec_rt_fetch(cscan->scan.scanrelid, estate)->rellockmode;
	IndexArrayKeyInfo *array_keys;
	int			narray_keys;

	is->index = index_open(is->indexid, lockmode);
	is->index_conds = ExecInitQual(cscan->custom_exprs, &node->ss.ps);
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;

	/* As ExecInitIndexScan() does; btree takes arrays itself. */
	ExecIndexBuildScanKeys(&node->ss.ps, is->index, is->indexqual, false,
						   &is->keys, &is->nkeys,
						   &is->runtime_keys, &is->nruntime_keys,
						   &array_keys, &narray_keys);
	if (is->nruntime_keys > 0)
	{
		ExprContext *stdecontext = node->ss.ps.ps_ExprContext;

		ExecAssignExprContext(estate, &node->ss.ps);
		is->runtime_cxt = node->ss.ps.ps_ExprContext;
		node->ss.ps.ps_ExprContext = stdecontext;
	}

	if (is->guard_reads && IsParallelWorker())
		tb_page_source_guard_file_reads();
	if (is->pool_reads && IsParallelWorker())
		tb_page_source_read_leader_pool(node->ss.ss_currentRelation);
	is->pages = tb_page_source_create(estate->es_query_cxt);
	is->btree = tb_btree_scan_begin(is->index, is->pages, estate->es_query_cxt);
	if (is->backward)
		tb_btree_scan_backward(is->btree);
	if (is->index_only)
	{
		is->vm_page = palloc(BLCKSZ);
		is->vm_scratch = palloc(BLCKSZ);
		is->vm_block = is->vm_nblocks = InvalidBlockNumber;
	}
	tb_heap_rows_init(&is->rows, &node->ss, TB_TEMP_INDEX_SCAN_NAME, !is->index_only);

	/*
	 * Workers read the files: the leader writes what is dirty when the
	 * executor runs the plan, before Gather launches them (as a full Temp
	 * Seq Scan does, and not here, for the same reason: see temp_scan.c).
	 */
	if (!IsParallelWorker())
		tb_scan_run_begin(&is->run, index_scan_flush, !is->leader_only);
}

static void
mark_pool_reads(CustomScan *cscan, bool pool_reads)
{
	Assert(list_length(cscan->custom_private) == TIP_NUM_MEMBERS);
	intVal(list_nth(cscan->custom_private, TIP_POOL_READS)) = pool_reads;
}

/* Leader: put the table, its index and its toast relation on disk. */
static int64
index_scan_flush(CustomScanState *node)
{
	TempIndexScanState *is = (TempIndexScanState *) node;
	Relation	rel = is->css.ss.ss_currentRelation;
	TbRelFileId heap_file = TbRelationFileId(rel);
	TbRelFileId index_file = TbRelationFileId(is->index);
	int64		pages;
	bool		copies = is->leader_pages.copies;

	/*
	 * Workers that copy the pages the leader holds need none written: a
	 * shared range's from the list, another scan's by looking the pool up
	 * (told so through the plan: it has no shared state).  The visibility
	 * map is written whatever they read: they take its bits from the file.
	 */
	if (!node->ss.ps.plan->parallel_aware)
	{
		copies = tb_leader_pages_serve_from_pool();
		mark_pool_reads((CustomScan *) node->ss.ps.plan, copies);
	}
	pages = 0;
	if (!copies)
	{
		pages += tb_flush_local_buffers(&heap_file, MAIN_FORKNUM);
		pages += tb_flush_local_buffers(&index_file, MAIN_FORKNUM);
		pages += tb_toast_flush(rel);
	}
	if (is->index_only)
		pages += tb_flush_local_buffers(&heap_file, VISIBILITYMAP_FORKNUM);
	return pages;
}

/*
 * The index entry's row, through the page source: in a worker, peeked at
 * in the leader's pool where it lies there unpinned, and read again should
 * the leader have given the buffer to another page meanwhile.
 */
static bool
fetch_heap_tuple(TempIndexScanState *is, ItemPointer tid, Snapshot snapshot)
{
	Relation	rel = is->css.ss.ss_currentRelation;
	BlockNumber blkno = ItemPointerGetBlockNumber(tid);
	OffsetNumber offnum = ItemPointerGetOffsetNumber(tid);
	TbPeek		peek;
	const char *peeked;

	is->heap_fetches++;
	peeked = tb_page_source_peek(is->pages, rel, blkno, &peek);
	if (peeked != NULL)
	{
		TbHotResult found = tb_heap_hot_search_peeked(&is->rows, rel, peeked, blkno,
													  offnum, snapshot, &peek);

		if (found != TB_HOT_MOVED)
			return found == TB_HOT_FOUND;
	}
	return tb_heap_hot_search(&is->rows, rel, tb_page_source_get(is->pages, rel, blkno),
							  blkno, offnum, snapshot);
}

/*
 * Does the visibility map say every tuple of heap_block visible to every
 * snapshot?  Read from the file, which the leader wrote (a map block past
 * its end says nothing: not all visible).
 */
static bool
heap_block_all_visible(TempIndexScanState *is, BlockNumber heap_block)
{
	Relation	rel = is->css.ss.ss_currentRelation;
	BlockNumber map_block = tb_vm_block(heap_block);

	if (is->vm_nblocks == InvalidBlockNumber)
	{
		SMgrRelation smgr = RelationGetSmgr(rel);

		is->vm_nblocks = smgrexists(smgr, VISIBILITYMAP_FORKNUM) ?
			smgrnblocks(smgr, VISIBILITYMAP_FORKNUM) : 0;
	}
	if (map_block >= is->vm_nblocks)
		return false;
	if (map_block != is->vm_block)
	{
		is->vm_block = InvalidBlockNumber;
		(void) tb_page_source_read_file(rel, VISIBILITYMAP_FORKNUM, map_block,
										is->vm_page, is->vm_scratch);
		is->vm_block = map_block;
	}
	return tb_vm_all_visible((Page) is->vm_page, heap_block);
}

/* Index only: the entry's columns, once its row is known visible. */
static void
store_index_tuple(TempIndexScanState *is, TupleTableSlot *slot)
{
	ExecClearTuple(slot);
	index_deform_tuple(tb_btree_scan_tuple(is->btree), RelationGetDescr(is->index),
					   slot->tts_values, slot->tts_isnull);
	ExecStoreVirtualTuple(slot);
}

static void
set_keys(TempIndexScanState *is)
{
	if (is->nruntime_keys > 0)
	{
		ResetExprContext(is->runtime_cxt);
		ExecIndexEvalRuntimeKeys(is->runtime_cxt, is->runtime_keys,
								 is->nruntime_keys);
	}
	tb_btree_scan_set_keys(is->btree, is->keys, is->nkeys);
	is->keys_set = true;
}

static TupleTableSlot *
index_scan_next(ScanState *ss)
{
	TempIndexScanState *is = (TempIndexScanState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	ExprContext *econtext = ss->ps.ps_ExprContext;
	ItemPointerData tid;

	/* A leader that has not run the plan yet (a subplan, say): nothing read. */
	tb_scan_run_flush_armed(&is->run, &is->css);
	if (is->stays_out)
		return ExecClearTuple(slot);
	if (!is->keys_set)
		set_keys(is);
	if (is->worker_counts && !is->hazard_served && !IsParallelWorker())
	{
		is->hazard_served = true;
		tb_hazard_serve_paused_read(&is->worker_counts->hazard,
								  ss->ss_currentRelation);
	}

	while (tb_btree_scan_next(is->btree, &tid))
	{
		CHECK_FOR_INTERRUPTS();
		if (is->index_only)
		{
			if (!heap_block_all_visible(is, ItemPointerGetBlockNumber(&tid)) &&
				!fetch_heap_tuple(is, &tid, ss->ps.state->es_snapshot))
				continue;
			store_index_tuple(is, slot);
		}
		else
		{
			if (!fetch_heap_tuple(is, &tid, ss->ps.state->es_snapshot))
				continue;
			tb_heap_rows_store(&is->rows, ss, slot);
		}
		econtext->ecxt_scantuple = slot;
		if (is->index_conds && !tb_btree_scan_exact(is->btree) &&
			!ExecQual(is->index_conds, econtext))
		{
			InstrCountFiltered2(&ss->ps, 1);
			ResetExprContext(econtext);
			continue;
		}
		return slot;
	}
	return ExecClearTuple(slot);
}

static bool
index_scan_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
index_scan_exec(CustomScanState *node)
{
	return ExecScan(&node->ss, index_scan_next, index_scan_recheck);
}

static void
index_scan_end(CustomScanState *node)
{
	TempIndexScanState *is = (TempIndexScanState *) node;

	tb_scan_run_end(&is->run);
	/* Gather waited for its workers before the plan ended: none reads now. */
	tb_leader_pages_release(&is->leader_pages);
	publish_worker_counts(is);
	if (is->pages)
		tb_page_source_close(is->pages);
	tb_heap_rows_end(&is->rows);
	if (is->index)
		index_close(is->index, NoLock);
}

static void
index_scan_rescan(CustomScanState *node)
{
	TempIndexScanState *is = (TempIndexScanState *) node;

	is->keys_set = false;
	ExecScanReScan(&node->ss);
}

/*
 * Parallel aware: the shared range lives in the DSM segment of the query.
 * Called for the leader when Gather launches workers; without any (no DSM)
 * the leader scans the whole range alone.
 */
#define WORKER_COUNTS_OFFSET MAXALIGN(tb_btree_shared_size())

static IndexScanWorkerCounts *
worker_counts(void *coordinate)
{
	return (IndexScanWorkerCounts *) ((char *) coordinate + WORKER_COUNTS_OFFSET);
}

static Size
worker_counts_size(int nworkers)
{
	return MAXALIGN(add_size(WORKER_COUNTS_OFFSET + offsetof(IndexScanWorkerCounts, counts),
							 mul_size(sizeof(IndexScanCounts), nworkers)));
}

static TbLeaderPageList *
leader_page_list(void *coordinate, int nworkers)
{
	return (TbLeaderPageList *) ((char *) coordinate + worker_counts_size(nworkers));
}

/*
 * Leader: the pages it holds now of the table, the index and the toast
 * relation and its index, listed for the workers.
 */
static Size
index_scan_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	TempIndexScanState *is = (TempIndexScanState *) node;
	Size		size = worker_counts_size(pcxt->nworkers);
	Relation	rels[4];
	int			ntoast;

	if (!is->plan_copies)
		return size;
	rels[0] = is->css.ss.ss_currentRelation;
	rels[1] = is->index;
	ntoast = tb_toast_relations_open(rels[0], rels + 2);
	size = add_size(size, tb_leader_pages_collect(&is->leader_pages, rels, 2 + ntoast));
	tb_toast_relations_close(rels + 2, ntoast);
	return size;
}

static void
index_scan_initialize_dsm(CustomScanState *node, ParallelContext *pcxt,
						  void *coordinate)
{
	TempIndexScanState *is = (TempIndexScanState *) node;

	tb_btree_shared_init(coordinate, true);
	tb_btree_scan_share(is->btree, coordinate);
	is->worker_counts = worker_counts(coordinate);
	tb_hazard_meet_init(&is->worker_counts->hazard);
	is->hazard_served = false;
	is->worker_counts->nworkers = pcxt->nworkers;
	memset(is->worker_counts->counts, 0, sizeof(IndexScanCounts) * pcxt->nworkers);
	if (is->plan_copies)
		tb_leader_pages_share(&is->leader_pages, leader_page_list(coordinate, pcxt->nworkers));
}

/* Worker: leave its counts where the leader finds them. */
static void
publish_worker_counts(TempIndexScanState *is)
{
	IndexScanCounts *mine;

	if (is->worker_counts == NULL || !IsParallelWorker() ||
		ParallelWorkerNumber >= is->worker_counts->nworkers)
		return;
	mine = &is->worker_counts->counts[ParallelWorkerNumber];
	mine->entries = tb_btree_scan_entries(is->btree);
	mine->heap_fetches = is->heap_fetches;
}

/* Leader: add the workers' counts to its totals, for EXPLAIN. */
static void
collect_worker_counts(TempIndexScanState *is)
{
	IndexScanWorkerCounts *shared = is->worker_counts;

	if (shared == NULL || IsParallelWorker())
		return;
	tb_worker_totals_add(&is->worker_totals, (uint64 *) shared->counts,
						 shared->nworkers, TB_COUNTERS(IndexScanCounts),
						 is->css.ss.ps.state->es_query_cxt);
}

/* Gather rescanned: the range starts over for the next set of workers. */
static void
index_scan_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt,
							void *coordinate)
{
	TempIndexScanState *is = (TempIndexScanState *) node;

	collect_worker_counts(is);
	tb_btree_shared_init(coordinate, false);
}

static void
index_scan_initialize_worker(CustomScanState *node, shm_toc *toc,
							 void *coordinate)
{
	TempIndexScanState *is = (TempIndexScanState *) node;

	tb_btree_scan_share(is->btree, coordinate);
	is->worker_counts = worker_counts(coordinate);
	if (is->plan_copies)
	{
		TbLeaderPageList *list = leader_page_list(coordinate, is->worker_counts->nworkers);

		is->stays_out = !tb_leader_pages_usable(list);
		if (!is->stays_out)
			tb_leader_pages_attach(list);
	}
	if (TB_HAZARD_PAUSES_READS(tb_debug_hazard))
	{
		tb_mid_read_hook = tb_hazard_worker_meets;
		tb_mid_read_arg = &is->worker_counts->hazard;
	}
}

/*
 * A worker at the end of its run, before it reports done; the leader
 * before the DSM segment goes, once Gather has waited for its workers.
 */
static void
index_scan_shutdown(CustomScanState *node)
{
	TempIndexScanState *is = (TempIndexScanState *) node;

	if (IsParallelWorker())
	{
		publish_worker_counts(is);
		return;
	}
	collect_worker_counts(is);
	is->worker_counts = NULL;
}

static void
index_scan_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	TempIndexScanState *is = (TempIndexScanState *) node;

	ExplainPropertyText("Index Name", RelationGetRelationName(is->index), es);
	/* Core's word for it ("Index Scan Backward" in text). */
	if (is->backward)
		ExplainPropertyText("Scan Direction", "Backward", es);
	tb_explain_scan_conds(node, ancestors, es, "Index Cond");
	tb_scan_run_explain_estimate(&is->run, es);
	if (!es->analyze || is->pages == NULL)
		return;
	tb_scan_run_explain_done(&is->run, es);
	/* A full scan's workers keep their counts: it has no shared memory. */
	if (is->worker_totals.counts == NULL)
	{
		ExplainPropertyInteger("Leader Index Entries", NULL,
							   tb_btree_scan_entries(is->btree), es);
		ExplainPropertyInteger("Leader Heap Fetches", NULL, is->heap_fetches, es);
		return;
	}
	ExplainPropertyText("Index Entries",
						tb_worker_totals_text(&is->worker_totals,
											  tb_btree_scan_entries(is->btree),
											  TB_COUNTER(IndexScanCounts, entries)), es);
	ExplainPropertyText("Heap Fetches",
						tb_worker_totals_text(&is->worker_totals, is->heap_fetches,
											  TB_COUNTER(IndexScanCounts, heap_fetches)), es);
}
