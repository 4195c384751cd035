"""bin/bench: run each binary under each configuration, interleaved round
by round, and record what every run measured; bin/bench-report then
summarises.

Workloads:
  debian  boot build/image (make image) to power-off with snapshot=on
  boot    boot Debian's kernel with an initramfs whose init powers off
  tlb     the in-guest TLB micro-benchmarks, downstream/guest/tlb-bench.c:
          --ops names which (default: mprotect, munmap, fork)
  stress  stress-ng in build/image: groups of stressors that make Linux
          issue broadcast TLB maintenance, each group for --stress-seconds
          with --verify, one worker per stressor and vCPU; the metric of a
          group is its stressors' bogo-ops per second summed (higher is
          better).  A stressor that fails its verification stops bench.
  build   a real build job in build/build-image (make build-image): the
          pinned Debian source of bin/guest-build-image, configured and
          made with make -j (the guest's CPUs) in the guest's tmpfs; the
          metrics are each phase's seconds by the guest's clock
          (configure_s, make_s).  A phase that fails stops bench.

Every round runs each (binary, configuration) pair once, in the same order
(or, with --shuffle, in an order drawn afresh each round),
so that drift of the host hits all pairs alike (A B A B ...).  Before the
first round every pair is started paused once: a configuration that no
binary accepts is an error, one that only some binaries accept (for
example -accel tcg,tlb-flush=relaxed on the baseline) runs on those.
Each configuration is compared with the reference binary's run of its
namesake or of the configuration --pair names; without either, bench
refuses to start.  A binary in a meson build directory is first brought
up to date with ninja, so that results.json names the commit that ran.

Per run: wall time to the guest's power-off (QMP SHUTDOWN; QEMU runs with
-no-shutdown), the times console lines mark the kernel's start, userspace,
"booted" and power-down, then x-query-jit (code size, TB flushes, TLB
flush counters, region layout) and the code buffer's Rss and AnonHugePages
from /proc/PID/smaps.  With --barrier-waits, also how long each DSB
waited for other vCPUs (QEMU's trace event tlb_relaxed_barrier), as the
metric barrier_wait with its median and 99th percentile.  Writes
results.json and results.csv to --out.
"""

import argparse
import datetime
import os
import pathlib
import re
import signal
import sys
from typing import List

from . import HarnessError, matrix, paths, report
from .workloads import (BARRIER_COLUMNS, BUSY_LOADS, OP_COLUMNS,
                        STRESS_GROUPS, TLB_MODES, TLB_OPS, WORKLOADS,
                        build_metric, stress_append, stress_metric,
                        tlb_append, tlb_configs, tlb_pairs, workload_args)


def int_list(text: str) -> List[int]:
    try:
        return [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a list of integers") from None


def named(items: List[str], what: str) -> matrix.Named:
    """NAME=VALUE items as (name, value) pairs."""
    pairs = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise HarnessError(f"{what} '{item}' is not NAME=VALUE")
        pairs.append((name, value))
    return pairs


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bin/bench", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--runs", type=int, default=7,
                        help="rounds (default: %(default)s)")
    parser.add_argument("--workload", choices=WORKLOADS, default="debian",
                        help="what each run boots (default: %(default)s)")
    parser.add_argument("--binary", action="append", metavar="NAME=PATH",
                        help="a qemu-system-aarch64 to run; the first is the "
                        "reference (default: baseline and qemu from build/)")
    parser.add_argument("--config", action="append", metavar="NAME[@BIN]=ARGS",
                        help="a configuration: QEMU arguments, run on binary "
                        "BIN only if given (default: the workload's set)")
    parser.add_argument("--pair", action="append", metavar="NAME=REF",
                        help="compare configuration NAME with the reference "
                        "binary's run of configuration REF (default: the "
                        "workload's pairs, unless --config is given; else "
                        "NAME with its namesake, which the reference must "
                        "run)")
    parser.add_argument("--smp", type=int_list, metavar="N,...",
                        help="-smp values of the tlb, stress and build "
                        "workloads' configurations (default: 1,2,4)")
    parser.add_argument("--el2", action="store_true",
                        help="boot Linux at EL2 (-M virtualization=on): "
                        "Debian's kernel then runs with VHE")
    parser.add_argument("--stress-seconds", type=int, default=10,
                        metavar="S", help="seconds each stress group runs "
                        "(default: %(default)s)")
    parser.add_argument("--stress-groups", metavar="G:G...",
                        default=":".join(STRESS_GROUPS),
                        help="the stress groups, each stressor+stressor... "
                        "(default: %(default)s)")
    parser.add_argument("--ops", metavar="OP,...",
                        help="tlb-bench's operations that the tlb workload "
                        f"runs, of {', '.join(TLB_OPS)} (default: "
                        "mprotect,munmap,fork)")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="keep N host CPUs busy with other processes "
                        "while every run runs (default: %(default)s)")
    parser.add_argument("--busy-load", choices=BUSY_LOADS, default="hogs",
                        help="what keeps them busy: N CPU-bound processes, "
                        "or a compile of QEMU's sources with make -j N "
                        "(default: %(default)s)")
    parser.add_argument("--guest", type=pathlib.Path,
                        help="folder with the workload's kernel, initrd and "
                        "image (default: build/image, or build/guest for "
                        "boot and tlb)")
    parser.add_argument("--layout-smp", type=int_list, default=[1, 2, 4, 8, 16, 32, 64],
                        metavar="N,...", help="-smp values of the region "
                        "layout grid (default: 1,2,4,8,16,32,64)")
    parser.add_argument("--layout-tb-size", type=int_list, default=[16, 64, 256, 1024],
                        metavar="MIB,...", help="tb-size values of the grid "
                        "(default: 16,64,256,1024)")
    parser.add_argument("--out", type=pathlib.Path,
                        help="folder for the results (default: "
                        "build/bench/TIMESTAMP)")
    parser.add_argument("--shuffle", action="store_true",
                        help="run each round's pairs in an order drawn "
                        "afresh (one generator, seeded once), not the "
                        "same order every round: for host loads with a "
                        "period near a round's length, such as a compile "
                        "that is restarted")
    parser.add_argument("--barrier-waits", action="store_true",
                        help="trace every DSB that waits for other vCPUs "
                        "(QEMU's tlb_relaxed_barrier event) and report "
                        "its wait's mean, median and 99th percentile as "
                        "barrier_wait_ns; the trace costs a little time")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds one run may take (default: %(default)s)")
    return parser


def bench(args: argparse.Namespace) -> None:
    """Run the matrix that @args ask for, and write its results."""
    workload = WORKLOADS[args.workload]
    if args.stress_seconds < 1:
        raise HarnessError("--stress-seconds must be at least 1")
    if args.busy < 0:
        raise HarnessError("--busy must be at least 0")
    groups = args.stress_groups.split(":")
    if not all(re.fullmatch(r"[a-z0-9-]+(\+[a-z0-9-]+)*", g) for g in groups):
        raise HarnessError(f"--stress-groups '{args.stress_groups}' is not "
                           "stressor+stressor:...")
    if args.workload == "stress":
        workload = {**workload, "stress": groups,
                    "append": stress_append(groups, args.stress_seconds)}
    if args.ops:
        ops = args.ops.split(",")
        if args.workload != "tlb":
            raise HarnessError("--ops names tlb-bench's operations; it "
                               "takes --workload tlb")
        unknown = [op for op in ops if op not in TLB_OPS]
        if unknown or len(set(ops)) < len(ops):
            raise HarnessError(f"--ops '{args.ops}' must name distinct "
                               f"operations of {', '.join(TLB_OPS)}")
        workload = {**workload, "results": tuple(ops),
                    "append": tlb_append(ops)}
    if args.smp:
        if args.workload not in ("tlb", "stress", "build") or args.config:
            raise HarnessError("--smp sets the tlb, stress and build "
                               "workloads' configurations; it takes no "
                               "--config")
        if min(args.smp) < 1 or len(set(args.smp)) < len(args.smp):
            raise HarnessError("--smp values must be distinct and at least 1")
        modes = workload.get("modes", TLB_MODES)
        workload = {**workload, "configs": tlb_configs(args.smp, modes),
                    "pairs": tlb_pairs(args.smp, modes)}
    binaries = named(args.binary or [f"baseline={paths.BASELINE}",
                                     f"qemu={paths.QEMU}"], "binary")
    configs = named(args.config or workload["configs"], "config")
    given_pairs = named(args.pair or
                        ([] if args.config else workload.get("pairs", [])),
                        "pair")
    if args.runs < 2:
        raise HarnessError("--runs must be at least 2 for a confidence "
                           "interval")
    for name, path in binaries:
        if not os.access(path, os.X_OK):
            raise HarnessError(f"binary {name}={path} is not an executable")
        matrix.build_binary(path)
    guest = args.guest or workload["folder"]
    guest_args = workload_args(workload, guest)
    if args.el2:
        guest_args = ["-M", "virtualization=on", *guest_args]

    jobs = matrix.plan(binaries, configs)
    ref_pairs = matrix.reference_pairs(
        given_pairs, [c.partition("@")[0] for c, _ in configs],
        {job.config for job in jobs if job.binary == binaries[0][0]})

    out = args.out or paths.BUILD / "bench" / \
        datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    runs = matrix.run_rounds(jobs, args.runs, guest_args, workload,
                             args.timeout, args.barrier_waits, args.busy,
                             args.busy_load, args.shuffle)
    print("bench: probing the region layout grid", flush=True)
    setup = matrix.Setup(["bin/bench", *sys.argv[1:]], args.workload, guest,
                         guest_args, binaries, configs, args.busy,
                         args.busy_load)
    metrics = ["wall_s"] + [column.format(op)
                            for op in workload.get("results", ())
                            for column in OP_COLUMNS] \
        + [stress_metric(g) for g in workload.get("stress", ())] \
        + [build_metric(p) for p in workload.get("build", ())] \
        + (BARRIER_COLUMNS if args.barrier_waits else [])
    matrix.write_results(out, matrix.results(
        setup, ref_pairs, metrics, runs,
        matrix.layout_grid(binaries, args.layout_smp, args.layout_tb_size)))
    report.write(out)


def exit_on_sigterm(signum, frame) -> None:
    """SIGTERM unwinds like an exception, so that a bench stopped by kill
    or timeout stops its QEMU processes and its busy-host load too (they
    outlived it, and loaded the host of the next measurement)."""
    sys.exit(128 + signum)


def main() -> None:
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    try:
        bench(argument_parser().parse_args())
    except HarnessError as e:
        sys.exit(f"bench: {e}")


if __name__ == "__main__":
    main()
