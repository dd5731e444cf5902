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
 * A parallel scan whose workers cannot map the leader's pool adds a third
 * cost: workers read the table's file, page by page, into private memory
 * (a read call, a copy and, with data checksums, a verification), where a
 * serial scan finds the pages that sit in local buffers at the price of a
 * lookup.  read_page_cost prices that private read, above what the serial
 * scan pays for the same page.  Where they map it, a page the leader holds
 * costs a worker what a shared-buffer hit costs: nothing above the serial
 * scan's price.
 *
 * `pglab flush-cost` measures all three constants on the user's own
 * storage.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/extensible.h"
#include "optimizer/optimizer.h"

#include "compat.h"
#include "flush_cost.h"
#include "guc.h"
#include "leader_pages.h"
#include "localbuf_access.h"
#include TB_EXPLAIN_FORMAT_HEADER

/*
 * Estimated cost of flushing rel's dirty main-fork pages (what a scan of
 * the table needs on disk), or every dirty page for rel == NULL.  Either
 * way the flush walks the whole pool, hence the pool-wide second term.
 * The number of dirty pages priced goes to *dirty_pages when not NULL.
 */
double
tb_flush_cost(Relation rel, int *dirty_pages)
{
	TbScanPrice price;

	if (rel != NULL)
		tb_temp_scan_price(rel, &price);
	else
	{
		TbLocalBufferCounts pool;

		tb_count_local_buffers(NULL, InvalidForkNumber, &pool);
		price.dirty_pages = pool.dirty;
		price.pool_pages = pool.allocated;
	}
	/* The article's formula: a flush walks the pool, whatever it finds. */
	price.known_clean = false;
	if (dirty_pages)
		*dirty_pages = price.dirty_pages;
	return tb_priced_flush(&price);
}

/*
 * The flush of price's dirty pages, pool walk included: the formula above;
 * files flushed whole since any page last became dirty are flushed
 * without the walk (localbuf_access.c).
 */
double
tb_priced_flush(const TbScanPrice *price)
{
	return tb_write_page_cost * price->dirty_pages +
		(price->known_clean ? 0.0 : tb_buffer_scan_cost * price->pool_pages);
}

/* The state of the pool a Temp Seq Scan of rel would start from. */
void
tb_temp_scan_price(Relation rel, TbScanPrice *price)
{
	TbLocalBufferCounts pool;
	TbLocalBufferCounts scope;
	TbRelFileId file = TbRelationFileId(rel);

	tb_pool_census_watch(RelationGetRelid(rel));
	tb_pool_census(&file, &scope, &pool);
	price->dirty_pages = scope.dirty;
	price->resident_pages = scope.allocated;
	price->pool_pages = pool.allocated;
	price->upfront = false;
	price->known_clean = tb_fork_known_clean(&file, MAIN_FORKNUM);
}

/*
 * Startup and run costs a Temp Seq Scan adds to a seq scan of the table
 * whose CPU run cost is cpu_run_cost (already divided among participants).
 *
 * A full scan, or a partial one whose flush must finish before workers
 * start (no leader participation; out-of-line values to fetch), pays the
 * whole flush at startup.  Otherwise the leader writes only what workers
 * read, about their share of the dirty pages, while they scan, and scans
 * the rest itself from its buffers: the flush then spreads over the run
 * like the rest of the work, except that workers cannot go faster than
 * the pages they need are written.  Where the leader's pool lives in
 * memory its workers map (shared_pool.c), workers read the pages it holds
 * in place, as a shared-buffer hit: nothing is written, and those pages
 * cost them nothing above the serial scan's hit.  Otherwise workers read
 * privately, from the file, their share of the pages the leader holds in
 * buffers (read_page_cost); the leader reads its own share in its buffers.
 *
 * *flush gets the part of both that is the flush (the writes and the pool
 * walk): the estimate whose error the margin covers (scan_paths.c).
 */
void
tb_temp_scan_extra_cost(const TbScanPrice *price, bool partial,
						int parallel_workers, double divisor,
						Cost cpu_run_cost, Cost *startup, Cost *run,
						Cost *flush)
{
	double		worker_share;
	bool		in_place;
	Cost		write_cost;
	Cost		read_cost;

	in_place = tb_leader_pages_readable();
	if (!partial)
	{
		/*
		 * The leader's read is the serial scan's cost; a worker copies the
		 * pages the leader holds out of its pool, as cheap as a shared hit,
		 * where some are dirty, or else reads them from the file, after the
		 * leader wrote them (temp_scan.c).
		 */
		in_place = in_place && price->dirty_pages > 0;
		*startup = *flush = in_place ? 0.0 : tb_priced_flush(price);
		*run = in_place ? 0.0 : tb_read_page_cost * price->resident_pages;
		return;
	}

	worker_share = parallel_workers / divisor;
	read_cost = in_place ? 0.0 :
		tb_read_page_cost * price->resident_pages * worker_share / divisor;
	if (price->upfront || (!parallel_leader_participation && !in_place))
	{
		*startup = *flush = tb_priced_flush(price);
		*run = read_cost;
		return;
	}
	*startup = price->known_clean ? 0.0 : tb_buffer_scan_cost * price->pool_pages;
	/* Workers that read the leader's pages in its pool need no write. */
	if (in_place)
		write_cost = 0;
	else
		write_cost = tb_write_page_cost * price->dirty_pages * worker_share;
	*run = Max(write_cost - cpu_run_cost, write_cost / divisor) + read_cost;
	*flush = *startup + write_cost;
}
