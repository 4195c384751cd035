/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * In-guest TLB maintenance micro-benchmarks, run as the initramfs's init
 * ("rdinit=/tlb-bench -- [OPS]"): every CPU but one runs a thread of
 * this process that keeps accessing memory, so the kernel's broadcast
 * TLB invalidations must reach busy vCPUs, while the main thread, on
 * CPU 0, times (each thread is pinned to its CPU, so that the guest's
 * scheduler does not move them between runs)
 *   mprotect   an mprotect(PROT_READ) + mprotect(PROT_READ|PROT_WRITE)
 *              pair on a page of its own, the other threads reading 64
 *              pages mapped right above it
 *   munmap     mmap of 64 pages, touching each, munmap
 *   fork       fork, the child writing one byte of each of 64 pages
 *              (copy on write) and exiting, the parent waiting for it
 * the same mprotect pair in other shapes of what the other threads do,
 * each on pages mapped afresh for it:
 *   mprotect-far-read, mprotect-far-write
 *              they read or write a page mapped 4 GiB below it
 *   mprotect-adjacent-read, mprotect-adjacent-write
 *              they read or write the page that the next mmap() after
 *              the mprotected page's returned: right below it, the way
 *              mmap() and malloc() lay out data that threads share
 *   mprotect-apart-write
 *              they write the page right below it too, but a shared
 *              mapping, which the kernel never merges with the
 *              mprotected page's (the mprotected page still merges with
 *              an anonymous mapping above it, if one is there)
 *   mprotect-merged-far-write
 *              they write a page 4 GiB below it, as in mprotect-far-*,
 *              but the page that the next mmap() returned, right below
 *              it, is mapped too and touched by nobody: the mprotected
 *              page shares its mapping with it, so every mprotect()
 *              splits the mapping and the next merges it back, as in the
 *              adjacent shapes.  Where the far shapes' mprotected page
 *              has a mapping of its own, as when a thread stack's guard
 *              page lies above it, the kernel does neither, and the pair
 *              costs a fraction as much.  The split is twice where the
 *              page is in the middle of its mapping, once at an end: run
 *              after the adjacent shapes (this table's order), this
 *              page merges with their written page above it, as theirs
 *              does with the far shapes' page
 *   mprotect-shared-read
 *              they read the mprotected page itself
 * and, with nothing for TLB maintenance to do, the paths that relaxed
 * maintenance adds hooks to, 1000 iterations per operation:
 *   tb         MSR TPIDR_EL0, which ends its TB: one pass of QEMU's
 *              execution loop each
 *   svc        a system call (getppid): an exception and its return
 *   dsb        DSB ISH with no TLB maintenance before it
 *   fill       loads from 16 pages 4 GiB apart in turn, so that each misses
 *              QEMU's TLB and its victim TLB and walks the page table
 * and what a munmap() leaves of the TLB: mmap of 2 pages, touching each,
 * munmap, then, timed alone, one load from each of 32 pages that the
 * process keeps, read before the mmap (so 32 loads when the TLB kept them)
 *   reread-near   the 2 pages mapped next to the 32, in one mapping
 *   reread-alone  the 2 pages alone in a 2 MiB region 1 GiB away: the
 *                 kernel frees their page table, and its range TLBI
 *                 covers the 2 MiB
 * with the guest's CLOCK_MONOTONIC, one operation at a time, each for at
 * least half a second (seconds=S: S seconds; callgrind wants longer), and
 * prints,
 * per operation,
 *   RUN <op> <ncpus>
 * as it starts timing it (a host can then read QEMU's counters), and
 *   RESULT <op> <ncpus> <mean ns> <ops> <median ns> <99th percentile ns>
 *          <the other threads' accesses per second>
 * (of reread-*, the times of their 32 loads)
 * then powers the guest off.  Built static by bin/guest-kernel.
 */

#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/reboot.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N_PAGES 64
#define MIN_NS (500 * 1000 * 1000ll)  /* time each op at least this long */
#define MAX_SAMPLES 65536           /* per op; mprotect makes ~4000 */
#define PATH_ITERATIONS 1000        /* per op of tb, svc, dsb and fill */
#define FAR ((uintptr_t)4 << 30)    /* another 1 GiB region, any TLB set */
#define FILL_PAGES 16               /* more than QEMU's 8-entry victim TLB */
#define MAX_THREADS 256
#define WARM_PAGES 32               /* what reread-* keep warm */
#define ALONE ((uintptr_t)1 << 30)  /* reread-alone's region, from warm */

static long page_size;
static int stop_busy;
static char *shared;

/*
 * What the other threads access: the 64 pages of @shared when
 * @busy_page is NULL, else that page, written if @busy_write.
 */
static char *busy_page;
static int busy_write;

/* Each thread's accesses, on a cache line of its own. */
static struct {
    unsigned long n;
    char pad[256 - sizeof(unsigned long)];
} progress[MAX_THREADS];

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void *busy(void *arg)
{
    long self = (long)arg;
    unsigned long sum = 0, n = 0;

    while (!__atomic_load_n(&stop_busy, __ATOMIC_RELAXED)) {
        char *page = __atomic_load_n(&busy_page, __ATOMIC_ACQUIRE);

        if (!page) {
            for (int i = 0; i < N_PAGES; i++) {
                sum += __atomic_load_n(&shared[i * page_size],
                                       __ATOMIC_RELAXED);
            }
            n += N_PAGES;
        } else if (__atomic_load_n(&busy_write, __ATOMIC_RELAXED)) {
            /* A line of its own per thread, as per-thread data would be. */
            char *p = &page[(self * 64) % page_size];

            __atomic_store_n(p, *p + 1, __ATOMIC_RELAXED);
            n++;
        } else {
            sum += __atomic_load_n(&page[(self * 64) % page_size],
                                   __ATOMIC_RELAXED);
            n++;
        }
        __atomic_store_n(&progress[self].n, n, __ATOMIC_RELAXED);
    }
    return (void *)sum;
}

static unsigned long others_progress(int ncpus)
{
    unsigned long n = 0;

    for (int i = 0; i < ncpus - 1 && i < MAX_THREADS; i++) {
        n += __atomic_load_n(&progress[i].n, __ATOMIC_RELAXED);
    }
    return n;
}

/*
 * One page of anonymous memory, written once: private unless @flags has
 * MAP_SHARED; @flags are added to mmap()'s.
 */
static char *map_page(void *hint, int flags)
{
    int type = flags & MAP_SHARED ? 0 : MAP_PRIVATE;
    char *p = mmap(hint, page_size, PROT_READ | PROT_WRITE,
                   type | MAP_ANONYMOUS | flags, -1, 0);

    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    p[0] = 1;
    return p;
}

/* The page that the shapes' operation mprotects. */
static char *mprotected;

static void mprotect_pair(char *page)
{
    page[0]++;
    mprotect(page, page_size, PROT_READ);
    mprotect(page, page_size, PROT_READ | PROT_WRITE);
}

static void op_mprotect(void)
{
    static char *page;

    if (!page) {
        page = map_page(NULL, 0);
    }
    mprotect_pair(page);
}

static void op_mprotect_shape(void)
{
    mprotect_pair(mprotected);
}

/* Shapes: map the page to mprotect, and what the others access. */
static void shape_far(int write)
{
    mprotected = map_page(NULL, 0);
    busy_write = write;
    __atomic_store_n(&busy_page,
                     map_page(mprotected - FAR, MAP_FIXED_NOREPLACE),
                     __ATOMIC_RELEASE);
}

static void shape_far_read(void)
{
    shape_far(0);
}

static void shape_far_write(void)
{
    shape_far(1);
}

static void shape_adjacent(int write)
{
    mprotected = map_page(NULL, 0);
    busy_write = write;
    __atomic_store_n(&busy_page, map_page(NULL, 0), __ATOMIC_RELEASE);
}

static void shape_adjacent_read(void)
{
    shape_adjacent(0);
}

static void shape_adjacent_write(void)
{
    shape_adjacent(1);
}

static void shape_merged_far_write(void)
{
    mprotected = map_page(NULL, 0);
    map_page(NULL, 0);
    busy_write = 1;
    __atomic_store_n(&busy_page,
                     map_page(mprotected - FAR, MAP_FIXED_NOREPLACE),
                     __ATOMIC_RELEASE);
}

static void shape_apart_write(void)
{
    mprotected = map_page(NULL, 0);
    busy_write = 1;
    __atomic_store_n(&busy_page, map_page(NULL, MAP_SHARED),
                     __ATOMIC_RELEASE);
}

static void shape_shared_read(void)
{
    mprotected = map_page(NULL, 0);
    busy_write = 0;
    __atomic_store_n(&busy_page, mprotected, __ATOMIC_RELEASE);
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

static void op_tb(void)
{
    uint64_t tls;

    /* TPIDR_EL0 holds the C library's thread pointer: write it back. */
    asm volatile("mrs %0, tpidr_el0" : "=r"(tls));
    for (int i = 0; i < PATH_ITERATIONS; i++) {
        asm volatile("msr tpidr_el0, %0" : : "r"(tls) : "memory");
    }
}

static void op_svc(void)
{
    for (int i = 0; i < PATH_ITERATIONS; i++) {
        syscall(SYS_getppid);
    }
}

static void op_dsb(void)
{
    for (int i = 0; i < PATH_ITERATIONS; i++) {
        asm volatile("dsb ish" : : : "memory");
    }
}

static char *fill_page[FILL_PAGES];

static void op_fill(void)
{
    unsigned long sum = 0;

    if (!fill_page[0]) {
        char *base = map_page(NULL, 0);

        for (int i = 0; i < FILL_PAGES; i++) {
            fill_page[i] = map_page(base - (i + 1) * FAR,
                                    MAP_FIXED_NOREPLACE);
        }
    }
    for (int i = 0; i < PATH_ITERATIONS; i++) {
        sum += __atomic_load_n(fill_page[i % FILL_PAGES], __ATOMIC_RELAXED);
    }
    asm volatile("" : : "r"(sum));
}

/* What an op timed itself, where it times part of what it does; else -1. */
static int64_t op_timed_ns = -1;

static char *warm;

static void map_warm(void)
{
    if (!warm) {
        warm = mmap(NULL, WARM_PAGES * page_size, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    }
}

static void reread(uintptr_t hint, int flags)
{
    unsigned long sum = 0;
    int64_t start;
    char *p;

    for (int i = 0; i < WARM_PAGES; i++) {
        sum += __atomic_load_n(&warm[i * page_size], __ATOMIC_RELAXED);
    }
    p = mmap((void *)hint, 2 * page_size, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    p[0] = p[page_size] = 1;
    munmap(p, 2 * page_size);
    start = now_ns();
    for (int i = 0; i < WARM_PAGES; i++) {
        sum += __atomic_load_n(&warm[i * page_size], __ATOMIC_RELAXED);
    }
    op_timed_ns = now_ns() - start;
    asm volatile("" : : "r"(sum));
}

static void op_reread_near(void)
{
    map_warm();
    reread((uintptr_t)NULL, 0);
}

static void op_reread_alone(void)
{
    map_warm();
    reread(((uintptr_t)warm + ALONE) & ~(uintptr_t)0x1fffff,
           MAP_FIXED_NOREPLACE);
}

static const struct {
    const char *name;
    void (*fn)(void);
    void (*shape)(void);    /* maps its pages before the first run */
} ops[] = {
    { "mprotect", op_mprotect },
    { "munmap", op_munmap },
    { "fork", op_fork },
    { "mprotect-far-read", op_mprotect_shape, shape_far_read },
    { "mprotect-far-write", op_mprotect_shape, shape_far_write },
    { "mprotect-adjacent-read", op_mprotect_shape, shape_adjacent_read },
    { "mprotect-adjacent-write", op_mprotect_shape, shape_adjacent_write },
    { "mprotect-apart-write", op_mprotect_shape, shape_apart_write },
    { "mprotect-merged-far-write", op_mprotect_shape,
      shape_merged_far_write },
    { "mprotect-shared-read", op_mprotect_shape, shape_shared_read },
    { "tb", op_tb },
    { "svc", op_svc },
    { "dsb", op_dsb },
    { "fill", op_fill },
    { "reread-near", op_reread_near },
    { "reread-alone", op_reread_alone },
};

/* What runs without OPS: the operations of the first releases. */
#define DEFAULT_OPS 3

static int64_t samples[MAX_SAMPLES];

/* How long each op is timed: MIN_NS, or seconds=S on the command line. */
static int64_t min_ns = MIN_NS;

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
    int64_t start, before, after, timed = 0;
    unsigned long others;
    long n = 0, kept;

    if (ops[op].shape) {
        ops[op].shape();
    } else {
        __atomic_store_n(&busy_page, NULL, __ATOMIC_RELEASE);
    }
    ops[op].fn();   /* warm up */
    printf("RUN %s %d\n", ops[op].name, ncpus);
    fflush(stdout);
    others = others_progress(ncpus);
    start = after = now_ns();
    do {
        before = after;
        op_timed_ns = -1;
        ops[op].fn();
        after = now_ns();
        if (op_timed_ns >= 0) {
            before = after - op_timed_ns;
        }
        if (n < MAX_SAMPLES) {
            samples[n] = after - before;
        }
        timed += after - before;
        n++;
    } while (after - start < min_ns);
    others = others_progress(ncpus) - others;
    kept = n < MAX_SAMPLES ? n : MAX_SAMPLES;
    qsort(samples, kept, sizeof(samples[0]), compare_ns);
    printf("RESULT %s %d %.0f %ld %lld %lld %.0f\n", ops[op].name, ncpus,
           (double)timed / n, n, (long long)percentile(kept, 50),
           (long long)percentile(kept, 99),
           others * 1e9 / (after - start));
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int ncpus = sysconf(_SC_NPROCESSORS_ONLN);
    pthread_t threads[MAX_THREADS];
    int named_ops = 0;

    cpu_set_t cpus;

    for (int a = 1; a < argc; a++) {
        if (strncmp(argv[a], "seconds=", 8) == 0) {
            min_ns = atoll(argv[a] + 8) * 1000000000ll;
        } else {
            named_ops++;
        }
    }
    page_size = getauxval(AT_PAGESZ);
    shared = mmap(NULL, N_PAGES * page_size, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    for (long i = 0; i < ncpus - 1 && i < MAX_THREADS; i++) {
        pthread_attr_t attr;

        pthread_attr_init(&attr);
        CPU_ZERO(&cpus);
        CPU_SET(i + 1, &cpus);
        pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus);
        pthread_create(&threads[i], &attr, busy, (void *)i);
        pthread_attr_destroy(&attr);
    }
    CPU_ZERO(&cpus);
    CPU_SET(0, &cpus);
    sched_setaffinity(0, sizeof(cpus), &cpus);

    for (int op = 0; op < (int)(sizeof(ops) / sizeof(ops[0])); op++) {
        int wanted = !named_ops && op < DEFAULT_OPS;

        for (int a = 1; a < argc; a++) {
            wanted |= strcmp(argv[a], ops[op].name) == 0;
        }
        if (wanted) {
            run(op, ncpus);
        }
    }

    __atomic_store_n(&stop_busy, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < ncpus - 1 && i < MAX_THREADS; i++) {
        pthread_join(threads[i], NULL);
    }
    puts("booted");
    fflush(stdout);
    reboot(RB_POWER_OFF);
    return 1;
}
