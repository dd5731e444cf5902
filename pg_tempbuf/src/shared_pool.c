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
 * buffer is.  A worker keeps the descriptor open too: where the first touch
 * of a page in its fresh mapping would cost a page fault, a few bytes of it
 * cost less read with pread() (page_source.c), and this file notes which
 * parts of the mapping the worker has touched.
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
 * profiles allow (open and mmap); where a policy refuses it all the same,
 * the leader learns so before its pool moves, and keeps it private
 * (pool_memfd.c, which also seals the memfd against other processes).
 *
 * The pool moves into the mapping at a safe point: the first one after
 * local buffers exist (the planner's hook, or a scan's start), when no
 * buffer is pinned and none has I/O in flight, so that no pointer into a
 * page or a descriptor is held anywhere.  Pages allocated privately before
 * then are copied into their slots and their private memory given back to
 * the kernel as they go (madvise, in address order), then their memory
 * context is reset: memory is never held twice.  temp_buffers keeps its meaning: the pool is
 * sized by it when core first uses local buffers, as before.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "access/parallel.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/fd.h"
#include "storage/proc.h"
#include "utils/memutils.h"

#include "compat.h"
#include "guc.h"
#include "pool_memfd.h"
#include "shared_pool.h"

#define POOL_MAGIC	UINT64CONST(0x7067745f706f6f6c) /* "pgt_pool" */
#define POOL_NAME	"pg_tempbuf local buffers"

/* The first page of the mapping. */
typedef struct PoolHeader
{
	uint64		magic;
	uint64		cookie;
	int			nbuffers;
	Size		desc_offset;
	Size		page_offset;
	Size		directory_offset;
	/* the directory: odd while the leader rewrites it (a seqlock) */
	pg_atomic_uint32 directory_version;
	int			directory_nruns;
	int			fault_window_shift; /* log2 of what one fault maps (below) */
} PoolHeader;

/* The leader's pool, once adopted; or why it could not be. */
static struct
{
	bool		adopted;
	TbPoolMemfd memfd;			/* its descriptor, mapping and size */
	uint64		cookie;
	int			nbuffers;
	const char *refusal;		/* the system said no: not tried again */
	char		refusal_text[TB_POOL_REFUSAL_LEN];
	bool		probed;			/* asked whether a worker could open it */
	const char *unreadable;		/* the answer, when no */
	char		unreadable_text[TB_POOL_REFUSAL_LEN];
} leader;

/* A worker's mapping of its leader's pool, for the worker's life. */
static struct
{
	bool		attached;
	TbSharedPoolRef ref;
	int			fd;				/* kept open: pieces of pages are read with pread() */
	char	   *base;
	const BufferDesc *descs;
	const char *pages;
	const TbPoolRun *runs;
	uint8	   *window_reads;	/* per fault window: pread()s so far, or WINDOW_MAPPED */
	int			window_shift;
} worker;

/*
 * What the kernel maps on one fault of a shared file mapping, aligned on
 * the address: 64 kB (fault-around) of 4 kB pages, or a 2 MB huge page.  A
 * worker that has touched one page of such a window reads its neighbours
 * without a fault.
 */
#define FAULT_AROUND_SHIFT	16
#define HUGE_PAGE_SHIFT		21

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
directory_offset(int nbuffers)
{
	return add_size(page_offset(nbuffers), mul_size(nbuffers, BLCKSZ));
}

/*
 * Where buffer buf_id's page lies in the pool's page area: the last buffer
 * first, in falling addresses.  Core hands out a fresh pool's buffers in
 * rising order, so a table written in block order lies in rising buffers.
 * A heap page is read from its end down (tuples fill it from the end), so in
 * falling addresses a scan reads memory as one falling stream, the next
 * block's last tuples just below this block's line pointers, and the CPU
 * prefetches it; in rising addresses each page starts a stream anew.  A
 * serial scan of TPC-H lineitem (SF 0.5) in shared buffers laid out either
 * way differs by about 15% on the project's VM (shared buffers given back by
 * a DROP are handed out again in falling order).
 */
static inline Size
slot_offset(int nbuffers, int buf_id)
{
	return (Size) (nbuffers - 1 - buf_id) * BLCKSZ;
}

/* A run per buffer at most: a few bytes a page, touched only as used. */
static Size
pool_size(int nbuffers)
{
	return add_size(directory_offset(nbuffers), mul_size(nbuffers, sizeof(TbPoolRun)));
}

/* No pin and no I/O in flight: nothing points into a page or a descriptor. */
static bool
pool_at_rest(void)
{
	for (int i = 0; i < NLocBuffer; i++)
	{
		if (LocalRefCount[i] != 0 ||
			TbLocalBufferIoInFlight(GetLocalBufferDescriptor(i)))
			return false;
	}
	return true;
}

/* A buffer's private page, for moving the pages in address order. */
typedef struct PrivatePage
{
	char	   *page;
	int			buf_id;
} PrivatePage;

static int
compare_private_pages(const void *a, const void *b)
{
	uintptr_t	pa = (uintptr_t) ((const PrivatePage *) a)->page;
	uintptr_t	pb = (uintptr_t) ((const PrivatePage *) b)->page;

	return (pa > pb) - (pa < pb);
}

/*
 * Copy the private pages into their slots, giving their memory back to the
 * kernel as the copy goes (madvise), so that the pool is never held twice.
 * Core allocated them in runs of adjacent pages (GetLocalBufferStorage());
 * before PostgreSQL 16 they are not aligned to the OS page, whose pages
 * then straddle two buffers: taken in address order, an OS page goes once
 * every buffer it holds part of is copied.  Only OS pages wholly inside a
 * run go, never the allocator's header before it.
 */
static void
move_private_pages(char *slots, PrivatePage *moving)
{
	Size		os_page = (Size) sysconf(_SC_PAGESIZE);
	int			n = 0;
	uintptr_t	run_end = 0;
	uintptr_t	released = 0;	/* OS pages below it are gone */

	for (int i = 0; i < NLocBuffer; i++)
	{
		if (LocalBufferBlockPointers[i] != NULL)
			moving[n++] = (PrivatePage) {(char *) LocalBufferBlockPointers[i], i};
	}
	qsort(moving, n, sizeof(PrivatePage), compare_private_pages);

	for (int i = 0; i < n; i++)
	{
		uintptr_t	start = (uintptr_t) moving[i].page;
		uintptr_t	end = start + BLCKSZ;
		uintptr_t	whole_end;

		memcpy(slots + slot_offset(NLocBuffer, moving[i].buf_id), moving[i].page, BLCKSZ);
		if (start != run_end)
			released = TYPEALIGN(os_page, start);	/* a new run */
		run_end = end;
		whole_end = TYPEALIGN_DOWN(os_page, end);
		if (whole_end > released)
		{
			(void) madvise((void *) released, whole_end - released, MADV_DONTNEED);
			released = whole_end;
		}
	}
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

/*
 * What one page fault of a worker maps of the pool, as a power of two: a
 * 2 MB huge page where the kernel's policy grants them to the pool's
 * memory, else fault-around's 64 kB (its default; only root may change it).
 */
static int
fault_window_shift(void)
{
	return tb_pool_memfd_huge_pages() ? HUGE_PAGE_SHIFT : FAULT_AROUND_SHIFT;
}

/* The system said no: the pool stays private, and is not tried again. */
static bool
refuse(const char *why)
{
	leader.refusal = why;
	ereport(DEBUG1,
			(errmsg_internal("pg_tempbuf: local buffers stay private: %s",
							 leader.refusal)));
	return false;
}

/*
 * The memfd and its mapping, its header written and sealed (pool_memfd.c);
 * or false (and why, in leader.refusal).
 */
static bool
create_mapping(int nbuffers)
{
	TbPoolMemfd memfd;
	PoolHeader *header;

#ifdef __linux__
	/* A hardened service's prctl(PR_SET_DUMPABLE, 0): no worker could open it. */
	if (prctl(PR_GET_DUMPABLE) != 1)
		return refuse("the leader is not dumpable: workers may not open its /proc/<pid>/fd");
#endif
	if (!AcquireExternalFD())
	{
		/* Not a refusal: descriptors may be free again later. */
		return false;
	}
	if (!tb_pool_memfd_create(&memfd, pool_size(nbuffers), POOL_NAME, leader.refusal_text))
	{
		ReleaseExternalFD();
		return refuse(leader.refusal_text);
	}
	if (!pg_strong_random(&leader.cookie, sizeof(leader.cookie)))
		leader.cookie = ((uint64) MyProcPid << 32) ^ (uint64) MyStartTime;
	header = (PoolHeader *) memfd.base;
	header->magic = POOL_MAGIC;
	header->cookie = leader.cookie;
	header->nbuffers = nbuffers;
	header->desc_offset = desc_offset();
	header->page_offset = page_offset(nbuffers);
	header->directory_offset = directory_offset(nbuffers);
	pg_atomic_init_u32(&header->directory_version, 0);
	header->directory_nruns = 0;
	header->fault_window_shift = fault_window_shift();

	if (!tb_pool_memfd_seal(&memfd, leader.refusal_text))
	{
		tb_pool_memfd_destroy(&memfd);
		ReleaseExternalFD();
		return refuse(leader.refusal_text);
	}
	leader.memfd = memfd;
	leader.nbuffers = nbuffers;
	return true;
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
	PrivatePage *moving;
	MemoryContext private_cxt;

	/* A statement that found buffers pinned tries no more: each try walks the pool. */
	static TimestampTz pinned_in_statement = 0;

	if (leader.adopted)
		return true;
	if (!tb_shared_pool_enabled || leader.refusal != NULL || IsParallelWorker() ||
		NLocBuffer == 0 || pinned_in_statement == GetCurrentStatementStartTimestamp())
		return false;
	if (!pool_at_rest())
	{
		pinned_in_statement = GetCurrentStatementStartTimestamp();
		return false;
	}
	moving = palloc(mul_size(NLocBuffer, sizeof(PrivatePage)));
	if (!create_mapping(NLocBuffer))
	{
		pfree(moving);
		return false;
	}

	header = (PoolHeader *) leader.memfd.base;
	descs = (BufferDesc *) (leader.memfd.base + header->desc_offset);
	pages = leader.memfd.base + header->page_offset;

	/* From here on nothing may fail: core's pointers change one by one. */
	private_descs = LocalBufferDescriptors;
	memcpy(descs, private_descs, mul_size(NLocBuffer, sizeof(BufferDesc)));
	LocalBufferDescriptors = descs;
	free(private_descs);		/* calloc'ed by InitLocalBuffers() */

	move_private_pages(pages, moving);
	pfree(moving);
	for (int i = 0; i < NLocBuffer; i++)
		LocalBufferBlockPointers[i] = (Block) (pages + slot_offset(NLocBuffer, i));
	/* Core allocates there only for a NULL block pointer: never again. */
	private_cxt = private_page_context();
	if (private_cxt != NULL)
		MemoryContextReset(private_cxt);

	leader.adopted = true;
	return true;
}

/* Leader: does the pool live in the mapping?  (No try to move it.) */
bool
tb_shared_pool_adopted(void)
{
	return leader.adopted;
}

/*
 * Leader: may its workers read the pool now?  NULL when yes (adopting it if
 * this is a safe point), else why not, for EXPLAIN.  The first time a plan
 * would count on it, a child of the leader opens it as a worker would
 * (pool_memfd.c): a node whose workers cannot say that they could not (no
 * shared state) relies on this answer.  Asked then, not when the pool
 * moves: a session that never runs a parallel plan pays no probe.  Where
 * the answer is no, the pool stays where it is, the leader's alone.
 */
const char *
tb_shared_pool_unreadable(void)
{
	if (!tb_shared_pool_enabled)
		return "pg_tempbuf.shared_pool is off";
	if (!tb_shared_pool_adopt())
		return leader.refusal != NULL ? leader.refusal :
			"local buffers were pinned when the pool could have moved";
	if (!leader.probed)
	{
		leader.probed = true;
		if (!tb_pool_memfd_probe(&leader.memfd, POOL_MAGIC, leader.unreadable_text))
		{
			leader.unreadable = leader.unreadable_text;
			ereport(DEBUG1,
					(errmsg_internal("pg_tempbuf: parallel workers will not read the local buffers: %s",
									 leader.unreadable)));
		}
	}
	return leader.unreadable;
}

void
tb_shared_pool_describe(TbSharedPoolRef *ref)
{
	Assert(leader.adopted);
	ref->leader_pid = MyProcPid;
	ref->fd = leader.memfd.fd;
	ref->cookie = leader.cookie;
	ref->size = leader.memfd.size;
	ref->nbuffers = leader.nbuffers;
}

#ifdef __linux__
/*
 * Map the pool behind path read-only; 0, or the errno of the refusal.  A
 * ref with a cookie must match it; one without (the worker found the
 * descriptor itself) takes the header's.
 */
static int
map_pool(const char *path, const TbSharedPoolRef *ref)
{
	struct stat st;
	int			fd;
	char	   *base;
	const PoolHeader *header;
	Size		size;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st) != 0 || (ref->size != 0 && (Size) st.st_size != ref->size) ||
		(Size) st.st_size < sizeof(PoolHeader))
	{
		close(fd);
		return EINVAL;
	}
	size = (Size) st.st_size;
	base = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
	{
		int			err = errno;

		close(fd);
		return err;
	}
	tb_pool_memfd_ask_huge_pages(base, size);
	header = (const PoolHeader *) base;
	if (header->magic != POOL_MAGIC || (ref->cookie != 0 && header->cookie != ref->cookie) ||
		pool_size(header->nbuffers) != size)
	{
		munmap(base, size);
		close(fd);
		return EINVAL;
	}
	/* Counted as core counts descriptors it does not manage; none left: no pread(). */
	if (!AcquireExternalFD())
	{
		close(fd);
		fd = -1;
	}
	worker.fd = fd;
	worker.window_shift = header->fault_window_shift == HUGE_PAGE_SHIFT ?
		HUGE_PAGE_SHIFT : FAULT_AROUND_SHIFT;
	worker.window_reads = MemoryContextAllocZero(TopMemoryContext,
												 (size >> worker.window_shift) + 2);
	worker.ref = *ref;
	worker.ref.cookie = header->cookie;
	worker.ref.size = size;
	worker.ref.nbuffers = header->nbuffers;
	worker.base = base;
	worker.descs = (const BufferDesc *) (base + header->desc_offset);
	worker.pages = base + header->page_offset;
	worker.runs = (const TbPoolRun *) (base + header->directory_offset);
	worker.attached = true;
	return 0;
}
#endif

/*
 * Worker: map the leader's pool read-only, once; 0 when it can read it,
 * else the errno of the refusal.
 */
int
tb_shared_pool_attach(const TbSharedPoolRef *ref)
{
#ifdef __linux__
	char		path[64];

	if (worker.attached)
	{
		if (worker.ref.cookie == ref->cookie && worker.ref.leader_pid == ref->leader_pid)
			return 0;
		return EINVAL;			/* a worker serves one leader */
	}
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int) ref->leader_pid, ref->fd);
	return map_pool(path, ref);
#else
	return ENOSYS;
#endif
}

/*
 * Worker of a node with no shared state of its own, whose leader wrote
 * nothing because its pool serves (tb_shared_pool_unreadable()): find the
 * pool among the leader's descriptors and map it.  The leader is the
 * worker's lock group leader.  0, or the errno of the refusal.
 */
int
tb_shared_pool_attach_leader(void)
{
#ifdef __linux__
	TbSharedPoolRef ref = {0};
	char		dir_path[64];
	DIR		   *dir;
	struct dirent *entry;
	int			result = ENOENT;

	if (worker.attached)
		return 0;
	if (MyProc == NULL || MyProc->lockGroupLeader == NULL)
		return ESRCH;
	ref.leader_pid = MyProc->lockGroupLeader->pid;
	snprintf(dir_path, sizeof(dir_path), "/proc/%d/fd", (int) ref.leader_pid);
	dir = opendir(dir_path);
	if (dir == NULL)
		return errno;
	while ((entry = readdir(dir)) != NULL)
	{
		char		path[MAXPGPATH];
		char		target[MAXPGPATH];
		ssize_t		len;

		if (entry->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir_path, entry->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (strncmp(target, "/memfd:" POOL_NAME, strlen("/memfd:" POOL_NAME)) != 0)
			continue;
		ref.fd = atoi(entry->d_name);
		result = map_pool(path, &ref);
		break;
	}
	closedir(dir);
	return result;
#else
	return ENOSYS;
#endif
}

/*
 * The pool's directory: where each page of a relation's main fork lies,
 * as runs of consecutive blocks in consecutive buffers (core hands buffers
 * out in order, so a table read or written in order is one run), sorted by
 * file and block.  The leader rewrites it when its pool has changed
 * (localbuf_access.c decides when), and workers look pages up in it: a
 * binary search, no walk of the descriptors.  It may be older than the
 * pool, never incomplete for a page only the pool holds: such a page was
 * read or dirtied before the leader last wrote the directory, and during a
 * parallel query the leader changes no page but for hint bits; a buffer
 * given to another page since fails the reader's descriptor check, and the
 * page is in the file, where its eviction wrote it.
 */

/* Leader: the runs to rewrite, as many as the pool has buffers. */
TbPoolRun *
tb_shared_pool_directory_begin(int *capacity)
{
	PoolHeader *header = (PoolHeader *) leader.memfd.base;

	Assert(leader.adopted);
	pg_atomic_write_u32(&header->directory_version,
						pg_atomic_read_u32(&header->directory_version) + 1);
	pg_write_barrier();
	*capacity = leader.nbuffers;
	return (TbPoolRun *) (leader.memfd.base + header->directory_offset);
}

static int
compare_runs(const void *a, const void *b)
{
	const TbPoolRun *ra = a;
	const TbPoolRun *rb = b;
	int			cmp = memcmp(&ra->file, &rb->file, sizeof(TbRelFileId));

	if (cmp != 0)
		return cmp;
	return (ra->first > rb->first) - (ra->first < rb->first);
}

/* Leader: the first nruns runs are the directory now. */
void
tb_shared_pool_directory_end(int nruns)
{
	PoolHeader *header = (PoolHeader *) leader.memfd.base;
	TbPoolRun  *runs = (TbPoolRun *) (leader.memfd.base + header->directory_offset);

	Assert(nruns <= leader.nbuffers);
	qsort(runs, nruns, sizeof(TbPoolRun), compare_runs);
	header->directory_nruns = nruns;
	pg_write_barrier();
	pg_atomic_write_u32(&header->directory_version,
						pg_atomic_read_u32(&header->directory_version) + 1);
}

/* The run holding blkno of file among runs[0..nruns-1], or NULL. */
static const TbPoolRun *
find_run(const TbPoolRun *runs, int nruns, TbRelFileId file, BlockNumber blkno)
{
	int			low = 0;
	int			high = nruns;
	TbPoolRun	key;

	memset(&key, 0, sizeof(key));
	key.file = file;
	key.first = blkno;
	/* the first run after the key */
	while (low < high)
	{
		int			mid = low + (high - low) / 2;

		if (compare_runs(&runs[mid], &key) <= 0)
			low = mid + 1;
		else
			high = mid;
	}
	if (low == 0)
		return NULL;
	runs += low - 1;
	if (memcmp(&runs->file, &file, sizeof(TbRelFileId)) != 0 ||
		blkno - runs->first >= (BlockNumber) runs->nblocks)
		return NULL;
	return runs;
}

/* The runs of file among runs[0..nruns-1]: *count of them from the result. */
const TbPoolRun *
tb_pool_runs_of_file(const TbPoolRun *runs, int nruns, TbRelFileId file, int *count)
{
	int			low = 0;
	int			high = nruns;
	int			n = 0;

	/* the first run of file or after it */
	while (low < high)
	{
		int			mid = low + (high - low) / 2;

		if (memcmp(&runs[mid].file, &file, sizeof(TbRelFileId)) < 0)
			low = mid + 1;
		else
			high = mid;
	}
	while (low + n < nruns && memcmp(&runs[low + n].file, &file, sizeof(TbRelFileId)) == 0)
		n++;
	*count = n;
	return runs + low;
}

/* Leader: the directory as last written (after the caller made it current). */
const TbPoolRun *
tb_shared_pool_directory(int *nruns)
{
	PoolHeader *header = (PoolHeader *) leader.memfd.base;

	Assert(leader.adopted);
	*nruns = header->directory_nruns;
	return (const TbPoolRun *) (leader.memfd.base + header->directory_offset);
}

/*
 * Worker: the buffer that holds block blkno of file's main fork by the
 * pool's directory, or -1: then the page is in the file.  The caller
 * checks the buffer's descriptor, as the leader may evict it any time.
 */
int
tb_shared_pool_lookup(TbRelFileId file, BlockNumber blkno)
{
	const PoolHeader *header = (const PoolHeader *) worker.base;
	pg_atomic_uint32 *version = unconstify(pg_atomic_uint32 *, &header->directory_version);

	Assert(worker.attached);
	for (;;)
	{
		uint32		before = pg_atomic_read_u32(version);

		if ((before & 1) == 0)
		{
			int			nruns = Min(header->directory_nruns, worker.ref.nbuffers);
			const TbPoolRun *run;
			int			buf_id = -1;

			pg_read_barrier();
			run = find_run(worker.runs, Max(nruns, 0), file, blkno);
			if (run != NULL)
				buf_id = run->buf_id + (int) (blkno - run->first);
			pg_read_barrier();
			if (pg_atomic_read_u32(version) == before)
				return buf_id >= 0 && buf_id < worker.ref.nbuffers ? buf_id : -1;
		}
		/* The leader is rewriting it: a walk of its pool, briefly. */
		CHECK_FOR_INTERRUPTS();
		pg_usleep(50L);
	}
}

const BufferDesc *
tb_shared_pool_desc(int buf_id)
{
	Assert(worker.attached && buf_id >= 0 && buf_id < worker.ref.nbuffers);
	return &worker.descs[buf_id];
}

static Size
fault_window(const char *address)
{
	return ((uintptr_t) address >> worker.window_shift) -
		((uintptr_t) worker.base >> worker.window_shift);
}

/*
 * A fault window is WINDOW_MAPPED once this worker has touched it; until
 * then, the count of pieces of its pages read with pread().
 */
#define WINDOW_MAPPED	UINT8_MAX

/*
 * The pieces read with pread() from one fault window before the worker maps
 * it instead.  A reader of scattered pages meets most windows once, where
 * two reads (1.6 us) cost less than a fault and its teardown (3.6 us); one
 * that comes back to a window (a nested loop's inner index scan of a table
 * it reads all over) would pay the reads at every visit.  Two visits pay
 * about what one fault costs: from the third on the window is mapped, as a
 * ski rental buys.  TPC-H Q05 at SF 0.5 on 18.6 (orders fetched by
 * customer, each window visited dozens of times): the worker's system time
 * fell from 104-110 ms a run (the UNLOGGED copy's: 52) to 52, and the query
 * went from 0.89x to 1.25x the copy; Q19, whose inner scan meets windows
 * about once, stayed at 1.17-1.20x.
 */
#define WINDOW_READS_BEFORE_MAPPING	2

/* The fault windows a page of the mapping lies in (one or two) are mapped. */
static void
mark_touched(const char *page)
{
	worker.window_reads[fault_window(page)] = WINDOW_MAPPED;
	worker.window_reads[fault_window(page + BLCKSZ - 1)] = WINDOW_MAPPED;
}

/*
 * Are the windows of a page mapped, or has it come back often enough to be?
 * Counts a read of each window that is not.
 */
static bool
worth_mapping(const char *page)
{
	Size		last = fault_window(page + BLCKSZ - 1);
	bool		mapped = true;

	for (Size w = fault_window(page); w <= last; w++)
	{
		if (worker.window_reads[w] == WINDOW_MAPPED)
			continue;
		if (worker.window_reads[w] < WINDOW_READS_BEFORE_MAPPING)
		{
			worker.window_reads[w]++;
			mapped = false;
		}
	}
	return mapped;
}

/* Worker: buffer buf_id's page in the mapping, for the caller to touch. */
const char *
tb_shared_pool_page(int buf_id)
{
	const char *page;

	Assert(worker.attached && buf_id >= 0 && buf_id < worker.ref.nbuffers);
	page = worker.pages + slot_offset(worker.ref.nbuffers, buf_id);
	mark_touched(page);
	return page;
}

/*
 * Worker: should it read buffer buf_id's page in place, for a few bytes it
 * could also read with pread() (tb_shared_pool_file())?  Yes where the pool
 * has huge pages: one fault maps 2 MB, 256 pages.  With 4 kB pages, where
 * it has touched the part of the mapping the page lies in, or come back to
 * it often enough (worth_mapping()): a fault maps 64 kB, 8 pages, and it
 * and its teardown cost a reader of scattered pages more than two reads.
 * TPC-H Q19 at SF 0.5, against the UNLOGGED copy: in place 0.75-0.80x with
 * 4 kB pages, 1.11-1.15x with huge pages; by pread() with 4 kB pages
 * 0.92-0.97x, with huge pages 1.02-1.09x.  Each call counts a visit.
 */
bool
tb_shared_pool_read_in_place(int buf_id)
{
	Assert(worker.attached && buf_id >= 0 && buf_id < worker.ref.nbuffers);
	return worker.window_shift == HUGE_PAGE_SHIFT ||
		worth_mapping(worker.pages + slot_offset(worker.ref.nbuffers, buf_id));
}

/*
 * Worker: the memfd it maps (open for the worker's life; -1 where no
 * descriptor was left), and where buffer buf_id's page lies in it, for a
 * read of a few bytes that must not fault the mapping in (page_source.c).
 */
int
tb_shared_pool_file(int buf_id, off_t *page_at)
{
	Assert(worker.attached && buf_id >= 0 && buf_id < worker.ref.nbuffers);
	*page_at = (off_t) (worker.pages - worker.base) + (off_t) slot_offset(worker.ref.nbuffers, buf_id);
	return worker.fd;
}
