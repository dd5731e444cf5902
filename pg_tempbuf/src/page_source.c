/*-------------------------------------------------------------------------
 *
 * page_source.c
 *	  The one place where a participant of a parallel plan gets a page of a
 *	  temporary relation: from the leader's own local buffers, as a copy out
 *	  of the leader's memory, or from the relation's file.  Every scan of
 *	  ours (seq, index, bitmap, toast) asks here, in one of two ways:
 *	  sequential batches (the Temp Seq Scan, which keeps only the page in
 *	  hand) or random access through a small cache (index scans, toast).
 *
 * Parallel workers cannot use the leader's local buffers (they have none,
 * and InitLocalBuffers() refuses to run in a worker), so a worker reads
 * pages through smgr into a private copy after the leader flushed the
 * relation's dirty pages.  Nothing is ever written back: no hint bits, no
 * pruning; core_copies.c decides tuple visibility on the copy.
 *
 * A page can still be read while the leader writes it back on eviction,
 * after code it runs above Gather set hint bits on it: a torn read then
 * mixes two images that differ in hint bits only, which give the same
 * answer (page_guard.c keeps the pages the leader could prune from such a
 * race).  The page checksum, where the cluster has them, catches the tear,
 * and pg_tempbuf.verify_reread (read twice, compare) when asked to; a page
 * that fails is read again, and one that keeps failing is an error.
 *
 * On Linux a worker reads the pages the leader holds in its local buffers
 * instead, in the memfd the leader's pool lives in (shared_pool.c): no
 * write by the leader, no read call per page, no checksum, and the buffer
 * is the newest image of the page.  A page the leader listed and pinned is
 * read in place: no eviction, buffer reuse or prune can change it during
 * the scan (page_guard.c).  Any other is copied, the buffer's descriptor
 * read before and after the page, and should the tags differ, the page is
 * read from the file, where an eviction wrote it.  Nodes with no shared
 * state to list pages in find them in the pool's directory.  A reader that
 * takes little of a page it may not keep (an index scan's heap fetch)
 * peeks at it instead, in place or with pread() of the memfd where the
 * mapping would fault, and copies out only what it takes, checked as a
 * copy is.
 *
 * The forced races of pg_tempbuf.debug_hazard (temp_scan_hazard.c) pause a
 * read here, in its middle, through tb_mid_read_hook; nothing else of the
 * tests reaches into a read.
 *
 * Random access keeps copies in a small cache, swept by a clock as core's
 * local buffers are: an index scan descends the same inner pages for every
 * key and comes back to heap pages.  There the leader reads its own local
 * buffers, as a stock scan would, and keeps the buffer pinned while the
 * caller looks at it: no copy.  During a parallel query the leader changes
 * index and heap pages only in ways any reader takes whole (hint bits,
 * entries marked dead), because nothing in the plan reads them through
 * local buffers but this file in the leader (plan_walk.c), and statements
 * that run code which might do so get no index scan of ours (scan_paths.c).
 * A page returned by tb_page_source_get() stays valid until the next call;
 * one page at a time (the leaf being walked) can be held longer, until the
 * next hold or tb_page_source_close().  Consecutive requests for the same
 * page (heap tuples of neighbouring index entries) cost one comparison.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/xlog.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "compat.h"
#include "guc.h"
#include "page_source.h"
#include "shared_pool.h"

#define TB_READ_ATTEMPTS	10

/* A heap page's header and every line pointer it can have. */
#define PEEK_PREFIX (SizeOfPageHeaderData + sizeof(ItemIdData) * MaxHeapTuplesPerPage)

TbMidReadHook tb_mid_read_hook = NULL;
void	   *tb_mid_read_arg = NULL;

/* Worker: compare every read of a file, or copy from the leader's pool,
 * with a second one (see below). */
static bool compare_file_reads = false;
static bool compare_leader_copies = false;

/* Worker: pages the leader's pool holds come from there (see below). */
static bool read_leader_pool = false;

/* Worker: the leader may prune a page while it is read (see below). */
static bool leader_may_prune = false;

/*
 * A page counts as core counts a backend's reads of local buffers: one a
 * worker found in the leader's pool as a hit, one read from the file as a
 * read, so that EXPLAIN (BUFFERS), auto_explain and pg_stat_statements see
 * a parallel scan's pages as they see the serial scan's, and add the
 * workers' to the leader's as they do for shared buffers.  The leader's
 * reads through its own buffers core counts.  A file read makes the pool's
 * census walk the pool again at the next planning (localbuf_access.c):
 * only after a scan that read files, bounded by the buffers in use.
 */
static inline void
count_pool_hit(void)
{
	if (IsParallelWorker())
		pgBufferUsage.local_blks_hit++;
}

static inline void
count_file_read(void)
{
	pgBufferUsage.local_blks_read++;
}

/*
 * Worker of an index or bitmap scan under code the leader runs that may
 * read the table (a function above Gather): that code may prune a heap
 * page in the leader's buffers, and an eviction write it back while this
 * worker reads the file, which would hand it half of each image.  A
 * checksum catches that; without data checksums, each read is compared
 * with a second one, as pg_tempbuf.verify_reread does.  The worker runs
 * one statement and exits: the setting never outlives it.
 */
void
tb_page_source_guard_file_reads(void)
{
	Assert(IsParallelWorker());
	/* A prune leaves the descriptor as it was: no page is peeked at. */
	leader_may_prune = true;
	if (tb_debug_unprotected)
		return;
	if (!DataChecksumsEnabled())
		compare_file_reads = true;
	/* A copy out of the leader's pool has no checksum to verify. */
	compare_leader_copies = true;
}

/*
 * Sequential access, from the file: read block blkno of rel's fork into
 * page, which must be BLCKSZ bytes; scratch is a second such buffer for the
 * reread check.  Returns the number of rereads it needed.
 */
int
tb_page_source_read_file(Relation rel, ForkNumber fork, BlockNumber blkno,
						 char *page, char *scratch)
{
	bool		compare = tb_verify_reread || compare_file_reads;

	for (int attempt = 0;; attempt++)
	{
		bool		ok;

		smgrread(RelationGetSmgr(rel), fork, blkno, page);
		if (tb_mid_read_hook &&
			tb_mid_read_hook(blkno, page, false, false, tb_mid_read_arg))
		{
			/* What a read racing the hook's change could have got. */
			smgrread(RelationGetSmgr(rel), fork, blkno, scratch);
			memcpy(page + BLCKSZ / 2, scratch + BLCKSZ / 2, BLCKSZ / 2);
			tb_mid_read_hook(blkno, page, false, true, tb_mid_read_arg);
		}
		ok = tb_page_is_verified((Page) page, blkno);
		if (ok && compare)
		{
			smgrread(RelationGetSmgr(rel), fork, blkno, scratch);
			ok = memcmp(page, scratch, BLCKSZ) == 0;
		}
		if (ok)
		{
			count_file_read();
			return attempt;
		}

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
 * The block as the file holds it now, unverified: for a look at what the
 * leader last wrote (page_guard.c), and for the forced races that replay
 * an eviction (temp_scan_hazard.c).
 */
void
tb_page_source_read_image(Relation rel, ForkNumber fork, BlockNumber blkno,
						  char *page)
{
	smgrread(RelationGetSmgr(rel), fork, blkno, page);
}

/* Does the leader's descriptor, as read, show block blkno of file? */
static bool
holds_block(const BufferDesc *desc, TbRelFileId file, BlockNumber blkno)
{
	TbBufState	state = TbReadBufState(desc);

	return (state & BM_VALID) && TbTagMatchesFileId(&desc->tag, file) &&
		TbTagForkNum(&desc->tag) == MAIN_FORKNUM && desc->tag.blockNum == blkno;
}

/*
 * Worker: the page in the leader's buffer, read in place from the pool's
 * mapping (shared_pool.c), or NULL when the buffer no longer holds it.
 * Only for a page the leader keeps pinned until the scan ends: nothing
 * then changes it but hint bits, which readers of shared buffers tolerate
 * too (page_guard.c).
 */
const char *
tb_page_source_leader_page(Relation rel, const TbLeaderPage *page)
{
	if (!holds_block(tb_shared_pool_desc(page->buf_id), TbRelationFileId(rel),
					 page->blkno))
		return NULL;
	count_pool_hit();
	return tb_shared_pool_page(page->buf_id);
}

/*
 * Worker: copy one page of rel out of the leader's local buffers (the
 * pool's mapping) into dest: its buffer descriptor, the page, the
 * descriptor again, in that order; false when the buffer did not hold the
 * page in both looks (the leader evicted it meanwhile, and the caller
 * reads the file, where the eviction wrote it).  For pages the leader may
 * still evict; a page it keeps pinned is read in place instead.
 *
 * Two looks at the descriptor prove the copy whole only if the buffer did
 * not hold another page between them and then this one again (A, B, A).
 * What keeps that from happening, and the test that fails without it:
 *
 *	- The leader's part of a parallel scan brings no page into a buffer:
 *	  a Temp Seq Scan reads pages it does not hold from the file
 *	  (tb_ts_load_page()), and the pages its workers copy are listed when
 *	  the scan starts.  Its index and bitmap scans do read through local
 *	  buffers, and a stock node above Gather may: to give this buffer back
 *	  to A they must first take every other buffer of the pool (core hands
 *	  them out round the clock, temp_buffers is at least 100), all within
 *	  this copy of 8 kB.
 *	- Code of the user's above Gather (a function, guard_pruning or
 *	  guard_reads in the plan) can take buffers without bound, and then
 *	  the scans pin nothing (page_guard.c): each copy is made twice and the
 *	  two compared (compare_leader_copies), which an A, B, A between them
 *	  fails.  test_guards.py's refill_during_copy under leader code forces
 *	  that change in the middle of a copy, and gives a wrong answer with
 *	  the comparison off.
 *	- A page the leader may prune (tb_page_may_be_pruned) is never copied
 *	  unpinned under such code: it is the leader's alone (page_guard.c).
 *
 * Under pg_tempbuf.debug_hazard the copy pauses in the middle of the page,
 * as a racing one could.
 */
static bool
copy_leader_once(Relation rel, const TbLeaderPage *page, char *dest)
{
	BufferDesc	before = *tb_shared_pool_desc(page->buf_id);
	TbRelFileId file = TbRelationFileId(rel);
	const char *from = tb_shared_pool_page(page->buf_id);
	bool		fired = false;

	pg_read_barrier();
	memcpy(dest, from, BLCKSZ / 2);
	if (tb_mid_read_hook)
		fired = tb_mid_read_hook(page->blkno, dest, true, false, tb_mid_read_arg);
	memcpy(dest + BLCKSZ / 2, from + BLCKSZ / 2, BLCKSZ / 2);
	if (fired)
		tb_mid_read_hook(page->blkno, dest, true, true, tb_mid_read_arg);
	pg_read_barrier();
	return holds_block(&before, file, page->blkno) &&
		holds_block(tb_shared_pool_desc(page->buf_id), file, page->blkno);
}

/*
 * The pages a worker's cache keeps: temp_buffers, within these bounds.  A
 * worker lives for one execution, and its cache's memory is new to it:
 * every page of memory first touched costs a fault and the kernel's
 * zeroing, more than reading the page again from the OS cache once the
 * cache is full of pages not asked for since.  16 MB keeps the inner pages
 * of every index in reach, and a nested loop's recent leaves and heap pages.
 * While every page came out of the leader's pool, a copy costs less than
 * the fault of a new slot: the cache stays at its smallest (measured on
 * TPC-H Q19's inner index scan: 0.14 ms a probe against 0.36 ms with
 * 2,048 slots).
 */
#define TB_PAGE_SOURCE_MIN_PAGES	64
#define TB_PAGE_SOURCE_MAX_PAGES	2048
#define TB_PAGE_SOURCE_POOL_PAGES	128

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

/*
 * The pages of one relation a worker may copy out of the leader's pool, as
 * a scan listed them.  One registry per worker, which runs one parallel
 * plan: every page source of the worker (a scan's, its toast reader's)
 * copies whatever some scan of the plan listed.
 */
typedef struct LeaderPages
{
	Oid			relid;
	const TbLeaderPage *pages;	/* sorted by block, in the query's DSM */
	int			npages;
} LeaderPages;

static LeaderPages *leader_registry = NULL;
static int	leader_registry_used = 0;
static int	leader_registry_size = 0;

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
	bool		read_file;		/* a page came from the file */
	int			hand;
	char	   *scratch;		/* the reread buffer of a file read */

	/* worker: the last page peeked at, and the leader's buffer it was in */
	PageKey		peeked;
	int			peeked_buf_id;
	char	   *peek_prefix;	/* header and line pointers of the page peeked at */

	/* since tb_page_source_take_counts() last asked */
	uint64		reads;			/* pages looked up in buffers or read from files */
	uint64		rereads;		/* file reads that had to be repeated */
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

/*
 * Worker: copy relid's blocks listed in pages[] (sorted by block, in the
 * leader's pool when the scan started) out of the pool, and read the
 * others from the file.  A page the leader held dirty is not on disk: the
 * scan must give this list only where the worker maps the pool
 * (tb_shared_pool_attach()).  A buffer the leader has evicted since, or
 * given to another page, fails the copy's descriptor check, and the page
 * is read from the file, where the eviction wrote it.
 */
void
tb_page_source_copy_from_leader(Oid relid, const TbLeaderPage *pages, int npages)
{
	Assert(IsParallelWorker());
	if (leader_registry_used == leader_registry_size)
	{
		int			size = Max(8, leader_registry_size * 2);

		leader_registry = leader_registry == NULL ?
			MemoryContextAlloc(TopMemoryContext, sizeof(LeaderPages) * size) :
			repalloc(leader_registry, sizeof(LeaderPages) * size);
		leader_registry_size = size;
	}
	leader_registry[leader_registry_used++] = (LeaderPages) {relid, pages, npages};
}

static int
compare_leader_block(const void *key, const void *member)
{
	BlockNumber blkno = *(const BlockNumber *) key;
	BlockNumber other = ((const TbLeaderPage *) member)->blkno;

	return blkno < other ? -1 : blkno > other ? 1 : 0;
}

/* The entry for blkno in a leader's list (sorted by block), or NULL. */
const TbLeaderPage *
tb_leader_page_find(const TbLeaderPage *pages, int npages, BlockNumber blkno)
{
	return bsearch(&blkno, pages, npages, sizeof(TbLeaderPage), compare_leader_block);
}

/*
 * Worker: one page out of the leader's pool into dest; false when its
 * buffer no longer holds it.  Under code that may prune it in the leader,
 * two equal copies (scratch holds the second).
 */
static bool
copy_verified(Relation rel, const TbLeaderPage *page, char *dest, char *scratch)
{
	for (int attempt = 0;; attempt++)
	{
		bool		valid = copy_leader_once(rel, page, dest);

		if (valid && compare_leader_copies)
		{
			valid = copy_leader_once(rel, page, scratch);
			if (valid && memcmp(dest, scratch, BLCKSZ) != 0)
			{
				if (attempt + 1 >= TB_READ_ATTEMPTS)
					ereport(ERROR,
							(errcode(ERRCODE_DATA_CORRUPTED),
							 errmsg("could not copy a consistent image of block %u of temporary table \"%s\" from the leader",
									page->blkno, RelationGetRelationName(rel)),
							 errdetail("Two copies differed %d times in a row.",
									   TB_READ_ATTEMPTS)));
				CHECK_FOR_INTERRUPTS();
				pg_usleep(100L * (attempt + 1));
				continue;
			}
		}
		if (valid)
			count_pool_hit();
		return valid;
	}
}

/*
 * Worker: a page a scan listed unpinned, copied out of the leader's pool
 * into dest; false when its buffer no longer holds it (read the file).
 */
bool
tb_page_source_copy_listed(Relation rel, const TbLeaderPage *page, char *dest, char *scratch)
{
	Assert(IsParallelWorker() && !page->pinned);
	return copy_verified(rel, page, dest, scratch);
}

/*
 * Worker of a partial scan whose leader may run user code while it reads:
 * that code may give a buffer this worker copies to another page and back
 * between the copy's two looks at its descriptor; two equal copies rule
 * that out (see copy_leader_once()).
 */
void
tb_page_source_verify_leader_copies(void)
{
	Assert(IsParallelWorker());
	if (!tb_debug_unprotected)
		compare_leader_copies = true;
}

/*
 * Worker of a node whose leader wrote nothing, its pool serving workers
 * (a node with no shared state of its own: tb_shared_pool_unreadable()):
 * every page of the plan's temporary relations the pool holds comes from
 * there.  The leader made sure its workers may open its descriptors, so a
 * refusal here is the system's surprise, and an error: the file would
 * miss the pages the leader holds dirty.
 */
void
tb_page_source_read_leader_pool(Relation rel)
{
	int			err;

	Assert(IsParallelWorker());
	if (read_leader_pool)
		return;
	err = tb_shared_pool_attach_leader();
	if (err != 0)
	{
		errno = err;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("parallel worker could not map the leader's local buffers to read temporary table \"%s\": %m",
						RelationGetRelationName(rel)),
				 errhint("SET pg_tempbuf.shared_pool = off makes the leader write the pages its workers read.")));
	}
	read_leader_pool = true;
}

/*
 * Worker: block blkno of rel copied out of the leader's pool where the
 * pool held it (tb_page_source_read_leader_pool()); false: read the file.
 */
bool
tb_page_source_copy_from_pool(Relation rel, BlockNumber blkno, char *dest, char *scratch)
{
	TbLeaderPage page;

	if (!read_leader_pool)
		return false;
	page.buf_id = tb_shared_pool_lookup(TbRelationFileId(rel), blkno);
	if (page.buf_id < 0)
		return false;
	page.blkno = blkno;
	return copy_verified(rel, &page, dest, scratch);
}

/*
 * Worker: the entry some scan listed for the page (the first pinned one,
 * if pinned_only), or NULL.
 */
static const TbLeaderPage *
listed_page(const PageKey *key, bool pinned_only)
{
	for (int i = 0; i < leader_registry_used; i++)
	{
		const LeaderPages *rel_pages = &leader_registry[i];
		const TbLeaderPage *page;

		if (rel_pages->relid != key->relid)
			continue;
		page = tb_leader_page_find(rel_pages->pages, rel_pages->npages, key->blkno);
		if (page != NULL && (page->pinned || !pinned_only))
			return page;
	}
	return NULL;
}

/* Worker: the page from the leader's buffer, if it holds it; false if not. */
static bool
copy_leader_page(TbPageSource *src, Relation rel, const PageKey *key, char *dest)
{
	const TbLeaderPage *page = listed_page(key, false);

	if (page != NULL)
		return copy_verified(rel, page, dest, src->scratch);
	return tb_page_source_copy_from_pool(rel, key->blkno, dest, src->scratch);
}

/*
 * Worker: the page where it lies in the leader's pool, when a scan listed
 * it pinned: the leader keeps it there, unchanged but for hint bits and
 * dead-item marks, until the scan ends, so it needs no copy.  Not under
 * pg_tempbuf.debug_hazard, whose races meet copies.
 */
static const char *
pinned_leader_page(Relation rel, const PageKey *key)
{
	const TbLeaderPage *page;

	if (tb_mid_read_hook != NULL)
		return NULL;
	page = listed_page(key, true);
	return page != NULL ? tb_page_source_leader_page(rel, page) : NULL;
}

/* Worker: len bytes at offset of buffer buf_id's page, by pread() of the memfd. */
static bool
read_pool_piece(int buf_id, Size offset, Size len, char *dest)
{
	off_t		page_at;
	int			fd = tb_shared_pool_file(buf_id, &page_at);

	return fd >= 0 && pread(fd, dest, len, page_at + (off_t) offset) == (ssize_t) len;
}

static bool
same_page(const PageKey *a, const PageKey *b)
{
	return a->relid == b->relid && a->blkno == b->blkno;
}

/*
 * Worker: the leader's buffer that holds the page now, to peek at in place,
 * or -1: none, or one a scan listed pinned (read in place by
 * tb_page_source_get()).
 */
static int
peekable_buffer(const PageKey *key, TbRelFileId file)
{
	const TbLeaderPage *listed = listed_page(key, false);
	int			buf_id;

	if (listed != NULL)
		buf_id = listed->pinned ? -1 : listed->buf_id;
	else if (read_leader_pool)
		buf_id = tb_shared_pool_lookup(file, key->blkno);
	else
		buf_id = -1;
	if (buf_id < 0 || !holds_block(tb_shared_pool_desc(buf_id), file, key->blkno))
		return -1;
	return buf_id;
}

/*
 * Worker: block blkno of rel as it lies in the leader's pool, for a reader
 * that takes a row or two out of it although the leader has not pinned it
 * (a page the directory or an unpinned entry of a scan's list names); NULL
 * where the page source must serve: the page in hand (the last get's, one
 * comparison there), no such page, a pinned one (tb_page_source_get() reads
 * it in place), or a page the leader may prune, which changes no descriptor
 * (tb_page_source_guard_file_reads()).  The leader may evict the page and
 * read another into its buffer at any moment: the reader copies out what it
 * takes (tb_page_source_peek_copy(), bounds checked), and looks at the copy
 * only once tb_page_source_peek_held() says the buffer held the page
 * throughout, as a copy of the whole page checks the descriptor before and
 * after.
 *
 * How the page is read decides the price of a nested loop's inner index
 * scan, one row from each of many scattered pages.  A worker is a fresh
 * process: the first touch of a page in its mapping is a page fault, the
 * kernel maps the 64 kB around it (a 2 MB huge page where it gives the pool
 * those), and tears it all down when the worker exits, which the leader
 * waits for.  Measured here, one random page a read: 3.6 us a page that
 * way, against 1.6 us for two pread() calls of the memfd (its header and
 * line pointers, then the row), which map nothing.  So a page in a part of
 * the mapping this worker has not touched comes back as a private copy of
 * its header and line pointers, and the row by pread(); a second row of
 * the same page, a page already mapped, and any page of a pool in huge
 * pages (one fault maps 2 MB) is read in place
 * (tb_shared_pool_read_in_place(); pg_tempbuf.debug_peek forces one way).
 */
const char *
tb_page_source_peek(TbPageSource *src, Relation rel, BlockNumber blkno, TbPeek *peek)
{
	PageKey		key;
	bool		again;

	if (src->from_buffers || leader_may_prune)
		return NULL;
	memset(&key, 0, sizeof(key));
	key.relid = RelationGetRelid(rel);
	key.blkno = blkno;
	if (same_page(&src->current.key, &key))
		return NULL;
	peek->file = TbRelationFileId(rel);
	peek->blkno = blkno;
	again = same_page(&src->peeked, &key) &&
		holds_block(tb_shared_pool_desc(src->peeked_buf_id), peek->file, blkno);
	if (again)
		peek->buf_id = src->peeked_buf_id;
	else if ((peek->buf_id = peekable_buffer(&key, peek->file)) < 0)
		return NULL;
	src->peeked = key;
	src->peeked_buf_id = peek->buf_id;
	pg_read_barrier();
	/* pg_tempbuf.debug_hazard evict_during_batch gives the buffer away here. */
	peek->paused = tb_mid_read_hook != NULL &&
		tb_mid_read_hook(blkno, NULL, true, false, tb_mid_read_arg);
	src->reads++;
	count_pool_hit();
	if (tb_debug_peek == TB_PEEK_IN_PLACE ||
		(tb_debug_peek == TB_PEEK_AUTO &&
		 (again || tb_shared_pool_read_in_place(peek->buf_id))))
		return peek->in_place = tb_shared_pool_page(peek->buf_id);

	peek->in_place = NULL;
	if (src->peek_prefix == NULL)
		src->peek_prefix = MemoryContextAlloc(src->cxt, PEEK_PREFIX);
	if (!read_pool_piece(peek->buf_id, 0, PEEK_PREFIX, src->peek_prefix))
		return peek->in_place = tb_shared_pool_page(peek->buf_id);
	return src->peek_prefix;
}

/*
 * Worker: len bytes at offset of the page peeked at, into dest; false when
 * they could not be read.  Checked by tb_page_source_peek_held() as any
 * read of the page.
 */
bool
tb_page_source_peek_copy(const TbPeek *peek, Size offset, Size len, char *dest)
{
	Assert(offset + len <= BLCKSZ);
	if (peek->in_place != NULL)
	{
		memcpy(dest, peek->in_place + offset, len);
		return true;
	}
	return read_pool_piece(peek->buf_id, offset, len, dest);
}

/*
 * Worker: did the buffer of a peeked page still hold it after the reads so
 * far?  Then what they copied is the page's, as the leader has it.
 */
bool
tb_page_source_peek_held(TbPeek *peek)
{
	bool		held;

	pg_read_barrier();
	held = tb_debug_unprotected ||
		holds_block(tb_shared_pool_desc(peek->buf_id), peek->file, peek->blkno);
	if (peek->paused)
	{
		/* Checked while the leader still holds the buffer given away. */
		peek->paused = false;
		tb_mid_read_hook(peek->blkno, NULL, true, true, tb_mid_read_arg);
	}
	return held;
}

/* Let go of what a reference pins or holds. */
static void
unref(TbPageSource *src, PageRef *ref)
{
	if (BufferIsValid(ref->buffer))
		ReleaseBuffer(ref->buffer);
	else if (ref == &src->held && ref->key.relid != InvalidOid && ref->slot >= 0)
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
	if (src->used < (src->read_file ? src->capacity :
					 Min(src->capacity, TB_PAGE_SOURCE_POOL_PAGES)))
	{
		int			slot = src->used++;

		src->slots[slot].data = MemoryContextAlloc(src->cxt, BLCKSZ);
		return slot;
	}
	for (;;)
	{
		PageSlot   *victim = &src->slots[src->hand];
		int			slot = src->hand;

		src->hand = (src->hand + 1) % src->used;
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
	if (!copy_leader_page(src, rel, key, slot->data))
	{
		src->rereads += tb_page_source_read_file(rel, MAIN_FORKNUM, key->blkno,
												 slot->data, src->scratch);
		src->read_file = true;
	}
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
	const char *in_place;

	memset(&key, 0, sizeof(key));
	key.relid = RelationGetRelid(rel);
	key.blkno = blkno;
	if (same_page(&ref->key, &key))
		return ref->page;

	unref(src, ref);
	if (src->from_buffers)
	{
		ref->buffer = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
		ref->page = BufferGetPage(ref->buffer);
		src->reads++;
	}
	else if ((in_place = pinned_leader_page(rel, &key)) != NULL)
	{
		ref->slot = -1;
		ref->page = (Page) unconstify(char *, in_place);
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
