/*-------------------------------------------------------------------------
 *
 * leader_pages.c
 *	  The pages of a scan's relations that the leader holds, listed in the
 *	  query's DSM for workers to copy instead of the leader writing them.
 *
 * A Temp Index Scan's shared range and a partial Temp Bitmap Heap Scan read
 * a table and its indexes.  Where the system lets workers read the leader's
 * memory (leader_admission.c), the leader lists, when Gather launches its
 * workers, the pages of those relations in its local buffers: block, page
 * and descriptor addresses.  Each worker copies a listed page out of the
 * leader's buffer (page_source.c, the descriptor checked before and after)
 * and reads every other page from the file: not in local buffers when the
 * list was made, or evicted since, it is on disk.  The leader writes
 * nothing of these relations, so a worker that cannot copy must read
 * nothing: it takes no part of the scan.
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

#include "pg_tempbuf.h"

struct TbLeaderPageList
{
	bool		copies;			/* false: the leader wrote them, workers read files */
	bool		workers_stay_out;	/* the leader could not admit them */
	pid_t		leader_pid;
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

/*
 * At the scan's start, in every participant: does this process list pages
 * for workers?  The leader of a plan made for copies, where the system
 * still lets workers read its memory; otherwise its workers read the files
 * it writes.
 */
void
tb_leader_pages_init(TbLeaderPageSet *set, bool planned)
{
	set->copies = planned && !IsParallelWorker() && tb_leader_pages_readable();
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
 * Leader: the list into the segment, and the system's leave for workers to
 * read it; or, where it lists none, word that workers read the files.
 */
void
tb_leader_pages_share(TbLeaderPageSet *set, TbLeaderPageList *list)
{
	TbLeaderPage *to = list->pages;
	const char *reason;

	if (!set->copies)
	{
		list->copies = false;
		list->nrels = 0;
		return;
	}
	list->copies = true;
	list->leader_pid = MyProcPid;
	list->nrels = set->nrels;
	for (int i = 0; i < set->nrels; i++)
	{
		list->relids[i] = set->relids[i];
		list->npages[i] = set->nresident[i];
		for (int j = 0; j < set->nresident[i]; j++, to++)
		{
			to->blkno = set->resident[i][j].blkno;
			tb_local_buffer_addresses(set->resident[i][j].buf_id, &to->page_addr,
									  &to->desc_addr);
		}
	}
	list->workers_stay_out = false;
	if (set->hold == 0 && !tb_admit_workers(&set->hold, &reason))
		list->workers_stay_out = true;
}

/* Leader, at the end of the scan: give back what tb_admit_workers() took. */
void
tb_leader_pages_release(TbLeaderPageSet *set)
{
	tb_dismiss_workers(set->hold);
	set->hold = 0;
}

/*
 * Worker: may it read the scan's relations?  Not where the leader could
 * not admit it or the system refuses it a copy (tried once, on the first
 * listed descriptor): it then takes no part of the scan.
 */
bool
tb_leader_pages_usable(const TbLeaderPageList *list)
{
	int			total = 0;

	if (!list->copies)
		return true;
	if (list->workers_stay_out)
		return false;
	for (int i = 0; i < list->nrels; i++)
		total += list->npages[i];
	return total == 0 ||
		tb_page_source_leader_errno(list->leader_pid, list->pages[0].desc_addr) == 0;
}

/* Worker: src copies relid's listed pages from the leader. */
void
tb_leader_pages_attach(const TbLeaderPageList *list, Oid relid, TbPageSource *src)
{
	const TbLeaderPage *pages = list->pages;

	if (!list->copies)
		return;
	for (int i = 0; i < list->nrels; i++)
	{
		if (list->relids[i] == relid)
		{
			tb_page_source_copy_from_leader(src, relid, pages, list->npages[i],
											list->leader_pid);
			return;
		}
		pages += list->npages[i];
	}
}
