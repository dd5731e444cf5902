/*-------------------------------------------------------------------------
 *
 * guc.c
 *	  The settings of pg_buffered_plan: pg_buffered_plan.batch_size and
 *	  pg_buffered_plan.placement, defined here and only here, with the
 *	  prefix reserved.  The ground floor: it calls nothing of the module.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/guc.h"

#include "guc.h"

int			bp_batch_size = 0;
int			bp_placement = BP_PLACEMENT_SCANS;

static const struct config_enum_entry placement_options[] = {
	{"scans", BP_PLACEMENT_SCANS, false},
	{"all", BP_PLACEMENT_ALL, false},
	{NULL, 0, false}
};

void
bp_define_gucs(void)
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
}
