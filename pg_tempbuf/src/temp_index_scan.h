/*-------------------------------------------------------------------------
 *
 * temp_index_scan.h
 *	  The Temp Index Scan executor node (temp_index_scan.c), "Custom Scan
 *	  (Temp Index Scan)" and "Custom Scan (Temp Index Only Scan)" in
 *	  EXPLAIN: what the planner's files make and mark of it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_TEMP_INDEX_SCAN_H
#define TB_TEMP_INDEX_SCAN_H

#include "nodes/plannodes.h"

#define TB_TEMP_INDEX_SCAN_NAME "Temp Index Scan"
#define TB_TEMP_INDEX_ONLY_SCAN_NAME "Temp Index Only Scan"

extern void tb_register_temp_index_scan(void);
extern bool tb_is_temp_index_scan(Plan *plan);
extern void tb_temp_index_scan_mark_guard_reads(CustomScan *cscan);
extern Plan *tb_temp_index_scan_stock_plan(CustomScan *cscan);
extern Plan *tb_make_temp_index_scan_plan(Scan *stock, List *tlist,
										  List *indexqualorig,
										  int est_dirty_pages,
										  double est_flush_cost,
										  bool leader_only,
										  bool leader_copies);

#endif							/* TB_TEMP_INDEX_SCAN_H */
