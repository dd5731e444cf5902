/*-------------------------------------------------------------------------
 *
 * scan_paths.h
 *	  Temp Seq Scan paths and their price for a temporary table, then
 *	  index_paths.c's (scan_paths.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_SCAN_PATHS_H
#define TB_SCAN_PATHS_H

#include "nodes/pathnodes.h"

extern void tb_offer_paths(PlannerInfo *root, RelOptInfo *rel,
						   RangeTblEntry *rte);
extern void tb_offer_deferred_paths(PlannerInfo *root, RelOptInfo *rel);

#endif							/* TB_SCAN_PATHS_H */
