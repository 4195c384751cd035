"""bin/host-profile: where QEMU's host time goes in one run of a bench
workload (by default the build): run it once under perf record -e
cpu-clock (hardware counters are not needed), then sort the samples of
QEMU's process into what QEMU was doing: running translated code,
generating code, looking TBs up, the softmmu TLB and guest memory
access, Arm's pointer authentication, other helpers, invalidating TBs,
its execution loop, locks and waiting, the host kernel.  Writes profile.txt (the shares, the top
symbols, the run's phases and info jit) and perf.data to --out."""

import argparse
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from typing import Dict, Iterable, List, Tuple

from . import HarnessError, paths
from .machine import VIRT
from .workloads import WORKLOADS, build_columns, start, workload_args

# What a sample was doing, by its shared object and symbol: the first
# category whose pattern matches "DSO SYMBOL" wins.  Translated code has
# no symbol: perf finds the code buffer's addresses in no object and
# names them after the map file it looked for, perf-PID.map.
CATEGORIES: List[Tuple[str, str]] = [
    ("translated code", r"^perf-\d+\.map "),
    ("host kernel", r"^\[kernel"),
    ("code generation", r"\s(tcg_|tb_gen_code|translator_|gen_|disas_|"
     r"aarch64_tr_|trans_|liveness_|la_|reachable_code|fold_|finish_"
     r"folding|do_constant|init_ts_info|temp_|reg_|patch_reloc|"
     r"set_jmp_reset|arm_tr_|a64_|decode_)"),
    ("TB lookup and chaining", r"\s(tb_lookup|tb_htable|qht_|tb_cmp|"
     r"helper_lookup_tb_ptr|cpu_get_tb_cpu_state|arm_get_tb_cpu_state|"
     r"tb_add_jump|tb_jmp_|tb_link_page|tb_set_jmp|cpu_tb_exec|"
     r"tb_page_addr|jump_cache)"),
    ("TB invalidation", r"\s(tb_invalidate|tb_phys_invalidate|"
     r"do_tb_phys_invalidate|page_collection|tb_remove|tb_page_remove|"
     r"tb_jmp_unlink|tb_flush|do_tb_flush|tcg_region_reset)"),
    ("softmmu TLB and memory", r"\s(tlb_|cputlb|probe_access|do_ld|"
     r"do_st|mmu_lookup|victim_tlb|get_page_addr_code|address_space_|"
     r"flatview_|memory_region_|io_|arm_cpu_tlb_fill|get_phys_addr|"
     r"arm_ld|arm_casq|helper_(ld|st|le_|be_|ret_)|cpu_ld|cpu_st|"
     r"notdirty|pagetable_|regime_|ptw_|S1_|S2_|arm_mmu|do_ats_write)"),
    ("pointer authentication", r"\s(pauth_|helper_pac|helper_aut|"
     r"helper_xpac)"),
    ("other helpers", r"\shelper_"),
    ("execution loop", r"\s(cpu_exec|cpu_handle_|cpu_loop_exit|"
     r"__sigsetjmp|siglongjmp|__longjmp|_longjmp|longjmp|"
     r"arm_cpu_exec_interrupt|arm_cpu_has_work|cpu_exit|qemu_cpu_kick|"
     r"mttcg_cpu_thread_fn|rr_cpu_thread_fn)"),
    ("locks and waiting", r"\s(qemu_mutex|qemu_cond|qemu_event|futex|"
     r"pthread_|bql_|qemu_sem|__lll_|__GI___lll|"
     r"start_exclusive|end_exclusive|cpu_exec_start|cpu_exec_end|"
     r"process_queued_cpu_work|async_run_on_cpu|do_run_on_cpu)"),
]


def category(dso: str, symbol: str) -> str:
    key = f"{dso} {symbol}"
    return next((name for name, pattern in CATEGORIES
                 if re.search(pattern, key)), "other")


# A line of perf script -F ip,sym,dso: "  7f35ee96cd77 SYM (DSO)"; a
# sample in translated code reads "[unknown] (perf-PID.map)", so all of
# them count as one symbol.
SAMPLE_LINE = re.compile(r"^\s*[0-9a-f]+ (.*) \((.*)\)$")


def read_samples(text: str) -> List[Tuple[float, str, str]]:
    """(percent, dso, symbol) of perf script's samples, largest first."""
    counts: Counter = Counter()
    for line in text.splitlines():
        m = SAMPLE_LINE.match(line)
        if m:
            symbol, dso = m.group(1), m.group(2)
            dso = "[kernel]" if dso.startswith("[kernel") else \
                os.path.basename(dso)
            counts[dso, symbol] += 1
    total = sum(counts.values()) or 1
    return [(100 * n / total, dso, symbol)
            for (dso, symbol), n in counts.most_common()]


def shares(rows: Iterable[Tuple[float, str, str]]) -> Dict[str, float]:
    """Percent of the samples per category, largest first."""
    totals: Dict[str, float] = {}
    for percent, dso, symbol in rows:
        name = category(dso, symbol)
        totals[name] = totals.get(name, 0.0) + percent
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def profile(binary, qemu_args: List[str], workload: dict,
            out: pathlib.Path, frequency: int, timeout: float) -> str:
    """Run @workload once under perf record; return profile.txt's text."""
    perf = shutil.which("perf")
    if not perf:
        raise HarnessError("no perf; install linux-perf")
    data = out / "perf.data"
    args = [*qemu_args, "-no-shutdown",
            *workload_args(workload, workload["folder"])]
    with tempfile.TemporaryDirectory() as tmp:
        guest = start(binary, args, pathlib.Path(tmp),
                      wrapper=[perf, "record", "-q", "-e", "cpu-clock",
                               "-F", str(frequency), "-o", str(data), "--"])
        try:
            wall, reason = guest.wait_shutdown(timeout)
            jit = guest.jit_info().text if wall is not None else ""
        finally:
            guest.shutdown()
    console = guest.console()
    if wall is None or not re.search(workload.get("done", r"^booted\r?$"),
                                     console, re.M):
        raise HarnessError(f"the run did not finish ({reason}):\n"
                           f"{console[-2000:]}")
    phases = build_columns(console, workload.get("build", ()), binary, args)
    script = subprocess.run([perf, "script", "-i", str(data), "-F",
                             "ip,sym,dso"],
                            capture_output=True, text=True, check=False)
    if script.returncode:
        raise HarnessError(f"perf script failed:\n{script.stderr}")
    rows = read_samples(script.stdout)
    command = shlex.join(map(str, [binary, *VIRT, *args]))
    lines = [f"command: {paths.repo_relative_command(command)}",
             "; ".join([f"wall {wall:.1f} s",
                        *(f"{k} {v:.1f} s" for k, v in phases.items())]),
             "", "host time by what QEMU was doing (% of cpu-clock samples):"]
    lines += [f"  {pct:5.1f}%  {name}" for name, pct in shares(rows).items()]
    lines += ["", "top symbols:"]
    lines += [f"  {pct:5.2f}%  {category(dso, sym):24} {dso} {sym}"
              for pct, dso, sym in rows[:40]]
    lines += ["", "info jit after the run:", jit]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="bin/host-profile",
                                     description=__doc__)
    parser.add_argument("--binary", default=str(paths.QEMU),
                        help="qemu-system-aarch64 (default: %(default)s)")
    parser.add_argument("--workload", choices=WORKLOADS, default="build",
                        help="what the run boots (default: %(default)s)")
    parser.add_argument("--config", default="-smp 2", metavar="ARGS",
                        help="QEMU arguments (default: %(default)s)")
    parser.add_argument("--frequency", type=int, default=999,
                        help="samples per second (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=1200)
    parser.add_argument("--out", type=pathlib.Path, required=True,
                        help="folder for profile.txt and perf.data")
    args = parser.parse_args()
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        text = profile(args.binary, args.config.split(),
                       WORKLOADS[args.workload], args.out, args.frequency,
                       args.timeout)
    except HarnessError as e:
        sys.exit(f"host-profile: {e}")
    (args.out / "profile.txt").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
