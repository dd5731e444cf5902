/*-------------------------------------------------------------------------
 *
 * pg_buffered_plan.h
 *	  Shared declarations of the pg_buffered_plan module: GUCs, the two
 *	  custom plan nodes and the planner hook that places them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_BUFFERED_PLAN_H
#define PG_BUFFERED_PLAN_H

#include "nodes/plannodes.h"

/* pg_buffered_plan.placement */
typedef enum BpPlacement
{
	BP_PLACEMENT_SCANS,			/* only the no-copy BatchedSeqScan */
	BP_PLACEMENT_ALL			/* also a copying Buffered above other nodes */
} BpPlacement;

#define BP_MAX_BATCH_SIZE		65536

extern int	bp_batch_size;
extern int	bp_placement;

/* batched_scan.c */
extern void bp_register_batched_scan(void);
extern CustomScan *bp_make_batched_scan(Scan *seqscan, int batch_size);
extern bool bp_is_batched_scan(const Plan *plan);

/* buffered.c */
extern void bp_register_buffered(void);
extern CustomScan *bp_make_buffered(Plan *child, int batch_size,
									int plan_node_id);
extern bool bp_is_buffered(const Plan *plan);

/* plan_rewrite.c */
extern void bp_install_planner_hook(void);

/*
 * Batches start at one row and double up to the configured size after
 * every start and rescan, so that a LIMIT, an EXISTS probe or a
 * nested-loop inner side never reads more than about twice the rows it
 * consumes, while long scans reach full batches after a few steps.
 */
static inline int
bp_next_batch_limit(int current, int batch_size)
{
	return current >= batch_size / 2 ? batch_size : current * 2;
}

#endif							/* PG_BUFFERED_PLAN_H */
