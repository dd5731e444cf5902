/*-------------------------------------------------------------------------
 *
 * leader_pages.c
 *	  The pages of a scan's relations that the leader holds, listed in the
 *	  query's DSM for workers to copy instead of the leader writing them.
 *
 * A Temp Index Scan's shared range and a partial Temp Bitmap Heap Scan read
 * a table and its indexes.  Where the leader's pool lives in memory its
 * workers can map (shared_pool.c), the leader lists, when Gather launches
 * its workers, the pages of those relations in its local buffers: block
 * and buffer, and pins each while the pool can spare the pins.  A worker
 * reads a pinned page in place in the mapping, and copies another one out
 * of it (page_source.c, the descriptor checked before and after: the
 * leader may evict it meanwhile); it reads every other page from the file:
 * not in local buffers when the list was made, or evicted since, it is on
 * disk.
 * The leader writes nothing of these relations, so a worker that cannot
 * map the pool must read nothing: it takes no part of the scan.
 *
 * The list is made in the scan's EstimateDSM callback, the only point
 * before the segment is sized, and copied into it by InitializeDSM;
 * nothing runs in between.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "miscadmin.h"
#include "utils/rel.h"

#include "compat.h"
#include "guc.h"
#include "leader_pages.h"
#include "localbuf_access.h"
#include "page_source.h"
#include "shared_pool.h"

struct TbLeaderPageList
{
	bool		copies;			/* false: the leader wrote them, workers read files */
	TbSharedPoolRef pool;
	int			nrels;
	Oid			relids[TB_LEADER_PAGES_MAX_RELS];
	int			npages[TB_LEADER_PAGES_MAX_RELS];
	TbLeaderPage pages[FLEXIBLE_ARRAY_MEMBER];	/* relids[0]'s, relids[1]'s, ... */
};

static Size
page_list_size(int npages)
{
	return add_size(offsetof(TbLeaderPageList, pages),
					mul_size(sizeof(TbLeaderPage), npages));
}

/* Leader: can workers read its pool now?  (It moves there at a safe point.) */
bool
tb_leader_pages_readable(void)
{
	return !IsParallelWorker() && tb_shared_pool_unreadable() == NULL;
}

/*
 * Leader of a node with no shared state (a full Temp Seq Scan, a
 * non-partial index or bitmap scan), when the plan runs: may its workers
 * read every page of the node's relations the pool holds, finding it in
 * the pool's directory?  Then the directory shows the pool as it is now,
 * and nothing needs writing: a page not in the pool is in the file.
 */
bool
tb_leader_pages_serve_from_pool(void)
{
	return tb_leader_pages_readable() && tb_pool_directory_publish();
}

/*
 * At the scan's start, in every participant: does this process list pages
 * for workers?  The leader of a plan made for copies, where its pool lives
 * in memory workers can map; otherwise its workers read the files it
 * writes.  Where the leader runs user code while workers read, it pins
 * none of them (page_guard.c): workers copy each, checked.
 */
void
tb_leader_pages_init(TbLeaderPageSet *set, bool planned, bool leader_runs_code)
{
	set->copies = planned && !IsParallelWorker() && tb_leader_pages_readable();
	set->leader_runs_code = leader_runs_code;
	set->pins.npinned = 0;
	set->pins.owned = NULL;
}

/*
 * Leader: list the pages it holds now of rels (each relation once), and
 * the size of their list in the DSM; an empty list where it lists none.
 */
Size
tb_leader_pages_collect(TbLeaderPageSet *set, Relation *rels, int nrels)
{
	int			total = 0;

	set->nrels = 0;
	if (!set->copies)
		return page_list_size(0);
	for (int i = 0; i < nrels; i++)
	{
		Oid			relid = RelationGetRelid(rels[i]);
		int			n = set->nrels;
		bool		listed = false;

		for (int j = 0; j < n; j++)
			listed |= set->relids[j] == relid;
		if (listed)
			continue;
		if (n == TB_LEADER_PAGES_MAX_RELS)
			elog(ERROR, "a scan of \"%s\" reads more indexes than its workers can copy",
				 RelationGetRelationName(rels[0]));
		set->relids[n] = relid;
		set->resident[n] = tb_resident_pages(TbRelationFileId(rels[i]), MAIN_FORKNUM,
											 &set->nresident[n]);
		total += set->nresident[n];
		set->nrels++;
	}
	return page_list_size(total);
}

/*
 * Leader: the list into the segment, with what workers need to map the
 * pool; or, where it lists none, word that workers read the files.
 */
void
tb_leader_pages_share(TbLeaderPageSet *set, TbLeaderPageList *list)
{
	TbLeaderPage *to = list->pages;

	if (!set->copies)
	{
		list->copies = false;
		list->nrels = 0;
		return;
	}
	list->copies = true;
	tb_shared_pool_describe(&list->pool);
	list->nrels = set->nrels;
	/*
	 * Once per scan: a rescan shares the same pages, still pinned.  Under
	 * pg_tempbuf.debug_unprotected none is pinned, and workers copy each;
	 * nor under debug_hazard evict_during_batch, whose race is with a
	 * worker peeking at an unpinned page (page_source.c).
	 */
	if (set->pins.owned == NULL)
		tb_pinset_init(&set->pins, set->leader_runs_code);
	for (int i = 0; i < set->nrels; i++)
	{
		list->relids[i] = set->relids[i];
		list->npages[i] = set->nresident[i];
		for (int j = 0; j < set->nresident[i]; j++, to++)
		{
			TbResidentPage *page = &set->resident[i][j];

			if (!page->pinned && !tb_debug_unprotected &&
				tb_debug_hazard != TB_HAZARD_EVICT_DURING_BATCH)
				page->pinned = tb_pinset_add(&set->pins, page->buf_id);
			to->blkno = page->blkno;
			to->buf_id = page->buf_id;
			to->pinned = page->pinned;
		}
	}
}

/* Leader, at the end of the scan: workers are done with the listed pages. */
void
tb_leader_pages_release(TbLeaderPageSet *set)
{
	tb_pinset_release(&set->pins);
}

/*
 * Worker: may it read the scan's relations?  Not where the system refuses
 * it the leader's pool: it then takes no part of the scan.
 */
bool
tb_leader_pages_usable(const TbLeaderPageList *list)
{
	int			total = 0;

	if (!list->copies)
		return true;
	for (int i = 0; i < list->nrels; i++)
		total += list->npages[i];
	return total == 0 || tb_shared_pool_attach(&list->pool) == 0;
}

/* Worker: its page sources copy the listed pages from the leader's pool. */
void
tb_leader_pages_attach(const TbLeaderPageList *list)
{
	const TbLeaderPage *pages = list->pages;

	if (!list->copies)
		return;
	for (int i = 0; i < list->nrels; i++)
	{
		tb_page_source_copy_from_leader(list->relids[i], pages, list->npages[i]);
		pages += list->npages[i];
	}
}
