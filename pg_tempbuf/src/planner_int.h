/*-------------------------------------------------------------------------
 *
 * planner_int.h
 *	  Declarations shared by the planner's files of pg_tempbuf, and by no
 *	  other file.
 *
 * tb_install_planner_hooks(), which the module entry calls, is in
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

/* planner.c: hooks that offer the paths */
extern bool tb_planning_offered_paths(void);
extern bool tb_planning_reads_twice(Oid relid);
extern void tb_offer_deferred_paths(PlannerInfo *root, RelOptInfo *rel);

/* join_paths.c: parallel-safe paths for joins of temporary tables */
extern void tb_install_join_hook(void);

#endif							/* PLANNER_INT_H */
