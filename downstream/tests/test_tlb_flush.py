"""Relaxed broadcast TLB maintenance, "-accel tcg,tlb-flush=relaxed"
(patches 'accel/tcg: add -accel tcg,tlb-flush=relaxed' and 'target/arm:
complete relaxed broadcast TLB maintenance at DSB').  The bare-metal
multi-vCPU checks are tests/tcg's run-tlb-broadcast-* cases (test_tcg);
these cover the option, "info jit", a negative control of those checks
and Linux guests doing real munmap/mprotect/fork work."""

import re

import pytest

from conftest import BUILD, QEMU_BUILD, run

GUEST = BUILD / "guest"
TCG_DIR = QEMU_BUILD / "tests" / "tcg" / "aarch64-softmmu"
SYSTEM_SRC = BUILD / "src" / "tests" / "tcg" / "aarch64" / "system"


def qemu_args(qemu, *args):
    return [qemu, "-M", "virt", "-cpu", "max", "-nic", "none",
            "-display", "none", "-monitor", "none", *args]


def test_unknown_mode_is_an_error(qemu, spin):
    proc = run(qemu_args(qemu, "-accel", "tcg,tlb-flush=lazy",
                         "-kernel", spin), timeout=60)
    assert proc.returncode != 0
    assert "Parameter 'tlb-flush' does not accept value 'lazy'" in proc.stderr


def test_help_lists_the_option(qemu):
    assert "tlb-flush=strict|relaxed" in run([qemu, "-help"]).stdout


@pytest.mark.parametrize("mode", ["icount", "rr=record"])
def test_icount_falls_back_to_strict(qemu, guest, mode, tmp_path):
    icount = "shift=0" if mode == "icount" else \
        f"shift=0,rr=record,rrfile={tmp_path / 'replay.bin'}"
    g = guest(qemu, "-accel", "tcg,tlb-flush=relaxed", "-icount", icount)
    assert "TLB flush mode      strict" in g.hmp("info jit")
    g.shutdown()
    assert "tlb-flush=relaxed is not supported with icount or " \
        "record/replay; using tlb-flush=strict" in g.get_log()


@pytest.mark.parametrize("mode", ["strict", "relaxed"])
def test_info_jit_reports_mode(qemu, guest, mode):
    info = guest(qemu, "-smp", "2", "-accel", f"tcg,tlb-flush={mode}") \
        .hmp("info jit")
    assert f"TLB flush mode      {mode}" in info
    assert ("TLB barrier waits" in info) == (mode == "relaxed")


def broadcast_test(tmp_path, *cflags):
    """Build tests/tcg's tlb-broadcast with extra CFLAGS."""
    if not (TCG_DIR / "boot.o").is_file():
        pytest.skip(f"no tests/tcg build in {TCG_DIR}")
    out = tmp_path / "tlb-broadcast"
    proc = run(["aarch64-linux-gnu-gcc", "-nostdlib", "-O0", "-ffreestanding",
                "-fno-stack-protector", "-isystem",
                BUILD / "src" / "tests" / "tcg" / "minilib",
                *cflags, SYSTEM_SRC / "tlb-broadcast.c", "-o", out,
                f"-Wl,-T{SYSTEM_SRC / 'kernel.ld'}", "-static",
                TCG_DIR / "boot.o", TCG_DIR / "printf.o", "-lgcc"])
    assert proc.returncode == 0, proc.stderr
    return out


def run_broadcast(qemu, kernel, smp, mode):
    return run(qemu_args(qemu, "-smp", str(smp),
                         "-accel", f"tcg,tlb-flush={mode}",
                         "-semihosting-config",
                         "enable=on,target=native,chardev=output",
                         "-chardev", "stdio,id=output", "-kernel", kernel),
               timeout=300)


@pytest.mark.parametrize("mode", ["strict", "relaxed"])
def test_broadcast_check_fails_without_tlbi(qemu, tmp_path, mode):
    """Negative control: without its TLBIs, tlb-broadcast must fail."""
    proc = run_broadcast(qemu, broadcast_test(tmp_path, "-DNO_TLBI"), 2, mode)
    assert proc.returncode != 0, proc.stdout
    assert "FAIL: one page, VAE1IS" in proc.stdout


def linux(qemu, smp, mode, init_args, timeout=300):
    for f in ("vmlinuz", "initrd.cpio"):
        if not (GUEST / f).is_file():
            pytest.skip(f"no {GUEST / f}; run 'make guest'")
    return run(qemu_args(qemu, "-m", "1G", "-serial", "stdio", "-no-reboot",
                         "-smp", str(smp), "-accel", f"tcg,tlb-flush={mode}",
                         "-kernel", GUEST / "vmlinuz",
                         "-initrd", GUEST / "initrd.cpio",
                         "-append", "console=ttyAMA0 panic=-1 quiet " +
                         init_args), timeout=timeout)


@pytest.mark.parametrize("mode", ["strict", "relaxed",
                                  "relaxed,thread=single"])
def test_linux_stress(qemu, mode):
    """Threads remapping, mprotecting and forking with data checks; with
    round-robin TCG the other vCPUs are inactive and catch up on entry."""
    proc = linux(qemu, 4, mode, "rdinit=/tlb-stress -- 8")
    assert re.search(r"STRESS PASS 4 CPUs, \d+ rounds", proc.stdout), \
        proc.stdout[-3000:]


def test_linux_micro_benchmarks_run(qemu):
    """The benchmark's guest side, as a smoke test (no timing asserted)."""
    proc = linux(qemu, 2, "relaxed", "rdinit=/tlb-bench")
    ops = re.findall(r"^RESULT (\w+) 2 \d+ \d+$", proc.stdout, re.M)
    assert ops == ["mprotect", "munmap", "fork"], proc.stdout[-3000:]
