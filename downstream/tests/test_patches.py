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


# From QEMU 10.1 a vCPU's fast TLB tables lie in reverse MMU-index order
# (mmuidx_to_fast_index()): neg.tlb.f[mmu_idx] compiles and reads another
# index's table.  Our code reaches them through cpu_tlb_fast() alone.
FAST_TLB_BY_INDEX = re.compile(r"\bneg\.tlb\.f\s*\[|\btlb\.f\s*\[")
MASTER_PATCHES = sorted((REPO / "patches" / "master").glob("0*.patch"))


def reads_fast_tlb_by_index(patch_text):
    """The lines that @patch_text adds which index the fast TLB tables."""
    return [line for line in patch_text.splitlines()
            if line.startswith("+") and not line.startswith("+++ ")
            and FAST_TLB_BY_INDEX.search(line)]


@pytest.mark.parametrize("patch", PATCHES + MASTER_PATCHES,
                         ids=[p.name[:4] for p in PATCHES + MASTER_PATCHES])
def test_fast_tlb_tables_only_through_cpu_tlb_fast(patch):
    assert not reads_fast_tlb_by_index(patch.read_text())


def test_fast_tlb_check_catches_an_index():
    """Negative control: the probe's line as 10.0.13's series had it."""
    assert reads_fast_tlb_by_index(
        "+        held = mask < cpu->neg.tlb.f[mmu_idx].mask ||\n"
        "+    CPUTLBDescFast *f = cpu_tlb_fast(cpu, mmu_idx);\n") == \
        ["+        held = mask < cpu->neg.tlb.f[mmu_idx].mask ||"]


# The series' fixes of upstream bugs, rewritten for upstream master as
# series of their own, which bin/check-upstream-stable checks there; the
# cover letters aside.  patches/upstream-stable: two of large-page
# flushing and one of range flushing, the series' patches 7 to 9;
# patches/upstream-stable-btype: three of PSTATE.BTYPE, patches 54 to 56.
UPSTREAM_SERIES = {
    "upstream-stable": (PATCHES[6:9], (
        "accel/tcg/cputlb.c", "tests/tcg/aarch64/system/tlb-block.c",
        "tests/tcg/aarch64/system/tlb-range.c", "MAINTAINERS")),
    "upstream-stable-btype": (PATCHES[53:56], (
        "target/arm/tcg/translate-a64.c", "target/arm/tcg/op_helper.c",
        "tests/tcg/aarch64/system/btype.c", "MAINTAINERS")),
}


def upstream_series(name):
    """The patches of patches/@name, without the cover letter."""
    return sorted((REPO / "patches" / name).glob("0*.patch"))[1:]


STABLE = [p for name in UPSTREAM_SERIES for p in upstream_series(name)]


def changed_lines(patches, path):
    """The lines that @patches remove from and add to @path, in order: the
    change without its context, which master and 10.2.2 may differ in."""
    lines, current = [], None
    for patch in patches:
        for line in patch.read_text().splitlines():
            if line.startswith("diff --git "):
                current = line.split(" b/", 1)[1]
            elif current == path and line[:1] in ("+", "-") and \
                    not line.startswith(("+++ ", "--- ")):
                lines.append(line)
    return lines


@pytest.mark.parametrize("name,path", [
    (name, path) for name, (_, paths) in UPSTREAM_SERIES.items()
    for path in paths])
def test_upstream_stable_makes_the_series_changes(name, path):
    """The fixes for master change what the series' own fixes change,
    line for line: when one is mended, so must the other be."""
    fixes = UPSTREAM_SERIES[name][0]
    stable = upstream_series(name)
    assert len(stable) == len(fixes)
    assert all("\nFixes: " in p.read_text() for p in fixes + stable)
    assert changed_lines(stable, path)
    assert changed_lines(stable, path) == changed_lines(fixes, path)


@pytest.mark.parametrize("patch", STABLE,
                         ids=[f"{p.parent.name}-{p.name[:4]}" for p in STABLE])
def test_checkpatch_upstream_stable(patch):
    """The fixes for upstream master pass this tree's checkpatch too (and
    master's, when bin/check-upstream-stable was last run)."""
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


# The patch that turns relaxed maintenance on by default: a reviewer, and
# git bisect, meet every mechanism of the series before it.
DEFAULT_FLIP = "+    s->tlb_flush = TCG_TLB_FLUSH_AUTO;"


def default_flips(patch_texts):
    """Indexes of the patches in @patch_texts that make auto the default."""
    return [i for i, text in enumerate(patch_texts)
            if DEFAULT_FLIP in text.splitlines()]


def test_the_default_flip_is_the_last_patch():
    texts = [p.read_text() for p in PATCHES]
    assert default_flips(texts) == [len(texts) - 1]


def test_the_flip_check_sees_a_patch_after_the_default():
    """Negative control: the order of 2026-11-29, where the three
    tlb-broadcast tests and parking came after the flip."""
    texts = [p.read_text() for p in PATCHES]
    texts.insert(-4, texts.pop())
    assert default_flips(texts) == [len(texts) - 5]


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
