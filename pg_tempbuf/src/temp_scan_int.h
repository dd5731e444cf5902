/*-------------------------------------------------------------------------
 *
 * temp_scan_int.h
 *	  The Temp Seq Scan's state, shared by the files that make the scan:
 *	  temp_scan.c (the node), temp_scan_supply.c (how pages reach each
 *	  participant), temp_scan_schedule.c (which block each reads next, and
 *	  the leader's flush that workers follow), temp_scan_tuples.c (the
 *	  rows it returns) and temp_scan_hazard.c (pg_tempbuf.debug_hazard's
 *	  races).
 *
 * Functions named tb_ts_* are the scan's own, called across those files.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TEMP_SCAN_INT_H
#define TEMP_SCAN_INT_H

#include "access/parallel.h"
#include "port/atomics.h"
#include "portability/instr_time.h"
#include "storage/condition_variable.h"

#include "core_copies.h"
#include "guc.h"
#include "hazard_meet.h"
#include "leader_pages.h"
#include "localbuf_access.h"
#include "page_guard.h"
#include "page_source.h"
#include "scan_run.h"
#include "shared_pool.h"
#include "toast_reader.h"

/* Workers may read every block: no flush is under way. */
#define ALL_READABLE	((uint32) 0xFFFFFFFF)

/* The blocks not yet handed out: [low, high), packed for one atomic word. */
#define RANGE(low, high)	(((uint64) (high) << 32) | (uint64) (low))
#define RANGE_LOW(r)		((BlockNumber) ((r) & 0xFFFFFFFF))
#define RANGE_HIGH(r)		((BlockNumber) ((r) >> 32))

/* What each participant did, for EXPLAIN ANALYZE. */
typedef struct TempScanCounters
{
	uint64		pages;
	uint64		rereads;
	uint64		toast_values;	/* out-of-line values fetched privately */
	uint64		toast_pages;	/* toast heap and index pages read for them */
	uint64		buffer_pages;	/* of pages, those the leader read in its buffers */
	uint64		leader_pages;	/* of pages, those a worker read in the leader's buffers */
	uint64		waits;			/* times a worker waited for the flush */
} TempScanCounters;

/* Shared state in the parallel query's DSM segment. */
typedef struct TempScanShared
{
	BlockNumber nblocks;		/* the table's length when the leader flushed */
	BlockNumber chunk;			/* blocks taken from range at a time */
	bool		leader_only;
	bool		toast_private;	/* participants fetch out-of-line values */

	/*
	 * Blocks not handed out yet.  Everybody takes chunks from the low end;
	 * in interleaved mode the leader also takes them from the high end,
	 * where it reads dirty pages from its own buffers instead of writing
	 * them.
	 */
	pg_atomic_uint64 range;

	/*
	 * While the leader flushes, every block below this one is on disk in
	 * its newest image (ALL_READABLE once the flush is over); workers wait
	 * on flush_progress for the rest.  leader_gone lets them stop should
	 * the leader end its part without finishing the flush.
	 */
	pg_atomic_uint32 readable_below;
	pg_atomic_uint32 leader_gone;
	ConditionVariable flush_progress;
	pg_atomic_uint32 workers_started;	/* counted once each tried leader_pages */
	pg_atomic_uint32 workers_refused;	/* and could not map the leader's pool */
	pg_atomic_uint32 refused_errno; /* why a worker could not, for EXPLAIN */

	/*
	 * The table's pages in the leader's local buffers, by block, with the
	 * buffer holding each in the pool workers map (shared_pool.c);
	 * nleader_pages is 0 when workers read the file only.  The list follows
	 * the counters.
	 */
	TbSharedPoolRef pool;
	int			nleader_pages;
	Size		leader_pages_offset;

	/*
	 * Blocks that only the leader reads, a bit each (page_guard.c): workers
	 * skip them, and the leader reads them once it has no chunk left.
	 */
	bool		any_reserved;
	BlockNumber reserved_bits;
	Size		reserved_offset;

	/*
	 * The pages of the toast relation and its index in the leader's pool,
	 * where participants fetch out-of-line values and workers may map the
	 * pool (leader_pages.c): then the toast relation is not written.
	 */
	Size		toast_list_offset;

	TbHazardMeet hazard;		/* pg_tempbuf.debug_hazard */

	int			nworkers;
	/* [0] is the leader, [1 + ParallelWorkerNumber] the workers */
	TempScanCounters counters[FLEXIBLE_ARRAY_MEMBER];
} TempScanShared;

typedef struct TempScanState
{
	CustomScanState css;
	TbScanRun	run;			/* leader: the flush, and what it did */

	/* from the plan */
	bool		partial;
	bool		toast_sensitive;
	bool		output_unread;
	bool		guard_pruning;
	bool		pool_reads;		/* full, worker: the leader wrote nothing (TSP_POOL_READS) */
	/* a virtual scan slot (PostgreSQL 15): the columns read, a prefix */
	int			deform_natts;	/* 0: neither quals nor parent read one */
	TbFlushMode plan_flush_mode;

	/* block allocation: shared, or private when running without DSM */
	TempScanShared *shared;
	bool		prepared;		/* sized for this pass */
	bool		flushed;		/* this execution's flush is done */
	BlockNumber nblocks;
	BlockNumber next_block;		/* without DSM only */
	BlockNumber chunk_next;		/* rest of the chunk in hand */
	BlockNumber chunk_end;
	const char *leader_only_reason;

	/* leader: the flush done as workers go (pipelined, interleaved) */
	ParallelContext *pcxt;
	TbFlushMode flush_mode;		/* this pass's (the last one's, for EXPLAIN) */
	bool		flushing;		/* a flush workers wait on is not over */
	bool		pass_started;	/* the leader has sized this pass's flush */
	bool		flush_opened;	/* and collected the pages it writes */
	TbFlushCursor flush;
	BlockNumber lookahead;		/* blocks to keep readable ahead of workers */

	/*
	 * Interleaved mode: what a written page and a page scanned from the high
	 * end cost the leader in this pass, to tell which way it serves the
	 * scan better.
	 */
	double		pass_scan_ms;
	uint64		pass_scanned;
	double		last_write_ms;	/* the latest write run, and its pages */
	int64		last_write_pages;
	int			chunks_since_write; /* high chunks scanned since then */
	instr_time	high_chunk_start;	/* of the high chunk in hand */
	BlockNumber high_chunk_pages;
	bool		start_synced;	/* pg_tempbuf.debug_sync_start done this pass */
	bool		writes_needed_known;	/* workers_need_writes() answered */
	long		start_wait_us;	/* waited for that answer, pipelined */

	/* leader: the table's pages in local buffers, copied from there */
	TbResidentPage *resident;
	int			nresident;
	int			resident_hint;	/* where the last page was found in it */

	/* leader: entries the DSM has for the list of its dirty pages */
	int			leader_pages_room;
	BlockNumber reserved_room;	/* and bits for the blocks it keeps */
	const char *copies_off_reason;	/* why it lists none, this pass */
	const char *page_source;	/* for EXPLAIN: how workers got those pages */

	/* leader: the toast pages listed for workers, from EstimateDSM on */
	TbLeaderPageSet toast_pages;
	bool		toast_listed;	/* workers copy toast pages: none is written */

	/* leader: pages kept from changing while workers read (page_guard.c) */
	TbPinSet	pins;
	bool		reserved_pass;	/* reading the blocks it keeps */
	BlockNumber reserved_next;
	uint64		reserved_count; /* for EXPLAIN, this pass */
	bool		hazard_served;

	uint64		pages_pinned;	/* for EXPLAIN, summed over passes */
	uint64		pages_kept;

	/* worker: reads the pages the leader holds in place, in its pool */
	bool		copies_from_leader;
	TbLeaderPage *leader_pages;	/* in the shared state */
	bool		stays_out;		/* cannot map the pool for the toast relation */
	bool		hazard_pending; /* pg_tempbuf.debug_hazard: pause at the next row */
	bool		hazard_paused;	/* paused at a row of the page in hand */

	/*
	 * Private toast fetches: the varlena columns the quals use, fetched
	 * before the quals run, and those only the output uses, fetched for rows
	 * that pass.  The scan then runs the quals itself, in place of ExecScan.
	 */
	AttrNumber *qual_attrs;
	int			nqual_attrs;
	AttrNumber *late_attrs;
	int			nlate_attrs;
	ExprState  *qual;
	bool		fetch_toast;	/* participants fetch out-of-line values */
	bool		toast_decided;	/* fetch_toast is set for this execution */
	TbToastReader *toast;		/* this participant's reader, or NULL */
	Datum	   *values;
	bool	   *isnull;

	/*
	 * The page in hand (page_buf, a copy from the leader, or the leader's
	 * own local buffer, pinned) and its visible tuples.
	 */
	char	   *page;
	char	   *page_buf;
	Buffer		pinned;
	char	   *scratch;
	BlockNumber page_block;
	int			nvisible;
	int			next_visible;
	OffsetNumber visible[MaxHeapTuplesPerPage];
	HeapTupleData tuple;
	TbXminVerdict last_xmin;	/* for tb_tuple_visible() */

	/* kept for EXPLAIN */
	TempScanCounters mine;		/* without DSM */
	TempScanCounters *totals;	/* per participant, summed over passes */
	int			ntotals;
} TempScanState;

/* This participant's counts: in the shared state, or its own without one. */
static inline TempScanCounters *
tb_ts_my_counters(TempScanState *ts)
{
	if (ts->shared == NULL)
		return &ts->mine;
	return &ts->shared->counters[IsParallelWorker() ? 1 + ParallelWorkerNumber : 0];
}

/* The bits of the blocks the leader keeps, after the shared state's lists. */
static inline uint64 *
tb_ts_reserved_map(TempScanShared *shared)
{
	return (uint64 *) ((char *) shared + shared->reserved_offset);
}

/* The list of the leader's toast pages, at the end of the shared state. */
static inline TbLeaderPageList *
tb_ts_toast_list(TempScanShared *shared)
{
	return (TbLeaderPageList *) ((char *) shared + shared->toast_list_offset);
}

/* temp_scan_supply.c */
extern int64 tb_ts_write_table(CustomScanState *node);
extern void tb_ts_flush_table(TempScanState *ts);
extern void tb_ts_prepare(TempScanState *ts, TbFlushMode mode);
extern void tb_ts_unpin_page(TempScanState *ts);
extern void tb_ts_reset_pass(TempScanState *ts);
extern void tb_ts_load_page(TempScanState *ts, BlockNumber blkno);
extern Size tb_ts_estimate_shared(TempScanState *ts, ParallelContext *pcxt);
extern void tb_ts_setup_shared(TempScanState *ts, ParallelContext *pcxt,
							   TempScanShared *shared);

/* temp_scan_schedule.c */
extern BlockNumber tb_ts_chunk_size(BlockNumber nblocks, int nparticipants);
extern bool tb_ts_next_block(TempScanState *ts, BlockNumber *blkno);
extern void tb_ts_finish_flush(TempScanState *ts, bool completed);

/* temp_scan_hazard.c */
extern void tb_ts_stall_for_hazard(TbDebugHazard hazard);
extern void tb_ts_pause_in_place(TempScanState *ts);
extern void tb_ts_resume_in_place(TempScanState *ts);
extern void tb_ts_serve_hazard(TempScanState *ts);

/* temp_scan_tuples.c */
extern void tb_ts_find_toast_attrs(TempScanState *ts);
extern void tb_ts_decide_toast(TempScanState *ts);
extern void tb_ts_plan_deform(TempScanState *ts);
extern void tb_ts_store_tuple(TempScanState *ts, TupleTableSlot *slot,
							  HeapTuple tuple);
extern bool tb_ts_qual_passes(TempScanState *ts, TupleTableSlot *slot);
extern bool tb_ts_store_fetched(TempScanState *ts, TupleTableSlot *slot);

#endif							/* TEMP_SCAN_INT_H */
