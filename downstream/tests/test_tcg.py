"""The tests/tcg aarch64 system tests ('make check-tcg'), one case each.

The cases are the run-* targets that the per-target makefile's 'help'
lists; each runs as 'make run-NAME' with the QEMU under test.
"""

import pytest

from conftest import run
from harness.paths import QEMU, TCG_DIR

# Targets upstream runs only by hand (it reads input from the console).
MANUAL_ONLY = {"run-semiconsole"}


def make(*args, timeout=600):
    return run(["make", "-C", TCG_DIR, f"QEMU={QEMU}", *args],
               timeout=timeout)


def run_targets():
    if not (TCG_DIR / "Makefile").is_file():
        return ["missing"]
    listing = make("help", timeout=60).stdout.split()
    return [t for t in listing if t.startswith("run-")
            and t not in MANUAL_ONLY] or ["missing"]


@pytest.mark.parametrize("target", run_targets())
def test_tcg(target):
    assert target != "missing", \
        f"no tests/tcg targets in {TCG_DIR}: is aarch64-linux-gnu-gcc installed?"
    proc = make(target)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    for line in proc.stdout.splitlines():
        if line.split()[:1] == ["SKIPPED"]:
            pytest.skip(line.strip())
