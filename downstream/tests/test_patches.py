"""Every patch of the series, and every C file of our own, passes
upstream's scripts/checkpatch.pl."""

import re
import subprocess

import pytest

from conftest import run
from harness.paths import COVER_LETTER, REPO, SRC, series

PATCHES = series()
OWN_C_FILES = subprocess.run(
    ["git", "-C", REPO, "ls-files", "--cached", "--others", "--exclude-standard",
     "*.c", "*.h"], capture_output=True, text=True, check=True).stdout.split()


@pytest.mark.parametrize("patch", PATCHES, ids=[p.name[:4] for p in PATCHES])
def test_checkpatch(patch):
    proc = run([SRC / "scripts" / "checkpatch.pl", patch], timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "total: 0 errors, 0 warnings" in proc.stdout, proc.stdout


@pytest.mark.parametrize("path", OWN_C_FILES)
def test_checkpatch_own_file(path):
    # checkpatch judges a file by its path from the tree's top
    proc = run([SRC / "scripts" / "checkpatch.pl", "-f", path],
               timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "total: 0 errors, 0 warnings" in proc.stdout, proc.stdout


def test_build_fixes_lead_the_series():
    """The baseline build takes the leading 'Downstream-Baseline: yes' patches."""
    marked = ["\nDownstream-Baseline: yes\n" in p.read_text() for p in PATCHES]
    assert marked == sorted(marked, reverse=True)


def test_cover_letter_lists_the_series():
    """patches/0000-cover-letter.patch is written, not git's template, and
    its shortlog is the series' subjects in order."""
    cover = (REPO / "patches" / COVER_LETTER).read_text()
    assert "*** SUBJECT HERE ***" not in cover
    assert "*** BLURB HERE ***" not in cover
    subjects = [" ".join(re.search(r"^Subject: \[PATCH\] (.*?)\n(?=\S)",
                                   p.read_text(), re.M | re.S)[1].split())
                for p in PATCHES]
    shortlog = re.search(r"^\S.* \((\d+)\):\n(.*?)\n\n", cover, re.M | re.S)
    assert int(shortlog[1]) == len(PATCHES)
    # git wraps a long subject onto lines indented further
    entries = re.split(r"\n(?=  \S)", shortlog[2])
    assert [" ".join(e.split()) for e in entries] == subjects
