/*-------------------------------------------------------------------------
 *
 * pool_memfd.c
 *	  The memfd a leader's pool of local buffers lives in: made, its memory
 *	  reserved where the kernel could refuse it later, sealed against every
 *	  process but the leader, before the pool moves in (shared_pool.c); and
 *	  probed as a worker would open it.  Each step that fails leaves the
 *	  pool the leader's alone, as stock PostgreSQL keeps it: never an error.
 *
 * Reserved.  A memfd's pages are charged when first written.  Under strict
 * overcommit (vm.overcommit_memory = 2, which PostgreSQL's documentation
 * recommends) a refused charge inside a user-mode write is a page fault the
 * kernel retries (since Linux 5.16 it no longer kills for it): a backend
 * filling a temporary table would spin, deaf to cancel.  Private memory
 * fails cleanly instead, malloc() returning NULL.  So there the whole pool
 * is charged at once (fallocate()), which fails at once if it must, and the
 * pool stays private; elsewhere nothing is charged before it is used.
 *
 * Sealed.  Workers open the memfd through /proc/<leader pid>/fd/<n>, which
 * any process of the server's OS user may do.  A shrink by such a process
 * (truncate(1) from COPY TO PROGRAM, an untrusted language) would make the
 * leader's next touch of a page past the end a SIGBUS, and the postmaster
 * would restart every session.  The seals refuse shrinking, growing and any
 * new write access (write(), a writable mapping: F_SEAL_FUTURE_WRITE, Linux
 * 5.1) to everyone, the leader's own mapping excepted, and no one may change
 * them after; mode 0400 refuses even opening it for writing to anyone but
 * root.  Where the kernel lacks F_SEAL_FUTURE_WRITE, shrinking is still
 * refused (no SIGBUS), writes by mode only.
 *
 * Probed.  Whether another process may open the leader's /proc/<pid>/fd is
 * the kernel's and its security modules' decision (ptrace access mode READ:
 * Yama leaves it alone; an AppArmor or SELinux policy, a seccomp filter, a
 * /proc hidden or missing in a container may refuse it).  A worker that
 * found it refused in the middle of a plan built on the pool could not
 * answer: the pages the leader holds dirty are on no disk.  So the leader
 * asks first, once, before its first plan counts on the pool, in a child
 * of its own: same user, same security context, same filters as its
 * workers, and nothing of PostgreSQL runs in it (signals blocked,
 * _exit()).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "miscadmin.h"

#include "pool_memfd.h"

#ifdef __linux__

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

static void
refuse_with_errno(char *refusal, const char *what)
{
	snprintf(refusal, TB_POOL_REFUSAL_LEN, "%s: %m", what);
}

/* A kernel setting's text into buf (size bytes, terminated); false if unreadable. */
static bool
read_kernel_setting(const char *path, char *buf, Size size)
{
	int			fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t		len = fd >= 0 ? read(fd, buf, size - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	return true;
}

/* vm.overcommit_memory = 2: the kernel may refuse memory at a page fault. */
static bool
strict_overcommit(void)
{
	char		mode[8];

	return read_kernel_setting("/proc/sys/vm/overcommit_memory", mode, sizeof(mode)) &&
		mode[0] == '2';
}

/*
 * Under strict overcommit, charge the whole memfd now.  A refusal is worth
 * a LOG line: the DBA chose strict overcommit and temp_buffers.
 */
static bool
reserve_memory(int fd, Size size, char *refusal)
{
	if (!strict_overcommit())
		return true;
	if (fallocate(fd, 0, 0, (off_t) size) == 0)
		return true;
	refuse_with_errno(refusal, "could not reserve the memory of the local buffers under strict overcommit");
	ereport(LOG,
			(errmsg("pg_tempbuf: could not reserve %zu bytes for the local buffers of this session: %m",
					size),
			 errdetail("vm.overcommit_memory is 2; the local buffers stay private, and parallel workers read what the leader writes.")));
	return false;
}

/*
 * The memfd, sized, reserved where it must be, and mapped read-write; false
 * with why in refusal (TB_POOL_REFUSAL_LEN bytes).
 */
bool
tb_pool_memfd_create(TbPoolMemfd *memfd, Size size, const char *name, char *refusal)
{
	int			fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	char	   *base;

	if (fd < 0)
	{
		refuse_with_errno(refusal, "memfd_create failed");
		return false;
	}
	if (ftruncate(fd, (off_t) size) != 0)
	{
		refuse_with_errno(refusal, "could not size the local buffers' memfd");
		close(fd);
		return false;
	}
	if (!reserve_memory(fd, size, refusal))
	{
		close(fd);
		return false;
	}
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
	{
		refuse_with_errno(refusal, "could not map the local buffers' memfd");
		close(fd);
		return false;
	}
	tb_pool_memfd_ask_huge_pages(base, size);
	memfd->fd = fd;
	memfd->base = base;
	memfd->size = size;
	return true;
}

/*
 * Leader, once mapped: no other process may shrink, grow or write the
 * memfd, nor change that.  False (with why) where not even shrinking can
 * be refused.
 */
bool
tb_pool_memfd_seal(TbPoolMemfd *memfd, char *refusal)
{
	int			seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL;

	if (fcntl(memfd->fd, F_ADD_SEALS, seals) != 0 &&
		(errno != EINVAL ||
		 fcntl(memfd->fd, F_ADD_SEALS, seals & ~F_SEAL_FUTURE_WRITE) != 0))
	{
		refuse_with_errno(refusal, "could not seal the local buffers' memfd");
		return false;
	}
	if (fchmod(memfd->fd, S_IRUSR) != 0)
	{
		refuse_with_errno(refusal, "could not make the local buffers' memfd read-only");
		return false;
	}
	return true;
}

/* The child's part: 0, or the errno a worker would meet. */
static int
open_as_worker(const char *path, Size size, uint64 magic)
{
	struct stat st;
	int			fd = open(path, O_RDONLY | O_CLOEXEC);
	char	   *base;
	uint64		first;
	int			result = 0;

	if (fd < 0)
		return errno;
	if (fstat(fd, &st) != 0)
		return errno;
	if ((Size) st.st_size != size)
		return EINVAL;
	base = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return errno;
	memcpy(&first, base, sizeof(first));
	if (first != magic)
		result = EINVAL;
	munmap(base, size);
	close(fd);
	return result;
}

/*
 * Leader: may a worker open and map the memfd through /proc/<pid>/fd, as
 * shared_pool.c's workers do?  Asked of a child, which opens it as a
 * worker would and exits.  The memfd starts with magic.
 */
bool
tb_pool_memfd_probe(const TbPoolMemfd *memfd, uint64 magic, char *refusal)
{
	char		path[64];
	sigset_t	all;
	sigset_t	saved;
	pid_t		child;
	int			status;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int) MyProcPid, memfd->fd);
	/* No handler of ours may run in the child, nor between fork and exit. */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &saved);
	child = fork();
	if (child == 0)
		_exit(open_as_worker(path, memfd->size, magic));
	sigprocmask(SIG_SETMASK, &saved, NULL);
	if (child < 0)
	{
		refuse_with_errno(refusal, "could not start a process to check that workers may map the local buffers");
		return false;
	}
	while (waitpid(child, &status, 0) < 0)
	{
		if (errno != EINTR)
		{
			refuse_with_errno(refusal, "could not learn whether workers may map the local buffers");
			return false;
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	errno = WIFEXITED(status) ? WEXITSTATUS(status) : EIO;
	refuse_with_errno(refusal, "workers may not open the leader's /proc/<pid>/fd");
	return false;
}

void
tb_pool_memfd_destroy(TbPoolMemfd *memfd)
{
	if (memfd->base != NULL)
		munmap(memfd->base, memfd->size);
	if (memfd->fd >= 0)
		close(memfd->fd);
	memfd->base = NULL;
	memfd->fd = -1;
}

#else							/* !__linux__ */

bool
tb_pool_memfd_create(TbPoolMemfd *memfd, Size size, const char *name, char *refusal)
{
	snprintf(refusal, TB_POOL_REFUSAL_LEN, "a shared pool of local buffers needs Linux");
	return false;
}

bool
tb_pool_memfd_seal(TbPoolMemfd *memfd, char *refusal)
{
	return false;
}

bool
tb_pool_memfd_probe(const TbPoolMemfd *memfd, uint64 magic, char *refusal)
{
	return false;
}

void
tb_pool_memfd_destroy(TbPoolMemfd *memfd)
{
}

#endif							/* __linux__ */

/*
 * Does the kernel give the pool's memory transparent huge pages, on the
 * request below (shmem_enabled advise) or by policy?
 */
bool
tb_pool_memfd_huge_pages(void)
{
#ifdef __linux__
	char		policy[128];

	if (!read_kernel_setting("/sys/kernel/mm/transparent_hugepage/shmem_enabled",
							 policy, sizeof(policy)))
		return false;
	return strstr(policy, "[always]") || strstr(policy, "[within_size]") ||
		strstr(policy, "[advise]") || strstr(policy, "[force]");
#else
	return false;
#endif
}

/*
 * Where the kernel gives shared memory transparent huge pages on request
 * (/sys/kernel/mm/transparent_hugepage/shmem_enabled: advise), the pool's
 * memory comes in 2 MB pages, and a worker maps 2 MB with one page fault
 * where it would map 64 kB (4 kB pages, 16 at a time): a worker reading
 * pages scattered over the pool faults once per page otherwise, and tears
 * every mapping down when it exits, which the leader waits for.  Elsewhere
 * (never, the default of many distributions) this changes nothing.
 */
void
tb_pool_memfd_ask_huge_pages(char *base, Size size)
{
#ifdef MADV_HUGEPAGE
	(void) madvise(base, size, MADV_HUGEPAGE);
#endif
}
