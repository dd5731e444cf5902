/*-------------------------------------------------------------------------
 *
 * hazard_meet.c
 *	  pg_tempbuf.debug_hazard: where a worker paused in the middle of a
 *	  page and the leader that changes the page meet, for every scan node
 *	  of ours: the worker's side (tb_mid_read_hook), and the leader's for
 *	  the index and bitmap scans' file reads, copies and peeks.  The Temp Seq
 *	  Scan's own races are in temp_scan_hazard.c.
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

#include "core_copies.h"
#include "guc.h"
#include "hazard_meet.h"
#include "page_guard.h"
#include "page_source.h"

void
tb_hazard_meet_init(TbHazardMeet *meet)
{
	pg_atomic_init_u32(&meet->phase, HAZARD_IDLE);
	meet->block = InvalidBlockNumber;
}

/*
 * pg_tempbuf.debug_hazard: wait (ten seconds at most) until the other side
 * gets to phase.
 */
bool
tb_hazard_wait_for_phase(TbHazardMeet *meet, uint32 phase, long timeout_us)
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
	return tb_page_prunable_within((Page) page, BLCKSZ / 2) &&
		(PageIsFull((Page) page) ||
		 PageGetHeapFreeSpace((Page) page) < BLCKSZ / 10);
}

/*
 * Worker, pg_tempbuf.debug_hazard, as tb_mid_read_hook with the scan's
 * TbHazardMeet: the first page read the hazard is about pauses in its
 * middle until the leader has changed it (tb_ts_serve_hazard(),
 * tb_hazard_serve_paused_read()).
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
			(void) tb_hazard_wait_for_phase(meet, HAZARD_RESTORED, 10000000L);
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
	(void) tb_hazard_wait_for_phase(meet, HAZARD_CHANGED, 10000000L);
	return true;
}

/* Write a local buffer's page if it is dirty, as an eviction would. */
void
tb_hazard_write_if_dirty(Buffer buffer)
{
	BufferDesc *desc = GetLocalBufferDescriptor(-buffer - 1);

	if (TbReadBufState(desc) & BM_DIRTY)
		tb_write_local_run(&desc, 1);
}

/*
 * Leader, pg_tempbuf.debug_hazard evict_during_batch: buffer (block blkno
 * of rel, pinned once, by the caller) is evicted, written first if dirty,
 * and given to the next block, as a read of that block would, while a
 * worker is between its look at the descriptor and its read of the page;
 * put back once it has read.  Nothing happens to a buffer pinned more
 * than once: the buffer manager would not evict it either.
 */
void
tb_hazard_give_buffer_away(TbHazardMeet *meet, Relation rel, Buffer buffer,
						   BlockNumber blkno)
{
	BufferDesc *desc = GetLocalBufferDescriptor(-buffer - 1);
	BufferTag	tag = desc->tag;

	if (LocalRefCount[-buffer - 1] > 1)
		return;
	tb_hazard_write_if_dirty(buffer);
	desc->tag.blockNum = (blkno + 1) % RelationGetNumberOfBlocks(rel);
	tb_page_source_read_image(rel, MAIN_FORKNUM, desc->tag.blockNum,
							  BufferGetPage(buffer));
	pg_atomic_exchange_u32(&meet->phase, HAZARD_CHANGED);
	(void) tb_hazard_wait_for_phase(meet, HAZARD_READ, 10000000L);
	tb_page_source_read_image(rel, MAIN_FORKNUM, blkno, BufferGetPage(buffer));
	desc->tag = tag;
}

/* The leader has changed the page: say so, and let the worker read on. */
void
tb_hazard_served(TbHazardMeet *meet, Relation rel, BlockNumber blkno)
{
	ereport(NOTICE,
			(errmsg("pg_tempbuf.debug_hazard: block %u of \"%s\" met the leader in the middle of a worker's read",
					blkno, RelationGetRelationName(rel))));
	if (pg_atomic_read_u32(&meet->phase) < HAZARD_CHANGED)
		pg_atomic_exchange_u32(&meet->phase, HAZARD_CHANGED);
}

/*
 * Leader, pg_tempbuf.debug_hazard prune_during_read or write_during_read,
 * for every scan whose worker reads the file, prune_during_copy for an
 * index or bitmap scan whose worker copies the page out of the leader's
 * pool, and evict_during_batch for an index scan's worker that peeks at a
 * heap page there: wait a little for a worker to pause in the middle of a
 * page of rel, and prune it and write it back, write it back, prune it, or
 * give its buffer to another page, as code running in the leader (a
 * function above Gather) and an eviction could.
 */
void
tb_hazard_serve_paused_read(TbHazardMeet *meet, Relation rel)
{
	BlockNumber blkno;
	Buffer		buffer;

	if (tb_debug_hazard != TB_HAZARD_PRUNE_DURING_READ &&
		tb_debug_hazard != TB_HAZARD_WRITE_DURING_READ &&
		tb_debug_hazard != TB_HAZARD_PRUNE_DURING_COPY &&
		tb_debug_hazard != TB_HAZARD_EVICT_DURING_BATCH)
		return;
	if (!tb_hazard_wait_for_phase(meet, HAZARD_PAUSED, 3000000L))
		return;
	blkno = meet->block;
	buffer = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
	if (tb_debug_hazard == TB_HAZARD_EVICT_DURING_BATCH)
		tb_hazard_give_buffer_away(meet, rel, buffer, blkno);
	else if (tb_debug_hazard != TB_HAZARD_WRITE_DURING_READ)
		TbPruneHeapPage(rel, buffer);
	if (tb_debug_hazard == TB_HAZARD_PRUNE_DURING_READ ||
		tb_debug_hazard == TB_HAZARD_WRITE_DURING_READ)
		tb_hazard_write_if_dirty(buffer);
	ReleaseBuffer(buffer);
	tb_hazard_served(meet, rel, blkno);
}
