/*
 * BLR to a function on the next page, forever, bare metal at EL1 on
 * -M virt -cpu max (test_inline_lookup.py links it at 0x40080000): each
 * call and each return looks up its next TB, which the inline probe
 * finds from the second call on.  callee is at 0x40081000.
 */
    .text
    .global _start
_start:
    adr     x2, callee
loop:
    blr     x2
    b       loop

    .balign 4096
callee:
    ret
