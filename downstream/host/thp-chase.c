/*
 * Does a transparent huge page make a TLB miss cheaper on this host?
 *
 * Chases pointers through 1 GiB, one load per 4 KiB page in random order,
 * so that nearly every load misses the TLB, once with MADV_HUGEPAGE and
 * once with MADV_NOHUGEPAGE, three times each.  On bare metal huge pages
 * cut the page walk short and the chase runs markedly faster; in a guest
 * whose memory the hypervisor backs with 4 KiB pages the nested walk stays
 * long and the two times come out alike.
 *
 * Build and run:
 *   gcc -O2 -o thp-chase downstream/host/thp-chase.c && ./thp-chase
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define AREA_SIZE   (1UL << 30)
#define HUGE_SIZE   (2UL << 20)
#define PAGE_WORDS  (4096 / sizeof(uint64_t))
#define LOADS       20000000UL

/* AnonHugePages of this process, in KiB. */
static long anon_huge_kib(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long kib = -1;

    while (f && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "AnonHugePages: %ld kB", &kib) == 1) {
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    return kib;
}

/* Nanoseconds per load of a random page cycle through a fresh area. */
static double chase(int advice, long *huge_kib)
{
    size_t pages = AREA_SIZE / 4096;
    size_t *order = malloc(pages * sizeof(*order));
    char *map = mmap(NULL, AREA_SIZE + HUGE_SIZE, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint64_t *area, next = 0;
    struct timespec start, end;

    if (!order || map == MAP_FAILED) {
        perror("thp-chase");
        exit(1);
    }
    area = (uint64_t *)(((uintptr_t)map + HUGE_SIZE - 1) & ~(HUGE_SIZE - 1));
    madvise(area, AREA_SIZE, advice);

    for (size_t i = 0; i < pages; i++) {
        order[i] = i;
    }
    srand(1);
    for (size_t i = pages - 1; i > 0; i--) {
        size_t j = (size_t)rand() % (i + 1), t = order[i];

        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < pages; i++) {
        area[order[i] * PAGE_WORDS] = order[(i + 1) % pages] * PAGE_WORDS;
    }
    *huge_kib = anon_huge_kib();

    clock_gettime(CLOCK_MONOTONIC, &start);
    for (size_t i = 0; i < LOADS; i++) {
        next = area[next];
    }
    clock_gettime(CLOCK_MONOTONIC, &end);

    munmap(map, AREA_SIZE + HUGE_SIZE);
    free(order);
    /* Using next (0 or 1 ns in all) keeps the chase from being elided. */
    return ((end.tv_sec - start.tv_sec) * 1e9 +
            (end.tv_nsec - start.tv_nsec) + (next == 1)) / LOADS;
}

int main(void)
{
    for (int round = 0; round < 3; round++) {
        long huge_kib, small_kib;
        double huge = chase(MADV_HUGEPAGE, &huge_kib);
        double small = chase(MADV_NOHUGEPAGE, &small_kib);

        printf("MADV_HUGEPAGE %.1f ns/load (AnonHugePages %ld KiB), "
               "MADV_NOHUGEPAGE %.1f ns/load (%ld KiB): ratio %.2f\n",
               huge, huge_kib, small, small_kib, huge / small);
    }
    return 0;
}
