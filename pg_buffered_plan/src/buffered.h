/*-------------------------------------------------------------------------
 *
 * buffered.h
 *	  Buffered (buffered.c): a copying batch node above any tuple-returning
 *	  plan node.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BP_BUFFERED_H
#define BP_BUFFERED_H

#include "nodes/plannodes.h"

extern void bp_register_buffered(void);
extern CustomScan *bp_make_buffered(Plan *child, int batch_size,
									int plan_node_id);
extern bool bp_is_buffered(const Plan *plan);

#endif							/* BP_BUFFERED_H */
