/*-------------------------------------------------------------------------
 *
 * temp_scan.h
 *	  The Temp Seq Scan executor node (temp_scan.c), "Custom Scan (Temp Seq
 *	  Scan)" in EXPLAIN, with core's "Parallel" in front when partial: what
 *	  the planner's files make and mark of it.  The scan's own state, for
 *	  its five files, is temp_scan_int.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_TEMP_SCAN_H
#define TB_TEMP_SCAN_H

#include "nodes/bitmapset.h"
#include "nodes/plannodes.h"
#include "utils/relcache.h"

#include "scan_run.h"

#define TB_TEMP_SCAN_NAME "Temp Seq Scan"

extern void tb_register_temp_scan(void);
extern bool tb_is_temp_scan(Plan *plan);
extern bool tb_scan_attrs_supported(Relation relation, Bitmapset *attrs,
									bool *toast_sensitive);
extern List *tb_temp_scan_private(bool partial, bool toast_sensitive,
								  int est_dirty_pages, double est_flush_cost);
extern bool tb_temp_scan_is_partial(CustomScan *cscan);
extern void tb_temp_scan_mark_output_unread(CustomScan *cscan);
extern void tb_temp_scan_set_flush_mode(CustomScan *cscan, TbFlushMode mode);
extern void tb_temp_scan_mark_guard_pruning(CustomScan *cscan);
extern Plan *tb_make_temp_scan_plan(Index scanrelid, List *tlist,
									List *quals, List *custom_private);

#endif							/* TB_TEMP_SCAN_H */
