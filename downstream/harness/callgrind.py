"""bin/callgrind-ops: count the host instructions a tlb-bench operation
costs QEMU.

Boot BINARY under valgrind's callgrind with build/guest's tlb-bench
running OP..., each repeated for --seconds guest seconds, at -smp --smp.
Zero callgrind's counters when the guest prints "RUN OP" and dump them
at "RESULT OP", so that each dump holds what QEMU's vCPU thread executed
while the guest repeated OP, and print per OP: instructions, operations,
instructions per operation.  Name the OPs in the order of tlb-bench's
table, the order it runs them in.  tb, svc, dsb and fill repeat their
path 1000 times per operation.

The guest's timer interrupts run while OP repeats, as many per guest
second in either binary; without icount a guest second is a host second,
and a binary that repeats OP fewer times in it (under valgrind) counts
more interrupt work per operation.  --icount SHIFT runs the guest with
-icount shift=SHIFT, where a guest second is a number of guest
instructions, so both binaries take the same interrupts per operation
(SHIFT 6 with --seconds 1 takes about a minute per OP).  icount makes
QEMU use strict TLB maintenance: at -smp 1 only broadcast TLBIs (munmap,
fork, mprotect) take another path than the default's.  The guest boots
with a fixed layout (workloads.tlb_append), so that its code collides
alike in both binaries' jump caches.

Instructions do not depend on where the linker put the code, so two
binaries compare by the work their paths do, where their times also
measure code placement (downstream/benchmarks/tlb-idle.md).  Under
valgrind QEMU runs ~50x slower: a boot takes minutes.

  bin/callgrind-ops --icount 6 --seconds 1 \\
      build/baseline/qemu-system-aarch64 tb svc dsb fill
"""

import argparse
import pathlib
import shutil
import subprocess
import sys
import tempfile

from . import HarnessError, paths
from .machine import VIRT, Guest
from .workloads import TLB_OPS, WORKLOADS, tlb_append, workload_args


def instructions(dump: pathlib.Path) -> int:
    """The total of a callgrind dump ("summary:" or "totals:" line)."""
    for line in dump.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise HarnessError(f"no total in {dump}")


def count(binary, ops, smp: int, seconds: int, icount, keep) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        append = tlb_append([f"seconds={seconds}", *ops], fixed_layout=True)
        guest = Guest(binary,
                      [*(["-icount", f"shift={icount}"] if icount else []),
                       *VIRT, "-smp", str(smp),
                       *workload_args({**WORKLOADS["tlb"], "append": append},
                                      paths.GUEST)],
                      log_dir=tmp,
                      wrapper=["valgrind", "--tool=callgrind",
                               "--separate-threads=yes",
                               f"--callgrind-out-file={work}/cg.out"])
        guest.launch()
        try:
            print(f"{'op':26} {'instructions':>16} {'ops':>10} "
                  f"{'per op':>14}", flush=True)
            for op in ops:
                guest.wait_console(rf"^RUN {op} ", 3600)
                subprocess.run(["callgrind_control", "-z",
                                str(guest.get_pid())],
                               capture_output=True, check=True)
                result = guest.wait_console(rf"^RESULT {op} ", 3600)
                subprocess.run(["callgrind_control", "-d", op,
                                str(guest.get_pid())],
                               capture_output=True, check=True)
                # One file per thread: the vCPU's is the busiest; the
                # main loop's work depends on host time, not on OP.
                dumps = list(work.glob("cg.out.*"))
                dump = max(dumps, key=instructions)
                n, done = instructions(dump), int(result.split()[4])
                if keep:
                    shutil.copy(dump, keep / f"{op}.callgrind")
                for d in dumps:
                    d.unlink()
                print(f"{op:26} {n:16} {done:10} {n / done:14.0f}",
                      flush=True)
        finally:
            guest.shutdown(hard=True)


def main():
    parser = argparse.ArgumentParser(
        prog="bin/callgrind-ops", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary", type=pathlib.Path)
    parser.add_argument("ops", nargs="+", metavar="OP", choices=TLB_OPS)
    parser.add_argument("--smp", type=int, default=1)
    parser.add_argument("--seconds", type=int, default=20,
                        help="guest seconds per OP (default %(default)s)")
    parser.add_argument("--icount", type=int, metavar="SHIFT",
                        help="run the guest with -icount shift=SHIFT")
    parser.add_argument("--keep", type=pathlib.Path, metavar="DIR",
                        help="keep each dump as DIR/OP.callgrind")
    args = parser.parse_args()
    for tool in ("valgrind", "callgrind_control"):
        if not shutil.which(tool):
            parser.error(f"no {tool}; apt-get install valgrind")
    if not (paths.GUEST / "initrd.cpio").is_file():
        parser.error(f"no {paths.GUEST / 'initrd.cpio'}: run 'make guest'")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    try:
        count(args.binary, args.ops, args.smp, args.seconds, args.icount,
              args.keep)
    except HarnessError as e:
        sys.exit(f"callgrind-ops: {e}")


if __name__ == "__main__":
    main()
