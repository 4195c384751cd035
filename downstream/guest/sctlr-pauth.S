/*
 * SCTLR_EL1 writes that change only the pointer authentication enables,
 * bare metal at EL1 on -M virt -cpu max (test_flushes.py assembles it,
 * links it at 0x40080000 and boots it with -semihosting).  Exit status:
 * a bitmask of the checks that failed, and 0x40, which is no failure,
 * where the TLB kept an entry across such a write.
 *   T2  PACIZA in a TB translated with every enable clear signs after an
 *       EnIA-only write, stops after EnIA -> EnIB, signs alike again
 *       (0x2-0x20);
 *   T3  a load through a PTE remapped without a TLBI, after an EnIA-only
 *       write, may see the old page (0x40), and must see the new one
 *       after TLBI VMALLE1 (0x80);
 *   T1  one write that clears EnIA and sets WXN makes a writable page
 *       that the TLB holds as executable fault on execution (0x1).
 */
    .arch armv8.5-a
    .equ L1, 0x40300000
    .equ L2, 0x40301000
    .equ L3, 0x40302000
    .equ PAGE_P, 0x40100000      /* RW+X page holding "ret" (WXN test) */
    .equ PA1,   0x40110000
    .equ PA2,   0x40111000
    .equ PAGE_Q, 0x40120000      /* VA remapped PA1 -> PA2 without TLBI */
    .equ VARS,  0x40290000
    .equ STACK, 0x40280000
    .equ EnIA, (1 << 31)
    .equ EnIB, (1 << 30)
    .equ EnDA, (1 << 27)
    .equ EnDB, (1 << 13)
    .equ WXN,  (1 << 19)

    .text
    .global _start
_start:
    ldr x0, =STACK
    mov sp, x0
    adr x0, vectors
    msr vbar_el1, x0
    isb
    mov x28, #0                 /* failure bitmask -> exit status */
    ldr x27, =VARS
    str xzr, [x27]              /* exception count */
    str xzr, [x27, #8]          /* last ESR */

    /* page "P": a single RET */
    ldr x0, =PAGE_P
    ldr w1, =0xd65f03c0
    str w1, [x0]
    /* PA1/PA2 contents */
    ldr x0, =PA1
    mov x1, #0xAAAA
    str x1, [x0]
    ldr x0, =PA2
    mov x1, #0xBBBB
    str x1, [x0]

    /* ---- page tables: 4K granule, T0SZ=25 (39-bit), start at L1 ---- */
    ldr x0, =L1
    mov x1, #0
1:  str xzr, [x0, x1, lsl #3]
    add x1, x1, #1
    cmp x1, #512
    b.ne 1b
    /* L1[0]: 0x0-0x3fffffff device block, XN */
    ldr x2, =(0x0 | 1 | (1 << 10) | (1 << 2) | (3 << 53))
    str x2, [x0]
    /* L1[1] -> L2 */
    ldr x2, =(L2 | 3)
    str x2, [x0, #8]
    /* L2: entry 0 -> L3, others normal RW blocks */
    ldr x0, =L2
    ldr x3, =0x40000000
    mov x1, #0
2:  lsl x4, x1, #21
    add x4, x4, x3
    ldr x5, =(1 | (1 << 10) | (3 << 8) | (1 << 54))   /* block, AF, ISH, attr0, UXN */
    orr x4, x4, x5
    str x4, [x0, x1, lsl #3]
    add x1, x1, #1
    cmp x1, #512
    b.ne 2b
    ldr x2, =(L3 | 3)
    str x2, [x0]
    /* L3: identity pages; 0x40080000-0x400fffff read-only (code), rest RW */
    ldr x0, =L3
    mov x1, #0
3:  lsl x4, x1, #12
    add x4, x4, x3
    ldr x5, =(3 | (1 << 10) | (3 << 8) | (1 << 54))   /* page, AF, ISH, attr0, UXN, AP=RW EL1 */
    orr x4, x4, x5
    cmp x1, #0x80
    b.lo 4f
    cmp x1, #0x100
    b.hs 4f
    orr x4, x4, #(2 << 6)                              /* AP=RO EL1 */
4:  str x4, [x0, x1, lsl #3]
    add x1, x1, #1
    cmp x1, #512
    b.ne 3b
    /* Q -> PA1 */
    ldr x4, =(PA1 | 3 | (1 << 10) | (3 << 8) | (1 << 54))
    ldr x1, =(L3 + 0x120 * 8)
    str x4, [x1]
    dsb sy

    ldr x0, =0x00ff                /* attr0 normal WB, attr1 device */
    msr mair_el1, x0
    ldr x0, =(25 | (1 << 8) | (1 << 10) | (3 << 12) | (1 << 23) | (2 << 32))  /* T0SZ, IRGN0, ORGN0, SH0, EPD1, IPS=40b */
    msr tcr_el1, x0
    ldr x0, =L1
    msr ttbr0_el1, x0
    /* PAC key */
    ldr x0, =0x0123456789abcdef
    msr apiakeylo_el1, x0
    ldr x0, =0xfedcba9876543210
    msr apiakeyhi_el1, x0
    isb
    /* MMU on, caches on, all PAuth enables off */
    mrs x0, sctlr_el1
    orr x0, x0, #1                 /* M */
    orr x0, x0, #(1 << 2)          /* C */
    orr x0, x0, #(1 << 12)         /* I */
    ldr x1, =(EnIA | EnIB | EnDA | EnDB | WXN)
    bic x0, x0, x1
    msr sctlr_el1, x0
    isb
    mov x26, x0                    /* base SCTLR value */

    /* ---- T2: PAC switches immediately; TBs for F reused across the write ---- */
    /* call F twice with keys disabled: F's TB (PAUTH_ACTIVE=0) gets chained/cached */
    bl call_f
    cmp x0, x1
    b.eq 5f
    orr x28, x28, #0x2             /* PAC changed value while disabled */
5:  bl call_f
    cmp x0, x1
    b.eq 5f
    orr x28, x28, #0x2
5:  /* enable EnIA only (the no-flush case) */
    ldr x2, =EnIA
    orr x0, x26, x2
    msr sctlr_el1, x0
    isb
    bl call_f
    cmp x0, x1
    b.ne 5f
    orr x28, x28, #0x4             /* PACIA did not sign after EnIA set */
5:  mov x20, x0                    /* signed value */
    /* switch EnIA -> EnIB (still PAUTH_ACTIVE): PACIA must stop signing */
    ldr x2, =EnIB
    orr x0, x26, x2
    msr sctlr_el1, x0
    isb
    bl call_f
    cmp x0, x1
    b.eq 5f
    orr x28, x28, #0x8             /* PACIA signed with EnIA clear */
5:  /* back to EnIA: same signature as before */
    ldr x2, =EnIA
    orr x0, x26, x2
    msr sctlr_el1, x0
    isb
    bl call_f
    cmp x0, x20
    b.eq 5f
    orr x28, x28, #0x10
5:  /* all off again */
    msr sctlr_el1, x26
    isb
    bl call_f
    cmp x0, x1
    b.eq 5f
    orr x28, x28, #0x20
5:
    /* ---- T3 (informational): stale TLB entry kept across an EnIA-only write ---- */
    ldr x0, =PAGE_Q
    ldr x1, [x0]                   /* fill TLB for Q -> PA1 */
    ldr x4, =(PA2 | 3 | (1 << 10) | (3 << 8) | (1 << 54))
    ldr x1, =(L3 + 0x120 * 8)
    str x4, [x1]                   /* remap Q -> PA2, no TLBI */
    dsb sy
    ldr x2, =EnIA
    orr x0, x26, x2
    msr sctlr_el1, x0              /* only EnIA changes */
    isb
    ldr x0, =PAGE_Q
    ldr x1, [x0]
    mov x2, #0xAAAA
    cmp x1, x2
    b.ne 5f
    orr x28, x28, #0x40            /* info: old translation still used (no flush) */
5:  tlbi vmalle1
    dsb sy
    isb
    ldr x1, [x0]
    mov x2, #0xBBBB
    cmp x1, x2
    b.eq 5f
    orr x28, x28, #0x80            /* after TLBI must see PA2 */
5:
    /* ---- T1: WXN together with EnIA in one write must take effect ---- */
    ldr x19, =PAGE_P
    blr x19                        /* executes; TLB holds P executable */
    ldr x0, [x27]
    cbz x0, 5f
    orr x28, x28, #0x1             /* unexpected fault before WXN */
5:  mrs x0, sctlr_el1              /* currently EnIA set (from T3) */
    ldr x2, =(EnIA | WXN)
    eor x0, x0, x2                 /* clear EnIA, set WXN */
    msr sctlr_el1, x0
    isb
    blr x19                        /* must take a permission fault */
    ldr x0, [x27]
    cmp x0, #1
    b.eq 5f
    orr x28, x28, #0x1             /* WXN did not take effect */
5:  ldr x0, [x27, #8]
    lsr x0, x0, #26
    cmp x0, #0x21                  /* instruction abort, same EL */
    b.eq 5f
    orr x28, x28, #0x1
5:
    /* exit(x28) */
    ldr x1, =VARS + 64
    ldr x0, =0x20026
    str x0, [x1]
    str x28, [x1, #8]
    mov x0, #0x20                  /* SYS_EXIT_EXTENDED */
    hlt #0xf000
    b .

call_f:
    mov x17, x30
    ldr x0, =0x40001000
    mov x1, x0
    bl f
    mov x30, x17
    ret
    .balign 64
f:
    paciza x0
    ret

sync_handler:
    ldr x9, [x27]
    add x9, x9, #1
    str x9, [x27]
    mrs x9, esr_el1
    str x9, [x27, #8]
    msr elr_el1, x30
    eret

bad_handler:
    ldr x1, =VARS + 64
    ldr x0, =0x20026
    str x0, [x1]
    mov x0, #0xff
    str x0, [x1, #8]
    mov x0, #0x20
    hlt #0xf000
    b .

    .ltorg
    .balign 2048
vectors:
    .rept 4
    b bad_handler
    .balign 128
    .endr
    b sync_handler           /* 0x200: current EL, SPx, sync */
    .balign 128
    .rept 11
    b bad_handler
    .balign 128
    .endr
