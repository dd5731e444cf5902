/*-------------------------------------------------------------------------
 *
 * flush_cost.c
 *	  The price of flushing dirty local buffers, in seq_page_cost units.
 *
 * From the article's measurements (seeds/002): writing a temp page costs
 * about 1.2-1.3 sequential page reads, and scanning the pool for dirty
 * pages costs about 1% of a write per buffer in the pool:
 *
 *		flush_cost = write_page_cost * dirtied + buffer_scan_cost * allocated
 *
 * `pglab flush-cost` measures both constants on the user's own storage.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>

#include "utils/guc.h"

#include "pg_tempbuf.h"

double		tb_write_page_cost = 1.3;
double		tb_buffer_scan_cost = 0.01;

void
tb_define_cost_gucs(void)
{
	DefineCustomRealVariable("pg_tempbuf.write_page_cost",
							 "Sets the planner's estimate of the cost of writing one dirty temporary-table page.",
							 "In units of seq_page_cost; measure it with pglab flush-cost.",
							 &tb_write_page_cost,
							 1.3, 0.0, DBL_MAX,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("pg_tempbuf.buffer_scan_cost",
							 "Sets the planner's estimate of the cost of scanning one local buffer for dirty pages.",
							 "In units of seq_page_cost, per local buffer holding a page.",
							 &tb_buffer_scan_cost,
							 0.01, 0.0, DBL_MAX,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
}

/*
 * Estimated cost of flushing rel's dirty main-fork pages (what a scan of
 * the table needs on disk), or every dirty page for rel == NULL.  Either
 * way the flush walks the whole pool, hence the pool-wide second term.
 * The number of dirty pages priced goes to *dirty_pages when not NULL.
 */
double
tb_flush_cost(Relation rel, int *dirty_pages)
{
	TbLocalBufferCounts pool;
	TbLocalBufferCounts scope;

	tb_count_local_buffers(NULL, InvalidForkNumber, &pool);
	if (rel != NULL)
	{
		TbRelFileId file = TbRelationFileId(rel);

		tb_count_local_buffers(&file, MAIN_FORKNUM, &scope);
	}
	else
		scope = pool;

	if (dirty_pages)
		*dirty_pages = scope.dirty;
	return tb_write_page_cost * scope.dirty +
		tb_buffer_scan_cost * pool.allocated;
}
