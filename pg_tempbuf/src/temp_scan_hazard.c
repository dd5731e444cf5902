/*-------------------------------------------------------------------------
 *
 * temp_scan_hazard.c
 *	  pg_tempbuf.debug_hazard: make the races that the scans' guards prevent
 *	  happen on purpose, for tests: the Temp Seq Scan's (page_guard.c), and
 *	  the index and bitmap scans' compared file reads (page_source.c).
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

#include "temp_scan_int.h"

/* Where a worker and the leader are (TbHazardMeet.phase) */
#define HAZARD_IDLE		0
#define HAZARD_CLAIMED	1		/* a worker is about to pause */
#define HAZARD_PAUSED	2		/* in the middle of the meet's block */
#define HAZARD_CHANGED	3		/* the leader did what the hazard says */
#define HAZARD_READ		4		/* the worker has read the rest of the page */
#define HAZARD_RESTORED 5		/* the leader put the buffer back */

void
tb_hazard_meet_init(TbHazardMeet *meet)
{
	pg_atomic_init_u32(&meet->phase, HAZARD_IDLE);
	meet->block = InvalidBlockNumber;
}

/* pg_tempbuf.debug_hazard: the leader loses the CPU for a while here. */
void
tb_ts_stall_for_hazard(TbDebugHazard hazard)
{
	if (tb_debug_hazard == hazard)
		pg_usleep(100000L);
}

/*
 * pg_tempbuf.debug_hazard: wait (ten seconds at most) until the other side
 * gets to phase.
 */
static bool
wait_for_phase(TbHazardMeet *meet, uint32 phase, long timeout_us)
{
	for (long waited = 0; waited < timeout_us; waited += 100)
	{
		if (pg_atomic_read_u32(&meet->phase) >= phase)
			return true;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(100L);
	}
	return false;
}

/*
 * Would heap_page_prune_opt() prune this page (as far as its first half
 * tells)?  Only such a page shows a prune in the middle of a read.
 */
static bool
page_prunes_on_access(const char *page)
{
	return tb_page_may_be_pruned((Page) page) &&
		(PageIsFull((Page) page) ||
		 PageGetHeapFreeSpace((Page) page) < BLCKSZ / 10);
}

/*
 * Worker, pg_tempbuf.debug_hazard, as tb_mid_read_hook with the scan's
 * TbHazardMeet: the first page read the hazard is about pauses in its
 * middle until the leader has changed it (tb_ts_serve_hazard(),
 * tb_hazard_serve_file_read()).
 */
bool
tb_hazard_worker_meets(BlockNumber blkno, const char *page, bool from_leader,
					   bool done, void *arg)
{
	TbHazardMeet *meet = (TbHazardMeet *) arg;
	uint32		idle = HAZARD_IDLE;
	bool		wanted;

	if (done)
	{
		pg_atomic_exchange_u32(&meet->phase, HAZARD_READ);
		if (tb_debug_hazard == TB_HAZARD_REFILL_DURING_COPY)
			(void) wait_for_phase(meet, HAZARD_RESTORED, 10000000L);
		return true;
	}
	switch ((TbDebugHazard) tb_debug_hazard)
	{
		case TB_HAZARD_PRUNE_DURING_COPY:
			wanted = from_leader && page != NULL && page_prunes_on_access(page);
			break;
		case TB_HAZARD_PRUNE_DURING_READ:
			wanted = !from_leader && page_prunes_on_access(page);
			break;
		case TB_HAZARD_WRITE_DURING_READ:
			wanted = !from_leader;
			break;
		case TB_HAZARD_REFILL_DURING_COPY:
			wanted = from_leader && page != NULL;
			break;
		case TB_HAZARD_EVICT_DURING_BATCH:
			wanted = from_leader && page == NULL;
			break;
		default:
			wanted = false;
			break;
	}
	if (!wanted ||
		!pg_atomic_compare_exchange_u32(&meet->phase, &idle, HAZARD_CLAIMED))
		return false;
	meet->block = blkno;
	pg_atomic_exchange_u32(&meet->phase, HAZARD_PAUSED);
	(void) wait_for_phase(meet, HAZARD_CHANGED, 10000000L);
	return true;
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

/* Write a local buffer's page if it is dirty, as an eviction would. */
static void
write_if_dirty(Buffer buffer)
{
	BufferDesc *desc = GetLocalBufferDescriptor(-buffer - 1);

	if (pg_atomic_read_u32(&desc->state) & BM_DIRTY)
		tb_write_local_run(&desc, 1);
}

/* The leader has changed the page: say so, and let the worker read on. */
static void
served(TbHazardMeet *meet, Relation rel, BlockNumber blkno)
{
	ereport(NOTICE,
			(errmsg("pg_tempbuf.debug_hazard: block %u of \"%s\" met the leader in the middle of a worker's read",
					blkno, RelationGetRelationName(rel))));
	if (pg_atomic_read_u32(&meet->phase) < HAZARD_CHANGED)
		pg_atomic_exchange_u32(&meet->phase, HAZARD_CHANGED);
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
		tb_hazard_serve_file_read(meet, rel);
		return;
	}
	if (!wait_for_phase(meet, HAZARD_PAUSED, 3000000L))
		return;
	blkno = meet->block;
	buffer = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
	switch ((TbDebugHazard) tb_debug_hazard)
	{
		case TB_HAZARD_PRUNE_DURING_COPY:
			heap_page_prune_opt(rel, buffer);
			break;
		case TB_HAZARD_REFILL_DURING_COPY:
			/* Only an unpinned buffer can be reused: this pin is ours. */
			if (LocalRefCount[-buffer - 1] > 1)
			{
				pg_atomic_exchange_u32(&meet->phase, HAZARD_RESTORED);
				break;
			}
			write_if_dirty(buffer);
			tb_page_source_read_image(rel, MAIN_FORKNUM, (blkno + 1) % ts->nblocks,
									  BufferGetPage(buffer));
			pg_atomic_exchange_u32(&meet->phase, HAZARD_CHANGED);
			(void) wait_for_phase(meet, HAZARD_READ, 10000000L);
			tb_page_source_read_image(rel, MAIN_FORKNUM, blkno, BufferGetPage(buffer));
			pg_atomic_exchange_u32(&meet->phase, HAZARD_RESTORED);
			break;
		case TB_HAZARD_EVICT_DURING_BATCH:
			{
				BufferDesc *desc = GetLocalBufferDescriptor(-buffer - 1);
				BufferTag	tag = desc->tag;

				if (LocalRefCount[-buffer - 1] > 1)
					break;

				/*
				 * Evicted (written first, being dirty) and given to another
				 * block, as a read of that block would, while the worker is
				 * between the batch's two looks at the descriptors; put back
				 * once it has read the pages.
				 */
				write_if_dirty(buffer);
				desc->tag.blockNum = (blkno + 1) % ts->nblocks;
				tb_page_source_read_image(rel, MAIN_FORKNUM, desc->tag.blockNum,
										  BufferGetPage(buffer));
				pg_atomic_exchange_u32(&meet->phase, HAZARD_CHANGED);
				(void) wait_for_phase(meet, HAZARD_READ, 10000000L);
				tb_page_source_read_image(rel, MAIN_FORKNUM, blkno, BufferGetPage(buffer));
				desc->tag = tag;
			}
			break;
		default:
			break;
	}
	ReleaseBuffer(buffer);
	served(meet, rel, blkno);
}

/*
 * Leader, pg_tempbuf.debug_hazard prune_during_read or write_during_read,
 * for every scan whose worker reads the file, and prune_during_copy for
 * an index or bitmap scan whose worker copies the page out of the
 * leader's pool: wait a little for a worker to pause in the middle of a
 * page of rel, and prune it and write it back, write it back, or prune it,
 * as code running in the leader (a function above Gather) and an eviction
 * could.
 */
void
tb_hazard_serve_file_read(TbHazardMeet *meet, Relation rel)
{
	BlockNumber blkno;
	Buffer		buffer;

	if (tb_debug_hazard != TB_HAZARD_PRUNE_DURING_READ &&
		tb_debug_hazard != TB_HAZARD_WRITE_DURING_READ &&
		tb_debug_hazard != TB_HAZARD_PRUNE_DURING_COPY)
		return;
	if (!wait_for_phase(meet, HAZARD_PAUSED, 3000000L))
		return;
	blkno = meet->block;
	buffer = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
	if (tb_debug_hazard != TB_HAZARD_WRITE_DURING_READ)
		heap_page_prune_opt(rel, buffer);
	if (tb_debug_hazard != TB_HAZARD_PRUNE_DURING_COPY)
		write_if_dirty(buffer);
	ReleaseBuffer(buffer);
	served(meet, rel, blkno);
}
