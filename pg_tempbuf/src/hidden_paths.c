/*-------------------------------------------------------------------------
 *
 * hidden_paths.c
 *	  Our parallel-safe, non-partial paths of the top query level's base
 *	  relations, kept out of core's own join search; and the relations
 *	  whose paths wait until a join asks for them.
 *
 * Core's join search would only try those paths against the stock paths
 * that beat them, and more than doubled the planning of TPC-H's big joins
 * with them (join_paths.c).  So tb_add_safe_path() keeps them apart, for
 * join_paths.c's second search, and tb_defer_safe_paths() notes a table
 * that gets them only when such a search first asks (join_paths.c then
 * has scan_paths.c make them).
 *
 * Subqueries keep our paths in their lists (their parents choose among
 * their paths), and so do appendrel members (Parallel Append takes their
 * non-partial safe paths), a table the statement names twice (TPC-H
 * Q21's lineitem: a plan that reads it in workers may read it again
 * above the Gather, which must then be a read of ours, or plan_walk.c has
 * the statement planned again without our paths for it), and every
 * relation under debug_parallel_query.
 *
 * This file only keeps paths: the files that make them (scan_paths.c,
 * index_paths.c) and the one that asks for deferred ones (join_paths.c)
 * are above it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "optimizer/pathnode.h"

#include "compat.h"
#include "hidden_paths.h"
#include "query_facts.h"

/* The top level's base relations' hidden paths, by relid. */
static TbHiddenPaths hidden = {NULL, NULL, 0, NULL};

/* As tb_worker_gate_swap(): each statement being planned has its own. */
void
tb_hidden_paths_swap(TbHiddenPaths *state)
{
	TbHiddenPaths previous = hidden;

	hidden = *state;
	*state = previous;
}

/* Does rel keep our non-partial paths hidden (see the file header)? */
bool
tb_hides_paths(PlannerInfo *root, RelOptInfo *rel)
{
	if (root->parent_root != NULL || rel->reloptkind != RELOPT_BASEREL ||
		TbParallelForced() ||
		tb_planning_reads_twice(root->simple_rte_array[rel->relid]->relid))
		return false;
	if (hidden.root != root)
	{
		hidden.size = root->simple_rel_array_size;
		hidden.paths = MemoryContextAllocZero(root->planner_cxt,
											  hidden.size * sizeof(List *));
		hidden.deferred = NULL;
		hidden.root = root;
	}
	return rel->relid < hidden.size;
}

/* rel, which hides its paths, gets them only once a join asks. */
void
tb_defer_safe_paths(PlannerInfo *root, RelOptInfo *rel)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(root->planner_cxt);

	Assert(hidden.root == root);
	hidden.deferred = bms_add_member(hidden.deferred, rel->relid);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Offer rel a parallel-safe, non-partial path of ours: into its path list,
 * or, for a base relation of the top level, into its hidden list, where
 * add_path() weighs it against our other hidden paths of rel.
 */
void
tb_add_safe_path(PlannerInfo *root, RelOptInfo *rel, Path *path)
{
	List	   *visible = rel->pathlist;

	if (!tb_hides_paths(root, rel))
	{
		add_path(rel, path);
		return;
	}
	rel->pathlist = hidden.paths[rel->relid];
	add_path(rel, path);
	hidden.paths[rel->relid] = rel->pathlist;
	rel->pathlist = visible;
}

/*
 * Was rel's making of paths deferred (tb_defer_safe_paths())?  Then it is
 * no longer: the caller makes them now.
 */
bool
tb_take_deferred_paths(PlannerInfo *root, RelOptInfo *rel)
{
	MemoryContext oldcxt;

	if (!(hidden.root == root && rel->reloptkind == RELOPT_BASEREL &&
		  bms_is_member(rel->relid, hidden.deferred)))
		return false;
	oldcxt = MemoryContextSwitchTo(root->planner_cxt);
	hidden.deferred = bms_del_member(hidden.deferred, rel->relid);
	MemoryContextSwitchTo(oldcxt);
	return true;
}

/* rel's hidden paths (tb_add_safe_path()). */
List *
tb_hidden_safe_paths(PlannerInfo *root, RelOptInfo *rel)
{
	if (hidden.root == root && rel->reloptkind == RELOPT_BASEREL &&
		rel->relid < hidden.size)
		return hidden.paths[rel->relid];
	return NIL;
}
