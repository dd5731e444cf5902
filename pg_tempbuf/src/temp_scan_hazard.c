/*-------------------------------------------------------------------------
 *
 * temp_scan_hazard.c
 *	  pg_tempbuf.debug_hazard: make the races that the Temp Seq Scan's
 *	  guards prevent (page_guard.c) happen on purpose, for tests.  Where a
 *	  paused worker and the leader meet, and the index and bitmap scans'
 *	  compared file reads (page_source.c), are hazard_meet.c's.
 *
 * A worker pauses in the middle of reading a page (tb_mid_read_hook) while
 * the leader changes that page as code running in the leader could;
 * pg_tempbuf.debug_unprotected turns the guards off, so that the tests show
 * they would catch the race.  Nothing here runs unless the GUC is set.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "guc.h"
#include "hazard_meet.h"
#include "page_guard.h"
#include "page_source.h"
#include "temp_scan_int.h"

/* pg_tempbuf.debug_hazard: the leader loses the CPU for a while here. */
void
tb_ts_stall_for_hazard(TbDebugHazard hazard)
{
	if (tb_debug_hazard == hazard)
		pg_usleep(100000L);
}

/*
 * Worker, pg_tempbuf.debug_hazard, reading a page in place in the leader's
 * pool: pause at the first row handed out from it (a pointer into the
 * page) until the leader has changed the page; tb_ts_resume_in_place()
 * ends the pause once the parent has read the row, at the next row.
 */
void
tb_ts_pause_in_place(TempScanState *ts)
{
	if (!ts->hazard_pending)
		return;
	ts->hazard_pending = false;

	/*
	 * A prune moves this row only if the page has dead versions and one of
	 * them lies before the row (the rows skipped before it were invisible):
	 * pause on such a page, else the race would change nothing the worker
	 * holds and the unguarded run could not fail.
	 */
	if (tb_debug_hazard == TB_HAZARD_PRUNE_DURING_COPY &&
		(!tb_page_may_be_pruned((Page) ts->page) ||
		 ts->visible[ts->next_visible - 1] == FirstOffsetNumber))
		return;
	/* evict_during_batch is about the buffer, not the page's contents. */
	ts->hazard_paused =
		tb_mid_read_hook(ts->page_block,
						 tb_debug_hazard == TB_HAZARD_EVICT_DURING_BATCH ? NULL : ts->page,
						 true, false, tb_mid_read_arg);
}

void
tb_ts_resume_in_place(TempScanState *ts)
{
	if (!ts->hazard_paused)
		return;
	ts->hazard_paused = false;
	tb_mid_read_hook(ts->page_block, NULL, true, true, tb_mid_read_arg);
}

/*
 * Leader, pg_tempbuf.debug_hazard: once per pass, after its flush, wait a
 * little for a worker to pause in the middle of a page, and change that
 * page as code running in the leader could: prune it (as an index scan in
 * a function above Gather does), write it back (as an eviction does), let
 * its buffer hold another page for a while (as an eviction and a read of
 * the same block into the same buffer would), or give its buffer to another
 * block while a worker copies a batch.  Each does nothing to a
 * page the scan's guards keep: heap_page_prune_opt() and the buffer
 * manager leave a buffer pinned twice alone.
 */
void
tb_ts_serve_hazard(TempScanState *ts)
{
	TbHazardMeet *meet = &ts->shared->hazard;
	Relation	rel = ts->css.ss.ss_currentRelation;
	BlockNumber blkno;
	Buffer		buffer;

	if (!TB_HAZARD_PAUSES_READS(tb_debug_hazard) ||
		ts->hazard_served || ts->flushing || ts->shared->leader_only ||
		ts->pcxt == NULL || ts->pcxt->nworkers_launched == 0)
		return;
	ts->hazard_served = true;
	if (tb_debug_hazard == TB_HAZARD_PRUNE_DURING_READ ||
		tb_debug_hazard == TB_HAZARD_WRITE_DURING_READ)
	{
		tb_hazard_serve_paused_read(meet, rel);
		return;
	}
	if (!tb_hazard_wait_for_phase(meet, HAZARD_PAUSED, 3000000L))
		return;
	blkno = meet->block;
	buffer = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
	switch ((TbDebugHazard) tb_debug_hazard)
	{
		case TB_HAZARD_PRUNE_DURING_COPY:
			TbPruneHeapPage(rel, buffer);
			break;
		case TB_HAZARD_REFILL_DURING_COPY:
			/* Only an unpinned buffer can be reused: this pin is ours. */
			if (LocalRefCount[-buffer - 1] > 1)
			{
				pg_atomic_exchange_u32(&meet->phase, HAZARD_RESTORED);
				break;
			}
			tb_hazard_write_if_dirty(buffer);
			tb_page_source_read_image(rel, MAIN_FORKNUM, (blkno + 1) % ts->nblocks,
									  BufferGetPage(buffer));
			pg_atomic_exchange_u32(&meet->phase, HAZARD_CHANGED);
			(void) tb_hazard_wait_for_phase(meet, HAZARD_READ, 10000000L);
			tb_page_source_read_image(rel, MAIN_FORKNUM, blkno, BufferGetPage(buffer));
			pg_atomic_exchange_u32(&meet->phase, HAZARD_RESTORED);
			break;
		case TB_HAZARD_EVICT_DURING_BATCH:
			tb_hazard_give_buffer_away(meet, rel, buffer, blkno);
			break;
		default:
			break;
	}
	ReleaseBuffer(buffer);
	tb_hazard_served(meet, rel, blkno);
}
