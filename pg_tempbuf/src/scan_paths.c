/*-------------------------------------------------------------------------
 *
 * scan_paths.c
 *	  Offer the planner "Temp Seq Scan" paths for a temporary table, priced
 *	  with the flush cost model, and then our index paths (index_paths.c).
 *
 * For a temporary table (or a member of one) that passed the checks of
 * tb_set_rel_pathlist() (planner.c), two paths of ours:
 *
 *	- a partial one (parallel aware: participants share the blocks), when
 *	  the table is big enough for workers, for Gather to sit on;
 *	- a full one (parallel safe, not parallel aware: every participant
 *	  reads the whole table), whatever the table's size, so that core can
 *	  put a temporary table on the inner side of any join, under Memoize or
 *	  Materialize, in a semi or anti join, inside a parallel plan.
 *
 * The stock paths keep parallel_safe = false, so a stock scan of a
 * temporary table never lands in a worker.  Non-partial paths go through
 * hidden_paths.c, which keeps those of the top level's base relations out
 * of core's own join search.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "nodes/extensible.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "utils/rel.h"
#include "utils/spccache.h"

#include "compat.h"
#include "core_copies.h"
#include "flush_cost.h"
#include "guc.h"
#include "hidden_paths.h"
#include "index_paths.h"
#include "leader_pages.h"
#include "localbuf_access.h"
#include "query_facts.h"
#include "scan_paths.h"
#include "temp_scan.h"
#include "toast_reader.h"

static Plan *plan_temp_scan_path(PlannerInfo *root, RelOptInfo *rel,
								 CustomPath *best_path, List *tlist,
								 List *clauses, List *custom_plans);

static const CustomPathMethods temp_scan_path_methods = {
	.CustomName = TB_TEMP_SCAN_NAME,
	.PlanCustomPath = plan_temp_scan_path,
};

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

/*
 * A seq scan's cost, plus what flush_cost.c adds: the flush and the
 * workers' private reads.  A partial path divides the rows and the CPU
 * work among the participants.  Where workers read the leader's pages in
 * its pool (shared_pool.c), a page costs what core charges a parallel seq
 * scan of a permanent table, whose pages are shared-buffer hits at best:
 * the same, whole.  Where they cannot, they read the OS cache privately
 * (read_page_cost, flush_cost.c), and the pages the leader holds divide
 * among the participants instead: core keeps page reads whole because
 * participants share one disk, but no participant reads those pages from
 * a disk; each costs one participant, as a tuple does.  A partial scan adds
 * pg_tempbuf.parallel_margin of its flush's price: the estimate of ours
 * whose error has cost plans their win, which a plan in workers must beat
 * to be chosen.  With nothing to flush, the plan is chosen as core chooses
 * one for a permanent table.
 */
/*
 * Is a sequential scan of rel disabled?  As core's Seq Scan path of it is:
 * enable_seqscan = off, or the setting another extension had in force
 * while core built the rel's paths (pg_hint_plan's NoSeqScan(t) and
 * IndexScan(t) set it around its own hook, before ours adds paths).
 */
static bool
seq_scan_disabled(RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, rel->pathlist)
	{
		Path	   *path = lfirst(lc);

		if (path->pathtype == T_SeqScan && path->param_info == NULL)
			return TbPathDisabled(path);
	}
	return !enable_seqscan;
}

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
	Cost		flush;
	double		resident_pages;
	double		page_cost;
	Cost		margin;

	if (path->parallel_aware)
		divisor = tb_parallel_divisor(path->parallel_workers);

	get_tablespace_page_costs(rel->reltablespace, NULL, &spc_seq_page_cost);
	resident_pages = Min(price->resident_pages, rel->pages);
	if (path->parallel_aware && tb_leader_pages_readable())
		page_cost = spc_seq_page_cost * rel->pages;
	else
		page_cost = spc_seq_page_cost *
			(rel->pages - resident_pages + resident_pages / divisor);

	path->rows = clamp_row_est(rel->rows / divisor);

	startup_cost = rel->baserestrictcost.startup;
	cpu_per_tuple = cpu_tuple_cost + rel->baserestrictcost.per_tuple;
	cpu_run_cost = cpu_per_tuple * rel->tuples / divisor;

	startup_cost += path->pathtarget->cost.startup;
	cpu_run_cost += path->pathtarget->cost.per_tuple * path->rows;

	tb_temp_scan_extra_cost(price, path->parallel_aware, path->parallel_workers,
							divisor, cpu_run_cost, &extra_startup, &extra_run,
							&flush);

	/*
	 * debug_parallel_query asks for a Gather over any parallel-safe plan, as
	 * regression suites run: a full scan then costs what the stock one does,
	 * and wins the tie by being parallel safe (add_path()), as core's scan
	 * of a permanent table would be.  The flush still happens.
	 */
	if (!path->parallel_aware && TbParallelForced())
		extra_startup = extra_run = 0.0;
	startup_cost += extra_startup;

	/*
	 * The margin, for a partial scan.  A full scan is the inner side of a
	 * plan whose partial path bears it; charged there too, it would tip the
	 * planner towards plans that read a table both in workers and, through
	 * a stock scan, above the Gather, which plan_walk.c must plan again
	 * serially.
	 */
	margin = path->parallel_aware ? tb_parallel_margin * flush : 0.0;

	path->startup_cost = startup_cost;
	path->total_cost = startup_cost + cpu_run_cost + extra_run + page_cost +
		margin;

	/* It is a sequential scan: disabled where core's is. */
	if (seq_scan_disabled(rel))
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
 * Our paths for rel, a temporary table (or a member of one) that passed
 * tb_set_rel_pathlist()'s checks (planner.c).
 */
void
tb_offer_paths(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte)
{
	Relation	relation;
	TbScanPrice price;
	TbRelFileId heap_file;
	bool		vm_known_clean;
	bool		toast_sensitive;
	bool		supported;
	int			parallel_workers;
	double		flush_cost;
	TbScanPrice partial_price;
	double		partial_flush_cost;

	/* The parser holds a lock on the table already. */
	relation = table_open(rte->relid, NoLock);
	if (RELATION_IS_OTHER_TEMP(relation))
	{
		table_close(relation, NoLock);
		return;
	}
	supported = scan_columns_supported(rel, relation, &toast_sensitive);
	if (toast_sensitive && tb_planning.inspects_storage)
		supported = false;
	tb_temp_scan_price(relation, &price);

	/*
	 * Participants fetch out-of-line values through private pages of the
	 * toast relation, which the leader flushes, with the table, before
	 * workers start; a partial scan's workers copy them from the leader's
	 * pool instead, where they can map it (temp_scan_supply.c).  Reading
	 * them costs what a serial scan's detoasting costs, which core does
	 * not price either; only the flush is extra.
	 */
	partial_price = price;
	if (supported && toast_sensitive)
	{
		int			toast_dirty;
		bool		toast_clean;

		tb_toast_price(relation, &toast_dirty, &price.upfront, &toast_clean);
		price.dirty_pages += toast_dirty;
		price.known_clean = price.known_clean && toast_clean;
		if (!(tb_leader_pages_readable() && parallel_leader_participation))
			partial_price = price;
	}
	flush_cost = tb_priced_flush(&price);
	partial_flush_cost = tb_priced_flush(&partial_price);
	heap_file = TbRelationFileId(relation);
	vm_known_clean = tb_fork_known_clean(&heap_file, VISIBILITYMAP_FORKNUM);
	table_close(relation, NoLock);
	if (!supported)
		return;

	rel->consider_parallel = true;
	tb_planning.paths_offered++;

	tb_add_safe_path(root, rel, &make_temp_scan_path(rel, false, 0, toast_sensitive,
													 &price, flush_cost)->path);

	parallel_workers = compute_parallel_worker(rel, rel->pages, -1,
											   max_parallel_workers_per_gather);
	if (parallel_workers > 0)
		add_partial_path(rel, &make_temp_scan_path(rel, true, parallel_workers,
												   toast_sensitive, &partial_price,
												   partial_flush_cost)->path);

	/*
	 * A SubPlan, InitPlan or CTE keeps only its cheapest path, which would
	 * be the stock Seq Scan: then a SubPlan over this table could never be
	 * parallel safe.  Leave it our full scan instead; a plan that ends up
	 * serial gets the stock scan back (plan_walk.c).  A subquery in FROM
	 * keeps both, for its parent to choose: our full scan is priced for a
	 * worker's read, and alone it made TPC-H Q18's IN (... GROUP BY) a
	 * parallel aggregate that spilled, 10% slower than the serial one.
	 */
	if (tb_planned_alone(root))
		drop_stock_seq_scans(rel);

	if (tb_index_scan_enabled)
	{
		tb_add_temp_index_paths(root, rel, &price, vm_known_clean);
		tb_add_temp_bitmap_paths(root, rel, &price);
	}
}

/* The paths tb_set_rel_pathlist() deferred for rel, now that a join asks. */
void
tb_offer_deferred_paths(PlannerInfo *root, RelOptInfo *rel)
{
	tb_offer_paths(root, rel, root->simple_rte_array[rel->relid]);
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
