/*-------------------------------------------------------------------------
 *
 * leader_pages.h
 *	  The pages of a scan's relations the leader holds, listed in the
 *	  query's DSM for workers to copy out of its pool (leader_pages.c), and
 *	  whether workers can read that pool now.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_LEADER_PAGES_H
#define TB_LEADER_PAGES_H

#include "utils/relcache.h"

#include "localbuf_access.h"
#include "page_guard.h"

/* Can workers read this leader's pool now? */
extern bool tb_leader_pages_readable(void);
extern bool tb_leader_pages_serve_from_pool(void);

#define TB_LEADER_PAGES_MAX_RELS	10	/* a table, its indexes, its toast */

typedef struct TbLeaderPageList TbLeaderPageList;

/* The leader's side: what it listed, and its leave for workers to read it. */
typedef struct TbLeaderPageSet
{
	bool		copies;			/* the leader lists pages: it writes none */
	bool		leader_runs_code;	/* user code above Gather: pin none */
	int			nrels;
	Oid			relids[TB_LEADER_PAGES_MAX_RELS];
	TbResidentPage *resident[TB_LEADER_PAGES_MAX_RELS];
	int			nresident[TB_LEADER_PAGES_MAX_RELS];
	TbPinSet	pins;			/* the listed buffers, while workers read them */
} TbLeaderPageSet;

extern void tb_leader_pages_init(TbLeaderPageSet *set, bool planned, bool leader_runs_code);
extern Size tb_leader_pages_collect(TbLeaderPageSet *set, Relation *rels, int nrels);
extern void tb_leader_pages_share(TbLeaderPageSet *set, TbLeaderPageList *list);
extern void tb_leader_pages_release(TbLeaderPageSet *set);
extern bool tb_leader_pages_usable(const TbLeaderPageList *list);
extern void tb_leader_pages_attach(const TbLeaderPageList *list);

#endif							/* TB_LEADER_PAGES_H */
