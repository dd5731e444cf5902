/*-------------------------------------------------------------------------
 *
 * heap_rows.h
 *	  Heap rows read through private pages (heap_rows.c, the pages from
 *	  page_source.c), for the Temp Index Scan and the Temp Bitmap Heap
 *	  Scan: HOT chains followed on the copy, out-of-line values fetched by
 *	  toast_reader.c, and the conditions both nodes show in EXPLAIN.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_HEAP_ROWS_H
#define TB_HEAP_ROWS_H

#include "access/htup.h"
#include "nodes/execnodes.h"

#include "core_copies.h"
#include "toast_reader.h"

struct ExplainState;
struct TbPeek;

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
	MemoryContext cxt;			/* the node's */
	char	   *member;			/* worker: a row copied out of a page peeked
								 * at, allocated on the first peek */
} TbHeapRows;

/* A row looked up on a page peeked at in the leader's pool. */
typedef enum TbHotResult
{
	TB_HOT_MISSING,				/* no visible member */
	TB_HOT_FOUND,				/* in rows->tuple */
	TB_HOT_MOVED				/* the buffer gave the page up: read it again */
} TbHotResult;

extern void tb_heap_rows_init(TbHeapRows *rows, ScanState *ss,
							  const char *node_name, bool stores_rows);
extern bool tb_heap_hot_search(TbHeapRows *rows, Relation rel, Page page,
							   BlockNumber blkno, OffsetNumber offnum,
							   Snapshot snapshot);
extern TbHotResult tb_heap_hot_search_peeked(TbHeapRows *rows, Relation rel,
											 const char *page, BlockNumber blkno,
											 OffsetNumber offnum, Snapshot snapshot,
											 struct TbPeek *peek);
extern bool tb_heap_tuple_at(TbHeapRows *rows, Relation rel, Page page,
							 BlockNumber blkno, OffsetNumber offnum,
							 Snapshot snapshot);
extern void tb_heap_rows_store(TbHeapRows *rows, ScanState *ss,
							   TupleTableSlot *slot);
extern void tb_heap_rows_end(TbHeapRows *rows);
extern void tb_explain_scan_conds(CustomScanState *node, List *ancestors,
								  struct ExplainState *es, const char *label);

#endif							/* TB_HEAP_ROWS_H */
