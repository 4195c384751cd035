/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A bounded set of TLB flushes that one vCPU still has to apply.
 */

#include "qemu/osdep.h"
#include "tlb-pending.h"

/* Drop the indexes of @idxmap from every range; forget emptied ranges. */
static void tlb_pending_trim_ranges(TLBPending *p, uint16_t idxmap)
{
    unsigned i, kept = 0;

    for (i = 0; i < p->n_ranges; i++) {
        TLBPendingRange r = p->range[i];

        r.idxmap &= ~idxmap;
        if (r.idxmap) {
            p->range[kept++] = r;
        }
    }
    p->n_ranges = kept;
}

TLBPendingResult tlb_pending_add_all(TLBPending *p, uint16_t idxmap)
{
    if ((idxmap & ~p->full_idxmap) == 0) {
        return TLB_PENDING_COALESCED;
    }
    p->full_idxmap |= idxmap;
    tlb_pending_trim_ranges(p, idxmap);
    return TLB_PENDING_ADDED;
}

/* Do [lo1, hi1] and [lo2, hi2] overlap or touch?  Bounds are inclusive. */
static bool ranges_touch(vaddr lo1, vaddr hi1, vaddr lo2, vaddr hi2)
{
    return (lo2 <= hi1 || lo2 - hi1 == 1) && (lo1 <= hi2 || lo1 - hi2 == 1);
}

/* If @r and [@addr, @addr + @len) have one key and touch, widen @r. */
static bool range_absorb(TLBPendingRange *r, vaddr addr, vaddr len,
                         uint16_t idxmap, unsigned bits)
{
    vaddr last = addr + len - 1;
    vaddr r_last = r->addr + r->len - 1;

    if (r->idxmap != idxmap || r->bits != bits ||
        !ranges_touch(r->addr, r_last, addr, last)) {
        return false;
    }
    r->addr = MIN(r->addr, addr);
    r->len = MAX(r_last, last) - r->addr + 1;
    return true;
}

TLBPendingResult tlb_pending_add_range(TLBPending *p, vaddr addr, vaddr len,
                                       uint16_t idxmap, unsigned bits)
{
    uint16_t escalate;
    unsigned i, j;

    idxmap &= ~p->full_idxmap;
    if (idxmap == 0) {
        return TLB_PENDING_COALESCED;
    }

    for (i = 0; i < p->n_ranges; i++) {
        if (range_absorb(&p->range[i], addr, len, idxmap, bits)) {
            break;
        }
    }
    if (i < p->n_ranges) {
        /* The widened range may now touch others with its key. */
        TLBPendingRange merged = p->range[i];

        p->range[i] = p->range[--p->n_ranges];
        for (j = 0; j < p->n_ranges; j++) {
            TLBPendingRange *o = &p->range[j];

            if (range_absorb(&merged, o->addr, o->len, o->idxmap, o->bits)) {
                *o = p->range[--p->n_ranges];
                j = -1;     /* rescan: @merged grew */
            }
        }
        p->range[p->n_ranges++] = merged;
        return TLB_PENDING_COALESCED;
    }

    if (p->n_ranges < TLB_PENDING_MAX_RANGES) {
        p->range[p->n_ranges++] = (TLBPendingRange) {
            .addr = addr, .len = len, .idxmap = idxmap, .bits = bits,
        };
        return TLB_PENDING_ADDED;
    }

    escalate = idxmap;
    for (i = 0; i < p->n_ranges; i++) {
        escalate |= p->range[i].idxmap;
    }
    p->full_idxmap |= escalate;
    p->n_ranges = 0;
    return TLB_PENDING_ESCALATED;
}
