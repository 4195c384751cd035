/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Relaxed broadcast TLB maintenance: "-accel tcg,tlb-flush=relaxed".
 *
 * Arm requires a broadcast TLB invalidation to be complete only once the
 * issuing PE executes a DSB (Arm ARM, "Ordering and completion of TLB
 * maintenance instructions").  Strict mode completes each one at once,
 * in an exclusive section.  Relaxed mode flushes the issuer's own TLB at
 * once, queues the flush for every other vCPU, and makes the issuer's
 * barrier, tlb_flush_barrier(), wait until those vCPUs have applied it.
 *
 * State:
 *   flush_gen        global flush generation, advanced by one per
 *                    broadcast after that broadcast is queued everywhere;
 *   v->pending       flushes queued for vCPU v, under v->lock; bounded,
 *                    see tlb-pending.h;
 *   v->acked_gen     the flush_gen that v read before it last emptied
 *                    v->pending; written only by v's thread;
 *   v->barrier_gen   generation of v's newest broadcast that v's next
 *                    barrier must see complete, 0 for none; v's thread;
 *   v->active        v may execute guest code: it is between
 *                    tlb_relaxed_exec_enter() and tlb_relaxed_exec_exit().
 *
 * Invariant: once a barrier for generation g returns, every other vCPU
 * either has acked_gen >= g, so its TLB holds no entry that broadcast
 * removed, or is inactive and catches up before it runs guest code again.
 *
 * Memory ordering, each rule pairs with the one after the semicolon:
 * (1) an issuer unlocks each v->lock, advances flush_gen with a full
 *     barrier, then reads v->active; v stores v->active, smp_mb(), then
 *     reads flush_gen.  Either the issuer sees v active and waits for it,
 *     or v sees the new generation as it starts.
 * (2) v reads flush_gen with acquire and only then takes v->pending, and
 *     publishes acked_gen with release after applying it; a barrier reads
 *     acked_gen with acquire.  acked_gen >= g thus means g's flushes were
 *     taken and applied.
 * (3) the issuer kicks active vCPUs (icount_decr.u16.high = -1) after
 *     advancing flush_gen; cpu_handle_interrupt() clears the kick with a
 *     full barrier before it reads flush_gen, so no kick is lost.
 * (4) a waiter counts itself in n_waiting, then resets its event and
 *     re-checks; whoever acknowledges, leaves the active set or issues
 *     does so, then smp_mb(), then sets the events if n_waiting != 0.
 *
 * A waiting vCPU applies its own pending flushes while it waits, so two
 * vCPUs in barriers at once do not wait for each other forever; inactive
 * (halted, stopped or exclusive-waiting) vCPUs are neither kicked nor
 * woken nor waited for.
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/memalign.h"
#include "qemu/stats64.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "hw/core/cpu.h"
#include "accel/tcg/cpu-ops.h"
#include "exec/cputlb.h"
#include "tlb-pending.h"
#include "tlb-relaxed.h"
#include "trace.h"

/* Checks of acked_gen before a barrier sleeps on its event. */
#define TLB_RELAXED_SPIN 100

typedef struct TLBRelaxedVCPU {
    QemuSpin lock;
    TLBPending pending;
    uint64_t acked_gen;
    uint64_t barrier_gen;
    bool active;
    QemuEvent wake;

    Stat64 issued;          /* broadcasts this vCPU made */
    Stat64 coalesced;       /* of their remote parts, merged into others */
    Stat64 escalated;       /* of their remote parts, made whole flushes */
    Stat64 skipped;         /* inactive vCPUs not kicked */
    Stat64 catch_ups;       /* times this vCPU applied queued flushes */
    Stat64 barrier_waits;   /* barriers that found work outstanding */
    Stat64 barrier_wait_ns;
} QEMU_ALIGNED(64) TLBRelaxedVCPU;

static TLBRelaxedVCPU *tlb_relaxed_vcpus;
static unsigned tlb_relaxed_max_cpus;
static uint64_t flush_gen;
static unsigned n_waiting;

static TLBRelaxedVCPU *vcpu_state(CPUState *cpu)
{
    assert(cpu->cpu_index < tlb_relaxed_max_cpus);
    return &tlb_relaxed_vcpus[cpu->cpu_index];
}

void tlb_relaxed_init(unsigned max_cpus)
{
    size_t size = max_cpus * sizeof(TLBRelaxedVCPU);
    unsigned i;

    tlb_relaxed_vcpus = qemu_memalign(sizeof(TLBRelaxedVCPU), size);
    memset(tlb_relaxed_vcpus, 0, size);
    for (i = 0; i < max_cpus; i++) {
        qemu_spin_init(&tlb_relaxed_vcpus[i].lock);
        qemu_event_init(&tlb_relaxed_vcpus[i].wake, false);
    }
    tlb_relaxed_max_cpus = max_cpus;
    tcg_tlb_flush_relaxed = true;
}

bool tlb_relaxed_realize(CPUState *cpu, Error **errp)
{
    if (tcg_tlb_flush_relaxed && !cpu->cc->tcg_ops->relaxed_tlb_flush) {
        error_setg(errp, "tlb-flush=relaxed is not supported by CPU type %s",
                   object_get_typename(OBJECT(cpu)));
        return false;
    }
    return true;
}

/*
 * Rule (4): let every waiting barrier re-check its condition.  Return
 * whether any barrier waits.
 */
static bool wake_waiters(void)
{
    unsigned i;

    smp_mb();   /* order our store before reading n_waiting: rule (4) */
    if (qatomic_read(&n_waiting) == 0) {
        return false;
    }
    for (i = 0; i < tlb_relaxed_max_cpus; i++) {
        qemu_event_set(&tlb_relaxed_vcpus[i].wake);
    }
    return true;
}

void tlb_relaxed_flush_all_cpus(CPUState *src, vaddr addr, vaddr len,
                                uint16_t idxmap, unsigned bits)
{
    TLBRelaxedVCPU *self = vcpu_state(src);
    uint64_t coalesced = 0, escalated = 0, skipped = 0;
    CPUState *cpu;
    uint64_t gen;

    if (len == 0) {
        tlb_flush_by_mmuidx(src, idxmap);
    } else {
        tlb_flush_range_by_mmuidx(src, addr, len, idxmap, bits);
    }

    CPU_FOREACH(cpu) {
        TLBRelaxedVCPU *v = vcpu_state(cpu);
        TLBPendingResult res;

        if (cpu == src) {
            continue;
        }
        qemu_spin_lock(&v->lock);
        if (len == 0) {
            res = tlb_pending_add_all(&v->pending, idxmap);
        } else {
            res = tlb_pending_add_range(&v->pending, addr, len, idxmap, bits);
        }
        qemu_spin_unlock(&v->lock);
        coalesced += res == TLB_PENDING_COALESCED;
        escalated += res == TLB_PENDING_ESCALATED;
    }

    /* Rules (1) and (3). */
    gen = qatomic_fetch_inc(&flush_gen) + 1;
    smp_mb__after_rmw();
    self->barrier_gen = gen;

    CPU_FOREACH(cpu) {
        if (cpu == src) {
            continue;
        }
        if (qatomic_read(&vcpu_state(cpu)->active)) {
            qatomic_set(&cpu->neg.icount_decr.u16.high, -1);
        } else {
            skipped++;
        }
    }
    wake_waiters();

    stat64_add(&self->issued, 1);
    stat64_add(&self->coalesced, coalesced);
    stat64_add(&self->escalated, escalated);
    stat64_add(&self->skipped, skipped);
    trace_tlb_relaxed_flush(src->cpu_index, gen, addr, len, idxmap);
}

void tlb_relaxed_catch_up(CPUState *cpu)
{
    TLBRelaxedVCPU *v = vcpu_state(cpu);
    uint64_t gen = qatomic_load_acquire(&flush_gen);
    TLBPending work;
    unsigned i;

    if (gen == v->acked_gen) {
        return;
    }

    /* Rule (2). */
    qemu_spin_lock(&v->lock);
    work = v->pending;
    v->pending.full_idxmap = 0;
    v->pending.n_ranges = 0;
    qemu_spin_unlock(&v->lock);

    if (work.full_idxmap) {
        tlb_flush_by_mmuidx(cpu, work.full_idxmap);
    }
    for (i = 0; i < work.n_ranges; i++) {
        TLBPendingRange *r = &work.range[i];

        tlb_flush_range_by_mmuidx(cpu, r->addr, r->len, r->idxmap, r->bits);
    }
    qatomic_store_release(&v->acked_gen, gen);
    if (wake_waiters()) {
        /*
         * With more vCPU threads than host CPUs, the vCPU a barrier
         * still waits for may be preempted: give it our host CPU.
         */
        g_thread_yield();
    }

    if (!tlb_pending_empty(&work)) {
        stat64_add(&v->catch_ups, 1);
        trace_tlb_relaxed_catch_up(cpu->cpu_index, gen, work.full_idxmap,
                                   work.n_ranges);
    }
}

void tlb_relaxed_exec_enter(CPUState *cpu)
{
    qatomic_set(&vcpu_state(cpu)->active, true);
    smp_mb();   /* active before reading flush_gen: rule (1) */
    tlb_relaxed_catch_up(cpu);
}

void tlb_relaxed_exec_exit(CPUState *cpu)
{
    qatomic_set(&vcpu_state(cpu)->active, false);
    wake_waiters();
}

/* Has every vCPU that may use a stale entry applied generation @gen? */
static bool barrier_done(CPUState *self, uint64_t gen)
{
    CPUState *cpu;

    CPU_FOREACH(cpu) {
        TLBRelaxedVCPU *v = vcpu_state(cpu);

        if (cpu != self && qatomic_read(&v->active) &&
            qatomic_load_acquire(&v->acked_gen) < gen) {
            return false;
        }
    }
    return true;
}

void tlb_flush_barrier(CPUState *cpu)
{
    TLBRelaxedVCPU *self;
    uint64_t gen;
    int64_t start, wait_ns;
    int spins;

    if (!tcg_tlb_flush_relaxed) {
        return;
    }
    self = vcpu_state(cpu);
    gen = self->barrier_gen;
    if (gen == 0) {
        return;
    }
    self->barrier_gen = 0;
    if (barrier_done(cpu, gen)) {
        return;
    }

    start = get_clock();
    for (spins = 0; spins < TLB_RELAXED_SPIN; spins++) {
        cpu_relax();
        tlb_relaxed_catch_up(cpu);
        if (barrier_done(cpu, gen)) {
            goto done;
        }
    }

    /* Rule (4). */
    qatomic_inc(&n_waiting);
    for (;;) {
        qemu_event_reset(&self->wake);
        tlb_relaxed_catch_up(cpu);
        if (barrier_done(cpu, gen)) {
            break;
        }
        qemu_event_wait(&self->wake);
    }
    qatomic_dec(&n_waiting);

done:
    wait_ns = get_clock() - start;
    stat64_add(&self->barrier_waits, 1);
    stat64_add(&self->barrier_wait_ns, wait_ns);
    trace_tlb_relaxed_barrier(cpu->cpu_index, gen, wait_ns);
}

void tlb_relaxed_dump_info(GString *buf)
{
    uint64_t issued = 0, coalesced = 0, escalated = 0, skipped = 0;
    uint64_t catch_ups = 0, waits = 0, wait_ns = 0;
    unsigned i;

    if (!tcg_tlb_flush_relaxed) {
        g_string_append_printf(buf, "TLB flush mode      strict\n");
        return;
    }
    for (i = 0; i < tlb_relaxed_max_cpus; i++) {
        TLBRelaxedVCPU *v = &tlb_relaxed_vcpus[i];

        issued += stat64_get(&v->issued);
        coalesced += stat64_get(&v->coalesced);
        escalated += stat64_get(&v->escalated);
        skipped += stat64_get(&v->skipped);
        catch_ups += stat64_get(&v->catch_ups);
        waits += stat64_get(&v->barrier_waits);
        wait_ns += stat64_get(&v->barrier_wait_ns);
    }
    g_string_append_printf(buf, "TLB flush mode      relaxed\n");
    g_string_append_printf(buf, "TLB relaxed flushes %" PRIu64
                           " (coalesced %" PRIu64 ", escalated %" PRIu64
                           ")\n", issued, coalesced, escalated);
    g_string_append_printf(buf, "TLB remote catch-ups %" PRIu64
                           " (inactive vCPUs skipped %" PRIu64 ")\n",
                           catch_ups, skipped);
    g_string_append_printf(buf, "TLB barrier waits   %" PRIu64
                           " (%" PRIu64 " us in all)\n",
                           waits, wait_ns / SCALE_US);
}
