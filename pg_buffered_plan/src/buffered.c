/*-------------------------------------------------------------------------
 *
 * buffered.c
 *	  Buffered: a copying batch node above any tuple-returning plan node,
 *	  the seed article's first attempt.
 *
 * A child's slot is only valid until its next ExecProcNode call, so each
 * row pulled into a batch is copied as a MinimalTuple into a memory context
 * that is reset before the next batch, then handed up one per call.
 *
 * Rescan drops the batch and rescans the child (or lets it rescan itself
 * when its parameters changed), so nested-loop inner sides and correlated
 * subplans see fresh rows.  LIMIT needs nothing: batches ramp up from one
 * row.  Backward scan and mark/restore are not supported: the planner hook
 * never places the node under a SCROLL cursor nor as a merge join's inner
 * side, the only places that ask for them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/value.h"
#include "utils/memutils.h"

#include "buffered.h"
#include "compat.h"
#include "guc.h"

#define BUFFERED_NAME	"Buffered"

typedef struct BufferedState
{
	CustomScanState css;
	int			batch_size;		/* cap, fixed at plan time */
	int			limit;			/* size of the next batch (ramps up) */
	MemoryContext batch_cxt;	/* the batch's copies; reset per batch */
	MinimalTuple *tuples;
	TupleTableSlot *slot;		/* what we return: a minimal-tuple slot */
	int			ntuples;
	int			next;
	bool		eof;

	/* For EXPLAIN ANALYZE (this process only). */
	int64		nbatches;
	int64		rows;
} BufferedState;

static Node *bf_create_state(CustomScan *cscan);
static void bf_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *bf_exec(CustomScanState *node);
static void bf_end(CustomScanState *node);
static void bf_rescan(CustomScanState *node);
static void bf_explain(CustomScanState *node, List *ancestors,
					   ExplainState *es);

static const CustomScanMethods buffered_plan_methods = {
	.CustomName = BUFFERED_NAME,
	.CreateCustomScanState = bf_create_state,
};

static const CustomExecMethods buffered_exec_methods = {
	.CustomName = BUFFERED_NAME,
	.BeginCustomScan = bf_begin,
	.ExecCustomScan = bf_exec,
	.EndCustomScan = bf_end,
	.ReScanCustomScan = bf_rescan,
	.ExplainCustomScan = bf_explain,
};

void
bp_register_buffered(void)
{
	RegisterCustomScanMethods(&buffered_plan_methods);
}

bool
bp_is_buffered(const Plan *plan)
{
	return IsA(plan, CustomScan) &&
		((const CustomScan *) plan)->methods == &buffered_plan_methods;
}

/*
 * Put a Buffered node above a finished (post-setrefs) plan node.  The
 * child hangs off lefttree, not custom_plans, so EXPLAIN and ruleutils
 * treat it as the ordinary outer child: our custom_scan_tlist holds
 * OUTER_VAR references to the child's columns and our targetlist passes
 * them through (INDEX_VAR), so the parent sees the same row layout.
 */
CustomScan *
bp_make_buffered(Plan *child, int batch_size, int plan_node_id)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *scan_tlist = NIL;
	List	   *tlist = NIL;
	ListCell   *lc;

	foreach(lc, child->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Node	   *expr = (Node *) tle->expr;
		Var		   *outer = makeVar(OUTER_VAR, tle->resno, exprType(expr),
									exprTypmod(expr), exprCollation(expr), 0);
		Var		   *index = makeVar(INDEX_VAR, tle->resno, exprType(expr),
									exprTypmod(expr), exprCollation(expr), 0);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) outer, tle->resno,
											 tle->resname, tle->resjunk));
		tlist = lappend(tlist,
						makeTargetEntry((Expr *) index, tle->resno,
										tle->resname, tle->resjunk));
	}

	/* Costs, rows, width, parallel safety and any newer Plan fields. */
	cscan->scan.plan = *child;
	cscan->scan.plan.type = T_CustomScan;
	cscan->scan.plan.plan_node_id = plan_node_id;
	cscan->scan.plan.parallel_aware = false;
	cscan->scan.plan.async_capable = false;
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = NIL;
	cscan->scan.plan.lefttree = child;
	cscan->scan.plan.righttree = NULL;
	cscan->scan.plan.initPlan = NIL;
	/* The child's params are ours: rescans must reach it. */
	cscan->scan.plan.extParam = bms_copy(child->extParam);
	cscan->scan.plan.allParam = bms_copy(child->allParam);
	cscan->scan.scanrelid = 0;

	cscan->flags = 0;
	cscan->custom_plans = NIL;
	cscan->custom_exprs = NIL;
	cscan->custom_private = list_make1(makeInteger(batch_size));
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_relids = NULL;
	cscan->methods = &buffered_plan_methods;
	return cscan;
}

static Node *
bf_create_state(CustomScan *cscan)
{
	BufferedState *st = palloc0(sizeof(BufferedState));

	NodeSetTag(st, T_CustomScanState);
	st->css.methods = &buffered_exec_methods;
	return (Node *) st;
}

static void
bf_begin(CustomScanState *node, EState *estate, int eflags)
{
	BufferedState *st = (BufferedState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	if (eflags & (EXEC_FLAG_BACKWARD | EXEC_FLAG_MARK))
		elog(ERROR, "Buffered supports neither backward scan nor mark/restore");
	if (node->ss.ps.ps_ProjInfo != NULL)
		elog(ERROR, "Buffered node must not project");

	outerPlanState(node) = ExecInitNode(outerPlan(cscan), estate, eflags);

	st->batch_size = intVal(linitial(cscan->custom_private));
	st->limit = 1;
	st->tuples = palloc(sizeof(MinimalTuple) * st->batch_size);
	st->batch_cxt = AllocSetContextCreate(CurrentMemoryContext,
										  "Buffered batch",
										  ALLOCSET_DEFAULT_SIZES);

	/*
	 * Rows come back as minimal tuples in our own slot; tell the parent,
	 * which compiles its expressions for the slot type we declare.
	 */
	st->slot = ExecInitExtraTupleSlot(estate,
									  node->ss.ss_ScanTupleSlot->tts_tupleDescriptor,
									  &TTSOpsMinimalTuple);
	node->ss.ps.resultops = &TTSOpsMinimalTuple;
	node->ss.ps.resultopsfixed = true;
	node->ss.ps.resultopsset = true;
}

static void
bf_reset_batch(BufferedState *st)
{
	ExecClearTuple(st->slot);
	MemoryContextReset(st->batch_cxt);
	st->ntuples = st->next = 0;
}

static TupleTableSlot *
bf_exec(CustomScanState *node)
{
	BufferedState *st = (BufferedState *) node;
	PlanState  *child = outerPlanState(node);

	if (!ScanDirectionIsForward(node->ss.ps.state->es_direction))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("Buffered plan node cannot scan backward")));

	if (st->next < st->ntuples)
		return ExecStoreMinimalTuple(st->tuples[st->next++], st->slot, false);
	if (st->eof)
		return ExecClearTuple(st->slot);

	CHECK_FOR_INTERRUPTS();
	bf_reset_batch(st);
	while (st->ntuples < st->limit)
	{
		TupleTableSlot *slot = ExecProcNode(child);
		MemoryContext oldcxt;

		if (TupIsNull(slot))
		{
			st->eof = true;
			break;
		}
		oldcxt = MemoryContextSwitchTo(st->batch_cxt);
		st->tuples[st->ntuples++] = ExecCopySlotMinimalTuple(slot);
		MemoryContextSwitchTo(oldcxt);
	}
	st->limit = bp_next_batch_limit(st->limit, st->batch_size);
	if (st->ntuples == 0)
		return ExecClearTuple(st->slot);
	st->nbatches++;
	st->rows += st->ntuples;
	return ExecStoreMinimalTuple(st->tuples[st->next++], st->slot, false);
}

static void
bf_end(CustomScanState *node)
{
	BufferedState *st = (BufferedState *) node;

	bf_reset_batch(st);
	MemoryContextDelete(st->batch_cxt);
	ExecEndNode(outerPlanState(node));
}

static void
bf_rescan(CustomScanState *node)
{
	BufferedState *st = (BufferedState *) node;
	PlanState  *child = outerPlanState(node);

	bf_reset_batch(st);
	st->eof = false;
	st->limit = 1;
	/* With changed params the child rescans itself on its next call. */
	if (child->chgParam == NULL)
		ExecReScan(child);
}

static void
bf_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	BufferedState *st = (BufferedState *) node;

	ExplainPropertyInteger("Batch Size", NULL, st->batch_size, es);
	if (es->analyze)
	{
		ExplainPropertyInteger("Batches", NULL, st->nbatches, es);
		ExplainPropertyFloat("Rows per Batch", NULL,
							 st->nbatches > 0 ?
							 (double) st->rows / st->nbatches : 0.0,
							 1, es);
	}
}
