/*-------------------------------------------------------------------------
 *
 * pool_memfd.h
 *	  The memfd a leader's pool of local buffers lives in (pool_memfd.c):
 *	  made, its memory reserved where the kernel could refuse it later,
 *	  sealed against every process but the leader, and probed as a worker
 *	  would open it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TB_POOL_MEMFD_H
#define TB_POOL_MEMFD_H

typedef struct TbPoolMemfd
{
	int			fd;
	char	   *base;			/* mapped read-write, MAP_SHARED */
	Size		size;
} TbPoolMemfd;

/* A refusal: what failed, with errno's text. */
#define TB_POOL_REFUSAL_LEN 200

extern bool tb_pool_memfd_create(TbPoolMemfd *memfd, Size size, const char *name,
								 char *refusal);
extern bool tb_pool_memfd_seal(TbPoolMemfd *memfd, char *refusal);
extern bool tb_pool_memfd_probe(const TbPoolMemfd *memfd, uint64 magic, char *refusal);
extern void tb_pool_memfd_destroy(TbPoolMemfd *memfd);
extern void tb_pool_memfd_ask_huge_pages(char *base, Size size);
extern bool tb_pool_memfd_huge_pages(void);

#endif							/* TB_POOL_MEMFD_H */
