/*-------------------------------------------------------------------------
 *
 * pg_buffered_plan.c
 *	  Module entry point, the top floor: defines the GUCs (guc.c),
 *	  registers the custom nodes and installs the planner hook; nothing
 *	  calls back into it.
 *
 * Load it with shared_preload_libraries (or LOAD, per session).  With
 * pg_buffered_plan.batch_size = 0, the default, the planner hook returns
 * the stock plan untouched.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "batched_scan.h"
#include "buffered.h"
#include "guc.h"
#include "plan_rewrite.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	bp_define_gucs();
	bp_register_batched_scan();
	bp_register_buffered();
	bp_install_planner_hook();
}
