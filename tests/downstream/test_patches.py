"""Every patch of the series passes upstream's scripts/checkpatch.pl."""

import pytest

from conftest import BUILD, REPO, run

PATCHES = sorted((REPO / "patches").glob("*.patch"))


@pytest.mark.parametrize("patch", PATCHES, ids=[p.name[:4] for p in PATCHES])
def test_checkpatch(patch):
    proc = run([BUILD / "src" / "scripts" / "checkpatch.pl", patch], timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "total: 0 errors, 0 warnings" in proc.stdout, proc.stdout


def test_build_fixes_lead_the_series():
    """The baseline build takes the leading 'Downstream-Baseline: yes' patches."""
    marked = ["\nDownstream-Baseline: yes\n" in p.read_text() for p in PATCHES]
    assert marked == sorted(marked, reverse=True)
