/*-------------------------------------------------------------------------
 *
 * plan_walk.c
 *	  After planning: make every read of a temporary table in one plan go
 *	  through the same kind of scan.
 *
 * Workers read a temporary table's file while the leader runs the rest of
 * the plan.  A stock scan of the same table in the leader (in an InitPlan,
 * say, or above Gather) reads it through local buffers, where it may set
 * hint bits, prune, and get pages written back by an eviction while
 * workers read them.  So, once the plan is known:
 *
 *	- in a parallel plan, a stock Seq Scan of a table that our scans also
 *	  read becomes a full scan of ours (same target list and quals: both
 *	  kinds of node take them from the table's tuples the same way);
 *	- so does a stock btree Index Scan above the Gather: a Temp Index Scan
 *	  that only the leader runs, through its local buffers as the stock one
 *	  would, but without setting a hint bit or pruning, and nothing to
 *	  flush (the price is the stock scan's);
 *	- another stock scan of such a table (index only, bitmap, TID) cannot:
 *	  the plan is made again without our paths for that table (our scans of
 *	  it would otherwise have to run in the leader alone, under a Gather
 *	  costed with workers);
 *	- in a plan that ended up without parallelism, a full scan of ours
 *	  becomes a stock Seq Scan again, a Temp Index Scan the Index Scan it
 *	  carries, a Temp Bitmap Heap Scan its Bitmap Heap Scan: nothing needs
 *	  the flush.
 *
 * And one saving that core makes for its own scans: a scan of ours that
 * an aggregate reads no column of (count(*)) hands up the table's tuples
 * as they are, instead of projecting an empty tuple from each.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_class.h"
#include "nodes/makefuncs.h"
#include "nodes/plannodes.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "plan_walk.h"
#include "scan_run.h"
#include "temp_bitmap_scan.h"
#include "temp_index_scan.h"
#include "temp_scan.h"

/* One scan of a table in the plan, and where the plan points to it. */
typedef struct ScanRef
{
	Plan	  **link;
	Plan	   *parent;			/* the node reading it; NULL at the top */
	Oid			relid;
	bool		under_gather;	/* runs in workers too */
} ScanRef;

typedef struct PlanScans
{
	List	   *rtable;
	List	   *scans;			/* ScanRef *, every scan of a plain relation */
	List	   *gathers;		/* Gather and Gather Merge nodes */
	int			gather_depth;	/* of the node being visited */
} PlanScans;

static void collect_scans(Plan **link, Plan *parent, PlanScans *found);

static void
collect_list(List *plans, Plan *parent, PlanScans *found)
{
	ListCell   *lc;

	foreach(lc, plans)
		collect_scans((Plan **) &lfirst(lc), parent, found);
}

static bool
is_relation_scan(Plan *plan)
{
	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapIndexScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
		case T_CustomScan:
			return ((Scan *) plan)->scanrelid > 0;
		default:
			return false;
	}
}

static void
collect_scans(Plan **link, Plan *parent, PlanScans *found)
{
	Plan	   *plan = *link;

	if (plan == NULL)
		return;

	if (is_relation_scan(plan))
	{
		RangeTblEntry *rte = rt_fetch(((Scan *) plan)->scanrelid, found->rtable);

		if (rte->rtekind == RTE_RELATION)
		{
			ScanRef    *ref = palloc(sizeof(ScanRef));

			ref->link = link;
			ref->parent = parent;
			ref->relid = rte->relid;
			ref->under_gather = found->gather_depth > 0;
			found->scans = lappend(found->scans, ref);
		}
	}

	if (IsA(plan, Gather) || IsA(plan, GatherMerge))
	{
		found->gathers = lappend(found->gathers, plan);
		found->gather_depth++;
	}

	collect_scans(&plan->lefttree, plan, found);
	collect_scans(&plan->righttree, plan, found);
	switch (nodeTag(plan))
	{
		case T_Append:
			collect_list(((Append *) plan)->appendplans, plan, found);
			break;
		case T_MergeAppend:
			collect_list(((MergeAppend *) plan)->mergeplans, plan, found);
			break;
		case T_BitmapAnd:
			collect_list(((BitmapAnd *) plan)->bitmapplans, plan, found);
			break;
		case T_BitmapOr:
			collect_list(((BitmapOr *) plan)->bitmapplans, plan, found);
			break;
		case T_SubqueryScan:
			collect_scans(&((SubqueryScan *) plan)->subplan, plan, found);
			break;
		case T_CustomScan:
			/* A Temp Index or Bitmap Heap Scan's child is a plan it keeps, never runs. */
			if (!tb_is_temp_index_scan(plan) && !tb_is_temp_bitmap_scan(plan))
				collect_list(((CustomScan *) plan)->custom_plans, plan, found);
			break;
		default:
			break;
	}
	if (IsA(plan, Gather) || IsA(plan, GatherMerge))
		found->gather_depth--;
}

/* Does the plan read a table privately, through a scan of ours? */
static bool
is_private_read(Plan *plan)
{
	return tb_is_temp_scan(plan) || tb_is_temp_index_scan(plan) ||
		tb_is_temp_bitmap_scan(plan);
}

/* A Temp Index Scan or Temp Bitmap Heap Scan: a stock scan it carries. */
static bool
carries_stock_scan(Plan *plan)
{
	return tb_is_temp_index_scan(plan) || tb_is_temp_bitmap_scan(plan);
}

/*
 * A Temp Index (Only) Scan in a plan without parallelism becomes the Index
 * (Only) Scan it carries, a Temp Bitmap Heap Scan its Bitmap Heap Scan,
 * with the target list the plan gave it (an index only scan's refers to
 * the index columns in the order both number them).
 * A parallel-aware one is under a Gather whose workers run it: never here.
 */
static Plan *
stock_scan_from_ours(CustomScan *cscan)
{
	Plan	   *stock = tb_is_temp_bitmap_scan(&cscan->scan.plan) ?
		tb_temp_bitmap_scan_stock_plan(cscan) :
		tb_temp_index_scan_stock_plan(cscan);

	Assert(!cscan->scan.plan.parallel_aware);

	stock->targetlist = cscan->scan.plan.targetlist;
	stock->parallel_safe = false;
	return stock;
}

/*
 * Can a scan of ours produce what this stock scan of relid produces, its
 * target list, its filter and conds (more)?  Not when it hands up system
 * columns, nor values whose storage the statement inspects.
 */
static bool
scan_columns_convertible(Scan *scan, List *more, Oid relid, bool inspects_storage,
						 bool *toast_sensitive)
{
	Bitmapset  *attrs = NULL;
	Relation	relation;
	bool		supported;

	pull_varattnos((Node *) scan->plan.targetlist, scan->scanrelid, &attrs);
	pull_varattnos((Node *) scan->plan.qual, scan->scanrelid, &attrs);
	pull_varattnos((Node *) more, scan->scanrelid, &attrs);
	/* The statement holds a lock on every table it reads. */
	relation = table_open(relid, NoLock);
	supported = tb_scan_attrs_supported(relation, attrs, toast_sensitive);
	table_close(relation, NoLock);
	/* Our scan hands up values fetched and decompressed: see scan_paths.c. */
	return supported && !(*toast_sensitive && inspects_storage);
}

/*
 * Can a leader-only Temp Index Scan stand for this stock Index Scan above
 * the Gather?  A btree scan without ORDER BY operators (what a Temp Index
 * Scan reads), handing up what a scan of ours can.
 */
static bool
index_scan_convertible(IndexScan *scan, Oid relid, bool inspects_storage)
{
	Relation	index;
	bool		btree;
	bool		toast_sensitive;

	/* A hypothetical index (hypopg's) cannot be opened: the read stays stock. */
	if (scan->indexorderby != NIL ||
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(scan->indexid)))
		return false;
	index = index_open(scan->indexid, NoLock);
	btree = index->rd_rel->relam == BTREE_AM_OID;
	index_close(index, NoLock);
	return btree &&
		scan_columns_convertible(&scan->scan, scan->indexqualorig, relid,
								 inspects_storage, &toast_sensitive);
}

static Plan *
leader_index_scan_from_index_scan(IndexScan *scan)
{
	CustomScan *cscan;

	cscan = (CustomScan *) tb_make_temp_index_scan_plan(&scan->scan,
														scan->scan.plan.targetlist,
														scan->indexqualorig, 0, 0.0,
														true, false);
	/* Keep the costs, row estimates and parameter sets core computed. */
	cscan->scan.plan = scan->scan.plan;
	NodeSetTag(cscan, T_CustomScan);
	return &cscan->scan.plan;
}

static Plan *
full_scan_from_seq_scan(SeqScan *seq, bool toast_sensitive)
{
	CustomScan *cscan;

	cscan = (CustomScan *) tb_make_temp_scan_plan(seq->scan.scanrelid,
												  seq->scan.plan.targetlist,
												  seq->scan.plan.qual,
												  tb_temp_scan_private(false, toast_sensitive,
																	   0, 0.0));
	/* Keep the costs, row estimates and parameter sets core computed. */
	cscan->scan.plan = seq->scan.plan;
	NodeSetTag(cscan, T_CustomScan);
	return &cscan->scan.plan;
}

static Plan *
seq_scan_from_full_scan(CustomScan *cscan)
{
	SeqScan    *seq = makeNode(SeqScan);

	seq->scan.plan = cscan->scan.plan;
	seq->scan.scanrelid = cscan->scan.scanrelid;
	NodeSetTag(seq, T_SeqScan);
	seq->scan.plan.parallel_safe = false;
	return &seq->scan.plan;
}

/*
 * A scan whose target list is empty (its parent reads no column of it, as
 * an aggregate computing count(*) does) gets one that lists the table's
 * columns in order, as core gives its own scans where the parent allows:
 * the executor then hands up the scan tuple instead of projecting an empty
 * one from every row.  Only under an aggregate, which copies no input
 * tuple: a Sort, Material or Gather above would carry the wider tuples.
 * As in core's build_physical_tlist(), a dropped column keeps the list
 * empty.  The plan is final here, its Vars referring to scanrelid.  The
 * scan is told that nobody reads that output: it fetches no out-of-line
 * value for it, and on PostgreSQL 15 deforms no column for it.
 */
static void
use_physical_tlist(CustomScan *cscan, Oid relid)
{
	Scan	   *scan = &cscan->scan;
	Relation	relation;
	TupleDesc	desc;
	List	   *tlist = NIL;

	if (scan->plan.targetlist != NIL)
		return;
	relation = table_open(relid, NoLock);
	desc = RelationGetDescr(relation);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
		{
			list_free_deep(tlist);
			tlist = NIL;
			break;
		}
		tlist = lappend(tlist,
						makeTargetEntry((Expr *) makeVar(scan->scanrelid, att->attnum,
														 att->atttypid, att->atttypmod,
														 att->attcollation, 0),
										att->attnum, NULL, false));
	}
	table_close(relation, NoLock);
	scan->plan.targetlist = tlist;
	if (tlist != NIL)
		tb_temp_scan_mark_output_unread(cscan);
}

/*
 * How far may the leader of a partial scan under this Gather overlap its
 * flush with the workers' reads (see TbFlushMode)?  Workers wait on that
 * flush, so the leader must get to it before anything else can make it
 * wait for them: the scan must be the first thing the leader's part of
 * the plan reads.  Nodes that drain their input before returning a row
 * let the leader scan dirty pages itself between runs; others need the
 * whole flush done in the leader's first call.
 */
static void
set_flush_mode(Plan *gather)
{
	Plan	   *plan = gather->lefttree;
	bool		drained = false;

	if (IsA(gather, Gather) && ((Gather *) gather)->single_copy)
		return;
	for (;;)
	{
		switch (nodeTag(plan))
		{
			case T_Agg:
				if (((Agg *) plan)->aggstrategy == AGG_PLAIN ||
					((Agg *) plan)->aggstrategy == AGG_HASHED)
					drained = true;
				break;
			case T_Sort:
				drained = true;
				break;
			case T_Result:
				if (((Result *) plan)->resconstantqual != NULL)
					return;
				break;
			case T_CustomScan:
				if (tb_is_temp_scan(plan) &&
					tb_temp_scan_is_partial((CustomScan *) plan))
					tb_temp_scan_set_flush_mode((CustomScan *) plan,
												drained ? TB_FLUSH_INTERLEAVED :
												TB_FLUSH_PIPELINED);
				return;
			default:
				return;
		}
		plan = plan->lefttree;
		if (plan == NULL)
			return;
	}
}

/*
 * The safety net: a stock scan of a temporary table below a Gather, which
 * a worker would run, and core refuses to run (its last-line check in
 * relation_open()).  Our paths never make one, but marking a temporary
 * table consider_parallel lets any code that builds paths after us (another
 * extension's hook rebuilding them with core's functions: pg_hint_plan
 * does) make one.  The table to plan again without our paths, or
 * InvalidOid.
 */
static Oid
stock_temp_scan_under_gather(PlanScans *found)
{
	ListCell   *lc;

	foreach(lc, found->scans)
	{
		ScanRef    *ref = lfirst(lc);

		if (ref->under_gather && !is_private_read(*ref->link) &&
			get_rel_persistence(ref->relid) == RELPERSISTENCE_TEMP)
			return ref->relid;
	}
	return InvalidOid;
}

/*
 * Settle how the plan reads each temporary table that our scans read (see
 * the file header).  Returns the table to plan again without our paths,
 * or InvalidOid when the plan is final.
 */
Oid
tb_settle_temp_scans(PlannedStmt *stmt, bool inspects_storage,
					 bool runs_opaque_code)
{
	PlanScans	found = {stmt->rtable, NIL, NIL, 0};
	List	   *our_relids = NIL;
	List	   *parallel_relids = NIL;
	ListCell   *lc;
	Oid			conflict;

	collect_scans(&stmt->planTree, NULL, &found);
	foreach(lc, stmt->subplans)
		collect_scans((Plan **) &lfirst(lc), NULL, &found);

	/*
	 * A Temp Index (or Bitmap Heap) Scan that only the leader runs, of a
	 * table no worker reads, is better off as core's scan: no flush, no
	 * copies.
	 */
	foreach(lc, found.scans)
	{
		ScanRef    *ref = lfirst(lc);

		if (ref->under_gather && is_private_read(*ref->link))
			parallel_relids = list_append_unique_oid(parallel_relids, ref->relid);
	}
	foreach(lc, found.scans)
	{
		ScanRef    *ref = lfirst(lc);

		if (!ref->under_gather && carries_stock_scan(*ref->link) &&
			!list_member_oid(parallel_relids, ref->relid))
			*ref->link = stock_scan_from_ours((CustomScan *) *ref->link);
	}

	foreach(lc, found.scans)
	{
		ScanRef    *ref = lfirst(lc);

		if (is_private_read(*ref->link))
			our_relids = list_append_unique_oid(our_relids, ref->relid);
	}
	if (our_relids == NIL)
		return stock_temp_scan_under_gather(&found);

	if (!stmt->parallelModeNeeded)
	{
		foreach(lc, found.scans)
		{
			ScanRef    *ref = lfirst(lc);

			if (tb_is_temp_scan(*ref->link) &&
				!tb_temp_scan_is_partial((CustomScan *) *ref->link))
				*ref->link = seq_scan_from_full_scan((CustomScan *) *ref->link);
			else if (carries_stock_scan(*ref->link))
				*ref->link = stock_scan_from_ours((CustomScan *) *ref->link);
		}
		return InvalidOid;
	}

	foreach(lc, found.scans)
	{
		ScanRef    *ref = lfirst(lc);
		Plan	   *plan = *ref->link;
		bool		toast_sensitive;

		if (is_private_read(plan) || !list_member_oid(our_relids, ref->relid))
			continue;

		if (IsA(plan, SeqScan) &&
			scan_columns_convertible((Scan *) plan, NIL, ref->relid, inspects_storage,
									 &toast_sensitive))
		{
			*ref->link = full_scan_from_seq_scan((SeqScan *) plan, toast_sensitive);
			continue;
		}
		if (IsA(plan, IndexScan) && !ref->under_gather &&
			index_scan_convertible((IndexScan *) plan, ref->relid, inspects_storage))
		{
			*ref->link = leader_index_scan_from_index_scan((IndexScan *) plan);
			continue;
		}

		/*
		 * A stock read that must stay.  Our scans of the table would have to
		 * run in the leader alone, under a Gather costed with workers: plan
		 * again without them, so that the planner compares honest plans.
		 */
		return ref->relid;
	}
	conflict = stock_temp_scan_under_gather(&found);
	if (OidIsValid(conflict))
		return conflict;

	foreach(lc, found.gathers)
		set_flush_mode(lfirst(lc));

	/*
	 * Code the leader runs may read this table too, outside the plan: the
	 * scans keep workers away from the pages it could prune (page_guard.c),
	 * or, reading pages in index order, compare what they read of a file
	 * (page_source.c).
	 */
	if (runs_opaque_code)
	{
		foreach(lc, found.scans)
		{
			ScanRef    *ref = lfirst(lc);

			if (tb_is_temp_scan(*ref->link))
				tb_temp_scan_mark_guard_pruning((CustomScan *) *ref->link);
			else if (tb_is_temp_index_scan(*ref->link))
				tb_temp_index_scan_mark_guard_reads((CustomScan *) *ref->link);
			else if (tb_is_temp_bitmap_scan(*ref->link))
				tb_temp_bitmap_scan_mark_guard_reads((CustomScan *) *ref->link);
		}
	}
	foreach(lc, found.scans)
	{
		ScanRef    *ref = lfirst(lc);

		if (tb_is_temp_scan(*ref->link) && ref->parent && IsA(ref->parent, Agg))
			use_physical_tlist((CustomScan *) *ref->link, ref->relid);
	}
	return InvalidOid;
}
