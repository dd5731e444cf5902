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
 * On Linux a worker copies the pages the leader holds in local buffers
 * straight out of the leader's memory instead (process_vm_readv(2), which
 * needs what ptrace needs between them: leader_admission.c): no write by
 * the leader, no read call per page, no checksum, and the buffer is the
 * newest image of the page.  The leader pins every buffer it lists, so
 * that no eviction, buffer reuse or prune can change the page during the
 * copy (page_guard.c); the copy still reads the buffer's descriptor before
 * and after the page, and should the tags differ, the page is read from the
 * file, where an eviction wrote it.
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

#include <errno.h>
#ifdef __linux__
#include <sys/uio.h>
#endif

#include "access/parallel.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "pg_tempbuf.h"

#define TB_READ_ATTEMPTS	10

TbMidReadHook tb_mid_read_hook = NULL;
void	   *tb_mid_read_arg = NULL;

/* Worker: compare every read of a file with a second read (see below). */
static bool compare_file_reads = false;

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
	if (!DataChecksumsEnabled() && !tb_debug_unprotected)
		compare_file_reads = true;
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

/*
 * Worker: can it copy from the leader's memory?  Tried on one descriptor;
 * 0 when it can, else the errno of the refusal.
 */
int
tb_page_source_leader_errno(pid_t leader_pid, uint64 desc_addr)
{
#ifdef __linux__
	BufferDesc	desc;
	struct iovec local = {&desc, sizeof(desc)};
	struct iovec remote = {(void *) (uintptr_t) desc_addr, sizeof(desc)};
	ssize_t		copied = process_vm_readv(leader_pid, &local, 1, &remote, 1, 0);

	if (copied == sizeof(desc))
		return 0;
	return copied < 0 ? errno : EFAULT;
#else
	return ENOSYS;
#endif
}

#ifdef __linux__
/*
 * Append the remote range [addr, addr + len) to iov, merged into the last
 * entry when it follows on: local buffers allocated together lie side by
 * side, and the kernel walks each entry's pages in one go.
 */
static void
add_range(struct iovec *iov, int *n, uint64 addr, size_t len)
{
	void	   *base = (void *) (uintptr_t) addr;

	if (*n > 0 && (char *) iov[*n - 1].iov_base + iov[*n - 1].iov_len == base)
		iov[*n - 1].iov_len += len;
	else
		iov[(*n)++] = (struct iovec) {base, len};
}

/* Copy one remote range into local memory, or fail. */
static void
copy_remote(Relation rel, pid_t leader_pid, BlockNumber blkno, void *dest,
			uint64 addr, size_t len)
{
	struct iovec local = {dest, len};
	struct iovec remote = {(void *) (uintptr_t) addr, len};

	if (process_vm_readv(leader_pid, &local, 1, &remote, 1, 0) != (ssize_t) len)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not copy block %u of temporary table \"%s\" from the leader: %m",
						blkno, RelationGetRelationName(rel))));
}

/*
 * pg_tempbuf.debug_hazard: copy one page as a copy racing the leader could
 * go, descriptor, first half, (hook), second half, descriptor.
 */
static void
read_leader_page_in_halves(Relation rel, pid_t leader_pid, const TbLeaderPage *page,
						   char *dest, BufferDesc *before, BufferDesc *after)
{
	bool		fired;

	copy_remote(rel, leader_pid, page->blkno, before, page->desc_addr, sizeof(BufferDesc));
	copy_remote(rel, leader_pid, page->blkno, dest, page->page_addr, BLCKSZ / 2);
	fired = tb_mid_read_hook(page->blkno, dest, true, false, tb_mid_read_arg);
	copy_remote(rel, leader_pid, page->blkno, dest + BLCKSZ / 2,
				page->page_addr + BLCKSZ / 2, BLCKSZ / 2);
	if (fired)
		tb_mid_read_hook(page->blkno, dest, true, true, tb_mid_read_arg);
	copy_remote(rel, leader_pid, page->blkno, after, page->desc_addr, sizeof(BufferDesc));
}

/*
 * One call for a batch: the descriptors (with_before), then the pages and
 * the descriptors again (with_rest).
 */
static void
read_leader_batch(Relation rel, pid_t leader_pid, const TbLeaderPage *pages,
				  int npages, char *dest, BufferDesc *before, BufferDesc *after,
				  bool with_before, bool with_rest)
{
	struct iovec local[3];
	struct iovec remote[3 * TB_LEADER_COPY_BATCH] = {{0}};
	int			nlocal = 0;
	int			nremote = 0;
	ssize_t		expected = 0;

	if (with_before)
	{
		local[nlocal++] = (struct iovec) {before, npages * sizeof(BufferDesc)};
		for (int i = 0; i < npages; i++)
			add_range(remote, &nremote, pages[i].desc_addr, sizeof(BufferDesc));
		expected += npages * sizeof(BufferDesc);
	}
	if (with_rest)
	{
		local[nlocal++] = (struct iovec) {dest, (Size) npages * BLCKSZ};
		local[nlocal++] = (struct iovec) {after, npages * sizeof(BufferDesc)};
		for (int i = 0; i < npages; i++)
			add_range(remote, &nremote, pages[i].page_addr, BLCKSZ);
		for (int i = 0; i < npages; i++)
			add_range(remote, &nremote, pages[i].desc_addr, sizeof(BufferDesc));
		expected += npages * sizeof(BufferDesc) + (Size) npages * BLCKSZ;
	}

	if (process_vm_readv(leader_pid, local, nlocal, remote, nremote, 0) != expected)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not copy blocks %u to %u of temporary table \"%s\" from the leader: %m",
						pages[0].blkno, pages[npages - 1].blkno,
						RelationGetRelationName(rel))));
}

/*
 * All the pages in one call: descriptors, pages, descriptors again.  Under
 * pg_tempbuf.debug_hazard, two calls, with the hook between the
 * descriptors and the pages, for a block in the middle of the batch.
 */
static void
read_leader_pages_at_once(Relation rel, pid_t leader_pid, const TbLeaderPage *pages,
						  int npages, char *dest, BufferDesc *before, BufferDesc *after)
{
	BlockNumber middle = pages[npages / 2].blkno;
	bool		fired;

	if (tb_mid_read_hook == NULL)
	{
		read_leader_batch(rel, leader_pid, pages, npages, dest, before, after,
						  true, true);
		return;
	}
	read_leader_batch(rel, leader_pid, pages, npages, dest, before, after,
					  true, false);
	fired = tb_mid_read_hook(middle, NULL, true, false, tb_mid_read_arg);
	read_leader_batch(rel, leader_pid, pages, npages, dest, before, after,
					  false, true);
	if (fired)
		tb_mid_read_hook(middle, NULL, true, true, tb_mid_read_arg);
}
#endif

/*
 * Worker: copy npages pages of rel out of the leader's local buffers into
 * dest, one after another, in a single call: on a virtual machine each
 * call costs more than the copy (pglab measured 4.9 us a page one by one,
 * 3.1 us sixteen at a time).  The call reads every page's buffer
 * descriptor, then the pages, then the descriptors again, in that order;
 * valid[i] is false when the buffer did not hold pages[i].blkno of rel in
 * both reads (the leader evicted it meanwhile, and the caller reads the
 * file, where the eviction wrote it).
 */
void
tb_page_source_copy_leader(Relation rel, pid_t leader_pid, const TbLeaderPage *pages,
					 int npages, char *dest, bool *valid)
{
#ifdef __linux__
	BufferDesc	before[TB_LEADER_COPY_BATCH];
	BufferDesc	after[TB_LEADER_COPY_BATCH];
	TbRelFileId file = TbRelationFileId(rel);

	Assert(npages > 0 && npages <= TB_LEADER_COPY_BATCH);
	if (tb_mid_read_hook && npages == 1)
		read_leader_page_in_halves(rel, leader_pid, pages, dest, before, after);
	else
		read_leader_pages_at_once(rel, leader_pid, pages, npages, dest, before, after);

	for (int i = 0; i < npages; i++)
	{
		valid[i] = true;
		for (int j = 0; j < 2; j++)
		{
			BufferDesc *desc = j == 0 ? &before[i] : &after[i];
			uint32		state = pg_atomic_read_u32(&desc->state);

			if (!(state & BM_VALID) || !TbTagMatchesFileId(&desc->tag, file) ||
				TbTagForkNum(&desc->tag) != MAIN_FORKNUM ||
				desc->tag.blockNum != pages[i].blkno)
				valid[i] = false;
		}
	}
#else
	elog(ERROR, "copies from the leader's buffers need Linux");
#endif
}

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

/* The pages of one relation a worker may copy out of the leader's buffers. */
typedef struct LeaderPages
{
	Oid			relid;
	const TbLeaderPage *pages;	/* sorted by block */
	int			npages;
} LeaderPages;

#define TB_PAGE_SOURCE_LEADER_RELS	2	/* an index scan's table and index */

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
	char	   *scratch;		/* the reread buffer of a file read */

	/* worker: pages to copy from the leader instead of reading the file */
	pid_t		leader_pid;
	LeaderPages leader[TB_PAGE_SOURCE_LEADER_RELS];
	int			nleader;

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
 * leader's memory when the scan started) out of the leader's buffers, and
 * read the others from the file.  A page the leader held dirty is not on
 * disk: the scan must give this list only where the system lets workers
 * copy (tb_page_source_leader_errno()).  A buffer the leader has evicted
 * since, or given to another page, fails the copy's descriptor check, and
 * the page is read from the file, where the eviction wrote it.
 */
void
tb_page_source_copy_from_leader(TbPageSource *src, Oid relid,
								const TbLeaderPage *pages, int npages,
								pid_t leader_pid)
{
	Assert(!src->from_buffers && src->nleader < TB_PAGE_SOURCE_LEADER_RELS);
	src->leader_pid = leader_pid;
	src->leader[src->nleader++] = (LeaderPages) {relid, pages, npages};
}

static int
compare_leader_block(const void *key, const void *member)
{
	BlockNumber blkno = *(const BlockNumber *) key;
	BlockNumber other = ((const TbLeaderPage *) member)->blkno;

	return blkno < other ? -1 : blkno > other ? 1 : 0;
}

/* Worker: the page from the leader's buffer, if it holds it; false if not. */
static bool
copy_leader_page(TbPageSource *src, Relation rel, const PageKey *key, char *dest)
{
	for (int i = 0; i < src->nleader; i++)
	{
		const LeaderPages *rel_pages = &src->leader[i];
		const TbLeaderPage *page;
		bool		valid;

		if (rel_pages->relid != key->relid)
			continue;
		page = bsearch(&key->blkno, rel_pages->pages, rel_pages->npages,
					   sizeof(TbLeaderPage), compare_leader_block);
		if (page == NULL)
			return false;
		tb_page_source_copy_leader(rel, src->leader_pid, page, 1, dest, &valid);
		return valid;
	}
	return false;
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
	if (!copy_leader_page(src, rel, key, slot->data))
		src->rereads += tb_page_source_read_file(rel, MAIN_FORKNUM, key->blkno,
												 slot->data, src->scratch);
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
