/*
 * deny_vm_readv.c
 *	  LD_PRELOAD shim for tests: a seccomp filter that answers
 *	  process_vm_readv(2) with EPERM, in this process and every process it
 *	  forks or executes, as Docker's default profile did before 2021 and as
 *	  a hardened service's filter still may.  The rest is allowed.
 *
 * Preloaded into the postmaster, it makes every parallel worker's copy from
 * the leader fail as such a system would: the scan must fall back to the
 * file, and EXPLAIN must say why.  The constructor checks that the call is
 * denied (on this process's own memory) and writes one line to stderr,
 * which the server log keeps, either way; it exits with status 70 when the
 * filter could not be installed, so that no test passes without it.
 *
 * Build: cc -shared -fPIC -o deny_vm_readv.so deny_vm_readv.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#if defined(__x86_64__)
#define SHIM_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SHIM_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "deny_vm_readv: x86_64 and aarch64 only"
#endif

static void
say(const char *what, int err)
{
	char		line[160];
	int			n = snprintf(line, sizeof(line), "deny_vm_readv: pid %d: %s%s%s\n",
							 (int) getpid(), what, err ? ": " : "",
							 err ? strerror(err) : "");

	if (n > 0)
		(void) write(STDERR_FILENO, line, (size_t) n);
}

__attribute__((constructor))
static void
deny_vm_readv(void)
{
	struct sock_filter filter[] = {
		/* Another ABI's syscall numbers mean other calls: leave them alone. */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SHIM_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(filter) / sizeof(filter[0]),
		.filter = filter,
	};
	char		probe = 'x';
	char		copy = 0;
	struct iovec local = {&copy, 1};
	struct iovec remote = {&probe, 1};

	/* An unprivileged process may install a filter only with no_new_privs. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
	{
		say("could not install the seccomp filter", errno);
		_exit(70);
	}
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != -1 || errno != EPERM)
	{
		say("process_vm_readv was not denied", 0);
		_exit(70);
	}
	say("process_vm_readv denied", EPERM);
}
