/*-------------------------------------------------------------------------
 *
 * pg_tempbuf.c
 *	  Module entry point of the pg_tempbuf extension: the top floor.  It
 *	  defines the settings (guc.c), registers the scan nodes and installs
 *	  the planner's and executor's hooks; nothing calls back into it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "guc.h"
#include "index_build.h"
#include "planner.h"
#include "scan_run.h"
#include "temp_bitmap_scan.h"
#include "temp_index_scan.h"
#include "temp_scan.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	tb_define_gucs();
	tb_register_temp_scan();
	tb_register_temp_index_scan();
	tb_register_temp_bitmap_scan();
	tb_scan_run_install_hook();
	tb_install_planner_hooks();
	tb_install_index_build_hooks();
}
