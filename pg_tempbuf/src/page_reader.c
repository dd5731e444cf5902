/*-------------------------------------------------------------------------
 *
 * page_reader.c
 *	  Read a temporary table's pages straight from its file into private
 *	  memory; core_copies.c decides tuple visibility there without setting
 *	  hint bits.
 *
 * Parallel workers cannot use the leader's local buffers (they have none,
 * and InitLocalBuffers() refuses to run in a worker), so every participant
 * of a Parallel Temp Seq Scan, the leader included, reads pages through
 * smgr into a private copy after the leader flushed the table's dirty
 * pages.  Nothing is ever written back: no hint bits, no pruning.
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
 * needs what ptrace needs between them: see tb_leader_copies_unavailable):
 * no write by the leader, no read call per page, no checksum, and the
 * buffer is the newest image of the page.  The leader pins every buffer it
 * lists, so that no eviction, buffer reuse or prune can change the page
 * during the copy (page_guard.c); the copy still reads the buffer's
 * descriptor before and after the page, and should the tags differ, the
 * page is read from the file, where an eviction wrote it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <errno.h>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/uio.h>
#endif

#include "access/xact.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/buf_internals.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "pg_tempbuf.h"

#define TB_READ_ATTEMPTS	10

TbMidReadHook tb_mid_read_hook = NULL;
void	   *tb_mid_read_arg = NULL;

/*
 * Read block blkno of rel's fork into page, which must be BLCKSZ bytes;
 * scratch is a second such buffer for the reread check.  Returns the
 * number of rereads it needed.
 */
int
tb_read_page(Relation rel, ForkNumber fork, BlockNumber blkno, char *page,
			 char *scratch)
{
	bool		compare = tb_verify_reread;

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
 * Whether a worker may read this backend's memory is decided by ptrace's
 * rules (process_vm_readv asks for PTRACE_MODE_ATTACH_REALCREDS): the same
 * user, a dumpable process, and Yama's kernel.yama.ptrace_scope.  Without
 * Yama the first two are all.  At scope 1 only a declared ptracer and its
 * descendants may read a process that is not their descendant, and workers
 * are the postmaster's children, not the leader's: the leader declares the
 * postmaster its ptracer while a scan's workers copy, and withdraws it
 * afterwards.  At scope 2 reading needs CAP_SYS_PTRACE, which the server's
 * processes do not have, and scope 3 forbids it.  A seccomp filter or
 * another OS may still refuse the call: the worker then says so, and reads
 * the file.
 */
#define YAMA_SCOPE_PATH		"/proc/sys/kernel/yama/ptrace_scope"
#define YAMA_NONE			(-1)

#ifdef __linux__
/* Scans of this backend whose workers may read it under Yama scope 1. */
typedef struct PtracerHold
{
	uint64		id;
	SubTransactionId subid;		/* where the scan runs */
} PtracerHold;

static List *ptracer_holds = NIL;	/* in TopMemoryContext */
static uint64 last_hold_id = 0;
static bool ptracer_callbacks_registered = false;

static int
read_ptrace_scope(void)
{
	FILE	   *f = fopen(YAMA_SCOPE_PATH, "r");
	int			scope;

	if (f == NULL)
		return errno == ENOENT ? YAMA_NONE : 3;
	if (fscanf(f, "%d", &scope) != 1)
		scope = 3;
	fclose(f);
	return scope;
}

/* The Yama scope, read once per backend (a sysctl change needs a new session). */
static int
ptrace_scope(void)
{
	static bool known = false;
	static int	scope;

	if (!known)
	{
		scope = read_ptrace_scope();
		known = true;
	}
	return scope;
}
#endif

/*
 * May workers copy pages out of this backend?  NULL if they may, else why
 * not, for EXPLAIN.  A worker still tries once (tb_leader_read_errno)
 * before relying on it.
 */
const char *
tb_leader_copies_unavailable(void)
{
#ifdef __linux__
	/* The system's answer, once per backend: the planner asks often. */
	static bool known = false;
	static const char *refusal;
	static char reason[64];

	if (!tb_copy_from_leader)
		return "pg_tempbuf.copy_from_leader is off";
	if (!known)
	{
		int			scope = ptrace_scope();

		refusal = NULL;
		if (scope >= 2)
		{
			snprintf(reason, sizeof(reason), "Yama ptrace_scope is %d", scope);
			refusal = reason;
		}
		else if (prctl(PR_GET_DUMPABLE) != 1)
			refusal = "the leader is not dumpable";
		known = true;
	}
	return refusal;
#else
	return "copies from the leader need Linux";
#endif
}

bool
tb_leader_pages_readable(void)
{
	return tb_leader_copies_unavailable() == NULL;
}

#ifdef __linux__
static void
withdraw_ptracer_if_unheld(void)
{
	/* Cannot fail once set; nothing to do about it in cleanup anyway. */
	if (ptracer_holds == NIL)
		(void) prctl(PR_SET_PTRACER, 0, 0, 0, 0);
}

/* Holds of scans that never reached their end go with their transaction. */
static void
ptracer_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			if (ptracer_holds != NIL)
			{
				list_free_deep(ptracer_holds);
				ptracer_holds = NIL;
				withdraw_ptracer_if_unheld();
			}
			break;
		default:
			break;
	}
}

/*
 * An aborted subtransaction's parallel contexts are gone (their workers
 * waited for) before this runs: its holds go.  A committed one's pass to
 * the parent.
 */
static void
ptracer_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB)
		return;
	foreach(lc, ptracer_holds)
	{
		PtracerHold *hold = lfirst(lc);

		if (hold->subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_COMMIT_SUB)
			hold->subid = parentSubid;
		else
		{
			ptracer_holds = foreach_delete_current(ptracer_holds, lc);
			pfree(hold);
		}
	}
	if (event == SUBXACT_EVENT_ABORT_SUB)
		withdraw_ptracer_if_unheld();
}
#endif

/*
 * Leader, before a partial scan's workers start, when
 * tb_leader_copies_unavailable() said yes: let them read this backend.
 * Under Yama scope 1 that declares the postmaster this backend's ptracer,
 * which admits every process of the server, until tb_dismiss_workers(),
 * or the end of the (sub)transaction should an error come first.  Returns
 * the hold to give back (0 when there is none to give back) in *hold, or
 * false and why not in *reason.
 */
bool
tb_admit_workers(uint64 *hold, const char **reason)
{
#ifdef __linux__
	MemoryContext oldcxt;
	PtracerHold *entry;

	*hold = 0;
	if (ptrace_scope() != 1)
		return true;
	if (!ptracer_callbacks_registered)
	{
		RegisterXactCallback(ptracer_xact_callback, NULL);
		RegisterSubXactCallback(ptracer_subxact_callback, NULL);
		ptracer_callbacks_registered = true;
	}
	/* Recorded first: nothing can then leave the declaration unrecorded. */
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	entry = palloc(sizeof(PtracerHold));
	entry->id = ++last_hold_id;
	entry->subid = GetCurrentSubTransactionId();
	ptracer_holds = lappend(ptracer_holds, entry);
	MemoryContextSwitchTo(oldcxt);
	if (list_length(ptracer_holds) == 1 &&
		prctl(PR_SET_PTRACER, (unsigned long) PostmasterPid, 0, 0, 0) != 0)
	{
		int			save_errno = errno;

		ptracer_holds = list_delete_ptr(ptracer_holds, entry);
		pfree(entry);
		*reason = psprintf("could not declare the postmaster the leader's ptracer: %s",
						   strerror(save_errno));
		return false;
	}
	*hold = entry->id;
	return true;
#else
	*hold = 0;
	*reason = tb_leader_copies_unavailable();
	return false;
#endif
}

/*
 * Leader, once the scan's workers are done (they may still be copying
 * when the scan shuts down under a LIMIT: Gather waits for them only after
 * its children's shutdown): give back what tb_admit_workers() took.  A
 * hold that its transaction's end already took back is not found.
 */
void
tb_dismiss_workers(uint64 hold)
{
#ifdef __linux__
	ListCell   *lc;

	if (hold == 0)
		return;
	foreach(lc, ptracer_holds)
	{
		PtracerHold *entry = lfirst(lc);

		if (entry->id == hold)
		{
			ptracer_holds = foreach_delete_current(ptracer_holds, lc);
			pfree(entry);
			withdraw_ptracer_if_unheld();
			return;
		}
	}
#endif
}

/*
 * Worker: can it copy from the leader's memory?  Tried on one descriptor;
 * 0 when it can, else the errno of the refusal.
 */
int
tb_leader_read_errno(pid_t leader_pid, uint64 desc_addr)
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
tb_read_leader_pages(Relation rel, pid_t leader_pid, const TbLeaderPage *pages,
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
