"""bin/tlb-scale: run the tests/tcg tlb-broadcast test many times per -smp
and flush mode, and the guest tlb-stress for a while per -smp, and count
pass and fail per test case.

This is how relaxed broadcast TLB maintenance is proven where races really
happen: many vCPUs on as many host CPUs (-smp 8 and 16 on a 16-CPU host),
or, on a small host, many repetitions.  The runs are interleaved, one of
each (-smp, mode) per repetition.  Any failing case, run that dies or
stress run that does not print STRESS PASS makes the exit status 1, except
with --expect-fail, for negative controls, which inverts that for the
racing cases (every run must fail each of them).

  bin/tlb-scale --smp 4 --reps 200 --cflags=-DITERATIONS=20   # here
  bin/tlb-scale --smp 8 --smp 16 --reps 20 --stress-seconds 60
  bin/tlb-scale --smp 2 --mode relaxed,x-tlb-barrier=off --expect-fail
  bin/tlb-scale --variant s2 --smp 4 --reps 200 --cflags=-DITERATIONS=20
"""

import argparse
import collections
import json
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile
import time

from . import BUILD

TCG_DIR = BUILD / "qemu" / "tests" / "tcg" / "aarch64-softmmu"
SYSTEM_SRC = BUILD / "src" / "tests" / "tcg" / "aarch64" / "system"
GUEST = BUILD / "guest"
MACHINE = ["-M", "virt,gic-version=3", "-cpu", "max", "-display", "none",
           "-monitor", "none", "-nic", "none"]
EL2_MACHINE = ["-M", "virt,gic-version=3,virtualization=on", *MACHINE[2:]]
# The builds of tlb-broadcast: its CFLAGS and machine.  s2 remaps at
# stage 2 and invalidates from EL2; fb uses local TLBIs and DSB NSH under
# HCR_EL2.FB and BSU.
VARIANTS = {"": ([], MACHINE), "s2": (["-DSTAGE2"], EL2_MACHINE),
            "fb": (["-DEL2_FB"], EL2_MACHINE)}
RESULT = re.compile(r"^(PASS|FAIL|SKIP): (.+?)(?: \(|$)", re.M)


def racing(name):
    """Cases whose probes race the issuer's DSB: a barrier that does not
    wait must fail them (see docs/devel/tcg-tlb-relaxed.rst)."""
    return name.startswith(("loads:", "stores:")) and "WFI" not in name


def build_broadcast(out, *cflags):
    """Build tests/tcg's tlb-broadcast with extra CFLAGS into @out, on the
    boot code of the tests/tcg build; return the compiler's process."""
    return subprocess.run(
        ["aarch64-linux-gnu-gcc", "-nostdlib", "-O0", "-ffreestanding",
         "-fno-stack-protector", "-isystem",
         str(BUILD / "src" / "tests" / "tcg" / "minilib"), *cflags,
         str(SYSTEM_SRC / "tlb-broadcast.c"), "-o", str(out),
         f"-Wl,-T{SYSTEM_SRC / 'kernel.ld'}", "-static",
         str(TCG_DIR / "boot.o"), str(TCG_DIR / "printf.o"), "-lgcc"],
        capture_output=True, text=True)


def broadcast_once(qemu, kernel, smp, mode, timeout, machine=MACHINE):
    """Run tlb-broadcast once; return ({case: PASS|FAIL|SKIP}, exit status,
    seconds, output)."""
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [*qemu, *machine, "-smp", str(smp), "-accel", f"tcg,tlb-flush={mode}",
             "-semihosting-config", "enable=on,target=native,chardev=out",
             "-chardev", "stdio,id=out", "-kernel", str(kernel)],
            capture_output=True, text=True, timeout=timeout)
        out, status = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        out, status = f"timed out after {timeout} s: {e.stdout}", None
    cases = {m[2]: m[1] for m in RESULT.finditer(out)}
    return cases, status, time.monotonic() - start, out


def stress_once(qemu, smp, seconds):
    """Boot the guest kernel with /tlb-stress for @seconds at -smp @smp
    (default flush mode); return (passed, output)."""
    append = f"console=ttyAMA0 panic=-1 quiet rdinit=/tlb-stress -- {seconds}"
    proc = subprocess.run(
        [*qemu, *MACHINE, "-m", "1G", "-smp", str(smp), "-serial", "stdio",
         "-no-reboot", "-kernel", str(GUEST / "vmlinuz"),
         "-initrd", str(GUEST / "initrd.cpio"), "-append", append],
        capture_output=True, text=True, timeout=seconds * 10 + 300)
    out = proc.stdout + proc.stderr
    return bool(re.search(r"^STRESS PASS", out, re.M)), out


def main():
    parser = argparse.ArgumentParser(
        prog="bin/tlb-scale", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qemu", default=str(BUILD / "qemu" /
                                              "qemu-system-aarch64"),
                        help="QEMU command, split like a shell would "
                        "(e.g. 'OUT/run qemu' for a ../shared/device/pack "
                        "folder); default %(default)s")
    parser.add_argument("--variant", choices=[v for v in VARIANTS if v],
                        help="tlb-broadcast-s2 (remapped at stage 2, "
                        "invalidated from EL2) or tlb-broadcast-fb (local "
                        "TLBIs and DSB NSH under HCR_EL2.FB and BSU), both "
                        "with -M virt,virtualization=on (default: from the "
                        "--kernel's name)")
    parser.add_argument("--kernel", type=pathlib.Path,
                        help="the tlb-broadcast binary; default "
                        f"{TCG_DIR}/tlb-broadcast[-VARIANT]")
    parser.add_argument("--cflags", action="append", default=[],
                        help="build tlb-broadcast with these flags instead "
                        "(e.g. -DITERATIONS=20, '-DFINAL_DSB=\"dsb nsh\"')")
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
                        "fail in every run")
    parser.add_argument("--out", type=pathlib.Path,
                        help="write results.json there")
    args = parser.parse_args()
    smps = args.smp or [4]
    modes = args.mode or ["strict", "relaxed"]
    qemu = shlex.split(args.qemu)
    if any(n < 2 for n in smps) or args.reps < 1:
        parser.error("--smp must be at least 2 and --reps at least 1")
    if args.kernel and not args.variant:
        args.variant = next((v for v in VARIANTS
                             if v and args.kernel.name.endswith(f"-{v}")), "")
    binary = "tlb-broadcast" + (f"-{args.variant}" if args.variant else "")
    variant_cflags, machine = VARIANTS[args.variant or ""]
    if args.cflags:
        args.kernel = pathlib.Path(tempfile.mkdtemp()) / binary
        built = build_broadcast(args.kernel, *variant_cflags, *args.cflags)
        if built.returncode:
            parser.error(f"building tlb-broadcast failed:\n{built.stderr}")
    elif not args.kernel:
        args.kernel = TCG_DIR / binary
    if not args.kernel.is_file():
        parser.error(f"no {args.kernel}: run 'make -C build/qemu "
                     "build-tcg-tests-aarch64-softmmu'")
    if args.stress_seconds and not (GUEST / "initrd.cpio").is_file():
        parser.error(f"no {GUEST / 'initrd.cpio'}: run 'make guest'")

    counts = collections.defaultdict(collections.Counter)
    seconds = collections.defaultdict(list)
    bad_runs = []
    for rep in range(args.reps):
        for smp in smps:
            for mode in modes:
                cases, status, took, out = broadcast_once(
                    qemu, args.kernel, smp, mode, args.timeout, machine)
                seconds[smp, mode].append(took)
                for name, res in cases.items():
                    counts[smp, mode, name][res] += 1
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
                    ok &= c["FAIL"] == args.reps
                elif not args.expect_fail:
                    ok &= c["FAIL"] == 0
    for smp, mode, rep, tail in bad_runs:
        print(f"run {rep} at -smp {smp} {mode} died or disagreed with its "
              f"exit status:\n{tail}")

    stress = {}
    if args.stress_seconds:
        for smp in smps:
            passed, out = stress_once(qemu, smp, args.stress_seconds)
            stress[smp] = passed
            line = next((l for l in out.splitlines() if "STRESS" in l),
                        out[-500:])
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
            "stress": stress,
        }, indent=1) + "\n")
    print("tlb-scale:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
