/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The one place where pg_tempbuf copes with PostgreSQL version
 *	  differences, so that #if PG_VERSION_NUM stays out of the code.
 *
 * Supported: PostgreSQL 15 (RelFileNode, BackendId, hand-written local
 * write) through 19 (64-bit buffer state, build_simple_rel_hook, an
 * ExplainState for the planner), each tested by make test-N.  19's
 * page-level changes (pd_prune_xid set by inserts, pages set all-visible by
 * plain reads) are the page guard's business (page_guard.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_TEMPBUF_COMPAT_H
#define PG_TEMPBUF_COMPAT_H

#include "executor/instrument.h"
#include "pgstat.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "storage/smgr.h"
#include "utils/rel.h"

#if PG_VERSION_NUM < 150000
#error "pg_tempbuf requires PostgreSQL 15 or later"
#endif

/* The varlena and TOAST pointer macros left postgres.h in 16. */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * Relation file identity: RelFileNode until 15, RelFileLocator from 16.
 */
#if PG_VERSION_NUM >= 160000
typedef RelFileLocator TbRelFileId;
#define TbRelationFileId(rel)		((rel)->rd_locator)
#define TbTagFileId(tag)			BufTagGetRelFileLocator(tag)
#define TbTagMatchesFileId(tag, id) BufTagMatchesRelFileLocator((tag), &(id))
#define TbTagForkNum(tag)			BufTagGetForkNum(tag)
#define TbTagRelNumber(tag)			((tag)->relNumber)
#define TbTagSpcOid(tag)			((tag)->spcOid)
#define TbTagDbOid(tag)				((tag)->dbOid)
#define TbDropAllLocalBuffers(id)	DropRelationAllLocalBuffers(id)
#else
typedef RelFileNode TbRelFileId;
#define TbRelationFileId(rel)		((rel)->rd_node)
#define TbTagFileId(tag)			((tag)->rnode)
#define TbTagMatchesFileId(tag, id) RelFileNodeEquals((tag)->rnode, (id))
#define TbTagForkNum(tag)			((tag)->forkNum)
#define TbTagRelNumber(tag)			((tag)->rnode.relNode)
#define TbTagSpcOid(tag)			((tag)->rnode.spcNode)
#define TbTagDbOid(tag)				((tag)->rnode.dbNode)
#define TbDropAllLocalBuffers(id)	DropRelFileNodeAllLocalBuffers(id)
#endif

/*
 * A parallel worker opening a local buffer pool of its own
 * (tb_open_worker_local_buffers): the file identity inside an smgr handle,
 * and dropping the buffers of one fork from a block on.
 */
#if PG_VERSION_NUM >= 190000
#define TbSmgrFileId(smgr)			((smgr)->smgr_rlocator.locator)
static inline void
TbDropLocalBuffers(RelFileLocator id, ForkNumber fork, BlockNumber first)
{
	DropRelationLocalBuffers(id, &fork, 1, &first);
}
#elif PG_VERSION_NUM >= 160000
#define TbSmgrFileId(smgr)			((smgr)->smgr_rlocator.locator)
#define TbDropLocalBuffers(id, fork, first) DropRelationLocalBuffers((id), (fork), (first))
#else
#define TbSmgrFileId(smgr)			((smgr)->smgr_rnode.node)
#define TbDropLocalBuffers(id, fork, first) DropRelFileNodeLocalBuffers((id), (fork), (first))
#endif

/*
 * A buffer descriptor's state word (flags, usage and pin counts): 64 bits
 * from 19, and the BM_* flags with it.  Read from a const descriptor too.
 */
#if PG_VERSION_NUM >= 190000
typedef uint64 TbBufState;

static inline TbBufState
TbReadBufState(const BufferDesc *desc)
{
	return pg_atomic_read_u64(unconstify(pg_atomic_uint64 *, &desc->state));
}
#else
typedef uint32 TbBufState;

static inline TbBufState
TbReadBufState(const BufferDesc *desc)
{
	return pg_atomic_read_u32(unconstify(pg_atomic_uint32 *, &desc->state));
}
#endif

/*
 * Is an I/O of this local buffer in flight?  From 18 a local buffer's I/O
 * is an AIO handle the descriptor refers to (io_wref), and BM_IO_IN_PROGRESS
 * is no longer set for local buffers; before, the flag.
 */
#if PG_VERSION_NUM >= 180000
#include "storage/aio.h"
#define TbLocalBufferIoInFlight(desc) pgaio_wref_valid(&(desc)->io_wref)
#else
#define TbLocalBufferIoInFlight(desc) ((TbReadBufState(desc) & BM_IO_IN_PROGRESS) != 0)
#endif

/*
 * A participant joining a parallel block scan on its own (build_scan.c):
 * from 19 the scan's block range is given, as heap_setscanlimits() set it.
 */
#if PG_VERSION_NUM >= 190000
#define TbParallelScanStartblockInit(rel, work, pbscan, hscan) \
	table_block_parallelscan_startblock_init((rel), (work), (pbscan), \
											 (hscan)->rs_startblock, (hscan)->rs_numblocks)
#else
#define TbParallelScanStartblockInit(rel, work, pbscan, hscan) \
	table_block_parallelscan_startblock_init((rel), (work), (pbscan))
#endif

/* The backend identity smgr uses for temporary relations. */
#if PG_VERSION_NUM >= 170000
#define TbMyTempBackend				MyProcNumber
#else
#define TbMyTempBackend				MyBackendId
#endif

/*
 * Writing local buffers (core_copies.c, tb_write_local_run): the most
 * pages one write takes (md.c's iovec batch), and what changed around it.
 * From 17 a run of blocks goes out in one vectored write (smgrwritev); 18
 * brackets a local write with Start/TerminateLocalBufferIO under a pin,
 * before that the writer clears the dirty bits itself; pg_stat_io counts
 * it from 16, with its bytes from 18.
 */
#define TB_MAX_WRITE_RUN	32

#if PG_VERSION_NUM >= 170000
#define TbSmgrWriteRun(reln, fork, blkno, pages, n) \
	smgrwritev((reln), (fork), (blkno), (pages), (n), false)
#else
#define TbSmgrWriteRun(reln, fork, blkno, pages, n) \
	do { \
		for (int tb_i_ = 0; tb_i_ < (n); tb_i_++) \
			smgrwrite((reln), (fork), (blkno) + tb_i_, \
					  unconstify(void *, (pages)[tb_i_]), false); \
	} while (0)
#endif

/* 19's StartLocalBufferIO() tells "ready", "already done" or "in progress". */
#if PG_VERSION_NUM >= 190000
#define TbStartLocalWriteIO(buf) \
	(StartLocalBufferIO((buf), false, true, NULL) == BUFFER_IO_READY_FOR_IO)
#elif PG_VERSION_NUM >= 180000
#define TbStartLocalWriteIO(buf)	StartLocalBufferIO((buf), false, false)
#endif

#if PG_VERSION_NUM >= 180000
#define TbBeginLocalWrite(buf) \
	do { \
		ResourceOwnerEnlarge(CurrentResourceOwner); \
		PinLocalBuffer((buf), false); \
		if (!TbStartLocalWriteIO(buf)) \
			elog(ERROR, "failed to start write IO on local buffer"); \
	} while (0)
#define TbEndLocalWrite(buf) \
	do { \
		TerminateLocalBufferIO((buf), true, 0, false); \
		UnpinLocalBuffer(BufferDescriptorGetBuffer(buf)); \
	} while (0)
#else
#define TbBeginLocalWrite(buf)		((void) 0)
#define TbEndLocalWrite(buf) \
	pg_atomic_unlocked_write_u32(&(buf)->state, \
								 pg_atomic_read_u32(&(buf)->state) & \
								 ~(BM_DIRTY | BM_JUST_DIRTIED))
#endif

/* A page's checksum, set in place before it is written: renamed in 19. */
#if PG_VERSION_NUM >= 190000
#define TbPageSetChecksumInplace(page, blkno)	PageSetChecksum((page), (blkno))
#else
#define TbPageSetChecksumInplace(page, blkno)	PageSetChecksumInplace((page), (blkno))
#endif

#if PG_VERSION_NUM >= 180000
#define TbIoStart(start)	((start) = pgstat_prepare_io_time(track_io_timing))
#define TbCountTempWrites(start, n) \
	pgstat_count_io_op_time(IOOBJECT_TEMP_RELATION, IOCONTEXT_NORMAL, \
							IOOP_WRITE, (start), (n), (uint64) (n) * BLCKSZ)
#elif PG_VERSION_NUM >= 170000
#define TbIoStart(start)	((start) = pgstat_prepare_io_time(track_io_timing))
#define TbCountTempWrites(start, n) \
	pgstat_count_io_op_time(IOOBJECT_TEMP_RELATION, IOCONTEXT_NORMAL, \
							IOOP_WRITE, (start), (n))
#elif PG_VERSION_NUM >= 160000
#define TbIoStart(start)	((start) = pgstat_prepare_io_time())
#define TbCountTempWrites(start, n) \
	pgstat_count_io_op_time(IOOBJECT_TEMP_RELATION, IOCONTEXT_NORMAL, \
							IOOP_WRITE, (start), (n))
#else
#define TbIoStart(start)	INSTR_TIME_SET_ZERO(start)
#define TbCountTempWrites(start, n) ((void) (start))
#endif

/*
 * Pinning a local buffer found by its descriptor, without the lookup that
 * ReadBuffer makes, for a set of pins that is one resource of its own
 * (page_guard.c): a pin that no resource owner tracks, let go without the
 * owner.  The pin counts in the descriptor's state from 16 on, and the
 * resource owner API changed in 17, which also lets an extension define a
 * kind of resource (TB_RESOURCE_KINDS).  TbReserveBufferPin() makes room
 * for one pin in the resource owner, as a caller of LocalBufferAlloc() must.
 */
#if PG_VERSION_NUM >= 170000
#define TB_RESOURCE_KINDS 1
#define TbReserveBufferPin()		ResourceOwnerEnlarge(CurrentResourceOwner)
/* Taken as core takes one and forgotten at once: the owner finds its newest entry first. */
static inline Buffer
TbPinLocalBufferUntracked(BufferDesc *desc)
{
	Buffer		buffer = BufferDescriptorGetBuffer(desc);

	ResourceOwnerEnlarge(CurrentResourceOwner);
	PinLocalBuffer(desc, false);
	ResourceOwnerForgetBuffer(CurrentResourceOwner, buffer);
	return buffer;
}
#define TbUnpinLocalBufferUntracked(buffer)	UnpinLocalBufferNoOwner(buffer)
#elif PG_VERSION_NUM >= 160000
#include "utils/resowner_private.h"
#define TbReserveBufferPin()		ResourceOwnerEnlargeBuffers(CurrentResourceOwner)
static inline Buffer
TbPinLocalBufferUntracked(BufferDesc *desc)
{
	Buffer		buffer = BufferDescriptorGetBuffer(desc);

	ResourceOwnerEnlargeBuffers(CurrentResourceOwner);
	PinLocalBuffer(desc, false);
	ResourceOwnerForgetBuffer(CurrentResourceOwner, buffer);
	return buffer;
}
/* 16 lets a local pin go only through the owner: it remembers it for that. */
static inline void
TbUnpinLocalBufferUntracked(Buffer buffer)
{
	ResourceOwnerEnlargeBuffers(CurrentResourceOwner);
	ResourceOwnerRememberBuffer(CurrentResourceOwner, buffer);
	UnpinLocalBuffer(buffer);
}
#else
#include "utils/resowner_private.h"
#define TbReserveBufferPin()		ResourceOwnerEnlargeBuffers(CurrentResourceOwner)
/* 15 counts a local pin in LocalRefCount alone. */
static inline Buffer
TbPinLocalBufferUntracked(BufferDesc *desc)
{
	Buffer		buffer = BufferDescriptorGetBuffer(desc);

	LocalRefCount[-buffer - 1]++;
	return buffer;
}
#define TbUnpinLocalBufferUntracked(buffer)	(LocalRefCount[-(buffer) - 1]--)
#endif

/*
 * ExecutorRun lost its execute_once argument in 18.
 */
#if PG_VERSION_NUM >= 180000
#define TB_EXECUTOR_RUN_PARAMS	QueryDesc *queryDesc, ScanDirection direction, uint64 count
#define TB_EXECUTOR_RUN_ARGS	queryDesc, direction, count
#else
#define TB_EXECUTOR_RUN_PARAMS	QueryDesc *queryDesc, ScanDirection direction, uint64 count, bool execute_once
#define TB_EXECUTOR_RUN_ARGS	queryDesc, direction, count, execute_once
#endif

/*
 * Header sanity plus checksum (when the cluster has checksums) of a page
 * read into private memory; silent, since a failure is retried.
 */
#if PG_VERSION_NUM >= 180000
#define tb_page_is_verified(page, blkno)	PageIsVerified((page), (blkno), 0, NULL)
#else
#define tb_page_is_verified(page, blkno)	PageIsVerifiedExtended((page), (blkno), 0)
#endif

/*
 * Custom scans choose their scan slot type from 16 on; before that the
 * slot is virtual and tuples must be deformed into it.
 */
#if PG_VERSION_NUM >= 160000
#define TbSetScanSlotOps(css, ops)	((css)->slotOps = (ops))
#else
#define TbSetScanSlotOps(css, ops)	((void) 0)
#endif

/*
 * Disabling a path (enable_seqscan = off): a count of disabled nodes from
 * 18, a huge startup cost before.
 */
#if PG_VERSION_NUM >= 180000
#define TbCopyDisabledNodes(dst, src) ((dst)->disabled_nodes = (src)->disabled_nodes)
#else
#define TbCopyDisabledNodes(dst, src) ((void) 0)
#endif

#if PG_VERSION_NUM >= 180000
#define TbDisablePath(path)			((path)->disabled_nodes = 1)
#define TbPathDisabled(path)		((path)->disabled_nodes > 0)
#else
#define TbDisablePath(path)			((path)->startup_cost += disable_cost, \
									 (path)->total_cost += disable_cost)
#define TbPathDisabled(path)		((path)->startup_cost >= disable_cost)
#endif

/*
 * Is every plan that can be put under a Gather put there (the regression
 * suites' setting)?  debug_parallel_query from 16, force_parallel_mode
 * before.
 */
#include "optimizer/optimizer.h"
#if PG_VERSION_NUM >= 160000
#define TbParallelForced()			(debug_parallel_query != DEBUG_PARALLEL_OFF)
#else
#define TbParallelForced()			(force_parallel_mode != FORCE_PARALLEL_OFF)
#endif

/* EXPLAIN's property functions moved to their own header in 18. */
#if PG_VERSION_NUM >= 180000
#define TB_EXPLAIN_FORMAT_HEADER "commands/explain_format.h"
#else
#define TB_EXPLAIN_FORMAT_HEADER "commands/explain.h"
#endif

/*
 * Iterating a TIDBitmap privately: 18 renamed the iterator, fills a result
 * the caller owns and hands out a page's offsets on request; before, the
 * iterator returned its own result holding them, ntuples -1 for a lossy
 * page.  TbBitmapNextPage() gives a page's block, its offsets (noffsets -1
 * when lossy: every tuple of the page) and whether rows need a recheck.
 */
#include "access/htup_details.h"
#include "nodes/tidbitmap.h"

#if PG_VERSION_NUM >= 180000
typedef TBMPrivateIterator TbBitmapIterator;
#define TbBitmapBeginIterate(tbm)	tbm_begin_private_iterate(tbm)

static inline bool
TbBitmapPageOf(bool found, TBMIterateResult *result, BlockNumber *blkno,
			   OffsetNumber *offsets, int *noffsets, bool *recheck)
{
	if (!found)
		return false;
	*blkno = result->blockno;
	*recheck = result->recheck;
	*noffsets = result->lossy ? -1 :
		tbm_extract_page_tuple(result, offsets, MaxHeapTuplesPerPage);
	return true;
}

static inline bool
TbBitmapNextPage(TbBitmapIterator *iterator, BlockNumber *blkno,
				 OffsetNumber *offsets, int *noffsets, bool *recheck)
{
	TBMIterateResult result;

	return TbBitmapPageOf(tbm_private_iterate(iterator, &result), &result,
						  blkno, offsets, noffsets, recheck);
}

/* The same over an iterator shared by a parallel query's participants. */
static inline bool
TbBitmapSharedNextPage(TBMSharedIterator *iterator, BlockNumber *blkno,
					   OffsetNumber *offsets, int *noffsets, bool *recheck)
{
	TBMIterateResult result;

	return TbBitmapPageOf(tbm_shared_iterate(iterator, &result), &result,
						  blkno, offsets, noffsets, recheck);
}
#else
typedef TBMIterator TbBitmapIterator;
#define TbBitmapBeginIterate(tbm)	tbm_begin_iterate(tbm)

static inline bool
TbBitmapPageOf(TBMIterateResult *result, BlockNumber *blkno,
			   OffsetNumber *offsets, int *noffsets, bool *recheck)
{
	if (result == NULL)
		return false;
	*blkno = result->blockno;
	*recheck = result->recheck;
	*noffsets = result->ntuples;
	if (result->ntuples > 0)
		memcpy(offsets, result->offsets, result->ntuples * sizeof(OffsetNumber));
	return true;
}

#define TbBitmapNextPage(iterator, blkno, offsets, noffsets, recheck) \
	TbBitmapPageOf(tbm_iterate(iterator), blkno, offsets, noffsets, recheck)
/* The same over an iterator shared by a parallel query's participants. */
#define TbBitmapSharedNextPage(iterator, blkno, offsets, noffsets, recheck) \
	TbBitmapPageOf(tbm_shared_iterate(iterator), blkno, offsets, noffsets, recheck)
#endif

/*
 * planner_hook and standard_planner() take the EXPLAIN state of an
 * EXPLAIN being planned from 19 (NULL otherwise).
 */
#include "optimizer/planner.h"
#if PG_VERSION_NUM >= 190000
#define TB_PLANNER_PARAMS	Query *parse, const char *query_string, int cursorOptions, \
	ParamListInfo boundParams, ExplainState *es
#define TB_PLANNER_ARGS		parse, query_string, cursorOptions, boundParams, es
#else
#define TB_PLANNER_PARAMS	Query *parse, const char *query_string, int cursorOptions, \
	ParamListInfo boundParams
#define TB_PLANNER_ARGS		parse, query_string, cursorOptions, boundParams
#endif

/*
 * A hook that sees each base relation right after get_relation_info()
 * read it: get_relation_info_hook until 18; 19 removed it and calls
 * build_simple_rel_hook just after get_relation_info() instead (for every
 * kind of range table entry: only a plain relation's is passed on).
 * TB_RELATION_INFO_HOOK(name, prev, fn) defines name, a hook of the
 * server's kind that calls prev (the hook it replaced), then
 * fn(root, relid, inhparent, rel).
 */
#include "optimizer/pathnode.h"
#include "optimizer/plancat.h"
#if PG_VERSION_NUM >= 190000
typedef build_simple_rel_hook_type TbRelationInfoHookType;
#define TbRelationInfoHook			build_simple_rel_hook
#define TB_RELATION_INFO_HOOK(name, prev, fn) \
	static void \
	name(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte) \
	{ \
		if (prev) \
			prev(root, rel, rte); \
		if (rte->rtekind == RTE_RELATION) \
			fn(root, rte->relid, rte->inh, rel); \
	}
#else
typedef get_relation_info_hook_type TbRelationInfoHookType;
#define TbRelationInfoHook			get_relation_info_hook
#define TB_RELATION_INFO_HOOK(name, prev, fn) \
	static void \
	name(PlannerInfo *root, Oid relid, bool inhparent, RelOptInfo *rel) \
	{ \
		if (prev) \
			prev(root, relid, inhparent, rel); \
		fn(root, relid, inhparent, rel); \
	}
#endif

/*
 * The unique-ified path of a rel that set_cheapest() resets, cached in the
 * rel until 18; 19 keeps it in a RelOptInfo of its own (rel->unique_rel),
 * which set_cheapest() on rel leaves alone: nothing to save.
 */
#if PG_VERSION_NUM >= 190000
#define TbGetCheapestUniquePath(rel)		((Path *) NULL)
#define TbSetCheapestUniquePath(rel, path)	((void) (path))
#else
#define TbGetCheapestUniquePath(rel)		((rel)->cheapest_unique_path)
#define TbSetCheapestUniquePath(rel, path)	((rel)->cheapest_unique_path = (path))
#endif

/*
 * On-access pruning of a heap page, as a read would do it: 19 also takes
 * the visibility map page (pinned on demand, released here) and whether
 * the statement only reads the table (which would let it set the page
 * all-visible; false: prune only, as before 19).
 */
#include "access/heapam.h"
#if PG_VERSION_NUM >= 190000
static inline void
TbPruneHeapPage(Relation rel, Buffer buffer)
{
	Buffer		vmbuffer = InvalidBuffer;

	heap_page_prune_opt(rel, buffer, &vmbuffer, false);
	if (BufferIsValid(vmbuffer))
		ReleaseBuffer(vmbuffer);
}
#else
#define TbPruneHeapPage(rel, buffer)	heap_page_prune_opt((rel), (buffer))
#endif

/* A tuple table slot: 19 takes flags (TTS_FLAG_*) for it, none here. */
#include "executor/tuptable.h"
#if PG_VERSION_NUM >= 190000
#define TbAllocTableSlot(table, desc, ops)	ExecAllocTableSlot((table), (desc), (ops), 0)
#else
#define TbAllocTableSlot(table, desc, ops)	ExecAllocTableSlot((table), (desc), (ops))
#endif

#endif							/* PG_TEMPBUF_COMPAT_H */
