"""Shared settings of the downstream test suite; bin/check runs it.

QEMU (a qemu-system-aarch64 binary) and QEMU_BUILD (its meson build
directory) select what is tested, by default the patched build/qemu; point
them at build/baseline for a negative control.
"""

import os
import pathlib
import re
import struct
import subprocess

import pytest

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


# aarch64 "b ." : the guest spins on one instruction.
SPIN_KERNEL = struct.pack("<I", 0x14000000)


class Guest:
    """qemu-system-aarch64 with its HMP monitor on stdin/stdout."""

    def __init__(self, qemu, kernel, *args):
        self.proc = subprocess.Popen(
            [str(qemu), "-M", "virt", "-cpu", "max", "-nic", "none",
             "-display", "none", "-monitor", "stdio", "-kernel", str(kernel),
             *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)

    def hmp(self, command):
        """Run a monitor command; return its output."""
        self.proc.stdin.write(command + "\ninfo version\n")
        self.proc.stdin.flush()
        lines = []
        while True:
            line = self.proc.stdout.readline()
            assert line, self.proc.stderr.read()
            if re.match(r"(\(qemu\) )?\d+\.\d+\.\d+", line):
                return "".join(lines)
            lines.append(line)

    def mappings(self):
        """(start, end, perms, fields) of each mapping, from smaps."""
        smaps = pathlib.Path(f"/proc/{self.proc.pid}/smaps").read_text()
        result = []
        for line in smaps.splitlines():
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
            if m:
                fields = {}
                result.append((int(m.group(1), 16), int(m.group(2), 16),
                               m.group(3), fields))
            elif ":" in line and line.split(":")[1].strip().endswith("kB"):
                key, value = line.split(":")
                fields[key] = int(value.split()[0]) * 1024
        return result



@pytest.fixture
def spin(tmp_path):
    kernel = tmp_path / "spin.bin"
    kernel.write_bytes(SPIN_KERNEL)
    return kernel


@pytest.fixture
def guest(spin):
    """Start a spinning guest: guest(qemu, *args); killed after the test."""
    guests = []

    def start(qemu, *args):
        guests.append(Guest(qemu, spin, *args))
        return guests[-1]
    yield start
    for g in guests:
        g.proc.kill()
        g.proc.communicate()
