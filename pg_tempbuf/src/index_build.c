/*-------------------------------------------------------------------------
 *
 * index_build.c
 *	  CREATE INDEX and REINDEX of a btree on a temporary table, with
 *	  parallel workers.
 *
 * Core builds a btree with workers for a permanent or UNLOGGED table, and
 * with none for a temporary one: plan_create_index_workers() returns 0 for
 * it, as a worker cannot see the leader's local buffers.  Here the leader
 * writes the table's dirty pages first, and each worker reads the table's
 * file through local buffers of its own; core's parallel build (nbtsort.c)
 * does all the rest: the workers scan and sort their share of the blocks,
 * the leader scans its own, merges the runs and writes the index.
 *
 * Three small interventions, and no copy of core's build:
 * - get_relation_info_hook: index_build() asks plan_create_index_workers()
 *   how many workers to request, and that plans a dummy query over the
 *   table.  The hook sees it there, once the index's relcache entry is
 *   final and just before index_build() calls the access method's ambuild,
 *   and points ambuild of the table's btree indexes at tb_btbuild().
 * - tb_btbuild() takes core's rule for a permanent table of that size
 *   (build_workers()), writes the table's dirty pages, and calls btbuild()
 *   asking for that many workers.
 * - A setting the leader sets for the build, pg_tempbuf.build_worker_buffers:
 *   restored in each worker before the build's entry point runs, it opens
 *   the worker's local buffers (guc.c; core would refuse them to a worker).
 *
 * The workers read only their own blocks of the table, so a page one of
 * them writes back (hint bits set, pruned) is never one another reads at
 * that moment.  TOAST pages are different: every participant may read any
 * of them, and one may write back a page another is reading.  So a build
 * whose workers would read TOAST (the index reads a varlena column and the
 * table's TOAST relation has pages) stays serial.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "access/parallel.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "catalog/pg_am_d.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "optimizer/plancat.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "compat.h"
#include "guc.h"
#include "index_build.h"
#include "localbuf_access.h"

static get_relation_info_hook_type prev_get_relation_info_hook = NULL;

/*
 * The table whose index build asked plan_create_index_workers() for a
 * count, until tb_btbuild() runs: only such a build (index_build() with
 * parallel = true) may get workers.
 */
static Oid	build_asked_for = InvalidOid;

/*
 * pg_tempbuf.build_worker_buffers: set by the leader of a parallel build
 * for its duration only, and so sent to its workers with the other
 * settings (index_build() reverts it).  Not meant to be set by hand.
 */
static int	build_worker_buffers = 0;

/*
 * Core's rule for the number of workers of a btree build on a permanent
 * table, as plan_create_index_workers() (optimizer/plan/planner.c) applies
 * it, less its refusal of temporary tables: none outside a postmaster or
 * with max_parallel_maintenance_workers = 0, none for expressions or a
 * predicate that are not parallel safe; the table's parallel_workers
 * option if set; else the count compute_parallel_worker() gives the table's
 * size, lowered until each participant has 32MB of maintenance_work_mem.
 */
static int
build_workers(Relation heap, Relation index)
{
	PlannerInfo *root;
	RelOptInfo *rel;
	BlockNumber heap_blocks;
	double		reltuples;
	double		allvisfrac;
	int			workers;

	if (!IsUnderPostmaster || max_parallel_maintenance_workers == 0)
		return 0;

	root = makeNode(PlannerInfo);
	root->glob = makeNode(PlannerGlobal);
	if (!is_parallel_safe(root, (Node *) RelationGetIndexExpressions(index)) ||
		!is_parallel_safe(root, (Node *) RelationGetIndexPredicate(index)))
		return 0;

	workers = RelationGetParallelWorkers(heap, -1);
	if (workers != -1)
		return Min(workers, max_parallel_maintenance_workers);

	estimate_rel_size(heap, NULL, &heap_blocks, &reltuples, &allvisfrac);
	rel = makeNode(RelOptInfo);
	rel->reloptkind = RELOPT_BASEREL;
	rel->rel_parallel_workers = -1;
	workers = compute_parallel_worker(rel, heap_blocks, -1,
									  max_parallel_maintenance_workers);
	while (workers > 0 && maintenance_work_mem / (workers + 1) < 32 * 1024L)
		workers--;
	return workers;
}

static bool
is_varlena_column(TupleDesc desc, AttrNumber attnum)
{
	return attnum > 0 && TupleDescAttr(desc, attnum - 1)->attlen == -1;
}

/*
 * Would the build's workers read the table's TOAST pages?  Only to detoast
 * a varlena column the index reads (a key, an INCLUDE column, one that an
 * expression or the predicate uses), and only if TOAST holds a page.
 */
static bool
workers_would_read_toast(Relation heap, IndexInfo *indexInfo)
{
	TupleDesc	desc = RelationGetDescr(heap);
	Bitmapset  *used = NULL;
	Relation	toast;
	BlockNumber toast_blocks;
	int			i;

	if (!OidIsValid(heap->rd_rel->reltoastrelid))
		return false;
	toast = table_open(heap->rd_rel->reltoastrelid, AccessShareLock);
	toast_blocks = RelationGetNumberOfBlocks(toast);
	table_close(toast, AccessShareLock);
	if (toast_blocks == 0)
		return false;

	for (i = 0; i < indexInfo->ii_NumIndexAttrs; i++)
		if (is_varlena_column(desc, indexInfo->ii_IndexAttrNumbers[i]))
			return true;
	pull_varattnos((Node *) indexInfo->ii_Expressions, 1, &used);
	pull_varattnos((Node *) indexInfo->ii_Predicate, 1, &used);
	i = -1;
	while ((i = bms_next_member(used, i)) >= 0)
	{
		AttrNumber	attnum = i + FirstLowInvalidHeapAttributeNumber;

		if (attnum == InvalidAttrNumber || is_varlena_column(desc, attnum))
			return true;		/* a whole-row reference reads them all */
	}
	return false;
}

/*
 * The access method's build of a btree on one of this session's temporary
 * tables (see the file's header).  Anything else goes to btbuild() as it is.
 */
static IndexBuildResult *
tb_btbuild(Relation heap, Relation index, IndexInfo *indexInfo)
{
	bool		asked = build_asked_for == RelationGetRelid(heap);
	int			workers;

	build_asked_for = InvalidOid;
	if (!asked || !tb_parallel_index_build || !heap->rd_islocaltemp ||
		indexInfo->ii_ParallelWorkers != 0)
		return btbuild(heap, index, indexInfo);

	workers = build_workers(heap, index);
	if (workers > 0 && !workers_would_read_toast(heap, indexInfo))
	{
		TbRelFileId file = TbRelationFileId(heap);
		int64		written = tb_flush_local_buffers(&file, InvalidForkNumber);
		char		buffers[32];

		/*
		 * Sent to the workers with the other settings, and reverted with the
		 * rest of the build's settings by index_build().
		 */
		snprintf(buffers, sizeof(buffers), "%d", num_temp_buffers);
		(void) set_config_option("pg_tempbuf.build_worker_buffers", buffers,
								 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, 0, false);
		indexInfo->ii_ParallelWorkers = workers;
		ereport(DEBUG1,
				(errmsg_internal("building index \"%s\" on temporary table \"%s\" with request for %d parallel workers",
								 RelationGetRelationName(index),
								 RelationGetRelationName(heap), workers),
				 errdetail_internal("%lld pages of the table written first, for the workers to read.",
									(long long) written)));
	}
	return btbuild(heap, index, indexInfo);
}

/*
 * plan_create_index_workers() plans a query with no join tree over one
 * relation, marked as an inheritance parent (so that get_relation_info()
 * leaves the indexes, one of them in the middle of its build, alone); a
 * query from the parser always has a join tree.
 */
static bool
is_index_build_planning(PlannerInfo *root, bool inhparent)
{
	return inhparent && root->parse != NULL && root->parse->jointree == NULL &&
		root->parent_root == NULL && list_length(root->parse->rtable) == 1;
}

static void
tb_index_build_relation_info(PlannerInfo *root, Oid relid, bool inhparent,
							 RelOptInfo *rel)
{
	Relation	heap;
	List	   *indexes;
	ListCell   *lc;

	if (prev_get_relation_info_hook)
		prev_get_relation_info_hook(root, relid, inhparent, rel);
	build_asked_for = InvalidOid;
	if (!tb_parallel_index_build || !is_index_build_planning(root, inhparent))
		return;

	heap = table_open(relid, NoLock);	/* locked by the build */
	if (!heap->rd_islocaltemp)
	{
		table_close(heap, NoLock);
		return;
	}
	indexes = RelationGetIndexList(heap);
	foreach(lc, indexes)
	{
		Relation	index = RelationIdGetRelation(lfirst_oid(lc));

		if (RelationIsValid(index))
		{
			if (index->rd_rel->relam == BTREE_AM_OID && index->rd_indam != NULL &&
				index->rd_indam->ambuild == btbuild)
				index->rd_indam->ambuild = tb_btbuild;
			RelationClose(index);
		}
	}
	list_free(indexes);
	table_close(heap, NoLock);
	build_asked_for = relid;
}

/*
 * pg_tempbuf.build_worker_buffers restored in a parallel worker of such a
 * build, before the build's entry point runs: open the worker's local
 * buffers, as many as its leader's temp_buffers, so that restoring
 * temp_buffers (before or after this one) finds the pool the size it asks.
 */
static void
assign_build_worker_buffers(int newval, void *extra)
{
	if (newval > 0 && InitializingParallelWorker && IsParallelWorker() &&
		NLocBuffer == 0)
	{
		num_temp_buffers = newval;
		tb_open_worker_local_buffers();
	}
}

void
tb_install_index_build_hooks(void)
{
	DefineCustomIntVariable("pg_tempbuf.build_worker_buffers",
							"Local buffers a parallel worker of a btree build on a temporary table opens (internal).",
							"The leader's temp_buffers during such a build, 0 otherwise.",
							&build_worker_buffers,
							build_worker_buffers,
							0, INT_MAX,
							PGC_SUSET,
							GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL | GUC_NO_RESET_ALL |
							GUC_DISALLOW_IN_FILE,
							NULL, assign_build_worker_buffers, NULL);

	prev_get_relation_info_hook = get_relation_info_hook;
	get_relation_info_hook = tb_index_build_relation_info;
}
