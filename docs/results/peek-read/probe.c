/*
 * What a parallel worker pays to take one row out of a random page of its
 * leader's pool (a memfd), as a fresh process: touching the page in its new
 * mapping (a page fault; the kernel maps the 64 kB around it and tears it
 * down at exit), copying the row out of the mapping, or two pread() calls
 * of the memfd (the page's header and line pointers, then the row).
 *
 * cc -O2 -o probe probe.c && ./probe 1000
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 8192
#define NPAGES 51200			/* 400 MB, TPC-H SF 0.5's lineitem */
#define PREFIX 1188				/* header + 291 line pointers */
#define ROW 160

static double
now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int
main(int argc, char **argv)
{
	int			nreads = argc > 1 ? atoi(argv[1]) : 1000;
	const char *names[] = {"touch in the mapping", "copy the row out of the mapping",
	"pread the row", "pread the prefix, then the row"};
	int			fd = memfd_create("pool", 0);
	char	   *pool;
	uint32_t   *pages = malloc(sizeof(uint32_t) * nreads);

	if (ftruncate(fd, (off_t) NPAGES * PAGE) != 0)
		return 1;
	pool = mmap(NULL, (size_t) NPAGES * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	for (size_t i = 0; i < (size_t) NPAGES * PAGE; i += 4096)
		pool[i] = (char) i;
	srand(7);
	for (int i = 0; i < nreads; i++)
		pages[i] = (uint32_t) rand() % NPAGES;
	printf("%d random 8 kB pages of %d, one row each, a fresh process per run\n", nreads, NPAGES);
	printf("mode | us a read | munmap at exit, us | process, fork to exit, us\n");
	for (int mode = 0; mode < 4; mode++)
		for (int rep = 0; rep < 5; rep++)
		{
			int			pipefd[2];
			double		start = now_us();
			double		result[2] = {0, 0};
			pid_t		child;

			if (pipe(pipefd) != 0)
				return 1;
			fflush(stdout);
			child = fork();
			if (child == 0)
			{
				volatile long sum = 0;
				char		buf[PREFIX];
				double		a = now_us();

				if (mode < 2)
				{
					char	   *map = mmap(NULL, (size_t) NPAGES * PAGE, PROT_READ, MAP_SHARED, fd, 0);
					double		b;

					for (int i = 0; i < nreads; i++)
					{
						const char *page = map + (size_t) pages[i] * PAGE;

						if (mode == 0)
							sum += page[100];
						else
						{
							memcpy(buf, page + 4000, ROW);
							sum += buf[3];
						}
					}
					b = now_us();
					munmap(map, (size_t) NPAGES * PAGE);
					result[0] = (b - a) / nreads;
					result[1] = now_us() - b;
				}
				else
				{
					for (int i = 0; i < nreads; i++)
					{
						off_t		at = (off_t) pages[i] * PAGE;

						if (mode == 3 && pread(fd, buf, PREFIX, at) != PREFIX)
							_exit(1);
						if (pread(fd, buf, ROW, at + 4000) != ROW)
							_exit(1);
						sum += buf[3];
					}
					result[0] = (now_us() - a) / nreads;
				}
				if (write(pipefd[1], result, sizeof(result)) != sizeof(result))
					_exit(1);
				_exit(0);
			}
			if (read(pipefd[0], result, sizeof(result)) != sizeof(result))
				return 1;
			waitpid(child, NULL, 0);
			printf("%s | %.3f | %.0f | %.0f\n", names[mode], result[0], result[1], now_us() - start);
			close(pipefd[0]);
			close(pipefd[1]);
		}
	return 0;
}
