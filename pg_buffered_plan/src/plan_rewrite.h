/*-------------------------------------------------------------------------
 *
 * plan_rewrite.h
 *	  The planner_hook (plan_rewrite.c) that places the batching nodes into
 *	  a finished plan.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BP_PLAN_REWRITE_H
#define BP_PLAN_REWRITE_H

extern void bp_install_planner_hook(void);

#endif							/* BP_PLAN_REWRITE_H */
