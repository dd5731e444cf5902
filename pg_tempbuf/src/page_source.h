/*-------------------------------------------------------------------------
 *
 * page_source.h
 *	  The one place a participant gets a temporary relation's page
 *	  (page_source.c): from the leader's local buffers, its pool, or the
 *	  file; sequential batches, or random access through a small cache of
 *	  copies.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_PAGE_SOURCE_H
#define TB_PAGE_SOURCE_H

#include "common/relpath.h"
#include "storage/bufpage.h"
#include "utils/relcache.h"

#include "compat.h"

typedef struct TbPageSource TbPageSource;

/* sequential: the caller's page buffer, from the file or the leader */
extern int	tb_page_source_read_file(Relation rel, ForkNumber fork, BlockNumber blkno,
									 char *page, char *scratch);
extern void tb_page_source_read_image(Relation rel, ForkNumber fork,
									  BlockNumber blkno, char *page);

/* A page in the leader's local buffers, for a worker to read from there. */
typedef struct TbLeaderPage
{
	BlockNumber blkno;
	int			buf_id;
	bool		pinned;			/* by the leader until the scan ends: read in place */
} TbLeaderPage;

extern const TbLeaderPage *tb_leader_page_find(const TbLeaderPage *pages, int npages,
											   BlockNumber blkno);
extern bool tb_page_source_copy_listed(Relation rel, const TbLeaderPage *page, char *dest,
									   char *scratch);
extern void tb_page_source_verify_leader_copies(void);
extern const char *tb_page_source_leader_page(Relation rel, const TbLeaderPage *page);
extern void tb_page_source_read_leader_pool(Relation rel);
extern bool tb_page_source_copy_from_pool(Relation rel, BlockNumber blkno, char *dest,
										  char *scratch);

/* random: by block number, through a small cache of copies */
extern void tb_page_source_guard_file_reads(void);
extern void tb_page_source_copy_from_leader(Oid relid, const TbLeaderPage *pages,
											int npages);
extern TbPageSource *tb_page_source_create(MemoryContext cxt);
extern Page tb_page_source_get(TbPageSource *src, Relation rel, BlockNumber blkno);
extern Page tb_page_source_hold(TbPageSource *src, Relation rel, BlockNumber blkno);
extern void tb_page_source_close(TbPageSource *src);
extern void tb_page_source_take_counts(TbPageSource *src, uint64 *reads,
									   uint64 *rereads);

/*
 * Worker: a page read in the leader's pool without a pin, which the leader
 * may evict meanwhile: in place, or in pieces with pread() where the
 * mapping would fault.  The reader copies what it takes, then asks whether
 * the buffer held the page all along.
 */
typedef struct TbPeek
{
	TbRelFileId file;
	BlockNumber blkno;
	int			buf_id;
	const char *in_place;		/* the page in the mapping, or NULL: pread() it */
	bool		paused;			/* pg_tempbuf.debug_hazard */
} TbPeek;

extern const char *tb_page_source_peek(TbPageSource *src, Relation rel,
									   BlockNumber blkno, TbPeek *peek);
extern bool tb_page_source_peek_copy(const TbPeek *peek, Size offset, Size len,
									 char *dest);
extern bool tb_page_source_peek_held(TbPeek *peek);

/*
 * pg_tempbuf.debug_hazard: a reader that has read the first half of block
 * blkno (page, from the leader's memory or the file) calls this hook; when
 * it returns true the reader reads the second half as it is now, then calls
 * it again with done set.  A batch of copies from the leader calls it with
 * page NULL between the batch's first descriptors and its pages, blkno one
 * of the batch's blocks.
 */
typedef bool (*TbMidReadHook) (BlockNumber blkno, const char *page, bool from_leader,
							   bool done, void *arg);
extern TbMidReadHook tb_mid_read_hook;
extern void *tb_mid_read_arg;

#endif							/* TB_PAGE_SOURCE_H */
