/*-------------------------------------------------------------------------
 *
 * page_reader.c
 *	  Read a temporary table's pages straight from its file into private
 *	  memory, and decide tuple visibility there without setting hint bits.
 *
 * Parallel workers cannot use the leader's local buffers (they have none,
 * and InitLocalBuffers() refuses to run in a worker), so every participant
 * of a Parallel Temp Seq Scan, the leader included, reads pages through
 * smgr into a private copy after the leader flushed the table's dirty
 * pages.  Nothing is ever written back: no hint bits, no pruning.
 *
 * A page can still be read while some unrelated work in the leader writes
 * it (say, a parallel-restricted function above Gather that reads the same
 * table and sets hint bits).  Such a torn read is caught by the page
 * checksum when the cluster has them, by pg_tempbuf.verify_reread (read
 * twice, compare) when asked to, and else only by the header sanity check.
 * A page that fails is read again; one that keeps failing is an error,
 * never a wrong answer.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/multixact.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "utils/combocid.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "pg_tempbuf.h"

#define TB_READ_ATTEMPTS	10

bool		tb_verify_reread = false;

/*
 * Read block blkno of rel's main fork into page, which must be BLCKSZ
 * bytes; scratch is a second such buffer for the reread check.  Returns the
 * number of rereads it needed.
 */
int
tb_read_page(Relation rel, BlockNumber blkno, char *page, char *scratch)
{
	bool		compare = tb_verify_reread;

	for (int attempt = 0;; attempt++)
	{
		bool		ok;

		smgrread(RelationGetSmgr(rel), MAIN_FORKNUM, blkno, page);
		ok = tb_page_is_verified((Page) page, blkno);
		if (ok && compare)
		{
			smgrread(RelationGetSmgr(rel), MAIN_FORKNUM, blkno, scratch);
			ok = memcmp(page, scratch, BLCKSZ) == 0;
		}
		if (ok)
			return attempt;

		if (attempt + 1 >= TB_READ_ATTEMPTS)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("could not read a consistent copy of block %u of temporary table \"%s\"",
							blkno, RelationGetRelationName(rel)),
					 errdetail("The page failed verification %d times in a row.",
							   TB_READ_ATTEMPTS)));
		/* Give a concurrent write of the same page time to complete. */
		CHECK_FOR_INTERRUPTS();
		pg_usleep(100L * (attempt + 1));
	}
}

/*
 * Is a tuple deleted (or updated away) by a transaction whose effects the
 * snapshot sees?  xmax is not a lock-only marker here.
 */
static bool
deleter_is_visible(HeapTupleHeader tuple, TransactionId xmax,
				   bool xmax_committed_hint, Snapshot snapshot)
{
	if (TransactionIdIsCurrentTransactionId(xmax))
		return HeapTupleHeaderGetCmax(tuple) < snapshot->curcid;
	if (XidInMVCCSnapshot(xmax, snapshot))
		return false;
	/* Not running for the snapshot: committed, or aborted/crashed. */
	return xmax_committed_hint || TransactionIdDidCommit(xmax);
}

/*
 * HeapTupleSatisfiesMVCC() without hint bits: the same decisions, taken
 * from the hints already on the page when present, else from the commit
 * log, and never recorded.  Safe in parallel workers, which share the
 * leader's current transaction ids, combo CIDs and snapshot.
 */
bool
tb_tuple_visible(HeapTupleHeader tuple, Snapshot snapshot)
{
	uint16		infomask = tuple->t_infomask;
	TransactionId xmax;

	Assert(IsMVCCSnapshot(snapshot));

	/* Inserted by a transaction the snapshot sees as committed? */
	if (!HeapTupleHeaderXminCommitted(tuple))
	{
		TransactionId xmin = HeapTupleHeaderGetRawXmin(tuple);

		if (HeapTupleHeaderXminInvalid(tuple))
			return false;

		if (TransactionIdIsCurrentTransactionId(xmin))
		{
			/* Our own insertion: visible if before this scan's command. */
			if (HeapTupleHeaderGetCmin(tuple) >= snapshot->curcid)
				return false;
			if (infomask & HEAP_XMAX_INVALID)
				return true;
			if (HEAP_XMAX_IS_LOCKED_ONLY(infomask))
				return true;
			if (infomask & HEAP_XMAX_IS_MULTI)
			{
				xmax = HeapTupleGetUpdateXid(tuple);
				/* Updating subtransaction must have aborted otherwise. */
				if (!TransactionIdIsCurrentTransactionId(xmax))
					return true;
				return HeapTupleHeaderGetCmax(tuple) >= snapshot->curcid;
			}
			xmax = HeapTupleHeaderGetRawXmax(tuple);
			/* Deleting subtransaction must have aborted otherwise. */
			if (!TransactionIdIsCurrentTransactionId(xmax))
				return true;
			return HeapTupleHeaderGetCmax(tuple) >= snapshot->curcid;
		}
		if (XidInMVCCSnapshot(xmin, snapshot))
			return false;
		if (!TransactionIdDidCommit(xmin))
			return false;		/* aborted, or crashed */
	}
	else if (!HeapTupleHeaderXminFrozen(tuple) &&
			 XidInMVCCSnapshot(HeapTupleHeaderGetRawXmin(tuple), snapshot))
		return false;			/* committed, but after the snapshot */

	/* The insertion is visible; is the deletion? */
	if (infomask & HEAP_XMAX_INVALID)
		return true;
	if (HEAP_XMAX_IS_LOCKED_ONLY(infomask))
		return true;
	if (infomask & HEAP_XMAX_IS_MULTI)
		return !deleter_is_visible(tuple, HeapTupleGetUpdateXid(tuple),
								   false, snapshot);
	return !deleter_is_visible(tuple, HeapTupleHeaderGetRawXmax(tuple),
							   (infomask & HEAP_XMAX_COMMITTED) != 0, snapshot);
}
