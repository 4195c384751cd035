"""TLB flushes that the guest did not ask for, and the counters that say
why the TLB was flushed: a register write that no translation depends on
keeps the TLB (patch "target/arm: keep the TLB for SCTLR writes of
pointer auth enables"), and "info jit" counts each whole flush by cause
(patches "accel/tcg: count what makes vCPUs refill their TLBs and jump
caches" and "target/arm: say why a register write flushes the TLB").
Each test runs a bare-metal kernel: the first ones read "info jit"'s
flush counts, the last checks what the guest sees."""

import struct

import pytest

from conftest import guest_kernel, settled_counters, tcg_tests
from harness import tlbscale
from harness.machine import JIT_COUNTERS, VIRT, run_qemu

# EOR x0, x0, #(1 << bit), for the bits the tests flip; NOP for None.
EOR_X0_BIT = {31: 0xd2610000, 19: 0xd26d0000, 48: 0xd2500000,
              7: 0xd2790000, None: 0xd503201f}
# MRS x0, REG and MSR REG, x0.
SYSREG = {"sctlr_el1": (0xd5381000, 0xd5181000),
          "ttbr0_el1": (0xd5382000, 0xd5182000),
          "tcr_el1": (0xd5382040, 0xd5182040)}
FLIPS = 1000


def flipper(reg, bit):
    """A kernel, at EL1 with the MMU off, that flips bit @bit of system
    register @reg FLIPS times (writes its own value back if @bit is None)
    and then spins."""
    mrs, msr = SYSREG[reg]
    return struct.pack("<8I",
                       0xd2807d01,          # mov  x1, #1000 (FLIPS)
                       mrs,                 # 1: mrs x0, REG
                       EOR_X0_BIT[bit],     # eor  x0, x0, #(1 << bit)
                       msr,                 # msr  REG, x0
                       0xd5033fdf,          # isb
                       0xf1000421,          # subs x1, x1, #1
                       0x54ffff61,          # b.ne 1b
                       0x14000000)          # b    .


def run_flipper(qemu, guest, tmp_path, reg, bit):
    kernel = tmp_path / "flipper.bin"
    kernel.write_bytes(flipper(reg, bit))
    return settled_counters(guest(qemu, board=[*VIRT, "-kernel", kernel]))


@pytest.mark.parametrize("reg, bit, flushes", [
    ("sctlr_el1", 31, False),   # EnIA: the pointer authentication enable
    ("sctlr_el1", 19, True),    # WXN: permissions that the TLB caches
    ("tcr_el1", None, False),   # the value it holds (patch "target/arm:
                                # keep the TLB for a TCR write that changes
                                # nothing")
    ("tcr_el1", 7, True),       # EPD0: whether TTBR0 walks at all
], ids=["SCTLR.EnIA", "SCTLR.WXN", "TCR same value", "TCR.EPD0"])
def test_register_write_flushes_only_where_translations_change(
        qemu, guest, tmp_path, reg, bit, flushes):
    n = run_flipper(qemu, guest, tmp_path, reg, bit)["tlb_partial_flushes"]
    if flushes:
        assert n >= FLIPS, n
    else:
        assert n < FLIPS / 100, n


@pytest.mark.parametrize("reg, bit, cause", [
    ("sctlr_el1", 19, "tlb_flushes_register"),          # WXN
    ("ttbr0_el1", 48, "tlb_flushes_address_space"),     # ASID
], ids=["SCTLR.WXN", "TTBR0.ASID"])
def test_whole_flushes_are_counted_by_cause(qemu, guest, tmp_path, reg, bit,
                                            cause):
    """Each write empties the MMU index the kernel runs in, counted under
    its cause and no other (the kernel makes no TLB maintenance, and
    flushes no range or large page)."""
    counters = run_flipper(qemu, guest, tmp_path, reg, bit)
    causes = {k: v for k, v in counters.items()
              if k.startswith("tlb_flushes_")}
    assert causes[cause] >= FLIPS, causes
    assert sum(causes.values()) - causes[cause] < FLIPS / 100, causes
    # Each flush wipes the jump cache, and the kernel refills its TLB.
    assert counters["jc_wipes_tlb_flush"] >= FLIPS, counters
    assert counters["tlb_fills"] >= FLIPS, counters


# tests/tcg's tlb-asid: its ASID changes, and boot.S's TTBR0 restored.
ASID_CHANGES = 255 + 1


def test_asid_change_keeps_the_physical_index(qemu, guest, tmp_path):
    """tlb-asid, built to hold after its rounds: each ASID change empties
    the index the kernel runs in and not the physical one, through which
    its walks read their descriptors (patch "target/arm: keep the stage 2
    and physical TLBs across an ASID change"), so the walks after it fill
    the descriptor pages' entries no more.  The build before the patch
    empties two indexes a change, 512 in all, and fills twice as often
    (2,065 fills against 1,043): QEMU=build/baseline/qemu-system-aarch64
    fails this test with both in its message."""
    tcg_tests()
    kernel = tmp_path / "tlb-asid-hold"
    proc = tlbscale.build_system_test("tlb-asid.c", kernel, "-DHOLD")
    assert proc.returncode == 0, proc.stderr
    n = settled_counters(guest(qemu, board=[
        *VIRT, "-semihosting-config", "enable=on,target=native",
        "-kernel", kernel]))
    seen = {k: n[k] for k in ("tlb_flushes_address_space", "tlb_fills")}
    assert n["tlb_flushes_address_space"] == ASID_CHANGES, seen
    assert n["tlb_fills"] < 6 * ASID_CHANGES, seen


# smc-jmp-cache's rounds (each invalidates the tag's TB, but for the first
# of each case, which finds none), and the functions CPU 1 calls in each.
SMC_ROUNDS = 2 * 256
SMC_STUBS = 64
# The causes of jump cache misses (TBJmpCacheMiss), as bin/bench records
# them.
MISS_CAUSES = tuple(k for k in JIT_COUNTERS if k.startswith("jc_misses_"))


def test_tb_invalidation_keeps_the_jump_caches(qemu, guest, tmp_path):
    """smc-jmp-cache, built to hold after its rounds: each round's code
    write invalidates a CF_PCREL TB, and CPU 1's jump cache keeps the 64
    other functions it calls (patch "accel/tcg: keep the jump caches when
    a CF_PCREL TB is invalidated").  The misses that remain say what
    their slots held ("info jit", patch "accel/tcg: count what makes
    vCPUs refill their TLBs and jump caches"): of 2,321, the tag's
    invalidated TB 1,020 times (twice a round), none on an entry a flush
    emptied.  The build before the patch wipes every vCPU's jump cache at
    each invalidation, and CPU 1 misses at least once per function a
    round (the calls share one return TB), each on a slot the wipe
    emptied (41,060 of 42,361, none on an invalidated TB):
    QEMU=build/baseline/qemu-system-aarch64 fails this test with its
    counts in the message."""
    tcg_tests()
    kernel = tmp_path / "smc-jmp-cache-hold"
    proc = tlbscale.build_system_test("smc-jmp-cache.c", kernel, "-DHOLD")
    assert proc.returncode == 0, proc.stderr
    n = settled_counters(guest(qemu, "-smp", "2", board=[
        *VIRT, "-semihosting-config", "enable=on,target=native",
        "-kernel", kernel]), keys=("tb_invalidations", "jc_misses"))
    causes = {k: n.get(k) for k in MISS_CAUSES}
    seen = {k: n.get(k) for k in ("tb_invalidations", "jc_misses",
                                  "jc_wipes", "jc_wipes_tb_invalidate")}
    seen.update(causes)
    assert n["tb_invalidations"] >= SMC_ROUNDS - 2, seen
    assert n["jc_misses"] < SMC_ROUNDS * SMC_STUBS / 2, seen
    assert None not in causes.values(), seen
    assert n["jc_misses_invalid"] >= SMC_ROUNDS - 2, seen
    assert n["jc_misses_cleared"] < SMC_ROUNDS * SMC_STUBS / 4, seen


def test_sctlr_pauth_writes_keep_the_tlb_and_take_effect(qemu, tmp_path):
    """An EnIA-only write keeps the TLB (0x40), PAC follows the enables at
    once, and a write that clears EnIA and sets WXN in one go flushes:
    the status has no failure bit."""
    proc = run_qemu(qemu, [*VIRT, "-display", "none", "-semihosting",
                           "-kernel", guest_kernel("sctlr-pauth", tmp_path)],
                    timeout=60)
    assert proc.returncode == 0x40, (proc.returncode, proc.stderr)
