/*-------------------------------------------------------------------------
 *
 * query_facts.h
 *	  What the statement being planned is (query_facts.c): its temporary
 *	  tables and how often it names them, the code it runs, whether it may
 *	  need a second planning; and the state of its planning, tb_planning,
 *	  which the planner's files share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_QUERY_FACTS_H
#define TB_QUERY_FACTS_H

#include "nodes/parsenodes.h"
#include "nodes/pathnodes.h"

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
extern bool tb_planned_alone(PlannerInfo *root);

#endif							/* TB_QUERY_FACTS_H */
