"""bin/compare: boot Linux to power-off with tlb-flush=strict (the broadcast
TLB maintenance QEMU has always done) and with tlb-flush=relaxed, in
alternating rounds (strict, relaxed, strict, ...), and print both times
with their 95% confidence intervals and the per-round ratio.

The guest is the Debian image of 'make image' where build/image exists,
else Debian's arm64 kernel with an initramfs whose init powers off
(bin/guest-kernel).  -smp defaults to the host's CPU count (at least 2):
with more vCPUs than host CPUs, host scheduling rather than TLB
maintenance decides the times.
"""

import argparse
import os
import pathlib
import sys
from typing import Dict

from . import HarnessError, paths, stats
from .workloads import TLB_MODES, WORKLOADS, run_once, workload_args


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bin/compare", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qemu", type=pathlib.Path,
                        default=paths.QEMU,
                        help="the binary (default: %(default)s)")
    parser.add_argument("-n", "--runs", type=int, default=5,
                        help="rounds (default: %(default)s)")
    parser.add_argument("--smp", type=int, default=max(2, os.cpu_count()),
                        help="vCPUs (default: host CPUs, at least 2: "
                        "%(default)s)")
    parser.add_argument("--workload", choices=("debian", "boot"),
                        help="debian: build/image; boot: build/guest's "
                        "initramfs (default: debian where build/image "
                        "exists)")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds one run may take (default: %(default)s)")
    return parser


def compare(args: argparse.Namespace) -> None:
    """Run the rounds that @args ask for, and print the comparison."""
    if args.runs < 2:
        raise HarnessError("--runs must be at least 2 for a confidence "
                           "interval")
    if args.smp < 1:
        raise HarnessError("--smp must be at least 1")
    if not os.access(args.qemu, os.X_OK):
        raise HarnessError(f"{args.qemu} is not an executable; run "
                           "'make qemu'")
    name = args.workload or \
        ("debian" if (paths.IMAGE / "rootfs.ext4").is_file() else "boot")
    workload = WORKLOADS[name]
    guest_args = workload_args(workload, workload["folder"])

    walls: Dict[str, Dict[int, float]] = {mode: {} for mode in TLB_MODES}
    for rnd in range(1, args.runs + 1):
        for mode in TLB_MODES:
            row = run_once(args.qemu, [
                "-smp", str(args.smp), "-accel", f"tcg,tlb-flush={mode}",
                *guest_args], workload, args.timeout)
            walls[mode][rnd] = row["wall_s"]
            print(f"compare: round {rnd}/{args.runs} {mode:7} "
                  f"{row['wall_s']:7.2f} s", file=sys.stderr, flush=True)

    guest = "the Debian image" if name == "debian" else "an initramfs"
    print(f"Linux boot to power-off ({guest}), -smp {args.smp}, "
          f"{args.runs} alternating rounds, mean ± 95% CI:")
    for mode in TLB_MODES:
        mean, ci = stats.mean_ci(list(walls[mode].values()))
        line = f"  {mode:8} {mean:7.2f} ± {ci:.2f} s"
        if mode == "strict":
            line += "   (QEMU's broadcast TLB maintenance)"
        else:
            ratio, rci = stats.ratio_ci(walls[mode], walls["strict"])
            line += f"   {ratio:.3f} ± {rci:.3f} of strict, per round"
        print(line)


def main() -> None:
    try:
        compare(argument_parser().parse_args())
    except HarnessError as e:
        sys.exit(f"compare: {e}")


if __name__ == "__main__":
    main()
