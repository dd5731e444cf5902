/*-------------------------------------------------------------------------
 *
 * localbuf_access.c
 *	  Walks over this backend's local buffer pool: count, flush, evict,
 *	  and list the resident pages of one relation.
 *
 * Local buffers are private to the backend, so none of this takes locks:
 * the descriptors' state words are only ever changed by this process.  A
 * "scope" is either the whole pool (only == NULL) or one relation file,
 * optionally narrowed to one fork (InvalidForkNumber means every fork).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "compat.h"
#include "core_copies.h"
#include "localbuf_access.h"
#include "shared_pool.h"

static inline bool
in_scope(BufferDesc *bufHdr, const TbRelFileId *only, ForkNumber fork)
{
	if (only == NULL)
		return true;
	if (!TbTagMatchesFileId(&bufHdr->tag, *only))
		return false;
	return fork == InvalidForkNumber || TbTagForkNum(&bufHdr->tag) == fork;
}

/* A hash table that lives as long as the session, keyed by plain bytes. */
static HTAB *
session_hash(const char *name, Size keysize, Size entrysize, long nelem)
{
	HASHCTL		ctl;

	ctl.keysize = keysize;
	ctl.entrysize = entrysize;
	ctl.hcxt = TopMemoryContext;
	return hash_create(name, nelem, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

void
tb_count_local_buffers(const TbRelFileId *only, ForkNumber fork,
					   TbLocalBufferCounts *counts)
{
	counts->allocated = 0;
	counts->dirty = 0;

	for (int i = 0; i < NLocBuffer; i++)
	{
		BufferDesc *bufHdr = GetLocalBufferDescriptor(i);
		TbBufState	buf_state = TbReadBufState(bufHdr);

		if (!(buf_state & BM_VALID) || !in_scope(bufHdr, only, fork))
			continue;
		counts->allocated++;
		if (buf_state & BM_DIRTY)
			counts->dirty++;
	}
}

/*
 * The planner prices a scan by the pool's state: how many buffers hold a
 * page, and how many of a table's main-fork pages are resident and dirty.
 * Walking every local buffer for that made planning grow with temp_buffers
 * (at 4 GB, a point query planned 200 times slower than without us).  So
 * one walk counts every relation file at once, and the census is kept
 * until the pool may have changed: core counts every local read,
 * extension, write and newly dirtied page in pgBufferUsage, and what drops
 * buffers without one of those (DROP, TRUNCATE, our eviction) invalidates
 * the relation's relcache entry or calls tb_pool_census_reset().  Workers'
 * usage added to the leader's counters only costs a walk, as do the pages
 * our scans read from files, counted as reads (page_source.c).  Only the
 * invalidation of a table that was priced from the census counts: other
 * sessions' catalog changes arrive here too, all the time on a busy server.
 */
typedef struct CensusEntry
{
	TbRelFileId file;			/* hash key */
	TbLocalBufferCounts main_fork;
} CensusEntry;

typedef struct PoolCensus
{
	bool		valid;
	int64		blks_read;
	int64		blks_dirtied;
	int64		blks_written;
	int			nbuffers;
	TbLocalBufferCounts pool;
	HTAB	   *files;
	uint64		generation;		/* counts the censuses taken */
} PoolCensus;

static PoolCensus census;
static HTAB *census_priced_relids = NULL;	/* tables priced from it */

void
tb_pool_census_reset(void)
{
	census.valid = false;
}

static void
census_relcache_callback(Datum arg, Oid relid)
{
	if (!OidIsValid(relid) ||
		hash_search(census_priced_relids, &relid, HASH_FIND, NULL) != NULL)
		census.valid = false;
}

/* relid is priced from the census: its invalidation must reset it. */
void
tb_pool_census_watch(Oid relid)
{
	if (census_priced_relids == NULL)
	{
		census_priced_relids = session_hash("pg_tempbuf priced tables",
											sizeof(Oid), sizeof(Oid), 16);
		CacheRegisterRelcacheCallback(census_relcache_callback, (Datum) 0);
	}
	(void) hash_search(census_priced_relids, &relid, HASH_ENTER, NULL);
}

static bool
census_is_current(void)
{
	return census.valid &&
		census.blks_read == pgBufferUsage.local_blks_read &&
		census.blks_dirtied == pgBufferUsage.local_blks_dirtied &&
		census.blks_written == pgBufferUsage.local_blks_written &&
		census.nbuffers == NLocBuffer;
}

/*
 * How many local buffers may hold a page: core hands them out in order
 * from the first (the clock sweep of localbuf.c starts there, and finds
 * every buffer it has not reached yet unused), and each one it hands out
 * is a page read, extended (counted as written) or zeroed and then dirtied.
 * So a session that has touched less than its temp_buffers walks only
 * what it touched.  Workers' counts, which are added to the leader's, only
 * make the bound looser.
 */
static int
buffers_maybe_used(void)
{
	int64		touched = pgBufferUsage.local_blks_read +
		pgBufferUsage.local_blks_written +
		pgBufferUsage.local_blks_dirtied;

	return (int) Min((int64) NLocBuffer, touched);
}

static void
take_census(void)
{
	int			nbuffers = buffers_maybe_used();
	CensusEntry *entry = NULL;

	if (census.files)
		hash_destroy(census.files);
	census.files = session_hash("pg_tempbuf pool census", sizeof(TbRelFileId),
								sizeof(CensusEntry), 64);
	census.pool.allocated = census.pool.dirty = 0;
	for (int i = 0; i < nbuffers; i++)
	{
		BufferDesc *bufHdr = GetLocalBufferDescriptor(i);
		TbBufState	buf_state = TbReadBufState(bufHdr);
		bool		dirty = (buf_state & BM_DIRTY) != 0;
		TbRelFileId file;
		bool		found;

		if (!(buf_state & BM_VALID))
			continue;
		census.pool.allocated++;
		census.pool.dirty += dirty;
		if (TbTagForkNum(&bufHdr->tag) != MAIN_FORKNUM)
			continue;
		/* Buffers handed out in order: runs of them hold one file's pages. */
		if (entry == NULL || !TbTagMatchesFileId(&bufHdr->tag, entry->file))
		{
			file = TbTagFileId(&bufHdr->tag);
			entry = hash_search(census.files, &file, HASH_ENTER, &found);
			if (!found)
				entry->main_fork.allocated = entry->main_fork.dirty = 0;
		}
		entry->main_fork.allocated++;
		entry->main_fork.dirty += dirty;
	}
	census.blks_read = pgBufferUsage.local_blks_read;
	census.blks_dirtied = pgBufferUsage.local_blks_dirtied;
	census.blks_written = pgBufferUsage.local_blks_written;
	census.nbuffers = NLocBuffer;
	census.generation++;
	census.valid = true;
}

/*
 * Which census answers now: what a caller derived from an answer of the
 * same generation still holds.
 */
uint64
tb_pool_census_generation(void)
{
	if (!census_is_current())
		take_census();
	return census.generation;
}

/*
 * What tb_count_local_buffers() would say of the whole pool (pool) and of
 * file's main fork (main_fork, when file is not NULL), from the census.
 */
void
tb_pool_census(const TbRelFileId *file, TbLocalBufferCounts *main_fork,
			   TbLocalBufferCounts *pool)
{
	if (!census_is_current())
		take_census();
	if (pool)
		*pool = census.pool;
	if (file)
	{
		CensusEntry *entry = hash_search(census.files, file, HASH_FIND, NULL);

		main_fork->allocated = entry ? entry->main_fork.allocated : 0;
		main_fork->dirty = entry ? entry->main_fork.dirty : 0;
	}
}

/*
 * The pool's directory (shared_pool.c), written from the pool as the
 * census last found it: again only when the census is taken again, so a
 * session whose pool does not change between statements (queries over
 * tables loaded before) walks its pool once, not at every parallel scan.
 */
static uint64 directory_generation = 0;

static void
write_directory(void)
{
	int			capacity;
	TbPoolRun  *runs = tb_shared_pool_directory_begin(&capacity);
	TbPoolRun  *run = NULL;
	int			nruns = 0;
	int			nbuffers = Min(buffers_maybe_used(), capacity);

	for (int i = 0; i < nbuffers; i++)
	{
		BufferDesc *bufHdr = GetLocalBufferDescriptor(i);

		if (!(TbReadBufState(bufHdr) & BM_VALID) ||
			TbTagForkNum(&bufHdr->tag) != MAIN_FORKNUM)
			continue;
		if (run != NULL && run->buf_id + run->nblocks == i &&
			run->first + run->nblocks == bufHdr->tag.blockNum &&
			TbTagMatchesFileId(&bufHdr->tag, run->file))
		{
			run->nblocks++;
			continue;
		}
		run = &runs[nruns++];
		memset(run, 0, sizeof(TbPoolRun));
		run->file = TbTagFileId(&bufHdr->tag);
		run->first = bufHdr->tag.blockNum;
		run->buf_id = i;
		run->nblocks = 1;
	}
	tb_shared_pool_directory_end(nruns);
}

/*
 * Leader: make the pool's directory show where the pool holds each page
 * now; false where the pool is private and has none.
 */
bool
tb_pool_directory_publish(void)
{
	uint64		generation;

	if (!tb_shared_pool_adopted())
		return false;
	generation = tb_pool_census_generation();
	if (generation != directory_generation)
	{
		write_directory();
		directory_generation = generation;
	}
	return true;
}

/*
 * Note buffer buf_id in page, if it holds a page of file's fork; how many
 * it noted (0 or 1).
 */
static int
note_resident(TbResidentPage *page, int buf_id, const TbRelFileId *file, ForkNumber fork)
{
	BufferDesc *bufHdr = GetLocalBufferDescriptor(buf_id);
	TbBufState	buf_state = TbReadBufState(bufHdr);

	if (!(buf_state & BM_VALID) || !in_scope(bufHdr, file, fork))
		return 0;
	page->blkno = bufHdr->tag.blockNum;
	page->buf_id = buf_id;
	page->dirty = (buf_state & BM_DIRTY) != 0;
	page->pinned = false;
	return 1;
}

/* tb_resident_pages() of a main fork, from the directory, in block order. */
static TbResidentPage *
resident_pages_by_directory(TbRelFileId file, int *npages)
{
	int			nruns;
	int			count;
	const TbPoolRun *runs = tb_shared_pool_directory(&nruns);
	const TbPoolRun *mine = tb_pool_runs_of_file(runs, nruns, file, &count);
	TbResidentPage *pages;
	int			total = 0;
	int			n = 0;

	for (int r = 0; r < count; r++)
		total += mine[r].nblocks;
	pages = palloc(sizeof(TbResidentPage) * Max(total, 1));
	/* A dropped relation's buffers stay listed until the pool changes. */
	for (int r = 0; r < count; r++)
		for (int k = 0; k < mine[r].nblocks; k++)
			n += note_resident(&pages[n], mine[r].buf_id + k, &file, MAIN_FORKNUM);
	*npages = n;
	return pages;
}

/* Order local buffer ids by relation file, fork, then block. */
static int
compare_buffer_tags(const void *a, const void *b)
{
	BufferTag  *ta = &GetLocalBufferDescriptor(*(const int *) a)->tag;
	BufferTag  *tb = &GetLocalBufferDescriptor(*(const int *) b)->tag;

	if (TbTagRelNumber(ta) != TbTagRelNumber(tb))
		return TbTagRelNumber(ta) < TbTagRelNumber(tb) ? -1 : 1;
	if (TbTagSpcOid(ta) != TbTagSpcOid(tb))
		return TbTagSpcOid(ta) < TbTagSpcOid(tb) ? -1 : 1;
	if (TbTagDbOid(ta) != TbTagDbOid(tb))
		return TbTagDbOid(ta) < TbTagDbOid(tb) ? -1 : 1;
	if (TbTagForkNum(ta) != TbTagForkNum(tb))
		return TbTagForkNum(ta) < TbTagForkNum(tb) ? -1 : 1;
	return (ta->blockNum > tb->blockNum) - (ta->blockNum < tb->blockNum);
}

static int
compare_resident_pages(const void *a, const void *b)
{
	BlockNumber ba = ((const TbResidentPage *) a)->blkno;
	BlockNumber bb = ((const TbResidentPage *) b)->blkno;

	return (ba > bb) - (ba < bb);
}

/*
 * Write the buffers ids[0..n-1], sorted by compare_buffer_tags, grouping
 * runs of consecutive blocks of one fork into one write each.
 */
static void
write_sorted_buffers(const int *ids, int n)
{
	BufferDesc *run[TB_MAX_WRITE_RUN];
	int			nrun = 0;
	TbRelFileId run_file;

	for (int i = 0; i < n; i++)
	{
		BufferDesc *bufHdr = GetLocalBufferDescriptor(ids[i]);

		if (nrun > 0 &&
			(nrun == TB_MAX_WRITE_RUN ||
			 bufHdr->tag.blockNum != run[nrun - 1]->tag.blockNum + 1 ||
			 TbTagForkNum(&bufHdr->tag) != TbTagForkNum(&run[0]->tag) ||
			 !TbTagMatchesFileId(&bufHdr->tag, run_file)))
		{
			CHECK_FOR_INTERRUPTS();
			tb_write_local_run(run, nrun);
			nrun = 0;
		}
		if (nrun == 0)
			run_file = TbTagFileId(&bufHdr->tag);
		run[nrun++] = bufHdr;
	}
	if (nrun > 0)
		tb_write_local_run(run, nrun);
}

/*
 * Relation file forks known to have no dirty page, without walking the
 * pool: each was flushed whole when pgBufferUsage.local_blks_dirtied had
 * the value kept here, and every local buffer that turns dirty adds one to
 * it (MarkLocalBufferDirty(), hint bits included; a page added to a
 * relation is dirtied by whoever fills it, not by the extension).  While
 * the counter has not moved, no page anywhere became dirty, so the fork is
 * still clean: a scan that flushes it before workers read (every Temp
 * Seq Scan and Temp Index Scan does) need not walk temp_buffers again to
 * find nothing.  Workers' counters added to the leader's only move it.
 */
typedef struct CleanForkKey
{
	TbRelFileId file;
	ForkNumber	fork;
} CleanForkKey;

typedef struct CleanFork
{
	CleanForkKey key;			/* hash key */
	int64		dirtied;		/* local_blks_dirtied when it was flushed */
} CleanFork;

static HTAB *clean_forks = NULL;
static int64 all_clean_dirtied = -1;	/* the whole pool was flushed then */

static CleanForkKey
clean_fork_key(const TbRelFileId *file, ForkNumber fork)
{
	CleanForkKey key;

	memset(&key, 0, sizeof(key));
	key.file = *file;
	key.fork = fork;
	return key;
}

bool
tb_fork_known_clean(const TbRelFileId *file, ForkNumber fork)
{
	CleanForkKey key = clean_fork_key(file, fork);
	CleanFork  *entry;

	if (all_clean_dirtied == pgBufferUsage.local_blks_dirtied)
		return true;
	if (clean_forks == NULL)
		return false;
	entry = hash_search(clean_forks, &key, HASH_FIND, NULL);
	return entry != NULL && entry->dirtied == pgBufferUsage.local_blks_dirtied;
}

/* Every page of the fork dirty when the counter read dirtied went out. */
static void
remember_clean(const TbRelFileId *file, ForkNumber fork, int64 dirtied)
{
	CleanForkKey key = clean_fork_key(file, fork);
	CleanFork  *entry;

	/* Entries of dropped files only waste a few bytes: start over now and then. */
	if (clean_forks != NULL && hash_get_num_entries(clean_forks) >= 1024)
	{
		hash_destroy(clean_forks);
		clean_forks = NULL;
	}
	if (clean_forks == NULL)
		clean_forks = session_hash("pg_tempbuf clean forks", sizeof(CleanForkKey),
								   sizeof(CleanFork), 64);
	entry = hash_search(clean_forks, &key, HASH_ENTER, NULL);
	entry->dirtied = dirtied;
}

/* Ids of the valid, dirty buffers in scope, sorted; *n gets their number. */
static int *
sorted_dirty_buffers(const TbRelFileId *only, ForkNumber fork, int *n)
{
	int		   *ids = palloc(sizeof(int) * Max(NLocBuffer, 1));
	int			ndirty = 0;

	for (int i = 0; i < NLocBuffer; i++)
	{
		BufferDesc *bufHdr = GetLocalBufferDescriptor(i);
		TbBufState	buf_state = TbReadBufState(bufHdr);

		if ((buf_state & (BM_VALID | BM_DIRTY)) == (BM_VALID | BM_DIRTY) &&
			in_scope(bufHdr, only, fork))
			ids[ndirty++] = i;
	}
	qsort(ids, ndirty, sizeof(int), compare_buffer_tags);
	*n = ndirty;
	return ids;
}

/*
 * A flush done one run at a time, so that a scan can let workers read
 * what is written while the rest is still going out (temp_scan.c).
 */
void
tb_flush_cursor_open(TbFlushCursor *cursor, TbRelFileId file, ForkNumber fork)
{
	int		   *ids;

	cursor->dirtied = pgBufferUsage.local_blks_dirtied;
	if (tb_fork_known_clean(&file, fork))
	{
		ids = palloc(sizeof(int));
		cursor->ndirty = 0;
	}
	else
		ids = sorted_dirty_buffers(&file, fork, &cursor->ndirty);
	cursor->file = file;
	cursor->fork = fork;
	cursor->blocks = palloc(sizeof(BlockNumber) * Max(cursor->ndirty, 1));
	for (int i = 0; i < cursor->ndirty; i++)
		cursor->blocks[i] = GetLocalBufferDescriptor(ids[i])->tag.blockNum;
	cursor->ids = ids;
	cursor->next = 0;
	cursor->written = 0;
}

/* The lowest block still to write, or InvalidBlockNumber when none is. */
BlockNumber
tb_flush_cursor_next_block(TbFlushCursor *cursor)
{
	return cursor->next < cursor->ndirty ? cursor->blocks[cursor->next] :
		InvalidBlockNumber;
}

/*
 * Write the next run of adjacent dirty blocks below limit; returns false
 * when there is none left.  A buffer that no longer holds its page dirty
 * was written by an eviction meanwhile: the file has that page already.
 */
bool
tb_flush_cursor_write_run(TbFlushCursor *cursor, BlockNumber limit)
{
	BufferDesc *run[TB_MAX_WRITE_RUN];
	int			nrun = 0;

	while (cursor->next < cursor->ndirty && cursor->blocks[cursor->next] < limit)
	{
		BufferDesc *bufHdr = GetLocalBufferDescriptor(cursor->ids[cursor->next]);
		BlockNumber blkno = cursor->blocks[cursor->next];
		TbBufState	buf_state = TbReadBufState(bufHdr);

		if (nrun > 0 &&
			(nrun == TB_MAX_WRITE_RUN || blkno != run[nrun - 1]->tag.blockNum + 1))
			break;
		cursor->next++;
		if ((buf_state & (BM_VALID | BM_DIRTY)) != (BM_VALID | BM_DIRTY) ||
			!in_scope(bufHdr, &cursor->file, cursor->fork) ||
			bufHdr->tag.blockNum != blkno)
		{
			if (nrun > 0)
				break;
			continue;
		}
		run[nrun++] = bufHdr;
	}
	if (nrun == 0)
		return cursor->next < cursor->ndirty && cursor->blocks[cursor->next] < limit;
	tb_write_local_run(run, nrun);
	cursor->written += nrun;
	return true;
}

void
tb_flush_cursor_close(TbFlushCursor *cursor)
{
	/* Written to the end: what was dirty at the walk is on disk. */
	if (cursor->ids && cursor->next >= cursor->ndirty)
		remember_clean(&cursor->file, cursor->fork, cursor->dirtied);
	pfree(cursor->ids);
	pfree(cursor->blocks);
	cursor->ids = NULL;
	cursor->blocks = NULL;
}

/*
 * Write every dirty page in scope, in file order so that runs of adjacent
 * blocks go out in one write; returns the number written.  A second call
 * for the whole pool finds nothing to write: that is the article's "dry
 * run", the cost of scanning the pool alone.  One relation file's fork
 * known clean (above) is not walked for.
 */
int64
tb_flush_local_buffers(const TbRelFileId *only, ForkNumber fork)
{
	int64		dirtied = pgBufferUsage.local_blks_dirtied;
	int			ndirty;
	int		   *dirty;

	if (only && tb_fork_known_clean(only, fork))
		return 0;
	dirty = sorted_dirty_buffers(only, fork, &ndirty);
	write_sorted_buffers(dirty, ndirty);
	pfree(dirty);
	if (only)
		remember_clean(only, fork, dirtied);
	else if (fork == InvalidForkNumber)
		all_clean_dirtied = dirtied;
	return ndirty;
}

/*
 * Write the dirty pages of rel (or of every relation, for NULL) and drop
 * them from the pool, so the next access reads them from storage.  Returns
 * the number of pages dropped.
 *
 * The core drop routines raise an internal error on a pinned page, so a
 * pin (an open cursor on the table, say) is reported here first, before
 * anything was written.
 */
int64
tb_evict_local_buffers(Relation rel)
{
	TbRelFileId file;
	const TbRelFileId *only = NULL;
	int64		dropped = 0;

	if (rel != NULL)
	{
		file = TbRelationFileId(rel);
		only = &file;
	}

	for (int i = 0; i < NLocBuffer; i++)
	{
		BufferDesc *bufHdr = GetLocalBufferDescriptor(i);
		TbBufState	buf_state = TbReadBufState(bufHdr);

		if (!(buf_state & BM_TAG_VALID) || !in_scope(bufHdr, only, InvalidForkNumber))
			continue;
		if (LocalRefCount[i] != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 rel != NULL ?
					 errmsg("cannot evict local buffers of relation \"%s\"",
							RelationGetRelationName(rel)) :
					 errmsg("cannot evict local buffers"),
					 errdetail("Block %u of relation file %u is pinned by this session.",
							   bufHdr->tag.blockNum,
							   TbTagRelNumber(&bufHdr->tag)),
					 errhint("Close the cursors that read the table, or run this outside the transaction that opened them.")));
		dropped++;
	}

	tb_flush_local_buffers(only, InvalidForkNumber);
	tb_pool_census_reset();

	if (only != NULL)
		TbDropAllLocalBuffers(*only);
	else
	{
		/* Drop relation by relation; each call clears all of its pages. */
		for (int i = 0; i < NLocBuffer; i++)
		{
			BufferDesc *bufHdr = GetLocalBufferDescriptor(i);

			if (TbReadBufState(bufHdr) & BM_TAG_VALID)
				TbDropAllLocalBuffers(TbTagFileId(&bufHdr->tag));
		}
	}
	return dropped;
}

/*
 * The local buffers that hold pages of one fork of a relation now, sorted
 * by block, for tb_pin_resident_page().  Collected before touching any of
 * them, since reading a page may evict another.
 */
TbResidentPage *
tb_resident_pages(TbRelFileId file, ForkNumber fork, int *npages)
{
	TbResidentPage *pages;
	int			n = 0;

	if (fork == MAIN_FORKNUM && !IsParallelWorker() && tb_pool_directory_publish())
		return resident_pages_by_directory(file, npages);

	pages = palloc(sizeof(TbResidentPage) * Max(NLocBuffer, 1));
	for (int i = 0; i < NLocBuffer; i++)
		n += note_resident(&pages[n], i, &file, fork);
	qsort(pages, n, sizeof(TbResidentPage), compare_resident_pages);
	*npages = n;
	return pages;
}

/*
 * The entry of pages[] for block blkno, or NULL.  *hint is where the last
 * one was found: a scan asks for consecutive blocks, found next to it.
 */
const TbResidentPage *
tb_resident_page_find(const TbResidentPage *pages, int npages, BlockNumber blkno,
					  int *hint)
{
	TbResidentPage key = {blkno, 0, false, false};
	const TbResidentPage *found;
	int			next = *hint + 1;

	if (next < npages && pages[next].blkno == blkno)
	{
		*hint = next;
		return &pages[next];
	}
	if (npages == 0)
		return NULL;
	found = bsearch(&key, pages, npages, sizeof(TbResidentPage),
					compare_resident_pages);
	if (found != NULL)
		*hint = (int) (found - pages);
	return found;
}

/*
 * Pin the local buffer that held page's block when the list was taken, if it
 * still does, and return it; InvalidBuffer sends the caller to the file.
 * The buffer is the newest image of the page, clean or dirty, and the pin
 * keeps it in place (no eviction, no pruning) while the caller reads its
 * tuples there instead of from a copy.  ReadBuffer is then a hit, counted
 * as the serial scan's are.
 */
Buffer
tb_pin_resident_page(Relation rel, const TbResidentPage *page, ForkNumber fork)
{
	BufferDesc *bufHdr = GetLocalBufferDescriptor(page->buf_id);
	TbRelFileId file = TbRelationFileId(rel);
	Buffer		buffer;

	if (!(TbReadBufState(bufHdr) & BM_VALID) ||
		!in_scope(bufHdr, &file, fork) || bufHdr->tag.blockNum != page->blkno)
		return InvalidBuffer;
	buffer = ReadBufferExtended(rel, fork, page->blkno, RBM_NORMAL, NULL);
	Assert(buffer == BufferDescriptorGetBuffer(bufHdr));
	return buffer;
}

/*
 * Open a local buffer pool in a parallel worker, which then reads a
 * temporary table of its leader through it, from the table's file.
 *
 * Core refuses (InitLocalBuffers(), on a worker's first local buffer) as a
 * backstop: a worker cannot see its leader's unwritten pages.  A btree
 * build on a temporary table (index_build.c) meets that condition itself,
 * the leader having written the table's pages before it starts workers; so
 * the worker opens its pool here, with the backstop off for the one call,
 * by taking a buffer for a file no relation has (relfilenumber 0) and
 * dropping it again.  Nothing is read or written.
 */
void
tb_open_worker_local_buffers(void)
{
	SMgrRelationData nowhere;
	BufferDesc *buf;
	bool		found;
	int			worker_number = ParallelWorkerNumber;

	Assert(IsParallelWorker());
	if (NLocBuffer > 0)
		return;
	MemSet(&nowhere, 0, sizeof(nowhere));
	ParallelWorkerNumber = -1;
	PG_TRY();
	{
		TbReserveBufferPin();
		buf = LocalBufferAlloc(&nowhere, MAIN_FORKNUM, 0, &found);
		ReleaseBuffer(BufferDescriptorGetBuffer(buf));
		TbDropLocalBuffers(TbSmgrFileId(&nowhere), MAIN_FORKNUM, 0);
	}
	PG_FINALLY();
	{
		ParallelWorkerNumber = worker_number;
	}
	PG_END_TRY();
}
