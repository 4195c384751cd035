"""bin/boot-time: boots a guest once and reports boot+shutdown."""

import re
import threading
import time

from conftest import run
from harness.machine import Guest
from harness.paths import REPO


def test_smoke_boot(qemu):
    proc = run([REPO / "bin" / "boot-time", "--qemu", qemu, "--timeout", "120"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.fullmatch(r"boot\+shutdown: \d+\.\d{3} s \(memory\)\n",
                        proc.stdout), proc.stdout


def test_failing_guest_is_an_error(qemu, tmp_path):
    not_a_kernel = tmp_path / "empty"
    not_a_kernel.write_bytes(b"\0" * 4096)
    proc = run([REPO / "bin" / "boot-time", "--qemu", qemu, "--kernel",
                not_a_kernel, "--timeout", "5"])
    assert proc.returncode != 0
    assert "boot+shutdown" not in proc.stdout
    assert "did not power off within 5 s" in proc.stderr


def test_missing_kernel_is_an_error(qemu, tmp_path):
    proc = run([REPO / "bin" / "boot-time", "--qemu", qemu, "--kernel",
                tmp_path / "nothing"])
    assert proc.returncode != 0
    assert "does not exist" in proc.stderr


def test_a_console_reader_that_starts_late_finds_the_console(qemu,
                                                             monkeypatch):
    """Guest opens the console in launch(): QEMUMachine opens it on first
    use and drops it at shutdown, so a reader thread whose first step
    comes after shutdown() must not be the one to open it."""
    errors = []
    monkeypatch.setattr(threading, "excepthook", errors.append)

    class LateReader(Guest):
        def _read_console(self, *args):
            time.sleep(0.5)
            super()._read_console(*args)

    guest = LateReader(qemu, ["-M", "virt", "-S"])
    guest.launch()
    guest.shutdown()
    assert errors == []
