"""Shared settings of the downstream test suite; bin/check runs it.

QEMU (a qemu-system-aarch64 binary) and QEMU_BUILD (its meson build
directory) select what is tested, by default the patched build/qemu; point
them at build/baseline for a negative control (harness.paths).

Every QEMU process of a test starts in harness.machine: a Guest, with
QMP, through the guest fixture, or run_qemu() for a run to its exit.
run() here is for everything else (make, git, bin/ scripts)."""

import functools
import struct
import subprocess
import time

import pytest

from harness import paths
from harness.machine import VIRT, Guest


def run(args, timeout=300, **kwargs):
    """Run a command that is not QEMU, capturing its output as text."""
    return subprocess.run([str(a) for a in args], capture_output=True,
                          text=True, timeout=timeout, check=False, **kwargs)


@pytest.fixture(scope="session")
def qemu():
    if not paths.QEMU.is_file():
        pytest.fail(f"{paths.QEMU} does not exist; run 'make' first")
    return paths.QEMU


@functools.cache
def tcg_tests():
    """Build the tests/tcg aarch64 system tests that bin/tlb-scale runs,
    and the boot code it builds variants on, once per session (test_tcg
    builds each of them too, but later: tests must not depend on their
    order); return their directory."""
    if not (paths.TCG_DIR / "Makefile").is_file():
        pytest.fail(f"no tests/tcg build in {paths.TCG_DIR}; run 'make'")
    proc = run(["make", "-C", paths.TCG_DIR, "all"], timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return paths.TCG_DIR


def guest_kernel(name, tmp_path):
    """downstream/guest/@name.S, assembled and linked for -kernel at the
    address where -M virt loads it."""
    source = paths.REPO / "downstream" / "guest" / f"{name}.S"
    obj, elf, kernel = (tmp_path / f"{name}.{e}" for e in ("o", "elf", "bin"))
    for args in (["aarch64-linux-gnu-as", source, "-o", obj],
                 ["aarch64-linux-gnu-ld", "-Ttext=0x40080000", obj, "-o", elf],
                 ["aarch64-linux-gnu-objcopy", "-O", "binary", elf, kernel]):
        proc = run(args)
        assert proc.returncode == 0, proc.stderr
    return kernel


def settled_counters(g, timeout=30,
                     keys=("tlb_partial_flushes", "tlb_index_flushes")):
    """Guest @g's info jit counters once two reads 0.2 s apart agree on
    @keys, by default the flush counts."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        now = g.jit_info().counters()
        if last and all(now[k] == last[k] for k in keys):
            return now
        last = now
        time.sleep(0.2)
    pytest.fail(f"{', '.join(keys)} did not settle within {timeout} s")


# A machine that runs nothing, for runs that QEMU must refuse (run_qemu):
# without a monitor it would wait for ever.
PAUSED = ["-M", "virt", "-cpu", "max", "-nic", "none", "-display", "none",
          "-monitor", "none", "-S"]

# aarch64 "b ." : the guest spins on one instruction.
SPIN_KERNEL = struct.pack("<I", 0x14000000)


@pytest.fixture
def spin(tmp_path):
    kernel = tmp_path / "spin.bin"
    kernel.write_bytes(SPIN_KERNEL)
    return kernel


@pytest.fixture
def guest(spin, tmp_path):
    """Start a machine: guest(qemu, *args), a harness.machine.Guest,
    killed after the test.  It runs the spin kernel on VIRT unless
    @board is given (["-M", "mps2-an385"]); @wrapper runs QEMU."""
    guests = []

    def start(qemu, *args, board=None, wrapper=()):
        if board is None:
            board = [*VIRT, "-kernel", spin]
        g = Guest(qemu, [*board, *args], log_dir=str(tmp_path),
                  wrapper=wrapper)
        guests.append(g)
        g.launch()
        return g
    yield start
    for g in guests:
        g.kill()
