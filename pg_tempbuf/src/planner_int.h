/*-------------------------------------------------------------------------
 *
 * planner_int.h
 *	  Declarations shared by the planner's files of pg_tempbuf, and by no
 *	  other file.
 *
 * The planner's files are on floors, each calling only those below it
 * (listed in planner.c's header); this file declares them from the bottom
 * up.  tb_install_planner_hooks(), which the module entry calls, is in
 * pg_tempbuf.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PLANNER_INT_H
#define PLANNER_INT_H

#include "pg_tempbuf.h"

/* worker_gate.c: where no worker can pay, planning stays stock */
extern char tb_relation_facts(Oid relid, bool *may_drive, bool *has_children);
extern bool tb_level_may_use_workers(PlannerInfo *root);
extern bool tb_rel_may_be_partial(RelOptInfo *rel);
extern bool tb_join_may_be_inner(PlannerInfo *root, RelOptInfo *joinrel);
extern bool tb_join_may_use_workers(PlannerInfo *root, RelOptInfo *joinrel);
typedef struct TbWorkerGate
{
	PlannerInfo *root;			/* whose drivers are known */
	Relids		drivers;
} TbWorkerGate;
extern void tb_worker_gate_swap(TbWorkerGate *state);

/* query_facts.c: what the statement being planned is */
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
	 * planned (code_facts_walker(), tb_outputs_user_types()): most such
	 * statements never get there.
	 */
	Query	   *code_facts_pending;
} PlanningState;

extern PlanningState tb_planning;

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
	bool		flat;			/* one query level: see tb_flat_query_facts() */
	bool		may_inline;		/* a function in FROM, whose body may come in */
} QueryFacts;

extern bool tb_flat_query_facts(Query *parse, QueryFacts *facts);
extern bool tb_query_facts_walker(Node *node, void *context);
extern bool tb_outputs_user_types(Query *parse);
extern void tb_planning_code_facts(void);

/*
 * The facts tb_planner() needs of the query it is given: of its range
 * table alone for a statement of one query level (facts->flat), of all
 * its levels otherwise.  Inline, as the next one: every planning of a
 * statement that reads a temporary table asks.
 */
static inline void
tb_query_facts(Query *parse, QueryFacts *facts)
{
	facts->flat = tb_flat_query_facts(parse, facts);
	if (!facts->flat)
		tb_query_facts_walker((Node *) parse, facts);
}

/*
 * Can the plan read one temporary table through two scan nodes, so that
 * plan_walk.c may ask for a second planning?  Only if the query names it
 * twice (or a CTE twice), or the planner adds relations (an inheritance
 * parent's children, a SQL function's body that it inlines).  A query that reads each of its
 * temporary tables once, the common case, is then planned once and never
 * copied: copying dominated our share of a point query's planning.
 */
static inline bool
tb_may_need_replan(const QueryFacts *facts)
{
	return facts->temp_relids != NIL &&
		(facts->twice_relids != NIL || facts->cte_read_twice ||
		 facts->temp_parent ||
		 (facts->flat ? facts->may_inline : facts->runs_opaque_code));
}
extern bool tb_planning_offered_paths(void);
extern bool tb_planning_reads_twice(Oid relid);

/* plan_walk.c: one kind of read per temporary table in a finished plan */
extern Oid	tb_settle_temp_scans(PlannedStmt *stmt, bool inspects_storage,
								 bool runs_opaque_code);

/* hidden_paths.c: our paths kept out of core's join search, deferred ones */
extern bool tb_hides_paths(PlannerInfo *root, RelOptInfo *rel);
extern void tb_add_safe_path(PlannerInfo *root, RelOptInfo *rel, Path *path);
extern void tb_defer_safe_paths(PlannerInfo *root, RelOptInfo *rel);
extern bool tb_take_deferred_paths(PlannerInfo *root, RelOptInfo *rel);
extern List *tb_hidden_safe_paths(PlannerInfo *root, RelOptInfo *rel);
typedef struct TbHiddenPaths
{
	PlannerInfo *root;			/* whose base relations' paths these are */
	List	  **paths;			/* by relid */
	int			size;
	Bitmapset  *deferred;		/* relids whose paths wait for a join */
} TbHiddenPaths;
extern void tb_hidden_paths_swap(TbHiddenPaths *state);

/* index_paths.c: Temp Index (Only) Scan and Temp Bitmap Heap Scan paths */
extern void tb_add_temp_index_paths(PlannerInfo *root, RelOptInfo *rel,
									const TbScanPrice *price,
									bool vm_known_clean);
extern void tb_add_temp_bitmap_paths(PlannerInfo *root, RelOptInfo *rel,
									 const TbScanPrice *price);

/* scan_paths.c: Temp Seq Scan paths, then index_paths.c's */
extern void tb_offer_paths(PlannerInfo *root, RelOptInfo *rel,
						   RangeTblEntry *rte);
extern void tb_offer_deferred_paths(PlannerInfo *root, RelOptInfo *rel);

/* join_paths.c: parallel-safe paths for joins of temporary tables */
extern void tb_install_join_hook(void);

#endif							/* PLANNER_INT_H */
