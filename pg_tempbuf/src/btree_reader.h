/*-------------------------------------------------------------------------
 *
 * btree_reader.h
 *	  Range scans of a btree through private pages (btree_reader.c): for
 *	  the Temp Index Scan, the Temp Bitmap Heap Scan's index and the toast
 *	  index.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_BTREE_READER_H
#define TB_BTREE_READER_H

#include "access/itup.h"
#include "access/skey.h"
#include "utils/relcache.h"

#include "page_source.h"

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

#endif							/* TB_BTREE_READER_H */
