/*-------------------------------------------------------------------------
 *
 * join_paths.h
 *	  Parallel-safe paths for joins of temporary tables (join_paths.c):
 *	  the join hook.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_JOIN_PATHS_H
#define TB_JOIN_PATHS_H

extern void tb_install_join_hook(void);

#endif							/* TB_JOIN_PATHS_H */
