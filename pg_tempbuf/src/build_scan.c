/*-------------------------------------------------------------------------
 *
 * build_scan.c
 *	  A worker of a parallel btree build on a temporary table: its share
 *	  of the table, read in runs of pages put in a small ring of local
 *	  buffers, from the leader's pool or from the file.
 *
 * Core's parallel build (nbtsort.c) has each worker scan the blocks a
 * shared parallel scan hands it, through its own local buffers here, as
 * core would refuse them to a worker.  Two things stand in the way of
 * letting core's scan read them: the file lacks what the leader holds
 * dirty, unless the leader writes it first; and a worker's local buffer,
 * once dirtied (hint bits, a prune), cannot be evicted, because core
 * writes it to a file named after the worker's own backend.  So a worker
 * held a buffer for every page it read, a third of the table each.
 *
 * Instead the worker's heap relation gets a table access method routine
 * of its own (as index_build.c gives the index a btree routine), whose
 * index_build_range_scan takes the blocks the shared scan hands out, in
 * runs of up to TB_BUILD_RUN_PAGES consecutive ones.  It puts each page of
 * a run into a local buffer of a ring of TB_BUILD_RING_BUFFERS, clean: a
 * copy out of the leader's pool where the leader holds it (the pool's
 * directory, checked as the scans check it, page_source.c), from the file
 * otherwise, where every page the leader does not hold is.  Then core's
 * own range scan (heapam's index_build_range_scan, the one BRIN uses on a
 * range of blocks) reads them there, as a serial build reads its pages,
 * and calls nbtsort.c's callback; then the run's buffers are dropped,
 * dirty or not, never written.  The leader writes nothing, and a worker's
 * memory for the table is the ring's, whatever the table's size.
 *
 * The routine must be in place before core starts the worker's scan, and
 * no hook runs in the worker between core opening the table and scanning
 * it.  So the worker builds the table's relation cache entry itself, once
 * its leader's snapshot is restored and before core opens the table (which
 * then finds it), keeps it referenced, so that an invalidation rebuilds it
 * in place, and puts the routine back after any rebuild.  Should the
 * routine ever be missing when core scans, core's scan finds no local
 * buffers in a worker and raises an error: it cannot read a stale page.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/parallel.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "storage/bufmgr.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/resowner.h"

#include "build_scan.h"
#include "compat.h"
#include "guc.h"
#include "localbuf_access.h"
#include "page_source.h"
#include "shared_pool.h"

static struct
{
	Relation	heap;			/* the table, referenced until the worker exits */
	bool		from_pool;		/* the leader wrote nothing: copy from its pool */
	bool		scanning;		/* our range scan runs: core's routine is back */
	TableAmRoutine routine;		/* heapam's, but for index_build_range_scan */
}			build_worker;

static double build_worker_range_scan(Relation heap, Relation index,
									  IndexInfo *indexInfo, bool allow_sync,
									  bool anyvisible, bool progress,
									  BlockNumber start_blockno,
									  BlockNumber numblocks,
									  IndexBuildCallback callback,
									  void *callback_state, TableScanDesc scan);

static void
route_scan_through_us(void)
{
	if (build_worker.heap != NULL && !build_worker.scanning)
		build_worker.heap->rd_tableam = &build_worker.routine;
}

/*
 * Worker, while it starts: the table's relation cache entry, with our
 * routine, before core opens the table.  Core restores its leader's
 * temporary namespace after everything that can call us here, so the entry
 * is built as one of another session's temporary tables: the backend it
 * names is the leader's, as it should be, and it is marked local, as the
 * entry core builds a moment later would be.
 */
void
tb_build_scan_worker_prepare(Oid relid, bool from_pool)
{
	static ResourceOwner holder = NULL;
	ResourceOwner saved = CurrentResourceOwner;
	Relation	heap;

	Assert(IsParallelWorker() && build_worker.heap == NULL);
	if (holder == NULL)
		holder = ResourceOwnerCreate(NULL, "pg_tempbuf build worker");
	/* Referenced for the worker's life, not its transaction's. */
	CurrentResourceOwner = holder;
	heap = RelationIdGetRelation(relid);
	CurrentResourceOwner = saved;
	if (!RelationIsValid(heap))
		return;
	heap->rd_islocaltemp = true;
	build_worker.routine = *GetHeapamTableAmRoutine();
	build_worker.routine.index_build_range_scan = build_worker_range_scan;
	build_worker.from_pool = from_pool;
	build_worker.heap = heap;
	route_scan_through_us();
}

/* Worker: an invalidation of relid (InvalidOid: of all) rebuilt the entry. */
void
tb_build_scan_worker_reset(Oid relid)
{
	if (build_worker.heap != NULL &&
		(!OidIsValid(relid) || relid == RelationGetRelid(build_worker.heap)))
		route_scan_through_us();
}

/*
 * One page into a local buffer of the ring, clean: out of the leader's pool
 * where it holds the page, else from the file.
 */
static void
put_page(Relation heap, BlockNumber blkno, char *scratch)
{
	Buffer		buffer = ReadBufferExtended(heap, MAIN_FORKNUM, blkno,
											RBM_ZERO_AND_LOCK, NULL);
	char	   *page = (char *) BufferGetPage(buffer);

	if (!tb_page_source_copy_from_pool(heap, blkno, page, scratch))
		(void) tb_page_source_read_file(heap, MAIN_FORKNUM, blkno, page, scratch);
	UnlockReleaseBuffer(buffer);
}

/*
 * The worker's share of the parallel scan, run by run: core's range scan
 * over each run's pages in the ring, then the ring emptied, never written.
 */
static double
scan_share(Relation heap, Relation index, IndexInfo *indexInfo, bool anyvisible,
		   IndexBuildCallback callback, void *callback_state, TableScanDesc scan)
{
	const TableAmRoutine *heapam = GetHeapamTableAmRoutine();
	ParallelBlockTableScanDesc pbscan = (ParallelBlockTableScanDesc) scan->rs_parallel;
	ParallelBlockTableScanWorkerData work;
	TbRelFileId file = TbRelationFileId(heap);
	char	   *scratch = palloc(BLCKSZ);
	BlockNumber run_start = InvalidBlockNumber;
	BlockNumber run_length = 0;
	double		reltuples = 0;

	num_temp_buffers = TB_BUILD_RING_BUFFERS;
	tb_open_worker_local_buffers();
	TbParallelScanStartblockInit(heap, &work, pbscan, (HeapScanDesc) scan);
	for (;;)
	{
		BlockNumber blkno = table_block_parallelscan_nextpage(heap, &work, pbscan);

		if (run_length > 0 &&
			(blkno != run_start + run_length || run_length == TB_BUILD_RUN_PAGES))
		{
			reltuples += heapam->index_build_range_scan(heap, index, indexInfo,
														false, anyvisible, false,
														run_start, run_length,
														callback, callback_state,
														NULL);
			TbDropLocalBuffers(file, MAIN_FORKNUM, 0);
			run_length = 0;
		}
		if (blkno == InvalidBlockNumber)
			break;
		if (run_length == 0)
			run_start = blkno;
		put_page(heap, blkno, scratch);
		run_length++;
	}
	pfree(scratch);
	return reltuples;
}

/* Worker: map the leader's pool; 0, or the errno of the refusal. */
static int
map_leader_pool(void)
{
	/* pg_tempbuf.debug_hazard = handshake_stall: as if the system refused it. */
	if (tb_debug_hazard == TB_HAZARD_HANDSHAKE_STALL)
		return EACCES;
	return tb_shared_pool_attach_leader();
}

/*
 * The routine's index_build_range_scan, in a build worker.  Core's heap
 * functions insist on core's routine (heap_getnext()), so it goes back
 * first.  A worker that cannot map the leader's pool, where the leader
 * wrote nothing, takes no block: the others take its share.
 */
static double
build_worker_range_scan(Relation heap, Relation index, IndexInfo *indexInfo,
						bool allow_sync, bool anyvisible, bool progress,
						BlockNumber start_blockno, BlockNumber numblocks,
						IndexBuildCallback callback, void *callback_state,
						TableScanDesc scan)
{
	const TableAmRoutine *heapam = GetHeapamTableAmRoutine();
	double		reltuples = 0;
	int			err;

	build_worker.scanning = true;
	heap->rd_tableam = heapam;
	if (scan == NULL || scan->rs_parallel == NULL)
		return heapam->index_build_range_scan(heap, index, indexInfo, allow_sync,
											  anyvisible, progress, start_blockno,
											  numblocks, callback, callback_state,
											  scan);

	if (build_worker.from_pool && (err = map_leader_pool()) != 0)
		ereport(DEBUG1,
				(errmsg_internal("parallel worker could not map the leader's local buffers, and reads no page of temporary table \"%s\": %s",
								 RelationGetRelationName(heap), strerror(err))));
	else
	{
		if (build_worker.from_pool)
			tb_page_source_read_leader_pool(heap);
		reltuples = scan_share(heap, index, indexInfo, anyvisible, callback,
							   callback_state, scan);
	}
	table_endscan(scan);
	return reltuples;
}
