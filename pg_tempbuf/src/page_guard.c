/*-------------------------------------------------------------------------
 *
 * page_guard.c
 *	  Keep the pages that parallel workers read from changing under them.
 *
 * While workers of a Temp Seq Scan copy pages out of the leader's local
 * buffers or read them from the file, the leader goes on running its part
 * of the plan, and whatever runs above Gather.  During a statement that
 * runs in parallel mode nothing may insert, update, delete or lock rows, so
 * the only changes the leader can make to a temporary table's pages are:
 *
 *	- hint bits on tuples (t_infomask), LP_DEAD marks on index entries,
 *	  page-full and has-garbage flags, pd_prune_xid, from 19 PD_ALL_VISIBLE
 *	  and the visibility map bit a reader sets on a page whose versions are
 *	  all visible, and the checksum the write of an eviction sets: each is a
 *	  field a torn copy takes from one image or the other, and both images
 *	  give every reader the same answer;
 *	- write-back of a dirty page on eviction, and the reuse of the buffer
 *	  for another page: a worker copying that buffer, or reading the block
 *	  from the file, can get half of one image and half of another;
 *	- on-access pruning (heap_page_prune_opt, by an index, bitmap or seq
 *	  scan of the table or its toast relation in the leader: a function
 *	  above Gather, say), which moves tuples and rewrites line pointers.
 *
 * Pruning needs a cleanup lock, which a second pin on a local buffer
 * refuses, and eviction skips pinned buffers.  So the leader pins every
 * buffer a worker copies, and, when the statement may run code in the
 * leader that reads tables, every resident page the leader could prune.
 * A page the leader could prune is one whose pd_prune_xid is set and that
 * holds something to prune (tb_page_may_be_pruned): nothing sets either in
 * a statement that runs in parallel mode.  Pages not in local
 * buffers the leader could still read, prune and evict while a worker reads
 * the file; the leader keeps those that could be pruned to itself.  So do
 * pages the pin budget leaves out: pins never take more than three quarters
 * of the pool, so that the rest of the plan still finds buffers; and none
 * where the leader may run code of the user's while workers read (a
 * function above Gather), which may pin as many buffers as it likes: what
 * answers with pg_tempbuf.parallel_scan = off must answer with it on.
 * Workers then copy the pages (page_source.c), checked.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "access/xact.h"
#include "lib/ilist.h"
#include "miscadmin.h"
#include "storage/buf_internals.h"
#include "storage/bufpage.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"

#include "compat.h"
#include "localbuf_access.h"
#include "page_guard.h"
#include "page_source.h"

/* Buffers left unpinned for the rest of the statement: a quarter, at least 16. */
static int
pins_left_free(void)
{
	return Max(16, NLocBuffer / 4);
}

/*
 * The pins a set may take: what the pool can spare, less what is pinned
 * already (another scan's set, a cursor), so that scans of one plan never
 * pin together more than three quarters of the pool; none where the leader
 * runs user code while workers read (leader_runs_code).
 */
void
tb_pinset_init(TbPinSet *set, bool leader_runs_code)
{
	int			pinned = 0;

	set->npinned = 0;
	set->room = 0;
	set->owned = NULL;
	if (leader_runs_code)
		return;
	for (int i = 0; i < NLocBuffer; i++)
		pinned += LocalRefCount[i] > 0;
	set->room = Max(0, NLocBuffer - pins_left_free() - pinned);
}

/*
 * A set's pins are one resource of the resource owner, where the owner
 * would otherwise keep one each: past a few dozen it keeps them in a hash
 * table, and a scan of TPC-H lineitem at SF 0.5 (57,752 pages, every one
 * pinned for the workers) spent about 5 ms of the leader's time, before the
 * workers were launched and after they were done, remembering and
 * forgetting them.  The set lives in TopTransactionContext: a failed
 * statement's executor memory may be gone before its owner lets the pins go.
 */
typedef struct OwnedPins
{
	ResourceOwner owner;		/* NULL once let go */
#ifndef TB_RESOURCE_KINDS
	dlist_node	node;			/* in owned_sets */
#endif
	int			npinned;
	Buffer		buffers[FLEXIBLE_ARRAY_MEMBER];
} OwnedPins;

static void
unpin_owned(OwnedPins *owned)
{
	for (int i = 0; i < owned->npinned; i++)
		TbUnpinLocalBufferUntracked(owned->buffers[i]);
	owned->npinned = 0;
	owned->owner = NULL;
}

#ifdef TB_RESOURCE_KINDS
/* The statement failed: its resource owner lets go of the set. */
static void
release_owned_pins(Datum resource)
{
	unpin_owned((OwnedPins *) DatumGetPointer(resource));
}

static const ResourceOwnerDesc owned_pins_desc = {
	.name = "pg_tempbuf pinned local buffers",
	.release_phase = RESOURCE_RELEASE_BEFORE_LOCKS,
	.release_priority = RELEASE_PRIO_BUFFER_PINS,
	.ReleaseResource = release_owned_pins,
	.DebugPrint = NULL
};

static void
remember_owned(OwnedPins *owned)
{
	ResourceOwnerEnlarge(owned->owner);
	ResourceOwnerRemember(owned->owner, PointerGetDatum(owned), &owned_pins_desc);
}

static void
forget_owned(OwnedPins *owned)
{
	ResourceOwnerForget(owned->owner, PointerGetDatum(owned), &owned_pins_desc);
}
#else
/*
 * Before 17: the sets held now, which a release callback lets go when
 * their owner is released first (CurrentResourceOwner is the owner being
 * released while callbacks run).
 */
static dlist_head owned_sets = DLIST_STATIC_INIT(owned_sets);

static void
release_owned_sets(ResourceReleasePhase phase, bool isCommit, bool isTopLevel,
				   void *arg)
{
	dlist_mutable_iter iter;

	if (phase != RESOURCE_RELEASE_BEFORE_LOCKS)
		return;
	dlist_foreach_modify(iter, &owned_sets)
	{
		OwnedPins  *owned = dlist_container(OwnedPins, node, iter.cur);

		if (owned->owner != CurrentResourceOwner)
			continue;
		if (isCommit)
			elog(WARNING, "pg_tempbuf: %d local buffer pins not released",
				 owned->npinned);
		dlist_delete(&owned->node);
		unpin_owned(owned);
	}
}

static void
remember_owned(OwnedPins *owned)
{
	static bool registered = false;

	if (!registered)
	{
		RegisterResourceReleaseCallback(release_owned_sets, NULL);
		registered = true;
	}
	dlist_push_head(&owned_sets, &owned->node);
}

static void
forget_owned(OwnedPins *owned)
{
	dlist_delete(&owned->node);
}
#endif

static void
pin_owned(TbPinSet *set, BufferDesc *desc)
{
	OwnedPins  *owned = set->owned;

	if (owned == NULL)
	{
		owned = MemoryContextAlloc(TopTransactionContext,
								   add_size(offsetof(OwnedPins, buffers),
											mul_size(sizeof(Buffer), set->room)));
		owned->npinned = 0;
		owned->owner = CurrentResourceOwner;
		remember_owned(owned);
		set->owned = owned;
	}
	owned->buffers[owned->npinned++] = TbPinLocalBufferUntracked(desc);
}

/*
 * Pin local buffer buf_id for the rest of the scan; false when the budget
 * is spent.  The pins belong to the current resource owner, which drops
 * them should the statement fail.
 */
bool
tb_pinset_add(TbPinSet *set, int buf_id)
{
	if (set->npinned >= set->room)
		return false;
	pin_owned(set, GetLocalBufferDescriptor(buf_id));
	set->npinned++;
	return true;
}

void
tb_pinset_release(TbPinSet *set)
{
	OwnedPins  *owned = set->owned;

	if (owned != NULL)
	{
		if (owned->owner != NULL)
		{
			forget_owned(owned);
			unpin_owned(owned);
		}
		pfree(owned);
	}
	set->owned = NULL;
	set->npinned = 0;
}

/*
 * Did the transaction that inserted a version of a temporary table abort?
 * Only this session writes the table: the inserter is a live (sub)
 * transaction of ours, committed, or aborted.  Most versions of a page share
 * an inserter, so the last answer is kept.
 */
static bool
inserter_aborted(TransactionId xmin, TransactionId *last, bool *last_aborted)
{
	if (xmin != *last)
	{
		*last = xmin;
		*last_aborted = TransactionIdIsNormal(xmin) &&
			!TransactionIdIsCurrentTransactionId(xmin) &&
			!TransactionIdDidCommit(xmin);
	}
	return *last_aborted;
}

/*
 * Does the page hold anything pruning removes: a dead or redirected line
 * pointer, a version deleted or updated (xmax set, not a lock), or one whose
 * inserter aborted?  Without any, heap_page_prune_opt() moves no tuple and
 * no line pointer.  Only the versions within the page's first `known` bytes
 * are looked at (the line pointers always are).
 */
static bool
page_has_prunable_items(Page page, Size known)
{
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	TransactionId last = InvalidTransactionId;
	bool		last_aborted = false;

	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
	{
		ItemId		lp = PageGetItemId(page, off);
		HeapTupleHeader tuple;

		if (ItemIdIsDead(lp) || ItemIdIsRedirected(lp))
			return true;
		if (!ItemIdIsNormal(lp) || ItemIdGetOffset(lp) + SizeofHeapTupleHeader > known)
			continue;
		tuple = (HeapTupleHeader) PageGetItem(page, lp);
		if (!(tuple->t_infomask & HEAP_XMAX_INVALID) &&
			!HEAP_XMAX_IS_LOCKED_ONLY(tuple->t_infomask))
			return true;
		if (HeapTupleHeaderXminInvalid(tuple))
			return true;
		if (!HeapTupleHeaderXminCommitted(tuple) &&
			inserter_aborted(HeapTupleHeaderGetRawXmin(tuple), &last, &last_aborted))
			return true;
	}
	return false;
}

/*
 * Could the leader prune this page, moving its tuples or line pointers,
 * while the statement runs?  heap_page_prune_opt() looks no further than a
 * page whose pd_prune_xid is clear, and nothing sets it in a statement that
 * runs in parallel mode.  Set, it no longer says there is something to
 * prune: from 19 every page an INSERT fills has it, so that the first reader
 * may set the page all-visible (PD_ALL_VISIBLE, pd_prune_xid cleared, the
 * VM bit), which moves nothing and gives a reader of either image the same
 * rows, each version on the page being visible to all.  So the items are
 * looked at.
 */
bool
tb_page_may_be_pruned(Page page)
{
	return tb_page_prunable_within(page, BLCKSZ);
}

/*
 * The same, as far as the page's first `known` bytes tell: a page copied in
 * part (the forced races of pg_tempbuf.debug_hazard look at one half-way).
 */
bool
tb_page_prunable_within(Page page, Size known)
{
	return !PageIsNew(page) &&
		TransactionIdIsValid(((PageHeader) page)->pd_prune_xid) &&
		page_has_prunable_items(page, known);
}

static void
reserve_block(uint64 *reserved, BlockNumber blkno)
{
	reserved[blkno / 64] |= UINT64CONST(1) << (blkno % 64);
}

bool
tb_block_reserved(const uint64 *reserved, BlockNumber nbits, BlockNumber blkno)
{
	if (reserved == NULL || blkno >= nbits)
		return false;
	return (reserved[blkno / 64] >> (blkno % 64)) & 1;
}

/*
 * Keep the pages of rel's main fork that the leader may prune from changing
 * while workers read them: pin those in local buffers (resident, sorted by
 * block; its pinned flags are kept up to date), and mark the rest in
 * reserved, for the leader to read itself.  The pages not in local buffers
 * are looked at in the file (scratch is a page of memory for that).
 * Returns false when a page needs reserving and there is no reserved map,
 * or the map has no bit for it: then workers must not read the relation.
 */
bool
tb_guard_prunable_pages(Relation rel, TbResidentPage *resident, int nresident,
						TbPinSet *pins, uint64 *reserved, BlockNumber reserved_bits,
						char *scratch)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	int			next_resident = 0;

	for (BlockNumber blkno = 0; blkno < nblocks; blkno++)
	{
		bool		prunable;

		CHECK_FOR_INTERRUPTS();
		while (next_resident < nresident && resident[next_resident].blkno < blkno)
			next_resident++;
		if (next_resident < nresident && resident[next_resident].blkno == blkno)
		{
			TbResidentPage *page = &resident[next_resident];

			if (page->pinned ||
				!tb_page_may_be_pruned((Page) LocalBufferBlockPointers[page->buf_id]))
				continue;
			if (tb_pinset_add(pins, page->buf_id))
			{
				page->pinned = true;
				continue;
			}
			prunable = true;
		}
		else
		{
			/* In the file, as the leader last wrote it: no worker reads yet. */
			tb_page_source_read_image(rel, MAIN_FORKNUM, blkno, scratch);
			prunable = tb_page_may_be_pruned((Page) scratch);
		}
		if (!prunable)
			continue;
		if (reserved == NULL || blkno >= reserved_bits)
			return false;
		reserve_block(reserved, blkno);
	}
	return true;
}
