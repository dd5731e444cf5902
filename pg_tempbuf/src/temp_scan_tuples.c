/*-------------------------------------------------------------------------
 *
 * temp_scan_tuples.c
 *	  The rows a Temp Seq Scan returns: its visible tuples put into the scan
 *	  slot, their out-of-line values fetched privately where workers would
 *	  otherwise detoast through the leader's local buffers.
 *
 * Out-of-line values of the columns the scan uses are fetched by the
 * participant that meets them, through private pages of the toast relation
 * and its index (toast_reader.c), which the leader flushes with the table;
 * the tuple goes up with those values inline, so no participant detoasts
 * through local buffers.  Rows the quals reject cost no fetch of the
 * values only the output needs: the scan then runs the quals itself.
 *
 * Temp Index Scan (temp_index_scan.c) stores its rows its own way: it
 * fetches every out-of-line value of a row it returns, and on PostgreSQL
 * 15 deforms through a heap tuple slot up to the last column read.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/heapam.h"
#include "access/parallel.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "optimizer/optimizer.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "core_copies.h"
#include "temp_scan_int.h"
#include "toast_reader.h"

/* Varlena columns of the table that the expressions reference. */
static Bitmapset *
varlena_attrs(TempScanState *ts, List *exprs)
{
	CustomScan *cscan = (CustomScan *) ts->css.ss.ps.plan;
	TupleDesc	desc = ts->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	Bitmapset  *attrs = NULL;
	Bitmapset  *result = NULL;
	bool		whole_row;

	pull_varattnos((Node *) exprs, cscan->scan.scanrelid, &attrs);
	whole_row = bms_is_member(InvalidAttrNumber - FirstLowInvalidHeapAttributeNumber,
							  attrs);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		/* Any storage: SET STORAGE PLAIN leaves old values out of line. */
		if (att->attisdropped || att->attlen != -1)
			continue;
		if (whole_row ||
			bms_is_member(i + 1 - FirstLowInvalidHeapAttributeNumber, attrs))
			result = bms_add_member(result, i);
	}
	return result;
}

static AttrNumber *
attr_array(Bitmapset *attrs, int *nattrs)
{
	AttrNumber *result = palloc(sizeof(AttrNumber) * Max(bms_num_members(attrs), 1));
	int			x = -1;

	*nattrs = 0;
	while ((x = bms_next_member(attrs, x)) >= 0)
		result[(*nattrs)++] = x;
	return result;
}

/*
 * Which out-of-line values this scan may have to fetch: those of the
 * varlena columns its quals and output use (all of them for a whole-row
 * reference).
 */
void
tb_ts_find_toast_attrs(TempScanState *ts)
{
	CustomScan *cscan = (CustomScan *) ts->css.ss.ps.plan;
	TupleDesc	desc = RelationGetDescr(ts->css.ss.ss_currentRelation);
	Bitmapset  *in_qual = varlena_attrs(ts, cscan->scan.plan.qual);
	Bitmapset  *in_output = ts->output_unread ? NULL :
		varlena_attrs(ts, cscan->scan.plan.targetlist);

	ts->qual_attrs = attr_array(in_qual, &ts->nqual_attrs);
	ts->late_attrs = attr_array(bms_difference(in_output, in_qual), &ts->nlate_attrs);
	if (ts->nqual_attrs + ts->nlate_attrs == 0)
		return;

	/* Rows the quals reject must not cost a fetch: run them here. */
	ts->qual = ts->css.ss.ps.qual;
	ts->css.ss.ps.qual = NULL;
	ts->values = palloc(sizeof(Datum) * desc->natts);
	ts->isnull = palloc(sizeof(bool) * desc->natts);
}

/*
 * Must this scan's participants fetch out-of-line values themselves?  Not
 * when the leader scans alone anyway.
 */
static bool
wants_toast_reader(TempScanState *ts)
{
	return ts->nqual_attrs + ts->nlate_attrs > 0 &&
		tb_toast_has_data(ts->css.ss.ss_currentRelation);
}

/* Once per execution: must participants fetch out-of-line values? */
void
tb_ts_decide_toast(TempScanState *ts)
{
	if (ts->toast_decided)
		return;
	ts->fetch_toast = wants_toast_reader(ts);
	ts->toast_decided = true;
}

/*
 * Put a tuple of the private page into the scan slot.  A heap tuple slot
 * just points at it; the virtual slot of PostgreSQL 15 needs it deformed,
 * with defaults of columns added since the row was written.
 */
void
tb_ts_store_tuple(TempScanState *ts, TupleTableSlot *slot, HeapTuple tuple)
{
	if (TTS_IS_HEAPTUPLE(slot))
		ExecStoreHeapTuple(tuple, slot, false);
	else
	{
		int			natts = slot->tts_tupleDescriptor->natts;

		ExecClearTuple(slot);
		if (ts->deform_natts > 0)
			tb_heap_deform_prefix(tuple, slot->tts_tupleDescriptor, ts->deform_natts,
								  slot->tts_values, slot->tts_isnull);
		if (ts->deform_natts < natts)
			memset(slot->tts_isnull + ts->deform_natts, true,
				   (natts - ts->deform_natts) * sizeof(bool));
		ExecStoreVirtualTuple(slot);
	}
}

/*
 * The virtual slot of PostgreSQL 15 holds the columns deformed, where the
 * heap tuple slot deforms only what is read: deform the columns up to the
 * last one the quals or the parent read, and leave the rest NULL (no Var
 * above reads them).  When they read none (count(*)), nothing is deformed.
 * Measured on TPC-H Q06 (a filter on 4 of lineitem's 16 columns), where
 * deforming every column took over a third of the scan's time.
 */
void
tb_ts_plan_deform(TempScanState *ts)
{
	CustomScan *cscan = (CustomScan *) ts->css.ss.ps.plan;
	TupleDesc	desc = ts->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	Bitmapset  *attrs = NULL;
	int			member = -1;
	int			last = 0;

	pull_varattnos((Node *) cscan->scan.plan.qual, cscan->scan.scanrelid, &attrs);
	if (!ts->output_unread)
		pull_varattnos((Node *) cscan->scan.plan.targetlist, cscan->scan.scanrelid,
					   &attrs);
	while ((member = bms_next_member(attrs, member)) >= 0)
	{
		AttrNumber	attno = member + FirstLowInvalidHeapAttributeNumber;

		if (attno == InvalidAttrNumber)
		{
			last = desc->natts; /* the whole row */
			break;
		}
		last = Max(last, attno);
	}
	ts->deform_natts = Min(last, desc->natts);
}

/*
 * Fetch the out-of-line values of attrs into ts->values, decompressed;
 * false when there was none.  A value of another toast relation cannot
 * occur in a table (core re-toasts such values on insertion): should one
 * turn up, the leader leaves it to core, while a worker, which cannot,
 * gives up.
 */
static bool
fetch_values(TempScanState *ts, AttrNumber *attrs, int nattrs)
{
	Relation	rel = ts->css.ss.ss_currentRelation;
	TempScanCounters *counters = tb_ts_my_counters(ts);
	bool		fetched = false;

	for (int i = 0; i < nattrs; i++)
	{
		int			att = attrs[i];
		struct varlena *value = (struct varlena *) DatumGetPointer(ts->values[att]);
		struct varatt_external toast_pointer;

		if (ts->isnull[att] || !VARATT_IS_EXTERNAL_ONDISK(value))
			continue;
		VARATT_EXTERNAL_GET_POINTER(toast_pointer, value);
		if (toast_pointer.va_toastrelid != tb_toast_reader_relid(ts->toast))
		{
			if (!IsParallelWorker())
				continue;
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot fetch an out-of-line value of temporary table \"%s\" in a parallel worker",
							RelationGetRelationName(rel)),
					 errdetail("The value is stored in toast relation %u, not in the table's own.",
							   toast_pointer.va_toastrelid)));
		}
		value = tb_toast_fetch(ts->toast, value, &counters->toast_pages,
							   &counters->rereads);
		counters->toast_values++;

		/*
		 * Decompress here (pglz or lz4, no relation access): in parallel,
		 * and not in the leader when the row goes up through Gather.
		 */
		if (VARATT_IS_COMPRESSED(value))
		{
			struct varlena *compressed = value;

			value = detoast_attr(compressed);
			pfree(compressed);
		}
		ts->values[att] = PointerGetDatum(value);
		fetched = true;
	}
	return fetched;
}

/* Store ts->values, as a heap tuple standing for the one on the page. */
static void
store_values(TempScanState *ts, TupleTableSlot *slot)
{
	HeapTuple	tuple = heap_form_tuple(slot->tts_tupleDescriptor, ts->values,
										ts->isnull);

	tuple->t_self = ts->tuple.t_self;
	tuple->t_tableOid = ts->tuple.t_tableOid;
	tb_ts_store_tuple(ts, slot, tuple);
}

bool
tb_ts_qual_passes(TempScanState *ts, TupleTableSlot *slot)
{
	ExprContext *econtext = ts->css.ss.ps.ps_ExprContext;

	econtext->ecxt_scantuple = slot;
	if (ExecQual(ts->qual, econtext))
		return true;
	InstrCountFiltered1(&ts->css.ss.ps, 1);
	ResetExprContext(econtext);
	return false;
}

/*
 * Put the tuple in hand into the slot with the out-of-line values the quals
 * need inline, run the quals, and fetch the values only the output needs
 * for a row that passes.  Returns whether it passed.  Everything lives in
 * per-tuple memory.
 */
bool
tb_ts_store_fetched(TempScanState *ts, TupleTableSlot *slot)
{
	ExprContext *econtext = ts->css.ss.ps.ps_ExprContext;
	MemoryContext oldcxt = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	bool		passed;

	heap_deform_tuple(&ts->tuple, slot->tts_tupleDescriptor, ts->values, ts->isnull);
	if (fetch_values(ts, ts->qual_attrs, ts->nqual_attrs))
		store_values(ts, slot);
	else
		tb_ts_store_tuple(ts, slot, &ts->tuple);
	passed = ts->qual == NULL || tb_ts_qual_passes(ts, slot);
	if (passed && fetch_values(ts, ts->late_attrs, ts->nlate_attrs))
		store_values(ts, slot);
	MemoryContextSwitchTo(oldcxt);
	return passed;
}
