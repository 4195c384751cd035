"""Unit tests run through meson: ours (the TCG region layout, the coalescing
of queued TLB flushes, the summary of what a vCPU's TLB may hold, the
torture test of relaxed TLB maintenance) and
upstream's
of the code that this downstream changes: TB hash table (qht), RCU lists,
bitmaps and interval trees used by TCG, and the option parsers behind
-accel and -tb-size."""

import os
import re

import pytest

from conftest import run
from harness.paths import BUILD, QEMU_BUILD

UNIT_TESTS = [
    "test-tcg-region-layout", "test-tlb-pending", "test-tlb-filter",
    "test-tlb-relaxed-par", "test-tlb-relaxed-jc",
    "test-qht", "test-qdist",
    "test-rcu-list", "test-rcu-simpleq", "test-rcu-slist", "test-rcu-tailq",
    "test-bitmap", "test-bitops", "test-interval-tree",
    "test-qemu-opts", "test-keyval", "test-cutils",
]


@pytest.mark.parametrize("name", UNIT_TESTS)
def test_unit(name):
    built = run(["ninja", "-C", QEMU_BUILD, f"tests/unit/{name}"], timeout=1200)
    assert built.returncode == 0, built.stdout + built.stderr
    proc = run([BUILD / "venv" / "bin" / "meson", "test", "-C", QEMU_BUILD,
                "--no-rebuild", "--print-errorlogs", name], timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^Ok:\s+1\s*$", proc.stdout, re.M), proc.stdout


def test_relaxed_tlb_torture_under_tsan():
    """The torture test built with -fsanitize=thread ('make tsan'): no data
    race report, also with targets parking, and the broken barrier is
    still caught."""
    binary = BUILD / "tsan" / "tests" / "unit" / "test-tlb-relaxed-par"
    if not binary.is_file():
        pytest.fail(f"no {binary}; run 'make tsan'")
    proc = run([binary], timeout=600,
               env={**os.environ, "TLB_RELAXED_PAR_MS": "3000"})
    assert "ThreadSanitizer" not in proc.stderr, proc.stderr[-6000:]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for case in ("broken-barrier-is-caught", "unannounced-fill-is-caught",
                 "parking-keeps-the-invariant",
                 "broken-barrier-is-caught-while-parking"):
        assert re.search(rf"^ok \d+ /tlb-relaxed-par/{case}$",
                         proc.stdout, re.M), proc.stdout
