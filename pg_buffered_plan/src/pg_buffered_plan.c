/*-------------------------------------------------------------------------
 *
 * pg_buffered_plan.c
 *	  Module entry point: GUCs, custom node registration, planner hook.
 *
 * Load it with shared_preload_libraries (or LOAD, per session).  With
 * pg_buffered_plan.batch_size = 0, the default, the planner hook returns
 * the stock plan untouched.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "pg_buffered_plan.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

int			bp_batch_size = 0;
int			bp_placement = BP_PLACEMENT_SCANS;

static const struct config_enum_entry placement_options[] = {
	{"scans", BP_PLACEMENT_SCANS, false},
	{"all", BP_PLACEMENT_ALL, false},
	{NULL, 0, false}
};

void
_PG_init(void)
{
	DefineCustomIntVariable("pg_buffered_plan.batch_size",
							"Rows per batch of the BatchedSeqScan and Buffered plan nodes.",
							"0 (the default) leaves every plan exactly as the planner made it.",
							&bp_batch_size,
							0, 0, BP_MAX_BATCH_SIZE,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomEnumVariable("pg_buffered_plan.placement",
							 "Where batching nodes go when batch_size > 0.",
							 "scans: heap sequential scans become BatchedSeqScan (no copy); "
							 "all: also a copying Buffered node above every other plan node.",
							 &bp_placement,
							 BP_PLACEMENT_SCANS, placement_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	MarkGUCPrefixReserved("pg_buffered_plan");

	bp_register_batched_scan();
	bp_register_buffered();
	bp_install_planner_hook();
}
