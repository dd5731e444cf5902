/*-------------------------------------------------------------------------
 *
 * page_reader.c
 *	  Read a temporary table's pages straight from its file into private
 *	  memory; core_copies.c decides tuple visibility there without setting
 *	  hint bits.
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

#include "miscadmin.h"
#include "utils/rel.h"

#include "pg_tempbuf.h"

#define TB_READ_ATTEMPTS	10

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
