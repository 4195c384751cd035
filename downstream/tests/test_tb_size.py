"""-tb-size N is an alias of -accel tcg,tb-size=N (patch 'system/vl')."""

import re

from conftest import PAUSED
from harness.machine import run_qemu


def code_capacity(qemu, guest, *args):
    """Return the translation buffer capacity that 'info jit' reports."""
    jit = guest(qemu, "-S", *args).jit_info()
    assert jit.code_capacity, jit.text
    return jit.code_capacity


def test_help_lists_tb_size(qemu):
    proc = run_qemu(qemu, ["-help"], timeout=60)
    assert re.search(r"^-tb-size n .*\n.*alias of -accel tcg,tb-size=n",
                     proc.stdout, re.M)


def test_alias_sizes_the_code_buffer(qemu, guest):
    alias = code_capacity(qemu, guest, "-tb-size", "64")
    accel = code_capacity(qemu, guest, "-accel", "tcg,tb-size=64")
    default = code_capacity(qemu, guest, "-accel", "tcg")
    assert alias == accel
    assert 60 << 20 < alias <= 64 << 20
    assert alias != default


def test_same_value_twice_is_accepted(qemu, guest):
    assert code_capacity(qemu, guest, "-tb-size", "0x40",
                         "-accel", "tcg,tb-size=64") == \
        code_capacity(qemu, guest, "-accel", "tcg,tb-size=64")


def test_conflicting_values_are_an_error(qemu):
    proc = run_qemu(qemu, [*PAUSED, "-tb-size", "64",
                           "-accel", "tcg,tb-size=128"], timeout=60)
    assert proc.returncode == 1
    assert "-tb-size 64 conflicts with -accel tcg,tb-size=128" in proc.stderr


def test_bad_value_is_an_error(qemu):
    proc = run_qemu(qemu, [*PAUSED, "-tb-size", "lots"], timeout=60)
    assert proc.returncode == 1
    assert "-tb-size lots: expected a number of MiB" in proc.stderr
