"""The inline TB lookup (-accel tcg,x-inline-lookup=on|off|check): patches
"accel/tcg: probe the jump cache inline at a TB's exit, with
x-inline-lookup" and "target/arm: look up the next TB inline after AArch64
branches"; docs/devel/tcg-inline-lookup.rst says why a hit is what the
helper would return.

downstream/guest/lookup-sources.S makes ROUNDS lookups of each kind; with
the probe on, every round after the first must find its TBs inline, and
with x-inline-lookup=check every one of those hits is checked against
the helper's lookup, which aborts QEMU on a mismatch.  tests/tcg aarch64
system tests (self-modifying code, TLB maintenance of code, pointer auth,
MTE, record/replay) run again under check mode, a gdb breakpoint set
after the jump cache is warm must still stop the guest, and so must
one-insn-per-tb and the logs that the monitor switches on then take
effect.

Negative controls (a one-line change to build/src, rebuilt): probing
without the breakpoint test fails
test_a_breakpoint_stops_a_call_the_probe_would_find (the guest never
stops); a hash without the page's bits finds nothing inline and fails
test_the_probe_finds_each_source (one without bit 5 passes: the guest's
sites all have it clear); a probe that reads neither one_insn_per_tb nor
qemu_loglevel fails test_a_switch_at_run_time_sends_lookups_to_the_helper
for all four switches (the probe went on finding the TBs made before
them), and a check helper that compares with curr_cflags() aborts in its
check-mode cases of one-insn-per-tb and -d nochain (a switch between a
probe and its check). test_a_tb_found_after_a_state_change_sees_it fails
its cases 0x01 and 0x04 (FP, PAN) with a probe that does not compare the
TB's flags, 0x02, 0x08, 0x2000 and 0x4000 (SVE, BTYPE, UAO, TCO) without
the cs_base compare, 0x100 (self-modifying code) with one that ignores
CF_INVALID, which check mode cannot see (it allows for a TB invalidated
after the probe read it), and, with the probe on or off, 0x10 (ASID)
with a TTBR0 write that does not flush, 0x40 and 0x400 (remap, alias)
with a TLBI VAE1IS that does nothing and 0x200 with an RVAE1IS that does
nothing; without the patches, QEMU refuses the property
and every test fails."""

import re
import socket
import sys
import time

import pytest

from conftest import PAUSED, guest_kernel, run, settled_counters, tcg_tests
from harness import paths
from harness.machine import VIRT, run_qemu
from test_lookups import ROUNDS, SLACK, lookups

# Lookups per round of lookup-sources.S, by source.
PER_ROUND = {"call": 1, "return": 1, "jump": 1, "branch": 2, "page_end": 1}


@pytest.mark.parametrize("mode", ["on", "check"])
def test_the_probe_finds_each_source(qemu, guest, tmp_path, mode):
    """From the second round on, each site's next TB is in the jump cache:
    the probe finds it, and only the first round's lookups (and the boot
    stub's) reach the helper.  The lookups still count every exit."""
    n = lookups(qemu, guest, tmp_path, "-accel",
                f"tcg,x-lookup-stats=on,x-inline-lookup={mode}")
    seen = {k: v for k, v in n.items() if k.startswith("jc_")}
    for source, count in PER_ROUND.items():
        made = n[f"jc_lookups_{source}"]
        assert count * ROUNDS <= made <= count * ROUNDS + SLACK, seen
        assert n[f"jc_inline_hits_{source}"] >= count * (ROUNDS - SLACK), seen
    assert n["jc_inline_hits_other"] == 0, seen


def test_the_probe_is_off_by_default(qemu, guest, tmp_path):
    """Without x-inline-lookup there is no inline hits line: every lookup
    calls the helper."""
    n = lookups(qemu, guest, tmp_path, "-accel", "tcg,x-lookup-stats=on")
    assert "jc_inline_hits" not in n, n
    assert n["jc_lookups_return"] >= ROUNDS, n


def test_a_tb_that_may_not_chain_never_probes(qemu, guest, tmp_path):
    """one-insn-per-tb TBs are not ordinary (CF_NO_GOTO_TB, a count of 1):
    their exits keep the helper, whose curr_cflags() they differ from."""
    n = lookups(qemu, guest, tmp_path, "-accel",
                "tcg,one-insn-per-tb=on,x-lookup-stats=on,x-inline-lookup=on")
    assert n["jc_inline_hits"] == 0, n
    assert n["jc_lookups_return"] >= ROUNDS, n


# call-loop.S's callee, on the page after its caller.
CALLEE = 0x40081000


def gdb_packet(sock, data, timeout=20):
    """Send one gdb remote protocol packet and return the reply's data,
    acknowledging it (QEMU's gdbstub starts in ack mode)."""
    checksum = sum(data.encode()) % 256
    sock.sendall(f"${data}#{checksum:02x}".encode())
    sock.settimeout(timeout)
    reply = b""
    while not (b"$" in reply and re.search(rb"#[0-9a-f]{2}$", reply)):
        chunk = sock.recv(4096)
        assert chunk, f"gdbstub closed the connection after {data!r}"
        reply += chunk
    sock.sendall(b"+")
    return reply[reply.index(b"$") + 1:-3].decode()


def test_a_breakpoint_stops_a_call_the_probe_would_find(qemu, guest,
                                                        tmp_path):
    """Inserting a breakpoint invalidates no TB, so every lookup must pass
    check_for_breakpoints() while one is set.  Let call-loop.S warm its
    jump cache for a while, then set a gdb breakpoint on its callee: the
    next call stops there, although the callee's TB is in the slot that
    the probe reads."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    g = guest(qemu, "-accel", "tcg,x-lookup-stats=on,x-inline-lookup=on",
              "-gdb", f"tcp:127.0.0.1:{port}", board=[
                  *VIRT, "-kernel", guest_kernel("call-loop", tmp_path)])
    time.sleep(0.5)
    warm = g.jit_info().counters()
    assert warm["jc_inline_hits_call"] > 0, warm
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        gdb_packet(sock, "?")               # attaching stops the vCPU
        assert gdb_packet(sock, f"Z0,{CALLEE:x},4") == "OK"
        stop = gdb_packet(sock, "c")
        assert stop.startswith("T05"), stop
        pc = gdb_packet(sock, "p20")        # AArch64's pc, little-endian
        assert int.from_bytes(bytes.fromhex(pc), "little") == CALLEE, pc


# state-reuse.S's result: DONE and the bitmask of its failed cases.
STATE_REUSE_RESULT = 0x40290010
STATE_REUSE_DONE = 0x600dd0e5


def state_reuse(qemu, guest, tmp_path, *accel):
    """Run state-reuse.S to its end: its bitmask of failed cases, and info
    jit's counters."""
    g = guest(qemu, *accel, board=[
        *VIRT, "-M", "mte=on", "-kernel",
        guest_kernel("state-reuse", tmp_path)])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = g.cmd("human-monitor-command",
                     command_line=f"xp /2gx {STATE_REUSE_RESULT:#x}")
        words = [int(w, 16) for w in text.split()[1:3]]
        if words[0] == STATE_REUSE_DONE:
            return words[1], g.jit_info().counters()
        time.sleep(0.1)
    pytest.fail(f"state-reuse.S did not finish within 60 s: {text!r}")


@pytest.mark.parametrize("mode", ["off", "on", "check"])
def test_a_tb_found_after_a_state_change_sees_it(qemu, guest, tmp_path,
                                                 mode):
    """Each callee's TB is in the jump cache when the guest changes what the
    TB was translated under (FP and SVE enables, PAN, UAO, MTE's TCO, the
    BTYPE that BR gives on a guarded page, the ASID with a non-global block
    at the callee's VA, the block itself with TLBI by VA and by range, one
    of two aliases of the code, or the callee's code; or it sets a hardware
    breakpoint on it), and the next call must see the change. With the probe
    on, the warm calls were found inline (all but the first of each of the
    thirteen warm-ups)."""
    failed, n = state_reuse(qemu, guest, tmp_path, "-accel",
                            f"tcg,x-lookup-stats=on,x-inline-lookup={mode}")
    assert failed == 0, f"state-reuse.S failed cases {failed:#x}"
    if mode != "off":
        assert n["jc_inline_hits_call"] >= 13 * (64 - SLACK), n


@pytest.mark.parametrize("mode", ["on", "check"])
def test_a_tb_found_under_icount_sees_a_state_change(qemu, guest, tmp_path,
                                                     mode):
    """The same under -icount, whose TBs count their instructions
    (CF_USE_ICOUNT in every TB's cflags and in what the probe compares):
    the probe still finds the warm callees, and each change is seen."""
    failed, n = state_reuse(qemu, guest, tmp_path, "-icount", "shift=0",
                            "-accel",
                            f"tcg,x-lookup-stats=on,x-inline-lookup={mode}")
    assert failed == 0, f"state-reuse.S failed cases {failed:#x}"
    assert n["jc_inline_hits_call"] >= 13 * (64 - SLACK), n


# tests/tcg/plugins of build/debug (bin/build debug): discons checks the
# PCs that every exception and exception return report against the
# instructions it saw run, and aborts QEMU on a mismatch; insn and mem
# call back on every instruction and memory access; reset resets and
# uninstalls itself at run time, and each of those flushes every TB.
PLUGINS = ("discons", "insn", "mem", "reset")


@pytest.mark.parametrize("mode", ["on", "check"])
@pytest.mark.parametrize("plugin", PLUGINS)
def test_a_tb_found_under_a_plugin_sees_a_state_change(guest, tmp_path,
                                                       plugin, mode):
    """The same on build/debug with a plugin loaded: the probe finds the
    instrumented TBs, whose callbacks are in the TB's code it jumps to,
    and each change is seen."""
    library = paths.DEBUG_PLUGINS / f"lib{plugin}.so"
    if not library.is_file():
        pytest.fail(f"{library} does not exist; run 'bin/build debug'")
    failed, n = state_reuse(paths.DEBUG, guest, tmp_path,
                            "-plugin", str(library), "-accel",
                            f"tcg,x-lookup-stats=on,x-inline-lookup={mode}")
    assert failed == 0, f"state-reuse.S failed cases {failed:#x}"
    assert n["jc_inline_hits_call"] >= 13 * (64 - SLACK), n


# HMP commands that change what the next TB's lookup must do after the
# probes were translated: curr_cflags() asks for other TBs, or the helper
# logs (-dfilter keeps the log empty), and the commands that undo them.
RUN_TIME_SWITCHES = [("one-insn-per-tb on", "one-insn-per-tb off"),
                     ("log nochain", "log none"), ("log exec", "log none"),
                     ("log cpu", "log none")]


@pytest.mark.parametrize("mode", ["on", "check"])
@pytest.mark.parametrize("switch_on,switch_off", RUN_TIME_SWITCHES)
def test_a_switch_at_run_time_sends_lookups_to_the_helper(
        qemu, guest, tmp_path, switch_on, switch_off, mode):
    """call-loop.S's calls and returns are found inline; once the monitor
    switches one of these on, none may be (they would run the TBs made
    before, or go unlogged) while the guest goes on looking up, and once
    it is off again the probe finds them again.  Under check, a switch
    between a probe and its check is no mismatch."""
    g = guest(qemu, "-accel",
              f"tcg,x-lookup-stats=on,x-inline-lookup={mode}",
              "-D", tmp_path / "qemu.log", "-dfilter", "0x1000+4", board=[
                  *VIRT, "-kernel", guest_kernel("call-loop", tmp_path)])
    time.sleep(0.5)
    assert g.jit_info().counters()["jc_inline_hits_call"] > 0
    g.cmd("human-monitor-command", command_line=switch_on)
    time.sleep(0.2)
    before = g.jit_info().counters()
    time.sleep(0.5)
    after = g.jit_info().counters()
    assert after["jc_inline_hits"] == before["jc_inline_hits"], \
        (before, after)
    assert after["jc_lookups_call"] > before["jc_lookups_call"], after
    g.cmd("human-monitor-command", command_line=switch_off)
    for _ in range(20):         # switches that race probes and checks
        g.cmd("human-monitor-command", command_line=switch_on)
        g.cmd("human-monitor-command", command_line=switch_off)
    time.sleep(0.5)
    again = g.jit_info().counters()
    assert again["jc_inline_hits_call"] > after["jc_inline_hits_call"], again


# tests/tcg aarch64 system tests that reach the probe in ways the guest
# programs here do not: self-modifying code behind the jump cache, TLB
# maintenance of code by ASID, block, range and at stage 2 (relaxed mode
# included), pointer auth, MTE, SVE, interrupts, record/replay's icount and
# the BTYPE that BR leaves.
CHECKED_TCG_TESTS = (
    "run-smc-jmp-cache", "run-tlb-asid", "run-tlb-block", "run-tlb-range",
    "run-tlb-chain", "run-tlb-jmp-cache", "run-tlb-jmp-cache-race",
    "run-tlb-random", "run-tlb-random-16k", "run-tlb-random-s2",
    "run-tlb-broadcast", "run-tlb-broadcast-s2", "run-pauth-3", "run-mte",
    "run-memory-sve", "run-interrupt", "run-vtimer", "run-memory-replay",
    "run-btype",
)

# A QEMU that adds x-inline-lookup=check to the test's own -accel tcg, or
# an -accel of its own where the test gives none.
CHECK_WRAPPER = """\
import os, sys
args = sys.argv[1:]
for i, arg in enumerate(args[:-1]):
    if arg == "-accel" and args[i + 1].startswith("tcg"):
        args[i + 1] += ",x-inline-lookup=check"
        break
else:
    args = ["-accel", "tcg,x-inline-lookup=check", *args]
os.execv({qemu!r}, [{qemu!r}, *args])
"""


@pytest.mark.parametrize("target", CHECKED_TCG_TESTS)
def test_tcg_tests_under_check(qemu, tmp_path, target):
    """Each of these passes with every inline hit checked against the
    helper's lookup (helper_lookup_tb_check() aborts on a mismatch)."""
    wrapper = tmp_path / "qemu-inline-check"
    wrapper.write_text(f"#!{sys.executable}\n" +
                       CHECK_WRAPPER.format(qemu=str(qemu)))
    wrapper.chmod(0o755)
    proc = run(["make", "-C", tcg_tests(), f"QEMU={wrapper}", target],
               timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "x-inline-lookup=check" not in proc.stderr, proc.stderr[-4000:]


@pytest.mark.parametrize("value", ["yes", "", "ON "])
def test_inline_lookup_refuses_what_is_not_a_mode(qemu, value):
    proc = run_qemu(qemu, [*PAUSED, "-accel",
                           f"tcg,x-inline-lookup={value}"], timeout=30)
    assert proc.returncode == 1, proc
    assert "Parameter 'x-inline-lookup' does not accept value" in \
        proc.stderr, \
        proc.stderr
