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

#include "access/htup.h"
#include "access/itup.h"
#include "access/skey.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"
#include "port/atomics.h"
#include "utils/snapshot.h"

#include "compat.h"

/* guc.c: the settings */
extern void tb_define_gucs(void);
extern bool tb_parallel_scan_enabled;
extern bool tb_index_scan_enabled;
extern bool tb_verify_reread;
extern bool tb_debug_sync_start;
extern bool tb_shared_pool_enabled;
extern int	tb_debug_hazard;
extern bool tb_debug_unprotected;

/*
 * pg_tempbuf.debug_hazard: for tests, make one of the races that the scan
 * guards against happen on purpose (a worker pauses in the middle of
 * reading a page while the leader changes it); pg_tempbuf.debug_unprotected
 * turns the guards off, to show that the test would catch the race.
 */
typedef enum TbDebugHazard
{
	TB_HAZARD_NONE,
	TB_HAZARD_PRUNE_DURING_COPY,	/* leader prunes a page a worker copies */
	TB_HAZARD_PRUNE_DURING_READ,	/* leader prunes and writes a page a worker reads */
	TB_HAZARD_WRITE_DURING_READ,	/* leader writes a dirty page a worker reads */
	TB_HAZARD_REFILL_DURING_COPY,	/* the copied buffer holds another page meanwhile */
	TB_HAZARD_HANDSHAKE_STALL,	/* workers refuse copies while the leader stalls */
	TB_HAZARD_EVICT_DURING_BATCH,	/* a buffer of a worker's batch goes to another block */
	TB_HAZARD_LIST_OVERFLOW,	/* the list of the leader's pages has half the room */
	TB_HAZARD_SLOW_WRITES		/* each write run of the flush takes 100 ms more */
} TbDebugHazard;

/* The hazards where a reader pauses in the middle of a read (tb_mid_read_hook). */
#define TB_HAZARD_PAUSES_READS(h) \
	((h) != TB_HAZARD_NONE && (h) != TB_HAZARD_HANDSHAKE_STALL && \
	 (h) != TB_HAZARD_LIST_OVERFLOW && (h) != TB_HAZARD_SLOW_WRITES)
extern double tb_write_page_cost;
extern double tb_buffer_scan_cost;
extern double tb_read_page_cost;
extern double tb_parallel_margin;

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

/* localbuf_access.c: walks over this backend's local buffers */
extern void tb_count_local_buffers(const TbRelFileId *only, ForkNumber fork,
								   TbLocalBufferCounts *counts);
extern void tb_pool_census(const TbRelFileId *file, TbLocalBufferCounts *main_fork,
						   TbLocalBufferCounts *pool);
extern void tb_pool_census_reset(void);
extern uint64 tb_pool_census_generation(void);
extern void tb_pool_census_watch(Oid relid);
extern int64 tb_flush_local_buffers(const TbRelFileId *only, ForkNumber fork);
extern bool tb_fork_known_clean(const TbRelFileId *file, ForkNumber fork);
extern int64 tb_evict_local_buffers(Relation rel);

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
extern Buffer tb_pin_resident_page(Relation rel, const TbResidentPage *pages,
								   int npages, ForkNumber fork,
								   BlockNumber blkno);

/* page_guard.c: pages that must not change while workers read them */
typedef struct TbPinSet
{
	MemoryContext cxt;
	Buffer	   *buffers;
	int			npinned;
	int			room;			/* the most pins the pool can spare */
} TbPinSet;

extern void tb_pinset_init(TbPinSet *set, MemoryContext cxt);
extern bool tb_pinset_add(TbPinSet *set, int buf_id);
extern void tb_pinset_release(TbPinSet *set);
extern bool tb_page_may_be_pruned(Page page);
extern bool tb_block_reserved(const uint64 *reserved, BlockNumber nbits,
							  BlockNumber blkno);
extern bool tb_reserve_block(uint64 *reserved, BlockNumber reserved_bits,
							 BlockNumber blkno);
extern bool tb_guard_prunable_pages(Relation rel, TbResidentPage *resident,
									int nresident, TbPinSet *pins,
									uint64 *reserved, BlockNumber reserved_bits,
									char *scratch);

/* flush_cost.c: the cost model */
typedef struct TbScanPrice
{
	int			dirty_pages;	/* of the table's main fork (plus toast, see scan_paths.c) */
	int			resident_pages; /* of the main fork, in local buffers */
	int			pool_pages;		/* local buffers holding a page, any relation */
	bool		upfront;		/* the flush must end before workers start */
	bool		known_clean;	/* the flush needs no walk (tb_fork_known_clean()) */
} TbScanPrice;

extern double tb_flush_cost(Relation rel, int *dirty_pages);
extern void tb_temp_scan_price(Relation rel, TbScanPrice *price);
extern double tb_priced_flush(const TbScanPrice *price);
extern void tb_temp_scan_extra_cost(const TbScanPrice *price, bool partial,
									int parallel_workers, double divisor,
									Cost cpu_run_cost, Cost *startup, Cost *run,
									Cost *flush);

struct ExplainState;

/* leader_pages.c: can workers read this leader's pool now? */
extern bool tb_leader_pages_readable(void);

/*
 * page_source.c: the one place a participant gets a temporary relation's
 * page, from the leader's local buffers, its memory, or the file
 */
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
} TbLeaderPage;

/* The most pages a worker copies from the leader in one call. */
#define TB_LEADER_COPY_BATCH	16

extern void tb_page_source_copy_leader(Relation rel, const TbLeaderPage *pages,
									   int npages, char *dest, bool *valid);
extern const char *tb_page_source_leader_page(Relation rel, const TbLeaderPage *page);
extern void tb_page_source_read_leader_pool(Relation rel);
extern bool tb_page_source_copy_from_pool(Relation rel, BlockNumber blkno, char *dest,
										  char *scratch);

/*
 * leader_pages.c: the pages of a scan's relations the leader holds, listed
 * in the query's DSM for workers to copy
 */
#define TB_LEADER_PAGES_MAX_RELS	10	/* a table, its indexes, its toast */

typedef struct TbLeaderPageList TbLeaderPageList;

/* The leader's side: what it listed, and its leave for workers to read it. */
typedef struct TbLeaderPageSet
{
	bool		copies;			/* the leader lists pages: it writes none */
	int			nrels;
	Oid			relids[TB_LEADER_PAGES_MAX_RELS];
	TbResidentPage *resident[TB_LEADER_PAGES_MAX_RELS];
	int			nresident[TB_LEADER_PAGES_MAX_RELS];
} TbLeaderPageSet;

extern void tb_leader_pages_init(TbLeaderPageSet *set, bool planned);
extern Size tb_leader_pages_collect(TbLeaderPageSet *set, Relation *rels, int nrels);
extern void tb_leader_pages_share(TbLeaderPageSet *set, TbLeaderPageList *list);
extern bool tb_leader_pages_usable(const TbLeaderPageList *list);
extern void tb_leader_pages_attach(const TbLeaderPageList *list);

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

/*
 * hazard_meet.c: where a worker paused by pg_tempbuf.debug_hazard and the
 * leader that changes the page meet, in a scan's shared memory.
 */

/* Where a worker and the leader are (TbHazardMeet.phase) */
#define HAZARD_IDLE		0
#define HAZARD_CLAIMED	1		/* a worker is about to pause */
#define HAZARD_PAUSED	2		/* in the middle of the meet's block */
#define HAZARD_CHANGED	3		/* the leader did what the hazard says */
#define HAZARD_READ		4		/* the worker has read the rest of the page */
#define HAZARD_RESTORED 5		/* the leader put the buffer back */

typedef struct TbHazardMeet
{
	pg_atomic_uint32 phase;		/* HAZARD_* above */
	BlockNumber block;			/* the page a worker waits in the middle of */
} TbHazardMeet;

extern void tb_hazard_meet_init(TbHazardMeet *meet);
extern bool tb_hazard_worker_meets(BlockNumber blkno, const char *page,
								   bool from_leader, bool done, void *arg);
extern void tb_hazard_serve_file_read(TbHazardMeet *meet, Relation rel);

/* the leader's steps, for the Temp Seq Scan's races (temp_scan_hazard.c) */
extern bool tb_hazard_wait_for_phase(TbHazardMeet *meet, uint32 phase,
									 long timeout_us);
extern void tb_hazard_write_if_dirty(Buffer buffer);
extern void tb_hazard_served(TbHazardMeet *meet, Relation rel, BlockNumber blkno);

/* toast_reader.c: out-of-line values fetched through private pages */
typedef struct TbToastReader TbToastReader;
extern void tb_toast_price(Relation rel, int *dirty_pages, bool *has_data,
						   bool *known_clean);
extern int	tb_toast_relations_open(Relation rel, Relation *rels);
extern void tb_toast_relations_close(Relation *rels, int nrels);
extern int64 tb_toast_flush(Relation rel);
extern bool tb_toast_guard(Relation rel, TbPinSet *pins, char *scratch);
extern TbToastReader *tb_toast_reader_open(Relation rel, uint64 *pages,
										   uint64 *rereads, const char **reason);
extern void tb_toast_reader_close(TbToastReader *reader);
extern bool tb_toast_has_data(Relation rel);
extern Oid	tb_toast_reader_relid(TbToastReader *reader);
extern struct varlena *tb_toast_fetch(TbToastReader *reader,
									  struct varlena *attr,
									  uint64 *pages, uint64 *rereads);

/*
 * temp_scan.c: the Temp Seq Scan executor node, "Custom Scan (Temp Seq
 * Scan)" in EXPLAIN, with core's "Parallel" in front when partial
 */
#define TB_TEMP_SCAN_NAME "Temp Seq Scan"

/*
 * How the leader of a partial scan gets the table's dirty pages to the
 * workers: all before they start; in its first call, workers reading
 * behind it; or, where the nodes above the scan drain it before anything
 * else happens in the leader, a run at a time as workers need them, the
 * leader reading the rest from its own buffers without writing them.
 */
typedef enum TbFlushMode
{
	TB_FLUSH_UPFRONT,
	TB_FLUSH_PIPELINED,
	TB_FLUSH_INTERLEAVED
} TbFlushMode;

extern void tb_register_temp_scan(void);
extern bool tb_is_temp_scan(Plan *plan);
extern bool tb_scan_attrs_supported(Relation relation, Bitmapset *attrs,
									bool *toast_sensitive);
extern List *tb_temp_scan_private(bool partial, bool toast_sensitive,
								  int est_dirty_pages, double est_flush_cost);
extern bool tb_temp_scan_is_partial(CustomScan *cscan);
extern void tb_temp_scan_mark_output_unread(CustomScan *cscan);
extern void tb_temp_scan_set_flush_mode(CustomScan *cscan, TbFlushMode mode);
extern void tb_temp_scan_mark_guard_pruning(CustomScan *cscan);
extern Plan *tb_make_temp_scan_plan(Index scanrelid, List *tlist,
									List *quals, List *custom_private);

/* btree_reader.c: range scans of a btree through private pages */
typedef struct TbBtreeScan TbBtreeScan;
extern TbBtreeScan *tb_btree_scan_begin(Relation index, TbPageSource *pages,
										MemoryContext cxt);
extern void tb_btree_scan_backward(TbBtreeScan *scan);
extern void tb_btree_scan_set_keys(TbBtreeScan *scan, ScanKey keys, int nkeys);
extern bool tb_btree_scan_next(TbBtreeScan *scan, ItemPointer tid);
extern IndexTuple tb_btree_scan_tuple(TbBtreeScan *scan);
extern uint64 tb_btree_scan_entries(TbBtreeScan *scan);
extern bool tb_btree_scan_exact(TbBtreeScan *scan);

/* one range shared by the participants of a parallel query */
typedef struct TbBtreeShared TbBtreeShared;
extern Size tb_btree_shared_size(void);
extern void tb_btree_shared_init(TbBtreeShared *shared, bool first_time);
extern void tb_btree_scan_share(TbBtreeScan *scan, TbBtreeShared *shared);

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

/*
 * heap_rows.c: heap rows read through private pages (page_source.c),
 * for the Temp Index Scan and the Temp Bitmap Heap Scan: HOT chains
 * followed on the copy, out-of-line values fetched by toast_reader.c.
 */
typedef struct TbHeapRows
{
	const char *node_name;		/* for errors */
	HeapTupleData tuple;		/* the row found last */
	TbXminVerdict last_xmin;
	TbToastReader *toast;
	uint64		toast_pages;
	uint64		toast_rereads;
	Datum	   *values;
	bool	   *isnull;
	TupleTableSlot *deformer;	/* PostgreSQL 15: deforms what is read */
	int			deform_natts;
} TbHeapRows;

extern void tb_heap_rows_init(TbHeapRows *rows, ScanState *ss,
							  const char *node_name, bool stores_rows);
extern bool tb_heap_hot_search(TbHeapRows *rows, Relation rel, Page page,
							   BlockNumber blkno, OffsetNumber offnum,
							   Snapshot snapshot);
extern bool tb_heap_tuple_at(TbHeapRows *rows, Relation rel, Page page,
							 BlockNumber blkno, OffsetNumber offnum,
							 Snapshot snapshot);
extern void tb_heap_rows_store(TbHeapRows *rows, ScanState *ss,
							   TupleTableSlot *slot);
extern void tb_heap_rows_end(TbHeapRows *rows);
extern void tb_explain_scan_conds(CustomScanState *node, List *ancestors,
								  struct ExplainState *es, const char *label);

/*
 * temp_index_scan.c: the Temp Index Scan executor node, "Custom Scan (Temp
 * Index Scan)" in EXPLAIN
 */
#define TB_TEMP_INDEX_SCAN_NAME "Temp Index Scan"
#define TB_TEMP_INDEX_ONLY_SCAN_NAME "Temp Index Only Scan"

extern void tb_register_temp_index_scan(void);
extern bool tb_is_temp_index_scan(Plan *plan);
extern void tb_temp_index_scan_mark_guard_reads(CustomScan *cscan);
extern Plan *tb_temp_index_scan_stock_plan(CustomScan *cscan);
extern Plan *tb_make_temp_index_scan_plan(Scan *stock, List *tlist,
										  List *indexqualorig,
										  int est_dirty_pages,
										  double est_flush_cost,
										  bool leader_only,
										  bool leader_copies);

/*
 * temp_bitmap_scan.c: the Temp Bitmap Heap Scan executor node, "Custom Scan
 * (Temp Bitmap Heap Scan)" in EXPLAIN
 */
#define TB_TEMP_BITMAP_SCAN_NAME "Temp Bitmap Heap Scan"

extern void tb_register_temp_bitmap_scan(void);
extern bool tb_is_temp_bitmap_scan(Plan *plan);
extern void tb_temp_bitmap_scan_mark_guard_reads(CustomScan *cscan);
extern Plan *tb_temp_bitmap_scan_stock_plan(CustomScan *cscan);
extern Plan *tb_make_temp_bitmap_scan_plan(BitmapHeapScan *stock, List *tlist,
										   int est_dirty_pages,
										   double est_flush_cost,
										   bool leader_copies);

/*
 * planner.c: hooks that offer the paths (the planner's other files and
 * their declarations: planner_int.h)
 */
extern void tb_install_planner_hooks(void);

/* core_copies.c: code derived from PostgreSQL's own */
extern double tb_parallel_divisor(int parallel_workers);
extern double tb_loop_count(PlannerInfo *root, Index cur_relid, Relids outer_relids);
extern BlockNumber tb_vm_block(BlockNumber heap_block);
extern bool tb_vm_all_visible(Page vm_page, BlockNumber heap_block);

extern bool tb_tuple_visible(HeapTupleHeader tuple, Snapshot snapshot,
							 TbXminVerdict *last_xmin);
extern void tb_write_local_run(BufferDesc **bufs, int n);

#endif							/* PG_TEMPBUF_H */
