/*-------------------------------------------------------------------------
 *
 * build_scan.h
 *	  A parallel btree build's worker reading its share of a temporary
 *	  table (build_scan.c): in runs of pages it puts in a small ring of
 *	  local buffers, from the leader's pool or the file.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_BUILD_SCAN_H
#define TB_BUILD_SCAN_H

#include "utils/relcache.h"

/* The pages of one run, and the ring a worker opens for them. */
#define TB_BUILD_RUN_PAGES		128
#define TB_BUILD_RING_BUFFERS	(TB_BUILD_RUN_PAGES + 16)

extern void tb_build_scan_worker_prepare(Oid relid, bool from_pool);
extern void tb_build_scan_worker_reset(Oid relid);

#endif							/* TB_BUILD_SCAN_H */
