/*-------------------------------------------------------------------------
 *
 * shared_pool.h
 *	  The leader's local buffer pool in memory its parallel workers map
 *	  read-only (shared_pool.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_SHARED_POOL_H
#define TB_SHARED_POOL_H

#include "storage/buf_internals.h"

#include "compat.h"

/* What a worker needs to map its leader's pool: goes into the query's DSM. */
typedef struct TbSharedPoolRef
{
	pid_t		leader_pid;
	int			fd;				/* the leader's descriptor of the memfd */
	uint64		cookie;			/* names this pool: checked after mapping */
	Size		size;
	int			nbuffers;
} TbSharedPoolRef;

/*
 * The pool's directory: blocks first .. first + nblocks - 1 of file's main
 * fork in buffers buf_id .. buf_id + nblocks - 1.
 */
typedef struct TbPoolRun
{
	TbRelFileId file;
	BlockNumber first;
	int			buf_id;
	int			nblocks;
} TbPoolRun;

extern const TbPoolRun *tb_pool_runs_of_file(const TbPoolRun *runs, int nruns,
											 TbRelFileId file, int *count);

/* leader */
extern bool tb_shared_pool_adopt(void);
extern bool tb_shared_pool_adopted(void);
extern TbPoolRun *tb_shared_pool_directory_begin(int *capacity);
extern void tb_shared_pool_directory_end(int nruns);
extern const TbPoolRun *tb_shared_pool_directory(int *nruns);
extern const char *tb_shared_pool_unreadable(void);
extern void tb_shared_pool_describe(TbSharedPoolRef *ref);

/* worker */
extern int	tb_shared_pool_attach(const TbSharedPoolRef *ref);
extern int	tb_shared_pool_attach_leader(void);
extern int	tb_shared_pool_lookup(TbRelFileId file, BlockNumber blkno);
extern const BufferDesc *tb_shared_pool_desc(int buf_id);
extern const char *tb_shared_pool_page(int buf_id);
extern bool tb_shared_pool_read_in_place(int buf_id);
extern int	tb_shared_pool_file(int buf_id, off_t *page_at);

#endif							/* TB_SHARED_POOL_H */
