"""Relaxed broadcast TLB maintenance, "-accel tcg,tlb-flush=relaxed", the
default for Arm guests.  The bare-metal multi-vCPU checks are tests/tcg's
run-tlb-broadcast-* cases (test_tcg); these cover the option and its
default, "info jit", the negative controls of those checks (no TLBI; a
barrier that does not wait; a final DSB NSH) and Linux guests doing real
munmap/mprotect/fork work."""

import json
import os
import re
import shlex

import pytest

from conftest import PAUSED, run, tcg_tests
from harness import tlbscale, workloads
from harness.machine import VIRT, Guest, run_qemu
from harness.paths import BUILD, GUEST, QEMU_BUILD

M_PROFILE = ["-M", "mps2-an385", "-S"]


def test_unknown_mode_is_an_error(qemu):
    proc = run_qemu(qemu, [*PAUSED, "-accel", "tcg,tlb-flush=lazy"],
                    timeout=60)
    assert proc.returncode != 0
    assert "Parameter 'tlb-flush' does not accept value 'lazy'" in proc.stderr


def test_help_lists_the_option(qemu):
    assert "tlb-flush=auto|strict|relaxed" in \
        run_qemu(qemu, ["-help"], timeout=60).stdout


def test_default_is_relaxed_for_arm(qemu, guest):
    assert guest(qemu, "-smp", "2").jit_info().tlb_flush_mode == "relaxed"


def shut_down(g):
    """Stop Guest @g; return what QEMU wrote to stdout and stderr."""
    g.shutdown()
    return g.get_log()


def test_m_profile_board_starts_strict(qemu, guest):
    """Cortex-M CPUs cannot do relaxed maintenance: by default such a board
    still starts, in strict mode; an explicit request is refused."""
    assert guest(qemu, board=M_PROFILE).jit_info().tlb_flush_mode == "strict"
    proc = run_qemu(qemu, [*M_PROFILE, "-display", "none", "-monitor",
                           "none", "-accel", "tcg,tlb-flush=relaxed"],
                    timeout=60)
    assert proc.returncode != 0
    assert "tlb-flush=relaxed is not supported by CPU type cortex-m3" \
        in proc.stderr


def test_summary_only_needs_relaxed_mode(qemu):
    proc = run_qemu(qemu, [*PAUSED, "-accel",
                           "tcg,tlb-flush=strict,x-tlb-probe=off"],
                    timeout=60)
    assert proc.returncode != 0
    assert "x-tlb-probe=off needs tlb-flush=relaxed" in proc.stderr


def test_broken_barrier_needs_relaxed_mode(qemu):
    proc = run_qemu(qemu, [*PAUSED, "-accel",
                           "tcg,tlb-flush=strict,x-tlb-barrier=off"],
                    timeout=60)
    assert proc.returncode != 0
    assert "x-tlb-barrier=off needs tlb-flush=relaxed" in proc.stderr


def test_broken_barrier_is_reported_where_the_default_is_strict(qemu, guest):
    """x-tlb-barrier=off cannot take effect on a board that stays strict
    or under icount: QEMU says so instead of ignoring it."""
    g = guest(qemu, "-accel", "tcg,x-tlb-barrier=off", board=M_PROFILE)
    assert g.jit_info().tlb_flush_mode == "strict"
    assert "x-tlb-barrier=off has no effect: CPU type cortex-m3-arm-cpu " \
        "needs tlb-flush=strict" in shut_down(g)
    g = guest(qemu, "-S", "-icount", "shift=0", "-accel",
              "tcg,x-tlb-barrier=off")
    assert "x-tlb-barrier=off has no effect with icount or record/replay" \
        in shut_down(g)


@pytest.mark.parametrize("mode", ["icount", "rr=record"])
def test_icount_defaults_to_strict(qemu, guest, mode, tmp_path):
    icount = "shift=0" if mode == "icount" else \
        f"shift=0,rr=record,rrfile={tmp_path / 'replay.bin'}"
    g = guest(qemu, "-icount", icount)
    assert g.jit_info().tlb_flush_mode == "strict"
    assert "tlb-flush" not in shut_down(g)


@pytest.mark.parametrize("mode", ["icount", "rr=record"])
def test_icount_falls_back_to_strict(qemu, guest, mode, tmp_path):
    icount = "shift=0" if mode == "icount" else \
        f"shift=0,rr=record,rrfile={tmp_path / 'replay.bin'}"
    g = guest(qemu, "-accel", "tcg,tlb-flush=relaxed", "-icount", icount)
    assert g.jit_info().tlb_flush_mode == "strict"
    assert "tlb-flush=relaxed is not supported with icount or " \
        "record/replay; using tlb-flush=strict" in shut_down(g)


@pytest.mark.parametrize("mode", ["strict", "relaxed"])
def test_info_jit_reports_mode(qemu, guest, mode):
    jit = guest(qemu, "-smp", "2", "-accel", f"tcg,tlb-flush={mode}") \
        .jit_info()
    assert jit.tlb_flush_mode == mode
    assert ("TLB barrier waits" in jit.values) == (mode == "relaxed")


def test_barrier_policy_is_decided_at_run_time_not_at_start(qemu, guest):
    """Whether a barrier polls depends on the waits each vCPU sees, not on
    -smp against QEMU's CPU affinity at start-up, which cannot see a busy
    host: every vCPU starts polling, however many there are."""
    usable = sorted(os.sched_getaffinity(0))
    n = len(usable)
    for smp, cpus in ((n, None), (n + 1, None), (2, str(usable[0]))):
        jit = guest(qemu, "-S", "-smp", str(smp),
                    wrapper=["taskset", "-c", cpus] if cpus else ()) \
            .jit_info()
        assert jit.barrier_policy == \
            "poll up to 50 us while waits are that short, else sleep at " \
            f"once ({smp} of {smp} vCPUs poll now)", jit.text
        assert jit.polling_vcpus == (smp, smp)


@pytest.mark.parametrize("args, why", [
    ([], "relaxed (auto: every CPU supports relaxed)"),
    (["-accel", "tcg,tlb-flush=auto"],
     "relaxed (auto: every CPU supports relaxed)"),
    (["-accel", "tcg,tlb-flush=relaxed"], "relaxed (tlb-flush=relaxed)"),
    (["-accel", "tcg,tlb-flush=strict"], "strict (tlb-flush=strict)"),
    (["-icount", "shift=0"], "strict (icount or record/replay)"),
    (["-M", "mps2-an385"],
     "strict (auto: CPU type cortex-m3-arm-cpu needs strict)"),
])
def test_info_jit_says_why_the_mode_is_in_force(qemu, guest, args, why):
    board = [] if "-M" in args else None
    jit = guest(qemu, "-S", *args, board=board).jit_info()
    assert f"{jit.tlb_flush_mode} ({jit.tlb_flush_reason})" == why, jit.text


def broadcast_test(tmp_path, *cflags, variant=""):
    """Build tests/tcg's tlb-broadcast, or its tlbscale.VARIANTS
    @variant, with extra CFLAGS."""
    tcg_tests()
    out = tmp_path / "tlb-broadcast"
    proc = tlbscale.build(variant, out, *cflags)
    assert proc.returncode == 0, proc.stderr
    return out


def run_broadcast(qemu, kernel, smp, mode, variant="", append=None):
    return run_qemu(qemu, tlbscale.tlb_test_args(variant, kernel, smp, mode,
                                                 append), timeout=300)


def outcomes(stdout):
    """{test name: "PASS" or "FAIL"} from tlb-broadcast's output."""
    return {m[2]: m[1] for m in tlbscale.RESULT.finditer(stdout)}


def probe_tests(outcome):
    """The cases whose probes race the issuer's DSB and ran."""
    return {name: res for name, res in outcome.items()
            if tlbscale.racing(name) and res != "SKIP"}


# Runs a negative control that races the DSB gets.  One run on a loaded
# 2-CPU host can miss a race: CI once saw "stores: break-before-make" of
# tlb-broadcast-s2 pass with x-tlb-barrier=off while its other racing
# cases failed.
RACING_TRIES = 3


def assert_every_racing_case_fails(run_test, n_racing):
    """Negative control: each of the @n_racing racing cases of the test
    that @run_test runs fails in one of RACING_TRIES runs at most, and each
    run's exit status says whether it failed; return the last run's
    process."""
    failed = set()
    for _ in range(RACING_TRIES):
        proc = run_test()
        outcome = probe_tests(outcomes(proc.stdout))
        assert len(outcome) == n_racing, proc.stdout
        assert (proc.returncode != 0) == ("FAIL" in outcome.values()), \
            proc.stdout
        failed |= {name for name, res in outcome.items() if res == "FAIL"}
        if len(failed) == n_racing:
            return proc
    assert failed == set(outcome), proc.stdout
    return proc


# Per build of tlb-broadcast (tlbscale.VARIANTS): its first case and how
# many of its cases race the issuer's DSB at -smp 2 (where the two that
# need a third vCPU skip).
BROADCAST_CASES = {
    "": ("loads: one page, VAE1IS", 9),
    "s2": ("loads: one page, IPAS2E1IS, VMALLE1IS", 7),
    "fb": ("loads: one page, VAE1 under HCR_EL2.FB+BSU", 9),
}
VARIANT_IDS = {"ids": lambda v: v or "el1"}


@pytest.mark.parametrize("variant", BROADCAST_CASES, **VARIANT_IDS)
@pytest.mark.parametrize("mode", ["strict", "relaxed"])
def test_broadcast_check_fails_without_tlbi(qemu, tmp_path, mode, variant):
    """Negative control: without its TLBIs, tlb-broadcast must fail, in
    its first case and in the one whose readers their own timers wake."""
    first_case, _ = BROADCAST_CASES[variant]
    proc = run_broadcast(qemu, broadcast_test(tmp_path, "-DNO_TLBI",
                                              variant=variant),
                         2, mode, variant)
    assert proc.returncode != 0, proc.stdout
    outcome = outcomes(proc.stdout)
    timer_cases = [name for name in outcome if "by a timer" in name]
    assert outcome[first_case] == "FAIL"
    assert len(timer_cases) == 1, proc.stdout
    assert outcome[timer_cases[0]] == "FAIL", proc.stdout


@pytest.mark.parametrize("mode", ["strict", "relaxed"])
def test_broadcast_s2_stage1_table_case_needs_ipas2e1is(qemu, tmp_path,
                                                        mode):
    """Negative control of the stage-2 entries that QEMU keeps for stage-1
    table walks: without its IPAS2E1IS, tlb-broadcast-s2's "stage-1 table"
    case fails, and it alone, in either mode; every other case's stale
    entries are the combined ones that VMALLE1IS drops."""
    proc = run_broadcast(qemu, broadcast_test(tmp_path, "-DNO_IPAS2E1IS",
                                              variant="s2"),
                         2, mode, "s2")
    failed = {name for name, res in outcomes(proc.stdout).items()
              if res == "FAIL"}
    assert failed == {"loads: stage-1 table remapped, IPAS2E1IS, VMALLE1IS"}, \
        proc.stdout
    assert proc.returncode != 0


def test_broadcast_check_other_writer_fails_if_the_barrier_does_not_wait(
        qemu, tmp_path):
    """Negative control of the case that needs a third vCPU, where CPU 1
    writes the PTE that CPU 0 invalidates: at -smp 4 with
    x-tlb-barrier=off it fails, in one of RACING_TRIES runs at most."""
    kernel = broadcast_test(tmp_path, "-DITERATIONS=50")
    for _ in range(RACING_TRIES):
        proc = run_broadcast(qemu, kernel, 4, "relaxed,x-tlb-barrier=off")
        if outcomes(proc.stdout)["loads: PTE written by CPU 1, VAE1IS"] == \
                "FAIL":
            return
    pytest.fail(proc.stdout)


@pytest.mark.parametrize("variant", BROADCAST_CASES, **VARIANT_IDS)
def test_broadcast_check_fails_if_the_barrier_does_not_wait(qemu, tmp_path,
                                                            variant):
    """Negative control: with x-tlb-barrier=off every test whose probe
    races the DSB fails; strict mode with the same binary passes
    (run-tlb-broadcast[-s2|-fb]-smp2-strict)."""
    _, n_racing = BROADCAST_CASES[variant]
    kernel = broadcast_test(tmp_path, variant=variant)
    assert_every_racing_case_fails(
        lambda: run_broadcast(qemu, kernel, 2, "relaxed,x-tlb-barrier=off",
                              variant), n_racing)


@pytest.mark.parametrize("variant", ["", "s2"], **VARIANT_IDS)
@pytest.mark.parametrize("mode", ["strict", "relaxed"])
def test_broadcast_check_sees_a_final_dsb_nsh(qemu, tmp_path, mode, variant):
    """A DSB NSH does not complete broadcast maintenance: built with one in
    place of the final DSB ISH, tlb-broadcast must fail in relaxed mode,
    in every racing test, and pass in strict mode, which completes each
    TLBI at once.  So the tests see a missing wait, not a missing TLBI.
    The same holds for the barrier at EL2 of tlb-broadcast-s2."""
    _, n_racing = BROADCAST_CASES[variant]
    kernel = broadcast_test(tmp_path, '-DFINAL_DSB="dsb nsh"',
                            variant=variant)

    def run_test():
        return run_broadcast(qemu, kernel, 2, mode, variant)
    if mode == "strict":
        proc = run_test()
        assert len(probe_tests(outcomes(proc.stdout))) == n_racing, \
            proc.stdout
        assert proc.returncode == 0, proc.stdout
    else:
        proc = assert_every_racing_case_fails(run_test, n_racing)
    assert "final dsb nsh" in proc.stdout


@pytest.mark.parametrize("mode", ["strict", "relaxed", "auto"])
@pytest.mark.parametrize("barrier", ["0xee070f9a", "0xf57ff04b"],
                         ids=["cp15-dsb", "a32-dsb-ish"])
def test_broadcast_check_with_an_aarch32_barrier(qemu, tmp_path, mode,
                                                 barrier):
    """The final barrier run at AArch32 EL0: the CP15 barrier "mcr p15, 0,
    r0, c7, c10, 4" that Linux built for ARMv6 and v7 emits as dsb(), and
    the A32 "dsb ish".  Before the CP15 barrier called tlb_flush_barrier()
    every racing case failed in relaxed mode.  "auto" decides the mode
    after the CPUs' registers are defined: a CP15 barrier chosen by the
    mode at that point would do nothing there."""
    proc = run_broadcast(qemu, broadcast_test(tmp_path, "-DITERATIONS=50",
                                              f"-DFINAL_DSB_A32={barrier}"),
                         2, mode)
    assert f"final AArch32 EL0 {barrier}" in proc.stdout
    assert len(probe_tests(outcomes(proc.stdout))) == \
        BROADCAST_CASES[""][1], proc.stdout
    assert proc.returncode == 0, proc.stdout


# Every broadcast's targets park at their next TB boundary for
# x-tlb-park-us (200 us by default):
# what the default does while waits for vCPUs that the host preempted
# take half of the issuer's time (tcg-tlb-relaxed.rst, "Parking").
PARK_ON = "relaxed,x-tlb-park=on"


def run_parking(qemu, tmp_path, variant, kernel, mode, append=None):
    """Run TLB test @kernel at -smp 4 with tlb-flush=@mode, tracing each
    park; return the process and how many times vCPUs parked."""
    log = tmp_path / "park.log"
    proc = run_qemu(qemu, [*tlbscale.tlb_test_args(variant, kernel, 4, mode,
                                                   append),
                           "-trace", "tlb_relaxed_park", "-D", str(log)],
                    timeout=300)
    return proc, log.read_text().count("tlb_relaxed_park ")


@pytest.mark.parametrize("variant", BROADCAST_CASES, **VARIANT_IDS)
def test_broadcast_check_passes_with_targets_parking(qemu, tmp_path,
                                                     variant):
    """With every target parking, tlb-broadcast passes at -smp 4, each
    vCPU's translations as fresh as without (the negative control is the
    next test), and its targets did park."""
    proc, parks = run_parking(qemu, tmp_path, variant,
                              broadcast_test(tmp_path, variant=variant),
                              PARK_ON)
    assert proc.returncode == 0, proc.stdout
    assert "FAIL" not in outcomes(proc.stdout).values(), proc.stdout
    assert parks > 100, parks


def test_broadcast_check_fails_while_parking_if_the_barrier_does_not_wait(
        qemu, tmp_path):
    """Negative control of the test above: parking targets, with a barrier
    that does not wait, every racing case fails."""
    _, n_racing = BROADCAST_CASES[""]
    kernel = broadcast_test(tmp_path)
    assert_every_racing_case_fails(
        lambda: run_broadcast(qemu, kernel, 2,
                              PARK_ON + ",x-tlb-barrier=off"), n_racing)


@pytest.mark.parametrize("variant", ["random", "random-s2"])
def test_random_seeds_pass_with_targets_parking(qemu, tmp_path, variant):
    """tlb-random at -smp 4 with every target parking, over a quarter of
    SWEEP_SEEDS: loads, fetches and stores agree with the software walk."""
    for seed in SWEEP_SEEDS[::4]:
        proc, parks = run_parking(qemu, tmp_path, variant,
                                  random_test(variant), PARK_ON,
                                  f"seed={seed} rounds=100")
        assert proc.returncode == 0, proc.stdout
        assert parks > 0, seed


@pytest.mark.parametrize("setting, error", [
    ("x-tlb-park=maybe",
     "Parameter 'x-tlb-park' does not accept value 'maybe'"),
    ("x-tlb-park=on,tlb-flush=strict", "x-tlb-park needs tlb-flush=relaxed"),
    ("x-tlb-park=off,tlb-flush=strict", "x-tlb-park needs tlb-flush=relaxed"),
    ("x-tlb-park-us=0", "x-tlb-park-us must be between 1 and 10000"),
    ("x-tlb-park-us=10001", "x-tlb-park-us must be between 1 and 10000"),
    ("x-tlb-park-us=-5", "Parameter 'x-tlb-park-us' expects uint32_t"),
    ("x-tlb-park-us=soon", "Parameter 'x-tlb-park-us' expects"),
    ("x-tlb-park-us=500,tlb-flush=strict",
     "x-tlb-park-us needs tlb-flush=relaxed"),
])
def test_bad_park_settings_are_errors(qemu, setting, error):
    proc = run_qemu(qemu, [*PAUSED, "-accel", f"tcg,{setting}"], timeout=60)
    assert proc.returncode != 0
    assert error in proc.stderr


@pytest.mark.parametrize("accel, park", [
    ("tcg", "auto"), ("tcg,x-tlb-park=on", "on"),
    ("tcg,x-tlb-park=off", "off"),
    ("tcg,x-tlb-park=on,thread=single", "off"),
])
def test_info_jit_reports_parking(qemu, guest, accel, park):
    """Round-robin TCG runs every vCPU on one thread, which must not
    sleep for another vCPU's barrier: there, nothing parks, and asking
    for it says so."""
    g = guest(qemu, "-S", "-smp", "2", "-accel", accel)
    assert g.jit_info().values["TLB parks"] == \
        f"0 (0 us in all; x-tlb-park={park}, 200 us)"
    warned = "x-tlb-park=on has no effect without MTTCG " \
        "(thread=single or icount)" in shut_down(g)
    assert warned == accel.endswith("thread=single")


@pytest.mark.parametrize("accel, warns", [
    ("tcg,x-tlb-park-us=50", False),
    ("tcg,x-tlb-park-us=50,x-tlb-park=off", True),
    ("tcg,x-tlb-park-us=50,thread=single", True),
])
def test_park_length_without_parking_warns(qemu, guest, accel, warns):
    g = guest(qemu, "-S", "-smp", "2", "-accel", accel)
    assert g.jit_info().values["TLB parks"].endswith(", 50 us)")
    warned = "x-tlb-park-us has no effect without parking" in shut_down(g)
    assert warned == warns


def test_parks_last_the_length_asked_for(qemu, tmp_path):
    """Every park traced while tlb-broadcast runs with x-tlb-park-us=3000
    lasted at least 3 ms (the default's 200 us parks would not)."""
    proc, parks = run_parking(qemu, tmp_path, "", broadcast_test(tmp_path),
                              PARK_ON + ",x-tlb-park-us=3000")
    assert proc.returncode == 0, proc.stdout
    parked_ns = [int(ns) for ns in re.findall(
        r"tlb_relaxed_park .* (\d+) ns", (tmp_path / "park.log").read_text())]
    assert len(parked_ns) == parks > 10, parked_ns
    assert min(parked_ns) >= 3_000_000, min(parked_ns)


def test_park_on_a_board_that_stays_strict_warns(qemu, guest):
    g = guest(qemu, "-accel", "tcg,x-tlb-park=on", board=M_PROFILE)
    assert g.jit_info().tlb_flush_mode == "strict"
    assert "x-tlb-park=on has no effect: CPU type cortex-m3-arm-cpu " \
        "needs tlb-flush=strict" in shut_down(g)


# tests/tcg's tlb-random, per granule (tlbscale.VARIANTS).
RANDOM_VARIANTS = ["random", "random-16k", "random-64k", "random-s2"]


def random_test(variant):
    return tcg_tests() / tlbscale.VARIANTS[variant].binary


def run_random(qemu, variant, mode, append):
    return run_broadcast(qemu, random_test(variant), 2, mode, variant,
                         append)


@pytest.mark.parametrize("variant", RANDOM_VARIANTS)
@pytest.mark.parametrize("mode", ["strict", "relaxed"])
def test_random_check_fails_without_tlbi(qemu, mode, variant):
    """Negative control: without its TLBIs, every case of tlb-random fails,
    scripted and random alike."""
    proc = run_random(qemu, variant, mode, "drop-tlbi rounds=50")
    outcome = outcomes(proc.stdout)
    assert len(outcome) >= 11, proc.stdout
    assert set(outcome.values()) == {"FAIL"}, proc.stdout
    assert proc.returncode != 0


@pytest.mark.parametrize("variant", RANDOM_VARIANTS)
@pytest.mark.parametrize("knob", ["x-tlb-barrier=off", "dsb-nsh"])
def test_random_check_fails_if_the_barrier_does_not_wait(qemu, knob,
                                                         variant):
    """Negative control: with a barrier that does not wait, or with a DSB
    NSH for the round's last barriers, every racing case of tlb-random
    fails in relaxed mode, its random rounds too (200 here saw 29 to 174
    errors at -smp 2 and 4); with the DSB NSH, strict mode, which
    completes every TLBI at once, passes."""
    mode, append = ("relaxed,x-tlb-barrier=off", "") \
        if knob == "x-tlb-barrier=off" else ("relaxed", "dsb-nsh")
    assert_every_racing_case_fails(
        lambda: run_random(qemu, variant, mode, f"{append} rounds=200"), 4)
    if knob == "dsb-nsh":
        proc = run_random(qemu, variant, "strict", "dsb-nsh rounds=200")
        assert "final DSB NSH" in proc.stdout
        assert proc.returncode == 0, proc.stdout


# Seeds that each run of the suite tries, in every variant and mode:
# seed 8 found a stale translation that tests/tcg's default seed and
# the scripted cases missed (patch "accel/tcg: clear the jump cache when
# a flush forgets a large page").  A run takes about half a second.
SWEEP_SEEDS = range(1, 17)


@pytest.mark.parametrize("variant", RANDOM_VARIANTS)
@pytest.mark.parametrize("mode", ["strict", "relaxed"])
def test_random_seeds_pass(qemu, mode, variant):
    """tlb-random over SWEEP_SEEDS, 100 rounds each, at -smp 2: every
    load, fetch and store agrees with the software walk.  Without the
    jump-cache fix, relaxed "random" fails at seed 8 and only there (the
    binary before it, run by hand); the tests above make the check fail
    without TLBIs or with a barrier that does not wait."""
    failed = {}
    for seed in SWEEP_SEEDS:
        proc = run_random(qemu, variant, mode, f"seed={seed} rounds=100")
        if proc.returncode != 0:
            failed[seed] = [line for line in proc.stdout.splitlines()
                            if "FAIL" in line or "errors;" in line]
    assert not failed, failed


def test_random_seed_replays_its_tlbis(qemu):
    """The seed fixes a run's changes and TLBIs, whatever the timing: two
    runs with one seed issue the same TLBIs, another seed others."""
    def tlbis(seed):
        proc = run_random(qemu, "random", "relaxed", f"seed={seed} rounds=40")
        assert proc.returncode == 0, proc.stdout
        return re.search(r"^PASS: random rounds .*TLBIs:(.*)\)$",
                         proc.stdout, re.M)[1]
    assert tlbis(7) == tlbis(7) != tlbis(8)


def test_tlb_relaxed_builds_for_32_bit_hosts(tmp_path):
    """32-bit hosts still build 32-bit guests, and every softmmu target
    links tlb-relaxed.c.  Compile it as build/qemu does, but with -m32 and
    an i386 host configuration: 64-bit generations must go through
    QEMU's 64-bit atomic helpers (qatomic_load_acquire() on a uint64_t
    trips QEMU's build assertion there)."""
    commands = json.loads((BUILD / "qemu" / "compile_commands.json")
                          .read_text())
    entry = next(c for c in commands
                 if c["file"].endswith("accel/tcg/tlb-relaxed.c"))
    config = (BUILD / "qemu" / "config-host.h").read_text()
    config = re.sub(r"^#define (CONFIG_INT128|CONFIG_INT128_TYPE|"
                    r"CONFIG_ATOMIC128|CONFIG_CMPXCHG128)\b.*$", "", config,
                    flags=re.M)
    (tmp_path / "config-host.h").write_text(
        config.replace("#define HOST_X86_64 1", "#define HOST_I386 1"))
    args = shlex.split(entry["command"])
    args = [a for i, a in enumerate(args)
            if a not in ("-MD", "-MQ", "-MF", "-o") and
            args[i - 1] not in ("-MQ", "-MF", "-o")]
    args = [f"-I{tmp_path}" if a == "-m64" else a for a in args]
    args[args.index("-iquote"):args.index("-iquote")] = ["-iquote", tmp_path]
    # libc6-dev-i386 has the 32-bit C library headers; gcc-multilib, whose
    # /usr/include/asm link they need, conflicts with Debian's cross
    # compilers, so point at the kernel headers' directory directly.
    proc = run([*args, "-m32", "-idirafter", "/usr/include/x86_64-linux-gnu",
                "-o", "/dev/null"], cwd=entry["directory"])
    assert proc.returncode == 0, proc.stderr[-3000:]


def need_guest():
    for f in ("vmlinuz", "initrd.cpio"):
        if not (GUEST / f).is_file():
            pytest.skip(f"no {GUEST / f}; run 'make guest'")


def linux(qemu, smp, mode, init_args, timeout=300):
    need_guest()
    return run_qemu(qemu, [*tlbscale.BOARD, "-m", "1G", "-serial", "stdio",
                           "-no-reboot", "-smp", str(smp),
                           "-accel", f"tcg,tlb-flush={mode}",
                           "-kernel", GUEST / "vmlinuz",
                           "-initrd", GUEST / "initrd.cpio",
                           "-append", "console=ttyAMA0 panic=-1 quiet " +
                           init_args], timeout=timeout)


@pytest.mark.parametrize("mode", ["strict", "relaxed",
                                  "relaxed,thread=single", PARK_ON])
def test_linux_stress(qemu, mode):
    """Threads remapping, mprotecting and forking with data checks; with
    round-robin TCG the other vCPUs are inactive and catch up on entry."""
    proc = linux(qemu, 4, mode, "rdinit=/tlb-stress -- 8")
    assert re.search(r"STRESS PASS 4 CPUs, \d+ rounds", proc.stdout), \
        proc.stdout[-3000:]


def test_linux_micro_benchmarks_run(qemu):
    """The benchmark's guest side, as a smoke test (no timing asserted)."""
    proc = linux(qemu, 2, "relaxed", "rdinit=/tlb-bench")
    results = re.findall(r"^RESULT (\w+) 2 (\d+) \d+ (\d+) (\d+) \d+$",
                         proc.stdout, re.M)
    assert [r[0] for r in results] == ["mprotect", "munmap", "fork"], \
        proc.stdout[-3000:]
    for op, mean, p50, p99 in results:
        assert 0 < int(p50) <= int(p99), op     # median, 99th percentile


def test_flushes_skip_vcpus_that_cannot_hold_the_page(qemu, tmp_path):
    """tlb-bench's mprotect at -smp 2: the other vCPU keeps reading pages
    of its own and never touches the page that CPU 0 mprotects, so most
    broadcasts queue nothing for it ("filtered out" in info jit).  Runs
    here filtered out 59-99% of them (less when the guest migrated the
    threads); without targeted flushes, none."""
    need_guest()
    g = Guest(qemu, [*VIRT, "-smp", "2", "-m", "1G", "-no-shutdown",
                     "-kernel", GUEST / "vmlinuz",
                     "-initrd", GUEST / "initrd.cpio",
                     "-append", "console=ttyAMA0 panic=-1 quiet "
                     "rdinit=/tlb-bench -- mprotect"], log_dir=str(tmp_path))
    g.launch()
    try:
        seconds, why = g.wait_shutdown(300)
        assert seconds is not None, why
        jit = g.jit_info()
    finally:
        g.shutdown()
    assert "RESULT mprotect 2 " in g.console()
    counters = jit.counters()
    assert "tlb_relaxed_flushes" in counters, jit.text
    assert "tlb_filtered_out" in counters, jit.text
    assert counters["tlb_filtered_out"] > \
        counters["tlb_relaxed_flushes"] / 4, jit.text


def counters_during(qemu, op, accel="tcg"):
    """The info jit counters that changed while tlb-bench ran @op at -smp
    2 (CPU 0 timing it, CPU 1 running the other thread)."""
    need_guest()
    return workloads.op_counters(qemu, 2, accel, op)


def test_adjacent_page_users_are_not_waited_for(qemu):
    """The other thread writes the page that the next mmap() returned,
    right below the one CPU 0 mprotects, in its 64 KiB summary chunk: the
    summary's 4 KiB units, or a probe of that vCPU's TLB, find no entry of
    the mprotected page, so the broadcasts queue for nobody and no DSB
    waits (at most a few of the guest's other broadcasts may).  Negative
    control: test_users_of_the_page_are_waited_for, the same measurement
    with the other vCPUs reading the page itself."""
    n = counters_during(qemu, "mprotect-adjacent-write")
    assert n["tlb_relaxed_flushes"] > 500, n
    assert n["tlb_alone"] >= 0.98 * n["tlb_relaxed_flushes"], n
    assert n["tlb_barrier_waits"] <= 0.01 * n["tlb_relaxed_flushes"], n


def test_adjacent_page_users_are_told_apart_without_the_probe(qemu):
    """With x-tlb-probe=off the summary alone tells the two pages apart,
    by their 4 KiB units: the probe is left for entries that a vCPU
    evicted and units whose hashes collide (test-tlb-relaxed-par).  A
    boot where a unit of the other vCPU's collides with the page's queues
    for it at every broadcast (the boots that probe at every broadcast in
    test_scripts' tlb-count, 2 of 20), so one of up to three boots must
    keep 98% of its broadcasts alone."""
    for _ in range(3):
        n = counters_during(qemu, "mprotect-adjacent-write",
                            "tcg,x-tlb-probe=off")
        assert n["tlb_relaxed_flushes"] > 500, n
        assert n["tlb_probed"] == 0, n
        if n["tlb_alone"] >= 0.98 * n["tlb_relaxed_flushes"]:
            return
    pytest.fail(f"every boot queued broadcasts for the other vCPU: {n}")


def test_users_of_the_page_are_waited_for(qemu):
    """The other thread reads the mprotected page itself: whenever it
    refilled its entry since the last flush, the probe finds it and the
    broadcast queues for it (a probe that found nothing would pass the
    tests above).  Runs here found it for 35-65% of the broadcasts."""
    n = counters_during(qemu, "mprotect-shared-read")
    found = n["tlb_probed"] - n["tlb_probe_skipped"]
    assert n["tlb_relaxed_flushes"] > 100, n
    assert found > 0.1 * n["tlb_relaxed_flushes"], n
    assert n["tlb_barrier_waits"] > 0, n


def test_hook_bench_runs(qemu):
    """tests/bench/tlb-relaxed-bench, the micro-benchmark of the hooks
    with nothing to do, as a smoke test: every path gets a figure (no
    timing is asserted: speed lives in benchmarks)."""
    build = run(["ninja", "-C", QEMU_BUILD, "tests/bench/tlb-relaxed-bench"],
                timeout=600)
    assert build.returncode == 0, build.stdout[-3000:]
    proc = run([QEMU_BUILD / "tests" / "bench" / "tlb-relaxed-bench",
                "-n", "100000", "-r", "1"])
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()[2:]]
    assert [r[0] for r in rows] == ["tb", "exec", "fill", "unwind", "dsb",
                                    "jc"]
    assert all(len(r) == 3 for r in rows), proc.stdout
