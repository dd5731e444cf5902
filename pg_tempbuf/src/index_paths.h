/*-------------------------------------------------------------------------
 *
 * index_paths.h
 *	  Temp Index (Only) Scan and Temp Bitmap Heap Scan paths, and their
 *	  price (index_paths.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_INDEX_PATHS_H
#define TB_INDEX_PATHS_H

#include "nodes/pathnodes.h"

#include "flush_cost.h"

extern void tb_add_temp_index_paths(PlannerInfo *root, RelOptInfo *rel,
									const TbScanPrice *price,
									bool vm_known_clean);
extern void tb_add_temp_bitmap_paths(PlannerInfo *root, RelOptInfo *rel,
									 const TbScanPrice *price);

#endif							/* TB_INDEX_PATHS_H */
