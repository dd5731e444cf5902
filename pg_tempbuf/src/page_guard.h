/*-------------------------------------------------------------------------
 *
 * page_guard.h
 *	  Pages that must not change while workers read them (page_guard.c):
 *	  the leader's pins on the buffers workers copy, and the blocks it
 *	  keeps to itself.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_PAGE_GUARD_H
#define TB_PAGE_GUARD_H

#include "storage/bufpage.h"
#include "utils/relcache.h"

#include "localbuf_access.h"

typedef struct TbPinSet
{
	int			npinned;
	int			room;			/* the most pins the pool can spare */
	void	   *owned;			/* the pins, one resource of an owner (page_guard.c) */
} TbPinSet;

extern void tb_pinset_init(TbPinSet *set, bool leader_runs_code);
extern bool tb_pinset_add(TbPinSet *set, int buf_id);
extern void tb_pinset_release(TbPinSet *set);
extern bool tb_page_may_be_pruned(Page page);
extern bool tb_page_prunable_within(Page page, Size known);
extern bool tb_block_reserved(const uint64 *reserved, BlockNumber nbits,
							  BlockNumber blkno);
extern bool tb_guard_prunable_pages(Relation rel, TbResidentPage *resident,
									int nresident, TbPinSet *pins,
									uint64 *reserved, BlockNumber reserved_bits,
									char *scratch);

#endif							/* TB_PAGE_GUARD_H */
