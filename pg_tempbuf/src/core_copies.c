/*-------------------------------------------------------------------------
 *
 * core_copies.c
 *	  Code derived from PostgreSQL's own, where core keeps the original
 *	  static or ties it to shared state an extension cannot use.
 *
 * Each function names its source and what was changed.  When a supported
 * version changes the original, change the copy here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "optimizer/cost.h"
#include "optimizer/optimizer.h"

#include "pg_tempbuf.h"

/*
 * Derived from get_parallel_divisor(), src/backend/optimizer/path/
 * costsize.c, PostgreSQL 15-18 (the same in all four).  Changed: takes the
 * worker count rather than the path, since core's is static.
 *
 * How many participants' worth of work a partial path's rows are divided
 * by: the workers, plus what is left of the leader beside them.
 */
double
tb_parallel_divisor(int parallel_workers)
{
	double		divisor = parallel_workers;

	if (parallel_leader_participation)
	{
		double		leader_contribution = 1.0 - (0.3 * parallel_workers);

		if (leader_contribution > 0)
			divisor += leader_contribution;
	}
	return divisor;
}
