/*-------------------------------------------------------------------------
 *
 * join_paths.c
 *	  Parallel-safe paths for joins of temporary tables.
 *
 * Core builds a join's non-partial paths from the cheapest paths of each
 * side, and its partial nested loops from the inner side's cheapest ones.
 * A temporary table's cheapest path is the stock scan, never parallel
 * safe, and ours costs a worker's private reads more, so two temporary
 * tables joined (TPC-H Q21's supplier and nation) had no parallel-safe
 * path: that join could not be the inner side of a join under Gather, as
 * it is over UNLOGGED tables, and the planner joined the big table to each
 * of them in turn instead.
 *
 * So set_join_pathlist_hook joins the two sides again, each seen through
 * its parallel-safe paths alone, into an empty path list (core's
 * add_path_precheck() would reject them against the cheaper unsafe paths,
 * ignoring parallel safety), then offers the survivors to the real list,
 * where add_path() keeps each only as a parallel-safe path that nothing
 * safe beats.
 *
 * That second search, and our paths in core's own, more than doubled the
 * planning of TPC-H's big joins (all tables temporary, 1.9x the planning
 * over UNLOGGED copies).  So:
 *
 *	- the base relations of the top query level keep our parallel-safe,
 *	  non-partial paths apart (tb_add_safe_path(), hidden_paths.c), out of
 *	  core's own join search, which would only try them against paths that
 *	  beat them;
 *	- the second search is done only where it can give a plan something:
 *	  the join may be the inner side of a parallel join (a driver outside
 *	  it, worker_gate.c), or a partial join may run over the inner side's
 *	  safe paths (the outer side has partial paths);
 *	- it sees no more than it needs: the outer side's cheapest safe path,
 *	  the inner side's safe paths, and the outer side's partial paths only
 *	  for a partial join.
 *
 * Which relations keep our paths in their lists instead: hidden_paths.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "optimizer/pathnode.h"
#include "optimizer/paths.h"

#include "compat.h"
#include "hidden_paths.h"
#include "join_paths.h"
#include "query_facts.h"
#include "scan_paths.h"
#include "worker_gate.h"

static set_join_pathlist_hook_type prev_set_join_pathlist_hook = NULL;

/* rel's parallel-safe paths: those in its list, and its hidden ones. */
static List *
safe_paths_of(PlannerInfo *root, RelOptInfo *rel)
{
	List	   *safe = NIL;
	ListCell   *lc;

	/* Deferred paths are made now, to last as long as the rel does. */
	if (tb_take_deferred_paths(root, rel))
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(root->planner_cxt);

		tb_offer_deferred_paths(root, rel);
		MemoryContextSwitchTo(oldcxt);
	}
	foreach(lc, rel->pathlist)
		if (((Path *) lfirst(lc))->parallel_safe)
			safe = lappend(safe, lfirst(lc));
	return list_concat(safe, tb_hidden_safe_paths(root, rel));
}

/* What a side's view hides, to be put back. */
typedef struct SideView
{
	List	   *pathlist;
	List	   *partial_pathlist;
	Path	   *cheapest_startup;
	Path	   *cheapest_total;
	Path	   *cheapest_unique;
	List	   *cheapest_parameterized;
} SideView;

static bool
has_unsafe_path(List *paths)
{
	ListCell   *lc;

	foreach(lc, paths)
		if (!((Path *) lfirst(lc))->parallel_safe)
			return true;
	return false;
}

/*
 * Show the second join search only rel's parallel-safe paths, or as the
 * outer side only the cheapest of them, and its partial paths only if
 * keep_partial; saved keeps what to put back.  An outer side with no
 * parallel-safe path still gives partial joins: then its cheapest path
 * stands in, for core's non-partial joins to have an outer path at all.
 * False, showing nothing new, where rel has nothing to show.
 */
static bool
show_safe_paths(PlannerInfo *root, RelOptInfo *rel, bool outer_side,
				bool keep_partial, SideView *saved)
{
	List	   *safe = safe_paths_of(root, rel);

	if (outer_side)
	{
		Path	   *cheapest = get_cheapest_parallel_safe_total_inner(safe);

		list_free(safe);
		if (cheapest == NULL && keep_partial)
			cheapest = rel->cheapest_total_path;
		safe = cheapest ? list_make1(cheapest) : NIL;
	}
	if (safe == NIL)
		return false;

	saved->pathlist = rel->pathlist;
	saved->partial_pathlist = rel->partial_pathlist;
	saved->cheapest_startup = rel->cheapest_startup_path;
	saved->cheapest_total = rel->cheapest_total_path;
	saved->cheapest_unique = TbGetCheapestUniquePath(rel);
	saved->cheapest_parameterized = rel->cheapest_parameterized_paths;

	rel->pathlist = safe;
	if (!keep_partial)
		rel->partial_pathlist = NIL;
	set_cheapest(rel);
	return true;
}

static void
show_all_paths(RelOptInfo *rel, const SideView *saved)
{
	list_free(rel->pathlist);
	rel->pathlist = saved->pathlist;
	rel->partial_pathlist = saved->partial_pathlist;
	rel->cheapest_startup_path = saved->cheapest_startup;
	rel->cheapest_total_path = saved->cheapest_total;
	TbSetCheapestUniquePath(rel, saved->cheapest_unique);
	rel->cheapest_parameterized_paths = saved->cheapest_parameterized;
}

static void
tb_set_join_pathlist(PlannerInfo *root, RelOptInfo *joinrel,
					 RelOptInfo *outerrel, RelOptInfo *innerrel,
					 JoinType jointype, JoinPathExtraData *extra)
{
	static bool rejoining = false;
	SideView	outer_saved;
	SideView	inner_saved;
	bool		as_inner;
	bool		partial_join;
	List	   *pathlist = joinrel->pathlist;
	List	   *safe_paths = NIL;
	ListCell   *lc;

	if (prev_set_join_pathlist_hook)
		prev_set_join_pathlist_hook(root, joinrel, outerrel, innerrel,
									jointype, extra);

	if (rejoining || !tb_planning_offered_paths() || !joinrel->consider_parallel ||
		!tb_join_may_use_workers(root, joinrel))
		return;

	/* Core's own search had parallel-safe inputs everywhere: nothing to add. */
	if (outerrel->cheapest_total_path->parallel_safe &&
		!has_unsafe_path(innerrel->cheapest_parameterized_paths))
		return;

	as_inner = tb_join_may_be_inner(root, joinrel);
	partial_join = outerrel->partial_pathlist != NIL &&
		has_unsafe_path(innerrel->cheapest_parameterized_paths);
	if (!as_inner && !partial_join)
		return;

	if (!show_safe_paths(root, outerrel, true, partial_join, &outer_saved))
		return;
	if (!show_safe_paths(root, innerrel, false, false, &inner_saved))
	{
		show_all_paths(outerrel, &outer_saved);
		return;
	}

	rejoining = true;
	joinrel->pathlist = NIL;
	PG_TRY();
	{
		add_paths_to_joinrel(root, joinrel, outerrel, innerrel, jointype,
							 extra->sjinfo, extra->restrictlist);
	}
	PG_FINALLY();
	{
		rejoining = false;
		safe_paths = joinrel->pathlist;
		joinrel->pathlist = pathlist;
		show_all_paths(outerrel, &outer_saved);
		show_all_paths(innerrel, &inner_saved);
	}
	PG_END_TRY();

	if (as_inner)
		foreach(lc, safe_paths)
		{
			Path	   *path = lfirst(lc);

			if (path->parallel_safe)
				add_path(joinrel, path);
		}
	list_free(safe_paths);
}

void
tb_install_join_hook(void)
{
	prev_set_join_pathlist_hook = set_join_pathlist_hook;
	set_join_pathlist_hook = tb_set_join_pathlist;
}
