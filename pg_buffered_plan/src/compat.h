/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The one place where pg_buffered_plan copes with PostgreSQL version
 *	  differences, so that #if PG_VERSION_NUM stays out of the code.
 *
 * Supported: PostgreSQL 15 through 19.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_BUFFERED_PLAN_COMPAT_H
#define PG_BUFFERED_PLAN_COMPAT_H

#if PG_VERSION_NUM < 150000
#error "pg_buffered_plan requires PostgreSQL 15 or later"
#endif

/* 18 split the EXPLAIN API out of commands/explain.h. */
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"
#include "commands/explain_state.h"
#else
#include "commands/explain.h"
#endif

/*
 * planner_hook and standard_planner() take the EXPLAIN state of an
 * EXPLAIN being planned from 19 (NULL otherwise).
 */
#include "optimizer/planner.h"
#if PG_VERSION_NUM >= 190000
#define BP_PLANNER_PARAMS	Query *parse, const char *query_string, int cursorOptions, \
	ParamListInfo boundParams, ExplainState *es
#define BP_PLANNER_ARGS		parse, query_string, cursorOptions, boundParams, es
#else
#define BP_PLANNER_PARAMS	Query *parse, const char *query_string, int cursorOptions, \
	ParamListInfo boundParams
#define BP_PLANNER_ARGS		parse, query_string, cursorOptions, boundParams
#endif

/*
 * 19 gives a scan's slot flags (TTS_FLAG_*), none here, and a table scan
 * caller's options (ScanOptions: SO_NONE, a plain scan as before).
 */
#include "access/tableam.h"
#include "executor/executor.h"
#if PG_VERSION_NUM >= 190000
#define BpInitScanTupleSlot(estate, ss, desc, ops) \
	ExecInitScanTupleSlot((estate), (ss), (desc), (ops), 0)
#define BpTableBeginScan(rel, snapshot) \
	table_beginscan((rel), (snapshot), 0, NULL, SO_NONE)
#define BpTableBeginScanParallel(rel, pscan) \
	table_beginscan_parallel((rel), (pscan), SO_NONE)
#else
#define BpInitScanTupleSlot(estate, ss, desc, ops) \
	ExecInitScanTupleSlot((estate), (ss), (desc), (ops))
#define BpTableBeginScan(rel, snapshot) \
	table_beginscan((rel), (snapshot), 0, NULL)
#define BpTableBeginScanParallel(rel, pscan) \
	table_beginscan_parallel((rel), (pscan))
#endif

#endif							/* PG_BUFFERED_PLAN_COMPAT_H */
