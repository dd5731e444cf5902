/*-------------------------------------------------------------------------
 *
 * hazard_meet.h
 *	  pg_tempbuf.debug_hazard (hazard_meet.c): where a worker paused by it
 *	  and the leader that changes the page meet, in a scan's shared memory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_HAZARD_MEET_H
#define TB_HAZARD_MEET_H

#include "port/atomics.h"
#include "storage/block.h"
#include "storage/buf.h"
#include "utils/relcache.h"

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
extern void tb_hazard_serve_paused_read(TbHazardMeet *meet, Relation rel);

/* the leader's steps, for the Temp Seq Scan's races (temp_scan_hazard.c) */
extern bool tb_hazard_wait_for_phase(TbHazardMeet *meet, uint32 phase,
									 long timeout_us);
extern void tb_hazard_write_if_dirty(Buffer buffer);
extern void tb_hazard_give_buffer_away(TbHazardMeet *meet, Relation rel,
									   Buffer buffer, BlockNumber blkno);
extern void tb_hazard_served(TbHazardMeet *meet, Relation rel, BlockNumber blkno);

#endif							/* TB_HAZARD_MEET_H */
