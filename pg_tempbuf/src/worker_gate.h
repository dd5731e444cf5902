/*-------------------------------------------------------------------------
 *
 * worker_gate.h
 *	  Where a parallel worker can pay for itself (worker_gate.c): the
 *	  statements, query levels and joins that stay stock, planned as
 *	  cheaply as without the extension.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_WORKER_GATE_H
#define TB_WORKER_GATE_H

#include "nodes/pathnodes.h"

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

#endif							/* TB_WORKER_GATE_H */
