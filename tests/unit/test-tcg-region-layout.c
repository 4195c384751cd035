/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tests of the TCG code buffer layout policy and its aligned mappings.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/units.h"
#include "tcg/region-layout.h"
#include <sys/wait.h>

static const unsigned test_threads[] = { 1, 2, 3, 4, 8, 16, 64 };
static const size_t test_tb_sizes[] = {
    1 * MiB, 2 * MiB, 3 * MiB, 16 * MiB, 64 * MiB, 255 * MiB, 256 * MiB,
    1 * GiB, 4 * GiB,
};
static const size_t test_page_sizes[] = { 4 * KiB, 16 * KiB, 64 * KiB };

/* The reach of one page table, as hpage_pmd_size reports it. */
static size_t pmd_size(size_t page_size)
{
    return page_size * (page_size / sizeof(void *));
}

static void check_layout(size_t tb_size, unsigned n_threads, size_t page_size,
                         size_t huge_page_size, bool guards)
{
    size_t guard_size = guards ? page_size : 0;
    size_t min_tb_size = n_threads * (page_size + guard_size);
    TCGRegionLayout l;
    size_t code = 0;

    tcg_region_layout_init(&l, tb_size, n_threads, page_size,
                           huge_page_size, guards);

    /* One region per thread at least; one region for one thread. */
    g_assert_cmpuint(l.n, >=, n_threads);
    if (n_threads == 1) {
        g_assert_cmpuint(l.n, ==, 1);
    }

    /* Huge pages whenever every thread's region can hold one. */
    if (huge_page_size && tb_size / n_threads >= huge_page_size) {
        g_assert_cmpuint(l.unit, ==, huge_page_size);
    } else {
        g_assert_cmpuint(l.unit, ==, page_size);
    }

    /* Aligned starts: every region starts on a unit boundary. */
    g_assert_cmpuint(l.stride % l.unit, ==, 0);
    g_assert_cmpuint(l.total_size % l.unit, ==, 0);
    g_assert_cmpuint(l.stride, >=, l.unit);

    /* Within the buffer, losing at most the rounding to whole units. */
    g_assert_cmpuint(l.n * l.stride, <=, l.total_size);
    g_assert_cmpuint(l.total_size, <=, MAX(tb_size, min_tb_size));
    g_assert_cmpuint(l.total_size + l.unit, >, MAX(tb_size, min_tb_size));

    /* No overlap; each region has code and its guard; capacity is exact. */
    g_assert_cmpuint(l.guard_size, ==, guard_size);
    for (size_t i = 0; i < l.n; i++) {
        size_t start = i * l.stride;
        size_t size = tcg_region_layout_code_size(&l, i);
        size_t next = i + 1 < l.n ? start + l.stride : l.total_size;

        g_assert_cmpuint(size, >=, page_size);
        g_assert_cmpuint(start + size + l.guard_size, ==, next);
        code += size;
    }
    g_assert_cmpuint(code, ==, tcg_region_layout_capacity(&l));
    g_assert_cmpuint(code, ==, l.total_size - l.n * guard_size);

    /* Guards cost at most one huge page in eight, where threads allow. */
    if (guards && l.unit > page_size && l.n > n_threads) {
        g_assert_cmpuint(l.stride, >=, 8 * l.unit);
    }
}

static void test_layout_table(void)
{
    for (int p = 0; p < ARRAY_SIZE(test_page_sizes); p++) {
        size_t page_size = test_page_sizes[p];

        for (int t = 0; t < ARRAY_SIZE(test_threads); t++) {
            for (int s = 0; s < ARRAY_SIZE(test_tb_sizes); s++) {
                size_t tb_size = test_tb_sizes[s];

                check_layout(tb_size, test_threads[t], page_size, 0, false);
                check_layout(tb_size, test_threads[t], page_size, 0, true);
                check_layout(tb_size, test_threads[t], page_size,
                             pmd_size(page_size), false);
                check_layout(tb_size, test_threads[t], page_size,
                             pmd_size(page_size), true);
            }
        }
    }
}

/* -smp 4, tb-size=64: upstream's 32 regions, now of whole huge pages. */
static void test_layout_smp4_64m(void)
{
    TCGRegionLayout l;

    tcg_region_layout_init(&l, 64 * MiB, 4, 4 * KiB, 2 * MiB, false);
    g_assert_cmpuint(l.n, ==, 32);
    g_assert_cmpuint(l.stride, ==, 2 * MiB);
    g_assert_cmpuint(l.guard_size, ==, 0);
    g_assert_cmpuint(tcg_region_layout_capacity(&l), ==, 64 * MiB);

    /* A debug build trades regions for huge pages: 4 of 16 MiB. */
    tcg_region_layout_init(&l, 64 * MiB, 4, 4 * KiB, 2 * MiB, true);
    g_assert_cmpuint(l.n, ==, 4);
    g_assert_cmpuint(l.stride, ==, 16 * MiB);
}

/* A raised tb_size still fits one page of code per thread. */
static void test_layout_tiny(void)
{
    TCGRegionLayout l;

    tcg_region_layout_init(&l, 1 * MiB, 64, 64 * KiB, 512 * MiB, true);
    g_assert_cmpuint(l.n, ==, 64);
    g_assert_cmpuint(l.unit, ==, 64 * KiB);
    g_assert_cmpuint(l.stride, ==, 128 * KiB);
    g_assert_cmpuint(l.total_size, ==, 8 * MiB);
}

static void test_map_aligned(void)
{
    size_t size = 6 * MiB, align = 2 * MiB;
    uint8_t *buf;

    for (int i = 0; i < 4; i++) {
        buf = tcg_region_map(size, align, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, &error_abort);
        g_assert_cmpuint((uintptr_t)buf % align, ==, 0);
        memset(buf, 0x5a, size);
        g_assert_cmpint(munmap(buf, size), ==, 0);
    }
}

/*
 * Write one byte past the code of region 0 in a child process; return
 * whether the write faulted.
 */
static bool write_past_region_end_faults(bool guards)
{
    size_t page_size = qemu_real_host_page_size();
    TCGRegionLayout l;
    uint8_t *buf;
    int status;
    pid_t pid;

    tcg_region_layout_init(&l, 8 * MiB, 2, page_size, 0, guards);
    buf = tcg_region_map(l.total_size, l.unit, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, &error_abort);
    for (size_t i = 0; l.guard_size && i < l.n; i++) {
        uint8_t *end = buf + i * l.stride + tcg_region_layout_code_size(&l, i);

        g_assert_cmpint(mprotect(end, l.guard_size, PROT_NONE), ==, 0);
    }

    pid = fork();
    g_assert_cmpint(pid, >=, 0);
    if (pid == 0) {
        buf[tcg_region_layout_code_size(&l, 0)] = 1;
        _exit(0);
    }
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    munmap(buf, l.total_size);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

static void test_guard_faults(void)
{
    g_assert_true(write_past_region_end_faults(true));
}

static void test_no_guard_no_fault(void)
{
    g_assert_false(write_past_region_end_faults(false));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/tcg/region-layout/table", test_layout_table);
    g_test_add_func("/tcg/region-layout/smp4-64m", test_layout_smp4_64m);
    g_test_add_func("/tcg/region-layout/tiny", test_layout_tiny);
    g_test_add_func("/tcg/region-layout/map-aligned", test_map_aligned);
    g_test_add_func("/tcg/region-layout/guard-faults", test_guard_faults);
    g_test_add_func("/tcg/region-layout/no-guard-no-fault",
                    test_no_guard_no_fault);
    return g_test_run();
}
