/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The one place where pg_tempbuf copes with PostgreSQL version
 *	  differences, so that #if PG_VERSION_NUM stays out of the code.
 *
 * Supported: PostgreSQL 15 (RelFileNode, BackendId, hand-written local
 * write) through 18 (RelFileLocator, ProcNumber, FlushLocalBuffer).
 * Tested on 15, 17 and 18; 16 takes the same branches but was not tried.
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

/* The backend identity smgr uses for temporary relations. */
#if PG_VERSION_NUM >= 170000
#define TbMyTempBackend				MyProcNumber
#else
#define TbMyTempBackend				MyBackendId
#endif

/*
 * Write one dirty, valid local buffer to its relation file and mark it
 * clean, counting it in pgBufferUsage.local_blks_written (and, from 16,
 * in pg_stat_io) exactly as the local buffer manager does when it evicts.
 */
static inline void
tb_write_local_buffer(BufferDesc *bufHdr)
{
#if PG_VERSION_NUM >= 180000
	Buffer		buffer = BufferDescriptorGetBuffer(bufHdr);

	/* FlushLocalBuffer() wants the buffer pinned by its caller. */
	ResourceOwnerEnlarge(CurrentResourceOwner);
	PinLocalBuffer(bufHdr, false);
	FlushLocalBuffer(bufHdr, NULL);
	UnpinLocalBuffer(buffer);
#else
	/* Mirrors the write in LocalBufferAlloc()/GetLocalVictimBuffer(). */
	int			bufid = -bufHdr->buf_id - 2;
	Page		page = (Page) LocalBufferBlockPointers[bufid];
	SMgrRelation reln = smgropen(TbTagFileId(&bufHdr->tag), TbMyTempBackend);
	uint32		buf_state;
#if PG_VERSION_NUM >= 170000
	instr_time	io_start = pgstat_prepare_io_time(track_io_timing);
#elif PG_VERSION_NUM >= 160000
	instr_time	io_start = pgstat_prepare_io_time();
#endif

	PageSetChecksumInplace(page, bufHdr->tag.blockNum);
	smgrwrite(reln, TbTagForkNum(&bufHdr->tag), bufHdr->tag.blockNum,
			  page, false);
#if PG_VERSION_NUM >= 160000
	pgstat_count_io_op_time(IOOBJECT_TEMP_RELATION, IOCONTEXT_NORMAL,
							IOOP_WRITE, io_start, 1);
#endif

	buf_state = pg_atomic_read_u32(&bufHdr->state);
	buf_state &= ~(BM_DIRTY | BM_JUST_DIRTIED);
	pg_atomic_unlocked_write_u32(&bufHdr->state, buf_state);

	pgBufferUsage.local_blks_written++;
#endif
}

/*
 * Header sanity plus checksum (when the cluster has checksums) of a page
 * read into private memory; silent, since a failure is retried.
 */
static inline bool
tb_page_is_verified(Page page, BlockNumber blkno)
{
#if PG_VERSION_NUM >= 180000
	return PageIsVerified(page, blkno, 0, NULL);
#else
	return PageIsVerifiedExtended(page, blkno, 0);
#endif
}

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
#define TbDisablePath(path)			((path)->disabled_nodes = 1)
#else
#define TbDisablePath(path)			((path)->startup_cost += disable_cost, \
									 (path)->total_cost += disable_cost)
#endif

/* EXPLAIN's property functions moved to their own header in 18. */
#if PG_VERSION_NUM >= 180000
#define TB_EXPLAIN_FORMAT_HEADER "commands/explain_format.h"
#else
#define TB_EXPLAIN_FORMAT_HEADER "commands/explain.h"
#endif

#endif							/* PG_TEMPBUF_COMPAT_H */
