/*-------------------------------------------------------------------------
 *
 * btree_reader.c
 *	  Range scans of a temporary table's btree index through private page
 *	  copies (page_source.c), for Temp Index Scan.
 *
 * Core's btree code reads pages through buffers, which a parallel worker
 * has none of for a temporary relation.  This file walks the same pages
 * from private copies.  During a parallel query nothing writes the index
 * (the leader can only mark entries dead, a change a reader takes whole),
 * so the tree is static: no concurrent splits, no locks, no stack.  Steps
 * right past a high key below the search key, and skips deleted and
 * half-dead pages, still keep a tree left by an interrupted split or a
 * VACUUM readable.
 *
 * The scan keys are core's (ExecIndexBuildScanKeys()); from them this file
 * takes a range of the index that holds every entry they can match, in
 * index order:
 *	- the leading columns each fixed by "=" or IS NULL, then
 *	- at most one column's "= ANY(array)", scanned one sorted element at a
 *	  time (so the output stays in index order), more "=" columns after it,
 *	- and the bounds of the next column.
 * Every other key (a second bound on a column, IS NOT NULL, row
 * comparisons, a later column's bounds) only narrows the result: then
 * the range is wider than the keys ask, tb_btree_scan_exact() says so, and
 * the node evaluates the index conditions on each heap row it fetches, as
 * core does for a lossy index.  A key with a NULL argument matches
 * nothing, as in core.
 *
 * Comparisons are core's _bt_compare() on the private page, with insertion
 * keys built as _bt_first() builds them (cross-type ORDER procs included).
 * Entries marked dead are skipped, as core's scans skip them; a posting
 * list stands for several entries, in heap TID order.
 *
 * A backward scan returns the same entries in the opposite order (heap
 * TIDs of a posting list too, as core's backward scans do): it descends to
 * the first entry beyond the range's upper end, steps back from there and
 * walks left links, stopping below the lower end; array elements are taken
 * from the last.  The tree being static, a left link is as good as a right
 * one.
 *
 * A scan given a TbBtreeShared shares its one range with the other
 * participants of a parallel query, as core's parallel btree scan does
 * (_bt_parallel_seize() and _bt_parallel_release() in nbtree.c): one of
 * them descends to the first leaf; whoever takes a leaf reads its right
 * link and hands the next leaf on before returning the leaf's entries, so
 * each leaf is read by one participant.  Each reads its leaves through its
 * own page source.  With an "= ANY(array)" key the participants share one
 * element's range at a time, in order, as core's parallel scans step
 * through array keys together: whoever finds the current range done moves
 * everyone on to the next element, so that each participant's entries
 * stay in index order (Gather Merge).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "access/relscan.h"
#include "catalog/pg_type.h"
#include "storage/condition_variable.h"
#include "storage/spin.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/wait_event.h"

#include "btree_reader.h"
#include "page_source.h"

/* One column's ORDER proc for one right-hand type, looked up once. */
typedef struct OrderProc
{
	Oid			subtype;		/* InvalidOid: none looked up yet */
	bool		exists;
	FmgrInfo	proc;
} OrderProc;

/* A value a key fixes a column to, or bounds it by. */
typedef struct KeyValue
{
	Datum		value;
	bool		isnull;
	Oid			subtype;
} KeyValue;

/* Where a shared range scan is. */
typedef enum SharedScanStatus
{
	SHARED_NOT_STARTED,			/* nobody has descended yet */
	SHARED_ADVANCING,			/* someone is reading a leaf's right link */
	SHARED_IDLE,				/* next_leaf is the next leaf to take */
	SHARED_DONE
} SharedScanStatus;

struct TbBtreeShared
{
	slock_t		mutex;
	ConditionVariable advanced;	/* status left SHARED_ADVANCING */
	int			segment;		/* the array element whose range is shared */
	SharedScanStatus status;	/* of that range */
	BlockNumber next_leaf;
};

struct TbBtreeScan
{
	Relation	index;
	TbPageSource *pages;
	MemoryContext cxt;			/* the scan's, for what lives as long */
	MemoryContext keycxt;		/* reset with every new set of keys */
	int			nkeyatts;
	BTScanInsert base;			/* _bt_mkscankey()'s keys, no arguments */
	OrderProc  *procs;			/* [nkeyatts] */
	BlockNumber root;			/* InvalidBlockNumber until the metapage is read */

	/* The range of this set of keys. */
	bool		empty;			/* the keys match nothing */
	int			nfixed;			/* leading columns fixed by "=" */
	KeyValue	fixed[INDEX_MAX_KEYS];
	int			array_col;		/* which of them takes the array, or -1 */
	Datum	   *elements;		/* its sorted distinct elements */
	int			nelements;
	int			next_element;	/* shared: the element being read */
	bool		has_low;		/* bounds of column nfixed, in index order */
	KeyValue	low;
	bool		low_strict;		/* ">" rather than ">=" (in index order) */
	bool		has_high;
	KeyValue	high;
	bool		high_strict;
	bool		exact;			/* every key is one of the above */
	bool		backward;		/* return the range in descending order */
	BTScanInsert lower;			/* the entries of the current segment: */
	BTScanInsert upper;			/* from >= lower to <= upper (if any) */
	bool		bounded_above;
	bool		leaf_below_upper;	/* every entry of the leaf is within upper */

	/* Where the scan is. */
	bool		in_segment;
	bool		past_low;		/* met an entry above a strict lower bound */
	Page		leaf;			/* the leaf being read, held in the page source */
	OffsetNumber offnum;
	OffsetNumber maxoff;
	int			posting_next;	/* in the posting list at offnum - 1 */
	int			posting_count;
	ItemPointer posting;
	IndexTuple	itup;			/* the entry of the last TID returned */

	uint64		entries;		/* index entries returned */
	TbBtreeShared *shared;		/* the range shared with other participants */
};

Size
tb_btree_shared_size(void)
{
	return sizeof(TbBtreeShared);
}

/* Leader: a shared range not started, before the scan or a rescan. */
void
tb_btree_shared_init(TbBtreeShared *shared, bool first_time)
{
	if (first_time)
	{
		SpinLockInit(&shared->mutex);
		ConditionVariableInit(&shared->advanced);
	}
	shared->segment = 0;
	shared->status = SHARED_NOT_STARTED;
	shared->next_leaf = P_NONE;
}

/* From now on, share the range with whoever else uses shared. */
void
tb_btree_scan_share(TbBtreeScan *scan, TbBtreeShared *shared)
{
	scan->shared = shared;
}

/* Return entries in descending index order; not for a shared range. */
void
tb_btree_scan_backward(TbBtreeScan *scan)
{
	Assert(scan->shared == NULL);
	scan->backward = true;
}

TbBtreeScan *
tb_btree_scan_begin(Relation index, TbPageSource *pages, MemoryContext cxt)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	TbBtreeScan *scan = palloc0(sizeof(TbBtreeScan));
	Size		keysize = offsetof(BTScanInsertData, scankeys) +
		sizeof(ScanKeyData) * INDEX_MAX_KEYS;

	scan->index = index;
	scan->pages = pages;
	scan->cxt = cxt;
	scan->keycxt = AllocSetContextCreate(cxt, "pg_tempbuf btree keys",
										 ALLOCSET_SMALL_SIZES);
	scan->nkeyatts = IndexRelationGetNumberOfKeyAttributes(index);
	scan->base = _bt_mkscankey(index, NULL);
	scan->procs = palloc0(sizeof(OrderProc) * scan->nkeyatts);
	scan->root = InvalidBlockNumber;
	scan->lower = palloc0(keysize);
	scan->upper = palloc0(keysize);
	scan->empty = true;
	MemoryContextSwitchTo(oldcxt);
	return scan;
}

/*
 * The index tuple of the TID tb_btree_scan_next() returned last (a posting
 * list's, whose key columns are those of every TID in it), valid until the
 * next call.
 */
IndexTuple
tb_btree_scan_tuple(TbBtreeScan *scan)
{
	return scan->itup;
}

uint64
tb_btree_scan_entries(TbBtreeScan *scan)
{
	return scan->entries;
}

/*
 * Does the range of the current keys hold exactly the entries they match
 * (so that nobody needs to check them again on the rows)?
 */
bool
tb_btree_scan_exact(TbBtreeScan *scan)
{
	return scan->exact;
}

/*
 * The ORDER proc comparing column col with a value of type subtype, as
 * _bt_first() looks it up; NULL when the operator family has none.
 */
static FmgrInfo *
order_proc(TbBtreeScan *scan, int col, Oid subtype)
{
	OrderProc  *entry = &scan->procs[col];
	Oid			opcintype = scan->index->rd_opcintype[col];

	if (!OidIsValid(subtype) || subtype == opcintype)
		return &scan->base->scankeys[col].sk_func;
	if (entry->subtype != subtype)
	{
		Oid			procoid = get_opfamily_proc(scan->index->rd_opfamily[col],
												opcintype, subtype, BTORDER_PROC);

		entry->subtype = subtype;
		entry->exists = OidIsValid(procoid);
		if (entry->exists)
			fmgr_info_cxt(procoid, &entry->proc, scan->cxt);
	}
	return entry->exists ? &entry->proc : NULL;
}

static void
fill_key(BTScanInsert key, TbBtreeScan *scan, int col, const KeyValue *kv)
{
	ScanKey		sk = &key->scankeys[col];

	/* _bt_mkscankey() without a tuple marks every argument NULL. */
	*sk = scan->base->scankeys[col];
	sk->sk_flags &= ~SK_ISNULL;
	sk->sk_argument = kv->value;
	if (kv->isnull)
		sk->sk_flags |= SK_ISNULL;
	else
	{
		sk->sk_func = *order_proc(scan, col, kv->subtype);
		sk->sk_subtype = kv->subtype;
	}
}

/* Insertion key: the fixed columns, then bound when there is one. */
static void
make_key(TbBtreeScan *scan, BTScanInsert key, const KeyValue *bound)
{
	int			ncols = scan->nfixed;

	memcpy(key, scan->base, offsetof(BTScanInsertData, scankeys));
	key->nextkey = false;
	key->scantid = NULL;
	for (int col = 0; col < scan->nfixed; col++)
		fill_key(key, scan, col, &scan->fixed[col]);
	if (bound)
		fill_key(key, scan, ncols++, bound);
	key->keysz = ncols;
}

/* Can a key on col with this right-hand type serve as a bound? */
static bool
usable(TbBtreeScan *scan, ScanKey sk)
{
	return (sk->sk_flags & SK_ISNULL) ||
		order_proc(scan, sk->sk_attno - 1, sk->sk_subtype) != NULL;
}

static KeyValue
key_value(ScanKey sk)
{
	KeyValue	kv;

	kv.value = sk->sk_argument;
	kv.isnull = (sk->sk_flags & SK_ISNULL) != 0;
	kv.subtype = sk->sk_subtype;
	return kv;
}

typedef struct ElementSort
{
	FmgrInfo	proc;
	Oid			collation;
} ElementSort;

static int
compare_elements(const void *a, const void *b, void *arg)
{
	ElementSort *sort = arg;

	return DatumGetInt32(FunctionCall2Coll(&sort->proc, sort->collation,
										   *(const Datum *) a, *(const Datum *) b));
}

/*
 * Sort and deduplicate the elements of an "= ANY(array)" key on col, in
 * index order.  False when the operator family cannot compare them: the
 * key then bounds nothing.
 */
static bool
prepare_elements(TbBtreeScan *scan, ScanKey sk, int col)
{
	ArrayType  *array = DatumGetArrayTypeP(sk->sk_argument);
	Oid			elemtype = ARR_ELEMTYPE(array);
	Oid			procoid;
	ElementSort sort;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			nelems;
	int			n = 0;

	if (order_proc(scan, col, elemtype) == NULL)
		return false;
	procoid = get_opfamily_proc(scan->index->rd_opfamily[col], elemtype,
								elemtype, BTORDER_PROC);
	if (!OidIsValid(procoid))
		return false;
	fmgr_info(procoid, &sort.proc);
	sort.collation = scan->index->rd_indcollation[col];

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(array, elemtype, typlen, typbyval, typalign,
					  &elems, &nulls, &nelems);
	for (int i = 0; i < nelems; i++)
	{
		if (!nulls[i])
			elems[n++] = elems[i];
	}
	qsort_arg(elems, n, sizeof(Datum), compare_elements, &sort);
	nelems = n;
	n = 0;
	for (int i = 0; i < nelems; i++)
	{
		if (n == 0 || compare_elements(&elems[n - 1], &elems[i], &sort) != 0)
			elems[n++] = elems[i];
	}
	/* A DESC column keeps its largest values first. */
	if (scan->index->rd_indoption[col] & INDOPTION_DESC)
	{
		for (int i = 0; i < n / 2; i++)
		{
			Datum		swap = elems[i];

			elems[i] = elems[n - 1 - i];
			elems[n - 1 - i] = swap;
		}
	}
	scan->elements = elems;
	scan->nelements = n;
	scan->array_col = col;
	scan->fixed[col].isnull = false;
	scan->fixed[col].subtype = elemtype;
	return true;
}

/*
 * Take a new set of keys (their runtime values already evaluated); the
 * next tb_btree_scan_next() starts over.
 */
void
tb_btree_scan_set_keys(TbBtreeScan *scan, ScanKey keys, int nkeys)
{
	ScanKey		equal[INDEX_MAX_KEYS] = {0};
	ScanKey		array[INDEX_MAX_KEYS] = {0};
	ScanKey		low[INDEX_MAX_KEYS] = {0};
	ScanKey		high[INDEX_MAX_KEYS] = {0};
	MemoryContext oldcxt;
	int			next;
	int			nused = 0;		/* keys that bound the range */

	MemoryContextReset(scan->keycxt);
	oldcxt = MemoryContextSwitchTo(scan->keycxt);
	scan->empty = false;
	scan->in_segment = false;
	scan->posting_count = scan->posting_next = 0;
	scan->nfixed = 0;
	scan->array_col = -1;
	scan->nelements = 0;
	scan->next_element = 0;
	scan->has_low = scan->has_high = false;
	scan->low_strict = scan->high_strict = false;

	for (int i = 0; i < nkeys; i++)
	{
		ScanKey		sk = &keys[i];
		int			col = sk->sk_attno - 1;
		bool		desc;

		if (sk->sk_flags & SK_ROW_HEADER || col < 0 || col >= scan->nkeyatts)
			continue;
		if (sk->sk_flags & SK_SEARCHNOTNULL)
			continue;
		if (sk->sk_flags & SK_SEARCHNULL)
		{
			if (equal[col] == NULL)
				equal[col] = sk;
			continue;
		}
		if (sk->sk_flags & SK_ISNULL)
		{
			/* "x op NULL", or a NULL array: true for no row. */
			scan->empty = true;
			break;
		}
		if (sk->sk_flags & SK_SEARCHARRAY)
		{
			if (array[col] == NULL)
				array[col] = sk;
			continue;
		}
		if (!usable(scan, sk))
			continue;
		desc = (scan->index->rd_indoption[col] & INDOPTION_DESC) != 0;
		switch (sk->sk_strategy)
		{
			case BTEqualStrategyNumber:
				if (equal[col] == NULL)
					equal[col] = sk;
				break;
			case BTLessStrategyNumber:
			case BTLessEqualStrategyNumber:
				if (desc ? low[col] == NULL : high[col] == NULL)
					*(desc ? &low[col] : &high[col]) = sk;
				break;
			case BTGreaterStrategyNumber:
			case BTGreaterEqualStrategyNumber:
				if (desc ? high[col] == NULL : low[col] == NULL)
					*(desc ? &high[col] : &low[col]) = sk;
				break;
			default:
				break;
		}
	}

	for (next = 0; !scan->empty && next < scan->nkeyatts; next++)
	{
		if (equal[next])
		{
			scan->fixed[next] = key_value(equal[next]);
			if (equal[next]->sk_flags & SK_SEARCHNULL)
				scan->fixed[next].isnull = true;
		}
		else if (array[next] && scan->array_col < 0 &&
				 prepare_elements(scan, array[next], next))
		{
			if (scan->nelements == 0)
				scan->empty = true;
		}
		else
			break;
		nused++;
		scan->nfixed = next + 1;
	}
	if (!scan->empty && next < scan->nkeyatts)
	{
		bool		desc = (scan->index->rd_indoption[next] & INDOPTION_DESC) != 0;

		if (low[next])
		{
			scan->has_low = true;
			scan->low = key_value(low[next]);
			scan->low_strict = low[next]->sk_strategy ==
				(desc ? BTLessStrategyNumber : BTGreaterStrategyNumber);
			nused++;
		}
		if (high[next])
		{
			scan->has_high = true;
			scan->high = key_value(high[next]);
			scan->high_strict = high[next]->sk_strategy ==
				(desc ? BTGreaterStrategyNumber : BTLessStrategyNumber);
			nused++;
		}
	}
	/* Keys left out (a second bound, NOT NULL, rows) leave the range wide. */
	scan->exact = !scan->empty && nused == nkeys;

	/*
	 * So does a bound on one side only, when the column's NULLs sort at the
	 * other end: they are in the range, and no comparison matches them.
	 */
	if (scan->exact && scan->has_low != scan->has_high)
	{
		bool		nulls_first = (scan->index->rd_indoption[next] & INDOPTION_NULLS_FIRST) != 0;

		if (scan->has_low ? !nulls_first : nulls_first)
			scan->exact = false;
	}
	scan->bounded_above = scan->nfixed > 0 || scan->has_high;
	MemoryContextSwitchTo(oldcxt);
}

static Page
index_page(TbBtreeScan *scan, BlockNumber blkno)
{
	Page		page = tb_page_source_get(scan->pages, scan->index, blkno);

	if (PageGetSpecialSize(page) != MAXALIGN(sizeof(BTPageOpaqueData)))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" contains corrupted page at block %u",
						RelationGetRelationName(scan->index), blkno)));
	return page;
}

/* The fast root, from the metapage; P_NONE for an empty index. */
static BlockNumber
root_block(TbBtreeScan *scan)
{
	if (scan->root == InvalidBlockNumber)
	{
		Page		page = tb_page_source_get(scan->pages, scan->index, BTREE_METAPAGE);
		BTMetaPageData *meta = BTPageGetMeta(page);

		if (meta->btm_magic != BTREE_MAGIC || meta->btm_version < BTREE_VERSION)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("index \"%s\" is not a btree of version %d",
							RelationGetRelationName(scan->index), BTREE_VERSION)));
		scan->root = meta->btm_fastroot;
	}
	return scan->root;
}

/*
 * The first offset of page, from low on, whose entry is > key (nextkey) or
 * >= key; past the last one if none is.
 */
static OffsetNumber
search_page(TbBtreeScan *scan, BTScanInsert key, bool nextkey, Page page,
			OffsetNumber low)
{
	OffsetNumber high = OffsetNumberNext(PageGetMaxOffsetNumber(page));
	int32		cmpval = nextkey ? 0 : 1;

	while (low < high)
	{
		OffsetNumber mid = low + (high - low) / 2;

		if (_bt_compare(scan->index, key, page, mid) >= cmpval)
			low = mid + 1;
		else
			high = mid;
	}
	return low;
}

/*
 * Descend to the leaf where the first entry > key (nextkey) or >= key is,
 * or would be.  Derived from _bt_search(), _bt_moveright() and
 * _bt_binsrch() in src/backend/access/nbtree/nbtsearch.c (PostgreSQL 18),
 * for a static tree: no locks, no stack, no incomplete splits to finish.
 */
static BlockNumber
descend(TbBtreeScan *scan, BTScanInsert key, bool nextkey)
{
	BlockNumber blkno = root_block(scan);
	int32		cmpval = nextkey ? 0 : 1;

	for (;;)
	{
		Page		page = index_page(scan, blkno);
		BTPageOpaque opaque = BTPageGetOpaque(page);
		OffsetNumber low;
		IndexTuple	itup;

		if (!P_RIGHTMOST(opaque) &&
			(P_IGNORE(opaque) ||
			 _bt_compare(scan->index, key, page, P_HIKEY) >= cmpval))
		{
			blkno = opaque->btpo_next;
			continue;
		}
		if (P_ISLEAF(opaque))
			return blkno;

		/* The last downlink whose separator is < key (<= key: nextkey). */
		low = search_page(scan, key, nextkey, page, P_FIRSTDATAKEY(opaque));
		Assert(low > P_FIRSTDATAKEY(opaque));
		itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, low - 1));
		blkno = BTreeTupleGetDownLink(itup);
	}
}

/* Is the entry at offnum of a leaf past the upper end of the segment? */
static bool
above_upper(TbBtreeScan *scan, Page page, OffsetNumber offnum)
{
	int32		cmp = _bt_compare(scan->index, scan->upper, page, offnum);

	return cmp < 0 || (cmp == 0 && scan->high_strict && scan->has_high);
}

static void
read_leaf(TbBtreeScan *scan, BlockNumber blkno)
{
	Page		page = tb_page_source_hold(scan->pages, scan->index, blkno);
	BTPageOpaque opaque = BTPageGetOpaque(page);

	scan->leaf = page;
	/* A deleted or half-dead page holds no entry to return. */
	scan->maxoff = P_IGNORE(opaque) ? InvalidOffsetNumber :
		PageGetMaxOffsetNumber((Page) scan->leaf);
	/* A backward scan returns the entry before offnum next. */
	scan->offnum = scan->backward && !P_IGNORE(opaque) ?
		OffsetNumberNext(scan->maxoff) : P_FIRSTDATAKEY(opaque);
	scan->posting_count = scan->posting_next = 0;

	/*
	 * Entries are in order on a leaf: where its last is within the upper
	 * end, so is every one, and a forward scan compares once a leaf rather
	 * than once an entry, as core's _bt_readpage() prechecks a page.
	 */
	scan->leaf_below_upper = !scan->backward && scan->bounded_above &&
		scan->maxoff != InvalidOffsetNumber &&
		scan->maxoff >= P_FIRSTDATAKEY(opaque) &&
		!above_upper(scan, page, scan->maxoff);
}

/*
 * Take the next leaf of the shared range of segment: P_NONE when that
 * range is done (or everyone moved on past it); InvalidBlockNumber when
 * nobody has started it, and this caller is to descend.  Either way but
 * P_NONE the caller owes shared_release() (or shared_done()).
 */
static BlockNumber
shared_seize(TbBtreeShared *shared, int segment)
{
	BlockNumber blkno;

	for (;;)
	{
		SpinLockAcquire(&shared->mutex);
		if (shared->segment != segment)
		{
			SpinLockRelease(&shared->mutex);
			ConditionVariableCancelSleep();
			return P_NONE;
		}
		switch (shared->status)
		{
			case SHARED_NOT_STARTED:
				blkno = InvalidBlockNumber;
				shared->status = SHARED_ADVANCING;
				break;
			case SHARED_IDLE:
				blkno = shared->next_leaf;
				shared->status = SHARED_ADVANCING;
				break;
			case SHARED_DONE:
				blkno = P_NONE;
				break;
			case SHARED_ADVANCING:
			default:
				SpinLockRelease(&shared->mutex);
				ConditionVariableSleep(&shared->advanced, WAIT_EVENT_BTREE_PAGE);
				continue;
		}
		SpinLockRelease(&shared->mutex);
		ConditionVariableCancelSleep();
		return blkno;
	}
}

/* Hand the leaf after the one just taken on; P_NONE ends the range. */
static void
shared_release(TbBtreeShared *shared, int segment, BlockNumber next_leaf)
{
	SpinLockAcquire(&shared->mutex);
	if (shared->segment == segment && shared->status != SHARED_DONE)
	{
		shared->status = next_leaf == P_NONE ? SHARED_DONE : SHARED_IDLE;
		shared->next_leaf = next_leaf;
	}
	SpinLockRelease(&shared->mutex);
	ConditionVariableBroadcast(&shared->advanced);
}

/* Nobody needs to take another leaf: the range ends before it. */
static void
shared_done(TbBtreeShared *shared, int segment)
{
	SpinLockAcquire(&shared->mutex);
	if (shared->segment == segment)
		shared->status = SHARED_DONE;
	SpinLockRelease(&shared->mutex);
	ConditionVariableBroadcast(&shared->advanced);
}

/*
 * The range of segment is done (shared_seize() said so): share the next
 * segment's, unless someone moved on already.  Returns the segment shared
 * now; nsegments when there is none left.
 */
static int
shared_advance(TbBtreeShared *shared, int finished, int nsegments)
{
	int			segment;

	SpinLockAcquire(&shared->mutex);
	if (shared->segment == finished)
	{
		shared->segment++;
		shared->status = shared->segment < nsegments ? SHARED_NOT_STARTED : SHARED_DONE;
		shared->next_leaf = P_NONE;
	}
	segment = shared->segment;
	SpinLockRelease(&shared->mutex);
	ConditionVariableBroadcast(&shared->advanced);
	return segment;
}

/*
 * Read the leaf blkno of a shared range, handing its right sibling on
 * first.  False when the range has no leaf left for this participant.
 */
static bool
take_shared_leaf(TbBtreeScan *scan, BlockNumber blkno)
{
	BTPageOpaque opaque;

	if (blkno == P_NONE)
		return false;
	read_leaf(scan, blkno);
	opaque = BTPageGetOpaque(scan->leaf);
	shared_release(scan->shared, scan->next_element,
				   P_RIGHTMOST(opaque) ? P_NONE : opaque->btpo_next);
	return true;
}

/* Position on the first entry of the next segment; false when none is left. */
static bool
start_segment(TbBtreeScan *scan)
{
	BlockNumber handed_on = InvalidBlockNumber;
	BlockNumber blkno;
	int			nsegments = scan->array_col >= 0 ? scan->nelements : 1;

	if (scan->shared)
	{
		/* The segment shared now: this one, until someone finds it done. */
		for (;;)
		{
			if (scan->next_element >= nsegments)
				return false;
			handed_on = shared_seize(scan->shared, scan->next_element);
			if (handed_on != P_NONE)
				break;
			scan->next_element = shared_advance(scan->shared, scan->next_element,
												nsegments);
		}
		if (handed_on == InvalidBlockNumber && root_block(scan) == P_NONE)
		{
			shared_done(scan->shared, scan->next_element);
			return false;
		}
		if (scan->array_col >= 0)
			scan->fixed[scan->array_col].value = scan->elements[scan->next_element];
	}
	else
	{
		if (scan->next_element >= nsegments)
			return false;
		if (scan->array_col >= 0)
		{
			int			element = scan->next_element;

			if (scan->backward)
				element = scan->nelements - 1 - element;
			scan->fixed[scan->array_col].value = scan->elements[element];
		}
		scan->next_element++;
		if (root_block(scan) == P_NONE)
			return false;
	}

	make_key(scan, scan->lower, scan->has_low ? &scan->low : NULL);
	if (scan->bounded_above)
		make_key(scan, scan->upper, scan->has_high ? &scan->high : NULL);
	scan->in_segment = true;
	scan->past_low = false;

	/* Someone descended already: go on from the leaf handed on. */
	if (handed_on != InvalidBlockNumber)
		return take_shared_leaf(scan, handed_on);

	if (scan->backward)
	{
		/*
		 * Just past the last entry <= upper (< upper, strict), as
		 * _bt_first() positions a backward scan; with no upper end, past
		 * the rightmost leaf's last entry (an empty key is > everything).
		 */
		bool		nextkey = !(scan->has_high && scan->high_strict);

		if (!scan->bounded_above)
			make_key(scan, scan->upper, NULL);
		read_leaf(scan, descend(scan, scan->upper, nextkey));
		if (scan->maxoff != InvalidOffsetNumber)
			scan->offnum = search_page(scan, scan->upper, nextkey, scan->leaf,
									   P_FIRSTDATAKEY(BTPageGetOpaque(scan->leaf)));
		return true;
	}

	blkno = descend(scan, scan->lower, false);
	if (scan->shared)
		take_shared_leaf(scan, blkno);
	else
		read_leaf(scan, blkno);
	if (scan->maxoff != InvalidOffsetNumber)
		scan->offnum = search_page(scan, scan->lower, false, scan->leaf,
								   scan->offnum);
	return true;
}

/*
 * The next entry of a backward scan's segment, in the leaf or in those to
 * its left; false, the segment ended, when the entries left are below the
 * lower end.
 */
static bool
step_back(TbBtreeScan *scan, IndexTuple *itup)
{
	for (;;)
	{
		BTPageOpaque opaque = BTPageGetOpaque(scan->leaf);
		ItemId		lp;
		int32		cmp;

		if (scan->maxoff == InvalidOffsetNumber ||
			scan->offnum <= P_FIRSTDATAKEY(opaque))
		{
			if (P_LEFTMOST(opaque))
				return false;
			read_leaf(scan, opaque->btpo_prev);
			continue;
		}
		scan->offnum = OffsetNumberPrev(scan->offnum);
		cmp = _bt_compare(scan->index, scan->lower, scan->leaf, scan->offnum);
		if (cmp > 0 || (cmp == 0 && scan->low_strict && scan->has_low))
			return false;
		lp = PageGetItemId(scan->leaf, scan->offnum);
		if (ItemIdIsDead(lp))
			continue;
		*itup = (IndexTuple) PageGetItem(scan->leaf, lp);
		return true;
	}
}

/*
 * The next entry of a forward scan's segment, in the leaf or in those to
 * its right (or those handed on, in a shared range); false, the segment
 * ended, at the first entry above the upper end or past the last leaf.
 */
static bool
step_forward(TbBtreeScan *scan, IndexTuple *itup)
{
	for (;;)
	{
		Page		page = scan->leaf;
		ItemId		lp;

		if (scan->maxoff == InvalidOffsetNumber || scan->offnum > scan->maxoff)
		{
			BTPageOpaque opaque = BTPageGetOpaque(page);

			if (scan->shared)
			{
				if (!take_shared_leaf(scan, shared_seize(scan->shared,
														 scan->next_element)))
					return false;
			}
			else if (P_RIGHTMOST(opaque))
				return false;
			else
				read_leaf(scan, opaque->btpo_next);
			continue;
		}

		if (scan->bounded_above && !scan->leaf_below_upper &&
			above_upper(scan, page, scan->offnum))
		{
			if (scan->shared)
				shared_done(scan->shared, scan->next_element);
			return false;
		}
		lp = PageGetItemId(page, scan->offnum);
		scan->offnum = OffsetNumberNext(scan->offnum);
		if (ItemIdIsDead(lp))
			continue;
		/* A strict lower bound: the entries equal to it are not in the range. */
		if (scan->low_strict && !scan->past_low)
		{
			if (_bt_compare(scan->index, scan->lower, page,
							OffsetNumberPrev(scan->offnum)) == 0)
				continue;
			scan->past_low = true;
		}
		*itup = (IndexTuple) PageGetItem(page, lp);
		return true;
	}
}

/*
 * The heap TID of the next entry in the range, in index order (reversed
 * for a backward scan); false at the end.
 */
bool
tb_btree_scan_next(TbBtreeScan *scan, ItemPointer tid)
{
	if (scan->empty)
		return false;
	for (;;)
	{
		IndexTuple	itup;

		if (scan->posting_next < scan->posting_count)
		{
			int			i = scan->posting_next++;

			*tid = scan->posting[scan->backward ? scan->posting_count - 1 - i : i];
			scan->entries++;
			return true;
		}
		if (!scan->in_segment)
		{
			if (!start_segment(scan))
			{
				scan->empty = true;
				return false;
			}
			continue;			/* on its leaf now */
		}
		if (!(scan->backward ? step_back(scan, &itup) : step_forward(scan, &itup)))
		{
			scan->in_segment = false;
			continue;
		}
		scan->itup = itup;
		if (BTreeTupleIsPosting(itup))
		{
			scan->posting = BTreeTupleGetPosting(itup);
			scan->posting_count = BTreeTupleGetNPosting(itup);
			scan->posting_next = 0;
			continue;
		}
		*tid = itup->t_tid;
		scan->entries++;
		return true;
	}
}
