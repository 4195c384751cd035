/*
 * One exit of each kind that looks up its next TB, ROUNDS times, bare
 * metal at EL1 with the MMU off on -M virt -cpu max (test_lookups.py
 * assembles it, links it at 0x40080000 and boots it with -kernel); then
 * it spins in one chained TB, so that "info jit" settles.  Each round:
 *   BLR to page 1                     a call
 *   RET from page 1                   a return
 *   BR within page 0                  a jump
 *   B from page 0 to page 1's end     a branch
 *   the fall-through into page 2      a page end
 *   B from page 2 back to page 0      a branch
 * gen_goto_tb() chains only within a page, so none of these chains.
 */
    .equ ROUNDS, 1000

    .text
    .global _start
_start:
    mov     x1, #ROUNDS
    adr     x2, callee
    adr     x3, jumped
round:
    blr     x2
    br      x3
jumped:
    b       page_end
back:
    subs    x1, x1, #1
    b.ne    round
done:
    b       done

    .balign 4096                /* page 1 */
callee:
    ret

    .org    2 * 4096 - 4        /* page 1's last instruction */
page_end:
    nop
                                /* page 2 */
    b       back
