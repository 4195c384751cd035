"""What a bin/bench or bin/compare run boots, and what it reads from one:
the workloads (Debian image, initramfs, tlb-bench, stress-ng, a build),
one run to power-off and its columns, the console's boot phases,
stress-ng's, tlb-bench's and the build's results, the barrier waits QEMU
traced, and BusyHost, other processes keeping host CPUs busy meanwhile."""

import json
import os
import pathlib
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Sequence, Tuple

from . import HarnessError, paths, smaps, stats
from .machine import VIRT, Guest

# Debian's kernel and the initramfs of bin/guest-kernel, whose /init powers
# off and which also holds /tlb-bench and /tlb-stress.
GUEST_KERNEL = {
    "folder": paths.GUEST, "make": "bin/guest-kernel",
    "files": {"-kernel": "vmlinuz", "-initrd": "initrd.cpio"},
}

# The -smp values of the tlb and stress workloads unless --smp names others.
TLB_SMP = (1, 2, 4)
TLB_MODES = ("strict", "relaxed")

# tlb-bench's operations (downstream/guest/tlb-bench.c), and those that
# the tlb workload runs unless --ops names others.
TLB_OPS = ("mprotect", "munmap", "fork",
           "mprotect-far-read", "mprotect-far-write",
           "mprotect-adjacent-read", "mprotect-adjacent-write",
           "mprotect-apart-write", "mprotect-merged-far-write",
           "mprotect-shared-read",
           "tb", "svc", "dsb", "fill", "reread-near", "reread-alone")
TLB_DEFAULT_OPS = ("mprotect", "munmap", "fork")


def tlb_append(ops: Sequence[str], fixed_layout: bool = False) -> str:
    """tlb-bench's kernel command line; @fixed_layout boots the guest
    with the kernel and the process at the same addresses every time."""
    return "console=ttyAMA0 panic=-1 quiet " + \
        ("nokaslr norandmaps " if fixed_layout else "") + \
        "rdinit=/tlb-bench -- " + " ".join(ops)

# The stress workload's groups, run one after another in each boot: the
# stressors of a group run together (stress.groups= of
# downstream/guest/stress-init).  Each makes Linux issue broadcast TLB
# maintenance: shootdowns, permission changes and remaps, address spaces
# torn down, unmapped and discarded memory.
STRESS_GROUPS = ("tlb-shootdown", "mprotect+mremap", "fork+vm", "mmap",
                 "madvise+memfd")


def stress_metric(group: str) -> str:
    return re.sub(r"\W", "_", group) + "_ops_s"


def stress_append(groups: Sequence[str], seconds: int) -> str:
    return ("root=/dev/vda console=ttyAMA0 panic=-1 quiet "
            "init=/sbin/stress-init stress.groups=" + ":".join(groups)
            + f" stress.seconds={seconds}")


# The build workload: the phases of downstream/guest/build-init, each
# timed by the guest's clock.
BUILD_PHASES = ("configure", "make")


def build_metric(phase: str) -> str:
    return f"{phase}_s"


def tlb_configs(smps: Sequence[int], modes=TLB_MODES) -> List[str]:
    """"smpN" is each binary's default: upstream's strict maintenance on
    the baseline, relaxed (our default for Arm) on ours.  The modes are
    also named, and compared with the baseline's smpN."""
    return [f"smp{n}{suffix}=-smp {n}{accel}"
            for n in smps
            for suffix, accel in (("", ""), *((f"-{mode}",
                                               f" -accel tcg,tlb-flush={mode}")
                                              for mode in modes))]


def tlb_pairs(smps: Sequence[int], modes=TLB_MODES) -> List[str]:
    return [f"smp{n}-{mode}=smp{n}" for n in smps for mode in modes]


# The stress and build workloads' matrix: our smpN is the default,
# relaxed, so only strict is named.
STRICT_MATRIX = {
    "configs": tlb_configs(TLB_SMP, ("strict",)),
    "pairs": tlb_pairs(TLB_SMP, ("strict",)),
    "modes": ("strict",),
}


WORKLOADS = {
    "debian": {
        "folder": paths.IMAGE, "make": "make image",
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
        "append": tlb_append(TLB_DEFAULT_OPS),
        "configs": tlb_configs(TLB_SMP),
        "pairs": tlb_pairs(TLB_SMP),
        "results": TLB_DEFAULT_OPS,
    },
    "stress": {
        "folder": paths.IMAGE, "make": "make image",
        "files": {"-kernel": "vmlinuz", "-initrd": "initrd.img"},
        "drive": "rootfs.ext4",
        "append": stress_append(STRESS_GROUPS, 10),
        "memory": "2G",
        "done": r"^stress done\r?$",
        **STRICT_MATRIX,
        "stress": STRESS_GROUPS,
    },
    "build": {
        "folder": paths.BUILD_IMAGE, "make": "make build-image",
        "files": {"-kernel": "vmlinuz", "-initrd": "build-initrd.cpio"},
        "append": "console=ttyAMA0 panic=-1 quiet rdinit=/sbin/build-init",
        "memory": "2G",
        "done": r"^build done\r?$",
        **STRICT_MATRIX,
        "build": BUILD_PHASES,
    },
}

# A stress-ng metrics line: stressor, bogo ops, real, user and system
# time, bogo ops/s of real time, of user and system time.
STRESS_METRIC = re.compile(
    r"^stress-ng: metrc: \[\d+\] (\S+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+"
    r"[\d.]+\s+([\d.]+)\s+[\d.]+\s*$", re.M)

# What the guest's tlb-bench reports per operation: mean, median and 99th
# percentile of the time one operation took, in ns, and how many accesses
# per second the other vCPUs' threads made meanwhile.
OP_COLUMNS = ("{}_ns", "{}_p50_ns", "{}_p99_ns", "{}_others_per_s")

# With --barrier-waits, every DSB that waited for other vCPUs, from the
# tlb_relaxed_barrier trace event: mean, median and 99th percentile of its
# wait in ns, as the metric "barrier_wait" beside the guest's operations.
BARRIER_WAIT = re.compile(
    r"^(?:\d+@[\d.]+:)?tlb_relaxed_barrier .* waited (\d+) ns$", re.M)
BARRIER_COLUMNS = [c.format("barrier_wait") for c in OP_COLUMNS[:3]]


def barrier_wait_columns(trace_log: str) -> Dict[str, Optional[int]]:
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

# /proc/vmstat counters recorded per run (system-wide: keep the host idle).
VMSTAT_COUNTERS = ("pgfault", "thp_fault_alloc")


def vmstat() -> Dict[str, int]:
    values = dict(line.split() for line in
                  pathlib.Path("/proc/vmstat").read_text().splitlines())
    return {k: int(values.get(k, 0)) for k in VMSTAT_COUNTERS}


def workload_args(workload: dict, folder: pathlib.Path) -> List[str]:
    """QEMU arguments that boot @workload from @folder; a missing file
    is a HarnessError naming the command that makes it."""
    files = {option: folder / name for option, name in workload["files"].items()}
    if "drive" in workload:
        files["-drive"] = folder / workload["drive"]
    for f in files.values():
        if not f.is_file():
            raise HarnessError(f"no {f}; run {workload['make']}")
    args = []
    for option, path in files.items():
        if option == "-drive":
            path = f"file={path},format=raw,if=virtio,snapshot=on"
        args += [option, str(path)]
    return [*args, "-m", workload.get("memory", "1G"), "-no-reboot",
            "-append", workload["append"]]


def op_counters(binary, smp: int, accel: str, op: str,
                timeout: float = 600) -> Dict[str, int]:
    """The info jit counters that changed while tlb-bench ran @op at -smp
    @smp with -accel @accel, from its RUN line to its power-off (the
    boot's broadcasts left out, the exit of its threads in), and its
    RESULT line's mean ns as "op_ns".  The guest powers off right after
    RESULT, so the machine stays up for the second reading
    (-no-shutdown), taken once it has stopped.  The guest's layout is
    fixed: the TLB summary hashes addresses, and a boot whose random
    layout makes the mprotected page's bits collide with those of an
    entry another vCPU holds (its kernel's entries too: a TLBI by VA
    reaches the EL1&0 indexes, user and kernel) queues flushes that other
    boots do not: one boot in seven of test_tlb_flush's adjacent shape
    without the probe did, and one in twenty of a diagnostic run."""
    with tempfile.TemporaryDirectory() as tmp:
        guest = start(binary, ["-smp", str(smp), "-accel", accel,
                               "-no-shutdown",
                               *workload_args({**WORKLOADS["tlb"],
                                               "append": tlb_append(
                                                   [op], fixed_layout=True)},
                                              paths.GUEST)],
                      pathlib.Path(tmp))
        try:
            guest.wait_console(rf"^RUN {re.escape(op)} {smp}$", timeout)
            before = guest.jit_info().counters()
            result = guest.wait_console(rf"^RESULT {re.escape(op)} ",
                                        timeout)
            wall, why = guest.wait_shutdown(timeout)
            if wall is None:
                raise HarnessError(f"{op} at -smp {smp}: {why}")
            after = guest.jit_info().counters()
        finally:
            guest.shutdown()
    counts = {k: after[k] - before.get(k, 0) for k in after}
    counts["op_ns"] = int(result.split()[3])
    return counts


def start(binary, args: Sequence, workdir: pathlib.Path,
          wrapper: Sequence[str] = ()) -> Guest:
    """Launch @binary on VIRT plus @args, or raise HarnessError with
    QEMU's complaint; @wrapper is a command that runs QEMU."""
    guest = Guest(binary, [*VIRT, *args], log_dir=str(workdir),
                  wrapper=wrapper)
    guest.add_monitor_null()
    guest.launch()
    return guest


def measure(guest: Guest) -> Dict[str, int]:
    """info jit's counters and the code buffer's smaps of a running guest."""
    fields = guest.jit_info().counters()
    fields.update(smaps.code_buffer(guest.mappings()))
    return fields


def probe(binary, args: Sequence) -> Tuple[Optional[Dict[str, int]],
                                           Optional[str]]:
    """Start paused; return (measure()'s fields, None) or (None, QEMU's
    complaint)."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            guest = start(binary, ["-S", "-m", "1G", *args],
                          pathlib.Path(tmp))
        except HarnessError as e:
            return None, str(e)
        try:
            return measure(guest), None
        finally:
            guest.shutdown()


def run_once(binary, args: Sequence, workload: dict, timeout: float,
             barrier_waits: bool = False) -> dict:
    """Boot to power-off once; return the run's columns."""
    counters = vmstat()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as tmp:
        trace_log = pathlib.Path(tmp) / "barrier-waits.log"
        trace = ["-trace", "tlb_relaxed_barrier", "-D", str(trace_log)] \
            if barrier_waits else []
        guest = start(binary, [*trace, "-no-shutdown", *args],
                      pathlib.Path(tmp))
        try:
            wall, reason = guest.wait_shutdown(timeout)
            fields = measure(guest) if wall is not None else {}
        finally:
            guest.shutdown()    # also when bench is stopped: SIGTERM
        if barrier_waits:
            fields.update(barrier_wait_columns(
                trace_log.read_text() if trace_log.exists() else ""))
            counted = fields.get("tlb_barrier_waits")
            if counted is not None and counted != fields["barrier_waits_traced"]:
                raise HarnessError(
                    f"x-query-jit counts {counted} barrier waits but the "
                    f"trace has {fields['barrier_waits_traced']}: {binary} "
                    "traces no tlb_relaxed_barrier into -D (a build "
                    "without the log trace backend, or -D given in a "
                    "configuration?)")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    console = guest.console()
    done = workload.get("done", r"^booted\r?$")
    if reason != "guest-shutdown" or not re.search(done, console, re.M):
        raise HarnessError(
            f"the guest did not boot and power off ({reason}):\n"
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
    row.update(tlb_bench_columns(console, workload.get("results", ())))
    for group in workload.get("stress", ()):
        row[stress_metric(group)] = stress_ops(console, group, binary, args)
    row.update(build_columns(console, workload.get("build", ()),
                             binary, args))
    return row


def build_columns(console: str, phases: Sequence[str], binary,
                  args: Sequence) -> Dict[str, float]:
    """The seconds each of the build's @phases took by the guest's clock,
    from one boot's console; a HarnessError if one failed."""
    columns = {}
    for phase in phases:
        m = re.search(rf"^BUILD {re.escape(phase)} ([\d.]+) exit (\d+)\r?$",
                      console, re.M)
        if not m:
            raise HarnessError(f"the guest ran no build phase {phase}; "
                               "rebuild its image with make build-image:\n"
                               f"{console[-3000:]}")
        if m.group(2) != "0":
            raise HarnessError(
                f"the build's {phase} phase failed (exit {m.group(2)}):\n"
                f"{shlex.join([str(binary), *map(str, args)])}\n"
                f"{console[-3000:]}")
        columns[build_metric(phase)] = float(m.group(1))
    return columns


def tlb_bench_columns(console: str, ops: Sequence[str]) -> Dict[str, int]:
    """The OP_COLUMNS of each of tlb-bench's operations @ops in a boot's
    console."""
    columns = {}
    for op in ops:
        m = re.search(rf"^RESULT {re.escape(op)} \d+ (\d+) \d+ (\d+) "
                      r"(\d+) (\d+)\r?$", console, re.M)
        if not m:
            raise HarnessError(f"the guest reported no {op} result with "
                               "percentiles and the other threads' "
                               "progress; rebuild the initramfs with "
                               "bin/guest-kernel")
        for column, value in zip(OP_COLUMNS, m.groups()):
            columns[column.format(op)] = int(value)
    return columns


def stress_ops(console: str, group: str, binary, args: Sequence) -> float:
    """The bogo-ops/s of @group's stressors in one boot's console, summed;
    a HarnessError if stress-ng failed (a --verify error is a wrong
    translation)."""
    m = re.search(rf"^stress group {re.escape(group)}\r?$(.*?)"
                  rf"^stress group {re.escape(group)} exit (\d+)\r?$",
                  console, re.M | re.S)
    if not m:
        raise HarnessError(f"the guest ran no stress group {group}; "
                           "rebuild the image with make image")
    metrics = STRESS_METRIC.findall(m.group(1))
    if m.group(2) != "0" or not metrics:
        raise HarnessError(
            f"stress-ng failed group {group} (exit {m.group(2)}):\n"
            f"{shlex.join([str(binary), *map(str, args)])}\n"
            f"{m.group(1)[-3000:]}")
    return round(sum(float(ops_s) for _, _, ops_s in metrics), 2)


# What keeps the host busy: CPU-bound processes, or a parallel compile,
# which forks, reads, writes and sleeps on I/O, so the scheduler treats it
# otherwise.
BUSY_LOADS = ("hogs", "compile")

# The compile: this many of QEMU's own translation units, from the
# compile_commands.json of the build under test, made again and again.
COMPILE_UNITS = 48


def compile_makefile(build: pathlib.Path, out: pathlib.Path) -> str:
    """A makefile that compiles COMPILE_UNITS of @build's translation
    units (those of target/arm and tcg, which take longest) into @out."""
    db = build / "compile_commands.json"
    if not db.is_file():
        raise HarnessError(f"no {db}: --busy-load compile compiles the "
                           "sources of the QEMU build under test")
    units = [u for u in json.loads(db.read_text())
             if re.search(r"/(target/arm|tcg)/", u["file"])][:COMPILE_UNITS]
    rules = []
    for i, unit in enumerate(units):
        words = shlex.split(unit["command"])
        words[words.index("-o") + 1] = str(out / f"unit{i}.o")
        for option in ("-MD", "-MQ", "-MF"):
            while option in words:
                at = words.index(option)
                del words[at:at + (1 if option == "-MD" else 2)]
        rules.append(f"unit{i}:\n\tcd {shlex.quote(unit['directory'])} && "
                     f"{shlex.join(words)}\n")
    return ".PHONY: all " + " ".join(f"unit{i}" for i in range(len(units))) \
        + "\nall: " + " ".join(f"unit{i}" for i in range(len(units))) \
        + "\n" + "".join(rules)


class BusyHost:
    """Keep @n host CPUs busy while the block runs, the way other jobs keep
    a CI runner or a laptop busy: with @n CPU-bound processes ("hogs"),
    or a compile of QEMU's sources with make -j @n ("compile")."""

    def __init__(self, n: int, load: str = "hogs"):
        if load not in BUSY_LOADS:
            raise HarnessError(f"busy load '{load}' is none of "
                               f"{', '.join(BUSY_LOADS)}")
        self.n = n
        self.load = load
        self.procs: List[subprocess.Popen] = []
        self.tmp: Optional[tempfile.TemporaryDirectory] = None

    def __enter__(self) -> "BusyHost":
        if self.n and self.load == "compile":
            self.tmp = tempfile.TemporaryDirectory()
            out = pathlib.Path(self.tmp.name)
            (out / "Makefile").write_text(
                compile_makefile(paths.QEMU_BUILD, out))
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith("CCACHE")}
            env["PATH"] = ":".join(p for p in env.get("PATH", "").split(":")
                                   if "ccache" not in p)
            self.procs = [subprocess.Popen(
                ["sh", "-c", f"while :; do make -s -B -j {self.n} -C "
                 f"{shlex.quote(str(out))} all; done"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=env, start_new_session=True)]
        else:
            self.procs = [subprocess.Popen([sys.executable, "-c",
                                            "while True: pass"])
                          for _ in range(self.n)]
        return self

    def __exit__(self, *exc) -> None:
        for proc in self.procs:
            if self.load == "compile":
                os.killpg(proc.pid, 9)
            else:
                proc.kill()
            proc.wait()
        if self.tmp:
            self.tmp.cleanup()
