"""TB lookups counted by what made them (-accel tcg,x-lookup-stats=on):
patch "accel/tcg: count TB lookups by what made them, with
x-lookup-stats" counts them, and "target/arm: say which AArch64 exit
looks up the next TB" names the exits.  downstream/guest/lookup-sources.S
makes ROUNDS lookups of each kind (two direct branches a round); the
counts must say so, source by source.

Negative control: a build whose translate-a64.c names no exit (patch
"target/arm: say which AArch64 exit..." reverted there alone) counts
every one as "other" and fails the first test; upstream QEMU and the
build before the patches refuse the property and fail them all."""

import pytest

from conftest import PAUSED, guest_kernel, settled_counters
from harness.machine import VIRT, run_qemu

# lookup-sources.S's ROUNDS.
ROUNDS = 1000
# Lookups a source may make besides the guest program's: QEMU's boot stub
# enters the kernel with a BR, and a TB may be entered once more after an
# exit to the main loop.
SLACK = 2


def lookups(qemu, guest, tmp_path, *accel,
            keys=("jc_lookups_call", "jc_lookups_branch")):
    """info jit's counters once lookup-sources.S has run its rounds."""
    g = guest(qemu, *accel, board=[
        *VIRT, "-kernel", guest_kernel("lookup-sources", tmp_path)])
    return settled_counters(g, keys=keys)


def test_lookups_are_counted_by_source(qemu, guest, tmp_path):
    """Each round makes one call, one return, one jump, two branches to
    another page and one fall-through past a page's end, and each site's
    TB is in the jump cache from the second round on: only the first
    round misses."""
    n = lookups(qemu, guest, tmp_path, "-accel", "tcg,x-lookup-stats=on")
    made = {k: n.get(k) for k in n if k.startswith("jc_lookup")}
    per_round = {"call": 1, "return": 1, "jump": 1, "branch": 2,
                 "page_end": 1}
    for source, count in per_round.items():
        lookups_made = n[f"jc_lookups_{source}"]
        assert count * ROUNDS <= lookups_made <= count * ROUNDS + SLACK, made
        assert n[f"jc_lookup_misses_{source}"] <= count * SLACK, made
    assert n["jc_lookups_other"] <= SLACK, made
    assert n["jc_lookups_main_loop"] > 0, made


def test_a_tb_that_may_not_chain_looks_up_as_other(qemu, guest, tmp_path):
    """With one-insn-per-tb no TB chains: a direct branch, or the step to
    the next instruction, is neither a branch nor a page end but "other"
    (five a round, and the spin at the end), while the indirect branches
    keep their names."""
    n = lookups(qemu, guest, tmp_path,
                "-accel", "tcg,one-insn-per-tb=on,x-lookup-stats=on",
                keys=("jc_lookups_call", "jc_lookups_return"))
    made = {k: n.get(k) for k in n if k.startswith("jc_lookups")}
    for source in ("call", "return", "jump"):
        assert ROUNDS <= n[f"jc_lookups_{source}"] <= ROUNDS + SLACK, made
    assert n["jc_lookups_branch"] == n["jc_lookups_page_end"] == 0, made
    assert n["jc_lookups_other"] >= 5 * ROUNDS, made


def test_lookups_are_not_counted_by_default(qemu, guest, tmp_path):
    """Without x-lookup-stats, info jit has no lookup lines, and the
    generated code calls the helper without a source."""
    n = lookups(qemu, guest, tmp_path, keys=("jc_misses", "tb_count"))
    assert not [k for k in n if k.startswith("jc_lookup")], n


@pytest.mark.parametrize("value", ["yes please", ""])
def test_lookup_stats_refuses_what_is_not_a_bool(qemu, value):
    proc = run_qemu(qemu, [*PAUSED, "-accel", f"tcg,x-lookup-stats={value}"],
                    timeout=30)
    assert proc.returncode == 1, proc
    assert "x-lookup-stats" in proc.stderr, proc.stderr
