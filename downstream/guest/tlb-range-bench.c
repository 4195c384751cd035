/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a range TLBI costs QEMU, by the range's length and the TLB's
 * size: the measurement behind the range flush's scan ceiling (issue
 * 46).  A bare-metal guest on tests/tcg's aarch64 boot.S, one CPU:
 *
 *   for each table size S in 256, 1024 and 4096 entries:
 *     grow QEMU's TLB to S (touch 0.9 S pages, TLBI VMALLE1, again),
 *     then for each range of N pages, 0 (none) and 2 to 65536:
 *       repeat: read WARM pages (one load each), TLBI RVAE1 of N pages
 *       that nothing maps, DSB
 *     and print
 *       RESULT <S> <N> <ns per iteration>
 *
 * The iterations' time less N = 0's is what the flush costs, and the
 * refills of the WARM pages that it threw away.  A build that walks
 * every range page by page, one that scans the table for every range
 * and one that empties the index past the table's size, run side by
 * side, give the three costs that the ceiling chooses between.
 *
 * QEMU only grows a TLB at a whole flush whose index was more than 70%
 * used, so the sizes are what the growth asked for, not read back; a
 * build that empties the index may shrink it again between ranges.
 *
 * Build and run: bin/tlb-range-bench --help.
 */

#include <stdint.h>
#include <minilib.h>

#define PAGE_SIZE       0x1000ull
#define GIB             0x40000000ull
#define FRAME           (GIB + 0x5000000ull)    /* free RAM, as tlb-range */
#define WINDOW_L1       3
#define WINDOW          (WINDOW_L1 * GIB)       /* VA 3 GiB: 16 MiB of pages */
#define WINDOW_TABLES   8
#define WINDOW_PAGES    (WINDOW_TABLES * 512)
#define RANGE_VA        (5 * GIB)               /* nothing maps it */
#define WARM            32
#define RUN_NS          20000000ull             /* per (S, N) */

#define DESC_TABLE      3ull
#define DESC_PAGE       (3ull | 1ull << 10 | 3ull << 8 | 3ull << 53)

#define READ_SYSREG(r) \
    ({ uint64_t v_; asm volatile("isb\n mrs %0, " #r : "=r"(v_)); v_; })

static uint64_t window_l2[512] __attribute__((aligned(PAGE_SIZE)));
static uint64_t window_l3[WINDOW_TABLES][512]
    __attribute__((aligned(PAGE_SIZE)));

static void flush_all(void)
{
    asm volatile("dsb ish\n tlbi vmalle1\n dsb ish\n isb" : : : "memory");
}

static void load_page(unsigned page)
{
    __atomic_load_n((uint64_t *)(uintptr_t)(WINDOW + page * PAGE_SIZE),
                    __ATOMIC_RELAXED);
}

static void map_window(void)
{
    uint64_t *l1 = (uint64_t *)(uintptr_t)(READ_SYSREG(ttbr0_el1) & ~0xfffull);

    for (int t = 0; t < WINDOW_TABLES; t++) {
        for (int p = 0; p < 512; p++) {
            window_l3[t][p] = FRAME | DESC_PAGE;
        }
        window_l2[t] = (uintptr_t)window_l3[t] | DESC_TABLE;
    }
    asm volatile("dsb ish" : : : "memory");
    l1[WINDOW_L1] = (uintptr_t)window_l2 | DESC_TABLE;
    flush_all();
}

/* Grow the TLB by doubling until it has @entries. */
static void grow_tlb(unsigned entries)
{
    for (unsigned size = 256; size < entries; size <<= 1) {
        for (unsigned p = 0; p < size * 9 / 10 + 1; p++) {
            load_page(p);
        }
        flush_all();
    }
}

/*
 * TLBI RVAE1 of @pages 4 KiB pages from RANGE_VA, (NUM + 1) << (5 SCALE + 1)
 * pages: TG [47:46] = 1, SCALE [45:44], NUM [43:39], BaseADDR [36:0].
 */
static uint64_t range_operand(unsigned pages)
{
    unsigned scale = 0;

    while (pages >> (5 * scale + 1) > 32) {
        scale++;
    }
    return 1ull << 46 | (uint64_t)scale << 44 |
           (uint64_t)((pages >> (5 * scale + 1)) - 1) << 39 | RANGE_VA >> 12;
}

static uint64_t ns_per_iteration(unsigned pages)
{
    uint64_t op = range_operand(pages);
    uint64_t freq = READ_SYSREG(cntfrq_el0);
    uint64_t start = READ_SYSREG(cntvct_el0), ticks;
    uint64_t iterations = 0;

    do {
        for (unsigned p = 0; p < WARM; p++) {
            load_page(p);
        }
        if (pages) {
            asm volatile("sys #0, c8, c6, #1, %0\n dsb ish"
                         : : "r"(op) : "memory");
        }
        iterations++;
        ticks = READ_SYSREG(cntvct_el0) - start;
    } while (ticks * 1000000000ull / freq < RUN_NS);
    return ticks * 1000000000ull / freq / iterations;
}

int main(void)
{
    static const unsigned sizes[] = { 256, 1024, 4096 };

    map_window();
    for (int s = 0; s < 3; s++) {
        grow_tlb(sizes[s]);
        for (unsigned pages = 0; pages <= 65536;
             pages = pages ? pages * 2 : 2) {
            ml_printf("RESULT %u %u %lu\n", sizes[s], pages,
                      ns_per_iteration(pages));
        }
    }
    return 0;
}
