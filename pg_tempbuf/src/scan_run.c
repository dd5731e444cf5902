/*-------------------------------------------------------------------------
 *
 * scan_run.c
 *	  One lifecycle for the Temp Seq Scan, Temp Index Scan and Temp Bitmap
 *	  Heap Scan in the leader: arm the flush of the node's tables when the
 *	  node begins, write them when the executor runs the plan, disarm when
 *	  the node ends, and show in EXPLAIN what was priced and what was done.
 *
 * Workers read the tables' files, so the leader must write what is dirty
 * before Gather launches them.  Not when the node begins: with the extended
 * protocol a portal can be bound, the table changed by another statement,
 * and the portal run afterwards.  So the flush waits for ExecutorRun of the
 * plan that holds the node; a node the leader runs before that (a subplan,
 * say) flushes itself first (tb_scan_run_flush_armed).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "nodes/nodeFuncs.h"
#include "portability/instr_time.h"

#include "compat.h"
#include "scan_run.h"
#include TB_EXPLAIN_FORMAT_HEADER

/* The nodes whose state begins as a TbRunScanState. */
#define MAX_RUN_KINDS	4
static const CustomExecMethods *run_kinds[MAX_RUN_KINDS];
static int	nrun_kinds = 0;

/* Runs armed in this backend and not flushed or ended yet. */
static int	runs_armed = 0;

static ExecutorRun_hook_type prev_executor_run = NULL;

void
tb_scan_run_register(const CustomExecMethods *methods)
{
	Assert(nrun_kinds < MAX_RUN_KINDS);
	run_kinds[nrun_kinds++] = methods;
}

static TbScanRun *
run_of(PlanState *planstate)
{
	const CustomExecMethods *methods;

	if (!IsA(planstate, CustomScanState))
		return NULL;
	methods = ((CustomScanState *) planstate)->methods;
	for (int i = 0; i < nrun_kinds; i++)
		if (run_kinds[i] == methods)
			return &((TbRunScanState *) planstate)->run;
	return NULL;
}

/*
 * Leader, arm: when the executor runs the plan, not before.  The leader of
 * a node that sets up shared state writes when it does (the partial Temp
 * Seq Scan), so it only names its flush.
 */
void
tb_scan_run_begin(TbScanRun *run, TbScanRunFlush flush, bool arm)
{
	run->flush = flush;
	run->armed = arm;
	if (arm)
		runs_armed++;
}

/* Write now, armed or not; the time and pages go to EXPLAIN ANALYZE. */
void
tb_scan_run_flush(TbScanRun *run, CustomScanState *node)
{
	instr_time	start;
	instr_time	duration;

	Assert(!IsParallelWorker());
	if (run->armed)
	{
		run->armed = false;
		runs_armed--;
	}
	INSTR_TIME_SET_CURRENT(start);
	run->pages_flushed += run->flush(node);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	run->flush_ms += INSTR_TIME_GET_MILLISEC(duration);
}

void
tb_scan_run_flush_armed(TbScanRun *run, CustomScanState *node)
{
	if (run->armed)
		tb_scan_run_flush(run, node);
}

void
tb_scan_run_end(TbScanRun *run)
{
	if (run->armed)
	{
		run->armed = false;
		runs_armed--;
	}
}

static bool
flush_armed_runs(PlanState *planstate, void *context)
{
	TbScanRun  *run;

	if (planstate == NULL)
		return false;
	run = run_of(planstate);
	if (run)
		tb_scan_run_flush_armed(run, (CustomScanState *) planstate);
	return planstate_tree_walker(planstate, flush_armed_runs, context);
}

static void
scan_run_executor_run(TB_EXECUTOR_RUN_PARAMS)
{
	if (runs_armed > 0 && !IsParallelWorker())
		(void) flush_armed_runs(queryDesc->planstate, NULL);
	if (prev_executor_run)
		prev_executor_run(TB_EXECUTOR_RUN_ARGS);
	else
		standard_ExecutorRun(TB_EXECUTOR_RUN_ARGS);
}

void
tb_scan_run_install_hook(void)
{
	prev_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = scan_run_executor_run;
}

/* The flush the planner priced, with COSTS. */
void
tb_scan_run_explain_estimate(const TbScanRun *run, ExplainState *es)
{
	if (!es->costs)
		return;
	ExplainPropertyInteger("Flush Estimate Pages", NULL, run->est_dirty_pages, es);
	ExplainPropertyFloat("Flush Estimate Cost", NULL, run->est_flush_cost, 2, es);
}

/* With ANALYZE, the flush that happened. */
void
tb_scan_run_explain_done(const TbScanRun *run, ExplainState *es)
{
	ExplainPropertyInteger("Pages Flushed", NULL, run->pages_flushed, es);
	if (es->timing)
		ExplainPropertyFloat("Flush Time", "ms", run->flush_ms, 3, es);
}

/*
 * Leader: add the counts the workers left in shared ([worker][counter]) to
 * the totals, and clear them for the next set of workers.
 */
void
tb_worker_totals_add(TbWorkerTotals *totals, uint64 *shared, int nworkers,
					 int ncounters, MemoryContext cxt)
{
	if (totals->counts == NULL)
	{
		totals->nworkers = nworkers;
		totals->ncounters = ncounters;
		totals->counts = MemoryContextAllocZero(cxt, sizeof(uint64) * nworkers * ncounters);
	}
	Assert(totals->ncounters == ncounters);
	for (int i = 0; i < Min(totals->nworkers, nworkers) * ncounters; i++)
		totals->counts[i] += shared[i];
	memset(shared, 0, sizeof(uint64) * nworkers * ncounters);
}

/* "leader=N worker 0=N ..." for one counter; workers that counted nothing are left out. */
char *
tb_worker_totals_text(const TbWorkerTotals *totals, uint64 leader, int counter)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "leader=" UINT64_FORMAT, leader);
	for (int i = 0; i < totals->nworkers; i++)
	{
		const uint64 *worker = &totals->counts[i * totals->ncounters];
		bool		counted = false;

		for (int c = 0; c < totals->ncounters; c++)
			counted |= worker[c] > 0;
		if (counted)
			appendStringInfo(&buf, " worker %d=" UINT64_FORMAT, i, worker[counter]);
	}
	return buf.data;
}
