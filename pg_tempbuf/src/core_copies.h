/*-------------------------------------------------------------------------
 *
 * core_copies.h
 *	  Code derived from PostgreSQL's own (core_copies.c), each function
 *	  naming its source: the planner's parallel divisor and loop count, the
 *	  visibility map's bits, a tuple's visibility to a snapshot, a run of
 *	  local buffers written.  The ground floor: it calls nothing of the
 *	  extension.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_CORE_COPIES_H
#define TB_CORE_COPIES_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "nodes/pathnodes.h"
#include "storage/buf_internals.h"
#include "storage/bufpage.h"
#include "utils/snapshot.h"

/*
 * The last inserting transaction a scan looked up, and whether the scan's
 * snapshot sees its insertion: rows written together share it, and a page
 * without hint bits would otherwise ask the snapshot and the commit log
 * about it for every row.
 */
typedef struct TbXminVerdict
{
	TransactionId xid;			/* InvalidTransactionId: none yet */
	bool		visible;
} TbXminVerdict;

extern double tb_parallel_divisor(int parallel_workers);
extern double tb_loop_count(PlannerInfo *root, Index cur_relid, Relids outer_relids);
extern BlockNumber tb_vm_block(BlockNumber heap_block);
extern bool tb_vm_all_visible(Page vm_page, BlockNumber heap_block);

extern bool tb_tuple_visible(HeapTupleHeader tuple, Snapshot snapshot,
							 TbXminVerdict *last_xmin);
extern void tb_write_local_run(BufferDesc **bufs, int n);
extern void tb_heap_deform_prefix(HeapTuple tuple, TupleDesc desc, int natts,
								  Datum *values, bool *isnull);

#endif							/* TB_CORE_COPIES_H */
