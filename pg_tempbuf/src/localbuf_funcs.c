/*-------------------------------------------------------------------------
 *
 * localbuf_funcs.c
 *	  SQL-callable functions of the temp-buffer toolkit: see, flush, read,
 *	  dirty and evict the calling backend's local buffers.
 *
 * Names follow the article "PostgreSQL cost model: estimating the cost of
 * flushing temp buffers to disk" (Andrei Lepikhov, 2026).  Every I/O goes through the buffer
 * manager's own counters, so EXPLAIN (ANALYZE, BUFFERS) around a call shows
 * what it did: "local written" for flushes, "local read" / "local hit" for
 * reads, "local dirtied" for marking pages dirty.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/pg_class.h"
#include "common/pg_prng.h"
#include "executor/instrument.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"

#include "compat.h"
#include "flush_cost.h"
#include "localbuf_access.h"

PG_FUNCTION_INFO_V1(pg_allocated_local_buffers);
PG_FUNCTION_INFO_V1(pg_dirtied_local_buffers);
PG_FUNCTION_INFO_V1(pg_local_buffer_pool_size);
PG_FUNCTION_INFO_V1(pg_flush_local_buffers);
PG_FUNCTION_INFO_V1(pg_read_temp_relation);
PG_FUNCTION_INFO_V1(pg_temp_buffers_dirty);
PG_FUNCTION_INFO_V1(pg_evict_local_buffers);
PG_FUNCTION_INFO_V1(pg_temp_flush_cost);
PG_FUNCTION_INFO_V1(pg_local_buffers);

#define PG_LOCAL_BUFFERS_COLS	9

/*
 * Open relid as a temporary table of this session, or explain why not.
 * Toast tables are accepted: a temp table's toast table is temporary too.
 */
static Relation
open_own_temp_table(Oid relid)
{
	Relation	rel = try_relation_open(relid, AccessShareLock);
	char		relkind;

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));

	relkind = rel->rd_rel->relkind;
	if (relkind != RELKIND_RELATION && relkind != RELKIND_TOASTVALUE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", RelationGetRelationName(rel)),
				 errdetail_relkind_not_supported(relkind)));

	if (rel->rd_rel->relpersistence != RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a temporary table", RelationGetRelationName(rel)),
				 errdetail("Only temporary tables live in local buffers.")));

	if (RELATION_IS_OTHER_TEMP(rel))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot access temporary table \"%s\" of another session",
						RelationGetRelationName(rel)),
				 errdetail("Its pages live in the other session's local buffers.")));

	return rel;
}

Datum
pg_allocated_local_buffers(PG_FUNCTION_ARGS)
{
	TbLocalBufferCounts counts;

	tb_count_local_buffers(NULL, InvalidForkNumber, &counts);
	PG_RETURN_INT32(counts.allocated);
}

Datum
pg_dirtied_local_buffers(PG_FUNCTION_ARGS)
{
	TbLocalBufferCounts counts;

	tb_count_local_buffers(NULL, InvalidForkNumber, &counts);
	PG_RETURN_INT32(counts.dirty);
}

Datum
pg_local_buffer_pool_size(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(NLocBuffer);
}

Datum
pg_flush_local_buffers(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(tb_flush_local_buffers(NULL, InvalidForkNumber));
}

/*
 * Read every main-fork block of a temp table into local buffers, in block
 * order or in a random permutation; returns the blocks read from storage
 * (pages already resident are hits and not counted).
 */
Datum
pg_read_temp_relation(PG_FUNCTION_ARGS)
{
	Relation	rel = open_own_temp_table(PG_GETARG_OID(0));
	bool		randomize = PG_GETARG_BOOL(1);
	BlockNumber nblocks = RelationGetNumberOfBlocksInFork(rel, MAIN_FORKNUM);
	BlockNumber *order = NULL;
	int64		reads_before = pgBufferUsage.local_blks_read;

	if (randomize && nblocks > 1)
	{
		/* Fisher-Yates over the block numbers. */
		order = MemoryContextAllocHuge(CurrentMemoryContext,
									   sizeof(BlockNumber) * (Size) nblocks);
		for (BlockNumber i = 0; i < nblocks; i++)
			order[i] = i;
		for (BlockNumber i = nblocks - 1; i > 0; i--)
		{
			BlockNumber j = (BlockNumber) pg_prng_uint64_range(&pg_global_prng_state, 0, i);
			BlockNumber tmp = order[i];

			order[i] = order[j];
			order[j] = tmp;
		}
	}

	for (BlockNumber i = 0; i < nblocks; i++)
	{
		Buffer		buf;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, order ? order[i] : i,
								 RBM_NORMAL, NULL);
		ReleaseBuffer(buf);
	}

	if (order)
		pfree(order);
	relation_close(rel, AccessShareLock);
	PG_RETURN_INT64(pgBufferUsage.local_blks_read - reads_before);
}

/*
 * Mark every resident main-fork page of a temp table dirty, as if each had
 * been modified; returns how many pages were marked.
 */
Datum
pg_temp_buffers_dirty(PG_FUNCTION_ARGS)
{
	Relation	rel = open_own_temp_table(PG_GETARG_OID(0));
	int			npages;
	TbResidentPage *pages = tb_resident_pages(TbRelationFileId(rel),
											  MAIN_FORKNUM, &npages);

	for (int i = 0; i < npages; i++)
	{
		Buffer		buf;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, pages[i].blkno, RBM_NORMAL, NULL);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		MarkBufferDirty(buf);
		UnlockReleaseBuffer(buf);
	}

	pfree(pages);
	relation_close(rel, AccessShareLock);
	PG_RETURN_INT64(npages);
}

/* Evict one temp table's pages, or every page for a NULL argument. */
Datum
pg_evict_local_buffers(PG_FUNCTION_ARGS)
{
	Relation	rel = NULL;
	int64		dropped;

	if (!PG_ARGISNULL(0))
		rel = open_own_temp_table(PG_GETARG_OID(0));

	dropped = tb_evict_local_buffers(rel);

	if (rel)
		relation_close(rel, AccessShareLock);
	PG_RETURN_INT64(dropped);
}

Datum
pg_temp_flush_cost(PG_FUNCTION_ARGS)
{
	Relation	rel = NULL;
	double		cost;

	if (!PG_ARGISNULL(0))
		rel = open_own_temp_table(PG_GETARG_OID(0));

	cost = tb_flush_cost(rel, NULL);

	if (rel)
		relation_close(rel, AccessShareLock);
	PG_RETURN_FLOAT8(cost);
}

/*
 * One row per local buffer, like pg_buffercache's view of shared buffers.
 * Empty buffers show NULL for everything but their id and pin count.
 */
Datum
pg_local_buffers(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);

	for (int i = 0; i < NLocBuffer; i++)
	{
		BufferDesc *bufHdr = GetLocalBufferDescriptor(i);
		TbBufState	buf_state = TbReadBufState(bufHdr);
		Datum		values[PG_LOCAL_BUFFERS_COLS] = {0};
		bool		nulls[PG_LOCAL_BUFFERS_COLS] = {0};

		values[0] = Int32GetDatum(i + 1);
		values[8] = Int32GetDatum(LocalRefCount[i]);

		if (buf_state & BM_TAG_VALID)
		{
			values[1] = ObjectIdGetDatum(TbTagRelNumber(&bufHdr->tag));
			values[2] = ObjectIdGetDatum(TbTagSpcOid(&bufHdr->tag));
			values[3] = ObjectIdGetDatum(TbTagDbOid(&bufHdr->tag));
			values[4] = Int16GetDatum(TbTagForkNum(&bufHdr->tag));
			values[5] = Int64GetDatum((int64) bufHdr->tag.blockNum);
			values[6] = BoolGetDatum((buf_state & BM_DIRTY) != 0);
			values[7] = Int16GetDatum(BUF_STATE_GET_USAGECOUNT(buf_state));
		}
		else
		{
			for (int col = 1; col <= 7; col++)
				nulls[col] = true;
		}

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	return (Datum) 0;
}
