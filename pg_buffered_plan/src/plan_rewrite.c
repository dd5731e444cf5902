/*-------------------------------------------------------------------------
 *
 * plan_rewrite.c
 *	  planner_hook that places the batching nodes into a finished plan.
 *
 * Why rewrite the finished plan rather than offer paths from
 * set_rel_pathlist_hook: the batching nodes should change how a plan runs,
 * not which plan is chosen.  Rewriting after standard_planner keeps join
 * order, join methods and parallelism exactly as stock, so a difference in
 * speed or in results can only come from the nodes themselves; it is also
 * the only way to put a Buffered node above every other node, as the seed
 * article does.  With batch_size = 0 the hook returns the stock plan
 * untouched.
 *
 * Only read-only SELECT plans are rewritten: no ModifyTable, no LockRows,
 * no row marks (so EvalPlanQual never meets our nodes), and not for SCROLL
 * cursors, which need backward scans our nodes do not offer.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "batched_scan.h"
#include "buffered.h"
#include "compat.h"
#include "guc.h"
#include "plan_rewrite.h"

typedef struct RewriteContext
{
	PlannedStmt *stmt;
	int			batch_size;
	bool		buffer_all;
	int			last_plan_node_id;
} RewriteContext;

static planner_hook_type prev_planner_hook = NULL;

static PlannedStmt *bp_planner(BP_PLANNER_PARAMS);

void
bp_install_planner_hook(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = bp_planner;
}

/*
 * The plan children an executor pulls tuples from with ExecProcNode, or
 * that contain such nodes.  Bitmap index trees are left out (they return
 * bitmaps), and so are the children of Foreign and Custom scans (their
 * providers own them).
 */
typedef void (*ChildVisitor) (Plan **childp, bool may_buffer, void *arg);

static void
visit_children(Plan *plan, ChildVisitor visit, void *arg)
{
	ListCell   *lc;

	switch (nodeTag(plan))
	{
		case T_BitmapHeapScan:
		case T_BitmapAnd:
		case T_BitmapOr:
		case T_ForeignScan:
		case T_CustomScan:
			return;
		case T_Append:
			foreach(lc, ((Append *) plan)->appendplans)
				visit((Plan **) &lfirst(lc), true, arg);
			return;
		case T_MergeAppend:
			foreach(lc, ((MergeAppend *) plan)->mergeplans)
				visit((Plan **) &lfirst(lc), true, arg);
			return;
		case T_SubqueryScan:
			visit(&((SubqueryScan *) plan)->subplan, true, arg);
			return;
		case T_MergeJoin:
			/* The inner side must mark and restore its position. */
			visit(&plan->lefttree, true, arg);
			visit(&plan->righttree, false, arg);
			return;
		default:
			if (plan->lefttree)
				visit(&plan->lefttree, true, arg);
			if (plan->righttree)
				visit(&plan->righttree, true, arg);
			return;
	}
}

/* Pre-pass: is the whole tree read-only, and what ids are taken? */
typedef struct CheckContext
{
	bool		read_only;
	int			max_plan_node_id;
} CheckContext;

static void
check_plan(Plan **planp, bool may_buffer, void *arg)
{
	CheckContext *cc = (CheckContext *) arg;
	Plan	   *plan = *planp;

	if (plan == NULL)
		return;
	if (IsA(plan, ModifyTable) || IsA(plan, LockRows))
		cc->read_only = false;
	cc->max_plan_node_id = Max(cc->max_plan_node_id, plan->plan_node_id);
	visit_children(plan, check_plan, arg);
}

/* A Seq Scan we can batch: a plain heap table (we call heap_getnext). */
static bool
is_heap_seqscan(Plan *plan, PlannedStmt *stmt)
{
	Index		scanrelid;
	RangeTblEntry *rte;
	HeapTuple	tp;
	Oid			relam;

	if (!IsA(plan, SeqScan))
		return false;
	scanrelid = ((Scan *) plan)->scanrelid;
	rte = rt_fetch(scanrelid, stmt->rtable);
	if (rte->rtekind != RTE_RELATION)
		return false;
	tp = SearchSysCache1(RELOID, ObjectIdGetDatum(rte->relid));
	if (!HeapTupleIsValid(tp))
		return false;
	relam = ((Form_pg_class) GETSTRUCT(tp))->relam;
	ReleaseSysCache(tp);
	return relam == HEAP_TABLE_AM_OID;
}

/*
 * A childless Result, possibly under Gather or Material: a plan for a
 * plain expression.  PL/pgSQL looks into such plans for its "simple
 * expressions" and knows no other node types; batching one row is moot.
 */
static bool
is_expression_plan(Plan *plan)
{
	if (IsA(plan, Gather) || IsA(plan, Material))
		return plan->lefttree != NULL && is_expression_plan(plan->lefttree);
	return IsA(plan, Result) && plan->lefttree == NULL;
}

/*
 * Not above nodes a parent reaches other than through ExecProcNode, nor
 * above ours, nor above expression plans.
 */
static bool
may_wrap(Plan *plan)
{
	if (is_expression_plan(plan))
		return false;
	switch (nodeTag(plan))
	{
		case T_Hash:			/* HashJoin casts its inner to HashState */
		case T_BitmapIndexScan:
		case T_BitmapAnd:
		case T_BitmapOr:
			return false;
		case T_CustomScan:
			return !bp_is_buffered(plan) && !bp_is_batched_scan(plan);
		default:
			/* Append drives async-capable children its own way. */
			return !plan->async_capable;
	}
}

static void
rewrite_plan(Plan **planp, bool may_buffer, void *arg)
{
	RewriteContext *cxt = (RewriteContext *) arg;
	Plan	   *plan = *planp;

	if (plan == NULL)
		return;
	visit_children(plan, rewrite_plan, arg);

	if (is_heap_seqscan(plan, cxt->stmt))
		*planp = (Plan *) bp_make_batched_scan((Scan *) plan, cxt->batch_size);
	else if (cxt->buffer_all && may_buffer && may_wrap(plan))
		*planp = (Plan *) bp_make_buffered(plan, cxt->batch_size,
										   ++cxt->last_plan_node_id);
}

static bool
plan_is_rewritable(PlannedStmt *stmt, int cursorOptions, CheckContext *cc)
{
	ListCell   *lc;

	if (stmt->commandType != CMD_SELECT || stmt->hasModifyingCTE ||
		stmt->rowMarks != NIL || (cursorOptions & CURSOR_OPT_SCROLL))
		return false;

	cc->read_only = true;
	cc->max_plan_node_id = 0;
	check_plan(&stmt->planTree, true, cc);
	foreach(lc, stmt->subplans)
		check_plan((Plan **) &lfirst(lc), true, cc);
	return cc->read_only;
}

static PlannedStmt *
bp_planner(BP_PLANNER_PARAMS)
{
	PlannedStmt *stmt;
	CheckContext cc;
	RewriteContext cxt;
	ListCell   *lc;

	if (prev_planner_hook)
		stmt = prev_planner_hook(BP_PLANNER_ARGS);
	else
		stmt = standard_planner(BP_PLANNER_ARGS);

	if (bp_batch_size <= 0 || !plan_is_rewritable(stmt, cursorOptions, &cc))
		return stmt;

	cxt.stmt = stmt;
	cxt.batch_size = bp_batch_size;
	cxt.buffer_all = (bp_placement == BP_PLACEMENT_ALL);
	/* New nodes need unique ids: parallel query keys DSM chunks by them. */
	cxt.last_plan_node_id = cc.max_plan_node_id;

	rewrite_plan(&stmt->planTree, true, &cxt);
	foreach(lc, stmt->subplans)
		rewrite_plan((Plan **) &lfirst(lc), true, &cxt);
	return stmt;
}
