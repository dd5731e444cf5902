/*-------------------------------------------------------------------------
 *
 * planner.c
 *	  The planner hooks: where core hands pg_tempbuf a statement to plan,
 *	  and each relation of it once core has its paths.
 *
 * Core's set_rel_consider_parallel() gives up on temporary tables, so
 * their paths are never parallel safe.  set_rel_pathlist_hook runs after
 * those paths exist; it redoes the rest of core's checks, marks the rel
 * consider_parallel and has paths of ours added (scan_paths.c,
 * index_paths.c).
 *
 * Children of a temporary partitioned (or inheritance) table, and the
 * members of a flattened UNION ALL, get the same paths; the first member
 * to get them also marks its ancestors consider_parallel, before core
 * builds their Append paths, so that Parallel Append and partial Append
 * are considered over temp partitions.
 *
 * A table may be read in several places of one plan: plan_walk.c then
 * makes every read of it go through our scan, or falls back.
 *
 * A join whose sides' cheapest paths are stock scans of temporary tables
 * gets parallel-safe paths too (join_paths.c).  Where no worker can pay,
 * none of this is done (worker_gate.c).
 *
 * The planner's files, each calling only those below it:
 *
 *	planner.c		the hooks: planner_hook, set_rel_pathlist_hook
 *	join_paths.c	set_join_pathlist_hook: parallel-safe paths for joins
 *	scan_paths.c	Temp Seq Scan paths, then index_paths.c's
 *	index_paths.c	Temp Index (Only) Scan and Temp Bitmap Heap Scan paths
 *	hidden_paths.c	paths kept out of core's join search, deferred ones
 *	query_facts.c	what the statement being planned is
 *	worker_gate.c	where a worker can pay
 *	plan_walk.c		one kind of read per temporary table in a finished plan
 *
 * and, for prices and plans, flush_cost.c and the scan nodes' files.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "optimizer/plancat.h"
#include "optimizer/planner.h"
#include "utils/lsyscache.h"

#include "compat.h"
#include "guc.h"
#include "hidden_paths.h"
#include "join_paths.h"
#include "plan_walk.h"
#include "planner.h"
#include "query_facts.h"
#include "scan_paths.h"
#include "shared_pool.h"
#include "worker_gate.h"

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;
static planner_hook_type prev_planner_hook = NULL;

static PlannedStmt *tb_planner(TB_PLANNER_PARAMS);
static void tb_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
								RangeTblEntry *rte);
static void offer_temp_paths(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte);

/*
 * Until this session creates a temporary table it has no temporary schema,
 * and there is nothing for us to do: the common case costs one test.
 */
static bool
session_has_temp_tables(void)
{
	Oid			temp_namespace;
	Oid			temp_toast_namespace;

	GetTempNamespaceState(&temp_namespace, &temp_toast_namespace);
	return OidIsValid(temp_namespace);
}

/*
 * Does code of another extension take part in building paths?  Then a
 * temporary table we mark consider_parallel may get stock parallel paths
 * from it, which the plan walk's safety net sends back for planning again
 * (plan_walk.c): keep the query to plan from.
 */
static bool
others_build_paths(void)
{
	return prev_set_rel_pathlist_hook != NULL || set_rel_pathlist_hook != tb_set_rel_pathlist ||
		prev_planner_hook != NULL || planner_hook != tb_planner ||
		TbRelationInfoHook != NULL || join_search_hook != NULL ||
		create_upper_paths_hook != NULL;
}

static PlannedStmt *
plan_with(TB_PLANNER_PARAMS)
{
	if (prev_planner_hook)
		return prev_planner_hook(TB_PLANNER_ARGS);
	return standard_planner(TB_PLANNER_ARGS);
}

/*
 * Plan without offering paths of ours: a statement (or one planned while
 * ours is, for a function it calls) where no worker can pay.
 */
static PlannedStmt *
plan_stock(TB_PLANNER_PARAMS)
{
	bool		engaged = tb_planning.engaged;
	PlannedStmt *result;

	if (!engaged)
		return plan_with(TB_PLANNER_ARGS);
	tb_planning.engaged = false;
	PG_TRY();
	{
		result = plan_with(TB_PLANNER_ARGS);
	}
	PG_FINALLY();
	{
		tb_planning.engaged = engaged;
	}
	PG_END_TRY();
	return result;
}

/*
 * Plan, then make the plan consistent about how it reads each temporary
 * table (plan_walk.c).  When a table is read both by a full scan of ours
 * and by a stock scan that cannot become ours (an index scan, say), plan
 * again without our paths for that table: the planner scribbles on its
 * input, hence the copy.
 */
static PlannedStmt *
tb_planner(TB_PLANNER_PARAMS)
{
	PlanningState saved = tb_planning;
	TbWorkerGate saved_gate = {NULL, NULL};
	TbHiddenPaths saved_hidden = {NULL, NULL, 0, NULL};
	PlannedStmt *result;
	Query	   *pristine = NULL;
	QueryFacts	facts = {0};

	/* A statement's start is a safe point to move the pool (shared_pool.c). */
	(void) tb_shared_pool_adopt();
	if (!tb_parallel_scan_enabled || !session_has_temp_tables())
		return plan_stock(TB_PLANNER_ARGS);

	tb_query_facts(parse, &facts);
	if (facts.temp_relids == NIL ||
		!(facts.may_use_workers || TbParallelForced()))
		return plan_stock(TB_PLANNER_ARGS);

	/* A statement of one query level asks once it gets paths of ours. */
	if (!facts.flat)
		facts.runs_opaque_code |= tb_outputs_user_types(parse);
	if (tb_may_need_replan(&facts) || others_build_paths())
		pristine = copyObject(parse);

	tb_planning.engaged = true;
	tb_planning.twice_relids = facts.twice_relids;
	tb_planning.all_twice = facts.cte_read_twice;
	tb_planning.excluded_relids = NIL;
	tb_planning.paths_offered = 0;
	tb_planning.inspects_storage = facts.inspects_storage;
	tb_planning.runs_opaque_code = facts.runs_opaque_code;
	tb_planning.code_facts_pending = facts.flat ? parse : NULL;
	/* Keep the state of a statement being planned around this one; start empty. */
	tb_worker_gate_swap(&saved_gate);
	tb_hidden_paths_swap(&saved_hidden);
	PG_TRY();
	{
		for (;;)
		{
			Oid			conflict;
			TbWorkerGate fresh_gate = {NULL, NULL};
			TbHiddenPaths fresh_hidden = {NULL, NULL, 0, NULL};

			result = plan_with(TB_PLANNER_ARGS);
			if (tb_planning.paths_offered == 0)
				break;
			conflict = tb_settle_temp_scans(result, tb_planning.inspects_storage,
											tb_planning.runs_opaque_code);
			if (!OidIsValid(conflict))
				break;
			/* tb_may_need_replan() said that this could not happen */
			if (pristine == NULL)
				elog(ERROR, "pg_tempbuf: plan reads temporary table %u through two scans, but was not expected to",
					 conflict);
			/* Each round excludes one more table: this terminates. */
			Assert(!list_member_oid(tb_planning.excluded_relids, conflict));
			elog(DEBUG1, "pg_tempbuf: planning again without parallel scans of relation %u, which the plan also reads through a stock scan",
				 conflict);
			tb_planning.excluded_relids =
				lappend_oid(tb_planning.excluded_relids, conflict);
			tb_planning.paths_offered = 0;
			parse = copyObject(pristine);
			/* A plan made again starts from nothing (its roots are new). */
			tb_worker_gate_swap(&fresh_gate);
			tb_hidden_paths_swap(&fresh_hidden);
		}
	}
	PG_FINALLY();
	{
		tb_planning = saved;
		tb_worker_gate_swap(&saved_gate);
		tb_hidden_paths_swap(&saved_hidden);
	}
	PG_END_TRY();

	return result;
}

/* Core's checks of a rel's own expressions, from set_rel_consider_parallel(). */
static bool
rel_expressions_parallel_safe(PlannerInfo *root, RelOptInfo *rel)
{
	return is_parallel_safe(root, (Node *) rel->baserestrictinfo) &&
		is_parallel_safe(root, (Node *) rel->reltarget->exprs);
}

/*
 * May the parent appendrel of rel, and its own parents, be parallel?  Core
 * left them not consider_parallel because a temporary table was among
 * their members: check what core would have checked otherwise, for a
 * temporary partitioned or inheritance parent and for a flattened UNION
 * ALL (see set_rel_consider_parallel()).
 */
static bool
appendrel_may_be_parallel(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte)
{
	if (rel->consider_parallel)
		return true;
	if (!rel_expressions_parallel_safe(root, rel))
		return false;
	if (rte->rtekind == RTE_RELATION)
		return get_rel_persistence(rte->relid) == RELPERSISTENCE_TEMP;
	if (rte->rtekind == RTE_SUBQUERY)
		return !limit_needed(castNode(Query, rte->subquery));
	return false;
}

/*
 * Let the Appends above rel, a member of an appendrel, be parallel: mark
 * its ancestors consider_parallel, as core would have if no temporary
 * table were among their members, before core builds their Append paths.
 * Core still ANDs every member's parallel safety into each Append path, so
 * a parent marked here yields no parallel path over a member we could not
 * handle.  Returns false, marking nothing, when an ancestor must stay
 * serial: then rel gets no paths of ours either, because core would build
 * a partial Append over them under a parent not meant to be parallel.
 */
static bool
mark_ancestors_parallel(PlannerInfo *root, RelOptInfo *rel)
{
	for (int pass = 0; pass < 2; pass++)
	{
		Index		relid = rel->relid;

		while (root->append_rel_array && root->append_rel_array[relid])
		{
			Index		parent_relid = root->append_rel_array[relid]->parent_relid;
			RelOptInfo *parent = root->simple_rel_array[parent_relid];

			if (pass == 0 &&
				(parent == NULL ||
				 !appendrel_may_be_parallel(root, parent,
											root->simple_rte_array[parent_relid])))
				return false;
			if (pass == 1)
				parent->consider_parallel = true;
			relid = parent_relid;
		}
	}
	return true;
}

/*
 * The hook.  Our paths go in before the hooks loaded ahead of us run, not
 * after: one that rebuilds a relation's paths with core's functions under
 * settings of its own (pg_hint_plan, for a hinted relation) then replaces
 * ours, and its hint means what it says, where settings it has already
 * restored could not have told our paths so.  Should it build stock
 * parallel paths of a temporary table we marked consider_parallel, the
 * plan check plans again without ours for that table (plan_walk.c).
 */
static void
tb_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
					RangeTblEntry *rte)
{
	offer_temp_paths(root, rel, rte);
	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);
}

/* Our paths for rel, where it is a temporary table (or a child of one). */
static void
offer_temp_paths(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte)
{
	/* Plain temporary tables, or partitions and children of one. */
	if (!tb_planning.engaged ||
		!tb_parallel_scan_enabled ||
		!root->glob->parallelModeOK ||
		rel->consider_parallel ||
		!(rel->reloptkind == RELOPT_BASEREL ||
		  rel->reloptkind == RELOPT_OTHER_MEMBER_REL) ||
		rte->rtekind != RTE_RELATION ||
		rte->relkind != RELKIND_RELATION ||
		rte->inh ||
		rte->tablesample != NULL ||
		IS_DUMMY_REL(rel) ||
		get_rel_persistence(rte->relid) != RELPERSISTENCE_TEMP ||
		list_member_oid(tb_planning.excluded_relids, rte->relid))
		return;

	if (!tb_level_may_use_workers(root) ||
		!rel_expressions_parallel_safe(root, rel))
		return;
	if (rel->reloptkind == RELOPT_OTHER_MEMBER_REL &&
		!mark_ancestors_parallel(root, rel))
		return;

	/*
	 * A statement of one query level: its expressions, preprocessed in
	 * place by now (constants folded, which only removes calls that will
	 * not run), are all in the query being planned.
	 */
	if (tb_planning.code_facts_pending)
		tb_planning_code_facts();

	/*
	 * A table no partial path can read, at the top level, is worth paths
	 * only as a parallel join's inner side: join_paths.c asks for them when
	 * a join may use them, and most statements never do (a small table
	 * joined to a big one through its index).
	 */
	if (tb_hides_paths(root, rel) && !tb_rel_may_be_partial(rel))
	{
		rel->consider_parallel = true;
		tb_planning.paths_offered++;
		tb_defer_safe_paths(root, rel);
		return;
	}
	tb_offer_paths(root, rel, rte);
}

void
tb_install_planner_hooks(void)
{
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = tb_set_rel_pathlist;
	tb_install_join_hook();
	prev_planner_hook = planner_hook;
	planner_hook = tb_planner;
}
