/*-------------------------------------------------------------------------
 *
 * hidden_paths.h
 *	  Our paths kept out of core's join search (hidden_paths.c), and the
 *	  relations whose paths wait until a join asks for them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_HIDDEN_PATHS_H
#define TB_HIDDEN_PATHS_H

#include "nodes/pathnodes.h"

extern bool tb_hides_paths(PlannerInfo *root, RelOptInfo *rel);
extern void tb_add_safe_path(PlannerInfo *root, RelOptInfo *rel, Path *path);
extern void tb_defer_safe_paths(PlannerInfo *root, RelOptInfo *rel);
extern bool tb_take_deferred_paths(PlannerInfo *root, RelOptInfo *rel);
extern List *tb_hidden_safe_paths(PlannerInfo *root, RelOptInfo *rel);
typedef struct TbHiddenPaths
{
	PlannerInfo *root;			/* whose base relations' paths these are */
	List	  **paths;			/* by relid */
	int			size;
	Bitmapset  *deferred;		/* relids whose paths wait for a join */
} TbHiddenPaths;
extern void tb_hidden_paths_swap(TbHiddenPaths *state);

#endif							/* TB_HIDDEN_PATHS_H */
