/*
 * PENDING (2026-11-26): written by a cold review of patch 0003's region
 * clear; to move into the series as a tests/tcg/aarch64/system case.
 * Fails (stale code) on the unmodified build, passes with patch 0003.
 * Its "TB from the page before" names are wrong: A64 TBs never cross a
 * page, so those cases run a TB at the block's start.  Built with the
 * check-tcg cross toolchain against tests/tcg/minilib, boot.o, printf.o
 * and kernel.ld; run with -M virt -cpu max -m 128M.
 */
/*
 * A block mapping at the end of RAM: tlb_set_page_full() passes its size
 * to address_space_translate_for_iotlb(), which cuts it to what is left
 * of the RAM section, so the large page must be recorded with the block's
 * own size (lg_page_size), or a TLBI of another page of the block leaves
 * the entry of the page filled, and the guest sees the old mapping.
 * Recording the cut size fails five of the six cases, in both flush
 * modes.
 *
 * One CPU.  boot.S's own 2 MiB blocks would widen QEMU's large page span
 * of the EL1 index to [0, 4 GiB) and hide the bug, so main() first remaps
 * them with 4 KiB pages and flushes the TLB (resetting the span).  Then
 * each case maps the last 2 MiB of RAM (-m 128M: PA 0x47e00000) with a
 * block at VA 4 GiB - 2 MiB, touches one page of it at OFFSET, replaces
 * the block with one mapping BLOCK_PA (break-before-make, TLBI VAAE1 of
 * the block's first page, or of another page), and touches OFFSET again.
 *
 * Run: qemu-system-aarch64 -M virt -cpu max -display none -m 128M
 *      -semihosting-config enable=on,target=native,chardev=output
 *      -chardev stdio,id=output -kernel tlb-block-ramend
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdint.h>
#include <stdbool.h>
#include <minilib.h>

#define PAGE_SIZE       0x1000ull
#define BLOCK_SIZE      0x200000ull
#define GIB             0x40000000ull
#define RAM_END         (GIB + 0x8000000ull)        /* -m 128M */
#define END_BLOCK_PA    (RAM_END - BLOCK_SIZE)
#define BLOCK_PA        (GIB + 0x4000000ull)        /* free, as tlb-block */

#define WINDOW_L1       3
#define WINDOW          (WINDOW_L1 * GIB)
#define SLOT            511                         /* VA 4 GiB - 2 MiB */

#define DESC_TABLE      3ull
#define DESC_BLOCK      (1ull | 1ull << 10 | 3ull << 8)
#define DESC_XN         (3ull << 53)

#define READ_SYSREG(r) \
    ({ uint64_t v_; asm volatile("mrs %0, " #r : "=r"(v_)); v_; })

static uint64_t window_l2[512] __attribute__((aligned(PAGE_SIZE)));
static uint64_t boot_l3[3][512] __attribute__((aligned(PAGE_SIZE)));
/* Identity maps of the two test blocks, by pages (no large page). */
static uint64_t ident_l3[2][512] __attribute__((aligned(PAGE_SIZE)));
static uint64_t before_l3[512] __attribute__((aligned(PAGE_SIZE)));
static uint32_t before_frame[1024] __attribute__((aligned(PAGE_SIZE)));

static uint64_t *l1_table(void)
{
    return (uint64_t *)(uintptr_t)(READ_SYSREG(ttbr0_el1) & ~0xfffull);
}

static uint64_t read64(uint64_t va)
{
    return __atomic_load_n((uint64_t *)(uintptr_t)va, __ATOMIC_RELAXED);
}

static void barrier(void)
{
    asm volatile("dsb ish\n isb" : : : "memory");
}

static uint32_t page_id(uint64_t pa)
{
    return (uint32_t)(pa >> 12) & 0xffff;
}

/* "mov w0, #id; ret" */
static uint64_t signature(uint64_t pa)
{
    return 0xd65f03c0ull << 32 | 0x52800000 | page_id(pa) << 5;
}

static void sign(uint64_t pa)
{
    uint64_t *word = (uint64_t *)(uintptr_t)pa;

    *word = signature(pa);
    asm volatile("dc cvau, %0\n dsb ish\n ic ivau, %0\n dsb ish\n isb"
                 : : "r"(word) : "memory");
}

/* boot.S's 2 MiB blocks of RAM as 4 KiB pages, same attributes. */
static void unblock_boot(void)
{
    uint64_t *ram_l2 = (uint64_t *)(uintptr_t)(l1_table()[1] &
                                               0xfffffffff000ull);

    for (int b = 0; b < 3; b++) {
        uint64_t d = ram_l2[b];

        if ((d & 3) != 1) {
            continue;
        }
        for (int p = 0; p < 512; p++) {
            boot_l3[b][p] = (d & ~(BLOCK_SIZE - 1)) + p * PAGE_SIZE |
                            (d & 0xfff0000000000ffcull) | 3;
        }
        barrier();
        ram_l2[b] = (uintptr_t)boot_l3[b] | DESC_TABLE;
    }
    for (int n = 0; n < 2; n++) {
        uint64_t pa = n ? BLOCK_PA : END_BLOCK_PA;

        for (int p = 0; p < 512; p++) {
            ident_l3[n][p] = pa + p * PAGE_SIZE | DESC_XN | 1ull << 10 |
                             3ull << 8 | 3;
        }
        barrier();
        ram_l2[(pa >> 21) & 511] = (uintptr_t)ident_l3[n] | DESC_TABLE;
    }
    /* Also makes the window a table. */
    l1_table()[WINDOW_L1] = (uintptr_t)window_l2 | DESC_TABLE;
    asm volatile("dsb ish\n tlbi vmalle1\n dsb ish\n isb" : : : "memory");
}


#define DESC_PAGE       (3ull | 1ull << 10 | 3ull << 8)

/* TLBI RVAAE1IS of @n pages from @va, n even, 2 <= n <= 64: 4K, SCALE 0. */
static void tlbi_rvaae1is(uint64_t va, unsigned n)
{
    uint64_t arg = 1ull << 46 | (uint64_t)(n / 2 - 1) << 39 | va >> 12;

    asm volatile("sys #0, c8, c2, #3, %0" : : "r"(arg) : "memory");
}

typedef struct Case {
    const char *name;
    int64_t entry;          /* offset of the code from the block's start */
    uint64_t tlbi_offset;   /* of the block page the last TLBI names */
    bool long_range;        /* a long range elsewhere first (forgets) */
} Case;

static const Case cases[] = {
    { "TB from the page before into the block, long range, VAAE1IS p16",
      -4, 16 * PAGE_SIZE, true },
    { "TB from the page before into the block, long range, VAAE1IS p511",
      -4, 511 * PAGE_SIZE, true },
    { "TB at block page 8, long range, VAAE1IS p16",
      8 * PAGE_SIZE, 16 * PAGE_SIZE, true },
    { "TB from the page before into the block, VAAE1IS p16 only",
      -4, 16 * PAGE_SIZE, false },
};

static bool run_case(const Case *c)
{
    uint64_t block_va = WINDOW + SLOT * BLOCK_SIZE;
    uint64_t va = block_va + c->entry;
    uint64_t *e = &window_l2[SLOT];
    uint64_t off = c->entry < 0 ? 0 : c->entry;
    uint64_t old, new;

    sign(END_BLOCK_PA + off);
    sign(BLOCK_PA + off);

    *e = END_BLOCK_PA | DESC_BLOCK;
    asm volatile("dsb ish\n tlbi vmalle1\n dsb ish\n isb" : : : "memory");

    old = ((uint32_t (*)(void))(uintptr_t)va)();
    old = ((uint32_t (*)(void))(uintptr_t)va)();

    *e = 0;
    asm volatile("dsb ish" : : : "memory");
    if (c->long_range) {
        tlbi_rvaae1is(8 * GIB, 32);
        asm volatile("dsb ish" : : : "memory");
    }
    asm volatile("tlbi vaae1is, %0\n dsb ish"
                 : : "r"((block_va + c->tlbi_offset) >> 12) : "memory");
    *e = BLOCK_PA | DESC_BLOCK;
    barrier();

    new = ((uint32_t (*)(void))(uintptr_t)va)();

    if (old != page_id(END_BLOCK_PA + off) ||
        new != page_id(BLOCK_PA + off)) {
        ml_printf("FAIL: %s: saw 0x%lx, then 0x%lx (stale: 0x%lx)\n",
                  c->name, old, new, page_id(END_BLOCK_PA + off));
        return false;
    }
    ml_printf("PASS: %s\n", c->name);
    return true;
}

int main(void)
{
    int failed = 0;

    unblock_boot();
    /* The window's slot before the block: its last page runs into it. */
    before_frame[1023] = 0xd503201f;    /* nop */
    asm volatile("dc cvau, %0\n dsb ish\n ic ivau, %0\n dsb ish\n isb"
                 : : "r"(&before_frame[1023]) : "memory");
    before_l3[511] = (uintptr_t)before_frame | DESC_PAGE;
    barrier();
    window_l2[SLOT - 1] = (uintptr_t)before_l3 | DESC_TABLE;
    barrier();
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        failed += !run_case(&cases[i]);
    }
    ml_printf("%s\n", failed ? "FAILED" : "ALL PASS");
    return failed != 0;
}
