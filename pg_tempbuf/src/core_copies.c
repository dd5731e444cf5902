/*-------------------------------------------------------------------------
 *
 * core_copies.c
 *	  Code derived from PostgreSQL's own, where core keeps the original
 *	  static or ties it to shared state an extension cannot use.
 *
 * Each function names its source and what was changed.  When a supported
 * version changes the original, change the copy here.
 *
 * Pieces derived from core that stay beside the state they walk name their
 * source there: btree_reader.c's descent (from _bt_search(),
 * _bt_moveright() and _bt_binsrch()), heap_rows.c's HOT chain walk
 * (from heap_hot_search_buffer()) and toast_reader.c's chunk assembly
 * (from toast_fetch_datum() and heap_fetch_toast_slice()).  planner.c
 * repeats, in two calls of
 * is_parallel_safe() and one of limit_needed(), the checks of
 * set_rel_consider_parallel() that it redoes for temporary tables.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/multixact.h"
#include "access/transam.h"
#include "access/visibilitymapdefs.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "utils/combocid.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "core_copies.h"

/*
 * Derived from get_parallel_divisor(), src/backend/optimizer/path/
 * costsize.c, PostgreSQL 15 and 17 (identical in both).  Changed: takes the
 * worker count rather than the path, since core's is static.
 *
 * How many participants' worth of work a partial path's rows are divided
 * by: the workers, plus what is left of the leader beside them.
 */
double
tb_parallel_divisor(int parallel_workers)
{
	double		divisor = parallel_workers;

	if (parallel_leader_participation)
	{
		double		leader_contribution = 1.0 - (0.3 * parallel_workers);

		if (leader_contribution > 0)
			divisor += leader_contribution;
	}
	return divisor;
}

/*
 * How many times a scan of rel parameterized by outer_relids is expected
 * to run: the smallest row estimate among those outer relations, 1 for an
 * unparameterized scan.  Derived from get_loop_count() in
 * src/backend/optimizer/path/indxpath.c (PostgreSQL 18), which is static
 * there; same rule.
 */
double
tb_loop_count(PlannerInfo *root, Index cur_relid, Relids outer_relids)
{
	double		result = 0.0;
	int			outer_relid = -1;

	while ((outer_relid = bms_next_member(outer_relids, outer_relid)) >= 0)
	{
		RelOptInfo *outer_rel;

		if (outer_relid == cur_relid || outer_relid >= root->simple_rel_array_size)
			continue;
		outer_rel = root->simple_rel_array[outer_relid];
		if (outer_rel == NULL || IS_DUMMY_REL(outer_rel) || outer_rel->rows <= 0)
			continue;
		if (result == 0.0 || outer_rel->rows < result)
			result = outer_rel->rows;
	}
	return result > 1.0 ? result : 1.0;
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

/* Is xmin the inserter *last_xmin remembers: not ours, seen or not? */
static inline bool
verdict_known(const TbXminVerdict *last_xmin, TransactionId xmin)
{
	return TransactionIdIsNormal(xmin) && xmin == last_xmin->xid;
}

/*
 * Is xmin, a transaction other than ours, committed and seen by the
 * snapshot?  The answer holds for the whole scan: the snapshot does not
 * change, nor does a finished transaction's fate.  Remembered for the
 * next row with the same xmin.
 */
static bool
inserter_is_visible(TransactionId xmin, bool committed_hint, Snapshot snapshot,
					TbXminVerdict *last_xmin)
{
	bool		visible;

	if (verdict_known(last_xmin, xmin))
		return last_xmin->visible;
	visible = !XidInMVCCSnapshot(xmin, snapshot) &&
		(committed_hint || TransactionIdDidCommit(xmin));
	if (TransactionIdIsNormal(xmin))
	{
		last_xmin->xid = xmin;
		last_xmin->visible = visible;
	}
	return visible;
}

/*
 * Derived from HeapTupleSatisfiesMVCC(), src/backend/access/heap/
 * heapam_visibility.c, PostgreSQL 15 and 17 (identical in both).
 * Changed: never sets hint bits (core's calls SetHintBits(), which dirties
 * the buffer; we look at a private page copy that may not change and that
 * other participants read too), so the hints already on the page are read
 * when present and the commit log asked otherwise; the verdict on the last
 * inserting transaction other than ours is remembered in *last_xmin
 * (inserter_is_visible()), in place of the hint bits a serial scan would
 * have set; the HEAP_MOVED_* cases of pre-9.0 VACUUM FULL are left out (a
 * temporary table never has them); the deletion half is shared in
 * deleter_is_visible().  Safe in parallel workers, which share the
 * leader's current transaction ids, combo CIDs and snapshot.
 */
bool
tb_tuple_visible(HeapTupleHeader tuple, Snapshot snapshot,
				 TbXminVerdict *last_xmin)
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

		/* An inserter known from an earlier row is not ours. */
		if (!verdict_known(last_xmin, xmin) &&
			TransactionIdIsCurrentTransactionId(xmin))
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
		else if (!inserter_is_visible(xmin, false, snapshot, last_xmin))
			return false;		/* running for the snapshot, aborted, or crashed */
	}
	else if (!HeapTupleHeaderXminFrozen(tuple) &&
			 !inserter_is_visible(HeapTupleHeaderGetRawXmin(tuple), true,
								  snapshot, last_xmin))
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


/*
 * Derived from the local buffer write of FlushLocalBuffer(), src/backend/
 * storage/buffer/localbuf.c, PostgreSQL 18 (GetLocalVictimBuffer() in 16
 * and 17, LocalBufferAlloc() in 15: the same write with the bookkeeping
 * of each version, in compat.h).  Changed: takes n dirty, valid buffers
 * holding consecutive blocks of one fork of one relation, first block
 * first, and writes them with one vectored write where the server has one
 * (17+); core writes one buffer, when it evicts it.  Marks them clean and
 * counts them in pgBufferUsage.local_blks_written and pg_stat_io as core
 * does.
 */
void
tb_write_local_run(BufferDesc **bufs, int n)
{
	SMgrRelation reln = smgropen(TbTagFileId(&bufs[0]->tag), TbMyTempBackend);
	const void *pages[TB_MAX_WRITE_RUN];
	instr_time	io_start;

	Assert(n > 0 && n <= TB_MAX_WRITE_RUN);
	for (int i = 0; i < n; i++)
	{
		pages[i] = LocalBufferBlockPointers[-bufs[i]->buf_id - 2];
		TbBeginLocalWrite(bufs[i]);
		TbPageSetChecksumInplace((Page) pages[i], bufs[i]->tag.blockNum);
	}

	TbIoStart(io_start);
	TbSmgrWriteRun(reln, TbTagForkNum(&bufs[0]->tag), bufs[0]->tag.blockNum,
				   pages, n);
	TbCountTempWrites(io_start, n);

	for (int i = 0; i < n; i++)
		TbEndLocalWrite(bufs[i]);
	pgBufferUsage.local_blks_written += n;
}

/*
 * Derived from the addressing macros and visibilitymap_get_status() in
 * src/backend/access/heap/visibilitymap.c (PostgreSQL 18, the same in 15),
 * where they are private.  Changed: reads a map page the caller has (a
 * private copy), not a buffer.
 *
 * The map block holding heap_block's bits, and whether they say all
 * visible.
 */
#define TB_VM_MAPSIZE (BLCKSZ - MAXALIGN(SizeOfPageHeaderData))
#define TB_VM_HEAPBLOCKS_PER_BYTE (BITS_PER_BYTE / BITS_PER_HEAPBLOCK)
#define TB_VM_HEAPBLOCKS_PER_PAGE (TB_VM_MAPSIZE * TB_VM_HEAPBLOCKS_PER_BYTE)

BlockNumber
tb_vm_block(BlockNumber heap_block)
{
	return heap_block / TB_VM_HEAPBLOCKS_PER_PAGE;
}

bool
tb_vm_all_visible(Page vm_page, BlockNumber heap_block)
{
	uint32		byte = (heap_block % TB_VM_HEAPBLOCKS_PER_PAGE) / TB_VM_HEAPBLOCKS_PER_BYTE;
	uint8		shift = (heap_block % TB_VM_HEAPBLOCKS_PER_BYTE) * BITS_PER_HEAPBLOCK;
	uint8	   *map = (uint8 *) PageGetContents(vm_page);

	return ((map[byte] >> shift) & VISIBILITYMAP_ALL_VISIBLE) != 0;
}

/*
 * Derived from heap_deform_tuple(), src/backend/access/common/heaptuple.c
 * (PostgreSQL 15): the same walk, stopped after the first natts columns,
 * which is what a heap tuple slot's slot_getsomeattrs() does.  Only
 * PostgreSQL 15 needs it: there a custom scan's slot is virtual, and core's
 * function deforms every column.  Later versions give the scan a heap
 * tuple slot, and call core's.
 */
void
tb_heap_deform_prefix(HeapTuple tuple, TupleDesc desc, int natts,
					  Datum *values, bool *isnull)
{
#if PG_VERSION_NUM < 160000
	HeapTupleHeader tup = tuple->t_data;
	bool		hasnulls = HeapTupleHasNulls(tuple);
	int			present = Min(HeapTupleHeaderGetNatts(tup), natts);
	char	   *tp = (char *) tup + tup->t_hoff;
	bits8	   *bp = tup->t_bits;
	uint32		off = 0;
	bool		slow = false;	/* attcacheoff no longer usable */
	int			attnum;

	Assert(natts <= desc->natts);
	for (attnum = 0; attnum < present; attnum++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, attnum);

		if (hasnulls && att_isnull(attnum, bp))
		{
			values[attnum] = (Datum) 0;
			isnull[attnum] = true;
			slow = true;
			continue;
		}
		isnull[attnum] = false;
		if (!slow && att->attcacheoff >= 0)
			off = att->attcacheoff;
		else if (att->attlen == -1)
		{
			if (!slow && off == att_align_nominal(off, att->attalign))
				att->attcacheoff = off;
			else
			{
				off = att_align_pointer(off, att->attalign, -1, tp + off);
				slow = true;
			}
		}
		else
		{
			off = att_align_nominal(off, att->attalign);
			if (!slow)
				att->attcacheoff = off;
		}
		values[attnum] = fetchatt(att, tp + off);
		off = att_addlength_pointer(off, att->attlen, tp + off);
		if (att->attlen <= 0)
			slow = true;
	}
	/* columns the tuple predates: their missing values, or NULL */
	for (; attnum < natts; attnum++)
		values[attnum] = getmissingattr(desc, attnum + 1, &isnull[attnum]);
#else
	heap_deform_tuple(tuple, desc, values, isnull);
#endif
}
