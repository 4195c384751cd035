"""bin/tlb-count: count, not time, what relaxed TLB maintenance does per
broadcast at many vCPUs: for each -smp and tlb-bench operation, boot the
initramfs, and from info jit's counters while the operation ran, print
per broadcast how many other vCPUs its summaries tested, how many TLBs
it probed, how many vCPUs it queued for and kicked, and how many of its
DSBs waited.  A host with fewer CPUs than vCPUs runs it slowly but counts
the same work; times are not reported."""

import argparse
import sys

from . import HarnessError, paths
from .workloads import TLB_OPS, op_counters

COLUMNS = ("smp", "op", "broadcasts", "tested", "probed", "queued",
           "kicked", "waits", "alone")


def rows(binary, smps, ops, accel):
    """One row per (smp, op): counts per broadcast."""
    for smp in smps:
        for op in ops:
            n = op_counters(binary, smp, accel, op)
            flushes = n["tlb_relaxed_flushes"]
            if not flushes:
                raise HarnessError(f"{op} at -smp {smp} made no relaxed "
                                   "broadcast: is the mode relaxed?")
            remote = flushes * (smp - 1)
            queued = remote - n["tlb_filtered_out"]
            yield {"smp": smp, "op": op, "broadcasts": flushes,
                   "tested": (smp - 1),
                   "probed": n["tlb_probed"] / flushes,
                   "queued": queued / flushes,
                   "kicked": n["tlb_kicks"] / flushes,
                   "waits": n["tlb_barrier_waits"] / flushes,
                   "alone": n["tlb_alone"] / flushes}


def main() -> None:
    parser = argparse.ArgumentParser(prog="bin/tlb-count", description=__doc__)
    parser.add_argument("--smp", default="32,64",
                        help="-smp values (default: %(default)s)")
    parser.add_argument("--ops", default="mprotect-adjacent-write,"
                        "mprotect-shared-read,munmap,fork",
                        help=f"tlb-bench operations, of {', '.join(TLB_OPS)}"
                        " (default: %(default)s)")
    parser.add_argument("--accel", default="tcg",
                        help="-accel (default: %(default)s)")
    parser.add_argument("--binary", default=str(paths.QEMU),
                        help="qemu-system-aarch64 (default: %(default)s)")
    args = parser.parse_args()
    try:
        smps = [int(v) for v in args.smp.split(",")]
        ops = args.ops.split(",")
        if min(smps) < 2:
            raise HarnessError("--smp values must be at least 2")
        unknown = [op for op in ops if op not in TLB_OPS]
        if unknown:
            raise HarnessError(f"unknown operations: {', '.join(unknown)}")
        print("| " + " | ".join(COLUMNS) + " |")
        print("|" + "---|" * len(COLUMNS))
        for row in rows(args.binary, smps, ops, args.accel):
            print("| " + " | ".join(f"{row[c]:.2f}" if isinstance(row[c],
                                                                 float)
                                    else str(row[c]) for c in COLUMNS)
                  + " |", flush=True)
    except ValueError:
        sys.exit(f"tlb-count: --smp '{args.smp}' is not a list of integers")
    except HarnessError as e:
        sys.exit(f"tlb-count: {e}")


if __name__ == "__main__":
    main()
