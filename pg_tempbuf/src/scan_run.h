/*-------------------------------------------------------------------------
 *
 * scan_run.h
 *	  The lifecycle that every scan node of ours shares in the leader: the
 *	  flush of the node's tables is armed when the node begins, carried out
 *	  when the executor runs the plan (before Gather launches the workers
 *	  that read the files), and disarmed when the node ends.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCAN_RUN_H
#define SCAN_RUN_H

#include "nodes/execnodes.h"
#include "nodes/extensible.h"

struct ExplainState;

/* Writes what the node's private readers need on disk; returns pages written. */
typedef int64 (*TbScanRunFlush) (CustomScanState *node);

typedef struct TbScanRun
{
	TbScanRunFlush flush;
	bool		armed;			/* the flush waits for ExecutorRun */
	int			est_dirty_pages;	/* what the planner priced */
	double		est_flush_cost;
	int64		pages_flushed;	/* what happened, for EXPLAIN ANALYZE */
	double		flush_ms;
} TbScanRun;

/*
 * How the leader of a partial scan gets the table's dirty pages to the
 * workers: all before they start; in its first call, workers reading
 * behind it; or, where the nodes above the scan drain it before anything
 * else happens in the leader, a run at a time as workers need them, the
 * leader reading the rest from its own buffers without writing them.
 * Every node flushes upfront, armed here; the Temp Seq Scan's plan may ask
 * for one of the other two (plan_walk.c, temp_scan.c).
 */
typedef enum TbFlushMode
{
	TB_FLUSH_UPFRONT,
	TB_FLUSH_PIPELINED,
	TB_FLUSH_INTERLEAVED
} TbFlushMode;

/*
 * The head of the state of every node that registers with
 * tb_scan_run_register(): its CustomScanState, then its run.
 */
typedef struct TbRunScanState
{
	CustomScanState css;
	TbScanRun	run;
} TbRunScanState;

extern void tb_scan_run_register(const CustomExecMethods *methods);
extern void tb_scan_run_install_hook(void);
extern void tb_scan_run_begin(TbScanRun *run, TbScanRunFlush flush, bool arm);
extern void tb_scan_run_flush(TbScanRun *run, CustomScanState *node);
extern void tb_scan_run_flush_armed(TbScanRun *run, CustomScanState *node);
extern void tb_scan_run_end(TbScanRun *run);
extern void tb_scan_run_explain_estimate(const TbScanRun *run, struct ExplainState *es);
extern void tb_scan_run_explain_done(const TbScanRun *run, struct ExplainState *es);

/*
 * What a parallel node's participants count for EXPLAIN ANALYZE, each a
 * struct of uint64 counters: workers leave theirs in the node's shared
 * memory as their scans end; the leader adds them up, across rescans that
 * each launch new workers, and shows "leader=N worker 0=N ...".
 */
typedef struct TbWorkerTotals
{
	int			nworkers;
	int			ncounters;
	uint64	   *counts;			/* [worker][counter]; NULL: none collected */
} TbWorkerTotals;

#define TB_COUNTERS(type)	((int) (sizeof(type) / sizeof(uint64)))
#define TB_COUNTER(type, field)	((int) (offsetof(type, field) / sizeof(uint64)))

extern void tb_worker_totals_add(TbWorkerTotals *totals, uint64 *shared,
								 int nworkers, int ncounters, MemoryContext cxt);
extern char *tb_worker_totals_text(const TbWorkerTotals *totals, uint64 leader,
								   int counter);

#endif							/* SCAN_RUN_H */
