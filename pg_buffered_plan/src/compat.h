/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The one place where pg_buffered_plan copes with PostgreSQL version
 *	  differences, so that #if PG_VERSION_NUM stays out of the code.
 *
 * Supported: PostgreSQL 15 through 18.
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

#endif							/* PG_BUFFERED_PLAN_COMPAT_H */
