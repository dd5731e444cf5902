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
	MarkGUCPrefixReserved("pg_tempbuf");
}
