"""Which Arm barriers complete broadcast TLB maintenance: a DSB does, the
v8 speculation barriers SSBB and PSSBB (DSB #0 and #4) do not, and only
where a barrier can have work to do, relaxed mode with more than one
vCPU: in strict mode and at -smp 1 a DSB is translated as upstream
translates it, with no call.  Read from the TCG ops of a kernel made of
the barriers (-d op).

Negative controls: a build that calls tlb_flush_barrier() from SSBB and
PSSBB fails the relaxed cases; one that calls it in every mode (the
series before "target/arm: call the TLB barrier helper only where it can
wait") fails the strict and -smp 1 cases."""

import struct
import time

import pytest

# (instruction, helper it calls or None), in execution order; the kernel
# ends in "b .", so everything before it is one translation block.
A64 = [
    (0xD503309F, None),                         # SSBB (DSB #0)
    (0xD503349F, None),                         # PSSBB (DSB #4)
    (0xD5033B9F, "tlb_flush_barrier"),          # DSB ISH
    (0xD503379F, "tlb_flush_barrier_nsh"),      # DSB NSH, at EL1
    (0xD5033F9F, "tlb_flush_barrier"),          # DSB SY
    (0xD503389F, "tlb_flush_barrier"),          # DSB #8: behaves as SY
    (0xD5033BBF, None),                         # DMB ISH
    (0x14000000, None),                         # b .
]
# Cortex-A15 is v7, where DSB #0 and #4 are reserved and execute as DSB
# SY; from v8 they are SSBB and PSSBB.
A32_V7 = [
    (0xF57FF040, "tlb_flush_barrier"),          # DSB #0
    (0xF57FF044, "tlb_flush_barrier"),          # DSB #4
    (0xF57FF04B, "tlb_flush_barrier"),          # DSB ISH
    (0xF57FF04F, "tlb_flush_barrier"),          # DSB SY
    (0xF57FF05B, None),                         # DMB ISH
    (0xEAFFFFFE, None),                         # b .
]


def barrier_calls(guest, qemu, tmp_path, cpu, program, mode, smp):
    """The tlb_flush_barrier* helpers that the translation of @program
    calls, in order, on -cpu @cpu with tlb-flush=@mode and -smp @smp."""
    kernel = tmp_path / "barriers.bin"
    kernel.write_bytes(b"".join(struct.pack("<I", insn)
                                for insn, _ in program))
    log = tmp_path / f"op-{cpu}-{mode}.log"
    g = guest(qemu, "-accel", f"tcg,tlb-flush={mode}", "-smp", str(smp),
              "-d", "op",
              "-D", log, board=["-M", "virt", "-cpu", cpu, "-nic", "none",
                                "-kernel", kernel])
    time.sleep(1)       # the first TB is translated at once
    g.shutdown()        # and the log is flushed at exit
    calls = []
    for line in log.read_text().splitlines():
        words = line.split()
        if words[:1] == ["call"] and words[1].startswith("tlb_flush_barrier"):
            calls.append(words[1].split(",")[0])
    return calls


@pytest.mark.parametrize("cpu,program", [("max", A64),
                                         ("cortex-a15", A32_V7)],
                         ids=["a64", "a32-v7"])
@pytest.mark.parametrize("mode,smp,waits", [("relaxed", 2, True),
                                            ("strict", 2, False),
                                            ("relaxed", 1, False)],
                         ids=["relaxed-smp2", "strict-smp2", "relaxed-smp1"])
def test_dsb_calls_the_barrier_ssbb_does_not(guest, qemu, tmp_path, cpu,
                                             program, mode, smp, waits):
    expected = [helper for _, helper in program if helper and waits]
    assert barrier_calls(guest, qemu, tmp_path, cpu, program, mode,
                         smp) == expected
