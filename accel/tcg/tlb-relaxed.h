/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Relaxed broadcast TLB maintenance: "-accel tcg,tlb-flush=relaxed".
 * See tlb-relaxed.c for the protocol.
 */

#ifndef ACCEL_TCG_TLB_RELAXED_H
#define ACCEL_TCG_TLB_RELAXED_H

#include "exec/vaddr.h"

/* Set up state for @max_cpus vCPUs; called once, before any vCPU runs. */
void tlb_relaxed_init(unsigned max_cpus);

/* Refuse a CPU whose target does not call tlb_flush_barrier(). */
bool tlb_relaxed_realize(CPUState *cpu, Error **errp);

/*
 * Flush [@addr, @addr + @len) of the indexes in @idxmap on every vCPU,
 * comparing the low @bits of each address; @len == 0 flushes the indexes
 * whole.  @src is flushed before this returns, the others before they
 * next execute guest code, and all of them by the end of @src's next
 * tlb_flush_barrier().
 */
void tlb_relaxed_flush_all_cpus(CPUState *src, vaddr addr, vaddr len,
                                uint16_t idxmap, unsigned bits);

/* @cpu starts or stops executing guest code (cpu_exec and its kin). */
void tlb_relaxed_exec_enter(CPUState *cpu);
void tlb_relaxed_exec_exit(CPUState *cpu);

/* Apply the flushes other vCPUs queued for @cpu; on @cpu's thread. */
void tlb_relaxed_catch_up(CPUState *cpu);

/* Counters for "info jit". */
void tlb_relaxed_dump_info(GString *buf);

#endif /* ACCEL_TCG_TLB_RELAXED_H */
