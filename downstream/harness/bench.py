"""bin/bench: run each binary under each configuration, interleaved round
by round, and record what every run measured; bin/bench-report then
summarises.

Workloads:
  debian  boot build/image (make image) to power-off with snapshot=on
  boot    boot Debian's kernel with an initramfs whose init powers off
  tlb     the in-guest TLB micro-benchmarks, downstream/guest/tlb-bench.c
  stress  stress-ng in build/image: groups of stressors that make Linux
          issue broadcast TLB maintenance, each group for --stress-seconds
          with --verify, one worker per stressor and vCPU; the metric of a
          group is its stressors' bogo-ops per second summed (higher is
          better).  A stressor that fails its verification stops bench.

Every round runs each (binary, configuration) pair once, in the same order,
so that drift of the host hits all pairs alike (A B A B ...).  Before the
first round every pair is started paused once: a configuration that no
binary accepts is an error, one that only some binaries accept (for
example -accel tcg,tlb-flush=relaxed on the baseline) runs on those.
Each configuration is compared with the reference binary's run of its
namesake or of the configuration --pair names; without either, bench
refuses to start.

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
import csv
import datetime
import itertools
import json
import os
import pathlib
import platform
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

from qemu.machine.machine import QEMUMachineError

from . import BUILD, REPO, report, smaps, stats
from .machine import VIRT, Guest

MACHINE = VIRT

# Debian's kernel and the initramfs of bin/guest-kernel, whose /init powers
# off and which also holds /tlb-bench and /tlb-stress.
GUEST_KERNEL = {
    "folder": BUILD / "guest", "make": "bin/guest-kernel",
    "files": {"-kernel": "vmlinuz", "-initrd": "initrd.cpio"},
}

# The -smp values of the tlb and stress workloads unless --smp names others.
TLB_SMP = (1, 2, 4)

# The stress workload's groups, run one after another in each boot: the
# stressors of a group run together (stress.groups= of
# downstream/guest/stress-init).  Each makes Linux issue broadcast TLB
# maintenance: shootdowns, permission changes and remaps, address spaces
# torn down, unmapped and discarded memory.
STRESS_GROUPS = ("tlb-shootdown", "mprotect+mremap", "fork+vm", "mmap",
                 "madvise+memfd")


def stress_metric(group):
    return re.sub(r"\W", "_", group) + "_ops_s"


def stress_append(groups, seconds):
    return ("root=/dev/vda console=ttyAMA0 panic=-1 quiet "
            "init=/sbin/stress-init stress.groups=" + ":".join(groups)
            + f" stress.seconds={seconds}")


def tlb_configs(smps, modes=("strict", "relaxed")):
    """"smpN" is each binary's default: upstream's strict maintenance on
    the baseline, relaxed (our default for Arm) on ours.  The modes are
    also named, and compared with the baseline's smpN."""
    return [f"smp{n}{suffix}=-smp {n}{accel}"
            for n in smps
            for suffix, accel in (("", ""), *((f"-{mode}",
                                               f" -accel tcg,tlb-flush={mode}")
                                              for mode in modes))]


def tlb_pairs(smps, modes=("strict", "relaxed")):
    return [f"smp{n}-{mode}=smp{n}" for n in smps for mode in modes]


WORKLOADS = {
    "debian": {
        "folder": BUILD / "image", "make": "make image",
        "files": {"-kernel": "vmlinuz", "-initrd": "initrd.img"},
        "drive": "rootfs.ext4",
        "append": "root=/dev/vda console=ttyAMA0 panic=-1",
        "configs": [
            "smp1-tb1024=-smp 1 -accel tcg,tb-size=1024",
            "smp4-tb64=-smp 4 -accel tcg,tb-size=64",
            "smp4-tb256=-smp 4 -accel tcg,tb-size=256",
            "smp4-tb1024=-smp 4 -accel tcg,tb-size=1024",
            "smp4-tb1024-nohuge=-smp 4 -accel tcg,tb-size=1024,tb-huge-pages=off",
            "smp4-tb1024-relaxed=-smp 4 -accel tcg,tb-size=1024,tlb-flush=relaxed",
        ],
        "pairs": ["smp4-tb1024-nohuge=smp4-tb1024",
                  "smp4-tb1024-relaxed=smp4-tb1024"],
    },
    "boot": {
        **GUEST_KERNEL,
        "append": "console=ttyAMA0 panic=-1",
        "configs": [
            "smp1-tb1024=-smp 1 -accel tcg,tb-size=1024",
            "smp4-tb64=-smp 4 -accel tcg,tb-size=64",
            "smp4-tb64-nohuge=-smp 4 -accel tcg,tb-size=64,tb-huge-pages=off",
        ],
        "pairs": ["smp4-tb64-nohuge=smp4-tb64"],
    },
    "tlb": {
        **GUEST_KERNEL,
        "append": "console=ttyAMA0 panic=-1 quiet rdinit=/tlb-bench",
        "configs": tlb_configs(TLB_SMP),
        "pairs": tlb_pairs(TLB_SMP),
        "results": ("mprotect", "munmap", "fork"),
    },
    "stress": {
        "folder": BUILD / "image", "make": "make image",
        "files": {"-kernel": "vmlinuz", "-initrd": "initrd.img"},
        "drive": "rootfs.ext4",
        "append": stress_append(STRESS_GROUPS, 10),
        "memory": "2G",
        "done": r"^stress done\r?$",
        # Our smpN is the default, relaxed: only strict is named.
        "configs": tlb_configs(TLB_SMP, ("strict",)),
        "pairs": tlb_pairs(TLB_SMP, ("strict",)),
        "modes": ("strict",),
        "stress": STRESS_GROUPS,
    },
}

# A stress-ng metrics line: stressor, bogo ops, real, user and system
# time, bogo ops/s of real time, of user and system time.
STRESS_METRIC = re.compile(
    r"^stress-ng: metrc: \[\d+\] (\S+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+"
    r"[\d.]+\s+([\d.]+)\s+[\d.]+\s*$", re.M)

# What the guest's tlb-bench reports per operation: mean, median and 99th
# percentile of the time one operation took, in ns.
OP_COLUMNS = ("{}_ns", "{}_p50_ns", "{}_p99_ns")

# With --barrier-waits, every DSB that waited for other vCPUs, from the
# tlb_relaxed_barrier trace event: mean, median and 99th percentile of its
# wait in ns, as the metric "barrier_wait" beside the guest's operations.
BARRIER_WAIT = re.compile(
    r"^(?:\d+@[\d.]+:)?tlb_relaxed_barrier .* waited (\d+) ns$", re.M)
BARRIER_COLUMNS = [c.format("barrier_wait") for c in OP_COLUMNS]


def barrier_wait_columns(trace_log):
    """The barrier_wait columns of one run's trace log (None where no
    barrier waited), and how many waited."""
    waits = [int(ns) for ns in BARRIER_WAIT.findall(trace_log)]
    if not waits:
        return {"barrier_waits_traced": 0,
                **dict.fromkeys(BARRIER_COLUMNS)}
    return {"barrier_waits_traced": len(waits),
            **dict(zip(BARRIER_COLUMNS,
                       (round(statistics.fmean(waits)),
                        round(stats.quantile(waits, 0.5)),
                        round(stats.quantile(waits, 0.99)))))}


# Console lines that mark the phases of a boot, by the time they arrive.
PHASE_MARKS = {
    "kernel_s": re.compile(r"Booting Linux on physical CPU"),
    "userspace_s": re.compile(r"Run \S+ as init process"),
    "booted_s": re.compile(r"^booted\r?$"),
    "powerdown_s": re.compile(r"reboot: Power down"),
}

# x-query-jit lines recorded per run: column -> pattern with one number.
JIT_FIELDS = {
    "code_bytes": r"^gen code size\s+(\d+)/",
    "code_capacity": r"^gen code size\s+\d+/(\d+)",
    "tb_count": r"^TB count\s+(\d+)",
    "tb_flushes": r"^TB flush count\s+(\d+)",
    "tlb_full_flushes": r"^TLB full flushes\s+(\d+)",
    "tlb_partial_flushes": r"^TLB partial flushes\s+(\d+)",
    "tlb_elided_flushes": r"^TLB elided flushes\s+(\d+)",
    "tlb_relaxed_flushes": r"^TLB relaxed flushes\s+(\d+)",
    "tlb_filtered_out": r"^TLB remote flushes filtered out\s+(\d+)",
    "tlb_barrier_waits": r"^TLB barrier waits\s+(\d+)",
    "tlb_barrier_wait_us": r"^TLB barrier waits\s+\d+ \((\d+) us",
    "regions": r"^code regions\s+(\d+) x",
    "region_kib": r"^code regions\s+\d+ x (\d+) KiB",
}

# /proc/vmstat counters recorded per run (system-wide: keep the host idle).
VMSTAT_COUNTERS = ("pgfault", "thp_fault_alloc")


def vmstat():
    values = dict(line.split() for line in
                  pathlib.Path("/proc/vmstat").read_text().splitlines())
    return {k: int(values.get(k, 0)) for k in VMSTAT_COUNTERS}


def jit_fields(text):
    fields = {}
    for column, pattern in JIT_FIELDS.items():
        m = re.search(pattern, text, re.M)
        if m:
            fields[column] = int(m.group(1))
    return fields


def start(binary, args, workdir):
    """Launch binary on MACHINE plus args, or raise RuntimeError with
    QEMU's complaint."""
    guest = Guest(binary, [*MACHINE, *args], log_dir=str(workdir))
    guest.add_monitor_null()
    try:
        guest.launch()
    except QEMUMachineError as e:
        output = getattr(e, "output", None) or guest.get_log() or str(e)
        raise RuntimeError(output.strip()) from e
    return guest


def measure(guest):
    """x-query-jit and smaps fields of a running guest."""
    fields = jit_fields(guest.jit())
    fields.update(smaps.code_buffer(guest.mappings()))
    return fields


def probe(binary, args):
    """Start paused; return (x-query-jit and smaps fields, None) or
    (None, QEMU's complaint)."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            guest = start(binary, ["-S", "-m", "1G", *args],
                          pathlib.Path(tmp))
        except RuntimeError as e:
            return None, str(e)
        fields = measure(guest)
        guest.shutdown()
        return fields, None


def run_once(binary, args, workload, timeout, barrier_waits=False):
    """Boot to power-off once; return the run's columns."""
    counters = vmstat()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as tmp:
        trace_log = pathlib.Path(tmp) / "barrier-waits.log"
        trace = ["-trace", "tlb_relaxed_barrier", "-D", str(trace_log)] \
            if barrier_waits else []
        guest = start(binary, [*trace, "-no-shutdown", *args],
                      pathlib.Path(tmp))
        wall, reason = guest.wait_shutdown(timeout)
        fields = measure(guest) if wall is not None else {}
        guest.shutdown()
        if barrier_waits:
            fields.update(barrier_wait_columns(
                trace_log.read_text() if trace_log.exists() else ""))
            counted = fields.get("tlb_barrier_waits")
            if counted is not None and counted != fields["barrier_waits_traced"]:
                sys.exit(f"bench: x-query-jit counts {counted} barrier waits "
                         f"but the trace has {fields['barrier_waits_traced']}: "
                         f"{binary} traces no tlb_relaxed_barrier into -D "
                         "(a build without the log trace backend, or -D "
                         "given in a configuration?)")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    console = guest.console()
    done = workload.get("done", r"^booted\r?$")
    if reason != "guest-shutdown" or not re.search(done, console, re.M):
        sys.exit(f"bench: the guest did not boot and power off ({reason}):\n"
                 f"{shlex.join([str(binary), *map(str, args)])}\n"
                 f"{console[-3000:]}")
    row = {"wall_s": round(wall, 3)}
    for column, pattern in PHASE_MARKS.items():
        row[column] = next((round(t, 3) for t, line in guest.lines
                            if pattern.search(line)), None)
    down = re.search(r"^\[\s*([\d.]+)\] reboot: Power down", console, re.M)
    row["guest_poweroff_s"] = float(down.group(1)) if down else None
    row["user_s"] = round(after.ru_utime - usage.ru_utime, 3)
    row["sys_s"] = round(after.ru_stime - usage.ru_stime, 3)
    row.update({k: v - counters[k] for k, v in vmstat().items()})
    row.update(fields)
    for op in workload.get("results", ()):
        m = re.search(rf"^RESULT {op} \d+ (\d+) \d+ (\d+) (\d+)\r?$",
                      console, re.M)
        if not m:
            sys.exit(f"bench: the guest reported no {op} result with "
                     "percentiles; rebuild the initramfs with bin/guest-kernel")
        for column, value in zip(OP_COLUMNS, m.groups()):
            row[column.format(op)] = int(value)
    for group in workload.get("stress", ()):
        row[stress_metric(group)] = stress_ops(console, group, binary, args)
    return row


def stress_ops(console, group, binary, args):
    """The bogo-ops/s of group's stressors in one boot's console, summed;
    exit if stress-ng failed (a --verify error is a wrong translation)."""
    m = re.search(rf"^stress group {re.escape(group)}\r?$(.*?)"
                  rf"^stress group {re.escape(group)} exit (\d+)\r?$",
                  console, re.M | re.S)
    if not m:
        sys.exit(f"bench: the guest ran no stress group {group}; rebuild "
                 "the image with make image")
    metrics = STRESS_METRIC.findall(m.group(1))
    if m.group(2) != "0" or not metrics:
        sys.exit(f"bench: stress-ng failed group {group} (exit {m.group(2)}):\n"
                 f"{shlex.join([str(binary), *map(str, args)])}\n"
                 f"{m.group(1)[-3000:]}")
    return round(sum(float(ops_s) for _, _, ops_s in metrics), 2)


class BusyHost:
    """n processes that keep host CPUs busy, the way other jobs keep a CI
    runner or a laptop busy, while the block runs."""

    def __init__(self, n):
        self.n = n
        self.procs = []

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c",
                                        "while True: pass"])
                      for _ in range(self.n)]
        return self

    def __exit__(self, *exc):
        for proc in self.procs:
            proc.kill()
            proc.wait()


def workload_args(workload, folder, who):
    """QEMU arguments that boot workload from folder; exit naming the
    command that makes a missing file."""
    files = {option: folder / name for option, name in workload["files"].items()}
    if "drive" in workload:
        files["-drive"] = folder / workload["drive"]
    for f in files.values():
        if not f.is_file():
            sys.exit(f"{who}: no {f}; run {workload['make']}")
    args = []
    for option, path in files.items():
        if option == "-drive":
            path = f"file={path},format=raw,if=virtio,snapshot=on"
        args += [option, path]
    return [*args, "-m", workload.get("memory", "1G"), "-no-reboot",
            "-append", workload["append"]]


def repo_relative(text):
    """@text with this repository's absolute path made relative to it, so
    that results.json does not name the machine's folders."""
    return str(text).replace(f"{REPO}/", "")


def parse_pairs(items, what):
    pairs = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            sys.exit(f"bench: {what} '{item}' is not NAME=VALUE")
        pairs.append((name, value))
    return pairs


def binary_source(path):
    """The source tree commit a meson-built binary came from, with
    "-dirty" if the tree had uncommitted changes, or None if unknown."""
    info = pathlib.Path(path).resolve().parent / "meson-info" / "meson-info.json"
    try:
        source = json.loads(info.read_text())["directories"]["source"]
    except (OSError, ValueError, KeyError):
        return None
    proc = subprocess.run(["git", "-C", source, "describe", "--always",
                           "--abbrev=40", "--dirty", "--match", "NONE"],
                          capture_output=True, text=True)
    return proc.stdout.strip() or None


def reference_pairs(given, configs, ref_configs):
    """Map each configuration to the reference binary's configuration it
    is compared with: the one given (NAME, REF pairs), else its namesake."""
    pairs = {}
    for name, ref_config in given:
        if name not in configs:
            sys.exit(f"bench: --pair {name}={ref_config} names no configuration")
        if name in pairs:
            sys.exit(f"bench: configuration {name} is paired twice")
        pairs[name] = ref_config
    for name in configs:
        ref_config = pairs.setdefault(name, name)
        if ref_config not in ref_configs:
            sys.exit(f"bench: configuration {name} has no reference run: "
                     f"the reference binary does not run {ref_config}; "
                     f"give --pair {name}=CONFIG")
    return pairs


def machine():
    cpu = "unknown"
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    thp = pathlib.Path("/sys/kernel/mm/transparent_hugepage/enabled")
    meminfo = pathlib.Path("/proc/meminfo").read_text().split()
    return {"cpu": cpu, "cpus": os.cpu_count(),
            "cpus_usable": len(os.sched_getaffinity(0)),
            "memory_gib": round(int(meminfo[1]) / 2 ** 20, 1),
            "kernel": f"Linux {platform.release()}",
            "thp": thp.read_text().strip() if thp.exists() else "absent",
            "python": platform.python_version()}


def layout_grid(binaries, smps, tb_sizes):
    """The code buffer layout of each binary at each -smp and tb-size."""
    grid = []
    for (bname, path), smp, tb in itertools.product(binaries, smps, tb_sizes):
        fields, error = probe(path, ["-smp", str(smp),
                                     "-accel", f"tcg,tb-size={tb}"])
        grid.append({"binary": bname, "smp": smp, "tb_size_mib": tb,
                     "error": error, **(fields or {})})
    return grid


def int_list(text):
    try:
        return [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a list of integers")


def main():
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
                        help="-smp values of the tlb and stress workloads' "
                        "configurations (default: 1,2,4)")
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
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="keep N host CPUs busy with other processes "
                        "while every run runs (default: %(default)s)")
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
    parser.add_argument("--barrier-waits", action="store_true",
                        help="trace every DSB that waits for other vCPUs "
                        "(QEMU's tlb_relaxed_barrier event) and report "
                        "its wait's mean, median and 99th percentile as "
                        "barrier_wait_ns; the trace costs a little time")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds one run may take (default: %(default)s)")
    args = parser.parse_args()

    workload = WORKLOADS[args.workload]
    if args.stress_seconds < 1:
        sys.exit("bench: --stress-seconds must be at least 1")
    if args.busy < 0:
        sys.exit("bench: --busy must be at least 0")
    groups = args.stress_groups.split(":")
    if not all(re.fullmatch(r"[a-z0-9-]+(\+[a-z0-9-]+)*", g) for g in groups):
        sys.exit(f"bench: --stress-groups '{args.stress_groups}' is not "
                 "stressor+stressor:...")
    if args.workload == "stress":
        workload = {**workload, "stress": groups,
                    "append": stress_append(groups, args.stress_seconds)}
    if args.smp:
        if args.workload not in ("tlb", "stress") or args.config:
            sys.exit("bench: --smp sets the tlb and stress workloads' "
                     "configurations; it takes no --config")
        if min(args.smp) < 1 or len(set(args.smp)) < len(args.smp):
            sys.exit("bench: --smp values must be distinct and at least 1")
        modes = workload.get("modes", ("strict", "relaxed"))
        workload = {**workload, "configs": tlb_configs(args.smp, modes),
                    "pairs": tlb_pairs(args.smp, modes)}
    binaries = parse_pairs(args.binary or [
        f"baseline={BUILD / 'baseline' / 'qemu-system-aarch64'}",
        f"qemu={BUILD / 'qemu' / 'qemu-system-aarch64'}"], "binary")
    configs = parse_pairs(args.config or workload["configs"], "config")
    given_pairs = parse_pairs(args.pair or
                              ([] if args.config else workload.get("pairs", [])),
                              "pair")
    if args.runs < 2:
        sys.exit("bench: --runs must be at least 2 for a confidence interval")
    for name, path in binaries:
        if not os.access(path, os.X_OK):
            sys.exit(f"bench: binary {name}={path} is not an executable")
    guest = args.guest or workload["folder"]
    guest_args = workload_args(workload, guest, "bench")
    if args.el2:
        guest_args = ["-M", "virtualization=on", *guest_args]

    plan = []
    for cname, cargs in configs:
        cname, _, only = cname.partition("@")
        if only and only not in dict(binaries):
            sys.exit(f"bench: configuration {cname} names unknown binary {only}")
        accepted = []
        for bname, path in binaries:
            if only and bname != only:
                continue
            _, error = probe(path, shlex.split(cargs))
            if error is None:
                accepted.append(bname)
                plan.append((bname, path, cname, shlex.split(cargs)))
            else:
                print(f"bench: {bname} does not run {cname}: {error}",
                      file=sys.stderr)
        if not accepted:
            sys.exit(f"bench: no binary accepts configuration {cname}")
    ref_configs = {c for b, _, c, _ in plan if b == binaries[0][0]}
    ref_pairs = reference_pairs(given_pairs,
                                [c.partition("@")[0] for c, _ in configs],
                                ref_configs)

    out = args.out or BUILD / "bench" / \
        datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    total = args.runs * len(plan)
    began = time.monotonic()
    with BusyHost(args.busy):
        for rnd in range(1, args.runs + 1):
            for bname, path, cname, cargs in plan:
                row = run_once(path, [*cargs, *guest_args], workload,
                               args.timeout, args.barrier_waits)
                rows.append({"round": rnd, "binary": bname, "config": cname,
                             **row})
                eta = (time.monotonic() - began) / len(rows) * \
                    (total - len(rows))
                print(f"[{len(rows)}/{total}] round {rnd} {bname:10} "
                      f"{cname:22} wall {row['wall_s']:7.2f} s  "
                      f"ETA {eta / 60:5.1f} min", flush=True)

    print("bench: probing the region layout grid", flush=True)
    results = {
        "workload": args.workload,
        "command": repo_relative(shlex.join(["bin/bench", *sys.argv[1:]])),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": machine(),
        "busy_host_processes": args.busy,
        "guest": repo_relative(guest),
        "qemu_args": repo_relative(shlex.join([*MACHINE, *map(str, guest_args)])),
        "binaries": {n: repo_relative(p) for n, p in binaries},
        "binary_sources": {n: binary_source(p) for n, p in binaries},
        "pairs": ref_pairs,
        "configs": {c.partition("@")[0]: a for c, a in configs},
        "metrics": ["wall_s"] + [column.format(op)
                                 for op in workload.get("results", ())
                                 for column in OP_COLUMNS]
                   + [stress_metric(g) for g in workload.get("stress", ())]
                   + (BARRIER_COLUMNS if args.barrier_waits else []),
        "runs": rows,
        "layout": layout_grid(binaries, args.layout_smp, args.layout_tb_size),
    }
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    report.write(out)


if __name__ == "__main__":
    main()
