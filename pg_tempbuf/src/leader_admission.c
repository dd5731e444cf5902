/*-------------------------------------------------------------------------
 *
 * leader_admission.c
 *	  May a parallel worker read the leader's memory?  The leader admits
 *	  the server's processes while a scan's workers copy pages out of its
 *	  local buffers (page_source.c), and withdraws them afterwards.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <errno.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "access/xact.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/memutils.h"

#include "pg_tempbuf.h"

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
 * not, for EXPLAIN.  A worker still tries once (tb_page_source_leader_errno)
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
