/*
 * A lookup-bound micro-benchmark, bare metal at EL1 with the MMU off on
 * -M virt -cpu max (linked at 0x40080000, booted with -kernel): ITERS
 * times, a recursion DEPTH calls deep on another page, whose DEPTH
 * returns each look up their next TB, and a call through a function
 * pointer; then PSCI SYSTEM_OFF, so that QEMU's wall time measures it.
 */
    .equ ITERS, 2000000
    .equ DEPTH, 32
    .equ PSCI_SYSTEM_OFF, 0x84000008

    .text
    .global _start
_start:
    ldr     x1, =0x44000000     /* a stack 64 MiB into RAM */
    mov     sp, x1
    ldr     x20, =ITERS
    adr     x21, leaf
outer:
    mov     x0, #DEPTH
    bl      recurse
    blr     x21
    subs    x20, x20, #1
    b.ne    outer
    ldr     x0, =PSCI_SYSTEM_OFF
    hvc     #0
1:  b       1b
    .ltorg

    .balign 4096                /* page 1 */
recurse:
    stp     x29, x30, [sp, #-16]!
    subs    x0, x0, #1
    b.eq    2f
    bl      recurse
2:  ldp     x29, x30, [sp], #16
    ret

leaf:
    ret
