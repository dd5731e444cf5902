/*-------------------------------------------------------------------------
 *
 * localbuf_access.c
 *	  Walks over this backend's local buffer pool: count, flush, evict,
 *	  and list the resident pages of one relation.
 *
 * Local buffers are private to the backend, so none of this takes locks:
 * the descriptors' state words are only ever changed by this process.  A
 * "scope" is either the whole pool (only == NULL) or one relation file,
 * optionally narrowed to one fork (InvalidForkNumber means every fork).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/rel.h"

#include "pg_tempbuf.h"

static inline bool
in_scope(BufferDesc *bufHdr, const TbRelFileId *only, ForkNumber fork)
{
	if (only == NULL)
		return true;
	if (!TbTagMatchesFileId(&bufHdr->tag, *only))
		return false;
	return fork == InvalidForkNumber || TbTagForkNum(&bufHdr->tag) == fork;
}

void
tb_count_local_buffers(const TbRelFileId *only, ForkNumber fork,
					   TbLocalBufferCounts *counts)
{
	counts->allocated = 0;
	counts->dirty = 0;

	for (int i = 0; i < NLocBuffer; i++)
	{
		BufferDesc *bufHdr = GetLocalBufferDescriptor(i);
		uint32		buf_state = pg_atomic_read_u32(&bufHdr->state);

		if (!(buf_state & BM_VALID) || !in_scope(bufHdr, only, fork))
			continue;
		counts->allocated++;
		if (buf_state & BM_DIRTY)
			counts->dirty++;
	}
}

/*
 * Write every dirty page in scope; returns the number written.  A second
 * call finds nothing to write: that is the article's "dry run", the cost of
 * scanning the pool alone.
 */
int64
tb_flush_local_buffers(const TbRelFileId *only, ForkNumber fork)
{
	int64		written = 0;

	for (int i = 0; i < NLocBuffer; i++)
	{
		BufferDesc *bufHdr = GetLocalBufferDescriptor(i);
		uint32		buf_state = pg_atomic_read_u32(&bufHdr->state);

		if ((buf_state & (BM_VALID | BM_DIRTY)) != (BM_VALID | BM_DIRTY) ||
			!in_scope(bufHdr, only, fork))
			continue;

		CHECK_FOR_INTERRUPTS();
		tb_write_local_buffer(bufHdr);
		written++;
	}
	return written;
}

/*
 * Write the dirty pages of rel (or of every relation, for NULL) and drop
 * them from the pool, so the next access reads them from storage.  Returns
 * the number of pages dropped.
 *
 * The core drop routines raise an internal error on a pinned page, so a
 * pin (an open cursor on the table, say) is reported here first, before
 * anything was written.
 */
int64
tb_evict_local_buffers(Relation rel)
{
	TbRelFileId file;
	const TbRelFileId *only = NULL;
	int64		dropped = 0;

	if (rel != NULL)
	{
		file = TbRelationFileId(rel);
		only = &file;
	}

	for (int i = 0; i < NLocBuffer; i++)
	{
		BufferDesc *bufHdr = GetLocalBufferDescriptor(i);
		uint32		buf_state = pg_atomic_read_u32(&bufHdr->state);

		if (!(buf_state & BM_TAG_VALID) || !in_scope(bufHdr, only, InvalidForkNumber))
			continue;
		if (LocalRefCount[i] != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 rel != NULL ?
					 errmsg("cannot evict local buffers of relation \"%s\"",
							RelationGetRelationName(rel)) :
					 errmsg("cannot evict local buffers"),
					 errdetail("Block %u of relation file %u is pinned by this session.",
							   bufHdr->tag.blockNum,
							   TbTagRelNumber(&bufHdr->tag)),
					 errhint("Close the cursors that read the table, or run this outside the transaction that opened them.")));
		dropped++;
	}

	tb_flush_local_buffers(only, InvalidForkNumber);

	if (only != NULL)
		TbDropAllLocalBuffers(*only);
	else
	{
		/* Drop relation by relation; each call clears all of its pages. */
		for (int i = 0; i < NLocBuffer; i++)
		{
			BufferDesc *bufHdr = GetLocalBufferDescriptor(i);

			if (pg_atomic_read_u32(&bufHdr->state) & BM_TAG_VALID)
				TbDropAllLocalBuffers(TbTagFileId(&bufHdr->tag));
		}
	}
	return dropped;
}

/*
 * Block numbers of the pages of one fork of a relation that are in the
 * pool now, in pool order.  Collected before touching any of them, since
 * reading a page may evict another.
 */
BlockNumber *
tb_resident_blocks(TbRelFileId file, ForkNumber fork, int *nblocks)
{
	BlockNumber *blocks = palloc(sizeof(BlockNumber) * Max(NLocBuffer, 1));
	int			n = 0;

	for (int i = 0; i < NLocBuffer; i++)
	{
		BufferDesc *bufHdr = GetLocalBufferDescriptor(i);
		uint32		buf_state = pg_atomic_read_u32(&bufHdr->state);

		if ((buf_state & BM_VALID) && in_scope(bufHdr, &file, fork))
			blocks[n++] = bufHdr->tag.blockNum;
	}
	*nblocks = n;
	return blocks;
}
