/*-------------------------------------------------------------------------
 *
 * temp_scan_supply.c
 *	  How pages reach each participant of a Temp Seq Scan: the shared
 *	  state, the pages workers copy from the leader's buffers or read from
 *	  the file (both through page_source.c), and the pages the leader keeps
 *	  from changing.  Which block comes next is temp_scan_schedule.c's.
 *
 * Life of one execution:
 *	- On Linux, where the system allows it, workers of a partial scan copy
 *	  the pages the leader holds straight out of its local buffers
 *	  (page_source.c), from a list of them the leader puts in the shared
 *	  state; pages not in its buffers are on disk already.  Then nothing
 *	  below is written.
 *	- Otherwise every block a worker reads must be on disk in its newest
 *	  image first: the leader writes the dirty ones, before workers start
 *	  or just ahead of them (temp_scan_schedule.c).
 *	  A rescan writes only what is dirty then: until the statement ends
 *	  nothing can dirty those pages but hint bits (a parallel query cannot
 *	  write, and no other scan of the table in the plan goes through local
 *	  buffers: plan_walk.c).
 *	- Participants take chunks of blocks from a shared range and read
 *	  them into private memory (page_source.c), so workers need no
 *	  temp_buffers of their own; the leader reads the pages it holds in
 *	  place, pinning each local buffer while it is on that page.
 *	- When workers must not look at the table's rows the scan runs in the
 *	  leader alone: it then stops Gather from launching any worker.  That
 *	  happens when the toast index is one toast_reader.c cannot read, or
 *	  when code the leader runs could prune pages the guards cannot keep
 *	  (page_guard.c).
 *	- Pages workers read cannot change under them: see page_guard.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "port/atomics.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "storage/condition_variable.h"
#include "utils/rel.h"

#include "compat.h"
#include "core_copies.h"
#include "guc.h"
#include "hazard_meet.h"
#include "leader_pages.h"
#include "localbuf_access.h"
#include "page_guard.h"
#include "page_source.h"
#include "scan_run.h"
#include "shared_pool.h"
#include "temp_scan_int.h"
#include "toast_reader.h"

/*
 * Leader only: put the table's pages (and those of its toast relation,
 * when participants fetch from it) on disk, once per execution.
 */
int64
tb_ts_write_table(CustomScanState *node)
{
	TempScanState *ts = (TempScanState *) node;
	Relation	rel = ts->css.ss.ss_currentRelation;
	TbRelFileId file = TbRelationFileId(rel);
	int64		pages;

	Assert(!IsParallelWorker());

	if (ts->flushed)
		return 0;
	tb_ts_decide_toast(ts);
	pages = tb_flush_local_buffers(&file, MAIN_FORKNUM);
	if (ts->fetch_toast && !ts->toast_listed)
		pages += tb_toast_flush(rel);
	ts->flushed = true;
	return pages;
}

void
tb_ts_flush_table(TempScanState *ts)
{
	tb_scan_run_flush(&ts->run, &ts->css);
}

/* Leader: note which of the table's pages it can copy from its buffers. */
static void
remember_resident_pages(TempScanState *ts)
{
	Relation	rel = ts->css.ss.ss_currentRelation;
	MemoryContext oldcxt = MemoryContextSwitchTo(ts->css.ss.ps.state->es_query_cxt);

	if (ts->resident)
		pfree(ts->resident);
	ts->resident = tb_resident_pages(TbRelationFileId(rel), MAIN_FORKNUM,
									 &ts->nresident);
	ts->resident_hint = -1;
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Size the scan and, in the leader, flush the table (or get ready to, for
 * a flush that workers follow) and decide whether workers may take part.
 * Runs at execution time, so a prepared statement sees the table as it is
 * now.  A worker running a full scan sizes it alone: the leader flushed
 * before it started, and nothing changes the table's length until the
 * statement ends.
 */
void
tb_ts_prepare(TempScanState *ts, TbFlushMode mode)
{
	Relation	rel = ts->css.ss.ss_currentRelation;
	const char *toast_reason = NULL;

	tb_ts_decide_toast(ts);
	if (!IsParallelWorker())
	{
		/*
		 * Workers fetching out-of-line values need the toast relation on
		 * disk before they start, unless they copy its pages from the pool.
		 */
		if (ts->fetch_toast && !ts->toast_listed)
			mode = TB_FLUSH_UPFRONT;
		if (mode == TB_FLUSH_UPFRONT)
			tb_ts_flush_table(ts);
		ts->flush_mode = mode;
		ts->flushing = mode != TB_FLUSH_UPFRONT;
		ts->pass_started = false;
		ts->flush_opened = false;
		remember_resident_pages(ts);
	}

	ts->nblocks = RelationGetNumberOfBlocks(rel);

	if (ts->fetch_toast && ts->toast == NULL)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(ts->css.ss.ps.state->es_query_cxt);
		TempScanCounters *counters = &ts->mine;

		ts->toast = tb_toast_reader_open(rel, &counters->toast_pages,
										 &counters->rereads, &toast_reason);
		MemoryContextSwitchTo(oldcxt);
		/* The leader read the same pages and could. */
		if (ts->toast == NULL && IsParallelWorker())
			elog(ERROR, "parallel worker could not read toast index: %s",
				 toast_reason);
	}

	if (ts->fetch_toast && ts->toast == NULL)
		ts->leader_only_reason = toast_reason;
	else
		ts->leader_only_reason = NULL;

	ts->prepared = true;
}

/* Let go of the leader's local buffer the page in hand is read from. */
void
tb_ts_unpin_page(TempScanState *ts)
{
	if (BufferIsValid(ts->pinned))
	{
		ReleaseBuffer(ts->pinned);
		ts->pinned = InvalidBuffer;
		ts->page = ts->page_buf;
		ts->nvisible = ts->next_visible = 0;
	}
}

void
tb_ts_reset_pass(TempScanState *ts)
{
	tb_ts_unpin_page(ts);
	ts->hazard_pending = ts->hazard_paused = false;
	ts->last_xmin.xid = InvalidTransactionId;
	ts->next_block = 0;
	ts->chunk_next = ts->chunk_end = 0;
	ts->nvisible = ts->next_visible = 0;
	ts->page_block = InvalidBlockNumber;
	ts->reserved_pass = false;
	ts->reserved_next = 0;
}

/*
 * Worker: the page blkno where it lies in the leader's buffer (the pool's
 * mapping), a checked copy of it, or NULL when the leader did not list it
 * or the copy found its buffer given to another page (then it is in the
 * file).  A page listed pinned stays pinned by the leader until the scan
 * ends (share_leader_pages()), so nothing but hint bits changes it while
 * this worker reads its tuples there.
 *
 * Under pg_tempbuf.debug_hazard the worker pauses when it hands out the
 * page's first row, a pointer into the page, until its parent has read
 * the row (tb_ts_pause_in_place()), while the leader tries to prune the
 * page or give its buffer to another block: the pins must refuse both.
 */
static const char *
leader_page_in_place(TempScanState *ts, BlockNumber blkno)
{
	Relation	rel = ts->css.ss.ss_currentRelation;
	const TbLeaderPage *lp;
	const char *page;

	lp = tb_leader_page_find(ts->leader_pages, ts->shared->nleader_pages, blkno);
	if (lp == NULL)
		return NULL;
	if (!lp->pinned)
		return tb_page_source_copy_listed(rel, lp, ts->page_buf, ts->scratch) ?
			ts->page_buf : NULL;
	page = tb_page_source_leader_page(rel, lp);
	ts->hazard_pending = page != NULL && tb_mid_read_hook != NULL;
	return page;
}

/*
 * Get one block, from the leader's own buffers, a copy of the leader's, or
 * the file, and collect its tuples visible to the snapshot.
 */
void
tb_ts_load_page(TempScanState *ts, BlockNumber blkno)
{
	Relation	rel = ts->css.ss.ss_currentRelation;
	Snapshot	snapshot = ts->css.ss.ps.state->es_snapshot;
	TempScanCounters *counters = tb_ts_my_counters(ts);
	const TbResidentPage *held;
	const char *in_place = NULL;
	char	   *in_pinset = NULL;
	Page		page;
	OffsetNumber maxoff;
	bool		all_visible;

	tb_ts_unpin_page(ts);
	tb_ts_resume_in_place(ts);
	if (ts->resident &&
		(held = tb_resident_page_find(ts->resident, ts->nresident, blkno,
									   &ts->resident_hint)) != NULL)
	{
		if (held->pinned)
			in_pinset = LocalBufferBlockPointers[held->buf_id];
		else
			ts->pinned = tb_pin_resident_page(rel, held, MAIN_FORKNUM);
	}
	if (in_pinset != NULL)
	{
		/*
		 * Pinned for the workers until the scan ends (share_leader_pages()):
		 * read where it lies, as the workers do, counted as ReadBuffer's hit
		 * would be.
		 */
		ts->page = in_pinset;
		pgBufferUsage.local_blks_hit++;
		counters->buffer_pages++;
	}
	else if (BufferIsValid(ts->pinned))
	{
		ts->page = BufferGetPage(ts->pinned);
		counters->buffer_pages++;
	}
	else if (ts->copies_from_leader && (in_place = leader_page_in_place(ts, blkno)) != NULL)
	{
		ts->page = unconstify(char *, in_place);
		counters->leader_pages++;
	}
	else if (ts->shared == NULL && ts->pool_reads &&
			 tb_page_source_copy_from_pool(rel, blkno, ts->page_buf, ts->scratch))
	{
		ts->page = ts->page_buf;
		counters->leader_pages++;
	}
	else
	{
		ts->page = ts->page_buf;
		counters->rereads += tb_page_source_read_file(rel, MAIN_FORKNUM, blkno,
													  ts->page, ts->scratch);
	}
	counters->pages++;
	page = (Page) ts->page;

	ts->page_block = blkno;
	ts->nvisible = ts->next_visible = 0;
	if (PageIsNew(page))
		return;

	all_visible = PageIsAllVisible(page) && !snapshot->takenDuringRecovery;
	maxoff = PageGetMaxOffsetNumber(page);
	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off = OffsetNumberNext(off))
	{
		ItemId		lp = PageGetItemId(page, off);

		if (!ItemIdIsNormal(lp))
			continue;
		if (all_visible ||
			tb_tuple_visible((HeapTupleHeader) PageGetItem(page, lp), snapshot,
							 &ts->last_xmin))
			ts->visible[ts->nvisible++] = off;
	}
}

static Size
leader_pages_offset(int nworkers)
{
	return MAXALIGN(add_size(offsetof(TempScanShared, counters),
							 mul_size(nworkers + 1, sizeof(TempScanCounters))));
}

/* Can this partial scan's workers copy pages from the leader's memory? */
static bool
offers_leader_pages(TempScanState *ts)
{
	return ts->partial && tb_leader_pages_readable();
}

/*
 * Room for the list of the leader's pages: one entry per block of the
 * table, never more than the pool has buffers.  Sizing it by the pool
 * alone made every parallel query of a session with a large temp_buffers
 * pay for a segment the kernel zeroes (1.5 MB at 512MB: 0.48 ms a query
 * on a 1,000-row table on our test machine), however small the table.
 */
static Size
reserved_offset(int nworkers, int leader_pages_room)
{
	return MAXALIGN(add_size(leader_pages_offset(nworkers),
							 mul_size(leader_pages_room, sizeof(TbLeaderPage))));
}

static Size
toast_list_offset(int nworkers, int leader_pages_room, BlockNumber reserved_room)
{
	return MAXALIGN(add_size(reserved_offset(nworkers, leader_pages_room),
							 mul_size((reserved_room + 63) / 64, sizeof(uint64))));
}

/*
 * Leader: list the pages of the toast relation and its index it holds, for
 * participants that fetch out-of-line values: workers copy them from its
 * pool, and the toast relation is not written.  Returns the list's size.
 */
static Size
collect_toast_pages(TempScanState *ts, bool pool)
{
	Relation	rels[2];
	int			nrels;
	Size		size;

	tb_ts_decide_toast(ts);
	/* A leader out of the scan could not cover workers that stay out. */
	tb_leader_pages_init(&ts->toast_pages,
						 pool && ts->fetch_toast && parallel_leader_participation,
						 ts->guard_pruning);
	nrels = ts->toast_pages.copies ?
		tb_toast_relations_open(ts->css.ss.ss_currentRelation, rels) : 0;
	size = tb_leader_pages_collect(&ts->toast_pages, rels, nrels);
	tb_toast_relations_close(rels, nrels);
	ts->toast_listed = ts->toast_pages.copies && nrels == 2;
	return size;
}

/*
 * The shared state's size: the counters, the list of the leader's pages,
 * a bit per block for those it keeps, and the list of its toast pages.
 */
Size
tb_ts_estimate_shared(TempScanState *ts, ParallelContext *pcxt)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(ts->css.ss.ss_currentRelation);
	bool		pool = offers_leader_pages(ts);

	ts->leader_pages_room = 0;
	if (pool)
		ts->leader_pages_room = (int) Min((BlockNumber) NLocBuffer, nblocks);
	/* pg_tempbuf.debug_hazard: as if the table had doubled since. */
	if (tb_debug_hazard == TB_HAZARD_LIST_OVERFLOW)
		ts->leader_pages_room /= 2;
	/* A bit per block for those the leader keeps: 4 kB for 256 MB of table. */
	ts->reserved_room = nblocks;
	return add_size(toast_list_offset(pcxt->nworkers, ts->leader_pages_room, nblocks),
					collect_toast_pages(ts, pool));
}

/*
 * Leader: list the pages workers read in its pool: every page of the table
 * it holds, dirty or clean (a read in place costs a worker less than a read
 * call of the file).  A listed buffer is pinned where the pin budget allows
 * (page_guard.c), so that it holds that page, unchanged but for hint bits,
 * until the scan ends, and workers read it in place.  A dirty page the
 * budget leaves out is listed unpinned, and workers copy it, checked
 * (page_source.c); a clean one they read from the file.
 */
static void
share_leader_pages(TempScanState *ts, TempScanShared *shared)
{
	TbLeaderPage *pages = (TbLeaderPage *) ((char *) shared + shared->leader_pages_offset);
	int			n = 0;

	shared->nleader_pages = 0;
	ts->copies_off_reason = NULL;
	if (!ts->partial || shared->leader_only)
		return;
	ts->copies_off_reason = tb_shared_pool_unreadable();
	if (ts->copies_off_reason != NULL)
		return;
	if (ts->nresident == 0)
	{
		ts->copies_off_reason = "no page of the table in the leader's buffers";
		return;
	}
	tb_shared_pool_describe(&shared->pool);
	for (int i = 0; i < ts->nresident; i++)
	{
		if (!tb_debug_unprotected)
		{
			ts->resident[i].pinned = tb_pinset_add(&ts->pins, ts->resident[i].buf_id);
			if (!ts->resident[i].pinned && !ts->resident[i].dirty)
				continue;
		}

		/*
		 * The table grew past the list's room since the DSM was sized, which
		 * a read-only statement cannot do: offer no pages, so that the
		 * leader writes what workers read.
		 */
		if (n >= ts->leader_pages_room)
		{
			ts->copies_off_reason = "the table outgrew the shared list of the leader's pages";
			n = 0;
			break;
		}
		pages[n].blkno = ts->resident[i].blkno;
		pages[n].buf_id = ts->resident[i].buf_id;
		pages[n].pinned = ts->resident[i].pinned || tb_debug_unprotected;
		n++;
	}
	shared->nleader_pages = n;
}

/* How many blocks the leader keeps to itself this pass. */
static uint64
count_reserved(TempScanShared *shared)
{
	const uint64 *reserved = tb_ts_reserved_map(shared);
	uint64		n = 0;

	for (BlockNumber w = 0; w < (shared->reserved_bits + 63) / 64; w++)
		n += pg_popcount64(reserved[w]);
	return n;
}

/* Leader: let go of the pins, which its own reads relied on too. */
static void
release_pins(TempScanState *ts)
{
	tb_pinset_release(&ts->pins);
	for (int i = 0; i < ts->nresident; i++)
		ts->resident[i].pinned = false;
}

/*
 * Leader, before workers start: keep every page they may read from
 * changing while they read it (page_guard.c), or decide that they must not
 * read the table at all.  Lists the pages workers copy from the leader.
 */
static void
guard_pages(TempScanState *ts, TempScanShared *shared)
{
	Relation	rel = ts->css.ss.ss_currentRelation;
	const char *reason = NULL;

	release_pins(ts);
	tb_pinset_init(&ts->pins, ts->guard_pruning);
	memset(tb_ts_reserved_map(shared), 0, sizeof(uint64) * ((shared->reserved_bits + 63) / 64));

	share_leader_pages(ts, shared);
	if (!shared->leader_only && ts->guard_pruning && !tb_debug_unprotected)
	{
		if (!tb_guard_prunable_pages(rel, ts->resident, ts->nresident, &ts->pins,
									 tb_ts_reserved_map(shared), shared->reserved_bits,
									 ts->scratch))
			reason = "code in the leader may prune pages workers read";
		else if (ts->toast && !tb_toast_guard(rel, &ts->pins, ts->scratch))
			reason = "code in the leader may prune out-of-line values workers read";
	}
	shared->any_reserved = count_reserved(shared) > 0;
	if (reason == NULL && shared->any_reserved && !parallel_leader_participation)
		reason = "the leader keeps pages to itself but does not take part";

	if (reason != NULL)
	{
		ts->leader_only_reason = reason;
		shared->leader_only = true;
		shared->nleader_pages = 0;
		shared->any_reserved = false;
		release_pins(ts);
	}
	if (shared->any_reserved)
		ts->pages_kept += count_reserved(shared);
	ts->pages_pinned += ts->pins.npinned;
}

void
tb_ts_setup_shared(TempScanState *ts, ParallelContext *pcxt,
				   TempScanShared *shared)
{
	/*
	 * Workers wait on a flush only where the leader surely gets to it, or
	 * read the leader's pool and wait for nothing (a worker that cannot map
	 * it then fails: temp_scan.c).
	 */
	tb_ts_prepare(ts, parallel_leader_participation || offers_leader_pages(ts) ?
					  ts->plan_flush_mode : TB_FLUSH_UPFRONT);
	tb_ts_reset_pass(ts);

	shared->nblocks = ts->nblocks;
	shared->chunk = tb_ts_chunk_size(ts->nblocks, pcxt->nworkers + 1);
	shared->leader_only = ts->leader_only_reason != NULL;
	shared->toast_private = ts->toast != NULL;
	pg_atomic_init_u64(&shared->range, RANGE(0, ts->nblocks));
	pg_atomic_init_u32(&shared->readable_below,
					   ts->flushing ? 0 : ALL_READABLE);
	pg_atomic_init_u32(&shared->leader_gone, 0);
	ConditionVariableInit(&shared->flush_progress);
	pg_atomic_init_u32(&shared->workers_started, 0);
	pg_atomic_init_u32(&shared->workers_refused, 0);
	pg_atomic_init_u32(&shared->refused_errno, 0);
	shared->leader_pages_offset = leader_pages_offset(pcxt->nworkers);
	shared->reserved_offset = reserved_offset(pcxt->nworkers, ts->leader_pages_room);
	shared->reserved_bits = ts->reserved_room;
	shared->toast_list_offset = toast_list_offset(pcxt->nworkers, ts->leader_pages_room,
												  ts->reserved_room);
	tb_leader_pages_share(&ts->toast_pages, tb_ts_toast_list(shared));
	tb_hazard_meet_init(&shared->hazard);
	ts->hazard_served = false;
	guard_pages(ts, shared);

	/*
	 * A leader out of the scan that lists no pages after all (none held,
	 * the pool refused) writes everything now: no one would follow.
	 */
	if (!parallel_leader_participation && ts->flushing && shared->nleader_pages == 0)
	{
		ts->flushing = false;
		ts->flush_mode = TB_FLUSH_UPFRONT;
		tb_ts_flush_table(ts);
		pg_atomic_write_u32(&shared->readable_below, ALL_READABLE);
	}
	shared->nworkers = pcxt->nworkers;
	memset(shared->counters, 0, sizeof(TempScanCounters) * (pcxt->nworkers + 1));
	ts->shared = shared;
	ts->pcxt = pcxt;
	ts->start_synced = false;

	/* Gather launches workers right after this: make it launch none. */
	if (shared->leader_only)
		pcxt->nworkers_to_launch = 0;
}
