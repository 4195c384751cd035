"""TCG regions: huge-page-aligned layout, guard pages only in debug builds
(patch 'tcg/region'). Each test runs a QEMU process and reads its
"info jit" and /proc/PID/smaps while the guest runs."""

import os
import pathlib
import re
import subprocess
import time

import pytest

from conftest import BUILD, QEMU

THP_ENABLED = pathlib.Path("/sys/kernel/mm/transparent_hugepage/enabled")
HOST_HAS_THP = THP_ENABLED.exists() and "[never]" not in THP_ENABLED.read_text()


def buffer_range(info):
    m = re.search(r"^code buffer\s+0x([0-9a-f]+)-0x([0-9a-f]+)$", info, re.M)
    assert m, info
    return int(m.group(1), 16), int(m.group(2), 16)


def test_smp4_tb64_layout(qemu, guest):
    info = guest(qemu, "-smp", "4", "-accel", "tcg,tb-size=64").hmp("info jit")
    assert "code regions        32 x 2048 KiB, guard pages off" in info
    start, end = buffer_range(info)
    assert end - start == 64 << 20
    if HOST_HAS_THP:
        assert start % (2 << 20) == 0


def test_release_build_has_no_guard_pages(qemu, guest):
    g = guest(qemu, "-smp", "4", "-accel", "tcg,tb-size=64")
    start, end = buffer_range(g.hmp("info jit"))
    inside = [(lo, hi, perms) for lo, hi, perms, _ in g.mappings()
              if lo < end and hi > start]
    assert [perms for _, _, perms in inside] == ["rwxp"], inside


def test_debug_build_guards_every_region(guest):
    qemu = BUILD / "debug" / "qemu-system-aarch64"
    if not qemu.is_file():
        pytest.skip("no debug build; run 'make debug'")
    g = guest(qemu, "-smp", "4", "-accel", "tcg,tb-size=64,split-wx=off")
    info = g.hmp("info jit")
    start, end = buffer_range(info)
    guards = [(lo, hi) for lo, hi, perms, _ in g.mappings()
              if lo < end and hi > start and perms == "---p"]
    m = re.search(r"code regions\s+(\d+) x (\d+) KiB, guard pages on", info)
    assert m, info
    n, stride = int(m.group(1)), int(m.group(2)) << 10
    page = os.sysconf("SC_PAGE_SIZE")
    assert guards == [(start + (i + 1) * stride - page, start + (i + 1) * stride)
                      for i in range(n)]


@pytest.mark.skipif(not HOST_HAS_THP, reason="host lacks: transparent huge "
                    "pages (/sys/kernel/mm/transparent_hugepage/enabled)")
def test_code_buffer_is_huge_page_backed(qemu, guest):
    """After a short run with -smp 4, tb-size=64, the code buffer (the rwx
    mappings) is backed by huge pages: >= 99% of its resident memory."""
    g = guest(qemu, "-smp", "4", "-accel", "tcg,tb-size=64")
    time.sleep(0.5)
    g.hmp("info jit")
    code = [f for _, _, perms, f in g.mappings() if perms == "rwxp"]
    resident = sum(f["Rss"] for f in code)
    huge = sum(f["AnonHugePages"] for f in code)
    assert resident > 0
    assert huge >= 0.99 * resident, (huge, resident)


def test_huge_pages_off(qemu, guest):
    g = guest(qemu, "-smp", "4", "-accel", "tcg,tb-size=64,tb-huge-pages=off")
    info = g.hmp("info jit")
    code = [f for _, _, perms, f in g.mappings() if perms == "rwxp"]
    assert "code huge pages     none" in info
    assert sum(f["AnonHugePages"] for f in code) == 0


def test_huge_pages_on_with_split_wx_is_an_error(qemu, spin):
    """A split-wx buffer keeps the page-granular layout: "on" refuses it."""
    proc = subprocess.run(
        [str(QEMU), "-M", "virt", "-nic", "none", "-display", "none", "-S",
         "-accel", "tcg,split-wx=on,tb-huge-pages=on", "-kernel", str(spin)],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "tb-huge-pages=on needs transparent huge pages for anonymous " \
        "memory, and split-wx=off" in proc.stderr


@pytest.mark.skipif(not HOST_HAS_THP, reason="host lacks: transparent huge "
                    "pages (/sys/kernel/mm/transparent_hugepage/enabled)")
def test_huge_pages_on(qemu, guest):
    g = guest(qemu, "-smp", "4", "-accel", "tcg,tb-size=64,tb-huge-pages=on")
    assert "code huge pages     2048 KiB" in g.hmp("info jit")
