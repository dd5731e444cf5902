/*
 * deny_proc_fd.c
 *	  LD_PRELOAD shim for tests: refuses, with EACCES, every opening of
 *	  another process's /proc/<pid>/fd or anything under it, as an AppArmor
 *	  or SELinux policy that denies ptrace reads between backends does, or a
 *	  seccomp profile filtering openat on /proc, or a container whose /proc
 *	  hides other processes.  Unlike a non-dumpable server (no_dump.c), the
 *	  leader cannot see the refusal from its own flags: parallel workers
 *	  cannot map their leader's pool of local buffers though memfd_create()
 *	  succeeded, and the leader must learn it before it counts on them.
 *
 * open(), open64(), openat(), openat64() and opendir() are wrapped: what
 * PostgreSQL and the extension call.  A process's own /proc/<pid>/fd stays
 * open to it, as under the policies above.  The constructor checks the
 * refusal on the parent's /proc/<pid>/fd and writes one line to stderr,
 * which the server log keeps; it exits with status 70 when the check fails,
 * so that no test passes without the shim working.
 *
 * Build: cc -shared -fPIC -o deny_proc_fd.so deny_proc_fd.c -ldl
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Is path /proc/<pid>/fd or below it, for a pid other than ours? */
static int
denied(const char *path)
{
	char	   *end;
	long		pid;

	if (path == NULL || strncmp(path, "/proc/", 6) != 0)
		return 0;
	pid = strtol(path + 6, &end, 10);
	if (end == path + 6 || strncmp(end, "/fd", 3) != 0 || (end[3] != '\0' && end[3] != '/'))
		return 0;
	return pid != (long) getpid();
}

static mode_t
mode_of(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t) va_arg(ap, int) : 0;
}

#define WRAP_OPEN(name) \
int \
name(const char *path, int flags, ...) \
{ \
	static int (*real) (const char *, int, ...); \
	va_list		ap; \
	mode_t		mode; \
	if (denied(path)) \
	{ \
		errno = EACCES; \
		return -1; \
	} \
	if (real == NULL) \
		real = dlsym(RTLD_NEXT, #name); \
	va_start(ap, flags); \
	mode = mode_of(flags, ap); \
	va_end(ap); \
	return real(path, flags, mode); \
}

#define WRAP_OPENAT(name) \
int \
name(int dirfd, const char *path, int flags, ...) \
{ \
	static int (*real) (int, const char *, int, ...); \
	va_list		ap; \
	mode_t		mode; \
	if (denied(path)) \
	{ \
		errno = EACCES; \
		return -1; \
	} \
	if (real == NULL) \
		real = dlsym(RTLD_NEXT, #name); \
	va_start(ap, flags); \
	mode = mode_of(flags, ap); \
	va_end(ap); \
	return real(dirfd, path, flags, mode); \
}

WRAP_OPEN(open)
WRAP_OPEN(open64)
WRAP_OPENAT(openat)
WRAP_OPENAT(openat64)

DIR *
opendir(const char *path)
{
	static DIR *(*real) (const char *);

	if (denied(path))
	{
		errno = EACCES;
		return NULL;
	}
	if (real == NULL)
		real = dlsym(RTLD_NEXT, "opendir");
	return real(path);
}

__attribute__((constructor))
static void
check_denial(void)
{
	char		path[64];
	char		line[128];
	int			fd;
	int			n;

	snprintf(path, sizeof(path), "/proc/%d/fd/0", (int) getppid());
	fd = open(path, O_RDONLY);
	n = snprintf(line, sizeof(line), "deny_proc_fd: pid %d: %s\n", (int) getpid(),
				 fd < 0 && errno == EACCES ? "opening another process's /proc/<pid>/fd denied"
				 : "could not deny /proc/<pid>/fd");
	if (n > 0)
		(void) write(STDERR_FILENO, line, (size_t) n);
	if (fd >= 0 || errno != EACCES)
		_exit(70);
}
