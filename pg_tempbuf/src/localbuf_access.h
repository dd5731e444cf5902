/*-------------------------------------------------------------------------
 *
 * localbuf_access.h
 *	  Walks over this backend's local buffer pool (localbuf_access.c):
 *	  count, flush in file order, evict, and list and pin the resident pages
 *	  of one relation.  The storage floor.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_LOCALBUF_ACCESS_H
#define TB_LOCALBUF_ACCESS_H

#include "utils/relcache.h"

#include "compat.h"

/*
 * What a walk over the local buffer pool saw.  "allocated" counts buffers
 * holding a valid page; "dirty" those whose page must be written before
 * another process may read the file.
 */
typedef struct TbLocalBufferCounts
{
	int			allocated;
	int			dirty;
} TbLocalBufferCounts;

extern void tb_count_local_buffers(const TbRelFileId *only, ForkNumber fork,
								   TbLocalBufferCounts *counts);
extern void tb_pool_census(const TbRelFileId *file, TbLocalBufferCounts *main_fork,
						   TbLocalBufferCounts *pool);
extern void tb_pool_census_reset(void);
extern uint64 tb_pool_census_generation(void);
extern void tb_pool_census_watch(Oid relid);
extern bool tb_pool_directory_publish(void);
extern int64 tb_flush_local_buffers(const TbRelFileId *only, ForkNumber fork);
extern bool tb_fork_known_clean(const TbRelFileId *file, ForkNumber fork);
extern int64 tb_evict_local_buffers(Relation rel);
extern void tb_open_worker_local_buffers(void);

/* One relation's dirty pages, written a run at a time, in file order. */
typedef struct TbFlushCursor
{
	TbRelFileId file;
	ForkNumber	fork;
	int		   *ids;			/* buffer ids, sorted by block */
	BlockNumber *blocks;		/* the block each held when collected */
	int			ndirty;
	int			next;
	int64		written;
	int64		dirtied;		/* local_blks_dirtied at the walk */
} TbFlushCursor;

extern void tb_flush_cursor_open(TbFlushCursor *cursor, TbRelFileId file,
								 ForkNumber fork);
extern BlockNumber tb_flush_cursor_next_block(TbFlushCursor *cursor);
extern bool tb_flush_cursor_write_run(TbFlushCursor *cursor, BlockNumber limit);
extern void tb_flush_cursor_close(TbFlushCursor *cursor);

/* A page of a relation held in a local buffer. */
typedef struct TbResidentPage
{
	BlockNumber blkno;
	int			buf_id;
	bool		dirty;			/* when listed */
	bool		pinned;			/* by page_guard.c for this scan */
} TbResidentPage;

extern TbResidentPage *tb_resident_pages(TbRelFileId file, ForkNumber fork,
										 int *npages);
extern const TbResidentPage *tb_resident_page_find(const TbResidentPage *pages,
												  int npages, BlockNumber blkno,
												  int *hint);
extern Buffer tb_pin_resident_page(Relation rel, const TbResidentPage *page,
								   ForkNumber fork);

#endif							/* TB_LOCALBUF_ACCESS_H */
