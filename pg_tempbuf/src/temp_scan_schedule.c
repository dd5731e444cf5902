/*-------------------------------------------------------------------------
 *
 * temp_scan_schedule.c
 *	  The block schedule of a Temp Seq Scan: which block each participant
 *	  reads next (chunks of adjacent blocks from a shared range, then the
 *	  blocks the leader kept for itself), the leader's flush that workers
 *	  follow (interleaved and pipelined modes), and the workers' waits for
 *	  blocks not written yet.
 *
 * Unless workers copy the pages the leader holds out of its memory
 * (temp_scan_supply.c), every block a worker reads must be on disk in its
 * newest image first (only main-fork pages: the scan reads nothing else).
 * The leader of a partial scan that an aggregate or sort drains
 * (plan_walk.c decides) writes dirty runs just ahead of the workers, who
 * take chunks from the low end of the table, and meanwhile scans chunks
 * from the high end out of its own buffers, which it then need not write:
 * interleaved.  Where rows go straight up to Gather, it writes everything in
 * its first call, workers reading behind it: pipelined.  Progress is
 * published in the shared state, and workers sleep on a condition variable
 * for blocks not written yet.  Otherwise (a full scan, no leader
 * participation, toast values to fetch, leader-only mode) the leader writes
 * everything before Gather launches workers (upfront: tb_ts_flush_table()):
 * a partial scan when it sets up the shared state, a full scan when the
 * executor runs the plan.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "portability/instr_time.h"
#include "storage/condition_variable.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "guc.h"
#include "localbuf_access.h"
#include "page_guard.h"
#include "scan_run.h"
#include "temp_scan_int.h"

static bool leader_next_chunk(TempScanState *ts);
static bool wait_readable(TempScanState *ts, BlockNumber blkno);

/*
 * Hand out blocks in chunks, so that participants read runs of adjacent
 * blocks; small enough that the tail of the scan stays balanced.
 */
BlockNumber
tb_ts_chunk_size(BlockNumber nblocks, int nparticipants)
{
	BlockNumber chunk = nblocks / (Max(nparticipants, 1) * 64);

	return Max(1, Min(chunk, 64));
}

/*
 * Take the next chunk of the blocks left: from the low end, as everybody
 * does, or (the leader, interleaved mode) from the high end.
 */
static bool
claim_chunk(TempScanShared *shared, bool from_high, BlockNumber *start,
			BlockNumber *end)
{
	uint64		range = pg_atomic_read_u64(&shared->range);

	for (;;)
	{
		BlockNumber low = RANGE_LOW(range);
		BlockNumber high = RANGE_HIGH(range);
		BlockNumber n;

		if (low >= high)
			return false;
		n = Min(shared->chunk, high - low);
		*start = from_high ? high - n : low;
		*end = *start + n;
		if (pg_atomic_compare_exchange_u64(&shared->range, &range,
										   from_high ? RANGE(low, high - n) :
										   RANGE(low + n, high)))
			return true;
	}
}

static bool
is_reserved(TempScanShared *shared, BlockNumber blkno)
{
	return shared->any_reserved &&
		tb_block_reserved(tb_ts_reserved_map(shared), shared->reserved_bits, blkno);
}

/* Leader, once no chunk is left: the next of the blocks it kept. */
static bool
next_reserved_block(TempScanState *ts, BlockNumber *blkno)
{
	TempScanShared *shared = ts->shared;
	BlockNumber end = Min(shared->reserved_bits, ts->nblocks);

	while (ts->reserved_next < end)
	{
		BlockNumber candidate = ts->reserved_next++;

		if (is_reserved(shared, candidate))
		{
			*blkno = candidate;
			return true;
		}
	}
	return false;
}

bool
tb_ts_next_block(TempScanState *ts, BlockNumber *blkno)
{
	for (;;)
	{
		if (ts->reserved_pass)
			return next_reserved_block(ts, blkno);
		if (ts->chunk_next >= ts->chunk_end)
		{
			if (ts->shared)
			{
				bool		found;

				if (IsParallelWorker())
					found = claim_chunk(ts->shared, false, &ts->chunk_next,
										&ts->chunk_end);
				else
				{
					found = leader_next_chunk(ts);
					tb_ts_serve_hazard(ts);
				}
				if (!found)
				{
					if (IsParallelWorker() || !ts->shared->any_reserved)
						return false;
					ts->reserved_pass = true;
					continue;
				}
			}
			else
			{
				BlockNumber chunk = tb_ts_chunk_size(ts->nblocks, 1);

				if (ts->next_block >= ts->nblocks)
					return false;
				ts->chunk_next = ts->next_block;
				ts->chunk_end = Min(ts->next_block + chunk, ts->nblocks);
				ts->next_block = ts->chunk_end;
			}
		}
		*blkno = ts->chunk_next++;
		if (ts->shared && is_reserved(ts->shared, *blkno))
			continue;
		if (ts->shared && IsParallelWorker() && !ts->copies_from_leader &&
			!wait_readable(ts, *blkno))
		{
			ts->chunk_next = ts->chunk_end;
			return false;
		}
		return true;
	}
}

/*
 * Leader: the flush that workers wait on is over; let them all go.  Should
 * the leader end its part before the flush did (completed false), they
 * stop instead of reading.
 */
void
tb_ts_finish_flush(TempScanState *ts, bool completed)
{
	TempScanShared *shared = ts->shared;

	if (completed)
		pg_atomic_exchange_u32(&shared->readable_below, ALL_READABLE);
	else
		pg_atomic_exchange_u32(&shared->leader_gone, 1);
	ConditionVariableBroadcast(&shared->flush_progress);
	if (ts->flush_opened)
	{
		ts->run.pages_flushed += ts->flush.written;
		tb_flush_cursor_close(&ts->flush);
		ts->flush_opened = false;
	}
	ts->flushing = false;
}

/*
 * Leader: write the next run of dirty blocks that workers may be handed
 * (those below the high end of the range: the leader reads the blocks
 * above from its buffers), then tell workers how far they may read.
 */
static void
flush_step(TempScanState *ts)
{
	TempScanShared *shared = ts->shared;
	BlockNumber high = RANGE_HIGH(pg_atomic_read_u64(&shared->range));
	BlockNumber next;
	instr_time	start;
	instr_time	duration;
	int64		written_before;

	INSTR_TIME_SET_CURRENT(start);
	/* Collected at the first write: with copies from the leader there is none. */
	if (!ts->flush_opened)
	{
		tb_flush_cursor_open(&ts->flush,
							 TbRelationFileId(ts->css.ss.ss_currentRelation),
							 MAIN_FORKNUM);
		ts->flush_opened = true;
	}
	written_before = ts->flush.written;
	(void) tb_flush_cursor_write_run(&ts->flush, high);
	tb_ts_stall_for_hazard(TB_HAZARD_SLOW_WRITES);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	ts->run.flush_ms += INSTR_TIME_GET_MILLISEC(duration);
	if (ts->flush.written > written_before)
	{
		ts->last_write_ms = INSTR_TIME_GET_MILLISEC(duration);
		ts->last_write_pages = ts->flush.written - written_before;
		ts->chunks_since_write = 0;
	}

	next = tb_flush_cursor_next_block(&ts->flush);
	if (next == InvalidBlockNumber || next >= high)
		tb_ts_finish_flush(ts, true);
	else
	{
		/* The exchange is a full barrier: the write is done before this. */
		pg_atomic_exchange_u32(&shared->readable_below, next);
		ConditionVariableBroadcast(&shared->flush_progress);
	}
}

/*
 * pg_tempbuf.debug_sync_start: wait (a second at most) until the launched
 * workers run, so that tests see them read even a small table.
 */
static void
wait_for_workers(TempScanState *ts, int nworkers)
{
	for (int i = 0; i < 10000; i++)
	{
		if (pg_atomic_read_u32(&ts->shared->workers_started) >= (uint32) nworkers)
			return;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(100L);
	}
}

/* Interleaved mode: high chunks the leader scans before it times a write again. */
#define WRITE_RETRY_CHUNKS	4

/*
 * Interleaved mode: does writing a page for the workers cost the leader
 * less than scanning one itself?  Only then do idle workers gain from a
 * write: otherwise the leader gets further by scanning, even alone.  (On a
 * virtual machine whose fresh page-cache memory is slow to touch, a write
 * can cost more than the scan of the page.)  Each pass measures a write
 * first, then a scan.  The latest write run is the one compared, and one
 * slow run does not stop the writes for the rest of the pass: after a few
 * scanned chunks the leader times another.
 */
static bool
writing_pays(TempScanState *ts)
{
	if (ts->flush.written == 0)
		return true;
	if (ts->pass_scanned == 0)
		return false;
	if (ts->chunks_since_write >= WRITE_RETRY_CHUNKS)
		return true;
	return ts->last_write_ms / ts->last_write_pages <
		ts->pass_scan_ms / ts->pass_scanned;
}

/* Interleaved mode: the leader takes a chunk from the high end, timed. */
static bool
take_high_chunk(TempScanState *ts)
{
	if (!claim_chunk(ts->shared, true, &ts->chunk_next, &ts->chunk_end))
		return false;
	INSTR_TIME_SET_CURRENT(ts->high_chunk_start);
	ts->high_chunk_pages = ts->chunk_end - ts->chunk_next;
	ts->chunks_since_write++;
	return true;
}

/* Interleaved mode: the leader is done with the high chunk it held. */
static void
time_high_chunk(TempScanState *ts)
{
	instr_time	duration;

	if (ts->high_chunk_pages == 0)
		return;
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, ts->high_chunk_start);
	ts->pass_scan_ms += INSTR_TIME_GET_MILLISEC(duration);
	ts->pass_scanned += ts->high_chunk_pages;
	ts->high_chunk_pages = 0;
}

/*
 * Leader: do workers need the flush?  Not when each of them copies the
 * pages the leader holds out of its memory (the others are on disk).  Says
 * so once every launched worker has tried; until then, *known is false.
 */
static bool
workers_need_writes(TempScanState *ts, bool *known)
{
	TempScanShared *shared = ts->shared;
	int			nworkers = ts->pcxt ? ts->pcxt->nworkers_launched : 0;

	uint32		started;
	uint32		refused;

	*known = true;
	if (shared->nleader_pages == 0)
		return true;

	/*
	 * A worker counts itself refused before it counts itself started: read
	 * started first, and once every launched worker has started, every
	 * refusal is there to see.
	 */
	if (tb_debug_unprotected)
	{
		refused = pg_atomic_read_u32(&shared->workers_refused);
		tb_ts_stall_for_hazard(TB_HAZARD_HANDSHAKE_STALL);
		started = pg_atomic_read_u32(&shared->workers_started);
	}
	else
	{
		started = pg_atomic_read_u32(&shared->workers_started);
		pg_read_barrier();
		tb_ts_stall_for_hazard(TB_HAZARD_HANDSHAKE_STALL);
		refused = pg_atomic_read_u32(&shared->workers_refused);
	}
	if (refused > 0)
		return true;
	if (started >= (uint32) nworkers)
		return false;
	*known = false;
	return true;
}

/* How long a pipelined leader waits to learn whether workers need writes. */
#define WORKER_START_WAIT_US	200000L

/*
 * Leader, with DSM: the next chunk.  While a flush that workers follow is
 * under way, the leader writes runs ahead of them (always, when
 * pipelined); in interleaved mode, when they have enough to read or a
 * write costs it more than a scan, it scans a chunk from the high end
 * instead, out of its own buffers.
 */
static bool
leader_next_chunk(TempScanState *ts)
{
	TempScanShared *shared = ts->shared;

	time_high_chunk(ts);

	if (tb_debug_sync_start && !ts->start_synced)
	{
		ts->start_synced = true;
		if (ts->pcxt && ts->pcxt->nworkers_launched > 0)
			wait_for_workers(ts, ts->pcxt->nworkers_launched);
	}

	while (ts->flushing)
	{
		uint64		range;

		if (!ts->pass_started)
		{
			int			nworkers = ts->pcxt ? ts->pcxt->nworkers_launched : 0;

			/* No worker started: the leader reads everything from its buffers. */
			if (nworkers == 0)
			{
				tb_ts_finish_flush(ts, true);
				break;
			}
			ts->pass_started = true;
			ts->flush.written = 0;
			ts->lookahead = 2 * shared->chunk * nworkers;
			ts->writes_needed_known = false;
			ts->start_wait_us = 0;
			ts->pass_scan_ms = 0;
			ts->pass_scanned = 0;
			ts->chunks_since_write = 0;
			ts->high_chunk_pages = 0;
		}

		range = pg_atomic_read_u64(&shared->range);
		if (!ts->writes_needed_known)
		{
			bool		known;

			if (!workers_need_writes(ts, &known))
			{
				/* Every worker copies from the leader: nothing to write. */
				tb_ts_finish_flush(ts, true);
				break;
			}
			if (known || ts->start_wait_us >= WORKER_START_WAIT_US)
				ts->writes_needed_known = true;
			else if (ts->flush_mode == TB_FLUSH_PIPELINED ||
					 RANGE_LOW(range) >= RANGE_HIGH(range))
			{
				/* Rows may not go up before the writes: wait a little. */
				CHECK_FOR_INTERRUPTS();
				pg_usleep(100L);
				ts->start_wait_us += 100;
				continue;
			}
			else if (take_high_chunk(ts))
				return true;	/* scan while the workers start, writing nothing yet */
			else
				continue;
		}
		if (ts->flush_mode == TB_FLUSH_PIPELINED ||
			RANGE_LOW(range) >= RANGE_HIGH(range) ||
			(RANGE_LOW(range) + ts->lookahead >=
			 pg_atomic_read_u32(&shared->readable_below) &&
			 writing_pays(ts)))
			flush_step(ts);
		else if (take_high_chunk(ts))
			return true;
	}
	return claim_chunk(shared, false, &ts->chunk_next, &ts->chunk_end);
}

/*
 * Worker: wait until blkno is on disk in its newest image.  False when
 * the leader stopped before flushing it: nothing reads this scan's rows
 * any more.
 */
static bool
wait_readable(TempScanState *ts, BlockNumber blkno)
{
	TempScanShared *shared = ts->shared;
	bool		readable = true;

	if (blkno >= pg_atomic_read_u32(&shared->readable_below))
	{
		tb_ts_my_counters(ts)->waits++;
		ConditionVariablePrepareToSleep(&shared->flush_progress);
		while (blkno >= pg_atomic_read_u32(&shared->readable_below))
		{
			if (pg_atomic_read_u32(&shared->leader_gone))
			{
				readable = false;
				break;
			}
			ConditionVariableSleep(&shared->flush_progress, PG_WAIT_EXTENSION);
		}
		ConditionVariableCancelSleep();
	}
	pg_read_barrier();
	return readable;
}
