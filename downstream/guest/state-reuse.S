/*
 * A TB reached by BLR many times, then reached again after a change of
 * what its translation depended on, bare metal at EL1 on -M virt -cpu max
 * (test_inline_lookup.py links it at 0x40080000).  Each case warms a
 * callee with WARM calls through BLR, so that its TB is in the jump cache
 * and, with x-inline-lookup=on, found by the probe; then it changes one
 * thing and calls it once more, which must see the change:
 *   0x01  CPACR_EL1.FPEN cleared: the callee's FMOV traps (EC 0x07);
 *   0x02  CPACR_EL1.ZEN cleared: the callee's PTRUE traps (EC 0x19);
 *   0x04  PSTATE.PAN set: the callee's load from a page that EL0 may
 *         access takes a permission fault (EC 0x25);
 *   0x08  BR (BTYPE 3 from a guarded page) to a callee on a guarded page
 *         that starts with BTI C, which only BLR's BTYPE 2 may reach:
 *         Branch Target exception (EC 0x0d);
 *   0x10  TTBR0_EL1 to another ASID, whose tables map the callee's VA,
 *         a non-global 2 MiB block, to other code: the call returns 2;
 *   0x20  back to the first ASID, without TLBI: the call returns 1;
 *   0x40  the first ASID's block remapped to the other code with TLBI
 *         VAE1IS, DSB ISH and ISB: the call returns 2;
 *   0x80  a warm-up call went wrong (an exception, or a wrong value);
 *   0x100 the callee's MOV rewritten, with DC CVAU, IC IVAU, DSB and ISB:
 *         the call returns the new value;
 *   0x200 the block mapped back to the first code with a range TLBI
 *         (RVAE1IS over the whole 2 MiB), DSB and ISB: the call returns 1;
 *   0x400, 0x800 a second VA, ALIAS, maps the first code too; both are
 *         warm; ALIAS remapped to the other code with TLBI VAE1IS, DSB
 *         and ISB: a call of ALIAS returns 2 (0x400), of SHARED still 1
 *         (0x800);
 *   0x1000 a hardware breakpoint (DBGBCR0/DBGBVR0, MDSCR_EL1.KDE and MDE,
 *         PSTATE.D clear) set on a warm callee: the call takes it
 *         (EC 0x31);
 *   0x2000 PSTATE.UAO cleared: the callee's LDTR, warmed with UAO set
 *         (an access as EL1's), is EL0's again and takes a permission
 *         fault on a page that EL0 may not access (EC 0x25);
 *   0x4000 PSTATE.TCO cleared, with MTE's synchronous tag checks on
 *         (-M virt,mte=on; SCTLR_EL1.ATA and TCF, TCR_EL1.TBI0): the
 *         callee's load through a pointer tagged 1 from a tagged block
 *         whose tags are 0, warmed with TCO set, takes a tag check fault
 *         (EC 0x25).
 * When done it stores DONE and the bitmask of the failed cases at VARS
 * (DONE at VARS + 16, the mask at VARS + 24) and waits in WFI, so that the
 * test can read info jit's counters and the result with "xp".
 *
 * The kernel's 2 MiB block is a guarded page, so every callee starts with
 * BTI C.  The exception handler records ESR_EL1.EC, returns past the
 * instruction that took the exception and clears SPSR_EL1.BTYPE.
 */
    .arch armv8.5-a
    .arch_extension sve
    .arch_extension memtag
    .equ WARM,    64
    .equ DONE,    0x600dd0e5
    .equ STACK,   0x40280000
    .equ VARS,    0x40290000    /* +0 last EC, +8 exceptions taken */
    .equ L1_A,    0x40300000    /* ASID 1's tables */
    .equ L1_B,    0x40301000    /* ASID 2's tables */
    .equ L2_RAM,  0x40302000    /* 0x40000000-0x7fffffff, both ASIDs */
    .equ L2_A,    0x40303000    /* 0x80000000-0xbfffffff for ASID 1 */
    .equ L2_B,    0x40304000    /* 0x80000000-0xbfffffff for ASID 2 */
    .equ CODE_1,  0x40400000    /* "BTI C; MOV X0, #1; RET" */
    .equ CODE_2,  0x40600000    /* "BTI C; MOV X0, #2; RET" */
    .equ CODE_3,  0x40500000    /* "BTI C; MOV X0, #1; RET", then #3 */
    .equ EL0_RW,  0x40800000    /* a block that EL0 may read and write */
    .equ TAGGED,  0x40a00000    /* a block of Normal Tagged memory */
    .equ SHARED,  0x80000000    /* CODE_1 for ASID 1, CODE_2 for ASID 2 */
    .equ ALIAS,   0x80200000    /* CODE_1 for ASID 1, then CODE_2 */
    .equ BLOCK,   (1 | (1 << 10) | (3 << 8))    /* block, AF, ISH, attr 0 */
    .equ GP,      (1 << 50)
    .equ UXN,     (1 << 54)
    .equ NG,      (1 << 11)
    .equ AP_EL0,  (1 << 6)      /* AP[2:1] = 01: EL1 and EL0 read/write */
    .equ FPEN,    (3 << 20)
    .equ ZEN,     (3 << 16)
    .equ TBI0,    (1 << 37)
    .equ ATA_TCF, ((1 << 43) | (1 << 40))   /* EL1 tag access, sync faults */

    /* WARM calls through BLR of x2; x0 must be \value after each. */
    .macro warm_x2 value
    mov     x19, #WARM
98: blr     x2
    cmp     x0, #\value
    b.eq    99f
    orr     x28, x28, #0x80
99: subs    x19, x19, #1
    b.ne    98b
    ldr     x0, [x27, #8]
    cbz     x0, 99f
    orr     x28, x28, #0x80
99:
    .endm

    /* "BTI C; MOV X0, #\value; RET" at x5 */
    .macro write_callee value
    ldr     w1, =0xd503245f                     /* BTI C */
    ldr     w2, =(0xd2800000 | (\value << 5))   /* MOV X0, #\value */
    ldr     w3, =0xd65f03c0                     /* RET */
    stp     w1, w2, [x5]
    str     w3, [x5, #8]
    .endm

    /* L2_A[\slot] = \code, then TLBI \op with \operand, DSB ISH, ISB */
    .macro remap slot, code, op, operand
    ldr     x0, =L2_A
    ldr     x4, =(\code | BLOCK | NG)
    str     x4, [x0, #(\slot * 8)]
    dsb     ish
    ldr     x0, =\operand
    tlbi    \op, x0
    dsb     ish
    isb
    .endm

    .macro warm fn, value
    adr     x2, \fn
    warm_x2 \value
    .endm

    /* One more call of \fn through BLR, which must take EC \ec. */
    .macro expect_trap fn, ec, bit
    str     xzr, [x27]
    adr     x2, \fn
    blr     x2
    ldr     x0, [x27]
    cmp     x0, #\ec
    b.eq    99f
    orr     x28, x28, #\bit
99: str     xzr, [x27, #8]
    .endm

    /* One call of SHARED through BLR, which must return \value. */
    .macro expect_shared value, bit
    ldr     x2, =SHARED
    blr     x2
    cmp     x0, #\value
    b.eq    99f
    orr     x28, x28, #\bit
99:
    .endm

    .text
    .global _start
_start:
    ldr     x0, =STACK
    mov     sp, x0
    adr     x0, vectors
    msr     vbar_el1, x0
    ldr     x27, =VARS
    stp     xzr, xzr, [x27]
    stp     xzr, xzr, [x27, #16]
    mov     x28, #0
    mov     x0, #(FPEN | ZEN)
    msr     cpacr_el1, x0
    isb

    /* CODE_1 and CODE_2 */
    ldr     x5, =CODE_1
    write_callee 1
    ldr     x5, =CODE_2
    write_callee 2
    dsb     ish
    ic      iallu
    dsb     ish
    isb

    /* Zero the five tables, L1_A to L2_B */
    ldr     x0, =L1_A
    mov     x1, #0
2:  str     xzr, [x0, x1, lsl #3]
    add     x1, x1, #1
    cmp     x1, #(5 * 512)
    b.ne    2b
    /* L2_RAM: 2 MiB blocks, the kernel's guarded, EL0_RW's for EL0 too */
    ldr     x0, =L2_RAM
    ldr     x3, =0x40000000
    ldr     x5, =(BLOCK | UXN)
    mov     x1, #0
1:  lsl     x4, x1, #21
    add     x4, x4, x3
    orr     x4, x4, x5
    str     x4, [x0, x1, lsl #3]
    add     x1, x1, #1
    cmp     x1, #512
    b.ne    1b
    ldr     x4, [x0]
    orr     x4, x4, #GP
    str     x4, [x0]
    ldr     x4, [x0, #((EL0_RW - 0x40000000) >> 21) * 8]
    orr     x4, x4, #AP_EL0
    str     x4, [x0, #((EL0_RW - 0x40000000) >> 21) * 8]
    ldr     x4, [x0, #((TAGGED - 0x40000000) >> 21) * 8]
    orr     x4, x4, #(2 << 2)       /* attr 2 */
    str     x4, [x0, #((TAGGED - 0x40000000) >> 21) * 8]
    /* L2_A and L2_B: SHARED non-global, to CODE_1 and CODE_2 */
    ldr     x0, =L2_A
    ldr     x1, =L2_B
    ldr     x4, =(CODE_1 | BLOCK | NG)
    str     x4, [x0]
    ldr     x4, =(CODE_2 | BLOCK | NG)
    str     x4, [x1]
    /* L1_A and L1_B: device block at 0, RAM, then SHARED's L2 */
    ldr     x0, =L1_A
    ldr     x1, =L1_B
    ldr     x4, =(1 | (1 << 10) | (1 << 2) | (3 << 53))   /* attr 1, XN */
    str     x4, [x0]
    str     x4, [x1]
    ldr     x4, =(L2_RAM | 3)
    str     x4, [x0, #8]
    str     x4, [x1, #8]
    ldr     x4, =(L2_A | 3)
    str     x4, [x0, #16]
    ldr     x4, =(L2_B | 3)
    str     x4, [x1, #16]
    dsb     ish

    ldr     x0, =0xf000ff           /* attr 0 normal WB, 1 device, 2 tagged */
    msr     mair_el1, x0
    /* T0SZ 25 (from level 1), WB WA, inner shareable, EPD1, IPS 40 bits */
    ldr     x0, =(25 | (1 << 8) | (1 << 10) | (3 << 12) | (1 << 23) | (2 << 32))
    msr     tcr_el1, x0
    ldr     x0, =(L1_A | (1 << 48))
    msr     ttbr0_el1, x0
    isb
    tlbi    vmalle1
    dsb     nsh
    mrs     x0, sctlr_el1
    orr     x0, x0, #1              /* M */
    orr     x0, x0, #(1 << 2)       /* C */
    orr     x0, x0, #(1 << 12)      /* I */
    bic     x0, x0, #(1 << 19)      /* WXN */
    msr     sctlr_el1, x0
    isb

    /* 0x01: FP */
    warm    fp_fn, 0
    mrs     x0, cpacr_el1
    bic     x0, x0, #FPEN
    msr     cpacr_el1, x0
    isb
    expect_trap fp_fn, 0x07, 0x01
    mrs     x0, cpacr_el1
    orr     x0, x0, #FPEN
    msr     cpacr_el1, x0
    isb

    /* 0x02: SVE */
    warm    sve_fn, 0
    mrs     x0, cpacr_el1
    bic     x0, x0, #ZEN
    msr     cpacr_el1, x0
    isb
    expect_trap sve_fn, 0x19, 0x02
    mrs     x0, cpacr_el1
    orr     x0, x0, #ZEN
    msr     cpacr_el1, x0
    isb

    /* 0x04: PAN */
    ldr     x3, =EL0_RW
    str     xzr, [x3]
    warm    pan_fn, 0
    msr     pan, #1
    expect_trap pan_fn, 0x25, 0x04
    msr     pan, #0

    /* 0x2000: UAO; VARS + 32 is on the kernel's block, EL1's alone */
    add     x3, x27, #32
    str     xzr, [x3]
    msr     uao, #1
    warm    uao_fn, 0
    msr     uao, #0
    expect_trap uao_fn, 0x25, 0x2000

    /* 0x4000: TCO; pan_fn loads from x3, tagged 1 where memory has 0 */
    mrs     x0, tcr_el1
    orr     x0, x0, #TBI0
    msr     tcr_el1, x0
    mrs     x0, sctlr_el1
    ldr     x1, =ATA_TCF
    orr     x0, x0, x1
    msr     sctlr_el1, x0
    bl      flush_tlb
    ldr     x3, =(TAGGED | (1 << 56))
    msr     tco, #1
    warm    pan_fn, 0
    msr     tco, #0
    expect_trap pan_fn, 0x25, 0x4000
    mrs     x0, sctlr_el1
    ldr     x1, =ATA_TCF
    bic     x0, x0, x1
    msr     sctlr_el1, x0
    mrs     x0, tcr_el1
    bic     x0, x0, #TBI0
    msr     tcr_el1, x0
    bl      flush_tlb

    /* 0x08: BTYPE */
    warm    bt_fn, 1
    str     xzr, [x27]
    adr     x2, bt_fn
    adr     x30, 4f
    br      x2
4:  ldr     x0, [x27]
    cmp     x0, #0x0d
    b.eq    4f
    orr     x28, x28, #0x08
4:  str     xzr, [x27, #8]

    /* 0x10, 0x20: two ASIDs, one VA */
    ldr     x2, =SHARED
    warm_x2 1
    ldr     x0, =(L1_B | (2 << 48))
    msr     ttbr0_el1, x0
    isb
    expect_shared 2, 0x10
    ldr     x0, =(L1_A | (1 << 48))
    msr     ttbr0_el1, x0
    isb
    expect_shared 1, 0x20

    /* 0x40: remap the block, TLBI VAE1IS, DSB, ISB */
    ldr     x2, =SHARED
    warm_x2 1
    remap   0, CODE_2, vae1is, ((SHARED >> 12) | (1 << 48))
    expect_shared 2, 0x40

    /* 0x200: back to CODE_1 with RVAE1IS: ASID 1, 4K, 8 x 64 pages */
    ldr     x2, =SHARED
    warm_x2 2
    remap   0, CODE_1, rvae1is, ((SHARED >> 12) | (1 << 48) | (1 << 46) | (1 << 44) | (7 << 39))
    expect_shared 1, 0x200

    /* 0x400, 0x800: ALIAS of CODE_1, remapped to CODE_2 */
    ldr     x0, =L2_A
    ldr     x4, =(CODE_1 | BLOCK | NG)
    str     x4, [x0, #8]
    dsb     ish
    ldr     x2, =ALIAS
    warm_x2 1
    ldr     x2, =SHARED
    warm_x2 1
    remap   1, CODE_2, vae1is, ((ALIAS >> 12) | (1 << 48))
    ldr     x2, =ALIAS
    blr     x2
    cmp     x0, #2
    b.eq    4f
    orr     x28, x28, #0x400
4:  expect_shared 1, 0x800

    /* 0x1000: a hardware breakpoint at EL1 */
    warm    bt_fn, 1
    msr     oslar_el1, xzr          /* unlock the OS lock */
    adr     x0, bt_fn
    msr     dbgbvr0_el1, x0
    mov     x0, #(1 | (1 << 1) | (0xf << 5))    /* E, PMC EL1, BAS all */
    msr     dbgbcr0_el1, x0
    mrs     x0, mdscr_el1
    orr     x0, x0, #(1 << 13)      /* KDE */
    orr     x0, x0, #(1 << 15)      /* MDE */
    msr     mdscr_el1, x0
    isb
    msr     daifclr, #8             /* PSTATE.D */
    isb
    expect_trap bt_fn, 0x31, 0x1000
    msr     daifset, #8
    msr     dbgbcr0_el1, xzr
    isb

    /* 0x100: self-modifying code */
    ldr     x5, =CODE_3
    write_callee 1
    bl      sync_code
    mov     x2, x5
    warm_x2 1
    ldr     w1, =0xd2800060         /* MOV X0, #3 */
    str     w1, [x5, #4]
    bl      sync_code
    mov     x2, x5
    blr     x2
    cmp     x0, #3
    b.eq    5f
    orr     x28, x28, #0x100
5:
    ldr     x0, =DONE
    stp     x0, x28, [x27, #16]
    dsb     sy
5:  wfi
    b       5b

    /* After a write of TCR_EL1 or SCTLR_EL1, whose fields a TLB may hold */
flush_tlb:
    isb
    tlbi    vmalle1
    dsb     nsh
    isb
    ret

    /* Make the code at x5 visible to instruction fetch. */
sync_code:
    dc      cvau, x5
    dsb     ish
    ic      ivau, x5
    dsb     ish
    isb
    ret

    /* BLR reaches these, on a guarded page: each starts with BTI C. */
fp_fn:
    bti     c
    fmov    d0, x0
    mov     x0, #0
    ret
sve_fn:
    bti     c
    ptrue   p0.b
    mov     x0, #0
    ret
pan_fn:
    bti     c
    ldr     x0, [x3]
    ret
uao_fn:
    bti     c
    ldtr    x0, [x3]
    ret
bt_fn:
    bti     c
    mov     x0, #1
    ret

sync_handler:
    mrs     x9, esr_el1
    ubfx    x9, x9, #26, #6         /* EC, ESR_EL1[31:26] */
    str     x9, [x27]
    ldr     x9, [x27, #8]
    add     x9, x9, #1
    str     x9, [x27, #8]
    mrs     x9, elr_el1
    add     x9, x9, #4
    msr     elr_el1, x9
    mrs     x9, spsr_el1
    bic     x9, x9, #(3 << 10)
    msr     spsr_el1, x9
    eret

other_handler:
    mov     x0, #0xff
    str     x0, [x27]
    ldr     x0, =DONE
    mov     x28, #0xff
    stp     x0, x28, [x27, #16]
6:  wfi
    b       6b

    .ltorg
    .balign 2048
vectors:
    .rept 4
    b       other_handler
    .balign 128
    .endr
    b       sync_handler            /* 0x200: current EL, SP_EL1, sync */
    .balign 128
    .rept 11
    b       other_handler
    .balign 128
    .endr
