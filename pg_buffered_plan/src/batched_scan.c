/*-------------------------------------------------------------------------
 *
 * batched_scan.c
 *	  BatchedSeqScan: a heap sequential scan that works a batch at a time
 *	  without copying tuples.
 *
 * One batch is built in three tight loops instead of one interleaved
 * per-row loop: (1) heap_getnext() up to N tuples, across pages, keeping
 * one extra pin on every page the batch touches and one HeapTupleData
 * header per tuple, so each slot points straight into its pinned page;
 * (2) evaluate the quals over all N slots; (3) hand the qualifying rows to
 * the parent one call at a time.  Columns the quals deformed stay in the
 * slots, so the parent does not deform them again.
 *
 * Parallel-aware: a parallel Seq Scan is replaced too, sharing the table
 * AM's parallel block allocator through the custom scan DSM hooks, because
 * otherwise TPC-H scans, which the planner parallelises, would be left out.
 * Batching stays per process: each worker batches the blocks it is given.
 *
 * No backward scan and no mark/restore: the planner hook never puts this
 * node under a SCROLL cursor, and the planner never asks a Seq Scan to
 * mark.  Only read-only SELECT plans are rewritten, so EvalPlanQual never
 * reaches it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/value.h"
#include "storage/bufmgr.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "batched_scan.h"
#include "compat.h"
#include "guc.h"

#define BATCHED_SCAN_NAME	"BatchedSeqScan"

typedef struct BatchedScanState
{
	CustomScanState css;
	int			batch_size;		/* cap, fixed at plan time */
	int			limit;			/* size of the next batch (ramps up) */
	int			max_pins;		/* distinct pages one batch may pin */

	HeapTupleData *tuples;		/* headers; the data stays in the pages */
	TupleTableSlot **slots;		/* one heap slot per batch position */
	int			nslots;			/* slots allocated so far */
	int		   *selected;		/* positions whose tuples passed the quals */
	Buffer	   *pins;			/* our extra pin on each page of the batch */

	int			ntuples;		/* tuples in the current batch */
	int			nselected;
	int			next;			/* next entry of selected[] to return */
	int			npins;
	bool		eof;

	/* For EXPLAIN ANALYZE (this process only). */
	int64		nbatches;
	int64		tuples_read;
	int			max_pinned;
} BatchedScanState;

static Node *bs_create_state(CustomScan *cscan);
static void bs_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *bs_exec(CustomScanState *node);
static void bs_end(CustomScanState *node);
static void bs_rescan(CustomScanState *node);
static Size bs_estimate_dsm(CustomScanState *node, ParallelContext *pcxt);
static void bs_initialize_dsm(CustomScanState *node, ParallelContext *pcxt,
							  void *coordinate);
static void bs_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt,
								void *coordinate);
static void bs_initialize_worker(CustomScanState *node, shm_toc *toc,
								 void *coordinate);
static void bs_explain(CustomScanState *node, List *ancestors,
					   ExplainState *es);

static const CustomScanMethods batched_scan_plan_methods = {
	.CustomName = BATCHED_SCAN_NAME,
	.CreateCustomScanState = bs_create_state,
};

static const CustomExecMethods batched_scan_exec_methods = {
	.CustomName = BATCHED_SCAN_NAME,
	.BeginCustomScan = bs_begin,
	.ExecCustomScan = bs_exec,
	.EndCustomScan = bs_end,
	.ReScanCustomScan = bs_rescan,
	.EstimateDSMCustomScan = bs_estimate_dsm,
	.InitializeDSMCustomScan = bs_initialize_dsm,
	.ReInitializeDSMCustomScan = bs_reinitialize_dsm,
	.InitializeWorkerCustomScan = bs_initialize_worker,
	.ExplainCustomScan = bs_explain,
};

void
bp_register_batched_scan(void)
{
	/* By name, so that parallel workers can read the plan back. */
	RegisterCustomScanMethods(&batched_scan_plan_methods);
}

bool
bp_is_batched_scan(const Plan *plan)
{
	return IsA(plan, CustomScan) &&
		((const CustomScan *) plan)->methods == &batched_scan_plan_methods;
}

/*
 * Turn a finished (post-setrefs) Seq Scan into a BatchedSeqScan.  The scan
 * fields carry over unchanged: same relation, targetlist, quals, costs,
 * plan_node_id (used as the DSM key when parallel-aware) and params.
 */
CustomScan *
bp_make_batched_scan(Scan *seqscan, int batch_size)
{
	CustomScan *cscan = makeNode(CustomScan);

	Assert(IsA(seqscan, SeqScan));
	cscan->scan = *seqscan;
	cscan->scan.plan.type = T_CustomScan;
	cscan->flags = 0;
	cscan->custom_plans = NIL;
	cscan->custom_exprs = NIL;
	cscan->custom_private = list_make1(makeInteger(batch_size));
	cscan->custom_scan_tlist = NIL;
	cscan->custom_relids = bms_make_singleton(seqscan->scanrelid);
	cscan->methods = &batched_scan_plan_methods;
	return cscan;
}

static Node *
bs_create_state(CustomScan *cscan)
{
	BatchedScanState *st = palloc0(sizeof(BatchedScanState));

	NodeSetTag(st, T_CustomScanState);
	st->css.methods = &batched_scan_exec_methods;
	return (Node *) st;
}

static void
bs_begin(CustomScanState *node, EState *estate, int eflags)
{
	BatchedScanState *st = (BatchedScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	Relation	rel = node->ss.ss_currentRelation;

	if (eflags & (EXEC_FLAG_BACKWARD | EXEC_FLAG_MARK))
		elog(ERROR, "BatchedSeqScan supports neither backward scan nor mark/restore");

	/*
	 * ExecInitCustomScan built the scan slot, quals and projection for a
	 * virtual slot; ours are heap-tuple slots, so build them again for that
	 * slot type or the compiled quals would skip deforming.
	 */
	BpInitScanTupleSlot(estate, &node->ss, RelationGetDescr(rel),
						&TTSOpsHeapTuple);
	ExecAssignScanProjectionInfoWithVarno(&node->ss, cscan->scan.scanrelid);
	node->ss.ps.qual = ExecInitQual(cscan->scan.plan.qual, &node->ss.ps);

	st->batch_size = intVal(linitial(cscan->custom_private));
	st->limit = 1;

	/* Bound the pins one batch holds: wide or sparse rows mean many pages. */
	if (RelationUsesLocalBuffers(rel))
		st->max_pins = num_temp_buffers / 8;
	else
		st->max_pins = NBuffers / 64;
	st->max_pins = Max(1, Min(st->max_pins, st->batch_size));

	st->tuples = palloc(sizeof(HeapTupleData) * st->batch_size);
	st->slots = palloc0(sizeof(TupleTableSlot *) * st->batch_size);
	st->selected = palloc(sizeof(int) * st->batch_size);
	st->pins = palloc(sizeof(Buffer) * st->max_pins);
}

/* Drop the batch: the slots' pointers die with the pins. */
static void
bs_release_batch(BatchedScanState *st)
{
	int			i;

	for (i = 0; i < st->ntuples; i++)
		ExecClearTuple(st->slots[i]);
	for (i = 0; i < st->npins; i++)
		ReleaseBuffer(st->pins[i]);
	st->ntuples = st->nselected = st->next = st->npins = 0;
}

/* Slots are made as the ramp grows, so a tiny table never makes 2048. */
static void
bs_ensure_slots(BatchedScanState *st, int n)
{
	EState	   *estate = st->css.ss.ps.state;
	TupleDesc	desc = RelationGetDescr(st->css.ss.ss_currentRelation);
	MemoryContext oldcxt;

	if (st->nslots >= n)
		return;
	oldcxt = MemoryContextSwitchTo(estate->es_query_cxt);
	for (; st->nslots < n; st->nslots++)
		st->slots[st->nslots] = ExecInitExtraTupleSlot(estate, desc,
													   &TTSOpsHeapTuple);
	MemoryContextSwitchTo(oldcxt);
}

static void
bs_fill_batch(BatchedScanState *st)
{
	TableScanDesc scan = st->css.ss.ss_currentScanDesc;
	HeapScanDesc hscan = (HeapScanDesc) scan;
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	ExprState  *qual = st->css.ss.ps.qual;
	Buffer		last = InvalidBuffer;
	int			n = 0;
	int			k = 0;
	int			i;

	CHECK_FOR_INTERRUPTS();
	bs_ensure_slots(st, st->limit);

	/* 1: fetch, keeping a pin per page instead of copying tuples. */
	while (n < st->limit)
	{
		HeapTuple	tuple = heap_getnext(scan, ForwardScanDirection);

		if (tuple == NULL)
		{
			st->eof = true;
			break;
		}
		if (hscan->rs_cbuf != last)
		{
			last = hscan->rs_cbuf;
			IncrBufferRefCount(last);
			st->pins[st->npins++] = last;
		}
		st->tuples[n] = *tuple;
		ExecStoreHeapTuple(&st->tuples[n], st->slots[n], false);
		n++;
		/* End at a page boundary rather than pin past the budget. */
		if (st->npins >= st->max_pins)
			break;
	}
	st->ntuples = n;

	/* 2: quals over the whole batch. */
	if (qual == NULL)
	{
		for (i = 0; i < n; i++)
			st->selected[i] = i;
		k = n;
	}
	else
	{
		for (i = 0; i < n; i++)
		{
			econtext->ecxt_scantuple = st->slots[i];
			ResetExprContext(econtext);
			if (ExecQual(qual, econtext))
				st->selected[k++] = i;
			else
				InstrCountFiltered1(st, 1);
		}
	}
	st->nselected = k;
	st->next = 0;

	if (n > 0)
	{
		st->nbatches++;
		st->tuples_read += n;
		st->max_pinned = Max(st->max_pinned, st->npins);
	}
	st->limit = bp_next_batch_limit(st->limit, st->batch_size);
}

static TupleTableSlot *
bs_exec(CustomScanState *node)
{
	BatchedScanState *st = (BatchedScanState *) node;
	ProjectionInfo *proj = node->ss.ps.ps_ProjInfo;
	ExprContext *econtext = node->ss.ps.ps_ExprContext;

	if (!ScanDirectionIsForward(node->ss.ps.state->es_direction))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("BatchedSeqScan cannot scan backward")));

	/* Not parallel, or parallel without DSM (no workers): a plain scan. */
	if (node->ss.ss_currentScanDesc == NULL)
		node->ss.ss_currentScanDesc =
			BpTableBeginScan(node->ss.ss_currentRelation,
							 node->ss.ps.state->es_snapshot);

	/* Step 3: one qualifying row per call; refill when they run out. */
	while (st->next >= st->nselected)
	{
		bs_release_batch(st);
		if (st->eof)
			return NULL;
		bs_fill_batch(st);
	}

	{
		TupleTableSlot *slot = st->slots[st->selected[st->next++]];

		if (proj == NULL)
			return slot;
		econtext->ecxt_scantuple = slot;
		ResetExprContext(econtext);
		return ExecProject(proj);
	}
}

static void
bs_end(CustomScanState *node)
{
	BatchedScanState *st = (BatchedScanState *) node;

	bs_release_batch(st);
	if (node->ss.ss_currentScanDesc != NULL)
		table_endscan(node->ss.ss_currentScanDesc);
	node->ss.ss_currentScanDesc = NULL;
}

static void
bs_rescan(CustomScanState *node)
{
	BatchedScanState *st = (BatchedScanState *) node;

	bs_release_batch(st);
	st->eof = false;
	st->limit = 1;
	if (node->ss.ss_currentScanDesc != NULL)
		table_rescan(node->ss.ss_currentScanDesc, NULL);
}

static Size
bs_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	return table_parallelscan_estimate(node->ss.ss_currentRelation,
									   node->ss.ps.state->es_snapshot);
}

static void
bs_initialize_dsm(CustomScanState *node, ParallelContext *pcxt,
				  void *coordinate)
{
	ParallelTableScanDesc pscan = (ParallelTableScanDesc) coordinate;

	table_parallelscan_initialize(node->ss.ss_currentRelation, pscan,
								  node->ss.ps.state->es_snapshot);
	node->ss.ss_currentScanDesc =
		BpTableBeginScanParallel(node->ss.ss_currentRelation, pscan);
}

static void
bs_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt,
					void *coordinate)
{
	table_parallelscan_reinitialize(node->ss.ss_currentRelation,
									(ParallelTableScanDesc) coordinate);
}

static void
bs_initialize_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	node->ss.ss_currentScanDesc =
		BpTableBeginScanParallel(node->ss.ss_currentRelation,
								 (ParallelTableScanDesc) coordinate);
}

static void
bs_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	BatchedScanState *st = (BatchedScanState *) node;

	ExplainPropertyInteger("Batch Size", NULL, st->batch_size, es);
	if (es->analyze)
	{
		ExplainPropertyInteger("Batches", NULL, st->nbatches, es);
		ExplainPropertyFloat("Rows per Batch", NULL,
							 st->nbatches > 0 ?
							 (double) st->tuples_read / st->nbatches : 0.0,
							 1, es);
		ExplainPropertyInteger("Max Pinned Pages", NULL, st->max_pinned, es);
	}
}
