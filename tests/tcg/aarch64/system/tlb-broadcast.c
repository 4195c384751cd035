/*
 * Broadcast TLB maintenance seen by other vCPUs.
 *
 * CPU 0 remaps pages of a test window and invalidates them with
 * broadcast TLBIs; the secondaries, started with PSCI CPU_ON, keep the
 * old translations hot in their TLBs and check that after the writer's
 * "DSB ISH" (observed through a store-release) they see the new mapping.
 * Build with -DNO_TLBI for the negative control, which must fail.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdint.h>
#include <stdbool.h>
#include <minilib.h>

#define MAX_CPUS        8
#define PAGE_SIZE       4096
#define N_PAGES         64
#define ITERATIONS      200

/* The window is L1 entry 2 of boot.S's table: VA 2 GiB, unused by RAM. */
#define WINDOW          0x80000000ull
#define PTE_PAGE        (3ull | (1ull << 10) | (1ull << 11) | (3ull << 53))
#define PTE_TABLE       3ull

#define PSCI_CPU_ON     0xc4000003ull

typedef struct BootArgs {
    uint64_t ttbr0, tcr, mair, sctlr, vbar, sp, cpacr;
} BootArgs;

static uint64_t l2_table[512] __attribute__((aligned(PAGE_SIZE)));
static uint64_t l3_table[512] __attribute__((aligned(PAGE_SIZE)));
/* Page p maps frame 2p or 2p + 1; word 0 of frame f holds MAGIC + f. */
static uint64_t frames[2 * N_PAGES][512] __attribute__((aligned(PAGE_SIZE)));
#define MAGIC 0x7e570000ull

static uint8_t stacks[MAX_CPUS][16384] __attribute__((aligned(16)));
static BootArgs boot_args[MAX_CPUS];

/* Shared between CPUs; accessed only with acquire/release. */
static unsigned round_posted;       /* writer: round r is mapped */
static unsigned round_done[MAX_CPUS];
static unsigned test_id;
static unsigned errors[MAX_CPUS];
static unsigned n_cpus;

#define READ_SYSREG(r) \
    ({ uint64_t v_; asm volatile("mrs %0, " #r : "=r"(v_)); v_; })

static inline void store_release(unsigned *p, unsigned v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline unsigned load_acquire(unsigned *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static uint64_t page_va(int p)
{
    return WINDOW + (uint64_t)p * PAGE_SIZE;
}

/* One real load through the TLB; the compiler may not merge or drop it. */
static uint64_t read_page(int p)
{
    return __atomic_load_n((uint64_t *)(uintptr_t)page_va(p), __ATOMIC_RELAXED);
}

static uint64_t frame_of(int p, unsigned round)
{
    return 2 * p + (round & 1);
}

static void set_pte(int p, unsigned round)
{
    l3_table[p] = (uint64_t)(uintptr_t)frames[frame_of(p, round)] | PTE_PAGE;
}

#ifdef NO_TLBI
#define TLBI(op, arg)   do { (void)(arg); } while (0)
#define TLBI_ALL(op)    do { } while (0)
#else
#define TLBI(op, arg)   asm volatile("tlbi " op ", %0" : : "r"(arg) : "memory")
#define TLBI_ALL(op)    asm volatile("tlbi " op : : : "memory")
#endif

/*
 * Each test remaps the window for round @round and leaves broadcast
 * maintenance outstanding until the final DSB ISH.
 */
typedef struct TLBTest {
    const char *name;
    int first, n, stride;   /* pages that change */
    void (*invalidate)(int first, int n, int stride);
} TLBTest;

static void inv_vae1is(int first, int n, int stride)
{
    for (int p = first; p < first + n * stride; p += stride) {
        TLBI("vae1is", page_va(p) >> 12);
    }
}

static void inv_vale1is(int first, int n, int stride)
{
    for (int p = first; p < first + n * stride; p += stride) {
        TLBI("vale1is", page_va(p) >> 12);
    }
}

static void inv_vaae1is(int first, int n, int stride)
{
    for (int p = first; p < first + n * stride; p += stride) {
        TLBI("vaae1is", page_va(p) >> 12);
    }
}

static void inv_aside1is(int first, int n, int stride)
{
    TLBI("aside1is", 0ull);         /* ASID 0, the one TTBR0 holds */
}

static void inv_vmalle1is(int first, int n, int stride)
{
    TLBI_ALL("vmalle1is");
}

/* TLBI RVAE1IS: TG = 4K, SCALE = 0, NUM + 1 pairs of pages. */
static void inv_rvae1is(int first, int n, int stride)
{
    uint64_t arg = (1ull << 46) | ((uint64_t)(n / 2 - 1) << 39) |
                   (page_va(first) >> 12);

    (void)stride;
#ifndef NO_TLBI
    asm volatile("sys #0, c8, c2, #1, %0" : : "r"(arg) : "memory");
#endif
}

static const TLBTest tests[] = {
    { "one page, VAE1IS",               5, 1, 1, inv_vae1is },
    { "64 pages, VALE1IS, one DSB",     0, 64, 1, inv_vale1is },
    { "32 scattered pages, VAAE1IS",    0, 32, 2, inv_vaae1is },
    { "ASIDE1IS",                       0, 16, 1, inv_aside1is },
    { "VMALLE1IS",                      0, 64, 1, inv_vmalle1is },
    { "range RVAE1IS, 64 pages",        0, 64, 1, inv_rvae1is },
};

static bool check_pages(const TLBTest *t, unsigned round)
{
    bool ok = true;

    for (int i = 0; i < t->n; i++) {
        int p = t->first + i * t->stride;
        uint64_t seen = read_page(p);

        ok &= seen == MAGIC + frame_of(p, round);
    }
    return ok;
}

/*
 * Read round_posted, then the first page of test @t, in one translation
 * block that first spends a few microseconds reading the counter: the
 * writer's whole TLBI ... DSB ... post sequence can fall inside it, so the
 * check fails if the writer's DSB does not wait for this vCPU.
 */
static unsigned read_posted_then_page(const TLBTest *t, uint64_t *first)
{
    unsigned posted;

    asm volatile(".rept 64\n mrs x9, cntvct_el0\n .endr\n"
                 "ldar %w0, [%2]\n"
                 "ldr %1, [%3]\n"
                 : "=&r"(posted), "=&r"(*first)
                 : "r"(&round_posted), "r"(page_va(t->first))
                 : "x9", "memory");
    return posted;
}

/*
 * Keep reading the window, so its translations stay hot, until round
 * @round is posted; then the pages must show that round's mapping.
 */
static void reader_round(int cpu, unsigned round)
{
    for (;;) {
        unsigned id = load_acquire(&test_id);
        const TLBTest *t = &tests[id];
        uint64_t first;
        unsigned posted = read_posted_then_page(t, &first);
        bool ok = check_pages(t, round) &&
                  first == MAGIC + frame_of(t->first, round);

        /* A new test is announced before its first round is posted. */
        if (posted == round && load_acquire(&test_id) == id) {
            if (!ok) {
                errors[cpu]++;
            }
            store_release(&round_done[cpu], round);
            return;
        }
    }
}

void secondary_main(BootArgs *args)
{
    int cpu = args - boot_args;

    for (unsigned round = 1; ; round++) {
        reader_round(cpu, round);
    }
}

asm(".text\n"
    ".global secondary_entry\n"
    "secondary_entry:\n"
    "   ldr x1, [x0, #0]\n   msr ttbr0_el1, x1\n"
    "   ldr x1, [x0, #8]\n   msr tcr_el1, x1\n"
    "   ldr x1, [x0, #16]\n  msr mair_el1, x1\n"
    "   ldr x1, [x0, #32]\n  msr vbar_el1, x1\n"
    "   ldr x1, [x0, #48]\n  msr cpacr_el1, x1\n"
    "   isb\n   tlbi vmalle1\n   dsb nsh\n   isb\n"
    "   ldr x1, [x0, #24]\n  msr sctlr_el1, x1\n   isb\n"
    "   ldr x1, [x0, #40]\n  mov sp, x1\n"
    "   bl secondary_main\n"
    "1: wfe\n   b 1b\n");

static int64_t psci_cpu_on(uint64_t mpidr, uint64_t entry, uint64_t context)
{
    register uint64_t x0 asm("x0") = PSCI_CPU_ON;
    register uint64_t x1 asm("x1") = mpidr;
    register uint64_t x2 asm("x2") = entry;
    register uint64_t x3 asm("x3") = context;

    asm volatile("hvc #0" : "+r"(x0) : "r"(x1), "r"(x2), "r"(x3) : "memory");
    return x0;
}

static unsigned start_secondaries(void)
{
    uint64_t entry;
    unsigned cpu;

    asm("adr %0, secondary_entry" : "=r"(entry));
    for (cpu = 1; cpu < MAX_CPUS; cpu++) {
        BootArgs *a = &boot_args[cpu];

        a->ttbr0 = READ_SYSREG(ttbr0_el1);
        a->tcr = READ_SYSREG(tcr_el1);
        a->mair = READ_SYSREG(mair_el1);
        a->sctlr = READ_SYSREG(sctlr_el1);
        a->vbar = READ_SYSREG(vbar_el1);
        a->cpacr = READ_SYSREG(cpacr_el1);
        a->sp = (uint64_t)(uintptr_t)&stacks[cpu][sizeof(stacks[cpu])];
        asm volatile("dsb sy" : : : "memory");
        if (psci_cpu_on(cpu, entry, (uintptr_t)a)) {
            break;
        }
    }
    return cpu;
}

static void map_window(void)
{
    uint64_t *l1 = (uint64_t *)(uintptr_t)(READ_SYSREG(ttbr0_el1) & ~0xfffull);

    for (int p = 0; p < 2 * N_PAGES; p++) {
        frames[p][0] = MAGIC + p;
    }
    for (int p = 0; p < N_PAGES; p++) {
        set_pte(p, 0);
    }
    l2_table[0] = (uint64_t)(uintptr_t)l3_table | PTE_TABLE;
    l1[WINDOW >> 30] = (uint64_t)(uintptr_t)l2_table | PTE_TABLE;
    asm volatile("dsb ishst\n tlbi vmalle1is\n dsb ish\n isb" : : : "memory");
}

/* Post @round after remapping and invalidating; wait for the readers. */
static void writer_round(const TLBTest *t, unsigned round)
{
    for (int i = 0; i < t->n; i++) {
        set_pte(t->first + i * t->stride, round);
    }
    asm volatile("dsb ishst" : : : "memory");
    t->invalidate(t->first, t->n, t->stride);
    asm volatile("dsb ish" : : : "memory");
    store_release(&round_posted, round);
    for (unsigned cpu = 1; cpu < n_cpus; cpu++) {
        while (load_acquire(&round_done[cpu]) != round) {
            asm volatile("yield");
        }
    }
}

/* The issuer itself must see the new mapping at once. */
static unsigned local_check(unsigned round)
{
    unsigned bad = 0;

    for (unsigned r = round; r < round + ITERATIONS; r++) {
        uint64_t seen;

        read_page(7);
        set_pte(7, r);
        asm volatile("dsb ishst" : : : "memory");
        TLBI("vae1is", page_va(7) >> 12);
        seen = read_page(7);
        bad += seen != MAGIC + frame_of(7, r);
    }
    return bad;
}

int main(void)
{
    unsigned round = 0, failed = 0;

    map_window();
    n_cpus = start_secondaries();
    ml_printf("tlb-broadcast: %u CPUs, %d rounds per test\n",
              n_cpus, ITERATIONS);
    if (n_cpus < 2) {
        ml_printf("FAIL: needs -smp 2 or more\n");
        return 1;
    }

    for (unsigned id = 0; id < sizeof(tests) / sizeof(tests[0]); id++) {
        const TLBTest *t = &tests[id];
        unsigned errs = 0;

        store_release(&test_id, id);
        for (int i = 0; i < ITERATIONS; i++) {
            writer_round(t, ++round);
        }
        for (unsigned cpu = 1; cpu < n_cpus; cpu++) {
            errs += load_acquire(&errors[cpu]);
            store_release(&errors[cpu], 0);
        }
        ml_printf("%s: %s (%u stale reads)\n", errs ? "FAIL" : "PASS",
                  t->name, errs);
        failed += errs != 0;
    }

    {
        unsigned bad = local_check(round + 1);

        ml_printf("%s: issuer's load right after its TLBI (%u stale)\n",
                  bad ? "FAIL" : "PASS", bad);
        failed += bad != 0;
    }
    return failed != 0;
}
