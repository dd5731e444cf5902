/*-------------------------------------------------------------------------
 *
 * batched_scan.h
 *	  BatchedSeqScan (batched_scan.c): a heap sequential scan that works a
 *	  batch at a time without copying tuples.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BP_BATCHED_SCAN_H
#define BP_BATCHED_SCAN_H

#include "nodes/plannodes.h"

extern void bp_register_batched_scan(void);
extern CustomScan *bp_make_batched_scan(Scan *seqscan, int batch_size);
extern bool bp_is_batched_scan(const Plan *plan);

#endif							/* BP_BATCHED_SCAN_H */
