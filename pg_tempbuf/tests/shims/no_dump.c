/*
 * no_dump.c
 *	  LD_PRELOAD shim for tests: makes the postmaster, and so every process
 *	  it forks, not dumpable (prctl(PR_SET_DUMPABLE, 0)), as a hardened
 *	  service may be.  Another process of the same user then may not open
 *	  anything under /proc/<pid>/fd of a backend (a PTRACE_MODE_READ check
 *	  that a non-dumpable process fails without CAP_SYS_PTRACE): parallel
 *	  workers cannot map their leader's pool of local buffers, and a scan
 *	  must fall back to the file the leader writes.
 *
 * The constructor checks that the flag took and writes one line to stderr,
 * which the server log keeps; it exits with status 70 when it did not, so
 * that no test passes without it.
 *
 * Build: cc -shared -fPIC -o no_dump.so no_dump.c
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>

__attribute__((constructor))
static void
no_dump(void)
{
	char		line[96];
	int			ok = prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 &&
		prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0;
	int			n = snprintf(line, sizeof(line), "no_dump: pid %d: %s\n", (int) getpid(),
							 ok ? "not dumpable" : "could not clear the dumpable flag");

	if (n > 0)
		(void) write(STDERR_FILENO, line, (size_t) n);
	if (!ok)
		_exit(70);
}
