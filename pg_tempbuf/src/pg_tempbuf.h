/*-------------------------------------------------------------------------
 *
 * pg_tempbuf.h
 *	  Declarations shared by the files of the pg_tempbuf extension.
 *
 * Everything here acts on the calling backend's own local buffers, the
 * private buffer pool (temp_buffers) that holds temporary tables' pages.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_TEMPBUF_H
#define PG_TEMPBUF_H

#include "compat.h"

/* GUCs of the flush cost model (flush_cost.c) */
extern double tb_write_page_cost;
extern double tb_buffer_scan_cost;

extern void tb_define_cost_gucs(void);

/*
 * What a walk over the local buffer pool saw.  "allocated" counts buffers
 * holding a valid page; "dirty" those whose page must be written before
 * another process may read the file.
 */
typedef struct TbLocalBufferCounts
{
	int			pool_size;		/* NLocBuffer: 0 until first temp access */
	int			allocated;
	int			dirty;
} TbLocalBufferCounts;

/* localbuf_access.c: walks over this backend's local buffers */
extern void tb_count_local_buffers(const TbRelFileId *only, ForkNumber fork,
								   TbLocalBufferCounts *counts);
extern int64 tb_flush_local_buffers(const TbRelFileId *only, ForkNumber fork);
extern int64 tb_evict_local_buffers(Relation rel);
extern BlockNumber *tb_resident_blocks(TbRelFileId file, ForkNumber fork,
									   int *nblocks);

/* flush_cost.c */
extern double tb_flush_cost(Relation rel);

#endif							/* PG_TEMPBUF_H */
