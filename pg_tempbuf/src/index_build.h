/*-------------------------------------------------------------------------
 *
 * index_build.h
 *	  Parallel CREATE INDEX and REINDEX of btrees on temporary tables
 *	  (index_build.c): the hooks that lend core's parallel build to them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_INDEX_BUILD_H
#define TB_INDEX_BUILD_H

extern void tb_install_index_build_hooks(void);

#endif							/* TB_INDEX_BUILD_H */
