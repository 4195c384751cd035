"""TLB flushes that the guest did not ask for: a register write that no
translation depends on keeps the TLB (patch "target/arm: keep the TLB
when an SCTLR write changes only pointer authentication enables").
Each test runs a bare-metal kernel: the first read "info jit"'s flush
count, the last checks what the guest sees."""

import struct
import time

import pytest

from conftest import run
from harness.machine import VIRT, run_qemu
from harness.paths import REPO

# EOR x0, x0, #(1 << bit), for the bits the tests flip.
EOR_X0_BIT = {31: 0xd2610000, 19: 0xd26d0000}
FLIPS = 1000


def sctlr_flipper(bit):
    """A kernel, at EL1 with the MMU off, that flips SCTLR_EL1 bit @bit
    FLIPS times and then spins."""
    return struct.pack("<8I",
                       0xd2807d01,          # mov  x1, #1000 (FLIPS)
                       0xd5381000,          # 1: mrs x0, sctlr_el1
                       EOR_X0_BIT[bit],     # eor  x0, x0, #(1 << bit)
                       0xd5181000,          # msr  sctlr_el1, x0
                       0xd5033fdf,          # isb
                       0xf1000421,          # subs x1, x1, #1
                       0x54ffff61,          # b.ne 1b
                       0x14000000)          # b    .


def settled_flushes(g, timeout=30):
    """TLB flushes counted once two reads 0.2 s apart agree."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        now = g.jit_info().counters()["tlb_partial_flushes"]
        if now == last:
            return now
        last = now
        time.sleep(0.2)
    pytest.fail(f"the flush count did not settle within {timeout} s")


@pytest.mark.parametrize("bit, flushes", [
    (31, False),    # EnIA: the pointer authentication enable Linux flips
    (19, True),     # WXN: permissions that the TLB caches
], ids=["EnIA", "WXN"])
def test_sctlr_write_flushes_only_for_bits_translations_use(
        qemu, guest, tmp_path, bit, flushes):
    kernel = tmp_path / "sctlr.bin"
    kernel.write_bytes(sctlr_flipper(bit))
    g = guest(qemu, board=[*VIRT, "-kernel", kernel])
    n = settled_flushes(g)
    if flushes:
        assert n >= FLIPS, n
    else:
        assert n < FLIPS / 100, n


def sctlr_pauth_kernel(tmp_path):
    """downstream/guest/sctlr-pauth.S, assembled and linked for -kernel."""
    source = REPO / "downstream" / "guest" / "sctlr-pauth.S"
    obj, elf, kernel = (tmp_path / f"sctlr-pauth.{e}" for e in ("o", "elf",
                                                                 "bin"))
    for args in (["aarch64-linux-gnu-as", source, "-o", obj],
                 ["aarch64-linux-gnu-ld", "-Ttext=0x40080000", obj, "-o", elf],
                 ["aarch64-linux-gnu-objcopy", "-O", "binary", elf, kernel]):
        proc = run(args)
        assert proc.returncode == 0, proc.stderr
    return kernel


def test_sctlr_pauth_writes_keep_the_tlb_and_take_effect(qemu, tmp_path):
    """An EnIA-only write keeps the TLB (0x40), PAC follows the enables at
    once, and a write that clears EnIA and sets WXN in one go flushes:
    the status has no failure bit."""
    proc = run_qemu(qemu, [*VIRT, "-display", "none", "-semihosting",
                           "-kernel", sctlr_pauth_kernel(tmp_path)],
                    timeout=60)
    assert proc.returncode == 0x40, (proc.returncode, proc.stderr)
