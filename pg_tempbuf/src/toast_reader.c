/*-------------------------------------------------------------------------
 *
 * toast_reader.c
 *	  Fetch out-of-line values of a temporary table without local buffers.
 *
 * Core fetches a toasted value through the toast relation's index and heap
 * in shared or local buffers; a parallel worker has no local buffers, so a
 * Temp Seq Scan or Temp Index Scan fetches its out-of-line values itself.
 * Every participant reads the toast relation's pages through its own page
 * source (page_source.c: the leader its local buffers, workers the files
 * that the leader flushed first), looks the value up in the btree on
 * (chunk_id, chunk_seq) with btree_reader.c, and assembles the chunks as
 * heap_fetch_toast_slice() does.  The result stays as stored: a compressed
 * value comes back inline and compressed, and core's detoast_attr()
 * decompresses it (pglz or lz4) without touching any relation.
 *
 * Nothing writes the toast relation while a parallel query runs, so the
 * pages read are a static, consistent tree (btree_reader.c says how it
 * still reads one left with an incomplete split or half-deleted pages).
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
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "btree_reader.h"
#include "compat.h"
#include "localbuf_access.h"
#include "page_guard.h"
#include "page_source.h"
#include "toast_reader.h"

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
	TbPageSource *pages;
	TbBtreeScan *btree;
	ScanKeyData key;			/* chunk_id = the value's id */

	ChunkRef   *chunks;			/* the value being fetched */
	int			nchunks;
	int			maxchunks;
};

/* Add what the page source read since the last call to the caller's counters. */
static void
count_reads(TbToastReader *reader, uint64 *pages, uint64 *rereads)
{
	uint64		read;
	uint64		reread;

	tb_page_source_take_counts(reader->pages, &read, &reread);
	*pages += read;
	*rereads += reread;
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
	reader->pages = tb_page_source_create(CurrentMemoryContext);

	/* The metapage: only heapkeyspace btrees (version 4, every temp table's). */
	meta = BTPageGetMeta(tb_page_source_get(reader->pages, reader->indexrel,
											BTREE_METAPAGE));
	count_reads(reader, pages, rereads);
	if (meta->btm_magic != BTREE_MAGIC || meta->btm_version < BTREE_VERSION)
	{
		*reason = "the toast relation's index predates btree version 4";
		tb_toast_reader_close(reader);
		return NULL;
	}
	reader->btree = tb_btree_scan_begin(reader->indexrel, reader->pages,
										CurrentMemoryContext);
	ScanKeyInit(&reader->key, 1, BTEqualStrategyNumber, F_OIDEQ, (Datum) 0);
	reader->maxchunks = 16;
	reader->chunks = palloc(sizeof(ChunkRef) * reader->maxchunks);
	return reader;
}

void
tb_toast_reader_close(TbToastReader *reader)
{
	tb_page_source_close(reader->pages);
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

/* Does the table's toast relation hold anything a worker might fetch? */
bool
tb_toast_has_data(Relation rel)
{
	Oid			toastrelid = rel->rd_rel->reltoastrelid;
	Relation	toastrel;
	BlockNumber nblocks;

	if (!OidIsValid(toastrelid))
		return false;
	toastrel = table_open(toastrelid, AccessShareLock);
	nblocks = RelationGetNumberOfBlocks(toastrel);
	table_close(toastrel, AccessShareLock);
	return nblocks > 0;
}

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

/*
 * Leader: rel's toast relation and its index, opened into rels[] for a
 * scan that lists their pages in its pool for workers (leader_pages.c);
 * returns how many, 0 without a toast relation.
 */
int
tb_toast_relations_open(Relation rel, Relation *rels)
{
	const char *reason;
	Oid			indexoid;

	if (!OidIsValid(rel->rd_rel->reltoastrelid))
		return 0;
	rels[0] = table_open(rel->rd_rel->reltoastrelid, AccessShareLock);
	indexoid = toast_index(rels[0], &reason);
	if (!OidIsValid(indexoid))
		return 1;
	rels[1] = index_open(indexoid, AccessShareLock);
	return 2;
}

void
tb_toast_relations_close(Relation *rels, int nrels)
{
	if (nrels > 1)
		index_close(rels[1], AccessShareLock);
	if (nrels > 0)
		table_close(rels[0], AccessShareLock);
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
 * TID), into reader->chunks.
 */
static void
collect_chunks(TbToastReader *reader, Oid valueid)
{
	TupleDesc	desc = RelationGetDescr(reader->indexrel);
	ItemPointerData tid;

	reader->nchunks = 0;
	reader->key.sk_argument = ObjectIdGetDatum(valueid);
	tb_btree_scan_set_keys(reader->btree, &reader->key, 1);
	while (tb_btree_scan_next(reader->btree, &tid))
	{
		bool		isnull;
		int32		seq = DatumGetInt32(index_getattr(tb_btree_scan_tuple(reader->btree),
													  2, desc, &isnull));

		add_chunk(reader, seq, &tid);
	}
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
	Page		page = tb_page_source_get(reader->pages, reader->toastrel,
										  ItemPointerGetBlockNumber(tid));
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
 * (no slices), and chunks looked up and read through the page source instead
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
	count_reads(reader, pages, rereads);
	if (expected != totalchunks)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg_internal("missing chunk number %d for toast value %u in %s",
								 expected, valueid,
								 RelationGetRelationName(reader->toastrel))));
	return result;
}
