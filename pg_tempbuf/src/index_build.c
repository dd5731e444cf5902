/*-------------------------------------------------------------------------
 *
 * index_build.c
 *	  CREATE INDEX and REINDEX of a btree on a temporary table, with
 *	  parallel workers.
 *
 * Core builds a btree with workers for a permanent or UNLOGGED table, and
 * with none for a temporary one: plan_create_index_workers() returns 0 for
 * it, as a worker cannot see the leader's local buffers.  Here each worker
 * reads its share of the table's pages out of the leader's pool, or from
 * the file, into a small ring of local buffers of its own (build_scan.c);
 * core's parallel build (nbtsort.c) does all the rest: the workers scan
 * and sort their share of the blocks, the leader scans its own, merges the
 * runs and writes the index.
 *
 * Three small interventions, and no copy of core's build:
 * - get_relation_info_hook (build_simple_rel_hook from 19, compat.h):
 *   index_build() asks plan_create_index_workers() how many workers to
 *   request, and that plans a dummy query over the table.  The hook sees it
 *   there, once the index's relcache entry is final and just before
 *   index_build() calls the access method's ambuild, and gives the table's
 *   btree indexes an access method routine of their own whose ambuild is
 *   tb_btbuild().
 * - tb_btbuild() takes core's rule for a permanent table of that size
 *   (build_workers()) and calls btbuild() asking for that many workers.
 *   Where workers can map its pool (shared_pool.c) the leader writes
 *   nothing; elsewhere it writes the table's dirty pages first.
 * - A setting the leader sets for the build, pg_tempbuf.build_worker_scan:
 *   restored in each worker before the build's entry point runs, it has
 *   the worker route its scan of the table through build_scan.c.
 *
 * No worker writes a page.  The leader may, when its own pool is full,
 * write back one it dirtied during the build (hint bits, a prune): a heap
 * page of its own share, which no worker reads, but a TOAST page could be
 * one a worker reads at that moment.  So a build whose workers would read
 * TOAST (the index reads a varlena column and the table's TOAST relation
 * has pages) stays serial.
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
#include "utils/inval.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "build_scan.h"
#include "compat.h"
#include "guc.h"
#include "index_build.h"
#include "leader_pages.h"
#include "localbuf_access.h"

static TbRelationInfoHookType prev_relation_info_hook = NULL;

/*
 * The table whose index build asked plan_create_index_workers() for a
 * count, until tb_btbuild() runs: only such a build (index_build() with
 * parallel = true) may get workers.
 */
static Oid	build_asked_for = InvalidOid;

/*
 * pg_tempbuf.build_worker_scan: set by the leader of a parallel build for
 * its duration only, and so sent to its workers with the other settings
 * (index_build() reverts it): "relid source", the table and where workers
 * find the pages the leader holds ("pool", or "file" where it wrote them).
 * Not meant to be set by hand.
 */
static char *build_worker_scan = NULL;

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
 * Where workers cannot map its pool, the leader writes the table's dirty
 * pages before its workers start, and that can cost more than a worker
 * saves: on the project's 2-vCPU VM, a
 * 5M-row table wholly dirty in a 1GB pool built at 0.68x (int key) and
 * 0.86x (text) of the serial build, while one whose dirty pages were 2-12%
 * of it (the default 8MB pool) built 1.05-1.49x faster (pglab index-build,
 * docs/experiments/index-build.md).  So a build whose table has more than
 * a quarter of its pages dirty stays serial, unless they are no more than
 * the default 8MB pool holds (1,024 pages: a few milliseconds to write).
 */
#define MAX_DIRTY_SHARE	0.25
#define DIRTY_PAGES_ALWAYS_WRITTEN	1024

static bool
too_much_to_write(Relation heap, BlockNumber blocks)
{
	TbRelFileId file = TbRelationFileId(heap);
	TbLocalBufferCounts counts;

	tb_count_local_buffers(&file, MAIN_FORKNUM, &counts);
	if (counts.dirty <= DIRTY_PAGES_ALWAYS_WRITTEN ||
		counts.dirty <= MAX_DIRTY_SHARE * blocks)
		return false;
	ereport(DEBUG1,
			(errmsg_internal("building index on temporary table \"%s\" serially: workers cannot map the leader's local buffers, and %d of its %u pages would have to be written for them",
							 RelationGetRelationName(heap), counts.dirty, blocks)));
	return true;
}

/*
 * The access method's build of a btree on one of this session's temporary
 * tables (see the file's header).  Anything else goes to btbuild() as it is.
 */
static IndexBuildResult *
tb_btbuild(Relation heap, Relation index, IndexInfo *indexInfo)
{
	bool		asked = build_asked_for == RelationGetRelid(heap);
	BlockNumber blocks;
	int			workers;
	bool		from_pool;
	char		setting[32];

	build_asked_for = InvalidOid;
	if (!asked || !tb_parallel_index_build || !heap->rd_islocaltemp ||
		indexInfo->ii_ParallelWorkers != 0)
		return btbuild(heap, index, indexInfo);

	workers = build_workers(heap, index);
	blocks = RelationGetNumberOfBlocks(heap);
	if (workers == 0)
		return btbuild(heap, index, indexInfo);
	if (workers_would_read_toast(heap, indexInfo))
	{
		ereport(DEBUG1,
				(errmsg_internal("building index \"%s\" on temporary table \"%s\" serially: its workers would read TOAST pages the leader may write meanwhile",
								 RelationGetRelationName(index), RelationGetRelationName(heap))));
		return btbuild(heap, index, indexInfo);
	}

	/* The pool's directory published, workers copy the pages it holds. */
	from_pool = tb_leader_pages_serve_from_pool();
	if (!from_pool && too_much_to_write(heap, blocks))
		return btbuild(heap, index, indexInfo);
	if (!from_pool)
	{
		TbRelFileId file = TbRelationFileId(heap);
		int64		written = tb_flush_local_buffers(&file, InvalidForkNumber);

		elog(DEBUG2, "%lld pages of temporary table \"%s\" written for the workers to read",
			 (long long) written, RelationGetRelationName(heap));
	}

	/*
	 * Sent to the workers with the other settings, reverted with the
	 * build's by index_build().
	 */
	snprintf(setting, sizeof(setting), "%u %s", RelationGetRelid(heap),
			 from_pool ? "pool" : "file");
	(void) set_config_option("pg_tempbuf.build_worker_scan", setting,
							 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	indexInfo->ii_ParallelWorkers = workers;
	ereport(DEBUG1,
			(errmsg_internal("building index \"%s\" on temporary table \"%s\" with request for %d parallel workers",
							 RelationGetRelationName(index),
							 RelationGetRelationName(heap), workers)));
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

/*
 * Point index's ambuild at tb_btbuild().  Core's routine may be shared
 * (19's bthandler() returns one static, read-only routine), so the index
 * gets a copy of its own, in its relcache entry's memory: it lasts as long
 * as the entry, and a rebuilt entry gets core's routine back.
 */
static void
route_build_through_us(Relation index)
{
	IndexAmRoutine *routine;

	routine = MemoryContextAlloc(index->rd_indexcxt, sizeof(IndexAmRoutine));
	memcpy(routine, index->rd_indam, sizeof(IndexAmRoutine));
	routine->ambuild = tb_btbuild;
	index->rd_indam = routine;
}

static void
see_relation_info(PlannerInfo *root, Oid relid, bool inhparent,
				  RelOptInfo *rel)
{
	Relation	heap;
	List	   *indexes;
	ListCell   *lc;

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
				route_build_through_us(index);
			RelationClose(index);
		}
	}
	list_free(indexes);
	table_close(heap, NoLock);
	build_asked_for = relid;
}

TB_RELATION_INFO_HOOK(tb_index_build_relation_info, prev_relation_info_hook,
					  see_relation_info)

/*
 * A worker of such a build prepares its scan (build_scan.c) once all of its
 * leader's settings are restored and it has its leader's snapshot, to see
 * the table's catalog rows as the leader does.  ParallelWorkerMain()
 * restores the settings, then resets the caches once it has the snapshot,
 * up to 17; 18 resets them first.  So whichever of the two comes second
 * prepares it: the reset (tb_index_build_worker_reset()), or the restore of
 * this setting.
 */
static Oid	worker_scan_relid = InvalidOid;
static bool worker_scan_from_pool = false;
static bool worker_caches_reset = false;

static void
assign_build_worker_scan(const char *newval, void *extra)
{
	unsigned int relid;
	char		source[8];

	if (newval == NULL || !InitializingParallelWorker || !IsParallelWorker() ||
		sscanf(newval, "%u %7s", &relid, source) != 2)
		return;
	worker_scan_relid = relid;
	worker_scan_from_pool = strcmp(source, "pool") == 0;
	if (worker_caches_reset)
		tb_build_scan_worker_prepare(worker_scan_relid, worker_scan_from_pool);
}

static void
tb_index_build_worker_reset(Datum arg, Oid relid)
{
	if (!IsParallelWorker())
		return;
	if (InitializingParallelWorker && !OidIsValid(relid) && ActiveSnapshotSet() &&
		!worker_caches_reset)
	{
		worker_caches_reset = true;
		if (OidIsValid(worker_scan_relid))
			tb_build_scan_worker_prepare(worker_scan_relid, worker_scan_from_pool);
		return;
	}
	tb_build_scan_worker_reset(relid);
}

void
tb_install_index_build_hooks(void)
{
	DefineCustomStringVariable("pg_tempbuf.build_worker_scan",
							   "The table a parallel worker of a btree build on a temporary table scans, and where it finds its pages (internal).",
							   "Set by the leader for such a build only.",
							   &build_worker_scan,
							   "",
							   PGC_SUSET,
							   GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL | GUC_NO_RESET_ALL |
							   GUC_DISALLOW_IN_FILE,
							   NULL, assign_build_worker_scan, NULL);
	CacheRegisterRelcacheCallback(tb_index_build_worker_reset, (Datum) 0);

	prev_relation_info_hook = TbRelationInfoHook;
	TbRelationInfoHook = tb_index_build_relation_info;
}
