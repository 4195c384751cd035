/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Coalescing of queued TLB flushes (accel/tcg/tlb-pending.c).
 */

#include "qemu/osdep.h"
#include "../../accel/tcg/tlb-pending.h"

#define PAGE 0x1000
#define ALL_BITS 64

static void test_empty(void)
{
    TLBPending p = { 0 };

    g_assert_true(tlb_pending_empty(&p));
    g_assert_cmpint(tlb_pending_add_range(&p, 0x4000, PAGE, 1, ALL_BITS),
                    ==, TLB_PENDING_ADDED);
    g_assert_false(tlb_pending_empty(&p));
}

static void test_same_page_once(void)
{
    TLBPending p = { 0 };

    tlb_pending_add_range(&p, 0x4000, PAGE, 3, ALL_BITS);
    g_assert_cmpint(tlb_pending_add_range(&p, 0x4000, PAGE, 3, ALL_BITS),
                    ==, TLB_PENDING_COALESCED);
    g_assert_cmpuint(p.n_ranges, ==, 1);
    g_assert_cmphex(p.range[0].addr, ==, 0x4000);
    g_assert_cmphex(p.range[0].len, ==, PAGE);
}

static void test_neighbours_merge(void)
{
    TLBPending p = { 0 };
    int i;

    /* Pages 10..19 issued in a scrambled order become one range. */
    for (i = 0; i < 10; i++) {
        vaddr page = 10 + (i * 7) % 10;

        tlb_pending_add_range(&p, page * PAGE, PAGE, 1, ALL_BITS);
    }
    g_assert_cmpuint(p.n_ranges, <=, 3);
    tlb_pending_add_range(&p, 10 * PAGE, 10 * PAGE, 1, ALL_BITS);
    g_assert_cmpuint(p.n_ranges, ==, 1);
    g_assert_cmphex(p.range[0].addr, ==, 10 * PAGE);
    g_assert_cmphex(p.range[0].len, ==, 10 * PAGE);
}

static void test_adjacent_and_overlapping(void)
{
    TLBPending p = { 0 };

    tlb_pending_add_range(&p, 0x10000, 2 * PAGE, 1, ALL_BITS);
    /* Touching below, overlapping above. */
    tlb_pending_add_range(&p, 0xf000, PAGE, 1, ALL_BITS);
    tlb_pending_add_range(&p, 0x11000, 4 * PAGE, 1, ALL_BITS);
    g_assert_cmpuint(p.n_ranges, ==, 1);
    g_assert_cmphex(p.range[0].addr, ==, 0xf000);
    g_assert_cmphex(p.range[0].len, ==, 6 * PAGE);

    /* A gap of one page keeps ranges apart. */
    tlb_pending_add_range(&p, 0x16000, PAGE, 1, ALL_BITS);
    g_assert_cmpuint(p.n_ranges, ==, 2);
}

static void test_top_of_address_space(void)
{
    TLBPending p = { 0 };
    vaddr top = -(vaddr)PAGE;

    tlb_pending_add_range(&p, top, PAGE, 1, ALL_BITS);
    tlb_pending_add_range(&p, top - PAGE, PAGE, 1, ALL_BITS);
    g_assert_cmpuint(p.n_ranges, ==, 1);
    g_assert_cmphex(p.range[0].addr, ==, top - PAGE);
    g_assert_cmphex(p.range[0].len, ==, 2 * PAGE);
    tlb_pending_add_range(&p, 0, PAGE, 1, ALL_BITS);
    g_assert_cmpuint(p.n_ranges, ==, 2);
}

static void test_keys_kept_apart(void)
{
    TLBPending p = { 0 };

    tlb_pending_add_range(&p, 0x4000, PAGE, 1, ALL_BITS);
    tlb_pending_add_range(&p, 0x4000, PAGE, 2, ALL_BITS);
    tlb_pending_add_range(&p, 0x4000, PAGE, 1, 56);
    g_assert_cmpuint(p.n_ranges, ==, 3);
}

static void test_full_subsumes(void)
{
    TLBPending p = { 0 };

    tlb_pending_add_range(&p, 0x4000, PAGE, 1, ALL_BITS);
    tlb_pending_add_range(&p, 0x8000, PAGE, 3, ALL_BITS);
    tlb_pending_add_range(&p, 0xc000, PAGE, 2, ALL_BITS);
    g_assert_cmpint(tlb_pending_add_all(&p, 1), ==, TLB_PENDING_ADDED);
    /* Index 0 left every range; the range for 0 alone is gone. */
    g_assert_cmpuint(p.n_ranges, ==, 2);
    g_assert_cmphex(p.range[0].idxmap, ==, 2);
    g_assert_cmphex(p.range[1].idxmap, ==, 2);
    g_assert_cmpint(tlb_pending_add_range(&p, 0x4000, PAGE, 1, ALL_BITS),
                    ==, TLB_PENDING_COALESCED);
    g_assert_cmpint(tlb_pending_add_all(&p, 1), ==, TLB_PENDING_COALESCED);
    g_assert_cmphex(p.full_idxmap, ==, 1);
}

static void test_escalation(void)
{
    TLBPending p = { 0 };
    int i;

    for (i = 0; i < TLB_PENDING_MAX_RANGES; i++) {
        g_assert_cmpint(tlb_pending_add_range(&p, i * 2 * PAGE, PAGE,
                                              1 << (i % 3), ALL_BITS),
                        ==, TLB_PENDING_ADDED);
    }
    g_assert_cmpint(tlb_pending_add_range(&p, 0x100000, PAGE, 8, ALL_BITS),
                    ==, TLB_PENDING_ESCALATED);
    g_assert_cmpuint(p.n_ranges, ==, 0);
    g_assert_cmphex(p.full_idxmap, ==, 0xf);
    /* A merge into an existing range never escalates. */
    p = (TLBPending) { 0 };
    for (i = 0; i < 4 * TLB_PENDING_MAX_RANGES; i++) {
        g_assert_cmpint(tlb_pending_add_range(&p, i * PAGE, PAGE, 1,
                                              ALL_BITS),
                        !=, TLB_PENDING_ESCALATED);
    }
    g_assert_cmpuint(p.n_ranges, ==, 1);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/tlb-pending/empty", test_empty);
    g_test_add_func("/tlb-pending/same-page-once", test_same_page_once);
    g_test_add_func("/tlb-pending/neighbours-merge", test_neighbours_merge);
    g_test_add_func("/tlb-pending/adjacent-and-overlapping",
                    test_adjacent_and_overlapping);
    g_test_add_func("/tlb-pending/top-of-address-space",
                    test_top_of_address_space);
    g_test_add_func("/tlb-pending/keys-kept-apart", test_keys_kept_apart);
    g_test_add_func("/tlb-pending/full-subsumes", test_full_subsumes);
    g_test_add_func("/tlb-pending/escalation", test_escalation);
    return g_test_run();
}
