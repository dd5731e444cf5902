/*-------------------------------------------------------------------------
 *
 * page_source.c
 *	  A participant's private copies of a temporary relation's pages, found
 *	  by block number, for the scans that jump around (index scans).
 *
 * A sequential scan reads each page once and keeps only the one in hand
 * (temp_scan.c).  An index scan descends the same inner pages for every
 * key and comes back to heap pages, so each worker keeps copies in a small
 * cache, swept by a clock as core's local buffers are.
 *
 * Where a page comes from depends on who asks:
 *	- the leader reads it in its own local buffers, as a stock scan would,
 *	  and keeps the buffer pinned while the caller looks at it: no copy;
 *	- a worker reads the relation's file (page_reader.c), which the leader
 *	  wrote before workers started, into its cache.
 * Nothing is written back, no hint bit is set, nothing is pruned: a copy
 * is the page as it was, and during a parallel query the leader changes
 * index and heap pages only in ways any reader takes whole (hint bits,
 * entries marked dead), because nothing in the plan reads them through
 * local buffers but this file in the leader (plan_walk.c), and statements
 * that run code which might do so get no index scan of ours (planner.c).
 *
 * A page returned by tb_page_source_get() stays valid until the next call;
 * one page at a time (the leaf being walked) can be held longer, until the
 * next hold or tb_page_source_close().  Consecutive requests for the same
 * page (heap tuples of neighbouring index entries) cost one comparison.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "storage/bufmgr.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "pg_tempbuf.h"

/*
 * The pages a worker's cache keeps: temp_buffers, within these bounds.  A
 * worker lives for one execution, and its cache's memory is new to it:
 * every page of memory first touched costs a fault and the kernel's
 * zeroing, more than reading the page again from the OS cache once the
 * cache is full of pages not asked for since.  16 MB keeps the inner pages
 * of every index in reach, and a nested loop's recent leaves and heap pages.
 */
#define TB_PAGE_SOURCE_MIN_PAGES	64
#define TB_PAGE_SOURCE_MAX_PAGES	2048

typedef struct PageKey
{
	Oid			relid;
	BlockNumber blkno;
} PageKey;

typedef struct PageEntry
{
	PageKey		key;			/* hash key */
	int			slot;
} PageEntry;

typedef struct PageSlot
{
	PageKey		key;			/* relid InvalidOid: free */
	bool		referenced;		/* since the clock hand last passed */
	bool		held;			/* by tb_page_source_hold(): not a victim */
	char	   *data;
} PageSlot;

/* What one get or hold returned: the page and where it lives. */
typedef struct PageRef
{
	PageKey		key;			/* relid InvalidOid: none */
	Buffer		buffer;			/* leader: pinned; worker: InvalidBuffer */
	int			slot;			/* worker: its slot */
	Page		page;
} PageRef;

struct TbPageSource
{
	MemoryContext cxt;
	bool		from_buffers;	/* the leader */
	PageRef		current;		/* the last tb_page_source_get() */
	PageRef		held;

	/* worker: the cache */
	HTAB	   *lookup;
	PageSlot   *slots;
	int			capacity;
	int			used;			/* slots given a page so far */
	int			hand;
	char	   *scratch;		/* page_reader.c's reread buffer */

	/* since tb_page_source_take_counts() last asked */
	uint64		reads;			/* pages looked up in buffers or read from files */
	uint64		rereads;		/* reads page_reader.c had to repeat */
};

TbPageSource *
tb_page_source_create(MemoryContext cxt)
{
	TbPageSource *src = MemoryContextAllocZero(cxt, sizeof(TbPageSource));
	HASHCTL		ctl;

	src->cxt = cxt;
	src->from_buffers = !IsParallelWorker();
	src->current.buffer = src->held.buffer = InvalidBuffer;
	if (src->from_buffers)
		return src;

	src->capacity = Min(Max(num_temp_buffers, TB_PAGE_SOURCE_MIN_PAGES),
						TB_PAGE_SOURCE_MAX_PAGES);
	src->slots = MemoryContextAllocZero(cxt, sizeof(PageSlot) * src->capacity);
	src->scratch = MemoryContextAlloc(cxt, BLCKSZ);
	ctl.keysize = sizeof(PageKey);
	ctl.entrysize = sizeof(PageEntry);
	ctl.hcxt = cxt;
	src->lookup = hash_create("pg_tempbuf private pages",
							  Min(src->capacity, 1024), &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	return src;
}

/* Let go of what a reference pins or holds. */
static void
unref(TbPageSource *src, PageRef *ref)
{
	if (BufferIsValid(ref->buffer))
		ReleaseBuffer(ref->buffer);
	else if (ref == &src->held && ref->key.relid != InvalidOid)
		src->slots[ref->slot].held = false;
	ref->key.relid = InvalidOid;
	ref->buffer = InvalidBuffer;
}

/* Leader, at the end of the scan (or before an error's cleanup would). */
void
tb_page_source_close(TbPageSource *src)
{
	unref(src, &src->current);
	unref(src, &src->held);
}

/* A slot for a new page: a fresh one while there are any, else the clock's. */
static int
claim_slot(TbPageSource *src)
{
	if (src->used < src->capacity)
	{
		int			slot = src->used++;

		src->slots[slot].data = MemoryContextAlloc(src->cxt, BLCKSZ);
		return slot;
	}
	for (;;)
	{
		PageSlot   *victim = &src->slots[src->hand];
		int			slot = src->hand;

		src->hand = (src->hand + 1) % src->capacity;
		/* Nor the page the last get returned: its caller may still look at it. */
		if (victim->referenced || victim->held ||
			(src->current.key.relid != InvalidOid && src->current.slot == slot))
		{
			victim->referenced = false;
			continue;
		}
		hash_search(src->lookup, &victim->key, HASH_REMOVE, NULL);
		return slot;
	}
}

/* Worker: the cached copy of the page, read from the file when missing. */
static int
cached_slot(TbPageSource *src, Relation rel, const PageKey *key)
{
	PageEntry  *entry;
	PageSlot   *slot;
	bool		found;
	int			slotno;

	entry = hash_search(src->lookup, key, HASH_FIND, NULL);
	if (entry)
	{
		src->slots[entry->slot].referenced = true;
		return entry->slot;
	}

	slotno = claim_slot(src);
	slot = &src->slots[slotno];
	slot->key.relid = InvalidOid;
	src->rereads += tb_read_page(rel, MAIN_FORKNUM, key->blkno, slot->data, src->scratch);
	src->reads++;
	entry = hash_search(src->lookup, key, HASH_ENTER, &found);
	entry->slot = slotno;
	slot->key = *key;
	slot->referenced = true;
	return slotno;
}

static Page
fill_ref(TbPageSource *src, PageRef *ref, Relation rel, BlockNumber blkno)
{
	PageKey		key;

	memset(&key, 0, sizeof(key));
	key.relid = RelationGetRelid(rel);
	key.blkno = blkno;
	if (ref->key.relid == key.relid && ref->key.blkno == key.blkno)
		return ref->page;

	unref(src, ref);
	if (src->from_buffers)
	{
		ref->buffer = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
		ref->page = BufferGetPage(ref->buffer);
		src->reads++;
	}
	else
	{
		ref->slot = cached_slot(src, rel, &key);
		ref->page = (Page) src->slots[ref->slot].data;
		if (ref == &src->held)
			src->slots[ref->slot].held = true;
	}
	ref->key = key;
	return ref->page;
}

/*
 * Block blkno of rel's main fork, valid until the next call (the held page
 * excepted).
 */
Page
tb_page_source_get(TbPageSource *src, Relation rel, BlockNumber blkno)
{
	return fill_ref(src, &src->current, rel, blkno);
}

/*
 * The same, valid until the next hold or tb_page_source_close(), whatever
 * is got meanwhile.
 */
Page
tb_page_source_hold(TbPageSource *src, Relation rel, BlockNumber blkno)
{
	return fill_ref(src, &src->held, rel, blkno);
}

/* The pages read (and reread) since the last call, for EXPLAIN. */
void
tb_page_source_take_counts(TbPageSource *src, uint64 *reads, uint64 *rereads)
{
	*reads = src->reads;
	*rereads = src->rereads;
	src->reads = src->rereads = 0;
}
