/*-------------------------------------------------------------------------
 *
 * planner.c
 *	  Offer the planner a partial "Temp Seq Scan" path for temporary
 *	  tables, priced with the flush cost model.
 *
 * Core's set_rel_consider_parallel() gives up on temporary tables, so
 * their paths are never parallel safe.  set_rel_pathlist_hook runs after
 * those paths exist; it redoes the rest of core's checks, marks the rel
 * consider_parallel and adds one partial path of ours.  The stock paths
 * keep parallel_safe = false, so a stock scan of a temporary table never
 * lands in a worker; above our path core builds Gather / Gather Merge,
 * partial aggregation and parallel joins as usual.
 *
 * A table that the statement reads in more than one place gets no path:
 * the leader's other scan could set hint bits and write its pages while
 * workers read them.  planner_hook counts the references before planning,
 * and checks the finished plan again (SQL functions are inlined during
 * planning), switching a scan that slipped through to leader-only mode.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/sysattr.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/spccache.h"

#include "pg_tempbuf.h"

bool		tb_parallel_scan_enabled = true;

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;
static planner_hook_type prev_planner_hook = NULL;

/* Relation OIDs the statement being planned reads more than once. */
static List *relids_read_twice = NIL;

/*
 * Does the statement call a function that tells how a value is stored?
 * Our scans hand up out-of-line values fetched and decompressed, so those
 * would answer differently than in a serial plan.
 */
static bool inspects_storage = false;

static Plan *plan_temp_scan_path(PlannerInfo *root, RelOptInfo *rel,
								 CustomPath *best_path, List *tlist,
								 List *clauses, List *custom_plans);

static const CustomPathMethods temp_scan_path_methods = {
	.CustomName = TB_TEMP_SCAN_NAME,
	.PlanCustomPath = plan_temp_scan_path,
};

typedef struct RelidCount
{
	List	   *seen;
	List	   *twice;
	bool		inspects_storage;
} RelidCount;

static bool
is_storage_function(Oid funcid)
{
	switch (funcid)
	{
		case F_PG_COLUMN_SIZE:
		case F_PG_COLUMN_COMPRESSION:
#ifdef F_PG_COLUMN_TOAST_CHUNK_ID
		case F_PG_COLUMN_TOAST_CHUNK_ID:
#endif
			return true;
		default:
			return false;
	}
}

static bool
count_relids_walker(Node *node, void *context)
{
	RelidCount *count = (RelidCount *) context;

	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION)
		{
			if (list_member_oid(count->seen, rte->relid))
				count->twice = list_append_unique_oid(count->twice, rte->relid);
			else
				count->seen = lappend_oid(count->seen, rte->relid);
		}
		return false;
	}
	if (IsA(node, FuncExpr) && is_storage_function(((FuncExpr *) node)->funcid))
		count->inspects_storage = true;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, count_relids_walker, context,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, count_relids_walker, context);
}

/*
 * Mark our scans in a finished plan whose table the flat range table lists
 * more than once.  Subplans and initplans are walked from PlannedStmt.
 */
static void
mark_read_elsewhere_walker(Plan *plan, List *rtable)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	if (tb_is_temp_scan(plan))
	{
		CustomScan *cscan = (CustomScan *) plan;
		Oid			relid = rt_fetch(cscan->scan.scanrelid, rtable)->relid;
		int			refs = 0;

		foreach(lc, rtable)
		{
			RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

			if (rte->rtekind == RTE_RELATION && rte->relid == relid)
				refs++;
		}
		if (refs > 1)
			tb_temp_scan_mark_read_elsewhere(cscan);
	}
	mark_read_elsewhere_walker(plan->lefttree, rtable);
	mark_read_elsewhere_walker(plan->righttree, rtable);
	if (IsA(plan, Append))
		foreach(lc, ((Append *) plan)->appendplans)
			mark_read_elsewhere_walker(lfirst(lc), rtable);
	if (IsA(plan, MergeAppend))
		foreach(lc, ((MergeAppend *) plan)->mergeplans)
			mark_read_elsewhere_walker(lfirst(lc), rtable);
	if (IsA(plan, SubqueryScan))
		mark_read_elsewhere_walker(((SubqueryScan *) plan)->subplan, rtable);
	if (IsA(plan, CustomScan))
		foreach(lc, ((CustomScan *) plan)->custom_plans)
			mark_read_elsewhere_walker(lfirst(lc), rtable);
}

static PlannedStmt *
tb_planner(Query *parse, const char *query_string, int cursorOptions,
		   ParamListInfo boundParams)
{
	List	   *saved = relids_read_twice;
	bool		saved_inspects = inspects_storage;
	PlannedStmt *result;
	ListCell   *lc;

	relids_read_twice = NIL;
	inspects_storage = false;
	if (tb_parallel_scan_enabled)
	{
		RelidCount count = {NIL, NIL, false};

		count_relids_walker((Node *) parse, &count);
		relids_read_twice = count.twice;
		inspects_storage = count.inspects_storage;
	}

	PG_TRY();
	{
		if (prev_planner_hook)
			result = prev_planner_hook(parse, query_string, cursorOptions,
									   boundParams);
		else
			result = standard_planner(parse, query_string, cursorOptions,
									  boundParams);
	}
	PG_FINALLY();
	{
		relids_read_twice = saved;
		inspects_storage = saved_inspects;
	}
	PG_END_TRY();

	mark_read_elsewhere_walker(result->planTree, result->rtable);
	foreach(lc, result->subplans)
		mark_read_elsewhere_walker(lfirst(lc), result->rtable);
	return result;
}

/*
 * Columns the scan hands up or filters on.  System columns rule the path
 * out (our slot has none to give on every version); a varlena column, or
 * a whole-row reference to a table that has one, makes the scan toast
 * sensitive: its participants fetch out-of-line values themselves.
 */
static bool
scan_columns_supported(RelOptInfo *rel, Relation relation, bool *toast_sensitive)
{
	Bitmapset  *attrs = NULL;
	TupleDesc	desc = RelationGetDescr(relation);
	bool		any_toastable = false;
	int			x = -1;
	ListCell   *lc;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		/* Any storage: SET STORAGE PLAIN leaves old values out of line. */
		if (!att->attisdropped && att->attlen == -1)
			any_toastable = true;
	}

	pull_varattnos((Node *) rel->reltarget->exprs, rel->relid, &attrs);
	foreach(lc, rel->baserestrictinfo)
		pull_varattnos((Node *) lfirst_node(RestrictInfo, lc)->clause,
					   rel->relid, &attrs);

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
			Form_pg_attribute att = TupleDescAttr(desc, attno - 1);

			if (att->attlen == -1)
				*toast_sensitive = true;
		}
	}
	return true;
}

/* Core's get_parallel_divisor(), which costsize.c keeps static. */
static double
parallel_divisor(int parallel_workers)
{
	double		divisor = parallel_workers;

	if (parallel_leader_participation)
	{
		double		leader_contribution = 1.0 - (0.3 * parallel_workers);

		if (leader_contribution > 0)
			divisor += leader_contribution;
	}
	return divisor;
}

/*
 * A parallel seq scan's cost, plus the flush, paid once before the first
 * row: startup cost.
 */
static void
cost_temp_scan(Path *path, PlannerInfo *root, RelOptInfo *rel,
			   double flush_cost)
{
	double		spc_seq_page_cost;
	double		divisor = parallel_divisor(path->parallel_workers);
	Cost		startup_cost;
	Cost		cpu_run_cost;
	Cost		cpu_per_tuple;

	get_tablespace_page_costs(rel->reltablespace, NULL, &spc_seq_page_cost);

	path->rows = clamp_row_est(rel->rows / divisor);

	startup_cost = rel->baserestrictcost.startup + flush_cost;
	cpu_per_tuple = cpu_tuple_cost + rel->baserestrictcost.per_tuple;
	cpu_run_cost = cpu_per_tuple * rel->tuples / divisor;

	startup_cost += path->pathtarget->cost.startup;
	cpu_run_cost += path->pathtarget->cost.per_tuple * path->rows;

	path->startup_cost = startup_cost;
	path->total_cost = startup_cost + cpu_run_cost +
		spc_seq_page_cost * rel->pages;
}

static void
tb_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
					RangeTblEntry *rte)
{
	Relation	relation;
	CustomPath *cpath;
	int			dirty_pages;
	bool		toast_sensitive;
	bool		supported;
	int			parallel_workers;
	double		flush_cost;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);

	/* Plain temporary tables only: no children, no sampling. */
	if (!tb_parallel_scan_enabled ||
		!root->glob->parallelModeOK ||
		rel->reloptkind != RELOPT_BASEREL ||
		rte->rtekind != RTE_RELATION ||
		rte->relkind != RELKIND_RELATION ||
		rte->inh ||
		rte->tablesample != NULL ||
		rel->consider_parallel ||
		get_rel_persistence(rte->relid) != RELPERSISTENCE_TEMP ||
		list_member_oid(relids_read_twice, rte->relid))
		return;

	/* The rest of core's set_rel_consider_parallel(). */
	if (!is_parallel_safe(root, (Node *) rel->baserestrictinfo) ||
		!is_parallel_safe(root, (Node *) rel->reltarget->exprs))
		return;

	parallel_workers = compute_parallel_worker(rel, rel->pages, -1,
											   max_parallel_workers_per_gather);
	if (parallel_workers <= 0)
		return;

	/* The parser holds a lock on the table already. */
	relation = table_open(rte->relid, NoLock);
	if (RELATION_IS_OTHER_TEMP(relation))
	{
		table_close(relation, NoLock);
		return;
	}
	supported = scan_columns_supported(rel, relation, &toast_sensitive);
	if (toast_sensitive && inspects_storage)
		supported = false;
	flush_cost = tb_flush_cost(relation, &dirty_pages);

	/*
	 * Participants fetch out-of-line values through private pages of the
	 * toast relation, which the leader flushes first.  Reading them costs
	 * what a serial scan's detoasting costs, which core does not price
	 * either; only the flush is extra.
	 */
	if (supported && toast_sensitive)
	{
		int			toast_dirty = tb_toast_dirty_pages(relation);

		dirty_pages += toast_dirty;
		flush_cost += tb_write_page_cost * toast_dirty;
	}
	table_close(relation, NoLock);
	if (!supported)
		return;

	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = rel;
	cpath->path.pathtarget = rel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = true;
	cpath->path.parallel_safe = true;
	cpath->path.parallel_workers = parallel_workers;
	cpath->path.pathkeys = NIL;
	cpath->flags = 0;
	cpath->custom_paths = NIL;
	cpath->custom_private = tb_temp_scan_private(toast_sensitive, dirty_pages,
												 flush_cost);
	cpath->methods = &temp_scan_path_methods;
	cost_temp_scan(&cpath->path, root, rel, flush_cost);

	rel->consider_parallel = true;
	add_partial_path(rel, &cpath->path);
}

static Plan *
plan_temp_scan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
					List *tlist, List *clauses, List *custom_plans)
{
	/* Pseudoconstant quals went to a gating Result above us. */
	return tb_make_temp_scan_plan(rel->relid, tlist,
								  extract_actual_clauses(clauses, false),
								  best_path->custom_private);
}

void
tb_install_planner_hooks(void)
{
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = tb_set_rel_pathlist;
	prev_planner_hook = planner_hook;
	planner_hook = tb_planner;
}
