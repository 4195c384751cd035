/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * In-guest TLB maintenance micro-benchmarks, run as the initramfs's init
 * ("rdinit=/tlb-bench -- [OPS]"): every CPU but one runs a thread of
 * this process that keeps reading memory, so the kernel's broadcast
 * TLB invalidations must reach busy vCPUs, while the main thread times
 *   mprotect   an mprotect(PROT_READ) + mprotect(PROT_READ|PROT_WRITE) pair
 *   munmap     mmap of 64 pages, touching each, munmap
 *   fork       fork, the child writing one byte of each of 64 pages
 *              (copy on write) and exiting, the parent waiting for it
 * with the guest's CLOCK_MONOTONIC, one operation at a time, and prints,
 * per operation,
 *   RESULT <op> <ncpus> <mean ns> <ops> <median ns> <99th percentile ns>
 * then powers the guest off.  Built static by bin/guest-kernel.
 */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N_PAGES 64
#define MIN_NS (500 * 1000 * 1000ll)  /* time each op at least this long */
#define MAX_SAMPLES 65536           /* per op; mprotect makes ~4000 */

static long page_size;
static int stop_busy;
static char *shared;

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void *busy(void *arg)
{
    unsigned long sum = 0;

    while (!__atomic_load_n(&stop_busy, __ATOMIC_RELAXED)) {
        for (int i = 0; i < N_PAGES; i++) {
            sum += __atomic_load_n(&shared[i * page_size], __ATOMIC_RELAXED);
        }
    }
    return (void *)sum;
}

static void op_mprotect(void)
{
    static char *page;

    if (!page) {
        page = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    page[0]++;
    mprotect(page, page_size, PROT_READ);
    mprotect(page, page_size, PROT_READ | PROT_WRITE);
}

static void op_munmap(void)
{
    char *p = mmap(NULL, N_PAGES * page_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    for (int i = 0; i < N_PAGES; i++) {
        p[i * page_size] = i;
    }
    munmap(p, N_PAGES * page_size);
}

static void op_fork(void)
{
    static char *pages;
    pid_t pid;

    if (!pages) {
        pages = mmap(NULL, N_PAGES * page_size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        memset(pages, 1, N_PAGES * page_size);
    }
    pid = fork();
    if (pid == 0) {
        for (int i = 0; i < N_PAGES; i++) {
            pages[i * page_size]++;
        }
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    pages[0]++;     /* the parent's copy on write */
}

static const struct {
    const char *name;
    void (*fn)(void);
} ops[] = {
    { "mprotect", op_mprotect },
    { "munmap", op_munmap },
    { "fork", op_fork },
};

static int64_t samples[MAX_SAMPLES];

static int compare_ns(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* The nearest-rank @pct-th percentile of the @n sorted samples. */
static int64_t percentile(long n, int pct)
{
    return samples[(n * pct + 99) / 100 - 1];
}

static void run(int op, int ncpus)
{
    int64_t start, before, after;
    long n = 0, kept;

    ops[op].fn();   /* warm up */
    start = after = now_ns();
    do {
        before = after;
        ops[op].fn();
        after = now_ns();
        if (n < MAX_SAMPLES) {
            samples[n] = after - before;
        }
        n++;
    } while (after - start < MIN_NS);
    kept = n < MAX_SAMPLES ? n : MAX_SAMPLES;
    qsort(samples, kept, sizeof(samples[0]), compare_ns);
    printf("RESULT %s %d %.0f %ld %lld %lld\n", ops[op].name, ncpus,
           (double)(after - start) / n, n, (long long)percentile(kept, 50),
           (long long)percentile(kept, 99));
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int ncpus = sysconf(_SC_NPROCESSORS_ONLN);
    pthread_t threads[ncpus > 1 ? ncpus - 1 : 1];

    page_size = getauxval(AT_PAGESZ);
    shared = mmap(NULL, N_PAGES * page_size, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    for (int i = 0; i < ncpus - 1; i++) {
        pthread_create(&threads[i], NULL, busy, NULL);
    }

    for (int op = 0; op < (int)(sizeof(ops) / sizeof(ops[0])); op++) {
        int wanted = argc <= 1;

        for (int a = 1; a < argc; a++) {
            wanted |= strcmp(argv[a], ops[op].name) == 0;
        }
        if (wanted) {
            run(op, ncpus);
        }
    }

    __atomic_store_n(&stop_busy, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < ncpus - 1; i++) {
        pthread_join(threads[i], NULL);
    }
    puts("booted");
    fflush(stdout);
    reboot(RB_POWER_OFF);
    return 1;
}
