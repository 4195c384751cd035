"""The downstream's measurement harness, behind bin/bench,
bin/bench-report, bin/compare, bin/tlb-scale and the pytest suite.

  paths     where the repository, the builds and the guests are
  machine   the one place that launches QEMU (Guest, run_qemu) and parses
            "info jit" (Jit)
  smaps     /proc/PID/smaps
  stats     means, confidence intervals, quantiles
  workloads what a bin/bench run boots and what it reads from a run
  matrix    binaries x configurations, round by round: results.json
  bench     bin/bench's command line
  report    bin/bench-report: summary.md and charts
  compare   bin/compare: tlb-flush=strict against relaxed
  tlbscale  bin/tlb-scale: the tests/tcg TLB tests, many times

Library code raises HarnessError; only the command lines' main()
functions exit.  It runs on QEMU's own Python libraries, qemu.machine and
qemu.qmp from the assembled tree's python/ (bin/ puts build/src/python on
PYTHONPATH)."""


class HarnessError(Exception):
    """Something a run or its input got wrong; the message says what."""
