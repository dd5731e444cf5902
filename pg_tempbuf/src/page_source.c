/*-------------------------------------------------------------------------
 *
 * page_source.c
 *	  A participant's private copies of a temporary relation's pages, found
 *	  by block number, for the scans that jump around (index scans).
 *
 * A sequential scan reads each page once and keeps only the one in hand
 * (temp_scan.c).  An index scan descends the same inner pages for every
 * key and comes back to heap pages, so each participant keeps copies in a
 * cache of temp_buffers pages (the memory a session reading the table
 * through local buffers would have used), swept by a clock as core's local
 * buffers are.
 *
 * Where a copy comes from depends on who asks:
 *	- the leader copies it out of its own local buffers, reading the page
 *	  into one when it is not there, as a stock scan would;
 *	- a worker reads the relation's file (page_reader.c), which the leader
 *	  wrote before workers started.
 * Nothing is written back, no hint bit is set, nothing is pruned: a copy
 * is the page as it was, and during a parallel query the leader changes
 * index and heap pages only in ways any reader takes whole (hint bits,
 * entries marked dead), because nothing in the plan reads them through
 * local buffers but this file in the leader (plan_walk.c), and statements
 * that run code which might do so get no index scan of ours (planner.c).
 *
 * A page returned stays valid until the next call: callers that need one
 * for longer (the leaf being walked) copy it.
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

/* The fewest pages a cache keeps, whatever temp_buffers says. */
#define TB_PAGE_SOURCE_MIN_PAGES	64

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
	char	   *data;
} PageSlot;

struct TbPageSource
{
	MemoryContext cxt;
	HTAB	   *lookup;
	PageSlot   *slots;
	int			capacity;
	int			used;			/* slots given a page so far */
	int			hand;
	char	   *scratch;		/* page_reader.c's reread buffer */
	TbPageSourceCounters counts;
};

TbPageSource *
tb_page_source_create(MemoryContext cxt)
{
	TbPageSource *src = MemoryContextAllocZero(cxt, sizeof(TbPageSource));
	HASHCTL		ctl;

	src->cxt = cxt;
	src->capacity = Max(num_temp_buffers, TB_PAGE_SOURCE_MIN_PAGES);
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

const TbPageSourceCounters *
tb_page_source_counts(TbPageSource *src)
{
	return &src->counts;
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
		if (victim->referenced)
		{
			victim->referenced = false;
			continue;
		}
		hash_search(src->lookup, &victim->key, HASH_REMOVE, NULL);
		return slot;
	}
}

/* Copy the page out of the leader's own local buffers. */
static void
copy_from_local_buffer(Relation rel, BlockNumber blkno, char *dest)
{
	Buffer		buffer = ReadBufferExtended(rel, MAIN_FORKNUM, blkno,
											RBM_NORMAL, NULL);

	memcpy(dest, BufferGetPage(buffer), BLCKSZ);
	ReleaseBuffer(buffer);
}

/*
 * Block blkno of rel's main fork, as a private copy valid until the next
 * call.
 */
Page
tb_page_source_get(TbPageSource *src, Relation rel, BlockNumber blkno)
{
	PageKey		key;
	PageEntry  *entry;
	bool		found;
	PageSlot   *slot;
	int			slotno;

	memset(&key, 0, sizeof(key));
	key.relid = RelationGetRelid(rel);
	key.blkno = blkno;
	entry = hash_search(src->lookup, &key, HASH_FIND, NULL);
	if (entry)
	{
		slot = &src->slots[entry->slot];
		slot->referenced = true;
		src->counts.hits++;
		return (Page) slot->data;
	}

	slotno = claim_slot(src);
	entry = hash_search(src->lookup, &key, HASH_ENTER, &found);
	entry->slot = slotno;
	slot = &src->slots[slotno];
	slot->key = key;
	slot->referenced = true;

	PG_TRY();
	{
		if (IsParallelWorker())
			src->counts.rereads += tb_read_page(rel, blkno, slot->data,
												src->scratch);
		else
			copy_from_local_buffer(rel, blkno, slot->data);
	}
	PG_CATCH();
	{
		hash_search(src->lookup, &key, HASH_REMOVE, NULL);
		slot->key.relid = InvalidOid;
		PG_RE_THROW();
	}
	PG_END_TRY();
	src->counts.read++;
	return (Page) slot->data;
}
