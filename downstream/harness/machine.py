"""qemu-system-aarch64 launched through QEMU's own qemu.machine."""

import asyncio
import threading
import time
from typing import List, Optional, Sequence, Tuple

from qemu.machine import QEMUMachine

from . import smaps

# The board every harness run uses; callers add -smp, -accel, the guest.
VIRT = ["-M", "virt,gic-version=3", "-cpu", "max", "-nic", "none"]


class Guest(QEMUMachine):
    """A QEMUMachine with QMP and the first serial port on sockets.  Every
    console line is kept with its arrival time, in seconds since launch(),
    which is also the origin of wait_shutdown()'s time."""

    def __init__(self, binary, args: Sequence, log_dir: Optional[str] = None):
        super().__init__(str(binary), args=[str(a) for a in args],
                         log_dir=log_dir)
        self.set_console()
        self.lines: List[Tuple[float, str]] = []
        self.started = 0.0
        self._reader: Optional[threading.Thread] = None

    def launch(self) -> None:
        self.started = time.monotonic()
        super().launch()
        self._reader = threading.Thread(target=self._read_console,
                                        daemon=True)
        self._reader.start()

    def _read_console(self) -> None:
        try:
            for raw in self.console_socket.makefile("rb"):
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

    def hmp(self, command: str) -> str:
        """The output of an HMP command, with "\n" line ends (the monitor
        writes "\r\n")."""
        return self.cmd("human-monitor-command", command_line=command) \
            .replace("\r\n", "\n")

    def jit(self) -> str:
        """The text of "info jit", through QMP's x-query-jit."""
        return self.cmd("x-query-jit")["human-readable-text"]

    def mappings(self) -> List[smaps.Mapping]:
        pid = self.get_pid()
        assert pid is not None, "the machine is not running"
        return smaps.read(pid)
