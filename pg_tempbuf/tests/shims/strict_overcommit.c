/*
 * strict_overcommit.c
 *	  LD_PRELOAD shim for tests: the server sees vm.overcommit_memory = 2
 *	  (strict overcommit) when it reads /proc/sys/vm/overcommit_memory, and,
 *	  with $FAKE_FALLOCATE_ERRNO set, every fallocate() fails with that
 *	  errno, as a reservation beyond the commit limit does.  The leader's
 *	  pool of local buffers must then stay private, with a LOG line, and
 *	  every query answer as without it; without the variable, fallocate()
 *	  is the kernel's and the pool is reserved whole when it moves.
 *
 * The machine's own setting is never touched: changing it would be felt by
 * every process on the machine.  The constructor writes one line to
 * stderr, which the server log keeps.
 *
 * Build: cc -shared -fPIC -o strict_overcommit.so strict_overcommit.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#define OVERCOMMIT "/proc/sys/vm/overcommit_memory"

/* A descriptor that reads "2\n": a memfd, so that nothing is left behind. */
static int
strict_mode_file(int flags)
{
	int			fd = memfd_create("fake overcommit_memory", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);

	if (fd < 0)
		return -1;
	if (write(fd, "2\n", 2) != 2 || lseek(fd, 0, SEEK_SET) != 0)
	{
		close(fd);
		return -1;
	}
	return fd;
}

#define WRAP_OPEN(name) \
int \
name(const char *path, int flags, ...) \
{ \
	static int (*real) (const char *, int, ...); \
	va_list		ap; \
	mode_t		mode = 0; \
	if (strcmp(path, OVERCOMMIT) == 0) \
		return strict_mode_file(flags); \
	if (real == NULL) \
		real = dlsym(RTLD_NEXT, #name); \
	va_start(ap, flags); \
	if (flags & (O_CREAT | O_TMPFILE)) \
		mode = (mode_t) va_arg(ap, int); \
	va_end(ap); \
	return real(path, flags, mode); \
}

WRAP_OPEN(open)
WRAP_OPEN(open64)

#define WRAP_FALLOCATE(name, off) \
int \
name(int fd, int mode, off offset, off len) \
{ \
	static int (*real) (int, int, off, off); \
	const char *fail = getenv("FAKE_FALLOCATE_ERRNO"); \
	if (fail != NULL && *fail != '\0') \
	{ \
		errno = atoi(fail); \
		return -1; \
	} \
	if (real == NULL) \
		real = dlsym(RTLD_NEXT, #name); \
	return real(fd, mode, offset, len); \
}

WRAP_FALLOCATE(fallocate, off_t)
WRAP_FALLOCATE(fallocate64, off64_t)

__attribute__((constructor))
static void
announce(void)
{
	char		line[128];
	const char *fail = getenv("FAKE_FALLOCATE_ERRNO");
	int			n = snprintf(line, sizeof(line), "strict_overcommit: pid %d: overcommit_memory reads 2%s%s\n",
							 (int) getpid(), fail && *fail ? ", fallocate fails with errno " : "",
							 fail && *fail ? fail : "");

	if (n > 0)
		(void) write(STDERR_FILENO, line, (size_t) n);
}
