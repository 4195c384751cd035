"""Shared settings of the downstream test suite; bin/check runs it.

QEMU (a qemu-system-aarch64 binary) and QEMU_BUILD (its meson build
directory) select what is tested, by default the patched build/qemu; point
them at build/baseline for a negative control.
"""

import functools
import os
import pathlib
import struct
import subprocess

import pytest

from harness import tlbscale
from harness.machine import VIRT, Guest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = REPO / "build"
QEMU_BUILD = pathlib.Path(os.environ.get("QEMU_BUILD", BUILD / "qemu"))
QEMU = pathlib.Path(os.environ.get("QEMU",
                                   QEMU_BUILD / "qemu-system-aarch64"))


def run(args, timeout=300, **kwargs):
    """Run a command, capturing its output as text."""
    return subprocess.run([str(a) for a in args], capture_output=True,
                          text=True, timeout=timeout, **kwargs)


@pytest.fixture(scope="session")
def qemu():
    if not QEMU.is_file():
        pytest.fail(f"{QEMU} does not exist; run 'make' first")
    return QEMU


@functools.cache
def tcg_tests():
    """Build the tests/tcg aarch64 system tests that bin/tlb-scale runs,
    and the boot code it builds variants on, once per session (test_tcg
    builds each of them too, but later: tests must not depend on their
    order); return their directory."""
    if not (tlbscale.TCG_DIR / "Makefile").is_file():
        pytest.fail(f"no tests/tcg build in {tlbscale.TCG_DIR}; run 'make'")
    proc = run(["make", "-C", tlbscale.TCG_DIR, "all"], timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return tlbscale.TCG_DIR


# aarch64 "b ." : the guest spins on one instruction.
SPIN_KERNEL = struct.pack("<I", 0x14000000)


@pytest.fixture
def spin(tmp_path):
    kernel = tmp_path / "spin.bin"
    kernel.write_bytes(SPIN_KERNEL)
    return kernel


@pytest.fixture
def guest(spin, tmp_path):
    """Start a spinning guest: guest(qemu, *args), a harness.machine.Guest;
    killed after the test."""
    guests = []

    def start(qemu, *args):
        g = Guest(qemu, [*VIRT, "-kernel", spin, *args], log_dir=str(tmp_path))
        guests.append(g)
        g.launch()
        return g
    yield start
    for g in guests:
        g.kill()
