/*-------------------------------------------------------------------------
 *
 * shared_pool.c
 *	  The leader's local buffer pool in memory its parallel workers map
 *	  read-only: a memfd, one per session.
 *
 * Core keeps a temporary table's pages in the backend's private memory, so
 * a parallel worker could reach them only by a system call per page
 * (process_vm_readv) or by reading the file the leader wrote.  But core
 * asks for that memory itself (GetLocalBufferStorage()) only for a buffer
 * whose block pointer (LocalBufferBlockPointers, exported) is still NULL,
 * and looks a descriptor up only through LocalBufferDescriptors (exported
 * too).  So this file puts the pool where workers can map it: a memfd
 * holding a header, the buffer descriptors and one page slot per buffer,
 * mapped MAP_SHARED; every block pointer is set to its slot.  Workers open
 * the leader's descriptor of it through /proc/<pid>/fd/<n> and map it
 * read-only: a page the leader holds is then one pointer away, as a shared
 * buffer is.
 *
 * Why a memfd (measured on this project's VM, "Workers read the leader's
 * pages where they lie", pglab page-read): reading a page in place costs
 * 0.02-0.17 us against 2.4-11.7 us for process_vm_readv; and a memfd's
 * pages are committed only when first written, are not limited by the
 * size of /dev/shm, take no slot of core's DSM table (a session with 2 GB
 * of temp_buffers would need one segment for its lifetime), and go away
 * with the last process that holds them: when the session ends, also on
 * kill -9.  Opening /proc/<pid>/fd/<n> is a PTRACE_MODE_READ check, which
 * Yama does not restrict (it restricts attaching) and the usual seccomp
 * profiles allow (open and mmap).
 *
 * The pool moves into the mapping at a safe point: the first one after
 * local buffers exist (the planner's hook, or a scan's start), when no
 * buffer is pinned and none has I/O in flight, so that no pointer into a
 * page or a descriptor is held anywhere.  Pages allocated privately before
 * then are copied into their slots and their private memory given back to
 * the kernel as they go (madvise), then their memory context is reset:
 * memory is never held twice.  temp_buffers keeps its meaning: the pool is
 * sized by it when core first uses local buffers, as before.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/parallel.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "pg_tempbuf.h"
#include "shared_pool.h"

#define POOL_MAGIC	UINT64CONST(0x7067745f706f6f6c) /* "pgt_pool" */

/* The first page of the mapping. */
typedef struct PoolHeader
{
	uint64		magic;
	uint64		cookie;
	int			nbuffers;
	Size		desc_offset;
	Size		page_offset;
} PoolHeader;

/* The leader's pool, once adopted; or why it could not be. */
static struct
{
	bool		adopted;
	int			fd;
	char	   *base;
	Size		size;
	uint64		cookie;
	int			nbuffers;
	const char *refusal;		/* the system said no: not tried again */
	char		refusal_text[160];
} leader;

/* A worker's mapping of its leader's pool, for the worker's life. */
static struct
{
	bool		attached;
	TbSharedPoolRef ref;
	char	   *base;
	const BufferDesc *descs;
	const char *pages;
} worker;

static Size
desc_offset(void)
{
	return TYPEALIGN(BLCKSZ, sizeof(PoolHeader));
}

static Size
page_offset(int nbuffers)
{
	return add_size(desc_offset(),
					TYPEALIGN(BLCKSZ, mul_size(nbuffers, sizeof(BufferDesc))));
}

static Size
pool_size(int nbuffers)
{
	return add_size(page_offset(nbuffers), mul_size(nbuffers, BLCKSZ));
}

/* No pin and no I/O in flight: nothing points into a page or a descriptor. */
static bool
pool_at_rest(void)
{
	for (int i = 0; i < NLocBuffer; i++)
	{
		if (LocalRefCount[i] != 0 ||
			(pg_atomic_read_u32(&GetLocalBufferDescriptor(i)->state) & BM_IO_IN_PROGRESS))
			return false;
	}
	return true;
}

/* Give a private page's memory back to the kernel: its whole OS pages. */
static void
discard_private_page(char *page)
{
	static Size os_page = 0;
	uintptr_t	start;
	uintptr_t	end;

	if (os_page == 0)
		os_page = (Size) sysconf(_SC_PAGESIZE);
	start = TYPEALIGN(os_page, (uintptr_t) page);
	end = TYPEALIGN_DOWN(os_page, (uintptr_t) page + BLCKSZ);
	if (end > start)
		(void) madvise((void *) start, end - start, MADV_DONTNEED);
}

/* Core's context of private page memory (localbuf.c names it so). */
static MemoryContext
private_page_context(void)
{
	for (MemoryContext cxt = TopMemoryContext->firstchild; cxt; cxt = cxt->nextchild)
	{
		if (strcmp(cxt->name, "LocalBufferContext") == 0)
			return cxt;
	}
	return NULL;
}

static void
refuse(const char *what)
{
	snprintf(leader.refusal_text, sizeof(leader.refusal_text), "%s: %m", what);
	leader.refusal = leader.refusal_text;
	ereport(DEBUG1,
			(errmsg_internal("pg_tempbuf: local buffers stay private: %s",
							 leader.refusal)));
}

/* The memfd and its mapping, or false (and why, in leader.refusal). */
static bool
create_mapping(int nbuffers)
{
#ifdef __linux__
	Size		size = pool_size(nbuffers);
	int			fd;
	char	   *base;

	if (!AcquireExternalFD())
	{
		/* Not a refusal: descriptors may be free again later. */
		return false;
	}
	fd = memfd_create("pg_tempbuf local buffers", MFD_CLOEXEC);
	if (fd < 0)
	{
		ReleaseExternalFD();
		refuse("memfd_create failed");
		return false;
	}
	if (ftruncate(fd, (off_t) size) != 0)
	{
		close(fd);
		ReleaseExternalFD();
		refuse("could not size the local buffers' memfd");
		return false;
	}
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
	{
		close(fd);
		ReleaseExternalFD();
		refuse("could not map the local buffers' memfd");
		return false;
	}
	leader.fd = fd;
	leader.base = base;
	leader.size = size;
	leader.nbuffers = nbuffers;
	if (!pg_strong_random(&leader.cookie, sizeof(leader.cookie)))
		leader.cookie = ((uint64) MyProcPid << 32) ^ (uint64) MyStartTime;
	return true;
#else
	leader.refusal = "a shared pool of local buffers needs Linux";
	return false;
#endif
}

/*
 * Leader: move the local buffer pool into the mapping, if it is not there
 * yet and this is a safe point.  True when the pool lives in the mapping.
 * Cheap once adopted: the planner asks for every statement.
 */
bool
tb_shared_pool_adopt(void)
{
	PoolHeader *header;
	BufferDesc *descs;
	BufferDesc *private_descs;
	char	   *pages;
	MemoryContext private_cxt;

	if (leader.adopted)
		return true;
	if (!tb_shared_pool_enabled || leader.refusal != NULL || IsParallelWorker() ||
		NLocBuffer == 0 || !pool_at_rest())
		return false;
	if (!create_mapping(NLocBuffer))
		return false;

	header = (PoolHeader *) leader.base;
	header->magic = POOL_MAGIC;
	header->cookie = leader.cookie;
	header->nbuffers = NLocBuffer;
	header->desc_offset = desc_offset();
	header->page_offset = page_offset(NLocBuffer);
	descs = (BufferDesc *) (leader.base + header->desc_offset);
	pages = leader.base + header->page_offset;

	/* From here on nothing may fail: core's pointers change one by one. */
	private_descs = LocalBufferDescriptors;
	memcpy(descs, private_descs, mul_size(NLocBuffer, sizeof(BufferDesc)));
	LocalBufferDescriptors = descs;
	free(private_descs);		/* calloc'ed by InitLocalBuffers() */

	for (int i = 0; i < NLocBuffer; i++)
	{
		char	   *private_page = (char *) LocalBufferBlockPointers[i];
		char	   *slot = pages + (Size) i * BLCKSZ;

		if (private_page != NULL)
		{
			memcpy(slot, private_page, BLCKSZ);
			discard_private_page(private_page);
		}
		LocalBufferBlockPointers[i] = (Block) slot;
	}
	/* Core allocates there only for a NULL block pointer: never again. */
	private_cxt = private_page_context();
	if (private_cxt != NULL)
		MemoryContextReset(private_cxt);

	leader.adopted = true;
	return true;
}

/*
 * Leader: NULL when workers can map the pool now (adopting it if this is
 * a safe point), else why not, for EXPLAIN.
 */
const char *
tb_shared_pool_unavailable(void)
{
	if (!tb_shared_pool_enabled)
		return "pg_tempbuf.shared_pool is off";
	if (tb_shared_pool_adopt())
		return NULL;
	if (leader.refusal != NULL)
		return leader.refusal;
	return "local buffers were pinned when the pool could have moved";
}

void
tb_shared_pool_describe(TbSharedPoolRef *ref)
{
	Assert(leader.adopted);
	ref->leader_pid = MyProcPid;
	ref->fd = leader.fd;
	ref->cookie = leader.cookie;
	ref->size = leader.size;
	ref->nbuffers = leader.nbuffers;
}

/*
 * Worker: map the leader's pool read-only, once; 0 when it can read it,
 * else the errno of the refusal.
 */
int
tb_shared_pool_attach(const TbSharedPoolRef *ref)
{
#ifdef __linux__
	char		path[64];
	struct stat st;
	int			fd;
	char	   *base;
	const PoolHeader *header;

	if (worker.attached)
	{
		if (worker.ref.cookie == ref->cookie && worker.ref.leader_pid == ref->leader_pid)
			return 0;
		return EINVAL;			/* a worker serves one leader */
	}
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int) ref->leader_pid, ref->fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st) != 0 || (Size) st.st_size != ref->size)
	{
		close(fd);
		return EINVAL;
	}
	base = mmap(NULL, ref->size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return errno;
	header = (const PoolHeader *) base;
	if (header->magic != POOL_MAGIC || header->cookie != ref->cookie ||
		header->nbuffers != ref->nbuffers)
	{
		munmap(base, ref->size);
		return EINVAL;
	}
	worker.ref = *ref;
	worker.base = base;
	worker.descs = (const BufferDesc *) (base + header->desc_offset);
	worker.pages = base + header->page_offset;
	worker.attached = true;
	return 0;
#else
	return ENOSYS;
#endif
}

const BufferDesc *
tb_shared_pool_desc(int buf_id)
{
	Assert(worker.attached && buf_id >= 0 && buf_id < worker.ref.nbuffers);
	return &worker.descs[buf_id];
}

const char *
tb_shared_pool_page(int buf_id)
{
	Assert(worker.attached && buf_id >= 0 && buf_id < worker.ref.nbuffers);
	return worker.pages + (Size) buf_id * BLCKSZ;
}

/* The pool's mapping in this process: the leader's or a worker's. */
Size
tb_shared_pool_mapped_bytes(void)
{
	if (leader.adopted)
		return leader.size;
	if (worker.attached)
		return worker.ref.size;
	return 0;
}
