/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A bounded set of TLB flushes that one vCPU still has to apply.
 */

#ifndef ACCEL_TCG_TLB_PENDING_H
#define ACCEL_TCG_TLB_PENDING_H

#include "exec/vaddr.h"

/*
 * Past this many distinct page ranges, the set escalates to whole flushes
 * of the MMU indexes involved; docs/devel/tcg-tlb-relaxed.rst explains
 * the number.
 */
#define TLB_PENDING_MAX_RANGES 16

typedef struct TLBPendingRange {
    vaddr addr;
    vaddr len;
    uint16_t idxmap;
    uint8_t bits;
} TLBPendingRange;

/*
 * @full_idxmap: MMU indexes to flush entirely.
 * @range[0 .. @n_ranges - 1]: page ranges to flush, each as for
 * tlb_flush_range_by_mmuidx().  No range names an index of @full_idxmap
 * and no two ranges with the same idxmap and bits overlap or touch.
 */
typedef struct TLBPending {
    uint16_t full_idxmap;
    unsigned n_ranges;
    TLBPendingRange range[TLB_PENDING_MAX_RANGES];
} TLBPending;

typedef enum TLBPendingResult {
    TLB_PENDING_ADDED,      /* the flush took a new entry */
    TLB_PENDING_COALESCED,  /* an existing entry already covers it */
    TLB_PENDING_ESCALATED,  /* ranges turned into whole-index flushes */
} TLBPendingResult;

static inline bool tlb_pending_empty(const TLBPending *p)
{
    return p->full_idxmap == 0 && p->n_ranges == 0;
}

/* Add a flush of every entry of the indexes in @idxmap. */
TLBPendingResult tlb_pending_add_all(TLBPending *p, uint16_t idxmap);

/*
 * Add a flush of [@addr, @addr + @len) in the indexes of @idxmap,
 * comparing the low @bits of each address (TARGET_LONG_BITS for all).
 * @len is a non-zero multiple of the page size.
 */
TLBPendingResult tlb_pending_add_range(TLBPending *p, vaddr addr, vaddr len,
                                       uint16_t idxmap, unsigned bits);

#endif /* ACCEL_TCG_TLB_PENDING_H */
