/*-------------------------------------------------------------------------
 *
 * query_facts.c
 *	  What the statement being planned is: which temporary tables it reads
 *	  and how often, whether it asks how a value is stored or runs code
 *	  that may read tables, whether it may need a second planning.
 *
 * planner.c learns these facts before planning, as cheaply as it can: a
 * statement of one query level (the common case of a loop's EXECUTEd
 * lookups and joins) from its range table alone, its code facts only
 * once a temporary table first gets paths of ours; any other statement
 * by one walk over all its query levels.  They decide whether the
 * statement is planned stock, whether its query is copied for a second
 * planning (plan_walk.c), and, kept in tb_planning while it is planned,
 * which paths of ours the files above may offer.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "query_facts.h"
#include "worker_gate.h"

/* The statement being planned (planner.c saves and restores it when nested). */
PlanningState tb_planning = {0};

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
	static uint8 builtin_known[FirstNormalObjectId / BITS_PER_BYTE];
	static uint8 builtin_unsafe[FirstNormalObjectId / BITS_PER_BYTE];
	int			byte = funcid / BITS_PER_BYTE;
	uint8		bit = 1 << (funcid % BITS_PER_BYTE);

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
bool
tb_flat_query_facts(Query *parse, QueryFacts *facts)
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
bool
tb_query_facts_walker(Node *node, void *context)
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
		return query_tree_walker((Query *) node, tb_query_facts_walker,
								 context, QTW_EXAMINE_RTES_BEFORE);
	}
	return expression_tree_walker(node, tb_query_facts_walker, context);
}

/*
 * Does the statement hand the client a value whose output function is a
 * user's?  The leader calls it as rows come up through Gather.
 */
bool
tb_outputs_user_types(Query *parse)
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
 * The code facts of a statement of one query level (see PlanningState),
 * found as its first temporary table gets paths of ours.
 */
void
tb_planning_code_facts(void)
{
	QueryFacts	code = {0};

	code_facts_walker((Node *) tb_planning.code_facts_pending, &code);
	tb_planning.inspects_storage = code.inspects_storage;
	tb_planning.runs_opaque_code |= code.runs_opaque_code ||
		tb_outputs_user_types(tb_planning.code_facts_pending);
	tb_planning.code_facts_pending = NULL;
}

/*
 * May the statement read this table in more than one place of the plan?
 * Then a read of ours in the leader, above a Gather whose workers read it
 * too, is what spares a second planning (plan_walk.c): hidden_paths.c keeps
 * our paths in the table's path lists.
 */
bool
tb_planning_reads_twice(Oid relid)
{
	return tb_planning.all_twice || list_member_oid(tb_planning.twice_relids, relid);
}

/*
 * Is root a subquery whose plan is made alone, keeping only its cheapest
 * path (a SubPlan, an InitPlan, a CTE)?  Those are planned while the
 * parent is preprocessed, before its query_planner() sets up its rel
 * arrays.  A subquery in FROM (a pulled-up IN, say) is planned from the
 * parent's query_planner(), which then chooses among all its paths.
 */
bool
tb_planned_alone(PlannerInfo *root)
{
	return root->parent_root != NULL && root->parent_root->simple_rel_array == NULL;
}

/* Has the statement being planned offered paths of ours (join_paths.c)? */
bool
tb_planning_offered_paths(void)
{
	return tb_planning.engaged && tb_planning.paths_offered > 0;
}
