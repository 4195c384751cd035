"""TCG regions: huge-page-aligned layout, guard pages only in debug builds
(patch 'tcg/region'). Each test runs a QEMU process and reads its
"info jit" and /proc/PID/smaps while the guest runs."""

import os
import pathlib
import time

import pytest

from harness import paths
from harness.machine import Regions, run_qemu

THP_ENABLED = pathlib.Path("/sys/kernel/mm/transparent_hugepage/enabled")
HOST_HAS_THP = THP_ENABLED.exists() and "[never]" not in THP_ENABLED.read_text()


def buffer_range(jit):
    assert jit.code_buffer, jit.text
    return jit.code_buffer


def test_smp4_tb64_layout(qemu, guest):
    jit = guest(qemu, "-smp", "4", "-accel", "tcg,tb-size=64").jit_info()
    assert jit.regions == Regions(32, 2048, guard_pages=False), jit.text
    start, end = buffer_range(jit)
    assert end - start == 64 << 20
    if HOST_HAS_THP:
        assert start % (2 << 20) == 0


@pytest.mark.parametrize("smp", [1, 4])
def test_regions_in_use_are_one_per_vcpu_before_any_fills(qemu, guest, smp):
    """Every vCPU thread takes a region when it starts and the spin
    kernel fills none: "in use" is -smp (the build benchmark reads it
    after a job to see how far the buffer filled)."""
    g = guest(qemu, "-smp", str(smp), "-accel", "tcg,tb-size=64")
    time.sleep(0.5)
    jit = g.jit_info()
    assert jit.counters().get("regions_in_use") == smp, jit.text


def test_release_build_has_no_guard_pages(qemu, guest):
    g = guest(qemu, "-smp", "4", "-accel", "tcg,tb-size=64")
    start, end = buffer_range(g.jit_info())
    inside = [(lo, hi, perms) for lo, hi, perms, _ in g.mappings()
              if lo < end and hi > start]
    assert [perms for _, _, perms in inside] == ["rwxp"], inside


def test_debug_build_guards_every_region(guest):
    if not paths.DEBUG.is_file():
        pytest.skip("no debug build; run 'make debug'")
    g = guest(paths.DEBUG, "-smp", "4", "-accel", "tcg,tb-size=64,split-wx=off")
    jit = g.jit_info()
    start, end = buffer_range(jit)
    guards = [(lo, hi) for lo, hi, perms, _ in g.mappings()
              if lo < end and hi > start and perms == "---p"]
    assert jit.regions and jit.regions.guard_pages, jit.text
    n, stride = jit.regions.count, jit.regions.kib << 10
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
    g.jit_info()
    code = [f for _, _, perms, f in g.mappings() if perms == "rwxp"]
    resident = sum(f["Rss"] for f in code)
    huge = sum(f["AnonHugePages"] for f in code)
    assert resident > 0
    assert huge >= 0.99 * resident, (huge, resident)


def test_huge_pages_off(qemu, guest):
    g = guest(qemu, "-smp", "4", "-accel", "tcg,tb-size=64,tb-huge-pages=off")
    jit = g.jit_info()
    code = [f for _, _, perms, f in g.mappings() if perms == "rwxp"]
    assert jit.huge_pages == "none", jit.text
    assert sum(f["AnonHugePages"] for f in code) == 0


def test_huge_pages_auto_is_the_default(qemu, guest):
    """tb-huge-pages is an OnOffAuto: an explicit auto lays the buffer out
    as no option does."""
    default = guest(qemu, "-accel", "tcg,tb-size=64").jit_info()
    auto = guest(qemu, "-accel", "tcg,tb-size=64,tb-huge-pages=auto") \
        .jit_info()
    assert (auto.regions, auto.huge_pages is None) == \
        (default.regions, default.huge_pages is None), auto.text


def test_huge_pages_bad_value_is_an_error(qemu, spin):
    proc = run_qemu(qemu, ["-M", "virt", "-nic", "none", "-display", "none",
                           "-S", "-accel", "tcg,tb-huge-pages=maybe",
                           "-kernel", spin], timeout=60)
    assert proc.returncode == 1
    assert "Parameter 'tb-huge-pages' does not accept value 'maybe'" in \
        proc.stderr


def test_huge_pages_on_with_split_wx_is_an_error(qemu, spin):
    """A split-wx buffer keeps the page-granular layout: "on" refuses it."""
    proc = run_qemu(qemu, ["-M", "virt", "-nic", "none", "-display", "none",
                           "-S", "-accel", "tcg,split-wx=on,tb-huge-pages=on",
                           "-kernel", spin], timeout=60)
    assert proc.returncode == 1
    assert "tb-huge-pages=on needs transparent huge pages for anonymous " \
        "memory, and split-wx=off" in proc.stderr


@pytest.mark.skipif(not HOST_HAS_THP, reason="host lacks: transparent huge "
                    "pages (/sys/kernel/mm/transparent_hugepage/enabled)")
def test_huge_pages_on(qemu, guest):
    g = guest(qemu, "-smp", "4", "-accel", "tcg,tb-size=64,tb-huge-pages=on")
    jit = g.jit_info()
    assert jit.huge_pages.startswith("2048 KiB"), jit.text
