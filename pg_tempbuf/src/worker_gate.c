/*-------------------------------------------------------------------------
 *
 * worker_gate.c
 *	  Where can a parallel worker pay for itself?  Keeps planning as cheap
 *	  as without the extension for statements, query levels and joins in
 *	  which no plan of ours could win.
 *
 * Our paths make the planner work more: a census of the local buffer
 * pool, a path per scan kind and index, and for joins of temporary tables
 * a second join search (tb_set_join_pathlist()).  It is all spent in vain
 * unless some relation of the plan can drive workers: be read by a
 * partial path (core's size rules, as compute_parallel_worker() applies
 * them) while its serial read costs at least parallel_setup_cost, what a
 * Gather costs before its first row.  A point lookup, a short index
 * range, joins of small tables have no such relation.  A loop of
 * EXECUTEd statements of that kind planned up to 1.47x slower before
 * these checks, with the same plans.
 *
 * Three checks, from the cheapest:
 *
 *	- the statement (tb_relation_facts(), per relation it names): is one
 *	  big enough to be read in parallel?  pg_class's size, a temporary
 *	  table's file.
 *	- a query level, as each temporary relation gets its paths
 *	  (tb_level_may_use_workers()): its base relations priced so far, by
 *	  their cheapest serial path, the others by size;
 *	- a join of the top level, once all its base relations have paths
 *	  (tb_join_may_be_inner()): is there a driver outside it?  Only then
 *	  can it be the inner side of a parallel join, which its parallel-safe
 *	  paths (join_paths.c) are for.  And the join of the whole level
 *	  (tb_join_may_use_workers()), once core has a serial path of it
 *	  cheaper than a Gather's setup: no parallel plan can win.
 *
 * Each answers "maybe" where it cannot know, so nothing that could win is
 * skipped.  debug_parallel_query (force_parallel_mode before 16) puts
 * every plan it can under Gather: then nothing is skipped either.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "compat.h"
#include "worker_gate.h"

/* The top query level's drivers, found once its base relations have paths. */
static TbWorkerGate gate = {NULL, NULL};

/*
 * Put state in place of the statement's, handing back the one it had: a
 * statement planned while another is (a function the planner evaluates)
 * has its own.
 */
void
tb_worker_gate_swap(TbWorkerGate *state)
{
	TbWorkerGate previous = gate;

	gate = *state;
	*state = previous;
}

/* Could a table of this many pages, with indexes or not, be read in parallel? */
static bool
pages_may_be_partial(double pages, bool has_index)
{
	return pages >= (double) min_parallel_table_scan_size ||
		(has_index && pages >= (double) min_parallel_index_scan_size);
}

/*
 * A temporary table's size in blocks.  Only this backend extends or
 * truncates its file, and smgr keeps the size it last found or made
 * (smgr_cached_nblocks, which core trusts only in recovery, since other
 * backends change permanent relations' files): the last planning's lseek()
 * serves again, a system call that a loop of short statements would pay
 * once more per table.  Without it, the file is asked.
 */
static BlockNumber
temp_relation_blocks(Relation relation)
{
	BlockNumber cached = RelationGetSmgr(relation)->smgr_cached_nblocks[MAIN_FORKNUM];

	return cached != InvalidBlockNumber ? cached : RelationGetNumberOfBlocks(relation);
}

/*
 * The statement check for one relation it names: returns its persistence,
 * says whether it may be big enough to drive workers and whether it has
 * children.  One catalog lookup, as get_rel_persistence() made.  A
 * temporary table that pg_class calls small is measured by its file (core
 * reads it too, when it plans), since ANALYZE may never have run on it.
 * Partitioned, inheritance and foreign tables, and tables with options
 * (parallel_workers, say), are taken to be big enough.
 */
char
tb_relation_facts(Oid relid, bool *may_drive, bool *has_children)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class form;
	char		persistence;
	bool		has_options;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	form = (Form_pg_class) GETSTRUCT(tuple);
	persistence = form->relpersistence;
	has_options = !heap_attisnull(tuple, Anum_pg_class_reloptions, NULL);
	*has_children = form->relhassubclass;

	if (max_parallel_workers_per_gather <= 0)
		*may_drive = false;
	else if ((form->relkind != RELKIND_RELATION && form->relkind != RELKIND_MATVIEW) ||
			 form->relhassubclass || has_options)
		*may_drive = true;
	else
	{
		double		pages = form->relpages;

		if (persistence == RELPERSISTENCE_TEMP &&
			!pages_may_be_partial(pages, form->relhasindex))
		{
			Relation	relation = relation_open(relid, NoLock);

			/* Another session's: planning it fails in core anyway. */
			if (!RELATION_IS_OTHER_TEMP(relation))
				pages = Max(pages, temp_relation_blocks(relation));
			relation_close(relation, NoLock);
		}
		*may_drive = pages_may_be_partial(pages, form->relhasindex);
	}
	ReleaseSysCache(tuple);
	return persistence;
}

/* A base relation not priced yet: by its size, as the statement check. */
bool
tb_rel_may_be_partial(RelOptInfo *rel)
{
	ListCell   *lc;
	bool		has_index = false;

	if (rel->rtekind != RTE_RELATION)
		return false;
	if (rel->rel_parallel_workers > 0)
		return true;
	foreach(lc, rel->indexlist)
		if (lfirst_node(IndexOptInfo, lc)->pages >= min_parallel_index_scan_size)
			has_index = true;
	return pages_may_be_partial(rel->pages, has_index);
}

/* What reading rel alone costs in one process: its cheapest unparameterized path. */
static Cost
cheapest_serial_cost(RelOptInfo *rel)
{
	Cost		cheapest = -1;
	ListCell   *lc;

	foreach(lc, rel->pathlist)
	{
		Path	   *path = lfirst(lc);

		if (path->param_info == NULL && (cheapest < 0 || path->total_cost < cheapest))
			cheapest = path->total_cost;
	}
	return cheapest;
}

/*
 * May rel, a base relation of root, drive workers?  Once it has paths: if
 * it has partial ones (or, a temporary table given none of ours, is big
 * enough for them), and its serial read costs at least a Gather's setup.
 * An appendrel parent gets its paths from its members', which get theirs
 * first: it may.
 */
static bool
base_rel_may_drive(PlannerInfo *root, RelOptInfo *rel)
{
	if (rel->reloptkind != RELOPT_BASEREL)
		return false;
	if (root->simple_rte_array[rel->relid]->inh)
		return true;
	if (rel->pathlist == NIL)
		return tb_rel_may_be_partial(rel);
	if (IS_DUMMY_REL(rel))
		return false;
	/* No partial path: core judged it (consider_parallel) or we gave none. */
	if (rel->partial_pathlist == NIL &&
		(rel->consider_parallel || !tb_rel_may_be_partial(rel)))
		return false;
	return cheapest_serial_cost(rel) >= parallel_setup_cost;
}

/*
 * May a plan of this query level use workers, as far as its base
 * relations tell so far?  Called as a temporary relation of it gets its
 * paths.  A subquery's level is planned before, or apart from, its
 * parent's relations, which may drive workers over it: it may.
 */
bool
tb_level_may_use_workers(PlannerInfo *root)
{
	if (TbParallelForced() || root->parent_root != NULL)
		return true;
	for (int i = 1; i < root->simple_rel_array_size; i++)
	{
		RelOptInfo *rel = root->simple_rel_array[i];

		if (rel != NULL && base_rel_may_drive(root, rel))
			return true;
	}
	return false;
}

/*
 * May a plan of joinrel use workers at all?  Not the join of the whole
 * top level once core found it a serial path cheaper than a Gather's
 * setup, which every parallel plan of it pays (a small table joined to a
 * big one through its index, say).
 */
bool
tb_join_may_use_workers(PlannerInfo *root, RelOptInfo *joinrel)
{
	Cost		serial;

	if (TbParallelForced() || root->parent_root != NULL ||
		!bms_is_subset(root->all_baserels, joinrel->relids))
		return true;
	serial = cheapest_serial_cost(joinrel);
	return serial < 0 || serial >= parallel_setup_cost;
}

/*
 * May joinrel be the inner side of a parallel join: is there a driver
 * outside it?  Every base relation of the top level has its paths by the
 * time joins are made, so its drivers are found once.
 */
bool
tb_join_may_be_inner(PlannerInfo *root, RelOptInfo *joinrel)
{
	if (TbParallelForced() || root->parent_root != NULL)
		return true;
	if (gate.root != root)
	{
		/* GEQO makes joins in a context it resets: keep them in the root's. */
		MemoryContext oldcxt = MemoryContextSwitchTo(root->planner_cxt);

		gate.drivers = NULL;
		for (int i = 1; i < root->simple_rel_array_size; i++)
		{
			RelOptInfo *rel = root->simple_rel_array[i];

			if (rel != NULL && base_rel_may_drive(root, rel))
				gate.drivers = bms_add_member(gate.drivers, i);
		}
		gate.root = root;
		MemoryContextSwitchTo(oldcxt);
	}
	return !bms_is_subset(gate.drivers, joinrel->relids);
}
