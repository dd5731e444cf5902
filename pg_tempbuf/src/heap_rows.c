/*-------------------------------------------------------------------------
 *
 * heap_rows.c
 *	  Heap rows read through private pages, for the Temp Index Scan and the
 *	  Temp Bitmap Heap Scan: HOT chains followed on the page copy, rows
 *	  stored in the scan slot with their out-of-line values fetched by
 *	  toast_reader.c, and the conditions both nodes show in EXPLAIN.
 *
 * The pages come from the page source (page_source.c); nothing here reads
 * a page itself or sets a hint bit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/sysattr.h"
#include "executor/executor.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "compat.h"
#include "core_copies.h"
#include "heap_rows.h"
#include "page_source.h"
#include "toast_reader.h"
#include TB_EXPLAIN_FORMAT_HEADER

static void plan_deform(TbHeapRows *rows, ScanState *ss);

/*
 * Heap rows read through private pages: shared by Temp Index Scan and
 * Temp Bitmap Heap Scan.  Values for the scan slot: natts of the table;
 * on PostgreSQL 15 (a virtual slot) a heap tuple slot that deforms rows,
 * when the node stores heap rows at all (stores_rows).
 */
void
tb_heap_rows_init(TbHeapRows *rows, ScanState *ss, const char *node_name,
				  bool stores_rows)
{
	int			natts = RelationGetDescr(ss->ss_currentRelation)->natts;

	rows->node_name = node_name;
	if (stores_rows && !TTS_IS_HEAPTUPLE(ss->ss_ScanTupleSlot))
		plan_deform(rows, ss);
	rows->values = palloc(sizeof(Datum) * natts);
	rows->isnull = palloc(sizeof(bool) * natts);
	rows->cxt = CurrentMemoryContext;
}

void
tb_heap_rows_end(TbHeapRows *rows)
{
	if (rows->toast)
		tb_toast_reader_close(rows->toast);
	rows->toast = NULL;
}

/* The tuple data (on the page, or copied out of it), into rows->tuple. */
static void
set_tuple(TbHeapRows *rows, Relation rel, HeapTupleHeader data, uint32 len,
		  BlockNumber blkno, OffsetNumber offnum)
{
	rows->tuple.t_data = data;
	rows->tuple.t_len = len;
	ItemPointerSet(&rows->tuple.t_self, blkno, offnum);
	rows->tuple.t_tableOid = RelationGetRelid(rel);
}

/*
 * The last line pointer a read may look at.  On a page peeked at in the
 * leader's pool, pd_lower may be another page's, or half of one: never
 * past the line pointers a heap page can have.
 */
static OffsetNumber
max_offset(const char *page)
{
	return Min(PageGetMaxOffsetNumber(unconstify(char *, page)), MaxHeapTuplesPerPage);
}

/*
 * The tuple lp points to: on the page, or, on a page peeked at (peek),
 * copied into rows->member and looked at only once the buffer is known to
 * have held the page throughout; NULL when it did not, or lp points off
 * the page (half of another page's).  A visibility check of a torn tuple
 * could look up a transaction that never was.
 */
static HeapTupleHeader
chain_member(TbHeapRows *rows, const char *page, const ItemIdData *lp, TbPeek *peek)
{
	Size		offset = ItemIdGetOffset(lp);
	Size		length = ItemIdGetLength(lp);
	bool		copied;

	if (peek == NULL)
		return (HeapTupleHeader) unconstify(char *, page + offset);
	if (length < SizeofHeapTupleHeader || offset + length > BLCKSZ)
		return NULL;
	if (rows->member == NULL)
		rows->member = MemoryContextAlloc(rows->cxt, BLCKSZ);
	copied = tb_page_source_peek_copy(peek, offset, length, rows->member);
	return tb_page_source_peek_held(peek) && copied ? (HeapTupleHeader) rows->member : NULL;
}

/* No visible member: sure on a stable page, on a peeked one if it held. */
static TbHotResult
no_member(TbPeek *peek)
{
	return peek == NULL || tb_page_source_peek_held(peek) ?
		TB_HOT_MISSING : TB_HOT_MOVED;
}

/*
 * The visible member of the HOT chain that starts at offnum of page (block
 * blkno), into rows->tuple.  Derived from heap_hot_search_buffer() in
 * src/backend/access/heap/heapam.c (PostgreSQL 18): on a private copy or a
 * page peeked at in the leader's pool (peek, see chain_member()), with
 * tb_tuple_visible() (no hint bits), for an MVCC snapshot (one member at
 * most is visible), without the all-dead bookkeeping that only serves to
 * mark index entries dead.
 */
static TbHotResult
hot_search(TbHeapRows *rows, Relation rel, const char *page, BlockNumber blkno,
		   OffsetNumber offnum, Snapshot snapshot, TbPeek *peek)
{
	TransactionId prev_xmax = InvalidTransactionId;
	bool		at_chain_start = true;

	for (;;)
	{
		ItemIdData	lp;
		HeapTupleHeader tuple;

		if (offnum < FirstOffsetNumber || offnum > max_offset(page))
			return no_member(peek);
		lp = *PageGetItemId(unconstify(char *, page), offnum);
		if (!ItemIdIsNormal(&lp))
		{
			/* A redirect may start the chain, where pruning left one. */
			if (ItemIdIsRedirected(&lp) && at_chain_start)
			{
				offnum = ItemIdGetRedirect(&lp);
				at_chain_start = false;
				continue;
			}
			return no_member(peek);
		}
		tuple = chain_member(rows, page, &lp, peek);
		if (tuple == NULL)
			return TB_HOT_MOVED;
		if (at_chain_start && HeapTupleHeaderIsHeapOnly(tuple))
			return TB_HOT_MISSING;
		if (TransactionIdIsValid(prev_xmax) &&
			!TransactionIdEquals(prev_xmax, HeapTupleHeaderGetXmin(tuple)))
			return TB_HOT_MISSING;

		if (tb_tuple_visible(tuple, snapshot, &rows->last_xmin))
		{
			set_tuple(rows, rel, tuple, ItemIdGetLength(&lp), blkno, offnum);
			return TB_HOT_FOUND;
		}
		if (!HeapTupleHeaderIsHotUpdated(tuple))
			return TB_HOT_MISSING;
		Assert(ItemPointerGetBlockNumber(&tuple->t_ctid) == blkno);
		offnum = ItemPointerGetOffsetNumber(&tuple->t_ctid);
		at_chain_start = false;
		prev_xmax = HeapTupleHeaderGetUpdateXid(tuple);
	}
}

/* The visible member of a chain on a page that stays as it is. */
bool
tb_heap_hot_search(TbHeapRows *rows, Relation rel, Page page, BlockNumber blkno,
				   OffsetNumber offnum, Snapshot snapshot)
{
	return hot_search(rows, rel, page, blkno, offnum, snapshot, NULL) == TB_HOT_FOUND;
}

/*
 * The same on a page a worker peeked at in the leader's pool
 * (tb_page_source_peek()): TB_HOT_MOVED when the buffer did not hold the
 * page throughout, and the page must be read again as a copy or from the
 * file.
 */
TbHotResult
tb_heap_hot_search_peeked(TbHeapRows *rows, Relation rel, const char *page,
						  BlockNumber blkno, OffsetNumber offnum, Snapshot snapshot,
						  TbPeek *peek)
{
	return hot_search(rows, rel, page, blkno, offnum, snapshot, peek);
}

/*
 * Is the tuple at offnum visible, whatever chain it is in?  For a page that
 * a lossy bitmap names whole, as heapam_scan_bitmap_next_block() reads one.
 */
bool
tb_heap_tuple_at(TbHeapRows *rows, Relation rel, Page page, BlockNumber blkno,
				 OffsetNumber offnum, Snapshot snapshot)
{
	ItemId		lp;

	if (offnum < FirstOffsetNumber || offnum > PageGetMaxOffsetNumber(page))
		return false;
	lp = PageGetItemId(page, offnum);
	if (!ItemIdIsNormal(lp) ||
		!tb_tuple_visible((HeapTupleHeader) PageGetItem(page, lp), snapshot,
						  &rows->last_xmin))
		return false;
	set_tuple(rows, rel, (HeapTupleHeader) PageGetItem(page, lp), ItemIdGetLength(lp),
			  blkno, offnum);
	return true;
}

/*
 * Store rows->tuple in the slot, its out-of-line values fetched through
 * private pages of the toast relation and decompressed (toast_reader.c):
 * no participant detoasts through local buffers.  Per-tuple memory.
 */
void
tb_heap_rows_store(TbHeapRows *rows, ScanState *ss, TupleTableSlot *slot)
{
	Relation	rel = ss->ss_currentRelation;
	TupleDesc	desc = RelationGetDescr(rel);
	HeapTuple	tuple = &rows->tuple;

	if (HeapTupleHasExternal(tuple))
	{
		MemoryContext oldcxt;

		if (rows->toast == NULL)
		{
			const char *reason = NULL;

			oldcxt = MemoryContextSwitchTo(ss->ps.state->es_query_cxt);
			rows->toast = tb_toast_reader_open(rel, &rows->toast_pages,
											   &rows->toast_rereads, &reason);
			MemoryContextSwitchTo(oldcxt);
			if (rows->toast == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot fetch out-of-line values of temporary table \"%s\" in a %s",
								RelationGetRelationName(rel), rows->node_name),
						 errdetail("%s.", reason)));
		}
		oldcxt = MemoryContextSwitchTo(ss->ps.ps_ExprContext->ecxt_per_tuple_memory);
		heap_deform_tuple(tuple, desc, rows->values, rows->isnull);
		for (int att = 0; att < desc->natts; att++)
		{
			struct varlena *value = (struct varlena *) DatumGetPointer(rows->values[att]);
			struct varatt_external pointer;

			if (rows->isnull[att] || TupleDescAttr(desc, att)->attlen != -1 ||
				!VARATT_IS_EXTERNAL_ONDISK(value))
				continue;
			VARATT_EXTERNAL_GET_POINTER(pointer, value);
			if (pointer.va_toastrelid != tb_toast_reader_relid(rows->toast))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot fetch an out-of-line value of temporary table \"%s\" stored in toast relation %u",
								RelationGetRelationName(rel), pointer.va_toastrelid)));
			value = tb_toast_fetch(rows->toast, value, &rows->toast_pages,
								   &rows->toast_rereads);
			if (VARATT_IS_COMPRESSED(value))
				value = detoast_attr(value);
			rows->values[att] = PointerGetDatum(value);
		}
		tuple = heap_form_tuple(desc, rows->values, rows->isnull);
		tuple->t_self = rows->tuple.t_self;
		tuple->t_tableOid = rows->tuple.t_tableOid;
		MemoryContextSwitchTo(oldcxt);
	}
	if (TTS_IS_HEAPTUPLE(slot))
		ExecStoreHeapTuple(tuple, slot, false);
	else
	{
		/*
		 * PostgreSQL 15's virtual slot: the columns up to the last one read,
		 * deformed by a heap tuple slot (which knows the defaults of columns
		 * added since the row was written); the rest NULL, read by nobody.
		 */
		ExecStoreHeapTuple(tuple, rows->deformer, false);
		slot_getsomeattrs(rows->deformer, rows->deform_natts);
		ExecClearTuple(slot);
		memcpy(slot->tts_values, rows->deformer->tts_values, rows->deform_natts * sizeof(Datum));
		memcpy(slot->tts_isnull, rows->deformer->tts_isnull, rows->deform_natts * sizeof(bool));
		if (rows->deform_natts < desc->natts)
			memset(slot->tts_isnull + rows->deform_natts, true,
				   (desc->natts - rows->deform_natts) * sizeof(bool));
		ExecStoreVirtualTuple(slot);
	}
}

/*
 * For a virtual scan slot (PostgreSQL 15): the last column anything reads
 * from the slot, so that a wide row is not deformed whole for two of its
 * columns.  Without a projection the parent reads the slot itself: every
 * column.  custom_exprs holds the conditions rechecked on rows.
 */
static void
plan_deform(TbHeapRows *rows, ScanState *ss)
{
	CustomScan *cscan = (CustomScan *) ss->ps.plan;
	TupleDesc	desc = RelationGetDescr(ss->ss_currentRelation);
	Bitmapset  *attrs = NULL;
	int			last = desc->natts;

	if (ss->ps.ps_ProjInfo != NULL)
	{
		int			attno = -1;

		pull_varattnos((Node *) cscan->scan.plan.targetlist, cscan->scan.scanrelid, &attrs);
		pull_varattnos((Node *) cscan->scan.plan.qual, cscan->scan.scanrelid, &attrs);
		pull_varattnos((Node *) cscan->custom_exprs, cscan->scan.scanrelid, &attrs);
		/* A whole-row reference (attno 0) reads every column. */
		if (!bms_is_member(-FirstLowInvalidHeapAttributeNumber, attrs))
		{
			last = 0;
			while ((attno = bms_next_member(attrs, attno)) >= 0)
				last = Max(last, attno + FirstLowInvalidHeapAttributeNumber);
		}
	}
	rows->deform_natts = Min(Max(last, 0), desc->natts);
	rows->deformer = TbAllocTableSlot(&ss->ps.state->es_tupleTable, desc,
									  &TTSOpsHeapTuple);
}

/*
 * The index conditions a scan of ours checks on its rows (custom_exprs),
 * as one condition under label, as core shows its Index Cond or Recheck
 * Cond.
 */
void
tb_explain_scan_conds(CustomScanState *node, List *ancestors, ExplainState *es,
					  const char *label)
{
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *context;

	if (cscan->custom_exprs == NIL)
		return;
	context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);
	ExplainPropertyText(label,
						deparse_expression((Node *) make_ands_explicit(cscan->custom_exprs),
										   context, es->verbose, false),
						es);
}
