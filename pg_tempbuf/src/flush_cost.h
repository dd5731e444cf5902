/*-------------------------------------------------------------------------
 *
 * flush_cost.h
 *	  The cost model (flush_cost.c): what a flush of dirty local buffers
 *	  and the workers' private reads cost a plan, in seq_page_cost units.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_FLUSH_COST_H
#define TB_FLUSH_COST_H

#include "nodes/nodes.h"
#include "utils/relcache.h"

typedef struct TbScanPrice
{
	int			dirty_pages;	/* of the table's main fork (plus toast, see scan_paths.c) */
	int			resident_pages; /* of the main fork, in local buffers */
	int			pool_pages;		/* local buffers holding a page, any relation */
	bool		upfront;		/* the flush must end before workers start */
	bool		known_clean;	/* the flush needs no walk (tb_fork_known_clean()) */
} TbScanPrice;

extern double tb_flush_cost(Relation rel, int *dirty_pages);
extern void tb_temp_scan_price(Relation rel, TbScanPrice *price);
extern double tb_priced_flush(const TbScanPrice *price);
extern void tb_temp_scan_extra_cost(const TbScanPrice *price, bool partial,
									int parallel_workers, double divisor,
									Cost cpu_run_cost, Cost *startup, Cost *run,
									Cost *flush);

#endif							/* TB_FLUSH_COST_H */
