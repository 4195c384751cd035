"""bin/tlb-scale: run a tests/tcg TLB test (tlb-broadcast, or tlb-random,
the randomized differential test) many times per -smp and flush mode, and
the guest tlb-stress for a while per -smp, and count pass and fail per
test case.

This is how relaxed broadcast TLB maintenance is proven where races really
happen: many vCPUs on as many host CPUs (-smp 8 and 16 on a 16-CPU host),
or, on a small host, many repetitions.  The runs are interleaved, one of
each (-smp, mode) per repetition.  Any failing case, run that dies or
stress run that does not print STRESS PASS makes the exit status 1, except
with --expect-fail, for negative controls, which inverts that for the
racing cases (each of them must fail in some run: one run on a loaded host
can miss a race).

  bin/tlb-scale --smp 4 --reps 200 --cflags=-DITERATIONS=20   # here
  bin/tlb-scale --smp 8 --smp 16 --reps 20 --stress-seconds 60
  bin/tlb-scale --smp 2 --mode relaxed,x-tlb-barrier=off --expect-fail
  bin/tlb-scale --variant s2 --smp 4 --reps 200 --cflags=-DITERATIONS=20
  bin/tlb-scale --variant random-64k --smp 4 --reps 50 --rounds 2000

tlb-random runs take a new seed each, printed with every failing run;
--seed replays one.
"""

import argparse
import collections
import json
import pathlib
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, NamedTuple, Optional, Tuple

from . import paths
from .machine import VIRT, Qemu, run_qemu

SYSTEM_SRC = paths.TCG_SRC / "aarch64" / "system"
# The board of a tests/tcg system test: no display, no monitor.
BOARD = [*VIRT, "-display", "none", "-monitor", "none"]
EL2_BOARD = [*BOARD, "-M", "virtualization=on"]


class Variant(NamedTuple):
    """A build of a tests/tcg TLB test: its binary, source, extra CFLAGS,
    the board it runs on and the exception level boot.S starts it at."""
    binary: str
    source: str
    cflags: List[str]
    board: List[str]
    el: int = 1


# s2 remaps at stage 2 and invalidates from EL2; fb uses local TLBIs and
# DSB NSH under HCR_EL2.FB and BSU; random is tlb-random, for each granule
# and at stage 2.
VARIANTS = {
    "": Variant("tlb-broadcast", "tlb-broadcast.c", [], BOARD),
    "s2": Variant("tlb-broadcast-s2", "tlb-broadcast.c", ["-DSTAGE2"],
                  EL2_BOARD, el=2),
    "fb": Variant("tlb-broadcast-fb", "tlb-broadcast.c", ["-DEL2_FB"],
                  EL2_BOARD, el=2),
    "random": Variant("tlb-random", "tlb-random.c", [], [*BOARD, "-m", "2G"]),
    "random-16k": Variant("tlb-random-16k", "tlb-random.c",
                          ["-DGRANULE_BITS=14"], [*BOARD, "-m", "2G"]),
    "random-64k": Variant("tlb-random-64k", "tlb-random.c",
                          ["-DGRANULE_BITS=16"], [*BOARD, "-m", "2G"]),
    "random-s2": Variant("tlb-random-s2", "tlb-random.c", ["-DSTAGE2"],
                         [*EL2_BOARD, "-m", "2G"], el=2),
}
RESULT = re.compile(r"^(PASS|FAIL|SKIP): (.+?)(?: \(|$)", re.M)
# tlb-broadcast's timer case: when its readers woke, in the rounds they
# slept, and the rounds they did not sleep (preempted past their timers).
WAKEUPS = re.compile(r"^  timer wake-ups: (\d+) before CPU 0's TLBIs, "
                     r"(\d+) before its DSB completed, (\d+) after; "
                     r"not asleep: (\d+)$", re.M)
WAKEUP_KINDS = ("before_tlbi", "before_dsb_done", "after", "not_asleep")


def racing(name: str) -> bool:
    """Cases whose probes race the issuer's DSB: a barrier that does not
    wait must fail them (see docs/devel/tcg-tlb-relaxed.rst).  Of the
    WFI cases, only the one that the readers' own timers end races: a
    reader that woke before the TLBIs is running when they come."""
    return (name.startswith(("loads:", "stores:")) and
            ("WFI" not in name or "by a timer" in name)) \
        or name.endswith("CPUs spinning") or name == "random rounds"


def build(variant: str, out: pathlib.Path,
          *cflags: str) -> subprocess.CompletedProcess:
    """Build @variant (a VARIANTS key) with extra CFLAGS into @out, on the
    boot code of the tests/tcg build; return the compiler's process."""
    v = VARIANTS[variant]
    return build_system_test(v.source, out, *v.cflags, *cflags)


def build_system_test(source: str, out: pathlib.Path,
                      *cflags: str) -> subprocess.CompletedProcess:
    """Build tests/tcg's aarch64 system test @source with CFLAGS into @out,
    as the tests/tcg build does; return the compiler's process."""
    return subprocess.run(
        ["aarch64-linux-gnu-gcc", "-nostdlib", "-O0", "-ffreestanding",
         "-fno-stack-protector", "-isystem", str(paths.TCG_SRC / "minilib"),
         *cflags, str(SYSTEM_SRC / source), "-o", str(out),
         f"-Wl,-T{SYSTEM_SRC / 'kernel.ld'}", "-static",
         str(paths.TCG_DIR / "boot.o"), str(paths.TCG_DIR / "printf.o"),
         "-lgcc"],
        capture_output=True, text=True, check=False)


def tlb_test_args(variant: str, kernel, smp: int, mode: str,
                  append: Optional[str] = None) -> List[str]:
    """QEMU's arguments for a run of the TLB test @kernel, a build of
    @variant, whose semihosting output goes to stdout.  boot.S starts the
    test at the exception level its semihosting command line begins with
    (EL1 if none): a variant that runs at EL2 passes "2" and @append's
    words as arguments, which QEMU then uses instead of -append."""
    v = VARIANTS[variant]
    config = "enable=on,target=native,chardev=out"
    if v.el != 1:
        words = [str(v.el), *(append.split() if append else [])]
        config += "".join(",arg=" + w.replace(",", ",,") for w in words)
        append = None
    return [*v.board, "-smp", str(smp),
            "-accel", f"tcg,tlb-flush={mode}",
            "-semihosting-config", config,
            "-chardev", "stdio,id=out", "-kernel", str(kernel),
            *(["-append", append] if append else [])]


Outcome = Tuple[Dict[str, str], Optional[int], float, str]


def tlb_test_once(qemu: Qemu, variant: str, kernel, smp: int, mode: str,
                  timeout: float, append: Optional[str] = None) -> Outcome:
    """Run a TLB test once, with -append @append if given; return
    ({case: PASS|FAIL|SKIP}, exit status or None at the timeout, seconds,
    output)."""
    start = time.monotonic()
    ended = run_qemu(qemu, tlb_test_args(variant, kernel, smp, mode, append),
                     timeout)
    out = ended.stdout + ended.stderr
    if ended.returncode is None:
        out = f"timed out after {timeout} s: {out}"
    cases = {m[2]: m[1] for m in RESULT.finditer(out)}
    return cases, ended.returncode, time.monotonic() - start, out


def stress_once(qemu: Qemu, smp: int, seconds: int) -> Tuple[bool, str]:
    """Boot the guest kernel with /tlb-stress for @seconds at -smp @smp
    (default flush mode); return (passed, output)."""
    append = f"console=ttyAMA0 panic=-1 quiet rdinit=/tlb-stress -- {seconds}"
    ended = run_qemu(
        qemu, [*BOARD, "-m", "1G", "-smp", str(smp), "-serial", "stdio",
               "-no-reboot", "-kernel", paths.GUEST / "vmlinuz",
               "-initrd", paths.GUEST / "initrd.cpio", "-append", append],
        seconds * 10 + 300)
    out = ended.stdout + ended.stderr
    return bool(re.search(r"^STRESS PASS", out, re.M)), out


def main():
    parser = argparse.ArgumentParser(
        prog="bin/tlb-scale", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qemu", default=str(paths.QEMU),
                        help="QEMU command, split like a shell would "
                        "(e.g. 'OUT/run qemu' for a ../shared/device/pack "
                        "folder); default %(default)s")
    parser.add_argument("--variant", choices=[v for v in VARIANTS if v],
                        help="tlb-broadcast-s2 (remapped at stage 2, "
                        "invalidated from EL2) or tlb-broadcast-fb (local "
                        "TLBIs and DSB NSH under HCR_EL2.FB and BSU), both "
                        "with -M virt,virtualization=on; tlb-random, "
                        "tlb-random-16k or tlb-random-64k (random page "
                        "tables and TLBIs, checked against a walk in "
                        "software), with -m 2G, or tlb-random-s2 (at stage "
                        "2, with both) (default: tlb-broadcast, or from "
                        "the --kernel's name)")
    parser.add_argument("--kernel", type=pathlib.Path,
                        help="the test binary; default "
                        f"{paths.TCG_DIR}/tlb-broadcast[-VARIANT] or "
                        "tlb-random[-16k|-64k|-s2]")
    parser.add_argument("--cflags", action="append", default=[],
                        help="build the test with these flags instead "
                        "(e.g. -DITERATIONS=20, '-DFINAL_DSB=\"dsb nsh\"')")
    parser.add_argument("--rounds", type=int,
                        help="tlb-random: random rounds per run (its "
                        "default: 200)")
    parser.add_argument("--seed", type=int,
                        help="tlb-random: the seed of every run (default: "
                        "a new one per run)")
    parser.add_argument("--append", default="",
                        help="tlb-random: more of its command line, e.g. "
                        "drop-tlbi or dsb-nsh")
    parser.add_argument("--smp", type=int, action="append",
                        help="vCPU count, repeatable (default 4)")
    parser.add_argument("--mode", action="append",
                        help="tlb-flush value and extra -accel tcg "
                        "properties, repeatable (default strict and relaxed)")
    parser.add_argument("--reps", type=int, default=10,
                        help="tlb-broadcast runs per -smp and mode "
                        "(default %(default)s)")
    parser.add_argument("--timeout", type=int, default=600,
                        help="seconds one tlb-broadcast run may take")
    parser.add_argument("--stress-seconds", type=int, default=0,
                        help="also run the guest tlb-stress this long at "
                        "each -smp (default mode)")
    parser.add_argument("--expect-fail", action="store_true",
                        help="negative control: every racing case must "
                        "fail in at least one run")
    parser.add_argument("--out", type=pathlib.Path,
                        help="write results.json there")
    args = parser.parse_args()
    smps = args.smp or [4]
    modes = args.mode or ["strict", "relaxed"]
    qemu = shlex.split(args.qemu)
    if any(n < 2 for n in smps) or args.reps < 1:
        parser.error("--smp must be at least 2 and --reps at least 1")
    if args.kernel and not args.variant:
        args.variant = max((v for v in VARIANTS
                            if v and args.kernel.name.endswith(f"-{v}")),
                           key=len, default="")
    variant = VARIANTS[args.variant or ""]
    binary = variant.binary
    is_random = variant.source == "tlb-random.c"
    if not is_random and (args.rounds is not None or args.seed is not None
                          or args.append):
        parser.error("--rounds, --seed and --append are for tlb-random "
                     "variants")
    if args.rounds is not None and args.rounds < 0:
        parser.error("--rounds must be at least 0")
    if args.cflags:
        args.kernel = pathlib.Path(tempfile.mkdtemp()) / binary
        built = build(args.variant or "", args.kernel, *args.cflags)
        if built.returncode:
            parser.error(f"building {binary} failed:\n{built.stderr}")
    elif not args.kernel:
        args.kernel = paths.TCG_DIR / binary
    if not args.kernel.is_file():
        parser.error(f"no {args.kernel}: run 'make -C build/qemu "
                     "build-tcg-tests-aarch64-softmmu'")
    if args.stress_seconds and not (paths.GUEST / "initrd.cpio").is_file():
        parser.error(f"no {paths.GUEST / 'initrd.cpio'}: run 'make guest'")

    counts = collections.defaultdict(collections.Counter)
    wakeups = collections.defaultdict(collections.Counter)
    seconds = collections.defaultdict(list)
    bad_runs, failing_seeds = [], []
    for rep in range(args.reps):
        for smp in smps:
            for mode in modes:
                append = None
                if is_random:
                    seed = args.seed if args.seed is not None else \
                        random.randrange(1, 1 << 31)
                    append = " ".join(
                        [f"seed={seed}", args.append] +
                        ([f"rounds={args.rounds}"]
                         if args.rounds is not None else [])).strip()
                cases, status, took, out = tlb_test_once(
                    qemu, args.variant or "", args.kernel, smp, mode,
                    args.timeout, append)
                seconds[smp, mode].append(took)
                for m in WAKEUPS.finditer(out):
                    wakeups[smp, mode].update(
                        dict(zip(WAKEUP_KINDS, map(int, m.groups()))))
                for name, res in cases.items():
                    counts[smp, mode, name][res] += 1
                if is_random and "FAIL" in cases.values():
                    failing_seeds.append((smp, mode, append))
                if not cases or status is None or \
                        (status != 0) != ("FAIL" in cases.values()):
                    bad_runs.append((smp, mode, rep, out[-2000:]))
        print(f"repetition {rep + 1}/{args.reps} done", file=sys.stderr)

    ok = not bad_runs
    print(f"{binary}, {args.reps} runs per -smp and mode; "
          "PASS/FAIL/SKIP counts per case:")
    for smp in smps:
        for mode in modes:
            times = seconds[smp, mode]
            print(f"-smp {smp} tlb-flush={mode} "
                  f"({sum(times) / len(times):.1f} s per run):")
            for (s, m, name), c in sorted(counts.items()):
                if (s, m) != (smp, mode):
                    continue
                print(f"  {name:40} {c['PASS']:4} pass {c['FAIL']:4} fail"
                      f"{c['SKIP']:4} skip")
                if args.expect_fail and racing(name) and c["SKIP"] == 0:
                    ok &= c["FAIL"] > 0
                elif not args.expect_fail:
                    ok &= c["FAIL"] == 0
            if (smp, mode) in wakeups:
                w = wakeups[smp, mode]
                print(f"  timer case's wake-ups: {w['before_tlbi']} before "
                      f"the TLBIs, {w['before_dsb_done']} before the DSB "
                      f"completed, {w['after']} after; not asleep: "
                      f"{w['not_asleep']}")
    for smp, mode, rep, tail in bad_runs:
        print(f"run {rep} at -smp {smp} {mode} died or disagreed with its "
              f"exit status:\n{tail}")
    for smp, mode, append in failing_seeds[:20]:
        print(f"failed at -smp {smp} {mode}: -append \"{append}\"")

    stress = {}
    if args.stress_seconds:
        for smp in smps:
            passed, out = stress_once(qemu, smp, args.stress_seconds)
            stress[smp] = passed
            line = next((text for text in out.splitlines()
                         if "STRESS" in text), out[-500:])
            print(f"tlb-stress -smp {smp} {args.stress_seconds} s: {line}")
            ok &= passed
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps({
            "reps": args.reps, "smps": smps, "modes": modes,
            "variant": binary,
            "counts": [{"smp": s, "mode": m, "case": n, **c}
                       for (s, m, n), c in sorted(counts.items())],
            "seconds": {f"{s} {m}": t for (s, m), t in seconds.items()},
            "timer_wakeups": {f"{s} {m}": dict(w)
                              for (s, m), w in wakeups.items()},
            "failing_runs": [{"smp": s, "mode": m, "append": a}
                             for s, m, a in failing_seeds],
            "stress": stress,
        }, indent=1) + "\n")
    print("tlb-scale:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
