/*-------------------------------------------------------------------------
 *
 * index_paths.c
 *	  Offer the planner "Temp Index Scan", "Temp Index Only Scan" and "Temp
 *	  Bitmap Heap Scan" paths for a temporary table: core's own btree index
 *	  and bitmap heap paths, made parallel safe, priced with the flush of
 *	  the table and its indexes and the participants' private reads.
 *
 * Core makes index paths for temporary tables, none parallel safe, and no
 * partial index path.  Each of ours wraps core's stock path, which core
 * plans into the Index Scan, Index Only Scan or Bitmap Heap Scan that our
 * node carries (temp_index_scan.c, temp_bitmap_scan.c): the same rows,
 * order and parameterization, core's cost plus what flush_cost.c and the
 * private reads add.  scan_paths.c offers these after its own, for a
 * statement that runs no code which may read tables (query_facts.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/xlog.h"
#include "catalog/pg_am.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "utils/rel.h"
#include "utils/spccache.h"
#include "utils/syscache.h"

#include "compat.h"
#include "core_copies.h"
#include "flush_cost.h"
#include "guc.h"
#include "hidden_paths.h"
#include "index_paths.h"
#include "leader_pages.h"
#include "localbuf_access.h"
#include "query_facts.h"
#include "temp_bitmap_scan.h"
#include "temp_index_scan.h"

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
	bool		leader_copies;	/* workers copy the leader's pages: no flush */
} TempIndexPath;

/*
 * Is the index in the catalog?  Not one the planner knows only by its
 * IndexOptInfo: a hypothetical index (hypopg's), which nothing can open.
 * Such an index is left to core's paths.
 */
static bool
index_in_catalog(IndexOptInfo *index)
{
	return SearchSysCacheExists1(RELOID, ObjectIdGetDatum(index->indexoid));
}

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
 * path touches change in core's price: each page once (page_source.c
 * caches them), like the Temp Seq Scan's private reads.  Such a scan under
 * Gather runs whole in every participant, and core prices a correlated one
 * at as little as seq_page_cost a page.  A parameterized path needs
 * nothing more: core prices each distinct page its loops touch at
 * random_page_cost (index_pages_fetched() in cost_index()), more than a
 * private read, and the participants of a partial join share the loops.
 *
 * A shared range's participants each read their share.  Where workers
 * copy the pages the leader holds out of its pool (leader_pages.c), such a
 * page costs them a shared hit and any other page the read from the file
 * the serial scan pays too: core's price, as for an UNLOGGED copy, with
 * nothing added.  Where they cannot, core keeps a
 * partial index path's page reads whole, for participants that share one
 * disk; the pages the leader holds in local buffers come from none (as
 * in cost_temp_scan()): each costs the one participant that reads it, so
 * the part of core's price that is not theirs, at least seq_page_cost a
 * page, comes off.  The range is shared a leaf at a time (btree_reader.c):
 * a range of fewer leaves than participants is read by as many.
 */
/*
 * A worker's private read of one page.  Under code that may prune pages in
 * the leader, a cluster without data checksums has workers read each page
 * twice and compare (page_source.c): twice the price.
 */
static double
private_read_page_cost(void)
{
	if (tb_planning.runs_opaque_code && !DataChecksumsEnabled())
		return 2.0 * tb_read_page_cost;
	return tb_read_page_cost;
}

static bool leader_copies_possible(void);

static Cost
private_reads(PlannerInfo *root, RelOptInfo *rel, IndexPath *ipath,
			  const TbScanPrice *price, double loop_count)
{
	IndexOptInfo *index = ipath->indexinfo;
	double		tuples = ipath->indexselectivity * rel->tuples;
	double		heap_pages;
	double		index_pages;
	Cost		reads;

	/*
	 * Out of the leader's pool, a page it holds costs a worker a shared hit
	 * and another one the read from the file the serial scan pays too:
	 * core's price, as for an UNLOGGED copy, with nothing added.
	 */
	if (loop_count > 1.0 || (leader_copies_possible() && ipath->path.parallel_aware))
		return 0.0;
	heap_pages = index_pages_fetched(tuples, rel->pages, (double) index->pages, root);
	if (ipath->path.pathtype == T_IndexOnlyScan)
		heap_pages = ceil(heap_pages * (1.0 - rel->allvisfrac));
	index_pages = ceil(ipath->indexselectivity * index->pages);
	reads = private_read_page_cost() * (heap_pages + index_pages);

	if (ipath->path.parallel_aware)
	{
		double		divisor = tb_parallel_divisor(ipath->path.parallel_workers);
		double		sharers = Min(divisor, Max(1.0, index_pages));
		double		resident = rel->pages > 0 ?
			Min(1.0, price->resident_pages / (double) rel->pages) : 0.0;
		double		spc_seq_page_cost;

		get_tablespace_page_costs(rel->reltablespace, NULL, &spc_seq_page_cost);
		reads *= ipath->path.parallel_workers / divisor / divisor;
		reads -= spc_seq_page_cost * (heap_pages + index_pages) * resident *
			(1.0 - 1.0 / sharers);
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
 * margin (pg_tempbuf.parallel_margin) of the flush's price.  Core plans the stock
 * path into the plan our node carries (custom_plans).
 */
static CustomPath *
make_wrapping_path(RelOptInfo *rel, Path *stock, const TbScanPrice *price,
				   Cost reads, double loop_count, const CustomPathMethods *methods)
{
	TempIndexPath *tpath = palloc0(sizeof(TempIndexPath));
	CustomPath *cpath = &tpath->cpath;
	Cost		flush = tb_priced_flush(price);

	/* The margin (as cost_temp_scan()'s), for a shared range. */
	Cost		margin = stock->parallel_aware ? tb_parallel_margin * flush : 0.0;

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
	/* As a full Temp Seq Scan under debug_parallel_query (cost_temp_scan()). */
	if (!stock->parallel_aware && TbParallelForced())
		flush = reads = 0.0;
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
							  private_reads(root, rel, ipath, price, loop_count),
							  loop_count, &temp_index_path_methods);
}

/*
 * A shared range's workers, and a partial bitmap scan's, copy the pages
 * the leader holds out of its pool where they can map it (leader_pages.c),
 * as a partial Temp Seq Scan's read them: the pages they read from the
 * files are then the ones not in local buffers, on disk already, and
 * nothing is written.  A worker the system refuses takes no part of the
 * scan.  Under code that may read the table in the leader, which could
 * prune a page while a worker copies it, workers copy each page twice and
 * compare (page_source.c).
 */
static bool
leader_copies_possible(void)
{
	return tb_leader_pages_readable();
}

/* price, with none of its pages to write: the workers copy them. */
static TbScanPrice
nothing_to_write(const TbScanPrice *price)
{
	TbScanPrice copied = *price;

	copied.dirty_pages = 0;
	copied.known_clean = true;
	return copied;
}

static CustomPath *
make_partial_temp_index_path(PlannerInfo *root, RelOptInfo *rel, IndexPath *ipath,
							 const TbScanPrice *price)
{
	TbScanPrice copied;
	TempIndexPath *tpath;

	if (!leader_copies_possible())
		return make_temp_index_path(root, rel, ipath, price, 1.0);
	copied = nothing_to_write(price);
	tpath = (TempIndexPath *) make_temp_index_path(root, rel, ipath, &copied, 1.0);
	tpath->leader_copies = true;
	return &tpath->cpath;
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
void
tb_add_temp_index_paths(PlannerInfo *root, RelOptInfo *rel, const TbScanPrice *price,
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
		TbScanPrice serial_price;
		bool		from_pool;

		if (index->relam != BTREE_AM_OID || ipath->indexorderbys != NIL ||
			!index_in_catalog(index))
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
		/*
		 * Its workers copy the leader's pages out of its pool where some are
		 * dirty, else read the files (temp_index_scan.c): nothing to write
		 * and nothing to read privately, or the flush and the reads.
		 */
		from_pool = leader_copies_possible() && index_price.dirty_pages > 0;
		serial_price = from_pool ? nothing_to_write(&index_price) : index_price;
		tb_add_safe_path(root, rel,
						 &make_wrapping_path(rel, &ipath->path, &serial_price,
											 from_pool ? 0.0 :
											 private_reads(root, rel, ipath, &index_price,
														   loop_count),
											 loop_count, &temp_index_path_methods)->path);

		if (outer == NULL && ipath->indexscandir != BackwardScanDirection)
		{
			IndexPath  *partial = create_index_path(root, index, ipath->indexclauses,
													NIL, NIL, ipath->path.pathkeys,
													ipath->indexscandir,
													ipath->path.pathtype == T_IndexOnlyScan,
													NULL, 1.0, true);

			if (partial->path.parallel_aware)
				add_partial_path(rel, &make_partial_temp_index_path(root, rel, partial,
																	&index_price)->path);
		}

		/*
		 * As drop_stock_seq_scans() (scan_paths.c), for the same reason,
		 * where only one path is kept: a subquery in FROM keeps core's
		 * cheaper serial path beside ours, for its parent to choose.
		 */
		if (tb_planned_alone(root))
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
			ipath->indexscandir == BackwardScanDirection || !index_in_catalog(index))
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
 * index pages it touches (see private_reads()).  An unparameterized one
 * also gets a partial form, as core makes for permanent tables
 * (create_partial_bitmap_paths()): one bitmap, built by one participant,
 * whose heap pages the participants share, read privately.
 */
void
tb_add_temp_bitmap_paths(PlannerInfo *root, RelOptInfo *rel, const TbScanPrice *price)
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
		TbScanPrice serial_price;
		List	   *indexoids = NIL;
		double		index_pages = 0.0;
		double		heap_pages = 0.0;
		Cost		reads = 0.0;

		if (bpath->path.param_info &&
			!is_parallel_safe(root, (Node *) bpath->path.param_info->ppi_clauses))
			continue;
		if (!bitmap_tree_supported(bpath->bitmapqual, &bitmap_price, &indexoids,
								   &index_pages))
			continue;
		/* Unparameterized (outer NULL) included: its partial form uses heap_pages. */
		if (loop_count <= 1.0)
		{
			heap_pages = compute_bitmap_pages(root, rel, bpath->bitmapqual, 1, NULL, NULL);
			reads = private_read_page_cost() * (heap_pages + index_pages);
		}
		/* Core's bitmap heap paths are neither parallel aware nor ordered. */
		serial_price = bitmap_price;
		if (leader_copies_possible() && bitmap_price.dirty_pages > 0)
		{
			/* Its workers copy the leader's pages out of its pool, as in private_reads(). */
			serial_price = nothing_to_write(&bitmap_price);
			reads = 0.0;
		}
		tb_add_safe_path(root, rel,
						 &make_wrapping_path(rel, &bpath->path, &serial_price, reads,
											 loop_count, &temp_bitmap_path_methods)->path);

		if (outer == NULL)
		{
			int			workers = compute_parallel_worker(rel, heap_pages, -1,
														  max_parallel_workers_per_gather);

			if (workers > 0)
			{
				BitmapHeapPath *partial = create_bitmap_heap_path(root, rel,
																  bpath->bitmapqual,
																  NULL, 1.0, workers);

				/* The list holds the table, its indexes and its toast. */
				bool		copies = leader_copies_possible() &&
					list_length(indexoids) + 3 <= TB_LEADER_PAGES_MAX_RELS;
				TbScanPrice partial_price = copies ? nothing_to_write(&bitmap_price) : bitmap_price;
				TempIndexPath *tpath;

				/*
				 * Each participant reads its share of the heap pages; out of
				 * the leader's pool, as core prices an UNLOGGED copy's.
				 */
				reads = copies ? 0.0 : private_read_page_cost() *
					(heap_pages / tb_parallel_divisor(workers) + index_pages);
				tpath = (TempIndexPath *) make_wrapping_path(rel, &partial->path,
															 &partial_price, reads, 1.0,
															 &temp_bitmap_path_methods);
				tpath->leader_copies = copies;
				add_partial_path(rel, &tpath->cpath.path);
			}
		}

		/* As tb_add_temp_index_paths(). */
		if (tb_planned_alone(root))
			rel->pathlist = list_delete_ptr(rel->pathlist, original);
	}
	list_free_deep(stock);
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
										tpath->est_flush_cost, false,
										tpath->leader_copies);
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
										 tpath->est_flush_cost,
										 tpath->leader_copies);
}
