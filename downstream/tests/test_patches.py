"""Every patch of the series, and every C file of our own, passes
upstream's scripts/checkpatch.pl."""

import subprocess

import pytest

from conftest import BUILD, REPO, run

PATCHES = sorted((REPO / "patches").glob("*.patch"))
OWN_C_FILES = subprocess.run(
    ["git", "-C", REPO, "ls-files", "--cached", "--others", "--exclude-standard",
     "*.c", "*.h"], capture_output=True, text=True, check=True).stdout.split()


@pytest.mark.parametrize("patch", PATCHES, ids=[p.name[:4] for p in PATCHES])
def test_checkpatch(patch):
    proc = run([BUILD / "src" / "scripts" / "checkpatch.pl", patch], timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "total: 0 errors, 0 warnings" in proc.stdout, proc.stdout


@pytest.mark.parametrize("path", OWN_C_FILES)
def test_checkpatch_own_file(path):
    # checkpatch judges a file by its path from the tree's top
    proc = run([BUILD / "src" / "scripts" / "checkpatch.pl", "-f", path],
               timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "total: 0 errors, 0 warnings" in proc.stdout, proc.stdout


def test_build_fixes_lead_the_series():
    """The baseline build takes the leading 'Downstream-Baseline: yes' patches."""
    marked = ["\nDownstream-Baseline: yes\n" in p.read_text() for p in PATCHES]
    assert marked == sorted(marked, reverse=True)
