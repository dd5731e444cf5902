/*-------------------------------------------------------------------------
 *
 * plan_walk.h
 *	  After planning (plan_walk.c): one kind of read per temporary table in
 *	  a finished plan; stock scans back in plans that ended up serial.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_PLAN_WALK_H
#define TB_PLAN_WALK_H

#include "nodes/plannodes.h"

extern Oid	tb_settle_temp_scans(PlannedStmt *stmt, bool inspects_storage,
								 bool runs_opaque_code);

#endif							/* TB_PLAN_WALK_H */
