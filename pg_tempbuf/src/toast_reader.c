/*-------------------------------------------------------------------------
 *
 * toast_reader.c
 *	  Fetch out-of-line values of a temporary table without local buffers.
 *
 * Core fetches a toasted value through the toast relation's index and heap
 * in shared or local buffers; a parallel worker has no local buffers, so a
 * Parallel Temp Seq Scan fetches its out-of-line values itself.  Once the
 * leader has flushed the toast relation and its index, every participant
 * reads their pages privately with page_reader.c, looks the value up in the
 * btree on (chunk_id, chunk_seq), and assembles the chunks as
 * heap_fetch_toast_slice() does.  The result stays as stored: a compressed
 * value comes back inline and compressed, and core's detoast_attr()
 * decompresses it (pglz or lz4) without touching any relation.
 *
 * Nothing writes the toast relation while a parallel query runs, so the
 * pages read are a static, consistent tree: no concurrent splits.  The
 * lookup still steps right past a high key that is below the value, and
 * skips deleted and half-dead pages on the leaf level, so a tree left with
 * an incomplete split or pages VACUUM is deleting is read correctly.
 *
 * Inner index pages are few and read for every value: they are kept for
 * the whole scan.  Consecutive values of a scan usually have neighbouring
 * chunk ids, so the last leaf and the last few heap pages are kept too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "pg_tempbuf.h"

/* recent toast heap pages kept per reader */
#define TB_TOAST_HEAP_PAGES		4
/* inner index pages kept per reader: 8 MB at most */
#define TB_TOAST_INNER_PAGES	1024

typedef struct CachedPage
{
	BlockNumber blkno;			/* hash key */
	char		data[BLCKSZ];
} CachedPage;

/* One chunk found in the index: its sequence number and heap TID. */
typedef struct ChunkRef
{
	int32		seq;
	ItemPointerData tid;
} ChunkRef;

struct TbToastReader
{
	Relation	toastrel;
	Relation	indexrel;
	BlockNumber root;			/* the fast root */
	char	   *scratch;

	HTAB	   *inner;			/* inner index pages, by block */
	BlockNumber leaf_blkno;		/* the last leaf read */
	char	   *leaf;
	BlockNumber heap_blkno[TB_TOAST_HEAP_PAGES];
	char	   *heap[TB_TOAST_HEAP_PAGES];
	int			heap_victim;

	ChunkRef   *chunks;			/* the value being fetched */
	int			nchunks;
	int			maxchunks;

	/* the caller's counters of pages read */
	uint64	   *pages;
	uint64	   *rereads;
};

static char *
read_page(TbToastReader *reader, Relation rel, BlockNumber blkno, char *page)
{
	*reader->rereads += tb_read_page(rel, MAIN_FORKNUM, blkno, page, reader->scratch);
	(*reader->pages)++;
	return page;
}

/*
 * The toast relation's one valid index, or InvalidOid with *reason set
 * when there is none we can read.
 */
static Oid
toast_index(Relation toastrel, const char **reason)
{
	List	   *indexes = RelationGetIndexList(toastrel);
	Oid			result = InvalidOid;
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		bool		valid = index->rd_index->indisvalid;
		bool		btree = index->rd_rel->relam == BTREE_AM_OID;

		index_close(index, AccessShareLock);
		if (!valid)
			continue;
		if (!btree || OidIsValid(result))
		{
			*reason = "the toast relation's index is not a single btree";
			return InvalidOid;
		}
		result = lfirst_oid(lc);
	}
	list_free(indexes);
	if (!OidIsValid(result))
		*reason = "the toast relation has no valid index";
	return result;
}

/*
 * Open a private reader on rel's toast relation, or return NULL with
 * *reason set when its index is something this file cannot read.  The
 * leader calls it after flushing the toast relation and its index.
 * pages and rereads count the metapage read.
 */
TbToastReader *
tb_toast_reader_open(Relation rel, uint64 *pages, uint64 *rereads,
					 const char **reason)
{
	TbToastReader *reader;
	Relation	toastrel;
	Oid			indexoid;
	BTMetaPageData *meta;
	HASHCTL		ctl;

	toastrel = table_open(rel->rd_rel->reltoastrelid, AccessShareLock);
	indexoid = toast_index(toastrel, reason);
	if (!OidIsValid(indexoid))
	{
		table_close(toastrel, AccessShareLock);
		return NULL;
	}

	reader = palloc0(sizeof(TbToastReader));
	reader->toastrel = toastrel;
	reader->indexrel = index_open(indexoid, AccessShareLock);
	reader->scratch = palloc(BLCKSZ);
	reader->leaf = palloc(BLCKSZ);
	reader->leaf_blkno = InvalidBlockNumber;
	for (int i = 0; i < TB_TOAST_HEAP_PAGES; i++)
	{
		reader->heap[i] = palloc(BLCKSZ);
		reader->heap_blkno[i] = InvalidBlockNumber;
	}
	reader->pages = pages;
	reader->rereads = rereads;

	/* The metapage: only heapkeyspace btrees (version 4, every temp table's). */
	read_page(reader, reader->indexrel, BTREE_METAPAGE, reader->leaf);
	meta = BTPageGetMeta((Page) reader->leaf);
	if (meta->btm_magic != BTREE_MAGIC || meta->btm_version < BTREE_VERSION)
	{
		*reason = "the toast relation's index predates btree version 4";
		tb_toast_reader_close(reader);
		return NULL;
	}
	reader->root = meta->btm_fastroot;

	ctl.keysize = sizeof(BlockNumber);
	ctl.entrysize = sizeof(CachedPage);
	ctl.hcxt = CurrentMemoryContext;
	reader->inner = hash_create("pg_tempbuf toast index pages", 16, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	reader->maxchunks = 16;
	reader->chunks = palloc(sizeof(ChunkRef) * reader->maxchunks);
	return reader;
}

void
tb_toast_reader_close(TbToastReader *reader)
{
	index_close(reader->indexrel, AccessShareLock);
	table_close(reader->toastrel, AccessShareLock);
}

Oid
tb_toast_reader_relid(TbToastReader *reader)
{
	return RelationGetRelid(reader->toastrel);
}

/*
 * What a private toast read needs on disk: the main forks of rel's toast
 * relation and of its indexes, as a list of palloc'd file ids (NIL without
 * a toast relation).
 */
static List *
toast_files(Relation rel)
{
	Relation	toastrel;
	List	   *indexes;
	List	   *files;
	ListCell   *lc;
	TbRelFileId *file;

	if (!OidIsValid(rel->rd_rel->reltoastrelid))
		return NIL;
	toastrel = table_open(rel->rd_rel->reltoastrelid, AccessShareLock);
	file = palloc(sizeof(TbRelFileId));
	*file = TbRelationFileId(toastrel);
	files = list_make1(file);
	indexes = RelationGetIndexList(toastrel);
	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		file = palloc(sizeof(TbRelFileId));
		*file = TbRelationFileId(index);
		files = lappend(files, file);
		index_close(index, AccessShareLock);
	}
	list_free(indexes);
	table_close(toastrel, AccessShareLock);
	return files;
}


/*
 * The planner's view of rel's toast relation: its dirty local pages, and
 * whether it has any page at all.  Finding them opens the toast relation
 * and its index, which cost more than the rest of our planning; so the
 * answer is kept while the pool census that it comes from holds (a new
 * toast page is an extension, which the census counts).
 */
typedef struct ToastPrice
{
	Oid			relid;			/* hash key: the table's */
	int			dirty_pages;
	bool		has_data;
	int			nfiles;			/* toast_files(), when they fit; else -1 */
	TbRelFileId files[4];
} ToastPrice;

static HTAB *toast_prices = NULL;
static uint64 toast_prices_generation = 0;

/*
 * The toast price of rel: its dirty local pages, whether it has data, and
 * whether their flush needs no walk of the pool (every file known clean:
 * tb_fork_known_clean(), asked anew each time).
 */
void
tb_toast_price(Relation rel, int *dirty_pages, bool *has_data, bool *known_clean)
{
	uint64		generation = tb_pool_census_generation();
	Oid			relid = RelationGetRelid(rel);
	ToastPrice *entry;
	bool		found;

	if (toast_prices == NULL || generation != toast_prices_generation)
	{
		HASHCTL		ctl;

		if (toast_prices)
			hash_destroy(toast_prices);
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(ToastPrice);
		ctl.hcxt = TopMemoryContext;
		toast_prices = hash_create("pg_tempbuf toast prices", 16, &ctl,
								   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		toast_prices_generation = generation;
	}
	entry = hash_search(toast_prices, &relid, HASH_ENTER, &found);
	if (!found)
	{
		List	   *files = toast_files(rel);
		ListCell   *lc;

		entry->dirty_pages = 0;
		entry->nfiles = list_length(files) <= lengthof(entry->files) ?
			list_length(files) : -1;
		foreach(lc, files)
		{
			TbLocalBufferCounts counts;

			tb_pool_census(lfirst(lc), &counts, NULL);
			entry->dirty_pages += counts.dirty;
			if (entry->nfiles >= 0)
				entry->files[foreach_current_index(lc)] = *(TbRelFileId *) lfirst(lc);
		}
		list_free_deep(files);
		entry->has_data = entry->dirty_pages > 0 || tb_toast_has_data(rel);
	}
	*dirty_pages = entry->dirty_pages;
	*has_data = entry->has_data;
	*known_clean = entry->nfiles >= 0;
	for (int i = 0; i < entry->nfiles && *known_clean; i++)
		*known_clean = tb_fork_known_clean(&entry->files[i], MAIN_FORKNUM);
}

/* Leader: write the dirty pages tb_toast_price() counts. */
int64
tb_toast_flush(Relation rel)
{
	List	   *files = toast_files(rel);
	ListCell   *lc;
	int64		written = 0;

	foreach(lc, files)
		written += tb_flush_local_buffers(lfirst(lc), MAIN_FORKNUM);
	list_free_deep(files);
	return written;
}

/*
 * Leader, when code it runs may read tables while workers fetch values:
 * keep the toast heap pages it could prune from changing (page_guard.c).
 * False when one is not in local buffers, or the pin budget is spent:
 * then no worker may fetch.  Index pages need nothing: the leader can only
 * mark their entries dead, a change any reader takes whole.
 */
bool
tb_toast_guard(Relation rel, TbPinSet *pins, char *scratch)
{
	Relation	toastrel;
	TbResidentPage *resident;
	int			nresident;
	bool		guarded;

	if (!OidIsValid(rel->rd_rel->reltoastrelid))
		return true;
	toastrel = table_open(rel->rd_rel->reltoastrelid, AccessShareLock);
	resident = tb_resident_pages(TbRelationFileId(toastrel), MAIN_FORKNUM, &nresident);
	guarded = tb_guard_prunable_pages(toastrel, resident, nresident, pins,
									  NULL, 0, scratch);
	pfree(resident);
	table_close(toastrel, AccessShareLock);
	return guarded;
}

static Page
index_page(TbToastReader *reader, BlockNumber blkno)
{
	CachedPage *entry;
	bool		found;
	BTPageOpaque opaque;

	entry = hash_search(reader->inner, &blkno, HASH_FIND, NULL);
	if (entry)
		return (Page) entry->data;
	if (blkno == reader->leaf_blkno)
		return (Page) reader->leaf;

	read_page(reader, reader->indexrel, blkno, reader->leaf);
	opaque = BTPageGetOpaque((Page) reader->leaf);
	if (PageGetSpecialSize((Page) reader->leaf) != MAXALIGN(sizeof(BTPageOpaqueData)))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" contains corrupted page at block %u",
						RelationGetRelationName(reader->indexrel), blkno)));
	if (P_ISLEAF(opaque) ||
		hash_get_num_entries(reader->inner) >= TB_TOAST_INNER_PAGES)
	{
		reader->leaf_blkno = blkno;
		return (Page) reader->leaf;
	}
	entry = hash_search(reader->inner, &blkno, HASH_ENTER, &found);
	memcpy(entry->data, reader->leaf, BLCKSZ);
	reader->leaf_blkno = InvalidBlockNumber;
	return (Page) entry->data;
}

static Oid
tuple_chunk_id(TbToastReader *reader, IndexTuple itup)
{
	bool		isnull;

	return DatumGetObjectId(index_getattr(itup, 1,
										  RelationGetDescr(reader->indexrel),
										  &isnull));
}

/*
 * Does a pivot tuple (a high key or a downlink's separator) sort before
 * every entry of valueid?  Truncated attributes are minus infinity: the
 * pivot (valueid) with chunk_seq truncated precedes all of valueid's
 * entries, while (valueid, seq[, tid]) has some of them before it.
 */
static bool
pivot_before(TbToastReader *reader, IndexTuple itup, Oid valueid)
{
	Oid			chunk_id;

	if (BTreeTupleGetNAtts(itup, reader->indexrel) == 0)
		return true;
	chunk_id = tuple_chunk_id(reader, itup);
	if (chunk_id != valueid)
		return chunk_id < valueid;
	return BTreeTupleGetNAtts(itup, reader->indexrel) < 2;
}

/* Is the page to the right of this one where valueid's entries go on? */
static bool
step_right(TbToastReader *reader, Page page, Oid valueid)
{
	BTPageOpaque opaque = BTPageGetOpaque(page);

	if (P_RIGHTMOST(opaque))
		return false;
	if (P_IGNORE(opaque))
		return true;
	return pivot_before(reader,
						(IndexTuple) PageGetItem(page, PageGetItemId(page, P_HIKEY)),
						valueid);
}

/*
 * Descend from the fast root to the leftmost leaf that can hold valueid's
 * first entry; returns its block number.  Derived from _bt_search() and
 * _bt_moveright() in src/backend/access/nbtree/nbtsearch.c, PostgreSQL 18:
 * one fixed search key instead of a scan key, no locks, no stack, and a
 * static tree (no concurrent splits to finish).
 */
static BlockNumber
descend(TbToastReader *reader, Oid valueid)
{
	BlockNumber blkno = reader->root;

	for (;;)
	{
		Page		page = index_page(reader, blkno);
		BTPageOpaque opaque = BTPageGetOpaque(page);
		OffsetNumber low;
		OffsetNumber high;
		IndexTuple	itup;

		if (step_right(reader, page, valueid))
		{
			blkno = opaque->btpo_next;
			continue;
		}
		if (P_ISLEAF(opaque))
			return blkno;

		/*
		 * The last downlink whose separator precedes valueid's entries; the
		 * first data item is minus infinity whatever it holds.
		 */
		low = P_FIRSTDATAKEY(opaque);
		high = PageGetMaxOffsetNumber(page);
		while (low < high)
		{
			OffsetNumber mid = low + (high - low + 1) / 2;

			itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, mid));
			if (pivot_before(reader, itup, valueid))
				low = mid;
			else
				high = mid - 1;
		}
		itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, low));
		blkno = BTreeTupleGetDownLink(itup);
	}
}

static void
add_chunk(TbToastReader *reader, int32 seq, ItemPointer tid)
{
	if (reader->nchunks >= reader->maxchunks)
	{
		reader->maxchunks *= 2;
		reader->chunks = repalloc(reader->chunks,
								  sizeof(ChunkRef) * reader->maxchunks);
	}
	reader->chunks[reader->nchunks].seq = seq;
	reader->chunks[reader->nchunks].tid = *tid;
	reader->nchunks++;
}

/*
 * Collect valueid's index entries, in index order (chunk_seq, then heap
 * TID), into reader->chunks.  A posting list stands for several entries.
 */
static void
collect_chunks(TbToastReader *reader, Oid valueid)
{
	TupleDesc	desc = RelationGetDescr(reader->indexrel);
	BlockNumber blkno;

	reader->nchunks = 0;
	if (reader->root == P_NONE)
		return;					/* an empty index */
	blkno = descend(reader, valueid);

	for (bool first_leaf = true;; first_leaf = false)
	{
		Page		page = index_page(reader, blkno);
		BTPageOpaque opaque = BTPageGetOpaque(page);
		OffsetNumber maxoff = PageGetMaxOffsetNumber(page);

		if (!P_IGNORE(opaque))
		{
			OffsetNumber start = P_FIRSTDATAKEY(opaque);

			/* On the first leaf, skip the entries of smaller values. */
			if (first_leaf)
			{
				OffsetNumber high = OffsetNumberNext(maxoff);

				while (start < high)
				{
					OffsetNumber mid = start + (high - start) / 2;
					IndexTuple	itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, mid));

					if (tuple_chunk_id(reader, itup) < valueid)
						start = mid + 1;
					else
						high = mid;
				}
			}
			for (OffsetNumber off = start; off <= maxoff; off = OffsetNumberNext(off))
			{
				IndexTuple	itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, off));
				Oid			chunk_id = tuple_chunk_id(reader, itup);
				bool		isnull;
				int32		seq;

				if (chunk_id < valueid)
					continue;
				if (chunk_id > valueid)
					return;
				seq = DatumGetInt32(index_getattr(itup, 2, desc, &isnull));
				if (BTreeTupleIsPosting(itup))
				{
					for (int i = 0; i < BTreeTupleGetNPosting(itup); i++)
						add_chunk(reader, seq, BTreeTupleGetPostingN(itup, i));
				}
				else
					add_chunk(reader, seq, &itup->t_tid);
			}
		}
		if (!step_right(reader, page, valueid))
			return;
		blkno = opaque->btpo_next;
	}
}

static Page
heap_page(TbToastReader *reader, BlockNumber blkno)
{
	int			victim;

	for (int i = 0; i < TB_TOAST_HEAP_PAGES; i++)
	{
		if (reader->heap_blkno[i] == blkno)
			return (Page) reader->heap[i];
	}
	victim = reader->heap_victim;
	reader->heap_victim = (victim + 1) % TB_TOAST_HEAP_PAGES;
	reader->heap_blkno[victim] = InvalidBlockNumber;
	read_page(reader, reader->toastrel, blkno, reader->heap[victim]);
	reader->heap_blkno[victim] = blkno;
	return (Page) reader->heap[victim];
}

/*
 * Is a toast chunk one that core's toast snapshot returns?  That snapshot
 * (HeapTupleSatisfiesToast) takes any chunk whose insertion is not known to
 * have failed: the row pointing at the value is visible, and value ids are
 * never reused while an index entry holds them.  We also ask the commit log
 * about an unhinted inserter, since only this session writes the table: a
 * transaction that is neither ours nor committed has aborted.
 */
static bool
chunk_usable(HeapTupleHeader tuple)
{
	TransactionId xmin;

	if (HeapTupleHeaderXminCommitted(tuple))
		return true;
	if (HeapTupleHeaderXminInvalid(tuple))
		return false;
	xmin = HeapTupleHeaderGetRawXmin(tuple);
	if (!TransactionIdIsValid(xmin))
		return false;
	return TransactionIdIsCurrentTransactionId(xmin) ||
		TransactionIdDidCommit(xmin);
}

/*
 * The chunk a TID points at, if it is there and usable.  Toast tuples are
 * never updated, so there are no HOT chains to follow beyond a redirect
 * left by pruning.
 */
static bool
fetch_chunk(TbToastReader *reader, ItemPointer tid, HeapTuple tuple)
{
	Page		page = heap_page(reader, ItemPointerGetBlockNumber(tid));
	OffsetNumber off = ItemPointerGetOffsetNumber(tid);
	ItemId		lp;

	if (off < FirstOffsetNumber || off > PageGetMaxOffsetNumber(page))
		return false;
	lp = PageGetItemId(page, off);
	if (ItemIdIsRedirected(lp))
	{
		off = ItemIdGetRedirect(lp);
		lp = PageGetItemId(page, off);
	}
	if (!ItemIdIsNormal(lp))
		return false;
	tuple->t_data = (HeapTupleHeader) PageGetItem(page, lp);
	tuple->t_len = ItemIdGetLength(lp);
	ItemPointerSet(&tuple->t_self, ItemPointerGetBlockNumber(tid), off);
	tuple->t_tableOid = RelationGetRelid(reader->toastrel);
	return chunk_usable(tuple->t_data);
}

/*
 * Fetch an on-disk external value whose toast pointer names this reader's
 * toast relation; returns it palloc'd in the current memory context, still
 * compressed if it was stored compressed.  Derived from toast_fetch_datum()
 * in src/backend/access/common/detoast.c and heap_fetch_toast_slice() in
 * src/backend/access/heap/heaptoast.c, PostgreSQL 18: the whole value only
 * (no slices), and chunks looked up and read through private pages instead
 * of an index scan over buffers.  The checks and their errors are core's.
 */
struct varlena *
tb_toast_fetch(TbToastReader *reader, struct varlena *attr,
			   uint64 *pages, uint64 *rereads)
{
	struct varatt_external toast_pointer;
	TupleDesc	desc = RelationGetDescr(reader->toastrel);
	struct varlena *result;
	Oid			valueid;
	int32		attrsize;
	int32		totalchunks;
	int32		expected = 0;

	Assert(VARATT_IS_EXTERNAL_ONDISK(attr));
	VARATT_EXTERNAL_GET_POINTER(toast_pointer, attr);
	Assert(toast_pointer.va_toastrelid == RelationGetRelid(reader->toastrel));

	reader->pages = pages;
	reader->rereads = rereads;
	valueid = toast_pointer.va_valueid;
	attrsize = VARATT_EXTERNAL_GET_EXTSIZE(toast_pointer);
	totalchunks = ((attrsize - 1) / TOAST_MAX_CHUNK_SIZE) + 1;

	result = (struct varlena *) palloc(attrsize + VARHDRSZ);
	if (VARATT_EXTERNAL_IS_COMPRESSED(toast_pointer))
		SET_VARSIZE_COMPRESSED(result, attrsize + VARHDRSZ);
	else
		SET_VARSIZE(result, attrsize + VARHDRSZ);
	if (attrsize == 0)
		return result;

	collect_chunks(reader, valueid);
	for (int i = 0; i < reader->nchunks; i++)
	{
		HeapTupleData tuple;
		bool		isnull;
		int32		seq;
		Pointer		chunk;
		char	   *chunkdata;
		int32		chunksize;
		int32		expected_size;

		if (!fetch_chunk(reader, &reader->chunks[i].tid, &tuple))
			continue;

		seq = DatumGetInt32(heap_getattr(&tuple, 2, desc, &isnull));
		chunk = DatumGetPointer(heap_getattr(&tuple, 3, desc, &isnull));
		if (!VARATT_IS_EXTENDED(chunk))
		{
			chunksize = VARSIZE(chunk) - VARHDRSZ;
			chunkdata = VARDATA(chunk);
		}
		else if (VARATT_IS_SHORT(chunk))
		{
			chunksize = VARSIZE_SHORT(chunk) - VARHDRSZ_SHORT;
			chunkdata = VARDATA_SHORT(chunk);
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg_internal("found toasted toast chunk for toast value %u in %s",
									 valueid, RelationGetRelationName(reader->toastrel))));

		if (seq != reader->chunks[i].seq || seq != expected)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg_internal("unexpected chunk number %d (expected %d) for toast value %u in %s",
									 seq, expected, valueid,
									 RelationGetRelationName(reader->toastrel))));
		if (seq >= totalchunks)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg_internal("unexpected chunk number %d (out of range %d..%d) for toast value %u in %s",
									 seq, 0, totalchunks - 1, valueid,
									 RelationGetRelationName(reader->toastrel))));
		expected_size = seq < totalchunks - 1 ? TOAST_MAX_CHUNK_SIZE
			: attrsize - ((totalchunks - 1) * TOAST_MAX_CHUNK_SIZE);
		if (chunksize != expected_size)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg_internal("unexpected chunk size %d (expected %d) in chunk %d of %d for toast value %u in %s",
									 chunksize, expected_size, seq, totalchunks,
									 valueid, RelationGetRelationName(reader->toastrel))));

		memcpy(VARDATA(result) + seq * TOAST_MAX_CHUNK_SIZE, chunkdata, chunksize);
		expected++;
	}
	if (expected != totalchunks)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg_internal("missing chunk number %d for toast value %u in %s",
								 expected, valueid,
								 RelationGetRelationName(reader->toastrel))));
	return result;
}
