/*-------------------------------------------------------------------------
 *
 * planner.h
 *	  The planner hooks (planner.c) that offer our paths and settle the
 *	  finished plan; the module entry installs them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_PLANNER_H
#define TB_PLANNER_H

extern void tb_install_planner_hooks(void);

#endif							/* TB_PLANNER_H */
