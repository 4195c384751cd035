"""-tb-size N is an alias of -accel tcg,tb-size=N (patch 'system/vl')."""

import re

from conftest import run

MACHINE = ["-M", "virt", "-cpu", "max", "-nic", "none", "-display", "none",
           "-S", "-monitor", "stdio"]


def code_capacity(qemu, *args):
    """Return the translation buffer capacity that 'info jit' reports."""
    proc = run([qemu, *MACHINE, *args], input="info jit\nquit\n", timeout=60)
    assert proc.returncode == 0, proc.stderr
    match = re.search(r"gen code size\s+\d+/(\d+)", proc.stdout)
    assert match, proc.stdout
    return int(match.group(1))


def test_help_lists_tb_size(qemu):
    proc = run([qemu, "-help"])
    assert re.search(r"^-tb-size n .*\n.*alias of -accel tcg,tb-size=n",
                     proc.stdout, re.M)


def test_alias_sizes_the_code_buffer(qemu):
    alias = code_capacity(qemu, "-tb-size", "64")
    accel = code_capacity(qemu, "-accel", "tcg,tb-size=64")
    default = code_capacity(qemu, "-accel", "tcg")
    assert alias == accel
    assert 60 << 20 < alias <= 64 << 20
    assert alias != default


def test_same_value_twice_is_accepted(qemu):
    assert code_capacity(qemu, "-tb-size", "0x40",
                         "-accel", "tcg,tb-size=64") == \
        code_capacity(qemu, "-accel", "tcg,tb-size=64")


def test_conflicting_values_are_an_error(qemu):
    proc = run([qemu, *MACHINE, "-tb-size", "64", "-accel", "tcg,tb-size=128"],
               input="quit\n", timeout=60)
    assert proc.returncode == 1
    assert "-tb-size 64 conflicts with -accel tcg,tb-size=128" in proc.stderr


def test_bad_value_is_an_error(qemu):
    proc = run([qemu, *MACHINE, "-tb-size", "lots"], input="quit\n",
               timeout=60)
    assert proc.returncode == 1
    assert "-tb-size lots: expected a number of MiB" in proc.stderr
