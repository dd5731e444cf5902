/*-------------------------------------------------------------------------
 *
 * temp_bitmap_scan.h
 *	  The Temp Bitmap Heap Scan executor node (temp_bitmap_scan.c), "Custom
 *	  Scan (Temp Bitmap Heap Scan)" in EXPLAIN: what the planner's files
 *	  make and mark of it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_TEMP_BITMAP_SCAN_H
#define TB_TEMP_BITMAP_SCAN_H

#include "nodes/plannodes.h"

#define TB_TEMP_BITMAP_SCAN_NAME "Temp Bitmap Heap Scan"

extern void tb_register_temp_bitmap_scan(void);
extern bool tb_is_temp_bitmap_scan(Plan *plan);
extern void tb_temp_bitmap_scan_mark_guard_reads(CustomScan *cscan);
extern Plan *tb_temp_bitmap_scan_stock_plan(CustomScan *cscan);
extern Plan *tb_make_temp_bitmap_scan_plan(BitmapHeapScan *stock, List *tlist,
										   int est_dirty_pages,
										   double est_flush_cost,
										   bool leader_copies);

#endif							/* TB_TEMP_BITMAP_SCAN_H */
