/*-------------------------------------------------------------------------
 *
 * guc.h
 *	  The extension's settings (guc.c): every pg_tempbuf.* GUC's variable,
 *	  and the values of pg_tempbuf.debug_hazard.  The ground floor: every
 *	  other floor reads these, and they call nothing.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_GUC_H
#define TB_GUC_H

extern void tb_define_gucs(void);
extern bool tb_parallel_scan_enabled;
extern bool tb_index_scan_enabled;
extern bool tb_verify_reread;
extern bool tb_debug_sync_start;
extern bool tb_shared_pool_enabled;
extern bool tb_parallel_index_build;
extern int	tb_debug_hazard;
extern bool tb_debug_unprotected;
extern int	tb_debug_peek;

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
	TB_HAZARD_EVICT_DURING_BATCH,	/* a buffer a worker reads goes to another block */
	TB_HAZARD_LIST_OVERFLOW,	/* the list of the leader's pages has half the room */
	TB_HAZARD_SLOW_WRITES		/* each write run of the flush takes 100 ms more */
} TbDebugHazard;

/* The hazards where a reader pauses in the middle of a read (tb_mid_read_hook). */
#define TB_HAZARD_PAUSES_READS(h) \
	((h) != TB_HAZARD_NONE && (h) != TB_HAZARD_HANDSHAKE_STALL && \
	 (h) != TB_HAZARD_LIST_OVERFLOW && (h) != TB_HAZARD_SLOW_WRITES)

/* pg_tempbuf.debug_peek: how a worker reads a page it peeks at (page_source.c) */
typedef enum TbDebugPeek
{
	TB_PEEK_AUTO,				/* pread() where the mapping would fault */
	TB_PEEK_IN_PLACE,			/* always in the mapping */
	TB_PEEK_READ				/* always pread() */
} TbDebugPeek;

extern double tb_write_page_cost;
extern double tb_buffer_scan_cost;
extern double tb_read_page_cost;
extern double tb_parallel_margin;

#endif							/* TB_GUC_H */
