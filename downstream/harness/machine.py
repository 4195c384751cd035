"""qemu-system-aarch64, launched in one place: every QEMU process of the
harness, the bin/ tools and the tests starts here.

A Guest (QEMU's own qemu.machine.QEMUMachine) runs a machine with QMP;
run_qemu() runs QEMU without a monitor to its exit (bad input that must
be refused, -help, a semihosting tests/tcg kernel whose output is the
result).  "info jit" is parsed here too, once: Guest.jit_info() returns a
Jit."""

import asyncio
import dataclasses
import os
import re
import socket
import subprocess
import threading
import time
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from qemu.machine import QEMUMachine
from qemu.machine.machine import QEMUMachineError

from . import HarnessError, smaps

# The board every harness run uses; callers add -smp, -accel, the guest.
VIRT = ["-M", "virt,gic-version=3", "-cpu", "max", "-nic", "none"]

# A QEMU binary, or a command that runs one ("build/device/run qemu").
Qemu = Union[str, os.PathLike, Sequence[str]]


class Exit(NamedTuple):
    """How a run_qemu() process ended: its exit status, None if it was
    killed at its timeout, and what it wrote."""
    returncode: Optional[int]
    stdout: str
    stderr: str


def _text(output: Union[bytes, str, None]) -> str:
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


def run_qemu(qemu: Qemu, args: Sequence, timeout: float) -> Exit:
    """Run @qemu with @args to its exit, at most @timeout seconds."""
    prefix = [qemu] if isinstance(qemu, (str, os.PathLike)) else list(qemu)
    try:
        proc = subprocess.run([str(a) for a in [*prefix, *args]],
                              capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        return Exit(None, _text(e.stdout), _text(e.stderr))
    return Exit(proc.returncode, proc.stdout, proc.stderr)


class Regions(NamedTuple):
    """The "code regions" line of info jit."""
    count: int
    kib: int
    guard_pages: bool


# The labels of info jit's "LABEL   VALUE" lines (the value starts at
# column 20, or after one blank where the label is longer).
JIT_LABELS = (
    "gen code size", "code buffer", "code regions", "code huge pages",
    "TB count", "TB avg target size", "TB avg host size",
    "cross page TB count", "direct jump count", "TB hash buckets",
    "TB hash occupancy", "TB hash avg chain", "TB flush count",
    "TB invalidate count", "TLB full flushes", "TLB partial flushes",
    "TLB elided flushes", "TLB index flushes", "TLB fills",
    "TB jmp cache misses", "TB jmp cache wipes", "TB lookups",
    "TB inline hits", "TB lookup misses", "TLB flush mode",
    "TLB relaxed flushes",
    "TLB remote flushes filtered out", "TLB remote catch-ups",
    "TLB barrier waits", "TLB barrier policy", "TLB parks",
)

# The counters of info jit that bin/bench records per run: column ->
# (label, pattern of the number in its value).
JIT_COUNTERS = {
    "code_bytes": ("gen code size", r"^(\d+)/"),
    "code_capacity": ("gen code size", r"^\d+/(\d+)"),
    "tb_count": ("TB count", r"^(\d+)"),
    "tb_flushes": ("TB flush count", r"^(\d+)"),
    "tb_invalidations": ("TB invalidate count", r"^(\d+)"),
    "tlb_full_flushes": ("TLB full flushes", r"^(\d+)"),
    "tlb_partial_flushes": ("TLB partial flushes", r"^(\d+)"),
    "tlb_elided_flushes": ("TLB elided flushes", r"^(\d+)"),
    "tlb_index_flushes": ("TLB index flushes", r"^(\d+)"),
    "tlb_fills": ("TLB fills", r"^(\d+)"),
    "tlb_tables_grown": ("TLB fills", r"grown (\d+)"),
    "tlb_tables_shrunk": ("TLB fills", r"shrunk (\d+)"),
    "jc_misses": ("TB jmp cache misses", r"^(\d+)"),
    "jc_wipes": ("TB jmp cache wipes", r"^(\d+)"),
    "jc_lookups": ("TB lookups", r"^(\d+)"),
    "jc_inline_hits": ("TB inline hits", r"^(\d+)"),
    "jc_lookup_misses": ("TB lookup misses", r"^(\d+)"),
    "tlb_relaxed_flushes": ("TLB relaxed flushes", r"^(\d+)"),
    "tlb_alone": ("TLB relaxed flushes", r"queued for no other vCPU (\d+)"),
    "tlb_filtered_out": ("TLB remote flushes filtered out", r"^(\d+)"),
    "tlb_probed": ("TLB remote flushes filtered out", r"TLBs probed (\d+)"),
    "tlb_probe_skipped": ("TLB remote flushes filtered out",
                          r"held nothing (\d+)"),
    "tlb_catch_ups": ("TLB remote catch-ups", r"^(\d+)"),
    "tlb_kicks": ("TLB remote catch-ups", r"kicks (\d+)"),
    "tlb_barrier_waits": ("TLB barrier waits", r"^(\d+)"),
    "tlb_barrier_wait_us": ("TLB barrier waits", r"^\d+ \((\d+) us"),
    "tlb_parks": ("TLB parks", r"^(\d+)"),
    "tlb_parked_us": ("TLB parks", r"^\d+ \((\d+) us"),
    "regions": ("code regions", r"^(\d+) x"),
    "regions_in_use": ("code regions", r", (\d+) in use,"),
    "region_kib": ("code regions", r"^\d+ x (\d+) KiB"),
}


def _by_cause(label, causes):
    """JIT_COUNTERS columns for the "(CAUSE N, CAUSE N, ...)" list of
    @label's line: @causes maps each column to its CAUSE."""
    return {column: (label, rf"(?:\(|, ){cause} (\d+)")
            for column, cause in causes.items()}


# The causes as accel/tcg/tcg-stats.c names them (TLBFlushCause,
# TBJmpCacheMiss, TBJmpCacheWipe, TBLookupSource).
JIT_COUNTERS.update(_by_cause("TLB index flushes", {
    "tlb_flushes_maintenance": "maintenance",
    "tlb_flushes_address_space": "address space",
    "tlb_flushes_register": "register",
    "tlb_flushes_range": "range",
    "tlb_flushes_large_page": "large page",
}))
JIT_COUNTERS.update(_by_cause("TB jmp cache misses", {
    "jc_misses_cleared": "cleared",
    "jc_misses_empty": "empty",
    "jc_misses_same_page": "same page",
    "jc_misses_other_page": "other page",
    "jc_misses_invalid": "invalid",
    "jc_misses_flags": "flags",
    "jc_misses_cflags": "cflags",
}))
JIT_COUNTERS.update(_by_cause("TB jmp cache wipes", {
    "jc_wipes_tlb_flush": "TLB flush",
    "jc_wipes_clean_flush": "clean TLB flush",
    "jc_wipes_range": "range",
    "jc_wipes_tb_invalidate": "TB invalidate",
    "jc_wipes_other": "other",
}))
# -accel tcg,x-lookup-stats=on: TB lookups and their misses by what made
# them (TBLookupSource), as jc_lookups_return, jc_lookup_misses_page_end...,
# and with x-inline-lookup those that the inline probe found
# (jc_inline_hits_return...), which the lookups include.
LOOKUP_SOURCES = ("other", "return", "jump", "call", "branch", "page end",
                  "main loop")


def _by_source(label, prefix):
    """_by_cause() for @label's line of lookups by LOOKUP_SOURCES."""
    return _by_cause(label, {prefix + "_" + source.replace(" ", "_"): source
                             for source in LOOKUP_SOURCES})


JIT_COUNTERS.update(_by_source("TB lookups", "jc_lookups"))
JIT_COUNTERS.update(_by_source("TB inline hits", "jc_inline_hits"))
JIT_COUNTERS.update(_by_source("TB lookup misses", "jc_lookup_misses"))


@dataclasses.dataclass(frozen=True)
class Jit:
    """The text of "info jit" and its lines' values by label (a build
    without our patches lacks some lines: their values are None)."""
    text: str
    values: Dict[str, str]

    @classmethod
    def parse(cls, text: str) -> "Jit":
        values = {}
        for line in text.replace("\r", "").splitlines():
            label = max((lb for lb in JIT_LABELS
                         if line == lb or line.startswith(lb + " ")),
                        key=len, default=None)
            if label:
                values[label] = line[len(label):].strip()
        return cls(text, values)

    def _match(self, label: str, pattern: str) -> Optional[re.Match]:
        value = self.values.get(label)
        return re.search(pattern, value) if value is not None else None

    def counters(self) -> Dict[str, int]:
        """The JIT_COUNTERS columns that this info jit has."""
        columns = {}
        for column, (label, pattern) in JIT_COUNTERS.items():
            m = self._match(label, pattern)
            if m:
                columns[column] = int(m.group(1))
        return columns

    @property
    def code_capacity(self) -> Optional[int]:
        """The translation buffer's size in bytes ("gen code size")."""
        return self.counters().get("code_capacity")

    @property
    def code_buffer(self) -> Optional[Tuple[int, int]]:
        """The code buffer's address range [start, end)."""
        m = self._match("code buffer", r"^0x([0-9a-f]+)-0x([0-9a-f]+)$")
        return (int(m.group(1), 16), int(m.group(2), 16)) if m else None

    @property
    def regions(self) -> Optional[Regions]:
        m = self._match("code regions", r"^(\d+) x (\d+) KiB, "
                        r"\d+ in use, guard pages (on|off)$")
        return Regions(int(m.group(1)), int(m.group(2)),
                       m.group(3) == "on") if m else None

    @property
    def huge_pages(self) -> Optional[str]:
        """How much of the code buffer is on huge pages: "none", or "2048
        KiB, R/T KiB resident"."""
        return self.values.get("code huge pages")

    @property
    def tlb_flush_mode(self) -> Optional[str]:
        """strict or relaxed."""
        mode = self.values.get("TLB flush mode")
        return mode.split()[0] if mode else None

    @property
    def tlb_flush_reason(self) -> Optional[str]:
        """Why the mode is in force ("default: every CPU supports
        relaxed", "icount or record/replay", ...)."""
        m = self._match("TLB flush mode", r"^\S+ \((.*)\)$")
        return m.group(1) if m else None

    @property
    def barrier_policy(self) -> Optional[str]:
        """How a relaxed TLB barrier waits (relaxed mode only)."""
        return self.values.get("TLB barrier policy")

    @property
    def polling_vcpus(self) -> Optional[Tuple[int, int]]:
        """How many vCPUs poll at a barrier now, of how many."""
        m = self._match("TLB barrier policy",
                        r"\((\d+) of (\d+) vCPUs poll now\)$")
        return (int(m.group(1)), int(m.group(2))) if m else None


class Guest(QEMUMachine):
    """A QEMUMachine with QMP and the first serial port on sockets.  Every
    console line is kept with its arrival time, in seconds since launch(),
    which is also the origin of wait_shutdown()'s time.  @wrapper is a
    command that runs QEMU (taskset -c 0)."""

    def __init__(self, binary, args: Sequence, log_dir: Optional[str] = None,
                 wrapper: Sequence[str] = ()):
        super().__init__(str(binary), args=[str(a) for a in args],
                         wrapper=wrapper, log_dir=log_dir)
        self.set_console()
        self.lines: List[Tuple[float, str]] = []
        self.started = 0.0
        self._reader: Optional[threading.Thread] = None

    def launch(self) -> None:
        """Start QEMU, or raise HarnessError with what QEMU said."""
        self.started = time.monotonic()
        try:
            super().launch()
        except QEMUMachineError as e:
            output = getattr(e, "output", None) or self.get_log() or str(e)
            raise HarnessError(output.strip()) from e
        # Open the console here: QEMUMachine opens it on first use, and a
        # QEMU that exits at once would otherwise be shut down (and the
        # socket pair dropped) before the reader thread first uses it.
        console = self.console_socket
        self._reader = threading.Thread(target=self._read_console,
                                        args=(console,), daemon=True)
        self._reader.start()

    def _read_console(self, console: socket.socket) -> None:
        try:
            for raw in console.makefile("rb"):
                self.lines.append((time.monotonic() - self.started,
                                   raw.decode(errors="replace")
                                   .rstrip("\r\n")))
        except (OSError, ValueError):
            pass    # the socket closes with the machine

    def _post_shutdown(self) -> None:
        super()._post_shutdown()
        if self._reader:
            self._reader.join(timeout=5)

    def console(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def wait_console(self, pattern: str, timeout: float) -> str:
        """The first console line that matches @pattern, waiting up to
        @timeout seconds; a HarnessError if none comes."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            lines = self.lines[seen:]
            for _, line in lines:
                if re.search(pattern, line):
                    return line
            seen += len(lines)
            if time.monotonic() > deadline or not self.is_running():
                raise HarnessError(f"no console line matches {pattern!r} "
                                   f"within {timeout} s:\n"
                                   f"{self.console()[-2000:]}")
            time.sleep(0.05)

    def wait_shutdown(self, timeout: float) -> Tuple[Optional[float], str]:
        """Seconds from launch to the QMP SHUTDOWN event and its reason,
        or (None, why) if none came within timeout seconds of launch."""
        left = self.started + timeout - time.monotonic()
        try:
            event = self.event_wait("SHUTDOWN", timeout=max(left, 0.001))
        except asyncio.TimeoutError:
            event = None
        if event is None:
            return None, f"no power-off within {timeout} s"
        return (time.monotonic() - self.started,
                event["data"].get("reason", ""))

    def jit_info(self) -> Jit:
        """"info jit", through QMP's x-query-jit."""
        return Jit.parse(self.cmd("x-query-jit")["human-readable-text"])

    def mappings(self) -> List[smaps.Mapping]:
        pid = self.get_pid()
        assert pid is not None, "the machine is not running"
        return smaps.read(pid)
