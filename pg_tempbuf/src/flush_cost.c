/*-------------------------------------------------------------------------
 *
 * flush_cost.c
 *	  The price of flushing dirty local buffers, in seq_page_cost units.
 *
 * From the measurements of "PostgreSQL cost model: estimating the cost of
 * flushing temp buffers to disk" (Andrei Lepikhov, 2026): writing a temp
 * page costs about 1.2-1.3 sequential page reads, and scanning the pool
 * for dirty pages costs about 1% of a write per buffer in the pool:
 *
 *		flush_cost = write_page_cost * dirtied + buffer_scan_cost * allocated
 *
 * `pglab flush-cost` measures both constants on the user's own storage.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "pg_tempbuf.h"

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
