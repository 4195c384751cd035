"""The downstream's measurement harness: one way to launch QEMU (machine),
read its memory (smaps), and compare runs (stats), used by bin/bench,
bin/bench-report, bin/compare and the pytest suite.

It runs on QEMU's own Python libraries, qemu.machine and qemu.qmp from the
assembled tree's python/ (bin/ puts build/src/python on PYTHONPATH)."""

import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = REPO / "build"
SRC = BUILD / "src"
