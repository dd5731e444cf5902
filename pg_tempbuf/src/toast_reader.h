/*-------------------------------------------------------------------------
 *
 * toast_reader.h
 *	  Out-of-line values fetched through private pages (toast_reader.c);
 *	  the toast relation's price, flush and guard.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_TOAST_READER_H
#define TB_TOAST_READER_H

#include "utils/relcache.h"

#include "page_guard.h"

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

#endif							/* TB_TOAST_READER_H */
