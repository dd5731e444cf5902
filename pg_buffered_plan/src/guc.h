/*-------------------------------------------------------------------------
 *
 * guc.h
 *	  The settings of pg_buffered_plan (guc.c): pg_buffered_plan.batch_size
 *	  and pg_buffered_plan.placement, and how a node's batches grow to the
 *	  batch size.  The ground floor: it calls nothing of the module.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BP_GUC_H
#define BP_GUC_H

/* pg_buffered_plan.placement */
typedef enum BpPlacement
{
	BP_PLACEMENT_SCANS,			/* only the no-copy BatchedSeqScan */
	BP_PLACEMENT_ALL			/* also a copying Buffered above other nodes */
} BpPlacement;

#define BP_MAX_BATCH_SIZE		65536

extern int	bp_batch_size;
extern int	bp_placement;

extern void bp_define_gucs(void);

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

#endif							/* BP_GUC_H */
