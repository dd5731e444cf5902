/*-------------------------------------------------------------------------
 *
 * pg_tempbuf.c
 *	  Module entry point of the pg_tempbuf extension.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "pg_tempbuf.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	tb_define_cost_gucs();

	DefineCustomBoolVariable("pg_tempbuf.parallel_scan",
							 "Lets the planner scan temporary tables in parallel.",
							 "The leader flushes the table's dirty pages and every participant reads the table's file.",
							 &tb_parallel_scan_enabled,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_tempbuf.verify_reread",
							 "Reads each temporary-table page twice in parallel scans and compares the copies.",
							 "Detects torn reads on clusters without data checksums, at the price of a second read.",
							 &tb_verify_reread,
							 false,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	MarkGUCPrefixReserved("pg_tempbuf");

	tb_register_temp_scan();
	tb_install_planner_hooks();
}
