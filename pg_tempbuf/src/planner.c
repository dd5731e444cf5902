/*-------------------------------------------------------------------------
 *
 * planner.c
 *	  Offer the planner "Temp Seq Scan" paths for temporary tables, priced
 *	  with the flush cost model.
 *
 * Core's set_rel_consider_parallel() gives up on temporary tables, so
 * their paths are never parallel safe.  set_rel_pathlist_hook runs after
 * those paths exist; it redoes the rest of core's checks, marks the rel
 * consider_parallel and adds two paths of ours:
 *
 *	- a partial one (parallel aware: participants share the blocks), when
 *	  the table is big enough for workers, for Gather to sit on;
 *	- a full one (parallel safe, not parallel aware: every participant
 *	  reads the whole table), whatever the table's size, so that core can
 *	  put a temporary table on the inner side of any join, under Memoize or
 *	  Materialize, in a semi or anti join, inside a parallel plan.
 *
 * The stock paths keep parallel_safe = false, so a stock scan of a
 * temporary table never lands in a worker.
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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/table.h"
#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "optimizer/restrictinfo.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/spccache.h"

#include "pg_tempbuf.h"
#include "planner_int.h"

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;
static planner_hook_type prev_planner_hook = NULL;

/* State of the statement being planned (saved and restored when nested). */
typedef struct PlanningState
{
	bool		engaged;		/* may offer paths (worker_gate.c) */
	List	   *excluded_relids;	/* tables that must keep stock scans */
	List	   *twice_relids;		/* tables the statement names twice */
	bool		all_twice;			/* or maybe any of them (a CTE) */
	int			paths_offered;		/* how many paths of ours were added */

	/*
	 * Does the statement call a function that tells how a value is stored?
	 * Our scans hand up out-of-line values fetched and decompressed, so
	 * those would answer differently than in a serial plan.
	 */
	bool		inspects_storage;

	/*
	 * Does it run code that may read tables in the leader while workers
	 * read?  Then no Temp Index Scan: its workers cannot be kept away from
	 * the heap pages that code could prune (page_guard.c keeps a partial
	 * Temp Seq Scan's workers away from them instead).
	 */
	bool		runs_opaque_code;

	/*
	 * The two above, for a statement of one query level, are found when a
	 * temporary table first gets paths of ours, from the query being
	 * planned (code_facts_walker()): most such statements never get there.
	 */
	Query	   *code_facts_pending;
} PlanningState;

static PlanningState planning = {0};

static void offer_paths(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte);
static Plan *plan_temp_scan_path(PlannerInfo *root, RelOptInfo *rel,
								 CustomPath *best_path, List *tlist,
								 List *clauses, List *custom_plans);

static const CustomPathMethods temp_scan_path_methods = {
	.CustomName = TB_TEMP_SCAN_NAME,
	.PlanCustomPath = plan_temp_scan_path,
};

static Plan *plan_temp_index_path(PlannerInfo *root, RelOptInfo *rel,
								  CustomPath *best_path, List *tlist,
								  List *clauses, List *custom_plans);

static const CustomPathMethods temp_index_path_methods = {
	.CustomName = TB_TEMP_INDEX_SCAN_NAME,
	.PlanCustomPath = plan_temp_index_path,
};

static Plan *plan_temp_bitmap_path(PlannerInfo *root, RelOptInfo *rel,
								   CustomPath *best_path, List *tlist,
								   List *clauses, List *custom_plans);

static const CustomPathMethods temp_bitmap_path_methods = {
	.CustomName = TB_TEMP_BITMAP_SCAN_NAME,
	.PlanCustomPath = plan_temp_bitmap_path,
};

/* What tb_planner needs to know of a query before planning it. */
typedef struct QueryFacts
{
	List	   *temp_relids;		/* temporary relations read, anywhere */
	List	   *twice_relids;		/* those named more than once */
	bool		cte_read_twice;		/* a CTE referenced more than once */
	bool		temp_parent;		/* one with children the planner adds */
	bool		inspects_storage;	/* pg_column_size() and the like */
	bool		runs_opaque_code;	/* code that may read tables: see below */
	bool		may_use_workers;	/* names a table big enough for them */
	bool		flat;			/* one query level: see flat_query_facts() */
	bool		may_inline;		/* a function in FROM, whose body may come in */
} QueryFacts;

/*
 * May this function read a table, when the leader runs it above Gather
 * while workers read a temporary table?  A user's function may (whatever
 * its label: a PARALLEL RESTRICTED one that reads the same table is what
 * the documentation asks for), and so may a built-in one that is not
 * parallel safe (query_to_xml(), say).
 */
static bool
may_read_tables(Oid funcid, void *context)
{
	/* A built-in function's label never changes: look each up once. */
	static bits8 builtin_known[FirstNormalObjectId / BITS_PER_BYTE];
	static bits8 builtin_unsafe[FirstNormalObjectId / BITS_PER_BYTE];
	int			byte = funcid / BITS_PER_BYTE;
	bits8		bit = 1 << (funcid % BITS_PER_BYTE);

	if (funcid >= FirstNormalObjectId)
		return true;
	if (!(builtin_known[byte] & bit))
	{
		if (func_parallel(funcid) != PROPARALLEL_SAFE)
			builtin_unsafe[byte] |= bit;
		builtin_known[byte] |= bit;
	}
	return (builtin_unsafe[byte] & bit) != 0;
}

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

/* A relation the statement reads: is it temporary, named twice, big? */
static void
note_relation(QueryFacts *facts, RangeTblEntry *rte)
{
	bool		may_drive = false;
	bool		has_children = false;

	if (tb_relation_facts(rte->relid, &may_drive, &has_children) == RELPERSISTENCE_TEMP)
	{
		if (list_member_oid(facts->temp_relids, rte->relid))
			facts->twice_relids = list_append_unique_oid(facts->twice_relids,
														 rte->relid);
		else
			facts->temp_relids = lappend_oid(facts->temp_relids, rte->relid);
		/* The parser sets inh on every reference without ONLY. */
		if (rte->inh && has_children)
			facts->temp_parent = true;
	}
	facts->may_use_workers |= may_drive;
}

/* Does this node ask how a value is stored, or run code that may read tables? */
static void
note_code(QueryFacts *facts, Node *node)
{
	if (IsA(node, FuncExpr) && is_storage_function(((FuncExpr *) node)->funcid))
		facts->inspects_storage = true;
	/* A domain's check constraint calls functions nobody sees here. */
	if (check_functions_in_node(node, may_read_tables, NULL) ||
		IsA(node, CoerceToDomain))
		facts->runs_opaque_code = true;
}

/* note_code() over a query, sublinks included. */
static bool
code_facts_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	note_code((QueryFacts *) context, node);
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, code_facts_walker, context, 0);
	return expression_tree_walker(node, code_facts_walker, context);
}

/*
 * A statement of one query level (no sublink, CTE, subquery or set
 * operation), the common case of a loop's EXECUTEd lookups and joins: its
 * relations are its range table's, and its expressions need no walk
 * before planning.  No scalar function the planner inlines brings a
 * relation in (inline_function() takes only a body without FROM); a
 * function in FROM may.  False, noting nothing, for any other statement.
 */
static bool
flat_query_facts(Query *parse, QueryFacts *facts)
{
	ListCell   *lc;

	if (parse->hasSubLinks || parse->cteList != NIL ||
		parse->setOperations != NULL)
		return false;
	foreach(lc, parse->rtable)
		if (lfirst_node(RangeTblEntry, lc)->rtekind == RTE_SUBQUERY)
			return false;
	foreach(lc, parse->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		if (rte->rtekind == RTE_RELATION)
			note_relation(facts, rte);
		else if (rte->rtekind == RTE_FUNCTION)
			facts->may_inline = true;
	}
	return true;
}

/*
 * Which temporary relations does the planner's query read (sublinks, CTEs
 * and subqueries included), and does one of them appear twice?  Does it
 * ask how a value is stored, or run code that may read tables?
 */
static bool
query_facts_walker(Node *node, void *context)
{
	QueryFacts *facts = (QueryFacts *) context;

	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		if (((RangeTblEntry *) node)->rtekind == RTE_RELATION)
			note_relation(facts, (RangeTblEntry *) node);
		return false;
	}
	note_code(facts, node);
	if (IsA(node, Query))
	{
		ListCell   *lc;

		/* The planner inlines a CTE at each of its references. */
		foreach(lc, ((Query *) node)->cteList)
			if (lfirst_node(CommonTableExpr, lc)->cterefcount > 1)
				facts->cte_read_twice = true;
		return query_tree_walker((Query *) node, query_facts_walker,
								 context, QTW_EXAMINE_RTES_BEFORE);
	}
	return expression_tree_walker(node, query_facts_walker, context);
}

/*
 * Does the statement hand the client a value whose output function is a
 * user's?  The leader calls it as rows come up through Gather.
 */
static bool
outputs_user_types(Query *parse)
{
	ListCell   *lc;

	if (parse->commandType != CMD_SELECT)
		return false;
	foreach(lc, parse->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		Oid			type;
		Oid			output;
		bool		varlena;

		if (tle->resjunk)
			continue;
		/* A built-in type's output function is built in. */
		type = exprType((Node *) tle->expr);
		if (type < FirstNormalObjectId)
			continue;
		getTypeOutputInfo(type, &output, &varlena);
		if (output >= FirstNormalObjectId)
			return true;
	}
	return false;
}

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

static PlannedStmt *
plan_with(Query *parse, const char *query_string, int cursorOptions,
		  ParamListInfo boundParams)
{
	if (prev_planner_hook)
		return prev_planner_hook(parse, query_string, cursorOptions,
								 boundParams);
	return standard_planner(parse, query_string, cursorOptions, boundParams);
}

/*
 * May the statement read this table in more than one place of the plan?
 * Then a read of ours in the leader, above a Gather whose workers read it
 * too, is what spares a second planning (plan_walk.c): join_paths.c keeps
 * our paths in the table's path lists.
 */
bool
tb_planning_reads_twice(Oid relid)
{
	return planning.all_twice || list_member_oid(planning.twice_relids, relid);
}

/* Has the statement being planned offered paths of ours (join_paths.c)? */
bool
tb_planning_offered_paths(void)
{
	return planning.engaged && planning.paths_offered > 0;
}

/*
 * Plan without offering paths of ours: a statement (or one planned while
 * ours is, for a function it calls) where no worker can pay.
 */
static PlannedStmt *
plan_stock(Query *parse, const char *query_string, int cursorOptions,
		   ParamListInfo boundParams)
{
	bool		engaged = planning.engaged;
	PlannedStmt *result;

	if (!engaged)
		return plan_with(parse, query_string, cursorOptions, boundParams);
	planning.engaged = false;
	PG_TRY();
	{
		result = plan_with(parse, query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		planning.engaged = engaged;
	}
	PG_END_TRY();
	return result;
}

/*
 * Can the plan read one temporary table through two scan nodes, so that
 * plan_walk.c may ask for a second planning?  Only if the query names it
 * twice (or a CTE twice), or the planner adds relations (an inheritance
 * parent's children, a SQL function's body that it inlines).  A query that reads each of its
 * temporary tables once, the common case, is then planned once and never
 * copied: copying dominated our share of a point query's planning.
 */
static bool
may_need_replan(const QueryFacts *facts)
{
	return facts->temp_relids != NIL &&
		(facts->twice_relids != NIL || facts->cte_read_twice ||
		 facts->temp_parent ||
		 (facts->flat ? facts->may_inline : facts->runs_opaque_code));
}

/*
 * Plan, then make the plan consistent about how it reads each temporary
 * table (plan_walk.c).  When a table is read both by a full scan of ours
 * and by a stock scan that cannot become ours (an index scan, say), plan
 * again without our paths for that table: the planner scribbles on its
 * input, hence the copy.
 */
static PlannedStmt *
tb_planner(Query *parse, const char *query_string, int cursorOptions,
		   ParamListInfo boundParams)
{
	PlanningState saved = planning;
	TbWorkerGate saved_gate = {NULL, NULL};
	TbHiddenPaths saved_hidden = {NULL, NULL, 0, NULL};
	PlannedStmt *result;
	Query	   *pristine = NULL;
	QueryFacts	facts = {0};

	if (!tb_parallel_scan_enabled || !session_has_temp_tables())
		return plan_stock(parse, query_string, cursorOptions, boundParams);

	facts.flat = flat_query_facts(parse, &facts);
	if (!facts.flat)
		query_facts_walker((Node *) parse, &facts);
	if (facts.temp_relids == NIL ||
		!(facts.may_use_workers || TbParallelForced()))
		return plan_stock(parse, query_string, cursorOptions, boundParams);

	facts.runs_opaque_code |= outputs_user_types(parse);
	if (may_need_replan(&facts))
		pristine = copyObject(parse);

	planning.engaged = true;
	planning.twice_relids = facts.twice_relids;
	planning.all_twice = facts.cte_read_twice;
	planning.excluded_relids = NIL;
	planning.paths_offered = 0;
	planning.inspects_storage = facts.inspects_storage;
	planning.runs_opaque_code = facts.runs_opaque_code;
	planning.code_facts_pending = facts.flat ? parse : NULL;
	tb_worker_gate_swap(&saved_gate);
	tb_hidden_paths_swap(&saved_hidden);
	PG_TRY();
	{
		for (;;)
		{
			Oid			conflict;
			TbWorkerGate fresh_gate = {NULL, NULL};
			TbHiddenPaths fresh_hidden = {NULL, NULL, 0, NULL};

			/* A plan made again starts from nothing (its roots are new). */
			tb_worker_gate_swap(&fresh_gate);
			tb_hidden_paths_swap(&fresh_hidden);
			result = plan_with(parse, query_string, cursorOptions,
							   boundParams);
			if (planning.paths_offered == 0)
				break;
			conflict = tb_settle_temp_scans(result, planning.inspects_storage,
											planning.runs_opaque_code);
			if (!OidIsValid(conflict))
				break;
			/* may_need_replan() said that this could not happen */
			if (pristine == NULL)
				elog(ERROR, "pg_tempbuf: plan reads temporary table %u through two scans, but was not expected to",
					 conflict);
			/* Each round excludes one more table: this terminates. */
			Assert(!list_member_oid(planning.excluded_relids, conflict));
			elog(DEBUG1, "pg_tempbuf: planning again without parallel scans of relation %u, which the plan also reads through a stock scan",
				 conflict);
			planning.excluded_relids =
				lappend_oid(planning.excluded_relids, conflict);
			planning.paths_offered = 0;
			parse = copyObject(pristine);
		}
	}
	PG_FINALLY();
	{
		planning = saved;
		tb_worker_gate_swap(&saved_gate);
		tb_hidden_paths_swap(&saved_hidden);
	}
	PG_END_TRY();

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
	ListCell   *lc;

	pull_varattnos((Node *) rel->reltarget->exprs, rel->relid, &attrs);
	foreach(lc, rel->baserestrictinfo)
		pull_varattnos((Node *) lfirst_node(RestrictInfo, lc)->clause,
					   rel->relid, &attrs);
	return tb_scan_attrs_supported(relation, attrs, toast_sensitive);
}

/* Core's checks of a rel's own expressions, from set_rel_consider_parallel(). */
static bool
rel_expressions_parallel_safe(PlannerInfo *root, RelOptInfo *rel)
{
	return is_parallel_safe(root, (Node *) rel->baserestrictinfo) &&
		is_parallel_safe(root, (Node *) rel->reltarget->exprs);
}

/*
 * A seq scan's cost, plus what flush_cost.c adds: the flush and the
 * workers' private reads.  A partial path divides the rows and the CPU
 * work among the participants and, unlike core's parallel seq scan, the
 * pages the leader holds in local buffers: core keeps page reads whole
 * because participants share one disk, but no participant reads those
 * pages from a disk.  The leader hits its buffers and workers take copies
 * or read the OS cache (priced in flush_cost.c), work that each page costs
 * one participant, as a tuple does.  A partial scan adds
 * pg_tempbuf.parallel_margin of a serial seq scan's cost, once: the
 * model's error, which a plan in workers must beat to be chosen.
 */
static void
cost_temp_scan(Path *path, RelOptInfo *rel, const TbScanPrice *price)
{
	double		spc_seq_page_cost;
	double		divisor = 1.0;
	Cost		startup_cost;
	Cost		cpu_run_cost;
	Cost		cpu_per_tuple;
	Cost		extra_startup;
	Cost		extra_run;
	double		resident_pages;
	double		page_cost;
	Cost		margin;

	if (path->parallel_aware)
		divisor = tb_parallel_divisor(path->parallel_workers);

	get_tablespace_page_costs(rel->reltablespace, NULL, &spc_seq_page_cost);
	resident_pages = Min(price->resident_pages, rel->pages);
	page_cost = spc_seq_page_cost *
		(rel->pages - resident_pages + resident_pages / divisor);

	path->rows = clamp_row_est(rel->rows / divisor);

	startup_cost = rel->baserestrictcost.startup;
	cpu_per_tuple = cpu_tuple_cost + rel->baserestrictcost.per_tuple;
	cpu_run_cost = cpu_per_tuple * rel->tuples / divisor;

	startup_cost += path->pathtarget->cost.startup;
	cpu_run_cost += path->pathtarget->cost.per_tuple * path->rows;

	tb_temp_scan_extra_cost(price, path->parallel_aware, path->parallel_workers,
							divisor, cpu_run_cost, &extra_startup, &extra_run);
	startup_cost += extra_startup;

	/*
	 * The margin, for a partial scan: a share of what a serial seq scan of
	 * the table costs.  A full scan is the inner side of a plan whose
	 * partial path bears it; charged there too, it would tip the planner
	 * towards plans that read a table both in workers and, through a stock
	 * scan, above the Gather, which plan_walk.c must plan again serially.
	 */
	margin = path->parallel_aware ?
		tb_parallel_margin * (spc_seq_page_cost * rel->pages +
							  cpu_per_tuple * rel->tuples +
							  path->pathtarget->cost.per_tuple * rel->rows) : 0.0;

	path->startup_cost = startup_cost;
	path->total_cost = startup_cost + cpu_run_cost + extra_run + page_cost +
		margin;

	/* It is a sequential scan: enable_seqscan = off applies to it too. */
	if (!enable_seqscan)
		TbDisablePath(path);
}

/*
 * Our path keeps what its plan will need in fields: the plan's private
 * list holds the flush cost as a string, and formatting it for every path
 * offered, most of which lose, showed up in short queries' planning.
 */
typedef struct TempScanPath
{
	CustomPath	cpath;
	bool		toast_sensitive;
	int			est_dirty_pages;
	double		est_flush_cost;
} TempScanPath;

static CustomPath *
make_temp_scan_path(RelOptInfo *rel, bool partial, int parallel_workers,
					bool toast_sensitive, const TbScanPrice *price,
					double flush_cost)
{
	TempScanPath *tpath = palloc0(sizeof(TempScanPath));
	CustomPath *cpath = &tpath->cpath;

	NodeSetTag(cpath, T_CustomPath);
	tpath->toast_sensitive = toast_sensitive;
	tpath->est_dirty_pages = price->dirty_pages;
	tpath->est_flush_cost = flush_cost;

	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = rel;
	cpath->path.pathtarget = rel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = partial;
	cpath->path.parallel_safe = true;
	cpath->path.parallel_workers = partial ? parallel_workers : 0;
	cpath->path.pathkeys = NIL;
	cpath->flags = 0;
	cpath->custom_paths = NIL;
	cpath->custom_private = NIL;
	cpath->methods = &temp_scan_path_methods;
	cost_temp_scan(&cpath->path, rel, price);
	return cpath;
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
 * Is root a subquery whose plan is made alone, keeping only its cheapest
 * path (a SubPlan, an InitPlan, a CTE)?  Those are planned while the
 * parent is preprocessed, before its query_planner() sets up its rel
 * arrays.  A subquery in FROM (a pulled-up IN, say) is planned from the
 * parent's query_planner(), which then chooses among all its paths.
 */
static bool
planned_alone(PlannerInfo *root)
{
	return root->parent_root != NULL && root->parent_root->simple_rel_array == NULL;
}

static void
drop_stock_seq_scans(RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, rel->pathlist)
	{
		Path	   *path = lfirst(lc);

		if (path->pathtype == T_SeqScan && !path->parallel_safe)
			rel->pathlist = foreach_delete_current(rel->pathlist, lc);
	}
}

/*
 * A Temp Index Scan path: core's index path, parallel safe, priced with
 * the flush of the table and the index.  The stock path stays the child
 * of ours (it is planned into the Index Scan our node carries).
 */
typedef struct TempIndexPath
{
	CustomPath	cpath;
	int			est_dirty_pages;
	double		est_flush_cost;
} TempIndexPath;

/*
 * Add the index's dirty local pages, which the leader writes with the
 * table's before workers read them, to price.
 */
static void
price_index_flush(IndexOptInfo *index, TbScanPrice *price)
{
	Relation	indexrel = index_open(index->indexoid, NoLock);
	TbRelFileId file = TbRelationFileId(indexrel);
	TbLocalBufferCounts counts;

	tb_pool_census_watch(index->indexoid);
	tb_pool_census(&file, &counts, NULL);
	price->dirty_pages += counts.dirty;
	price->known_clean = price->known_clean && tb_fork_known_clean(&file, MAIN_FORKNUM);
	index_close(indexrel, NoLock);
}

/*
 * What a participant's private reads of the pages an unparameterized index
 * path touches cost beyond core's price: each page once (page_source.c
 * caches them), like the Temp Seq Scan's private reads.  Such a scan under
 * Gather runs whole in every participant, and core prices a correlated one
 * at as little as seq_page_cost a page.  A parameterized path needs
 * nothing more: core prices each distinct page its loops touch at
 * random_page_cost (index_pages_fetched() in cost_index()), more than a
 * private read, and the participants of a partial join share the loops.
 */
static Cost
private_reads(PlannerInfo *root, RelOptInfo *rel, IndexPath *ipath, double loop_count)
{
	IndexOptInfo *index = ipath->indexinfo;
	double		tuples = ipath->indexselectivity * rel->tuples;
	double		heap_pages;
	double		index_pages;
	Cost		reads;

	if (loop_count > 1.0)
		return 0.0;
	heap_pages = index_pages_fetched(tuples, rel->pages, (double) index->pages, root);
	if (ipath->path.pathtype == T_IndexOnlyScan)
		heap_pages = ceil(heap_pages * (1.0 - rel->allvisfrac));
	index_pages = ceil(ipath->indexselectivity * index->pages);
	reads = tb_read_page_cost * (heap_pages + index_pages);

	/* A shared range: workers read their share, the leader its buffers. */
	if (ipath->path.parallel_aware)
	{
		double		divisor = tb_parallel_divisor(ipath->path.parallel_workers);

		reads *= ipath->path.parallel_workers / divisor / divisor;
	}
	return reads;
}

/*
 * Can an index-only scan of ours return the index's columns as they are
 * stored?  Not where the stored type differs from the column's (a name
 * column is stored as a cstring, say), which core's Index Only Scan
 * converts.
 */
static bool
index_returns_columns(IndexOptInfo *index)
{
	Relation	indexrel = index_open(index->indexoid, NoLock);
	TupleDesc	desc = RelationGetDescr(indexrel);
	bool		ok = list_length(index->indextlist) == desc->natts;
	ListCell   *lc;

	foreach(lc, index->indextlist)
	{
		TargetEntry *tle = lfirst(lc);

		if (!ok)
			break;
		ok = exprType((Node *) tle->expr) ==
			TupleDescAttr(desc, foreach_current_index(lc))->atttypid;
	}
	index_close(indexrel, NoLock);
	return ok;
}

/*
 * Our parallel-safe path around core's stock (index or bitmap heap) path:
 * the same rows, order and parameterization, core's cost plus the flush
 * price and reads, the private reads beyond core's price, both borne by
 * each of loop_count rescans in their share, plus, for a shared range, the
 * margin (pg_tempbuf.parallel_margin) of core's cost.  Core plans the stock
 * path into the plan our node carries (custom_plans).
 */
static CustomPath *
make_wrapping_path(RelOptInfo *rel, Path *stock, const TbScanPrice *price,
				   Cost reads, double loop_count, const CustomPathMethods *methods)
{
	TempIndexPath *tpath = palloc0(sizeof(TempIndexPath));
	CustomPath *cpath = &tpath->cpath;
	Cost		flush = tb_priced_flush(price);

	/* The margin (as cost_temp_scan()'s), for a shared range: of all of it. */
	Cost		margin = stock->parallel_aware ?
		tb_parallel_margin * stock->total_cost *
		tb_parallel_divisor(stock->parallel_workers) : 0.0;

	NodeSetTag(cpath, T_CustomPath);
	tpath->est_dirty_pages = price->dirty_pages;
	tpath->est_flush_cost = flush;
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = rel;
	cpath->path.pathtarget = stock->pathtarget;
	cpath->path.param_info = stock->param_info;
	cpath->path.parallel_aware = stock->parallel_aware;
	cpath->path.parallel_safe = true;
	cpath->path.parallel_workers = stock->parallel_workers;
	cpath->path.rows = stock->rows;
	cpath->path.pathkeys = stock->pathkeys;
	TbCopyDisabledNodes(&cpath->path, stock);
	cpath->path.startup_cost = stock->startup_cost + flush / loop_count;
	cpath->path.total_cost = stock->total_cost + (flush + reads) / loop_count +
		margin;
	cpath->custom_paths = list_make1(stock);
	cpath->methods = methods;
	return cpath;
}

/* Our path around the stock index path ipath. */
static CustomPath *
make_temp_index_path(PlannerInfo *root, RelOptInfo *rel, IndexPath *ipath,
					 const TbScanPrice *price, double loop_count)
{
	return make_wrapping_path(rel, &ipath->path, price,
							  private_reads(root, rel, ipath, loop_count),
							  loop_count, &temp_index_path_methods);
}

/*
 * Offer a Temp Index Scan for each btree index path core made for rel,
 * in either direction, with no ORDER BY operator.  An Index Only Scan path
 * becomes a Temp Index Only Scan, or an index scan where the index stores
 * a column in another type.  price holds the table's (and its toast
 * relation's) dirty pages; a parameterized path is rescanned once per
 * outer row, but the flush happens once per execution and a page is read
 * privately once, so each scan bears its share of both.  An
 * unparameterized path that reads forward also gets a partial form, the
 * participants sharing its range (as core's partial index paths do, which
 * core makes for no temporary table).
 */
static void
add_temp_index_paths(PlannerInfo *root, RelOptInfo *rel, const TbScanPrice *price,
					 bool vm_known_clean)
{
	List	   *stock = NIL;
	ListCell   *lc;

	foreach(lc, rel->pathlist)
	{
		Path	   *path = lfirst(lc);

		if (IsA(path, IndexPath) && !path->parallel_safe)
			stock = lappend(stock, path);
	}
	foreach(lc, stock)
	{
		IndexPath  *ipath = lfirst(lc);
		IndexOptInfo *index = ipath->indexinfo;
		Relids		outer = PATH_REQ_OUTER(&ipath->path);
		double		loop_count = tb_loop_count(root, rel->relid, outer);
		TbScanPrice index_price = *price;

		if (index->relam != BTREE_AM_OID || ipath->indexorderbys != NIL)
			continue;
		if (ipath->path.param_info &&
			!is_parallel_safe(root, (Node *) ipath->path.param_info->ppi_clauses))
			continue;
		if (ipath->path.pathtype == T_IndexOnlyScan && !index_returns_columns(index))
			ipath = create_index_path(root, index, ipath->indexclauses, NIL, NIL,
									  ipath->path.pathkeys, ipath->indexscandir,
									  false, outer, loop_count, false);

		price_index_flush(index, &index_price);
		/* An index-only scan has the visibility map written too. */
		if (ipath->path.pathtype == T_IndexOnlyScan)
			index_price.known_clean = index_price.known_clean && vm_known_clean;
		tb_add_safe_path(root, rel, &make_temp_index_path(root, rel, ipath, &index_price,
														  loop_count)->path);

		if (outer == NULL && ipath->indexscandir != BackwardScanDirection)
		{
			IndexPath  *partial = create_index_path(root, index, ipath->indexclauses,
													NIL, NIL, ipath->path.pathkeys,
													ipath->indexscandir,
													ipath->path.pathtype == T_IndexOnlyScan,
													NULL, 1.0, true);

			if (partial->path.parallel_aware)
				add_partial_path(rel, &make_temp_index_path(root, rel, partial,
															&index_price, 1.0)->path);
		}

		/*
		 * As drop_stock_seq_scans(), for the same reason, where only one
		 * path is kept: a subquery in FROM keeps core's cheaper serial
		 * path beside ours, for its parent to choose.
		 */
		if (planned_alone(root))
			rel->pathlist = list_delete_ptr(rel->pathlist, lfirst(lc));
	}
	list_free(stock);
}

/*
 * Can a Temp Bitmap Heap Scan run this bitmap tree?  Only btree index scans
 * (= ANY included: btree_reader.c takes it), combined by AND and OR.  Adds
 * each index's dirty pages to price (once per index), its private reads
 * to *index_pages.
 */
static bool
bitmap_tree_supported(Path *bitmapqual, TbScanPrice *price, List **indexoids,
					  double *index_pages)
{
	List	   *children;
	ListCell   *lc;

	if (IsA(bitmapqual, IndexPath))
	{
		IndexPath  *ipath = (IndexPath *) bitmapqual;
		IndexOptInfo *index = ipath->indexinfo;

		if (index->relam != BTREE_AM_OID || ipath->indexorderbys != NIL ||
			ipath->indexscandir == BackwardScanDirection)
			return false;
		if (!list_member_oid(*indexoids, index->indexoid))
		{
			*indexoids = lappend_oid(*indexoids, index->indexoid);
			price_index_flush(index, price);
		}
		*index_pages += ceil(ipath->indexselectivity * index->pages);
		return true;
	}
	if (IsA(bitmapqual, BitmapAndPath))
		children = ((BitmapAndPath *) bitmapqual)->bitmapquals;
	else if (IsA(bitmapqual, BitmapOrPath))
		children = ((BitmapOrPath *) bitmapqual)->bitmapquals;
	else
		return false;
	foreach(lc, children)
		if (!bitmap_tree_supported(lfirst(lc), price, indexoids, index_pages))
			return false;
	return true;
}

/*
 * Offer a Temp Bitmap Heap Scan for each stock bitmap heap path of rel
 * whose tree bitmap_tree_supported() takes: core's costs, plus the flush
 * of the table and every index, plus, unparameterized, the private reads
 * of the heap pages (compute_bitmap_pages(), as core prices them) and
 * index pages it touches (see private_reads()).  Non-partial only: each
 * participant builds its own bitmap and reads every page it names.
 */
static void
add_temp_bitmap_paths(PlannerInfo *root, RelOptInfo *rel, const TbScanPrice *price)
{
	List	   *stock = NIL;
	ListCell   *lc;

	/*
	 * add_path() frees a bitmap heap path that a new one beats (ours may,
	 * costing the same and being parallel safe): wrap copies.
	 */
	foreach(lc, rel->pathlist)
	{
		Path	   *path = lfirst(lc);

		if (IsA(path, BitmapHeapPath) && !path->parallel_safe)
		{
			BitmapHeapPath *copy = palloc(sizeof(BitmapHeapPath));

			memcpy(copy, path, sizeof(BitmapHeapPath));
			stock = lappend(stock, list_make2(path, copy));
		}
	}
	foreach(lc, stock)
	{
		Path	   *original = linitial(lfirst(lc));
		BitmapHeapPath *bpath = lsecond(lfirst(lc));
		Relids		outer = PATH_REQ_OUTER(&bpath->path);
		double		loop_count = tb_loop_count(root, rel->relid, outer);
		TbScanPrice bitmap_price = *price;
		List	   *indexoids = NIL;
		double		index_pages = 0.0;
		Cost		reads = 0.0;

		if (bpath->path.param_info &&
			!is_parallel_safe(root, (Node *) bpath->path.param_info->ppi_clauses))
			continue;
		if (!bitmap_tree_supported(bpath->bitmapqual, &bitmap_price, &indexoids,
								   &index_pages))
			continue;
		if (loop_count <= 1.0)
		{
			Cost		index_cost;
			double		tuples;
			double		heap_pages = compute_bitmap_pages(root, rel, bpath->bitmapqual,
														  1, &index_cost, &tuples);

			reads = tb_read_page_cost * (heap_pages + index_pages);
		}
		/* Core's bitmap heap paths are neither parallel aware nor ordered. */
		tb_add_safe_path(root, rel,
						 &make_wrapping_path(rel, &bpath->path, &bitmap_price, reads,
											 loop_count, &temp_bitmap_path_methods)->path);

		/* As add_temp_index_paths(). */
		if (planned_alone(root))
			rel->pathlist = list_delete_ptr(rel->pathlist, original);
	}
	list_free_deep(stock);
}

static void
tb_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
					RangeTblEntry *rte)
{
	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);

	/* Plain temporary tables, or partitions and children of one. */
	if (!planning.engaged ||
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
		list_member_oid(planning.excluded_relids, rte->relid))
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
	if (planning.code_facts_pending)
	{
		QueryFacts	code = {0};

		code_facts_walker((Node *) planning.code_facts_pending, &code);
		planning.inspects_storage = code.inspects_storage;
		planning.runs_opaque_code |= code.runs_opaque_code;
		planning.code_facts_pending = NULL;
	}

	/*
	 * A table no partial path can read, at the top level, is worth paths
	 * only as a parallel join's inner side: join_paths.c asks for them when
	 * a join may use them, and most statements never do (a small table
	 * joined to a big one through its index).
	 */
	if (tb_hides_paths(root, rel) && !tb_rel_may_be_partial(rel))
	{
		rel->consider_parallel = true;
		planning.paths_offered++;
		tb_defer_safe_paths(root, rel);
		return;
	}
	offer_paths(root, rel, rte);
}

/*
 * Our paths for rel, a temporary table (or a member of one) that passed
 * tb_set_rel_pathlist()'s checks.
 */
static void
offer_paths(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte)
{
	Relation	relation;
	TbScanPrice price;
	TbRelFileId heap_file;
	bool		vm_known_clean;
	bool		toast_sensitive;
	bool		supported;
	int			parallel_workers;
	double		flush_cost;

	/* The parser holds a lock on the table already. */
	relation = table_open(rte->relid, NoLock);
	if (RELATION_IS_OTHER_TEMP(relation))
	{
		table_close(relation, NoLock);
		return;
	}
	supported = scan_columns_supported(rel, relation, &toast_sensitive);
	if (toast_sensitive && planning.inspects_storage)
		supported = false;
	tb_temp_scan_price(relation, &price);

	/*
	 * Participants fetch out-of-line values through private pages of the
	 * toast relation, which the leader flushes, with the table, before
	 * workers start.  Reading them costs what a serial scan's detoasting
	 * costs, which core does not price either; only the flush is extra.
	 */
	if (supported && toast_sensitive)
	{
		int			toast_dirty;
		bool		toast_clean;

		tb_toast_price(relation, &toast_dirty, &price.upfront, &toast_clean);
		price.dirty_pages += toast_dirty;
		price.known_clean = price.known_clean && toast_clean;
	}
	flush_cost = tb_priced_flush(&price);
	heap_file = TbRelationFileId(relation);
	vm_known_clean = tb_fork_known_clean(&heap_file, VISIBILITYMAP_FORKNUM);
	table_close(relation, NoLock);
	if (!supported)
		return;

	rel->consider_parallel = true;
	planning.paths_offered++;

	tb_add_safe_path(root, rel, &make_temp_scan_path(rel, false, 0, toast_sensitive,
													 &price, flush_cost)->path);

	parallel_workers = compute_parallel_worker(rel, rel->pages, -1,
											   max_parallel_workers_per_gather);
	if (parallel_workers > 0)
		add_partial_path(rel, &make_temp_scan_path(rel, true, parallel_workers,
												   toast_sensitive, &price,
												   flush_cost)->path);

	/*
	 * A subquery is planned alone and keeps its cheapest path, which would
	 * be the stock Seq Scan: then a SubPlan over this table could never be
	 * parallel safe.  Leave the subquery our full scan instead; a plan that
	 * ends up serial gets the stock scan back (plan_walk.c).
	 */
	if (root->parent_root != NULL)
		drop_stock_seq_scans(rel);

	if (tb_index_scan_enabled && !planning.runs_opaque_code)
	{
		add_temp_index_paths(root, rel, &price, vm_known_clean);
		add_temp_bitmap_paths(root, rel, &price);
	}
}

/* The paths tb_set_rel_pathlist() deferred for rel, now that a join asks. */
void
tb_offer_deferred_paths(PlannerInfo *root, RelOptInfo *rel)
{
	offer_paths(root, rel, root->simple_rte_array[rel->relid]);
}

static Plan *
plan_temp_scan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
					List *tlist, List *clauses, List *custom_plans)
{
	TempScanPath *tpath = (TempScanPath *) best_path;

	/* Pseudoconstant quals went to a gating Result above us. */
	return tb_make_temp_scan_plan(rel->relid, tlist,
								  extract_actual_clauses(clauses, false),
								  tb_temp_scan_private(best_path->path.parallel_aware,
													   tpath->toast_sensitive,
													   tpath->est_dirty_pages,
													   tpath->est_flush_cost));
}

/*
 * The plan core made of our path's stock path (custom_plans), which our
 * node carries: a gating Result, should core put one above it, is ours to
 * have instead.
 */
static Plan *
stock_plan(List *custom_plans)
{
	Plan	   *stock = linitial(custom_plans);

	if (IsA(stock, Result) && stock->lefttree)
		stock = stock->lefttree;
	stock->parallel_safe = true;
	return stock;
}

/* Our node around core's Index Scan (or Index Only Scan). */
static Plan *
plan_temp_index_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
					 List *tlist, List *clauses, List *custom_plans)
{
	TempIndexPath *tpath = (TempIndexPath *) best_path;
	Plan	   *stock = stock_plan(custom_plans);
	IndexPath  *ipath = linitial(best_path->custom_paths);
	List	   *indexqualorig = NIL;

	/* The index conditions as the query wrote them: see create_indexscan_plan(). */
	if (IsA(stock, IndexScan))
		indexqualorig = ((IndexScan *) stock)->indexqualorig;
	else
	{
		ListCell   *lc;

		Assert(IsA(stock, IndexOnlyScan));
		foreach(lc, ipath->indexclauses)
		{
			IndexClause *iclause = lfirst(lc);
			ListCell   *lc2;

			foreach(lc2, iclause->indexquals)
				indexqualorig = lappend(indexqualorig,
										((RestrictInfo *) lfirst(lc2))->clause);
		}
	}
	return tb_make_temp_index_scan_plan((Scan *) stock, tlist, indexqualorig,
										tpath->est_dirty_pages,
										tpath->est_flush_cost);
}

/* Our node around core's Bitmap Heap Scan (its index scans under it). */
static Plan *
plan_temp_bitmap_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
					  List *tlist, List *clauses, List *custom_plans)
{
	TempIndexPath *tpath = (TempIndexPath *) best_path;
	Plan	   *stock = stock_plan(custom_plans);

	return tb_make_temp_bitmap_scan_plan(castNode(BitmapHeapScan, stock), tlist,
										 tpath->est_dirty_pages,
										 tpath->est_flush_cost);
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
