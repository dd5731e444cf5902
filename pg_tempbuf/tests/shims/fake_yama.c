/*
 * fake_yama.c
 *	  LD_PRELOAD shim for tests on a kernel without Yama: the server reads
 *	  kernel.yama.ptrace_scope as $FAKE_YAMA_SCOPE, and prctl(PR_SET_PTRACER)
 *	  succeeds and writes a line to stderr (the server log) instead of
 *	  reaching the kernel, which without Yama would refuse it (EINVAL).
 *
 * It shows what the leader declares and withdraws, and when; not that
 * Yama then lets workers read the leader, which only a kernel with Yama
 * at scope 1 can show.  Every other prctl option goes to the kernel.
 *
 * Build: cc -shared -fPIC -o fake_yama.so fake_yama.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define SCOPE_PATH "/proc/sys/kernel/yama/ptrace_scope"

typedef FILE *(*fopen_fn) (const char *, const char *);

static FILE *
open_scope(const char *path, const char *mode, const char *real_name)
{
	const char *scope = getenv("FAKE_YAMA_SCOPE");
	fopen_fn	real;

	if (scope != NULL && strcmp(path, SCOPE_PATH) == 0)
		return fmemopen((void *) scope, strlen(scope), "r");
	real = (fopen_fn) dlsym(RTLD_NEXT, real_name);
	return real(path, mode);
}

FILE *
fopen(const char *path, const char *mode)
{
	return open_scope(path, mode, "fopen");
}

FILE *
fopen64(const char *path, const char *mode)
{
	return open_scope(path, mode, "fopen64");
}

int
prctl(int option, ...)
{
	va_list		ap;
	unsigned long arg2,
				arg3,
				arg4,
				arg5;

	va_start(ap, option);
	arg2 = va_arg(ap, unsigned long);
	arg3 = va_arg(ap, unsigned long);
	arg4 = va_arg(ap, unsigned long);
	arg5 = va_arg(ap, unsigned long);
	va_end(ap);

	if (option == PR_SET_PTRACER)
	{
		char		line[96];
		int			n = snprintf(line, sizeof(line), "fake_yama: pid %d PR_SET_PTRACER %ld\n",
								 (int) getpid(), (long) arg2);

		if (n > 0)
			(void) write(STDERR_FILENO, line, (size_t) n);
		return 0;
	}
	return (int) syscall(SYS_prctl, option, arg2, arg3, arg4, arg5);
}
